"""Ranking arithmetic, pure: fusion, scoring, diversification. No database, no model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings

RRF_K = 60  # the usual reciprocal-rank-fusion constant


@dataclass(frozen=True)
class Weights:
    relevance: float = 1.0
    recency: float = 1.0
    importance: float = 1.0


# What episode search ranks by unless asked otherwise: relevance only (an episode has no importance,
# and recency would bury the old turn that holds the answer).
EPISODE_WEIGHTS = Weights(relevance=1.0, recency=0.0, importance=0.0)


def default_weights(*, episodes: bool = False) -> Weights:
    """The one source of each search's default weights: memories SEARCH_WEIGHTS (settings), episodes
    EPISODE_WEIGHTS. Weights a caller asks for only in part take the rest from here."""
    return EPISODE_WEIGHTS if episodes else Weights(*settings.SEARCH_WEIGHTS)


@dataclass
class Scored:
    """One candidate with its raw components, its scaled components and the weighted score."""

    key: object
    relevance: float
    recency: float
    importance: float
    scaled: dict[str, float] = field(default_factory=dict)
    score: float = 0.0


def reciprocal_rank_fusion(
    *rankings: Sequence[object], k: int = RRF_K, weights: Sequence[float] | None = None
) -> dict[object, float]:
    """Fused score per key: the sum over rankings of weight / (k + rank), rank starting at 1 (weights:
    one per ranking, 1 each by default)."""
    fused: dict[object, float] = {}
    for ranking, weight in zip(rankings, weights or [1.0] * len(rankings), strict=True):
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + weight / (k + rank)
    return fused


def recency(hours_since_access: float, decay_per_hour: float) -> float:
    return decay_per_hour ** max(hours_since_access, 0.0)


# Below this relative spread a component does not tell candidates apart: scaling it to 0..1
# would turn noise (memories written milliseconds apart) into a full point of score.
MIN_RELATIVE_SPREAD = 0.01


def _min_max(values: Sequence[float]) -> list[float]:
    low, high = min(values), max(values)
    if high - low <= MIN_RELATIVE_SPREAD * max(abs(high), abs(low), 1e-12):
        return [1.0 if high > 0 else 0.0 for _ in values]
    return [(v - low) / (high - low) for v in values]


def score(candidates: list[Scored], weights: Weights) -> list[Scored]:
    """Min-max scale each component over the candidates, then take the weighted sum; best first.
    Not the read path's rule (relevance_first): the changing-facts table compares it as a policy."""
    if not candidates:
        return []
    columns = {
        name: _min_max([getattr(c, name) for c in candidates]) for name in ("relevance", "recency", "importance")
    }
    for i, candidate in enumerate(candidates):
        candidate.scaled = {name: values[i] for name, values in columns.items()}
        candidate.score = sum(getattr(weights, name) * candidate.scaled[name] for name in columns)
    return sorted(candidates, key=lambda c: c.score, reverse=True)


# The read path's rule (DESIGN 4.4): relevance first. Recency and importance only break near-ties:
# together they add at most TIE_BREAK (in cosine units, at the default weights) to a result's
# relevance, so a result more than TIE_BREAK less relevant than another is never ranked above it.
# 0.03 is about the cosine gap between two phrasings of the same answer with the real model.
TIE_BREAK = 0.03


def relevance_first(candidates: list[Scored], weights: Weights, *, tie_break: float = TIE_BREAK) -> list[Scored]:
    """score = weights.relevance * relevance + tie_break * (weights.recency * recency + weights.importance
    * importance), recency and importance min-max scaled over the candidates; best first. With the
    default weights (1, 0.5, 0.5) the score is the relevance plus at most `tie_break`: the same scale as
    the relevance (a cosine, for memories plus search.KIND_WEIGHT times a likelihood and search.WORDS_WEIGHT
    times a share of words, less its expected part), so one threshold
    (min_score) reads on both."""
    if not candidates:
        return []
    columns = {name: _min_max([getattr(c, name) for c in candidates]) for name in ("recency", "importance")}
    for i, candidate in enumerate(candidates):
        candidate.scaled = {"relevance": candidate.relevance} | {name: values[i] for name, values in columns.items()}
        bonus = weights.recency * candidate.scaled["recency"] + weights.importance * candidate.scaled["importance"]
        candidate.score = weights.relevance * candidate.relevance + tie_break * bonus
    return sorted(candidates, key=lambda c: c.score, reverse=True)


def maximal_marginal_relevance(
    ranked: list[Scored], vectors: dict[object, np.ndarray], *, k: int, lambda_: float
) -> list[Scored]:
    """Choose k, trading score against similarity to what is already chosen (lambda 1 = score only),
    and give them back in score order: diversification decides which results come back, never
    their order, so results always read in the order of the score they show. The score is on the
    cosine scale (relevance_first), as the redundancy is."""
    if lambda_ >= 1.0 or len(ranked) <= k:
        return ranked[:k]
    remaining, picked = list(ranked), []
    while remaining and len(picked) < k:

        def marginal(candidate: Scored) -> float:
            redundancy = max((float(vectors[candidate.key] @ vectors[p.key]) for p in picked), default=0.0)
            return lambda_ * candidate.score - (1 - lambda_) * redundancy

        best = max(remaining, key=marginal)
        picked.append(best)
        remaining.remove(best)
    return sorted(picked, key=lambda c: c.score, reverse=True)
