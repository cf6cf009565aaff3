"""What an agent or a person tells the store about a user. A conversation (POST /api/v1/episodes, the
MCP `remember` tool with messages) is stored as episodes and extracted, now or by a job; one statement
(POST /api/v1/memories, `remember` with a statement) is stored as one memory. REST and MCP both come here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.db import transaction

from memoryapp.actors import Principal
from memoryapp.models import Episode, Job, Memory, User
from memoryapp.services import govern
from memoryapp.services.apply import Operation, candidate_apply, draft_from_candidate
from memoryapp.services.extract.base import Candidate
from memoryapp.services.extraction import episodes_extract
from memoryapp.services.ingest import MessageIn, episodes_ingest, extraction_job_for
from memoryapp.services.jobs import job_create, job_enqueue, task_named
from memoryapp.services.tenancy import project_for_write, scope_for_write, user_for_write


@dataclass
class StatementResult:
    user: User
    operations: list[Operation] = field(default_factory=list)
    memory: Memory | None = None
    paused: bool = False  # memory writing is paused for the user: nothing was stored


def statement_remember(
    principal: Principal,
    *,
    user: str,
    text: str,
    scope: str = Memory.Scope.USER,
    session: str = "",
    project: str = "",
    kind: str = Memory.Kind.SEMANTIC,
    importance: int = 5,
    valid_from: datetime | None = None,
    subject: str = "",
    attribute: str = "",
    value: str = "",
) -> StatementResult:
    """Store `text` as said by the principal (its episode, through the secret gate like any message)
    and apply it as one memory; the judge decides whether it adds, updates or supersedes."""
    with transaction.atomic():
        scope_for_write(principal, scope)
        target = user_for_write(principal, user)
        target_project = project_for_write(principal, project, user=target)
        result = episodes_ingest(
            organization=target.organization, user=target, session=session, project=target_project,
            agent=principal.agent, actor=principal.actor,
            messages=[MessageIn("assistant" if principal.agent else "user", text, valid_from,
                                {"via": govern.STATEMENT_VIA})],
        )
        if result.paused:
            return StatementResult(user=target, paused=True)
        episode = result.episodes[0]
        Episode.objects.filter(pk=episode.pk).update(extraction=Episode.Extraction.DONE)
        candidate = Candidate(
            text=episode.content, subject=(subject or target.external_id).lower(),
            attribute=attribute, value=value, valid_from=episode.occurred_at,
            importance=importance, confidence=0.9, kind=kind,
        )
        draft = replace(
            draft_from_candidate(
                candidate, embedding=episode.embedding, organization=target.organization, user=target,
                sources=[episode], session=session, agent_id=principal.agent.id if principal.agent else None,
                provenance=Memory.Provenance.AGENT_INFERRED if principal.agent else Memory.Provenance.USER_STATED,
            ),
            subject=candidate.subject if candidate.attribute else "", scope=scope,
            project_id=target_project.id if target_project else None,
        )
        operations = candidate_apply(candidate=candidate, draft=draft, actor=principal.actor)
    return StatementResult(user=target, operations=operations, memory=Memory.objects.get(pk=operations[-1].memory_id))


@dataclass
class ConversationResult:
    user: User
    episodes: list[Episode] = field(default_factory=list)
    operations: list[Operation] | None = None  # with `wait`: what extraction did
    job: Job | None = None  # without `wait`: the extraction job queued for the episodes
    paused: bool = False  # memory writing is paused for the user: nothing was stored
    replayed: bool = False  # a retry under the same Idempotency-Key: nothing stored again


def conversation_remember(
    principal: Principal,
    *,
    user: str,
    messages: Sequence[Mapping],
    session: str = "",
    project: str = "",
    wait: bool = False,
    request_key: str = "",
) -> ConversationResult:
    """Store the conversation for `user` as episodes and extract memories from them: now (`wait`), or
    by an extraction job queued once the episodes commit. All or nothing: the episodes commit with
    their extraction or their job, or not at all. `messages`: dicts of source, content and optional
    occurred_at and metadata (EpisodesIngestIn's). A retry with the same `request_key` stores nothing
    again and extracts only what the first request left pending (IdempotencyConflict for other messages)."""
    with transaction.atomic():
        target = user_for_write(principal, user)
        result = episodes_ingest(
            organization=target.organization, user=target, session=session,
            project=project_for_write(principal, project, user=target), agent=principal.agent,
            actor=principal.actor, request_key=request_key,
            messages=[MessageIn(m["source"], m["content"], m.get("occurred_at"), m.get("metadata") or {})
                      for m in messages],
        )
        if result.paused:
            return ConversationResult(user=target, paused=True)
        done = ConversationResult(user=target, episodes=result.episodes, replayed=result.replayed)
        ids = [str(e.id) for e in result.episodes]
        if wait:
            done.operations = episodes_extract(episode_ids=ids, actor=principal.actor)
        elif result.replayed:
            done.job = extraction_job_for(result.episodes)
        else:
            done.job = job_create(kind=Job.Kind.EXTRACTION, organization=target.organization, user=target,
                                  params={"episode_ids": ids})
            job_enqueue(done.job, task_named("memoryapp.tasks.extract_episodes"))
    return done
