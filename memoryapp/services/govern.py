"""Governance: deletion that is real (with preview and receipt), correction, export, pause.
Deleted text ends up nowhere: not in rows, links, derived summaries, events or logs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

import numpy as np
from django.db import transaction
from django.db.models import Q, QuerySet
from django.http import Http404
from django.utils import timezone

from memoryapp import embeddings
from memoryapp.actors import ActorRef
from memoryapp.models import (
    AccessLog,
    Agent,
    AgentBlock,
    DeletionReceipt,
    Episode,
    Memory,
    MemoryDerivation,
    MemoryEvent,
    Organization,
    User,
)
from memoryapp.selectors.questions import search_vector
from memoryapp.selectors.versions import memory_version_ids
from memoryapp.services.apply import complemented, event_record, memory_invalidate, redaction_record
from memoryapp.services.gate import redact_labelled, redact_secrets
from memoryapp.services.judge import RESTATEMENT_SIMILARITY, negated, normalize
from memoryapp.services.locks import user_lock

Op = MemoryEvent.Op
DERIVED_KINDS = (Memory.Kind.SUMMARY, Memory.Kind.REFLECTION)


# --- deletion -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rebuilt:
    """What a memory says once rebuilt from the sources that remain after a deletion."""

    text: str
    value: str
    importance: int
    trusted: bool  # at least one remaining source that supports it is trusted


@dataclass
class DeletionPlan:
    """What a deletion removes and what it recomputes, by id. The preview shows it; the
    receipt records it."""

    target: str
    memories: set[UUID] = field(default_factory=set)
    episodes: set[UUID] = field(default_factory=set)
    recompute: set[UUID] = field(default_factory=set)  # rebuilt from what remains: derived ones and `rebuilt`
    # Memories a deleted episode helped write (an UPDATE merged it in) that other sources still
    # support: rewritten from those alone. Their ids are in `recompute` too.
    rebuilt: dict[UUID, Rebuilt] = field(default_factory=dict)
    sources_unlinked: int = 0  # memories that keep other sources and lose only the deleted one
    # A memory's deletion: the messages it came from that this plan keeps (episode search still finds
    # them); plan_memory_deletion(with_sources=True) deletes the user's own ones too.
    sources_kept: set[UUID] = field(default_factory=set)

    def as_dict(self) -> dict:
        return {
            "target": self.target,
            "deleted": {
                "memories": {"count": len(self.memories), "ids": sorted(map(str, self.memories))},
                "episodes": {"count": len(self.episodes), "ids": sorted(map(str, self.episodes))},
            },
            "recomputed": sorted(map(str, self.recompute)),
            "sources_unlinked": self.sources_unlinked,
            "sources_kept": {"count": len(self.sources_kept), "ids": sorted(map(str, self.sources_kept))},
        }


def _close_over_derivatives(plan: DeletionPlan) -> None:
    """Derived memories of deleted or rebuilt ones are recomputed, or deleted when nothing else feeds them."""
    pending = set(plan.memories) | set(plan.rebuilt)
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


def _close_over_sources(plan: DeletionPlan, sourced: QuerySet[Memory]) -> None:
    """Memories that came from the deleted episodes: deleted when no other source remains; rebuilt from
    the remaining sources when a deleted one shaped what they say; otherwise they only lose the link.
    Every version of a fact has its own sources, so earlier versions are decided the same way.
    `sourced`: the memories linked to the deleted episodes that the plan does not delete already."""
    sourced = sourced.distinct().prefetch_related("source_links")
    merges = set(MemoryDerivation.objects.filter(derived__in=sourced).values_list("derived_id", flat=True))
    for memory in sourced:
        remaining = {link.episode_id for link in memory.source_links.all()} - plan.episodes
        if not remaining:
            plan.memories.add(memory.pk)
        elif (memory.pk in merges  # rebuilt from its members, by _close_over_derivatives
              or memory.provenance == Memory.Provenance.USER_CORRECTED  # the user's own words
              or not _shaped_by(memory, deleted=plan.episodes, remaining=remaining)):
            plan.sources_unlinked += 1
        else:
            rebuilt = _rebuilt(memory, remaining=remaining, deleted=plan.episodes)
            if rebuilt is None:
                plan.memories.add(memory.pk)  # what is left of its sources no longer says it
            elif (rebuilt.text, rebuilt.value) == (memory.text, memory.value):
                plan.sources_unlinked += 1  # the others say all of it too
            else:
                plan.rebuilt[memory.pk] = rebuilt
                plan.recompute.add(memory.pk)


def _shaped_by(memory: Memory, *, deleted: set[UUID], remaining: set[UUID]) -> bool:
    """Whether a deleted episode wrote into the memory (ADD, UPDATE, SUPERSEDE), as its events record;
    a NOOP only linked it. With no record of who wrote it (an import), assume a deleted one did."""
    writers = set()
    for data in MemoryEvent.objects.filter(memory_id=memory.pk).exclude(op=Op.NOOP).values_list("data", flat=True):
        writers.update(map(str, (data or {}).get("sources", []) + (data or {}).get("sources_added", [])))
    deleted_ids = set(map(str, deleted))
    return bool(writers & deleted_ids) or not writers & (deleted_ids | set(map(str, remaining)))


def _rebuilt(memory: Memory, *, remaining: set[UUID], deleted: set[UUID]) -> Rebuilt | None:
    """The memory as its remaining sources alone state it, read again by the extractor and joined the
    way an UPDATE joins them; None when none of them states it."""
    from memoryapp.services.extraction import episode_candidates

    text = value = ""
    importance, trusted = 1, False
    sources = Episode.objects.filter(pk__in=remaining).select_related("user").order_by("occurred_at", "received_at")
    for episode in sources:
        for candidate in episode_candidates(episode, excluded=deleted):
            said = negated(candidate.value) if candidate.relation == "negate" else candidate.value
            if not (_states(memory.text, memory.value, memory, candidate, said) or _restates(memory, candidate)):
                continue  # something else the episode says
            if not text:
                text, value = candidate.text, said
            elif not _states(text, value, memory, candidate, said):
                text, value = complemented(text, value, candidate.text, candidate.subject.lower(), said)
            importance = max(importance, candidate.importance)
            trusted = trusted or episode.trust == Episode.Trust.TRUSTED
    return Rebuilt(text=text, value=value, importance=importance, trusted=trusted) if text else None


def _states(text: str, value: str, memory: Memory, candidate, said: str) -> bool:
    """Whether a memory's `text` and `value` already say what the candidate says (`said`, its value):
    for a slot, the same slot and one of the '; '-joined values; unstructured, the statement itself."""
    if candidate.relation == "retract":
        return False
    if memory.attribute:
        same_slot = (candidate.attribute, candidate.subject.lower()) == (memory.attribute, memory.subject.lower())
        return same_slot and normalize(said) in {normalize(part) for part in value.split(";")}
    if candidate.attribute:
        return False
    statement, name = candidate.text.rstrip(".").lower(), f"{candidate.subject.lower()} "
    return statement in text.lower() or (bool(candidate.subject) and statement.startswith(name)
                                         and statement[len(name):] in text.lower())


def _restates(memory: Memory, candidate) -> bool:
    """An unstructured statement the judge took for a restatement of the memory (its NOOP rule)."""
    if memory.attribute or candidate.attribute or memory.embedding is None:
        return False
    vector = np.asarray(embeddings.encode_one(candidate.text), dtype=np.float32)
    known = np.asarray(memory.embedding, dtype=np.float32)
    cosine = float(vector @ known / ((np.linalg.norm(vector) * np.linalg.norm(known)) or 1.0))
    return cosine >= RESTATEMENT_SIMILARITY


# The metadata of the episode that records a memory an agent or user stated directly (POST
# /api/v1/memories): that episode is the memory's own text, not a conversation it was drawn from.
STATEMENT_VIA = "POST /api/v1/memories"


MEMORY_WITH_SOURCES = "memory_with_sources"  # the plan's and the receipt's target: a memory and its messages


def plan_memory_deletion(memory: Memory, *, with_sources: bool = False) -> DeletionPlan:
    """The memory with its versions and what was derived only from them; an episode that is only the
    statement of these memories goes too. Conversation messages they came from stay (`sources_kept`)
    unless `with_sources`: then the user's own ones go as well, whole, with what else they alone
    support, exactly as deleting each of them would (plan_episode_deletion), so that episode search
    cannot quote the fact back either. Messages of other users stay: this deletion is authorized for
    the memory's user, and runs under that user's lock."""
    versions = memory_version_ids({memory.pk})
    sources = Episode.objects.filter(memory_links__memory_id__in=versions).distinct()
    if not with_sources:
        plan = DeletionPlan(target="memory", memories=versions)
        statements = sources.filter(metadata__via=STATEMENT_VIA)
        plan.episodes = set(statements.exclude(memory_links__memory__in=Memory.objects.exclude(pk__in=plan.memories))
                            .values_list("id", flat=True))
        _close_over_derivatives(plan)
    else:
        own = sources.filter(user_id=memory.user_id) if memory.user_id else Episode.objects.none()
        plan = DeletionPlan(target=MEMORY_WITH_SOURCES, memories=versions,
                            episodes=set(own.values_list("id", flat=True)))
        _close_over_episodes(plan)
    plan.sources_kept = set(sources.values_list("id", flat=True)) - plan.episodes
    return plan


def _close_over_episodes(plan: DeletionPlan) -> None:
    """What deleting `plan.episodes` takes with it besides `plan.memories`: memories only they support,
    memories they helped write (rebuilt), and what was derived from either."""
    _close_over_sources(plan, Memory.objects.filter(source_links__episode__in=plan.episodes)
                        .exclude(pk__in=plan.memories))
    _close_over_derivatives(plan)


def plan_episode_deletion(episode: Episode) -> DeletionPlan:
    plan = DeletionPlan(target="episode", episodes={episode.pk})
    _close_over_episodes(plan)
    return plan


def plan_user_deletion(user: User) -> DeletionPlan:
    plan = DeletionPlan(
        target="user",
        memories=set(Memory.objects.filter(user=user).values_list("id", flat=True)),
        episodes=set(Episode.objects.filter(user=user).values_list("id", flat=True)),
    )
    # Memories of no user (org scope) written from this user's episodes.
    _close_over_sources(plan, Memory.objects.filter(source_links__episode__user=user).exclude(user=user))
    _close_over_derivatives(plan)  # org or project memories derived from this user's
    return plan


@transaction.atomic
def deletion_execute(
    plan: DeletionPlan, *, organization: Organization, actor: ActorRef, user_id=None
) -> DeletionReceipt:
    """Hard-delete what the plan lists, rebuild what it recomputes, scrub text from the audit trail.
    Plan it in the same transaction, under services.locks.user_lock (memory_delete, episode_delete and
    user_memories_delete do): a plan made earlier can miss what a concurrent ingest wrote since."""
    from memoryapp.services.reflect import summary_recompute

    deleted_ids = plan.memories | plan.episodes
    # Erasure on disk (services.purge): stored queries quoting the text now, while it is here to match;
    # the database files once this commits.
    from memoryapp.services.purge import access_queries_scrub, purge_soon

    access_queries_scrub(organization=organization, memory_ids=plan.memories, episode_ids=plan.episodes)
    transaction.on_commit(purge_soon)
    Memory.objects.filter(organization=organization, pk__in=plan.memories).delete()
    Episode.objects.filter(organization=organization, pk__in=plan.episodes).delete()
    # Events and logs keep ids and counts, never text that could quote what was deleted.
    MemoryEvent.objects.filter(Q(memory_id__in=deleted_ids) | Q(episode_id__in=deleted_ids)).update(
        reason="(deleted)", data={}
    )
    AccessLog.objects.filter(
        Q(memory_ids__overlap=list(plan.memories)) | Q(episode_ids__overlap=list(plan.episodes))
    ).update(query="")
    for memory in Memory.objects.filter(organization=organization, pk__in=plan.rebuilt):
        _memory_rebuild(memory, plan.rebuilt[memory.pk], actor=actor)
    rebuilt = list(plan.rebuilt)
    for derived in Memory.objects.filter(organization=organization, pk__in=plan.recompute - set(plan.rebuilt)):
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


def _memory_rebuild(memory: Memory, rebuilt: Rebuilt, *, actor: ActorRef) -> None:
    from memoryapp.services.extraction import UNTRUSTED_CONFIDENCE

    memory.text, memory.value, memory.importance = rebuilt.text, rebuilt.value, rebuilt.importance
    memory.embedding = embeddings.encode_one(rebuilt.text)
    memory.search_embedding = search_vector(rebuilt.text, memory.attribute, memory.user, subject=memory.subject)
    if not rebuilt.trusted:  # only untrusted sources still say it: it is believed as they are
        memory.provenance = Memory.Provenance.UNTRUSTED_SOURCE
        memory.confidence = min(memory.confidence, UNTRUSTED_CONFIDENCE)
    memory.save(update_fields=["text", "value", "importance", "embedding", "search_embedding", "provenance",
                              "confidence"])
    event_record(organization_id=memory.organization_id, op=Op.UPDATE, actor=actor, memory_id=memory.pk,
                 user_id=memory.user_id, reason="rebuilt from the sources that remain after a deletion")


# The target is looked up again under the lock: a concurrent deletion may have taken it meanwhile, and
# then the answer is the 404 a later request would get.
def memory_delete(*, memory: Memory, actor: ActorRef, with_sources: bool = False) -> DeletionReceipt:
    """See plan_memory_deletion; `with_sources` deletes the messages it came from too."""
    with transaction.atomic():
        user_lock(user_id=memory.user_id)
        if not Memory.objects.filter(pk=memory.pk).exists():
            raise Http404("no such memory")
        return deletion_execute(plan_memory_deletion(memory, with_sources=with_sources),
                                organization=memory.organization, actor=actor, user_id=memory.user_id)


def episode_delete(*, episode: Episode, actor: ActorRef) -> DeletionReceipt:
    with transaction.atomic():
        user_lock(user_id=episode.user_id)
        if not Episode.objects.filter(pk=episode.pk).exists():
            raise Http404("no such episode")
        return deletion_execute(plan_episode_deletion(episode), organization=episode.organization, actor=actor,
                                user_id=episode.user_id)


def user_memories_delete(*, user: User, actor: ActorRef) -> DeletionReceipt:
    with transaction.atomic():  # the queries go with the data, in the receipt's own transaction
        user_lock(user_id=user.id)
        AccessLog.objects.filter(organization=user.organization, user_id=user.id).update(query="")
        return deletion_execute(plan_user_deletion(user), organization=user.organization, actor=actor,
                                user_id=user.id)


# --- correction -------------------------------------------------------------------------------


@transaction.atomic
def memory_correct(
    *, memory: Memory, actor: ActorRef, text: str | None = None, value: str | None = None,
    importance: int | None = None, valid_from: datetime | None = None,
) -> Memory:
    """The edit becomes a new `user_corrected` version; the old one is invalidated (kept as
    history), other memories from its source episodes are flagged for review, and summaries
    built on it are rebuilt on the new version."""
    user_lock(user_id=memory.user_id)  # a deletion of this user's data waits, or has already happened
    locked = Memory.objects.select_for_update().filter(pk=memory.pk).first()
    if locked is None:
        raise ValueError("this memory was deleted meanwhile")
    if locked.status != Memory.Status.ACTIVE:
        raise ValueError(f"only an active memory can be corrected; this one is {locked.status}")
    # A correction is typed like any message, through the API or the dashboard: secrets stay out of it.
    redacted: list[str] = []
    if text is not None:
        text, redacted = redact_secrets(text)
    if value is not None:
        value, found = redact_labelled(value, label=locked.attribute)
        redacted = list(dict.fromkeys(redacted + found))
    new_text = (text or locked.text).strip()
    if not new_text:
        raise ValueError("the corrected text is empty")
    if value is None:
        value = locked.value if text is None else corrected_value(locked.text, locked.value, new_text)
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
        recorded_at=now, last_accessed_at=now, embedding=embeddings.encode_one(new_text),
        search_embedding=search_vector(new_text, locked.attribute, locked.user, subject=locked.subject),
        supersedes=locked,
        agent=locked.agent,
    )
    corrected.sources.set(locked.sources.all(), through_defaults={"organization_id": locked.organization_id})
    event_record(organization_id=locked.organization_id, op=Op.CORRECT, actor=actor, reason="new version from an edit",
                 memory_id=corrected.pk, user_id=locked.user_id, data={"corrects": str(locked.pk)})
    if redacted:
        redaction_record(organization_id=locked.organization_id, actor=actor, kinds=redacted, memory_id=corrected.pk,
                         user_id=locked.user_id)
    MemoryDerivation.objects.filter(source=locked).update(source=corrected)
    from memoryapp.services.reflect import summary_recompute

    for derived in Memory.objects.filter(derivation_links__source=corrected, kind__in=DERIVED_KINDS):
        summary_recompute(summary=derived, actor=actor)
    return corrected


def corrected_value(old_text: str, old_value: str, new_text: str) -> str:
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


@transaction.atomic
def memory_writing_set(*, user: User, paused: bool, actor: ActorRef) -> None:
    User.objects.filter(pk=user.pk).update(memory_paused=paused)
    user.memory_paused = paused
    event_record(organization_id=user.organization_id, op=Op.UPDATE, actor=actor, user_id=user.id,
                 reason="memory writing paused" if paused else "memory writing resumed")


@transaction.atomic
def agents_reading_set(*, user: User, paused: bool, actor: ActorRef) -> None:
    """The user's second switch: while on, agents' searches, context and episode searches about them
    answer 403 (scoping.require_reading); writing is the other switch."""
    User.objects.filter(pk=user.pk).update(agents_reading_paused=paused)
    user.agents_reading_paused = paused
    event_record(organization_id=user.organization_id, op=Op.UPDATE, actor=actor, user_id=user.id,
                 reason="agents reading stopped" if paused else "agents reading resumed")


@transaction.atomic
def agent_block_set(*, user: User, agent: Agent, blocked: bool, actor: ActorRef) -> None:
    """One user blocking (or unblocking) one agent of their organization: scoping drops them from its reach."""
    if agent.organization_id != user.organization_id:
        raise ValueError("that agent is not in your organization")
    if blocked:
        AgentBlock.objects.get_or_create(user=user, agent=agent)
    else:
        AgentBlock.objects.filter(user=user, agent=agent).delete()
    event_record(organization_id=user.organization_id, op=Op.UPDATE, actor=actor, user_id=user.id,
                 reason=f"agent {agent.name} blocked" if blocked else f"agent {agent.name} unblocked")


@transaction.atomic
def memory_review_clear(*, memory: Memory, actor: ActorRef) -> None:
    """The owner says a memory flagged by a correction of its source still holds ("Looks right")."""
    Memory.objects.filter(pk=memory.pk).update(needs_review=False)
    memory.needs_review = False
    event_record(organization_id=memory.organization_id, op=Op.UPDATE, actor=actor, memory_id=memory.pk,
                 user_id=memory.user_id, reason="reviewed: looks right")


# --- export and import ------------------------------------------------------------------------

EXPORT_FORMAT = "memoryapp.export/1"


def user_export(*, user: User) -> dict:
    """Everything of one user as a JSON document: memories with provenance and validity,
    episodes and events."""
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
