"""Ingest: episodes pass the gate (size, secrets) and are stored with their vectors; extraction
follows after commit."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memoryapp import embeddings
from memoryapp.models import Agent, Episode, MemoryEvent, Organization, Project, User
from memoryapp.services.actors import ActorRef
from memoryapp.services.apply import event_record, events_batched
from memoryapp.services.gate import GateRefused, check_size, redact_secrets


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


def _redact_json(value):
    """Secrets hide in metadata too: redact every string inside it."""
    if isinstance(value, str):
        return redact_secrets(value)[0]
    if isinstance(value, list):
        return [_redact_json(item) for item in value]
    if isinstance(value, dict):
        return {key: _redact_json(item) for key, item in value.items()}
    return value


def episodes_ingest(
    *,
    organization: Organization,
    user: User,
    messages: list[MessageIn],
    actor: ActorRef,
    session: str = "",
    project: Project | None = None,
    agent: Agent | None = None,
) -> IngestResult:
    """Store the messages as episodes, all or nothing. Refuses (GateRefused) before storing anything.

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

    cleaned = [redact_secrets(message.content) for message in messages]
    vectors = embeddings.encode([content for content, _ in cleaned])
    now = timezone.now()
    episodes = []
    for message, (content, _), vector in zip(messages, cleaned, vectors, strict=True):
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
                metadata=_redact_json(message.metadata or {}),
                occurred_at=message.occurred_at or now,
                received_at=now,
                embedding=vector,
            )
        )
    redactions = 0
    with transaction.atomic(), events_batched():
        Episode.objects.bulk_create(episodes)
        for episode, (_, kinds) in zip(episodes, cleaned, strict=True):
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


def episodes_embed(episodes: list[Episode]) -> None:
    """Embed and save, in one batch, the episodes that have no vector (stored before ingest embedded)."""
    missing = [e for e in episodes if e.embedding is None]
    if missing:
        for episode, vector in zip(missing, embeddings.encode([e.content for e in missing]), strict=True):
            episode.embedding = vector
        Episode.objects.bulk_update(missing, ["embedding"])
