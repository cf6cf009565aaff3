"""Extraction: new episodes become candidates, each judged and applied. One transaction per
episode marks it done with its operations, so a re-run after a crash changes nothing."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import groupby
from uuid import UUID

from django.db import transaction

from memoryapp import embeddings
from memoryapp.models import Episode, Memory
from memoryapp.services.actors import ActorRef
from memoryapp.services.apply import MemoryDraft, Operation, candidate_apply, draft_from_candidate
from memoryapp.services.extract import get_extractor
from memoryapp.services.extract.base import Candidate, EpisodeInput, Extractor
from memoryapp.services.gate import looks_like_instruction
from memoryapp.services.ingest import episodes_embed

SESSION_CONTEXT_EPISODES = 20
UNTRUSTED_CONFIDENCE = 0.5


def episodes_extract(
    *, episode_ids: Iterable[UUID], actor: ActorRef, extractor: Extractor | None = None, on_progress=None
) -> list[Operation]:
    """Extract memories from the given episodes that are still pending; returns the operations."""
    extractor = extractor or get_extractor()
    pending = list(
        Episode.objects.filter(id__in=list(episode_ids), extraction=Episode.Extraction.PENDING)
        .select_related("user", "organization")
        .order_by("user_id", "session", "occurred_at", "received_at")
    )
    episodes_embed(pending)
    operations: list[Operation] = []
    done = 0
    for _, group in groupby(pending, key=lambda e: (e.user_id, e.session)):
        group = list(group)
        operations += _extract_conversation(group, actor=actor, extractor=extractor)
        done += len(group)
        if on_progress:
            on_progress(done, len(pending))
    return operations


def _session_context(first: Episode) -> list[Episode]:
    """Earlier turns of the same session, so corrections and retractions can refer back."""
    if not first.session:
        return []
    earlier = Episode.objects.filter(
        organization_id=first.organization_id,
        user_id=first.user_id,
        session=first.session,
        occurred_at__lt=first.occurred_at,
    ).order_by("-occurred_at")[:SESSION_CONTEXT_EPISODES]
    return list(reversed(earlier))


def _extract_conversation(episodes: list[Episode], *, actor: ActorRef, extractor: Extractor) -> list[Operation]:
    user = episodes[0].user
    context = _session_context(episodes[0])
    inputs = [EpisodeInput(e.content, e.occurred_at, e.source, e.session) for e in [*context, *episodes]]
    candidates = [c for c in extractor.extract(inputs, subject=user.external_id) if c.episode_index >= len(context)]
    vectors = embeddings.encode([c.text for c in candidates])
    by_episode: dict[int, list[tuple[Candidate, object]]] = {}
    for candidate, vector in zip(candidates, vectors, strict=True):
        by_episode.setdefault(candidate.episode_index - len(context), []).append((candidate, vector))

    operations: list[Operation] = []
    for index, episode in enumerate(episodes):
        operations += _apply_episode(episode, by_episode.get(index, []), actor=actor)
    return operations


@transaction.atomic
def _apply_episode(episode: Episode, candidates, *, actor: ActorRef) -> list[Operation]:
    # The row lock makes concurrent runs for the same episode wait, then see it done.
    locked = Episode.objects.select_for_update().get(pk=episode.pk)
    if locked.extraction != Episode.Extraction.PENDING:
        return []
    if episode.user.memory_paused:
        locked.extraction = Episode.Extraction.SKIPPED
        locked.save(update_fields=["extraction"])
        return []
    untrusted = episode.trust == Episode.Trust.UNTRUSTED
    instructs = untrusted and looks_like_instruction(episode.content)
    operations: list[Operation] = []
    for candidate, vector in candidates:
        draft = draft_from_candidate(
            candidate,
            embedding=vector,
            organization=episode.organization,
            user=episode.user,
            sources=[episode],
            session=episode.session,
            agent_id=episode.agent_id,
            provenance=Memory.Provenance.UNTRUSTED_SOURCE if untrusted else Memory.Provenance.USER_STATED,
        )
        if untrusted:
            draft.confidence = min(draft.confidence, UNTRUSTED_CONFIDENCE)
        if instructs:
            _quarantine(draft, episode)
        operations += candidate_apply(candidate=candidate, draft=draft, actor=actor)
    if instructs and not candidates:
        # The instruction itself goes to the quarantine queue so an admin sees what was attempted.
        operations += candidate_apply(
            candidate=_instruction_candidate(episode), draft=_instruction_draft(episode), actor=actor
        )
    locked.extraction = Episode.Extraction.DONE
    locked.save(update_fields=["extraction"])
    return operations


def _quarantine(draft: MemoryDraft, episode: Episode) -> None:
    draft.status = Memory.Status.QUARANTINED
    draft.status_reason = f"untrusted {episode.source} content tries to instruct the agent"


def _instruction_candidate(episode: Episode) -> Candidate:
    return Candidate(
        text=_instruction_text(episode),
        subject="",
        attribute="",
        value="",
        valid_from=episode.occurred_at,
        importance=3,
        confidence=0.1,
        kind="procedural",
        relation="state",
    )


def _instruction_text(episode: Episode) -> str:
    excerpt = " ".join(episode.content.split())[:400]
    return f"Untrusted {episode.source} content asks: {excerpt}"


def _instruction_draft(episode: Episode) -> MemoryDraft:
    draft = MemoryDraft(
        organization=episode.organization,
        user=episode.user,
        text=_instruction_text(episode),
        embedding=embeddings.encode_one(_instruction_text(episode)),
        kind=Memory.Kind.PROCEDURAL,
        importance=3,
        confidence=0.1,
        provenance=Memory.Provenance.UNTRUSTED_SOURCE,
        valid_from=episode.occurred_at,
        sources=[episode],
        session=episode.session,
        agent_id=episode.agent_id,
    )
    _quarantine(draft, episode)
    return draft
