"""Evaluation metrics, the one module the command, the jobs and the panels use.

Recall, staleness and write accuracy are pure arithmetic over ids (episode, memory or turn ids);
contradiction and duplicate rates read the live store (imports inside them)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

# LoCoMo question categories; 5 (adversarial) has no answer in the conversation, so no recall.
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
RECALL_CATEGORIES = (1, 2, 3, 4)
ALL = "all"


def recall_at_k(retrieved_ids: Sequence, gold_ids: Collection, k: int) -> float:
    """Share of the gold ids among the first k retrieved: |gold ∩ top-k| / |gold|.

    Raises ValueError when there is no gold evidence (recall is undefined) or k < 1.
    """
    gold = set(gold_ids)
    if not gold:
        raise ValueError("recall is undefined without gold evidence; leave such questions out")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return len(gold & set(list(retrieved_ids)[:k])) / len(gold)


@dataclass(frozen=True)
class Retrieval:
    """What one labelled question retrieved (best first) against its gold evidence."""

    category: int
    retrieved: tuple
    gold: frozenset


@dataclass(frozen=True)
class RecallSummary:
    questions: int
    recall: dict[int, float]  # k -> mean recall@k


def mean_recall(retrievals: Sequence[Retrieval], ks: Iterable[int]) -> RecallSummary:
    """Mean recall@k over the questions, for each k (0.0 for none)."""
    ks = list(ks)
    if not retrievals:
        return RecallSummary(questions=0, recall=dict.fromkeys(ks, 0.0))
    return RecallSummary(
        questions=len(retrievals),
        recall={k: sum(recall_at_k(r.retrieved, r.gold, k) for r in retrievals) / len(retrievals) for k in ks},
    )


def evidence_recall(
    retrievals: Iterable[Retrieval], ks: Iterable[int] = (1, 5, 10), categories: Collection[int] = RECALL_CATEGORIES
) -> dict[int | str, RecallSummary]:
    """Mean recall@k per category and over all questions (key ALL), each question counted once.

    Only questions of `categories` that have gold evidence count (LoCoMo: 1-4; 5 is adversarial).
    """
    ks = list(ks)
    scored = [r for r in retrievals if r.category in categories and r.gold]
    summary: dict[int | str, RecallSummary] = {
        category: mean_recall([r for r in scored if r.category == category], ks) for category in sorted(categories)
    }
    summary[ALL] = mean_recall(scored, ks)
    return summary


# --- the store's health, live (used by the `metrics` job and the dashboard panels) -------------

NEGATIONS = re.compile(r"\b(not|no longer|never|doesn't|does not|isn't|is not|don't|do not|stopped|quit)\b", re.I)
DUPLICATE_COSINE = 0.95
RELATED_COSINE = 0.8
SAMPLE = 500


def contradiction_rate(*, organization=None) -> dict:
    """Among slots (user, subject, single-valued attribute) with a value believed now, the share
    holding more than one value; plus a sampled pairwise check of unstructured memories: pairs of
    one user's active memories that say nearly the same thing (cosine >= 0.8) where exactly one
    side is negated."""
    import numpy as np
    from django.db.models import Count, Q
    from django.utils import timezone

    from memoryapp.models import Memory

    now = timezone.now()
    believed = Memory.objects.filter(
        Q(valid_to__isnull=True) | Q(valid_to__gt=now), status=Memory.Status.ACTIVE, expired_at__isnull=True
    )
    if organization is not None:
        believed = believed.filter(organization=organization)
    slots = (believed.filter(cardinality=Memory.Cardinality.SINGLE).exclude(attribute="")
             .values("user_id", "subject", "attribute").annotate(values=Count("value", distinct=True)))
    slot_count = len(slots)
    contradicting = sum(1 for slot in slots if slot["values"] > 1)

    sample = believed.filter(attribute="").order_by("?").values_list("user_id", "text", "embedding")[:SAMPLE]
    unstructured = list(sample)
    pairs = negated = 0
    by_user: dict = {}
    for user_id, text, vector in unstructured:
        by_user.setdefault(user_id, []).append((text, np.asarray(vector, dtype=np.float32)))
    for memories in by_user.values():
        for i, (text_a, a) in enumerate(memories):
            for text_b, b in memories[i + 1:]:
                if float(a @ b) >= RELATED_COSINE:
                    pairs += 1
                    negated += bool(NEGATIONS.search(text_a)) != bool(NEGATIONS.search(text_b))
    return {
        "slots": slot_count, "contradicting_slots": contradicting,
        "contradiction_rate": round(contradicting / slot_count, 4) if slot_count else 0.0,
        "unstructured_pairs_checked": pairs, "unstructured_contradictions": negated,
    }


def duplicate_rate(*, organization=None) -> dict:
    """Share of (a sample of) active semantic memories with a near-duplicate (cosine >= 0.95) among
    the same user's active memories: what consolidation has not merged yet."""
    import numpy as np

    from memoryapp.models import Memory
    from memoryapp.selectors.search import dense_ranking

    active = Memory.objects.filter(status=Memory.Status.ACTIVE, kind=Memory.Kind.SEMANTIC)
    if organization is not None:
        active = active.filter(organization=organization)
    sample = list(active.order_by("?").only("id", "user_id", "embedding")[:SAMPLE])
    duplicated = 0
    for memory in sample:
        vector = np.asarray(memory.embedding, dtype=np.float32)
        neighbours = dense_ranking(active.filter(user_id=memory.user_id).exclude(pk=memory.pk), vector, 1)
        duplicated += bool(neighbours and neighbours[0][1] >= DUPLICATE_COSINE)
    return {"sampled": len(sample), "duplicate_rate": round(duplicated / len(sample), 4) if sample else 0.0}


def staleness(rows: Iterable[dict]) -> float | None:
    """From a changing-facts result: the share of questions about changed facts whose context holds
    only the outdated version, for the full system at its smallest k."""
    rows = [r for r in rows if r["policy"].startswith("full system")]
    if not rows:
        return None
    return min(rows, key=lambda r: r["k"])["changed_facts"]["outdated_only"]


def store_metrics(*, organization=None) -> dict:
    """One snapshot of the store's health, stored by the periodic `metrics` job."""
    # Write accuracy is measured on the hand-written corpus (evaluation.write_accuracy), not per snapshot.
    return {**contradiction_rate(organization=organization), **duplicate_rate(organization=organization)}
