"""What a read changes: the returned memories are refreshed and the access is logged."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memoryapp.actors import Principal
from memoryapp.models import AccessLog, Episode, Memory
from memoryapp.services.gate import redacted

# The agent reads that are logged: recalls (search, context) and lookups (lists, one memory or episode).
ACCESS_ENDPOINTS = ("search", "context", "episodes/search", "memories", "memories/{id}", "memories/{id}/history",
                    "episodes", "episodes/{id}", "users/{user}/export")
STRENGTH_PER_RECALL = 1.0  # MemoryBank: each recall makes the memory slower to fade


@transaction.atomic
def access_record(principal: Principal, *, items: list, query: str, endpoint: str, user_id=None,
                  recalled: bool = True) -> AccessLog:
    """Log the read. A recall (an answer to a question) also refreshes what it returned; a lookup (a list,
    one memory by id) is only logged: paging through a store is not remembering it."""
    memory_ids = [item.pk for item in items if isinstance(item, Memory)]
    episode_ids = [item.pk for item in items if isinstance(item, Episode)]
    if memory_ids and recalled:
        Memory.objects.filter(pk__in=memory_ids).update(
            last_accessed_at=timezone.now(),
            access_count=F("access_count") + 1,
            strength=F("strength") + STRENGTH_PER_RECALL,
        )
    actor = principal.actor
    return AccessLog.objects.create(
        organization_id=principal.organization_id,
        actor_type=actor.type,
        actor_id=actor.id,
        user_id=user_id,
        endpoint=endpoint,
        # A secret typed into a search box would otherwise stay in the log for as long as the log does.
        query=redacted(query)[:2000],
        memory_ids=memory_ids,
        episode_ids=episode_ids,
    )
