"""Ranking arithmetic with hand-made numbers and vectors."""

import numpy as np
import pytest

from memoryapp.selectors.ranking import (
    TIE_BREAK,
    Scored,
    Weights,
    maximal_marginal_relevance,
    recency,
    reciprocal_rank_fusion,
    relevance_first,
    score,
)

RELEVANCE = [0.62, 0.55, 0.58, 0.40, 0.35]
HOURS = [5000, 2200, 900, 3, 4000]
IMPORTANCE = [7, 6, 4, 2, 5]


def worked_example():
    return [
        Scored(key=i, relevance=rel, recency=recency(h, 0.995), importance=imp)
        for i, (rel, h, imp) in enumerate(zip(RELEVANCE, HOURS, IMPORTANCE, strict=True))
    ]


def test_worked_example_scaled_sums():
    ranked = score(worked_example(), Weights(1, 1, 1))
    assert [c.key for c in ranked] == [0, 1, 2, 3, 4]
    assert [round(c.score, 3) for c in ranked] == [2.000, 1.541, 1.263, 1.185, 0.600]


def test_worked_example_raw_sums_rank_the_recent_coffee_first():
    raw = {c.key: c.relevance + c.recency + c.importance / 10 for c in worked_example()}
    assert round(recency(3, 0.995), 3) == 0.985
    assert max(raw, key=raw.get) == 3


def test_scores_explain_their_scaled_components():
    ranked = score(worked_example(), Weights(1, 1, 1))
    first = ranked[0]
    assert first.scaled == pytest.approx({"relevance": 1.0, "recency": 0.0, "importance": 1.0}, abs=1e-6)


def test_weights_change_the_order():
    ranked = score(worked_example(), Weights(relevance=0, recency=1, importance=0))
    assert ranked[0].key == 3


def test_reciprocal_rank_fusion_rewards_agreement():
    fused = reciprocal_rank_fusion(["a", "b", "c"], ["c", "a"])
    assert max(fused, key=fused.get) == "a"
    assert fused["c"] > fused["b"]


def _unit(v):
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_mmr_keeps_restatements_from_filling_the_top():
    same = _unit([1, 0, 0])
    vectors = {
        "r1": same,
        "r2": _unit([1, 0.02, 0]),
        "r3": _unit([1, 0, 0.02]),
        "x": _unit([0, 1, 0]),
        "y": _unit([0, 0, 1]),
    }
    ranked = [
        Scored("r1", 1, 0, 0, score=1.0),
        Scored("r2", 1, 0, 0, score=0.97),
        Scored("r3", 1, 0, 0, score=0.95),
        Scored("x", 1, 0, 0, score=0.7),
        Scored("y", 1, 0, 0, score=0.6),
    ]
    picked = [c.key for c in maximal_marginal_relevance(ranked, vectors, k=3, lambda_=0.7)]
    assert picked[0] == "r1" and set(picked) == {"r1", "x", "y"}
    no_diversity = [c.key for c in maximal_marginal_relevance(ranked, vectors, k=3, lambda_=1.0)]
    assert no_diversity == ["r1", "r2", "r3"]


def test_recency_and_importance_never_lift_a_result_over_a_clearly_more_relevant_one():
    ranked = relevance_first(worked_example(), Weights(1, 0.5, 0.5))
    for better in ranked:
        for worse in ranked:
            if better.relevance - worse.relevance > TIE_BREAK:
                assert ranked.index(better) < ranked.index(worse)
    assert all(0 <= c.score - c.relevance <= TIE_BREAK for c in ranked)
    # the most recent, least important of near-equals wins only among near-equals
    near = [Scored("old-important", 0.60, recency(900, 0.995), 9), Scored("fresh", 0.59, recency(1, 0.995), 2)]
    assert [c.key for c in relevance_first(near, Weights(1, 1, 0))] == ["fresh", "old-important"]
