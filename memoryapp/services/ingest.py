"""Ingest: episodes pass the gate (size, secrets) and are stored; extraction follows after commit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memoryapp import embeddings
from memoryapp.models import Agent, Episode, MemoryEvent, Organization, Project, User
from memoryapp.services.actors import ActorRef
from memoryapp.services.apply import event_record
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

    Episodes are embedded by extraction (episodes_embed), in the worker's batches, so that the
    request itself only checks and stores."""
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
    now = timezone.now()
    redactions = 0
    with transaction.atomic():
        episodes = []
        for message, (content, kinds) in zip(messages, cleaned, strict=True):
            source = Episode.Source(message.source)
            episode = Episode.objects.create(
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
            )
            episodes.append(episode)
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


def episodes_vectorize(episodes: list[Episode], *, also: Sequence[str] = ()) -> tuple[list[Episode], np.ndarray]:
    """Give the episodes that have no vector yet one, unsaved, in one batch with the texts `also`;
    returns the episodes given a vector and the vectors of `also`."""
    missing = [e for e in episodes if e.embedding is None]
    vectors = embeddings.encode([e.content for e in missing] + list(also))
    for episode, vector in zip(missing, vectors, strict=False):
        episode.embedding = vector
    return missing, vectors[len(missing) :]


def episodes_embed(episodes: list[Episode]) -> None:
    """Embed and save the episodes that have no vector yet, in one batch."""
    missing, _ = episodes_vectorize(episodes)
    if missing:
        Episode.objects.bulk_update(missing, ["embedding"])
