"""One statement an agent or a person makes about a user, stored as a memory: POST /api/v1/memories
and the MCP `remember` tool with a statement both come here."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction

from memoryapp.models import Episode, Memory, User
from memoryapp.selectors.scoping import Principal
from memoryapp.services import govern
from memoryapp.services.apply import MemoryDraft, Operation, candidate_apply
from memoryapp.services.extract.base import Candidate
from memoryapp.services.ingest import MessageIn, episodes_ingest
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
        draft = MemoryDraft(
            organization=target.organization, user=target, text=episode.content, embedding=episode.embedding,
            subject=candidate.subject if candidate.attribute else "", attribute=candidate.attribute,
            value=candidate.value, cardinality=candidate.cardinality, kind=candidate.kind, scope=scope,
            project_id=target_project.id if target_project else None, session=session,
            importance=candidate.importance, confidence=candidate.confidence, valid_from=episode.occurred_at,
            sources=[episode],
            provenance=Memory.Provenance.AGENT_INFERRED if principal.agent else Memory.Provenance.USER_STATED,
            agent_id=principal.agent.id if principal.agent else None,
        )
        operations = candidate_apply(candidate=candidate, draft=draft, actor=principal.actor)
    return StatementResult(user=target, operations=operations, memory=Memory.objects.get(pk=operations[-1].memory_id))
