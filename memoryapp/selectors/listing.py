"""Listing memories (GET /api/v1/memories and the MCP `list_memories` tool): the filters, one place."""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from memoryapp.actors import Principal
from memoryapp.models import Memory, User
from memoryapp.selectors.scoping import scoped_memories, valid_at


def memories_listed(
    principal: Principal,
    *,
    user: User | None = None,
    scope: str = "",
    status: str = "",
    kind: str = "",
    as_of: datetime | None = None,
    known_at: datetime | None = None,
    q: str = "",
    session: str = "",
) -> QuerySet[Memory]:
    """What the principal may read, newest order left to the caller. Without `status`: what is true at
    `as_of` as known at `known_at` (both default now); with it: every memory in that status. Without
    `session`, every session's memories (a listing shows them all)."""
    memories = scoped_memories(principal, user=user, scopes=[scope] if scope else Memory.Scope.values,
                               session=session, all_sessions=not session)
    if status:
        memories = memories.filter(status=status)
    else:
        memories = valid_at(memories, as_of=as_of, known_at=known_at)
    if kind:
        memories = memories.filter(kind=kind)
    if q:
        memories = memories.filter(text__icontains=q)
    return memories.select_related("user", "project")
