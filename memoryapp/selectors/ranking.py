"""Ranking arithmetic, pure: fusion, scoring, diversification. No database, no model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

RRF_K = 60  # the usual reciprocal-rank-fusion constant


@dataclass(frozen=True)
class Weights:
    relevance: float = 1.0
    recency: float = 1.0
    importance: float = 1.0


@dataclass
class Scored:
    """One candidate with its raw components, its scaled components and the weighted score."""

    key: object
    relevance: float
    recency: float
    importance: float
    scaled: dict[str, float] = field(default_factory=dict)
    score: float = 0.0


def reciprocal_rank_fusion(*rankings: Sequence[object], k: int = RRF_K) -> dict[object, float]:
    """Fused score per key: the sum over rankings of 1 / (k + rank), rank starting at 1."""
    fused: dict[object, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
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
    """Min-max scale each component over the candidates, then take the weighted sum; best first."""
    if not candidates:
        return []
    columns = {
        name: _min_max([getattr(c, name) for c in candidates]) for name in ("relevance", "recency", "importance")
    }
    for i, candidate in enumerate(candidates):
        candidate.scaled = {name: values[i] for name, values in columns.items()}
        candidate.score = sum(getattr(weights, name) * candidate.scaled[name] for name in columns)
    return sorted(candidates, key=lambda c: c.score, reverse=True)


def maximal_marginal_relevance(
    ranked: list[Scored], vectors: dict[object, np.ndarray], query: np.ndarray, *, k: int, lambda_: float
) -> list[Scored]:
    """Pick k, trading score against similarity to what is already picked (lambda 1 = score only).

    Redundancy is a cosine, so the score is first put on the same scale: mapped linearly onto
    the range of the candidates' cosine similarity to the query. Without this, min-max scaled
    scores spread far wider than cosines and near-duplicates would never be penalized enough.
    """
    if lambda_ >= 1.0 or len(ranked) <= 1:
        return ranked[:k]
    cosines = [float(vectors[c.key] @ query) for c in ranked]
    low, high = min(cosines), max(cosines)
    scaled = _min_max([c.score for c in ranked])
    relevance = {c.key: low + (high - low) * s for c, s in zip(ranked, scaled, strict=True)}
    remaining, picked = list(ranked), []
    while remaining and len(picked) < k:

        def marginal(candidate: Scored) -> float:
            redundancy = max((float(vectors[candidate.key] @ vectors[p.key]) for p in picked), default=0.0)
            return lambda_ * relevance[candidate.key] - (1 - lambda_) * redundancy

        best = max(remaining, key=marginal)
        picked.append(best)
        remaining.remove(best)
    return picked
