"""Governance: deletion that is real (with preview and receipt), correction, export and import,
pause. Deleted text ends up nowhere: not in rows, links, derived summaries, events or logs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memoryapp import embeddings
from memoryapp.models import (
    AccessLog,
    Agent,
    DeletionReceipt,
    Episode,
    Memory,
    MemoryDerivation,
    MemoryEvent,
    Organization,
    User,
)
from memoryapp.services.actors import ActorRef
from memoryapp.services.apply import event_record, memory_invalidate

Op = MemoryEvent.Op
DERIVED_KINDS = (Memory.Kind.SUMMARY, Memory.Kind.REFLECTION)


# --- deletion -------------------------------------------------------------------------------


@dataclass
class DeletionPlan:
    """What a deletion removes and what it recomputes, by id. The preview shows it; the
    receipt records it."""

    target: str
    memories: set[UUID] = field(default_factory=set)
    episodes: set[UUID] = field(default_factory=set)
    recompute: set[UUID] = field(default_factory=set)  # derived memories rebuilt from what remains
    sources_unlinked: int = 0  # memories that keep other sources and lose only the deleted one

    def as_dict(self) -> dict:
        return {
            "target": self.target,
            "deleted": {
                "memories": {"count": len(self.memories), "ids": sorted(map(str, self.memories))},
                "episodes": {"count": len(self.episodes), "ids": sorted(map(str, self.episodes))},
            },
            "recomputed": sorted(map(str, self.recompute)),
            "sources_unlinked": self.sources_unlinked,
        }


def _versions(memory_ids: set[UUID]) -> set[UUID]:
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


def _close_over_derivatives(plan: DeletionPlan) -> None:
    """Derived memories of deleted ones are recomputed, or deleted when nothing else feeds them."""
    pending = set(plan.memories)
    while pending:
        derived = set(
            MemoryDerivation.objects.filter(source_id__in=pending).values_list("derived_id", flat=True)
        ) - plan.memories
        pending = set()
        for derived_id in derived:
            remaining = MemoryDerivation.objects.filter(derived_id=derived_id).exclude(source_id__in=plan.memories)
            if remaining.exists():
                plan.recompute.add(derived_id)
            else:
                plan.memories.add(derived_id)
                plan.recompute.discard(derived_id)
                pending.add(derived_id)


def plan_memory_deletion(memory: Memory) -> DeletionPlan:
    plan = DeletionPlan(target="memory", memories=_versions({memory.pk}))
    _close_over_derivatives(plan)
    return plan


def plan_episode_deletion(episode: Episode) -> DeletionPlan:
    plan = DeletionPlan(target="episode", episodes={episode.pk})
    sourced = Memory.objects.filter(source_links__episode=episode).distinct()
    for memory in sourced:
        if memory.source_links.exclude(episode=episode).exists():
            plan.sources_unlinked += 1
        else:
            plan.memories.add(memory.pk)
    _close_over_derivatives(plan)
    return plan


def plan_user_deletion(user: User) -> DeletionPlan:
    plan = DeletionPlan(
        target="user",
        memories=set(Memory.objects.filter(user=user).values_list("id", flat=True)),
        episodes=set(Episode.objects.filter(user=user).values_list("id", flat=True)),
    )
    _close_over_derivatives(plan)  # org or project memories derived from this user's
    return plan


@transaction.atomic
def deletion_execute(
    plan: DeletionPlan, *, organization: Organization, actor: ActorRef, user_id=None
) -> DeletionReceipt:
    """Hard-delete what the plan lists, rebuild what it recomputes, scrub text from the audit trail."""
    from memoryapp.services.reflect import summary_recompute

    deleted_ids = plan.memories | plan.episodes
    Memory.objects.filter(organization=organization, pk__in=plan.memories).delete()
    Episode.objects.filter(organization=organization, pk__in=plan.episodes).delete()
    # Events and logs keep ids and counts, never text that could quote what was deleted.
    MemoryEvent.objects.filter(Q(memory_id__in=deleted_ids) | Q(episode_id__in=deleted_ids)).update(
        reason="(deleted)", data={}
    )
    AccessLog.objects.filter(
        Q(memory_ids__overlap=list(plan.memories)) | Q(episode_ids__overlap=list(plan.episodes))
    ).update(query="")
    rebuilt = []
    for derived in Memory.objects.filter(organization=organization, pk__in=plan.recompute):
        # Summaries, reflections and merges alike; one left with too few members is deleted instead.
        if summary_recompute(summary=derived, actor=actor) is None:
            plan.recompute.discard(derived.pk)
            plan.memories.add(derived.pk)
        else:
            rebuilt.append(derived.pk)
    for memory_id in plan.memories:
        event_record(organization_id=organization.id, op=Op.DELETE, actor=actor, reason="deleted", memory_id=memory_id,
                     user_id=user_id)
    for episode_id in plan.episodes:
        event_record(organization_id=organization.id, op=Op.DELETE, actor=actor, reason="deleted",
                     episode_id=episode_id, user_id=user_id)
    body = plan.as_dict()
    return DeletionReceipt.objects.create(
        organization=organization, user_id=user_id, actor_type=actor.type, actor_id=actor.id, target=plan.target,
        deleted=body["deleted"], recomputed=[str(pk) for pk in rebuilt],
    )


def memory_delete(*, memory: Memory, actor: ActorRef) -> DeletionReceipt:
    return deletion_execute(plan_memory_deletion(memory), organization=memory.organization, actor=actor,
                            user_id=memory.user_id)


def episode_delete(*, episode: Episode, actor: ActorRef) -> DeletionReceipt:
    return deletion_execute(plan_episode_deletion(episode), organization=episode.organization, actor=actor,
                            user_id=episode.user_id)


def user_memories_delete(*, user: User, actor: ActorRef) -> DeletionReceipt:
    receipt = deletion_execute(plan_user_deletion(user), organization=user.organization, actor=actor,
                               user_id=user.id)
    AccessLog.objects.filter(organization=user.organization, user_id=user.id).update(query="")
    return receipt


# --- correction -------------------------------------------------------------------------------


@transaction.atomic
def memory_correct(
    *, memory: Memory, actor: ActorRef, text: str | None = None, value: str | None = None,
    importance: int | None = None, valid_from: datetime | None = None,
) -> Memory:
    """The edit becomes a new `user_corrected` version; the old one is invalidated (kept as
    history), other memories from its source episodes are flagged for review, and summaries
    built on it are rebuilt on the new version."""
    locked = Memory.objects.select_for_update().get(pk=memory.pk)
    if locked.status != Memory.Status.ACTIVE:
        raise ValueError(f"only an active memory can be corrected; this one is {locked.status}")
    new_text = (text or locked.text).strip()
    if not new_text:
        raise ValueError("the corrected text is empty")
    if value is None:
        value = locked.value if text is None else _corrected_value(locked.text, locked.value, new_text)
    importance, valid_from = importance or locked.importance, valid_from or locked.valid_from
    if (new_text, value, importance, valid_from) == (locked.text, locked.value, locked.importance, locked.valid_from):
        raise ValueError("nothing to correct: this is what the memory already says")
    memory_invalidate(memory=locked, actor=actor, reason="corrected by an edit")
    now = timezone.now()
    corrected = Memory.objects.create(
        organization=locked.organization, user=locked.user, project=locked.project, session=locked.session,
        scope=locked.scope, kind=locked.kind, text=new_text, subject=locked.subject, attribute=locked.attribute,
        value=value,
        cardinality=locked.cardinality, importance=importance, confidence=1.0,
        provenance=Memory.Provenance.USER_CORRECTED, valid_from=valid_from,
        recorded_at=now, last_accessed_at=now, embedding=embeddings.encode_one(new_text), supersedes=locked,
        agent=locked.agent,
    )
    corrected.sources.set(locked.sources.all(), through_defaults={"organization_id": locked.organization_id})
    event_record(organization_id=locked.organization_id, op=Op.CORRECT, actor=actor, reason="new version from an edit",
                 memory_id=corrected.pk, user_id=locked.user_id, data={"corrects": str(locked.pk)})
    MemoryDerivation.objects.filter(source=locked).update(source=corrected)
    from memoryapp.services.reflect import summary_recompute

    for derived in Memory.objects.filter(derivation_links__source=corrected, kind__in=DERIVED_KINDS):
        summary_recompute(summary=derived, actor=actor)
    return corrected


def _corrected_value(old_text: str, old_value: str, new_text: str) -> str:
    """The slot's value in a corrected text: what now stands where the old value stood between the same
    words ("Sam lives in Porto." → "Sam lives in Braga." gives "Braga"); the whole text otherwise."""
    start = old_text.lower().find(old_value.lower()) if old_value else -1
    if start >= 0:
        before, after = old_text[:start].lower(), old_text[start + len(old_value):].lower()
        middle = new_text[len(before) : len(new_text) - len(after)].strip()
        if new_text.lower().startswith(before) and new_text.lower().endswith(after) and middle:
            return middle
    return new_text


# --- pause ------------------------------------------------------------------------------------


def memory_writing_set(*, user: User, paused: bool, actor: ActorRef) -> None:
    User.objects.filter(pk=user.pk).update(memory_paused=paused)
    user.memory_paused = paused
    event_record(organization_id=user.organization_id, op=Op.UPDATE, actor=actor, user_id=user.id,
                 reason="memory writing paused" if paused else "memory writing resumed")


def agent_set_active(*, agent: Agent, active: bool) -> None:
    Agent.objects.filter(pk=agent.pk).update(is_active=active)
    agent.is_active = active


# --- export and import ------------------------------------------------------------------------

EXPORT_FORMAT = "memoryapp.export/1"


def user_export(*, user: User) -> dict:
    """Everything of one user as a JSON document: memories with provenance and validity,
    episodes and events. `user_import` reads it back."""
    memories = Memory.objects.filter(user=user).order_by("recorded_at").prefetch_related("source_links")
    episodes = Episode.objects.filter(user=user).order_by("occurred_at", "received_at")
    memory_ids = [m.pk for m in memories]
    events = MemoryEvent.objects.filter(Q(user_id=user.id) | Q(memory_id__in=memory_ids)).order_by("created_at")
    derivations = MemoryDerivation.objects.filter(derived__user=user).values_list("derived_id", "source_id")
    return {
        "format": EXPORT_FORMAT,
        "exported_at": timezone.now().isoformat(),
        "user": {"external_id": user.external_id, "memory_paused": user.memory_paused},
        "episodes": [
            {"id": str(e.id), "session": e.session, "project": e.project.name if e.project_id else None,
             "source": e.source, "trust": e.trust, "content": e.content, "metadata": e.metadata,
             "occurred_at": e.occurred_at.isoformat(), "received_at": e.received_at.isoformat(),
             "extraction": e.extraction}
            for e in episodes.select_related("project")
        ],
        "memories": [
            {"id": str(m.id), "text": m.text, "kind": m.kind, "scope": m.scope, "session": m.session,
             "project": m.project.name if m.project_id else None, "subject": m.subject, "attribute": m.attribute,
             "value": m.value, "cardinality": m.cardinality, "importance": m.importance, "confidence": m.confidence,
             "provenance": m.provenance, "status": m.status, "status_reason": m.status_reason,
             "needs_review": m.needs_review, "valid_from": m.valid_from.isoformat(),
             "valid_to": m.valid_to.isoformat() if m.valid_to else None,
             "valid_to_recorded_at": m.valid_to_recorded_at.isoformat() if m.valid_to_recorded_at else None,
             "recorded_at": m.recorded_at.isoformat(), "expired_at": m.expired_at.isoformat() if m.expired_at else None,
             "access_count": m.access_count, "strength": m.strength,
             "last_accessed_at": m.last_accessed_at.isoformat(),
             "supersedes": str(m.supersedes_id) if m.supersedes_id else None,
             "sources": [str(link.episode_id) for link in m.source_links.all()],
             "derived_from": [str(source) for derived, source in derivations if derived == m.pk]}
            for m in memories.select_related("project")
        ],
        "events": [
            {"op": e.op, "memory_id": str(e.memory_id) if e.memory_id else None,
             "episode_id": str(e.episode_id) if e.episode_id else None, "actor_type": e.actor_type,
             "actor_id": e.actor_id, "reason": e.reason, "data": e.data, "at": e.created_at.isoformat()}
            for e in events
        ],
    }


@transaction.atomic
def user_import(*, organization: Organization, document: dict, actor: ActorRef) -> User:
    """Recreate an exported user in `organization` (which must not already have that user),
    with new ids and the same content, links and history."""
    from datetime import datetime as dt

    from memoryapp.models import Project
    from memoryapp.services.tenancy import user_create

    if document.get("format") != EXPORT_FORMAT:
        raise ValueError(f"not a memoryapp export (expected format {EXPORT_FORMAT})")
    external_id = document["user"]["external_id"]
    if User.objects.filter(organization=organization, external_id=external_id).exists():
        raise ValueError(f"{external_id!r} already exists in {organization.name}")
    user = user_create(organization=organization, external_id=external_id)
    user.memory_paused = document["user"].get("memory_paused", False)
    user.save(update_fields=["memory_paused"])

    def when(value):
        return dt.fromisoformat(value) if value else None

    def project(name):
        return Project.objects.get_or_create(organization=organization, name=name)[0] if name else None

    episode_ids: dict[str, Episode] = {}
    contents = [e["content"] for e in document["episodes"]]
    for item, vector in zip(document["episodes"], embeddings.encode(contents), strict=True):
        episode_ids[item["id"]] = Episode.objects.create(
            organization=organization, user=user, project=project(item["project"]), session=item["session"],
            source=item["source"], trust=item["trust"], content=item["content"], metadata=item["metadata"],
            occurred_at=when(item["occurred_at"]), received_at=when(item["received_at"]),
            extraction=item["extraction"], embedding=vector,
        )
    memory_ids: dict[str, Memory] = {}
    texts = [m["text"] for m in document["memories"]]
    for item, vector in zip(document["memories"], embeddings.encode(texts), strict=True):
        memory = Memory.objects.create(
            organization=organization, user=user, project=project(item["project"]), embedding=vector,
            **{key: item[key] for key in ("text", "kind", "scope", "session", "subject", "attribute", "value",
                                           "cardinality", "importance", "confidence", "provenance", "status",
                                           "status_reason", "needs_review", "access_count", "strength")},
            **{key: when(item[key]) for key in ("valid_from", "valid_to", "valid_to_recorded_at", "recorded_at",
                                                 "expired_at", "last_accessed_at")},
        )
        memory.sources.set([episode_ids[pk] for pk in item["sources"]],
                           through_defaults={"organization_id": organization.id})
        memory_ids[item["id"]] = memory
    for item in document["memories"]:
        memory = memory_ids[item["id"]]
        if item["supersedes"]:
            Memory.objects.filter(pk=memory.pk).update(supersedes=memory_ids[item["supersedes"]])
        for source in item["derived_from"]:
            MemoryDerivation.objects.create(organization=organization, derived=memory, source=memory_ids[source])

    def remap(value, table):
        return table[value].pk if value in table else None

    for item in document["events"]:
        MemoryEvent.objects.create(
            organization=organization, op=item["op"], memory_id=remap(item["memory_id"], memory_ids),
            episode_id=remap(item["episode_id"], episode_ids), user_id=user.id, actor_type=item["actor_type"],
            actor_id=item["actor_id"], reason=item["reason"], data=item["data"], created_at=when(item["at"]),
        )
    event_record(organization_id=organization.id, op=Op.ADD, actor=actor, user_id=user.id,
                 reason="imported from an export", data={"memories": len(memory_ids), "episodes": len(episode_ids)})
    return user
