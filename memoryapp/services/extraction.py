"""Extraction: new episodes become candidates, each judged and applied. One transaction per run of
a conversation's episodes marks them done with their operations and events, so a re-run after a
crash changes nothing."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import replace
from itertools import groupby
from uuid import UUID

from django.db import transaction

from memoryapp import embeddings
from memoryapp.actors import ActorRef
from memoryapp.models import Episode, Memory, User
from memoryapp.selectors.names import user_display_name, users_display_names
from memoryapp.services.apply import MemoryDraft, Operation, candidate_apply, draft_from_candidate, writes_batched
from memoryapp.services.extract import get_extractor
from memoryapp.services.extract.base import Candidate, EpisodeInput, Extractor
from memoryapp.services.gate import looks_like_instruction
from memoryapp.services.ingest import episodes_embed
from memoryapp.services.locks import user_lock

SESSION_CONTEXT_EPISODES = 20
UNTRUSTED_CONFIDENCE = 0.5
# Episodes per transaction: one commit (a WAL flush) per message cost more than its extraction;
# a bounded run keeps slot locks short for concurrent writers of the same user.
EPISODES_PER_TRANSACTION = 50


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
    conversations = [list(group) for _, group in groupby(pending, key=lambda e: (e.user_id, e.session))]
    # One look-up for all users; a name said in one conversation names them in the next.
    names = users_display_names({e.user_id: e.user for e in pending}.values())
    found = []
    for conversation in conversations:
        user = conversation[0].user
        found.append(_candidates(conversation, extractor, name=names[user.pk]))
        names[user.pk] = _name_given(found[-1], user, conversation) or names[user.pk]
    episodes_embed(pending)  # ingest embeds them: only episodes stored before it did lack a vector
    # One batch for all conversations' candidates (per-conversation batches ran at two thirds of the rate).
    # Their search vectors are computed for the memories written only (writes_batched).
    vectors = iter(embeddings.encode([c.text for candidates in found for c in candidates]))
    operations: list[Operation] = []
    done = 0
    for conversation, candidates in zip(conversations, found, strict=True):
        by_episode: dict[int, list[tuple[Candidate, object]]] = {}
        for candidate in candidates:
            by_episode.setdefault(candidate.episode_index, []).append((candidate, next(vectors)))
        for start in range(0, len(conversation), EPISODES_PER_TRANSACTION):
            run = conversation[start : start + EPISODES_PER_TRANSACTION]
            found_in_run = [by_episode.get(start + i, []) for i in range(len(run))]
            operations += _apply_episodes(run, found_in_run, actor=actor)
        done += len(conversation)
        if on_progress:
            on_progress(done, len(pending))
    return operations


def episode_candidates(episode: Episode, *, excluded: Collection[UUID] = ()) -> list[Candidate]:
    """What one stored episode alone yields, read with its session's earlier turns except `excluded`
    (episodes being deleted): services.govern rebuilds a memory from the sources that remain."""
    context = [e for e in _session_context(episode) if e.pk not in excluded]
    inputs = [EpisodeInput(e.content, e.occurred_at, e.source, e.session) for e in [*context, episode]]
    name = user_display_name(episode.user)
    return [
        replace(candidate, episode_index=0)
        for candidate in get_extractor().extract(inputs, subject=episode.user.external_id, name=name)
        if candidate.episode_index == len(context)
    ]


def _name_given(candidates: list[Candidate], user: User, conversation: list[Episode]) -> str:
    """The name the user gave themselves in this conversation's own turns, if any."""
    for candidate in reversed(candidates):
        own_turn = conversation[candidate.episode_index].source == "user"
        if (candidate.attribute, candidate.subject.lower()) == ("name", user.external_id.lower()) and own_turn \
                and candidate.relation in ("state", "change", "correct"):
            return candidate.value
    return ""


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


def _candidates(episodes: list[Episode], extractor: Extractor, *, name: str) -> list[Candidate]:
    """One conversation's candidates, `episode_index` counted within `episodes`."""
    context = _session_context(episodes[0])
    inputs = [EpisodeInput(e.content, e.occurred_at, e.source, e.session, e.embedding) for e in [*context, *episodes]]
    return [
        replace(candidate, episode_index=candidate.episode_index - len(context))
        for candidate in extractor.extract(inputs, subject=episodes[0].user.external_id, name=name)
        if candidate.episode_index >= len(context)
    ]


@transaction.atomic
@writes_batched()
def _apply_episodes(episodes: list[Episode], candidates: list[list], *, actor: ActorRef) -> list[Operation]:
    """`candidates[i]` are episode i's (candidate, vector) pairs. Episodes already done are skipped."""
    user_lock(user_id=episodes[0].user_id)  # before the episode rows: services.locks' order
    # The row locks make a concurrent run for the same episodes wait, then see them done.
    pending = set(
        Episode.objects.select_for_update()
        .filter(pk__in=[e.pk for e in episodes], extraction=Episode.Extraction.PENDING)
        .values_list("pk", flat=True)
    )
    operations: list[Operation] = []
    if episodes[0].user.memory_paused:
        outcome = Episode.Extraction.SKIPPED
    else:
        outcome = Episode.Extraction.DONE
        for episode, found in zip(episodes, candidates, strict=True):
            if episode.pk in pending:
                operations += _apply_episode(episode, found, actor=actor)
    Episode.objects.filter(pk__in=pending).update(extraction=outcome)
    return operations


def _apply_episode(episode: Episode, candidates, *, actor: ActorRef) -> list[Operation]:
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
