"""LoCoMo-format conversations: parse them, and import their turns as episodes.

The format (Maharana et al., ACL 2024) is a list of samples. Each has `sample_id`, a
`conversation` with `speaker_a`, `speaker_b`, `session_<n>` (a list of turns
`{speaker, dia_id "D<session>:<turn>", text, [blip_caption]}`) and `session_<n>_date_time`
("1:56 pm on 8 May, 2023"), and `qa`: `{question, answer | adversarial_answer, category,
evidence: [dia_id]}`. Category 5 questions are adversarial: the conversation does not answer them.

Import stores and embeds turns only; it never runs extraction, so retrieval over the raw archive
can be measured on its own.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction

from memoryapp.actors import ActorRef, Principal
from memoryapp.evaluation.metrics import RECALL_CATEGORIES, Retrieval
from memoryapp.models import Episode, Organization, User
from memoryapp.selectors.search import SearchParams, search_episodes
from memoryapp.services.ingest import MessageIn, episodes_ingest
from memoryapp.services.tenancy import organization_get_or_create, user_get_or_create_for_agent

# Sessions carry a minute-resolution date only; spacing the turns keeps their order in occurred_at.
SECONDS_PER_TURN = 5
DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %B %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %d %b %Y")
DIA_ID = re.compile(r"D\d+:\d+")
SESSION_KEY = re.compile(r"session_(\d+)")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    occurred_at: datetime
    session: int
    caption: str = ""  # what an image shared in the turn shows (LoCoMo's blip_caption)


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]
    answer: str  # the adversarial answer for category 5


@dataclass
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


@dataclass
class ImportedConversation:
    conversation: Conversation
    user: User
    episode_ids: dict[str, uuid.UUID]  # dia_id -> episode id
    created: int  # episodes stored by this import (0 when everything was there already)


def parse_session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' as an aware UTC datetime."""
    cleaned = " ".join(text.split())
    for date_format in DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, date_format).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"unrecognized LoCoMo session date {text!r}; expected like '1:56 pm on 8 May, 2023'")


def parse_evidence(values: list[str] | str) -> tuple[str, ...]:
    """Turn ids in order, once each. Malformed entries ("D8:6; D9:17") are split on ';' and spaces."""
    if isinstance(values, str):
        values = [values]
    ids: list[str] = []
    for value in values:
        for part in re.split(r"[;,\s]+", str(value)):
            if DIA_ID.fullmatch(part) and part not in ids:
                ids.append(part)
    return tuple(ids)


def _parse_sample(sample: dict) -> Conversation:
    conv = sample["conversation"]
    conversation = Conversation(
        sample_id=str(sample["sample_id"]), speaker_a=conv["speaker_a"], speaker_b=conv["speaker_b"]
    )
    sessions = sorted(int(match[1]) for key in conv if (match := SESSION_KEY.fullmatch(key)))
    for number in sessions:
        turns = conv[f"session_{number}"] or []
        if not turns:
            continue
        started = parse_session_date(conv[f"session_{number}_date_time"])
        for index, turn in enumerate(turns):
            conversation.turns.append(
                Turn(
                    dia_id=turn["dia_id"],
                    speaker=turn["speaker"],
                    text=turn.get("text", ""),
                    occurred_at=started + timedelta(seconds=index * SECONDS_PER_TURN),
                    session=number,
                    caption=turn.get("blip_caption") or "",
                )
            )
    for item in sample.get("qa", []):
        answer = item.get("answer", item.get("adversarial_answer", ""))
        conversation.questions.append(
            Question(
                text=item["question"],
                category=int(item["category"]),
                evidence=parse_evidence(item.get("evidence", [])),
                answer=str(answer),
            )
        )
    return conversation


def _load(path_or_data: str | Path | list | dict) -> list[dict]:
    data = json.loads(Path(path_or_data).read_text()) if isinstance(path_or_data, str | Path) else path_or_data
    return [data] if isinstance(data, dict) else list(data)


def locomo_parse(path_or_data: str | Path | list | dict) -> list[Conversation]:
    """Conversations from a LoCoMo-format file, or from its already loaded JSON (a list of samples)."""
    return [_parse_sample(sample) for sample in _load(path_or_data)]


def turn_content(turn: Turn) -> str:
    """The episode text of a turn: who said it, what they said, and what a shared image showed."""
    content = f"{turn.speaker}: {turn.text}".strip()
    return f"{content} [{turn.caption}]" if turn.caption else content


def _batches(items: list, size: int):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _import_one(*, organization: Organization, conversation: Conversation, actor: ActorRef) -> ImportedConversation:
    user = user_get_or_create_for_agent(organization=organization, external_id=conversation.sample_id)
    # A re-import stores only the turns that are missing, so importing twice does not duplicate.
    stored = dict(Episode.objects.filter(user=user, metadata__has_key="dia_id").values_list("metadata__dia_id", "id"))
    missing = [turn for turn in conversation.turns if turn.dia_id not in stored]
    created = 0
    for number in sorted({turn.session for turn in missing}):
        session_turns = [turn for turn in missing if turn.session == number]
        for batch in _batches(session_turns, settings.MEMORY_MAX_MESSAGES_PER_REQUEST):
            result = episodes_ingest(
                organization=organization,
                user=user,
                session=f"session_{number}",
                actor=actor,
                messages=[
                    MessageIn(
                        source=Episode.Source.USER,  # both speakers are people talking to each other
                        content=turn_content(turn),
                        occurred_at=turn.occurred_at,
                        metadata={"dia_id": turn.dia_id, "speaker": turn.speaker},
                    )
                    for turn in batch
                ],
            )
            for turn, episode in zip(batch, result.episodes, strict=False):
                stored[turn.dia_id] = episode.id
                created += 1
    return ImportedConversation(conversation=conversation, user=user, episode_ids=stored, created=created)


def locomo_import(
    *, organization: Organization, path_or_data: str | Path | list | dict, actor: ActorRef
) -> list[ImportedConversation]:
    """Store every turn of every conversation as an embedded episode of a user named by the sample id.

    Each conversation is one transaction. Extraction is not run. A paused user gets no episodes
    (and so an incomplete mapping), as with any other ingest.
    """
    imported = []
    for conversation in locomo_parse(path_or_data):
        with transaction.atomic():
            imported.append(_import_one(organization=organization, conversation=conversation, actor=actor))
    return imported


def locomo_import_current(
    *, organization_name: str, path_or_data: str | Path | list | dict, actor: ActorRef
) -> tuple[list[ImportedConversation], bool]:
    """The conversations imported into the organization named `organization_name`, and whether the
    stored import was reused: it is when every turn is there, embedded, with the text the import makes
    now; otherwise the organization is deleted and everything imported afresh. For benchmarks, which
    import once and search many times."""
    conversations = locomo_parse(path_or_data)
    organization = Organization.objects.filter(name=organization_name).first()
    if organization is not None:
        stored = {
            (user, dia_id): content
            for user, dia_id, content in Episode.objects.filter(
                organization=organization, embedding__isnull=False
            ).values_list("user__external_id", "metadata__dia_id", "content")
        }
        wanted = {(c.sample_id, t.dia_id): turn_content(t) for c in conversations for t in c.turns}
        if stored == wanted:
            return locomo_import(organization=organization, path_or_data=path_or_data, actor=actor), True
        organization.delete()
    organization = organization_get_or_create(name=organization_name)
    return locomo_import(organization=organization, path_or_data=path_or_data, actor=actor), False


def episode_retrievals(
    principal: Principal, item: ImportedConversation, *, k: int, **search_options
) -> tuple[list[Retrieval], list[float]]:
    """What selectors.search.search_episodes retrieves (as turn ids, best first) for each question of the
    recall categories with evidence, within the question's own conversation, with every turn of any
    relevance (min_score 0); and each search's took_ms. `search_options`: search_episodes' tunables."""
    dia_id = {episode_id: dia for dia, episode_id in item.episode_ids.items()}
    retrievals, took = [], []
    for question in item.conversation.questions:
        if question.category not in RECALL_CATEGORIES or not question.evidence:
            continue
        params = SearchParams(query=question.text, k=k, min_score=0)
        result = search_episodes(principal, user=item.user, params=params, **search_options)
        took.append(result.took_ms)
        retrieved = tuple(dia_id[hit.item.id] for hit in result.hits)
        retrievals.append(Retrieval(question.category, retrieved, frozenset(question.evidence)))
    return retrievals, took
