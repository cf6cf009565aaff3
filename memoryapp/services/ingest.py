"""Ingest: episodes pass the gate (size, secrets) and are stored with their vectors; extraction
follows after commit. A request the client marks with an Idempotency-Key is stored once: a retry
gets the episodes the first one stored."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memoryapp import embeddings
from memoryapp.actors import ActorRef
from memoryapp.models import Agent, Episode, Job, MemoryEvent, Organization, Project, User
from memoryapp.services.apply import event_record, writes_batched
from memoryapp.services.gate import GateRefused, check_size, redact_secrets
from memoryapp.services.locks import user_lock


class IdempotencyConflict(Exception):
    """The Idempotency-Key was used before for a request with other messages."""


@dataclass(frozen=True)
class MessageIn:
    source: str
    content: str
    occurred_at: datetime | None = None
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True)
class IngestResult:
    episodes: list[Episode]
    paused: bool = False
    redactions: int = 0
    replayed: bool = False  # a retry of a request already stored under the same Idempotency-Key


def _redact_json(value, kinds: list[str]):
    """Secrets hide in metadata too, in keys as well as values: redact every string inside it,
    adding the kinds found to `kinds`."""
    if isinstance(value, str):
        value, found = redact_secrets(value)
        kinds.extend(found)
        return value
    if isinstance(value, list):
        return [_redact_json(item, kinds) for item in value]
    if isinstance(value, dict):
        return {_redact_json(key, kinds): _redact_json(item, kinds) for key, item in value.items()}
    return value


def _message_redacted(message: MessageIn, session_kinds: list[str]) -> tuple[str, dict, list[str]]:
    """The content and metadata to store, and every kind of secret taken out of them or out of the
    session name, for the episode's REDACT event."""
    content, kinds = redact_secrets(message.content)
    metadata = _redact_json(message.metadata or {}, kinds)
    return content, metadata, list(dict.fromkeys(kinds + session_kinds))


def episodes_ingest(
    *,
    organization: Organization,
    user: User,
    messages: list[MessageIn],
    actor: ActorRef,
    session: str = "",
    project: Project | None = None,
    agent: Agent | None = None,
    request_key: str = "",
) -> IngestResult:
    """Store the messages as episodes, all or nothing. Refuses (GateRefused) before storing anything.
    With a `request_key` (the client's Idempotency-Key), a request already stored under that key for
    this user stores nothing and returns the episodes stored the first time (`replayed`); raises
    IdempotencyConflict when the key was used for other messages.

    The episodes are embedded here, in one batch before the transaction opens: they are searchable
    by meaning as soon as the call returns, and extraction only embeds its candidates (and does not
    write each episode's row a second time for its vector)."""
    if not messages:
        raise GateRefused("empty", "no messages to store")
    if len(messages) > settings.MEMORY_MAX_MESSAGES_PER_REQUEST:
        raise GateRefused(
            "too_large",
            f"{len(messages)} messages, the limit is {settings.MEMORY_MAX_MESSAGES_PER_REQUEST} per request",
        )
    for message in messages:
        check_size(message.content, max_chars=settings.MEMORY_MAX_EPISODE_CHARS)
        if message.source not in Episode.Source.values:
            raise GateRefused("invalid", f"unknown source {message.source!r}; use one of {Episode.Source.values}")
    if user.memory_paused:
        return IngestResult(episodes=[], paused=True)

    session, session_kinds = redact_secrets(session)
    cleaned = [_message_redacted(message, session_kinds) for message in messages]
    vectors = embeddings.encode([content for content, _, _ in cleaned])
    now = timezone.now()
    episodes = []
    for message, (content, metadata, _), vector in zip(messages, cleaned, vectors, strict=True):
        source = Episode.Source(message.source)
        episodes.append(
            Episode(
                organization=organization,
                user=user,
                project=project,
                session=session,
                agent=agent,
                source=source,
                trust=Episode.Trust.UNTRUSTED if source in Episode.UNTRUSTED_SOURCES else Episode.Trust.TRUSTED,
                content=content,
                metadata=metadata,
                occurred_at=message.occurred_at or now,
                received_at=now,
                embedding=vector,
                request_key=request_key,
            )
        )
    redactions = 0
    with transaction.atomic(), writes_batched():
        # Under the user's lock a concurrent deletion waits for these episodes (or they for it), and a
        # retry with the same key waits for the first request to commit, then finds its episodes.
        user_lock(user_id=user.id)
        if request_key:
            stored = _stored_under(request_key, organization=organization, user=user, messages=episodes)
            if stored is not None:
                return IngestResult(episodes=stored, replayed=True)
        Episode.objects.bulk_create(episodes)
        for episode, (_, _, kinds) in zip(episodes, cleaned, strict=True):
            if kinds:
                redactions += len(kinds)
                event_record(
                    organization_id=organization.id,
                    op=MemoryEvent.Op.REDACT,
                    actor=actor,
                    episode_id=episode.id,
                    user_id=user.id,
                    reason=f"secrets redacted before storage: {', '.join(sorted(set(kinds)))}",
                    data={"kinds": kinds},
                )
    return IngestResult(episodes=episodes, redactions=redactions)


def _stored_under(key: str, *, organization: Organization, user: User, messages: list[Episode]) -> list[Episode] | None:
    """The episodes a request with this key stored, in the order of `messages` (the retry's unsaved
    episodes); None when there are none."""
    stored = list(Episode.objects.filter(organization=organization, user=user, request_key=key)
                  .order_by("occurred_at", "received_at", "id"))
    if not stored:
        return None
    conflict = IdempotencyConflict(f"the Idempotency-Key {key!r} was used for a request with other messages")
    if len(stored) != len(messages):
        raise conflict
    matched = []
    for message in messages:
        same = next((e for e in stored if (e.source, e.content, e.session, e.project_id)
                     == (message.source, message.content, message.session, message.project_id)), None)
        if same is None:
            raise conflict
        stored.remove(same)
        matched.append(same)
    return matched


def extraction_job_for(episodes: list[Episode]) -> Job | None:
    """The extraction job queued with these episodes (when a request is replayed)."""
    if not episodes:
        return None
    return (Job.objects.filter(organization_id=episodes[0].organization_id, kind=Job.Kind.EXTRACTION,
                               params__episode_ids__contains=[str(episodes[0].id)])
            .order_by("created_at").first())


def episodes_embed(episodes: list[Episode]) -> None:
    """Embed and save, in one batch, the episodes that have no vector (stored before ingest embedded)."""
    missing = [e for e in episodes if e.embedding is None]
    if missing:
        for episode, vector in zip(missing, embeddings.encode([e.content for e in missing]), strict=True):
            episode.embedding = vector
        Episode.objects.bulk_update(missing, ["embedding"])
