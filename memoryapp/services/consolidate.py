"""Consolidation: near-duplicate memories of a user become one merged memory.

Candidates come from a cosine graph (edges from each memory's nearest neighbours), grouped by
union-find; each group is then verified so a chain of small steps (dark mode in the editor ...
dark mode in the terminal ... light mode in the terminal) does not merge its far ends. A merge
writes a new memory with the union of the members' sources and `derived_from` all of them; the
members are archived (kept as history, no longer retrieved).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

import numpy as np
from django.db import transaction
from django.db.models import Count, QuerySet

from memoryapp.actors import ActorRef
from memoryapp.models import Episode, Memory, MemoryEvent, User
from memoryapp.selectors.questions import search_vector
from memoryapp.selectors.search import dense_ranking
from memoryapp.services.apply import MemoryDraft, event_record, memory_add, slot_lock

K = TypeVar("K", bound=Hashable)
Op = MemoryEvent.Op

# Up to this many memories the neighbour graph comes from one in-memory cosine matrix (2000^2
# floats is 16 MB); above it, from one exact-in-scope pgvector query per memory.
IN_MEMORY_MAX = 2000


def components(edges: Iterable[tuple[K, K]]) -> list[list[K]]:
    """Connected components (union-find) of the nodes named by `edges`, each in first-seen
    order, components in the order of their first node. Nodes without edges do not appear."""
    parent: dict[K, K] = {}

    def root(node: K) -> K:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]  # path halving
            node = parent[node]
        return node

    for a, b in edges:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[rb] = ra
    groups: dict[K, list[K]] = {}
    for node in parent:
        groups.setdefault(root(node), []).append(node)
    return [group for group in groups.values() if len(group) > 1]


def neighbour_edges(vectors: np.ndarray, *, threshold: float, neighbours: int) -> list[tuple[int, int]]:
    """Edges (i, j) from each row to its `neighbours` nearest rows with cosine >= threshold.
    `vectors` holds one row per memory; rows need not be unit length."""
    if len(vectors) < 2:
        return []
    unit = _unit_rows(vectors)
    similarity = unit @ unit.T
    np.fill_diagonal(similarity, -np.inf)
    k = min(neighbours, len(vectors) - 1)
    nearest = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
    return [(i, int(j)) for i, row in enumerate(nearest) for j in row if similarity[i, j] >= threshold]


def verified_groups(
    ordered: Sequence[K],
    vectors: Mapping[K, np.ndarray],
    *,
    threshold: float,
    compatible: Callable[[K, K], bool] = lambda a, b: True,
) -> list[list[K]]:
    """Split one component into groups that may merge; each group lists its representative first.

    `ordered` is the component, best representative first. The representative takes the members
    within `threshold` of it (closest first) that are `compatible` with every member already
    taken; a member reached only through a chain of neighbours stays out. What is left over is
    grouped again the same way; members left alone are in no group.

    Verifying against the representative (not every pair) keeps consolidation idempotent: the
    merged memory carries the representative's text and vector, so a second run sees the same
    distances and merges nothing more.
    """
    unit = {key: _unit(vectors[key]) for key in ordered}
    remaining = list(ordered)
    groups: list[list[K]] = []
    while len(remaining) > 1:
        representative, rest = remaining[0], remaining[1:]
        group = [representative]
        # Stable sort: equally close members keep their order of preference.
        for key in sorted(rest, key=lambda key: -float(unit[key] @ unit[representative])):
            close = float(unit[key] @ unit[representative]) >= threshold
            if close and all(compatible(key, other) for other in group):
                group.append(key)
        if len(group) > 1:
            groups.append(group)
        taken = set(group)
        remaining = [key for key in rest if key not in taken]
    return groups


def representative_order(memory: Memory) -> tuple:
    """Sort key, best representative first: highest importance, then most sources, then oldest.
    Needs `source_count` (see `_with_source_count`)."""
    return (-memory.importance, -memory.source_count, memory.recorded_at, str(memory.id))


def mergeable(a: Memory, b: Memory) -> bool:
    """Two structured memories merge only when they state the same (subject, attribute, value);
    nothing merges across projects, nor across trust: untrusted content merged into what the user
    said would take the user's provenance, or keep the user's fact alive after the user's own
    source is deleted."""
    if a.project_id != b.project_id:
        return False
    if _untrusted(a) != _untrusted(b):
        return False
    if a.attribute and b.attribute:
        return (a.subject.lower(), a.attribute, a.value.strip().lower()) == (
            b.subject.lower(),
            b.attribute,
            b.value.strip().lower(),
        )
    return True


def consolidation_candidates(user: User) -> QuerySet[Memory]:
    """The user's memories consolidation may merge: active semantic ones in the user scope
    (summaries and reflections are rebuilt by services.reflect, never merged)."""
    return Memory.objects.filter(
        organization_id=user.organization_id,
        user=user,
        scope=Memory.Scope.USER,
        kind=Memory.Kind.SEMANTIC,
        status=Memory.Status.ACTIVE,
    )


def consolidate_user(*, user: User, actor: ActorRef, threshold: float = 0.9, neighbours: int = 10) -> dict:
    """Merge the user's near-duplicate memories; returns counts. Idempotent: once merged, a group
    is one memory, so a second run finds nothing to do."""
    scope = consolidation_candidates(user)
    memories = list(_with_source_count(scope).select_related("organization", "user").order_by("recorded_at", "id"))
    by_id = {m.id: m for m in memories}
    edges = _edges(scope, memories, threshold=threshold, neighbours=neighbours)
    counts = {"memories": len(memories), "edges": len(edges), "components": 0, "groups": 0, "merged": 0, "skipped": 0}
    vectors = {m.id: np.asarray(m.embedding, dtype=np.float32) for m in memories}
    for component in components(edges):
        counts["components"] += 1
        ordered = sorted(component, key=lambda pk: representative_order(by_id[pk]))
        groups = verified_groups(
            ordered, vectors, threshold=threshold, compatible=lambda a, b: mergeable(by_id[a], by_id[b])
        )
        for group in groups:
            counts["groups"] += 1
            if memories_merge(members=[by_id[pk] for pk in group], actor=actor) is None:
                counts["skipped"] += 1
            else:
                counts["merged"] += len(group)
    return counts


@transaction.atomic
def memories_merge(*, members: Sequence[Memory], actor: ActorRef) -> Memory | None:
    """Merge `members` (representative first) into a new memory; None when one of them changed
    since it was read (a concurrent write: the next run sees the new state)."""
    representative = members[0]
    ids = [m.id for m in members]
    # Same slots, same lock order as services.apply: the archive-then-insert below must not
    # interleave with a writer of the slot (the unique constraint would catch it, as an error).
    for subject, attribute in sorted({(m.subject, m.attribute) for m in members if m.attribute}):
        slot_lock(
            organization_id=representative.organization_id,
            user_id=representative.user_id,
            project_id=representative.project_id,
            subject=subject,
            attribute=attribute,
        )
    # Evaluated, not counted: count() would drop the FOR UPDATE and lock nothing.
    still_active = list(
        Memory.objects.select_for_update().filter(pk__in=ids, status=Memory.Status.ACTIVE).values_list("id", flat=True)
    )
    if len(still_active) != len(ids):
        return None
    sources = list(Episode.objects.filter(memory_links__memory_id__in=ids).distinct().order_by("occurred_at", "id"))
    # Archived first: a single-valued slot holds one active value, and the merged memory is it.
    Memory.objects.filter(pk__in=ids).update(status=Memory.Status.ARCHIVED, status_reason="merged")
    structured = next((m for m in members if m.attribute), representative)
    merged = memory_add(
        draft=MemoryDraft(
            organization=representative.organization,
            user=representative.user,
            text=representative.text,
            embedding=representative.embedding,
            search_embedding=_searched_as(representative, structured.attribute),
            subject=structured.subject,
            attribute=structured.attribute,
            value=structured.value,
            cardinality=structured.cardinality,
            kind=Memory.Kind.SEMANTIC,
            scope=representative.scope,
            project_id=representative.project_id,
            session=representative.session,
            importance=max(m.importance for m in members),
            confidence=max(m.confidence for m in members),
            provenance=representative.provenance,
            valid_from=min(m.valid_from for m in members),
            sources=sources,
            agent_id=representative.agent_id,
        ),
        actor=actor,
        reason=f"merged {len(members)} near-duplicate memories",
        op=Op.MERGE,
    )
    # What recall taught about the members carries over, so the merge does not fade sooner.
    Memory.objects.filter(pk=merged.pk).update(
        last_accessed_at=max(m.last_accessed_at for m in members),
        access_count=sum(m.access_count for m in members),
        strength=max(m.strength for m in members),
        needs_review=any(m.needs_review for m in members),
    )
    merged.derived_from.set(members, through_defaults={"organization_id": merged.organization_id})
    reason = f"merged into {merged.id}"
    Memory.objects.filter(pk__in=ids).update(status_reason=reason)
    for member in members:
        event_record(
            organization_id=representative.organization_id,
            op=Op.MERGE,
            actor=actor,
            reason=reason,
            memory_id=member.id,
            user_id=member.user_id,
            data={"into": str(merged.id), "representative": str(representative.id)},
        )
    merged.refresh_from_db()
    return merged


@transaction.atomic
def merge_recompute(*, merged: Memory, actor: ActorRef) -> Memory | None:
    """Rebuild a merged memory from the members that remain (after one was deleted): the text of
    the new representative, the union of the remaining sources. Deleted when none remain.
    Call it after the deleted member's row is gone."""
    members = sorted(_with_source_count(merged.derived_from.all()), key=representative_order)
    if not members:
        organization, memory_id, user_id = merged.organization, merged.id, merged.user_id
        merged.delete()
        event_record(
            organization_id=organization.id,
            op=Op.DELETE,
            actor=actor,
            reason="nothing it was merged from remains",
            memory_id=memory_id,
            user_id=user_id,
        )
        return None
    representative = members[0]
    structured = next((m for m in members if m.attribute), None)
    merged.text = representative.text
    merged.embedding = representative.embedding
    merged.subject = structured.subject if structured else ""
    merged.attribute = structured.attribute if structured else ""
    merged.search_embedding = _searched_as(representative, merged.attribute)
    merged.value = structured.value if structured else ""
    merged.cardinality = structured.cardinality if structured else Memory.Cardinality.MULTI
    merged.importance = max(m.importance for m in members)
    merged.confidence = max(m.confidence for m in members)
    merged.save(
        update_fields=["text", "embedding", "search_embedding", "subject", "attribute", "value", "cardinality",
                       "importance", "confidence"]
    )
    sources = Episode.objects.filter(memory_links__memory__in=members).distinct()
    merged.sources.set(sources, through_defaults={"organization_id": merged.organization_id})
    event_record(
        organization_id=merged.organization_id,
        op=Op.MERGE,
        actor=actor,
        reason=f"recomputed from the {len(members)} remaining merged memories",
        memory_id=merged.id,
        user_id=merged.user_id,
        data={"members": [str(m.id) for m in members]},
    )
    return merged


def _searched_as(representative: Memory, attribute: str):
    """The merged memory's search vector: the representative's, unless the merged memory fills another slot
    (a structured member's), whose name it is searched after (selectors.questions.search_text)."""
    if representative.attribute == attribute:
        return representative.search_embedding
    return search_vector(representative.text, attribute, representative.user, subject=representative.subject)


def _untrusted(memory: Memory) -> bool:
    return memory.provenance == Memory.Provenance.UNTRUSTED_SOURCE


def _with_source_count(memories: QuerySet[Memory]) -> QuerySet[Memory]:
    return memories.annotate(source_count=Count("source_links", distinct=True))


def _edges(scope: QuerySet[Memory], memories: list[Memory], *, threshold: float, neighbours: int) -> list:
    if len(memories) <= IN_MEMORY_MAX:
        matrix = np.asarray([m.embedding for m in memories], dtype=np.float32).reshape(len(memories), -1)
        return [
            (memories[i].id, memories[j].id)
            for i, j in neighbour_edges(matrix, threshold=threshold, neighbours=neighbours)
        ]
    # Large scopes: the nearest neighbours of each memory from the database, exact inside the
    # scope up to the search threshold (selectors.search), so no all-pairs matrix is built.
    edges = []
    for memory in memories:
        for pk, cosine in dense_ranking(scope, _unit(memory.embedding), neighbours + 1):
            if pk != memory.id and cosine >= threshold:
                edges.append((memory.id, pk))
    return edges


def _unit(vector) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    return array / (np.linalg.norm(array) or 1.0)


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)
