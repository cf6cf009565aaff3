"""The versions of a fact: a memory and every memory it superseded or that superseded it."""

from __future__ import annotations

from uuid import UUID

from django.db.models import Q

from memoryapp.models import Memory, MemoryEvent


def memory_version_ids(memory_ids: set[UUID]) -> set[UUID]:
    """The memories plus every earlier and later version of the same fact (the supersedes chain)."""
    found = set(memory_ids)
    frontier = set(memory_ids)
    while frontier:
        linked = Memory.objects.filter(Q(pk__in=frontier) | Q(supersedes_id__in=frontier)).values_list(
            "id", "supersedes_id"
        )
        step = {pk for pair in linked for pk in pair if pk is not None} - found
        found |= step
        frontier = step
    return found


def memory_history(memory: Memory) -> tuple[list[Memory], list[MemoryEvent]]:
    """Every version of the memory's fact, oldest recorded first, and what happened to them, oldest first."""
    versions = list(Memory.objects.filter(pk__in=memory_version_ids({memory.pk})).select_related("user", "project")
                    .order_by("recorded_at"))
    events = list(MemoryEvent.objects.filter(memory_id__in=[v.pk for v in versions]).order_by("created_at"))
    return versions, events
