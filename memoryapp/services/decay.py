"""Forgetting: memories not recalled fade (MemoryBank retention) and are archived, each user keeps
at most a capped number of active memories, and session memories go when their session ends.

Archived memories are not retrieved but stay restorable, with the reason in `status_reason`.
Superseded facts are history: nothing here archives or deletes them.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, DateTimeField, DurationField, ExpressionWrapper, F, Max, Q, QuerySet, Value
from django.utils import timezone

from memoryapp.actors import ActorRef
from memoryapp.models import Episode, Memory, MemoryEvent, Organization
from memoryapp.services.apply import event_record

Op = MemoryEvent.Op

PROTECTED_IMPORTANCE = 9  # memories this important never fade and are never archived for the cap
UNUSED_FIELDS = ("embedding", "search_vector", "text")  # deciding what fades needs none of these


def strength_hours() -> float:
    """Hours for retention to fall to 1/e at strength 1 (each recall adds 1 to the strength)."""
    return float(getattr(settings, "DECAY_STRENGTH_HOURS", 24 * 30))


def archive_below() -> float:
    return float(getattr(settings, "DECAY_ARCHIVE_BELOW", 0.05))


def cap_per_user() -> int:
    return int(getattr(settings, "MEMORY_CAP_PER_USER", 5000))


def retention(hours_since_access: float, strength: float) -> float:
    """MemoryBank retention exp(-t / (S * DECAY_STRENGTH_HOURS)): 1 right after a recall, falling
    more slowly the more often the memory was recalled (higher strength S)."""
    if strength <= 0:
        raise ValueError(f"strength must be positive, got {strength}")
    return math.exp(-max(hours_since_access, 0.0) / (strength * strength_hours()))


def _retention_now(memory: Memory, now: datetime) -> tuple[float, float]:
    """(hours since the last recall, retention)."""
    hours = (now - memory.last_accessed_at).total_seconds() / 3600
    return hours, retention(hours, memory.strength)


def decay_candidates(organization: Organization | None = None) -> QuerySet[Memory]:
    """Active memories that may fade: not summaries (rebuilt, not forgotten), not procedural
    instructions (a standing rule does not wear out), not importance >= PROTECTED_IMPORTANCE."""
    memories = Memory.objects.filter(status=Memory.Status.ACTIVE, importance__lt=PROTECTED_IMPORTANCE).exclude(
        Q(kind__in=[Memory.Kind.SUMMARY, Memory.Kind.PROCEDURAL]) | Q(attribute="instruction")
    )
    return memories.filter(organization=organization) if organization is not None else memories


def decay_run(*, actor: ActorRef, now: datetime | None = None, organization: Organization | None = None) -> dict:
    """Archive faded memories, then enforce the per-user cap; counts by reason.

    Fading: retention below DECAY_ARCHIVE_BELOW archives a memory (see `decay_candidates`).

    Cap policy: a user with more than MEMORY_CAP_PER_USER active memories (all kinds and scopes
    count) has the excess archived among the memories that may fade, lowest importance first,
    then lowest retention, then oldest. Protected memories (summaries, instructions, importance
    >= PROTECTED_IMPORTANCE) are never archived for the cap, so a user whose protected memories
    alone exceed it stays above it.
    """
    now = now or timezone.now()
    threshold = archive_below()
    counts = {"faded": 0, "over_cap": 0}
    # retention < threshold  <=>  hours since access > -ln(threshold) * S * DECAY_STRENGTH_HOURS;
    # the database narrows to those rows, the exact figure is computed again for the reason.
    per_strength = timedelta(hours=-math.log(threshold) * strength_hours())
    cutoff = ExpressionWrapper(
        Value(now) - ExpressionWrapper(F("strength") * Value(per_strength), output_field=DurationField()),
        output_field=DateTimeField(),
    )
    faded = decay_candidates(organization).alias(cutoff=cutoff).filter(last_accessed_at__lt=F("cutoff"))
    for memory in faded.defer(*UNUSED_FIELDS).select_related("organization").iterator():
        hours, kept = _retention_now(memory, now)
        if kept >= threshold:
            continue
        days = int(hours // 24)
        reason = f"faded: not recalled for {days} days, retention {kept:.2f} < {threshold:.2f}"
        if _archive(memory, actor=actor, reason=reason, data={"retention": round(kept, 4), "days_idle": days}):
            counts["faded"] += 1
    counts["over_cap"] = _enforce_cap(actor=actor, now=now, organization=organization)
    return counts


def _enforce_cap(*, actor: ActorRef, now: datetime, organization: Organization | None) -> int:
    cap = cap_per_user()
    active = Memory.objects.filter(status=Memory.Status.ACTIVE, user__isnull=False)
    if organization is not None:
        active = active.filter(organization=organization)
    over = active.order_by().values("user_id").annotate(n=Count("id")).filter(n__gt=cap)
    archived = 0
    for row in over:
        excess = row["n"] - cap
        candidates = decay_candidates(organization).filter(user_id=row["user_id"])
        memories = list(candidates.defer(*UNUSED_FIELDS).select_related("organization"))
        ranked = sorted(memories, key=lambda m: (m.importance, _retention_now(m, now)[1], m.recorded_at, str(m.id)))
        for memory in ranked[:excess]:
            kept = _retention_now(memory, now)[1]
            reason = (
                f"over the cap of {cap} active memories per user: lowest importance ({memory.importance}) "
                f"and retention ({kept:.2f}) go first"
            )
            if _archive(memory, actor=actor, reason=reason, data={"retention": round(kept, 4), "cap": cap}):
                archived += 1
    return archived


@transaction.atomic
def _archive(memory: Memory, *, actor: ActorRef, reason: str, data: dict) -> bool:
    # Conditional: a memory recalled or changed since it was read is left alone.
    changed = Memory.objects.filter(
        pk=memory.pk, status=Memory.Status.ACTIVE, last_accessed_at=memory.last_accessed_at
    ).update(status=Memory.Status.ARCHIVED, status_reason=reason[:300])
    if changed:
        event_record(
            organization_id=memory.organization_id,
            op=Op.ARCHIVE,
            actor=actor,
            reason=reason,
            memory_id=memory.id,
            user_id=memory.user_id,
            data=data,
        )
    return bool(changed)


def sessions_expire(
    *, actor: ActorRef, idle_minutes: int = 60, now: datetime | None = None, organization: Organization | None = None
) -> dict:
    """Delete the session-scope memories of sessions idle for `idle_minutes` (no new episode and
    no new memory): a session memory lives as long as its conversation. Superseded versions are kept
    as history, quarantined ones for the admins' review. Hard delete; the events keep ids only."""
    now = now or timezone.now()
    idle = timedelta(minutes=idle_minutes)
    session_memories = Memory.objects.filter(scope=Memory.Scope.SESSION)
    if organization is not None:
        session_memories = session_memories.filter(organization=organization)
    sessions = (
        session_memories.order_by()
        .values("organization_id", "user_id", "session")
        .annotate(last_written=Max("recorded_at"))
    )
    counts = {"sessions": 0, "deleted": 0}
    for row in sessions:
        with transaction.atomic():
            owner = {"organization_id": row["organization_id"], "user_id": row["user_id"], "session": row["session"]}
            doomed = (
                Memory.objects.select_for_update()
                .filter(**owner, scope=Memory.Scope.SESSION)
                .exclude(status__in=[Memory.Status.SUPERSEDED, Memory.Status.QUARANTINED])
            )
            last_episode = None
            if row["session"]:
                last_episode = Episode.objects.filter(**owner).aggregate(at=Max("received_at"))["at"]
            last_activity = max(at for at in (row["last_written"], last_episode) if at is not None)
            if now - last_activity < idle:
                continue
            ids = list(doomed.values_list("id", flat=True))
            if not ids:
                continue
            Memory.objects.filter(pk__in=ids).delete()
            for memory_id in ids:
                event_record(
                    organization_id=row["organization_id"],
                    op=Op.DELETE,
                    actor=actor,
                    reason=f"session ended: idle for more than {idle_minutes} minutes",
                    memory_id=memory_id,
                    user_id=row["user_id"],
                    data={"session": row["session"]},
                )
            counts["sessions"] += 1
            counts["deleted"] += len(ids)
    return counts
