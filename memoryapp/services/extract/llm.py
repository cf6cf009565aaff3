"""The LLM extraction backend: the same candidates as the rules backend, asked of an
OpenAI-compatible endpoint as JSON and checked item by item.

A model's output is untrusted input: every item is validated strictly (types, ranges, allowed
relations and kinds, an episode it can come from) and an invalid item is dropped with the reason
logged, never repaired by guessing.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import get_args

from memoryapp import llm

from .base import SINGLE_VALUED_ATTRIBUTES, Candidate, EpisodeInput, Relation
from .grammar import THE_USER, readable_name, sentence

logger = logging.getLogger(__name__)

RELATIONS = frozenset(get_args(Relation))
KINDS = frozenset({"semantic", "procedural"})
# Turns whose content says nothing about the user: the assistant's own words, system prompts.
SILENT_SOURCES = frozenset({"assistant", "system"})
MAX_TEXT_CHARS = 500
MAX_VALUE_CHARS = 200

SCHEMA = (
    '{"facts": [{"text": str, "subject": str, "attribute": str, "value": str, "valid_from": "ISO 8601 datetime", '
    '"importance": int 1-10, "confidence": float 0-1, "relation": "state"|"refine"|"change"|"negate"|"correct"|'
    '"retract", "kind": "semantic"|"procedural", "episode_index": int}]}'
)

SYSTEM_PROMPT = """You extract long-term memories about one user from a conversation.

The user is called "{subject}". Each episode has an index, a source and the time it happened
(occurred_at). Extract facts the user states about themselves or about people close to them:
identity and name, age, job, employer, city, diet, health and allergies, family, pets, likes and
dislikes, plans, and standing instructions for the assistant. Ignore small talk, questions and
one-off requests. Episodes from the assistant or the system never yield facts. Tool, web and
document content yields only explicit first-person statements and instructions.

For each fact give:
- text: one short self-contained sentence in the third person, e.g. "{display} is vegetarian."
- subject: "{subject}", or "{subject}'s <relative>" for facts about someone else
  ("my sister is vegan" -> subject "{subject}'s sister"; never "{subject}" for it).
- attribute: a short lowercase name such as name, age, job, employer, city, diet, allergy, health,
  family, pet, likes, dislikes, plan, instruction. Single-valued: {single_valued}.
- value: the normalized value: lowercase for diets and likes ("vegetarian", "eats fish"), Title
  Case for places and employers ("Lisbon", "Initech").
- valid_from: when it became true in the world, as an ISO 8601 datetime with offset. Resolve
  relative times ("two weeks ago", "since 2019", "next month") against the episode's occurred_at;
  use occurred_at itself when no time is mentioned.
- importance: 1-10 (identity, health, diet, family, instructions 7-9; plans 5-6; likes 4-5).
- confidence: 0-1.
- relation: state (plain assertion), refine (adds detail without replacing: "I still eat eggs"),
  change (the world changed: "I eat fish now", "I moved to Porto"), negate (stopped being true,
  no new value: "I'm not vegetarian anymore"; value = what ended), correct (an earlier statement
  was wrong: "actually, I live in Porto"), retract (the user takes back what they just said:
  "just kidding"; value "", attribute of the retracted fact).
- kind: "procedural" for standing instructions ("always answer in French"), else "semantic".
- episode_index: the index of the episode the fact comes from.

Answer with JSON only, exactly this shape: {schema}
Answer {{"facts": []}} when there is nothing to remember."""


class InvalidFact(ValueError):
    """Why one item of the model's answer cannot become a candidate."""


class LLMExtractor:
    def extract(self, episodes: list[EpisodeInput], *, subject: str, name: str = "") -> list[Candidate]:
        if not episodes:
            return []
        answer = llm.chat_json(_messages(episodes, subject, name), schema_hint=f"Schema: {SCHEMA}")
        candidates = []
        for position, item in enumerate(_facts_of(answer)):
            try:
                candidates.append(candidate_from_item(item, episodes, subject))
            except InvalidFact as reason:
                logger.warning("dropped extracted fact %d: %s: %.300s", position, reason, json.dumps(item, default=str))
        return sorted(candidates, key=lambda candidate: candidate.episode_index)


def _messages(episodes: list[EpisodeInput], subject: str, name: str = "") -> list[dict]:
    system = SYSTEM_PROMPT.format(
        subject=subject,
        display=sentence(name or readable_name(subject) or THE_USER),
        schema=SCHEMA,
        single_valued=", ".join(sorted(SINGLE_VALUED_ATTRIBUTES)),
    )
    conversation = [
        {
            "index": index,
            "source": episode.source,
            "occurred_at": episode.occurred_at.isoformat(),
            "session": episode.session,
            "content": episode.content,
        }
        for index, episode in enumerate(episodes)
    ]
    user = "Episodes, in the order they happened:\n" + json.dumps(conversation, ensure_ascii=False, indent=1)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _facts_of(answer: dict | list) -> list:
    facts = answer.get("facts") if isinstance(answer, dict) else answer
    if not isinstance(facts, list):
        raise llm.LLMError(f'expected {{"facts": [...]}} from the model, got {str(answer)[:200]}')
    return facts


def candidate_from_item(item: object, episodes: list[EpisodeInput], subject: str) -> Candidate:
    """One item of the model's answer as a Candidate, or InvalidFact saying what is wrong with it."""
    if not isinstance(item, dict):
        raise InvalidFact("not an object")
    index = _integer(item, "episode_index")
    if not 0 <= index < len(episodes):
        raise InvalidFact(f"episode_index {index} is not one of the {len(episodes)} episodes")
    episode = episodes[index]
    if episode.source in SILENT_SOURCES:
        raise InvalidFact(f"episode {index} is a {episode.source} turn, which says nothing about the user")
    relation = _choice(item, "relation", RELATIONS)
    kind = _choice(item, "kind", KINDS)
    attribute = _text(item, "attribute", max_chars=64, allow_empty=relation == "retract").lower()
    value = _text(item, "value", max_chars=MAX_VALUE_CHARS, allow_empty=relation in {"retract", "negate"})
    importance = _integer(item, "importance")
    confidence = _number(item, "confidence")
    if not 1 <= importance <= 10:
        raise InvalidFact(f"importance {importance} is outside 1-10")
    if not 0 <= confidence <= 1:
        raise InvalidFact(f"confidence {confidence} is outside 0-1")
    return Candidate(
        text=_text(item, "text", max_chars=MAX_TEXT_CHARS),
        subject=_subject(item, subject),
        attribute=attribute,
        value=value,
        valid_from=_valid_from(item, episode),
        importance=importance,
        confidence=float(confidence),
        relation=relation,
        kind=kind,
        episode_index=index,
    )


def _text(item: dict, key: str, *, max_chars: int, allow_empty: bool = False) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise InvalidFact(f"{key} is not a string")
    value = value.strip()
    if not value and not allow_empty:
        raise InvalidFact(f"{key} is empty")
    if len(value) > max_chars:
        raise InvalidFact(f"{key} is longer than {max_chars} characters")
    return value


def _integer(item: dict, key: str) -> int:
    value = item.get(key)
    # bool is an int in Python, and 7.0 is what some models write for 7
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, float) and value.is_integer())):
        raise InvalidFact(f"{key} is not an integer: {value!r}")
    return int(value)


def _number(item: dict, key: str) -> float:
    value = item.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidFact(f"{key} is not a number: {value!r}")
    return float(value)


def _choice(item: dict, key: str, allowed: frozenset[str]) -> str:
    value = item.get(key)
    if value not in allowed:
        raise InvalidFact(f"{key} {value!r} is not one of {sorted(allowed)}")
    return value


def _subject(item: dict, user: str) -> str:
    """The user, or someone of theirs ("sam's sister"): memory is about the user's world only."""
    subject = _text(item, "subject", max_chars=100)
    if subject.lower() == user.lower():
        return user
    if subject.lower().startswith(f"{user.lower()}'s "):
        return f"{user}{subject[len(user) :].lower()}"  # the same spelling as the rules backend
    raise InvalidFact(f"subject {subject!r} is neither {user!r} nor someone of theirs like '{user}'s sister'")


def _valid_from(item: dict, episode: EpisodeInput) -> datetime:
    value = item.get("valid_from")
    if value is None:
        return episode.occurred_at  # nothing said about time: true from when it was said
    if not isinstance(value, str):
        raise InvalidFact(f"valid_from is not an ISO 8601 string: {value!r}")
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError as error:
        raise InvalidFact(f"valid_from {value!r} is not ISO 8601") from error
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=episode.occurred_at.tzinfo)  # the time zone the user spoke in
    return moment
