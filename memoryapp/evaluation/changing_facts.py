"""The built-in changing-facts benchmark: is the current version of a fact what reaches the agent?

Each generated conversation has 50 user turns, one a day: 8 facts about the user among small
talk, 3 of them changed later ("I moved to Lisbon"), and one question per fact at the end. Read
policies pick k items for each question; a question's context then holds the current value
only, both values, the outdated value only, or neither. The first five policies read the raw
turns (as a memory stream); the full system reads what the write path made of them:
supersession at write time plus the validity filter at read time.
"""

from __future__ import annotations

import functools
import random
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

from memoryapp import embeddings
from memoryapp.selectors.ranking import Scored, Weights, recency, score

TURNS = 50
FACTS_PER_CONVERSATION = 8
CHANGED_PER_CONVERSATION = 3
DECAY_PER_HOUR = 0.995
OUTCOMES = ("current_only", "both", "outdated_only", "neither")


@dataclass(frozen=True)
class Slot:
    """A fact family: how it is first said, how a change is said, and the question about it."""

    name: str
    question: str
    first: str
    change: str | None
    values: tuple[str, ...]
    # What shows a value in a context: for diet the change says "fish" whatever was before.
    mark: Callable[[str], str] = lambda value: value


SLOTS = (
    Slot("city", "Where does the user live?", "I live in {}.", "I moved to {}.",
         ("Porto", "Lisbon", "Oslo", "Lima", "Osaka", "Berlin", "Denver", "Nairobi")),
    Slot("employer", "Where does the user work?", "I work at {}.", "I now work at {}.",
         ("Initech", "Globex", "Umbrella", "Hooli", "Vandelay", "Wonka")),
    Slot("job", "What is the user's job?", "I am a {}.", "I work as a {} now.",
         ("nurse", "teacher", "plumber", "designer", "pilot", "chemist")),
    Slot("diet", "What does the user eat?", "I am {}.", "I eat {} now.", ("vegetarian", "vegan", "fish"),
         mark=lambda value: value),
    Slot("relationship", "Is the user married or single?", "I am {}.", "I am {} now.", ("single", "married")),
    Slot("pet", "What is the name of the user's dog?", "I have a dog named {}.", None,
         ("Rex", "Luna", "Milo", "Bruno", "Nala")),
    Slot("allergy", "What is the user allergic to?", "I am allergic to {}.", None,
         ("peanuts", "shellfish", "pollen", "penicillin")),
    Slot("age", "How old is the user?", "I am {} years old.", None, ("29", "34", "41", "52")),
    Slot("sport", "Which sport does the user like?", "My favourite sport is {}.", None,
         ("tennis", "rowing", "climbing", "fencing")),
)
CHANGEABLE = [slot for slot in SLOTS if slot.change]
SMALL_TALK = (
    "haha ok", "thanks!", "how are you today?", "that sounds great", "nice weather today", "what do you think?",
    "sure, go ahead", "good morning", "I see", "let me check my calendar", "can you summarize that?", "lol",
    "that was a long meeting", "any good podcast recommendations?", "the train was late again",
    "I watched a documentary about whales", "what's a good name for a plant?", "tell me a joke",
    "ok, next question", "it's raining here", "I need more coffee", "interesting", "hmm, not sure",
)


@dataclass
class Fact:
    slot: Slot
    first: str
    current: str
    turn_first: int
    turn_change: int | None = None

    @property
    def changed(self) -> bool:
        return self.turn_change is not None


@dataclass
class Conversation:
    seed: int
    turns: list[str]
    times: list[datetime]
    facts: list[Fact] = field(default_factory=list)
    asked_at: datetime = datetime(2025, 1, 1, tzinfo=UTC)


def _diet_values(rng: random.Random) -> tuple[str, str]:
    return rng.choice(["vegetarian", "vegan"]), "fish"


def generate(seed: int) -> Conversation:
    """One conversation: 50 turns (8 facts, 3 of them changed later, the rest small talk)."""
    rng = random.Random(seed)
    changing = rng.sample(CHANGEABLE, CHANGED_PER_CONVERSATION)
    steady = rng.sample([s for s in SLOTS if s not in changing], FACTS_PER_CONVERSATION - CHANGED_PER_CONVERSATION)
    fact_turns = sorted(rng.sample(range(TURNS - 12), FACTS_PER_CONVERSATION))
    change_turns = iter(sorted(rng.sample(range(TURNS - 10, TURNS), CHANGED_PER_CONVERSATION)))
    turns = [rng.choice(SMALL_TALK) for _ in range(TURNS)]
    facts = []
    slots = rng.sample(changing + steady, FACTS_PER_CONVERSATION)
    for slot, turn in zip(slots, fact_turns, strict=True):
        if slot.name == "diet":
            first, later = _diet_values(rng)
        else:
            first, later = rng.sample(slot.values, 2)
        turns[turn] = slot.first.format(first)
        fact = Fact(slot=slot, first=first, current=first, turn_first=turn)
        if slot in changing:
            fact.turn_change = next(change_turns)
            fact.current = later
            turns[fact.turn_change] = slot.change.format(later)
        facts.append(fact)
    start = datetime(2025, 1, 1, 9, tzinfo=UTC)
    times = [start + timedelta(days=i) for i in range(TURNS)]
    return Conversation(seed=seed, turns=turns, times=times, facts=facts, asked_at=times[-1] + timedelta(days=1))


def outcome(context: str, fact: Fact) -> str:
    text = context.lower()
    current = fact.slot.mark(fact.current).lower() in text
    outdated = fact.changed and fact.slot.mark(fact.first).lower() in text
    if current and outdated:
        return "both"
    if current:
        return "current_only"
    if outdated:
        return "outdated_only"
    return "neither"


# --- read policies over the raw turns -----------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def turn_importance(text: str) -> int:
    """What an importance rater gives a turn: the extractor's importance for a fact, 2 for small talk."""
    from memoryapp.services.extract.base import EpisodeInput
    from memoryapp.services.extract.rules import RulesExtractor

    candidates = RulesExtractor().extract([EpisodeInput(text, datetime(2025, 1, 1, tzinfo=UTC))], subject="user")
    return max((c.importance for c in candidates), default=2)


def _scored_turns(conversation: Conversation, question_vector: np.ndarray, turn_vectors: np.ndarray,
                  importances: list[int], weights: Weights) -> list[int]:
    candidates = [
        Scored(key=i, relevance=float(turn_vectors[i] @ question_vector),
               recency=recency((conversation.asked_at - conversation.times[i]).total_seconds() / 3600, DECAY_PER_HOUR),
               importance=importances[i])
        for i in range(len(conversation.turns))
    ]
    return [c.key for c in score(candidates, weights)]


TURN_POLICIES = {
    "last k turns": None,
    "most relevant k": Weights(1, 0, 0),
    "recency + importance + relevance": Weights(1, 1, 1),
    "recency + relevance": Weights(1, 1, 0),
    "importance + relevance": Weights(1, 0, 1),
}
FULL_SYSTEM = "full system (supersession + validity)"
POLICIES = (*TURN_POLICIES, FULL_SYSTEM)


def turn_contexts(conversation: Conversation, ks: tuple[int, ...]) -> dict[tuple[str, int], list[str]]:
    """Context per (policy, k) for each question of the conversation, from the raw turns."""
    turn_vectors = embeddings.encode(conversation.turns)
    question_vectors = embeddings.encode([f.slot.question for f in conversation.facts])
    importances = [turn_importance(t) for t in conversation.turns]
    contexts: dict[tuple[str, int], list[str]] = {}
    for policy, weights in TURN_POLICIES.items():
        for k in ks:
            contexts[(policy, k)] = []
            for vector in question_vectors:
                if weights is None:
                    chosen = list(range(len(conversation.turns)))[-k:]
                else:
                    chosen = _scored_turns(conversation, vector, turn_vectors, importances, weights)[:k]
                contexts[(policy, k)].append("\n".join(conversation.turns[i] for i in chosen))
    return contexts


def full_system_contexts(conversation: Conversation, ks: tuple[int, ...]) -> dict[tuple[str, int], list[str]]:
    """Context per k for each question, from the real write and read paths, in a throwaway organization."""
    from memoryapp.models import Organization
    from memoryapp.selectors.scoping import Principal
    from memoryapp.selectors.search import SearchParams, search_memories
    from memoryapp.services.actors import ActorRef
    from memoryapp.services.extraction import episodes_extract
    from memoryapp.services.ingest import MessageIn, episodes_ingest
    from memoryapp.services.tenancy import user_create

    organization = Organization.objects.create(name=f"eval-changing-facts-{uuid.uuid4().hex[:12]}")
    try:
        user = user_create(organization=organization, external_id="user")
        actor = ActorRef.for_job("evaluation")
        result = episodes_ingest(organization=organization, user=user, actor=actor, session="conversation",
                                 messages=[MessageIn("user", t, at) for t, at in zip(conversation.turns,
                                                                                    conversation.times, strict=True)])
        episodes_extract(episode_ids=[e.id for e in result.episodes], actor=actor)
        principal = Principal.for_user(user)
        contexts: dict[tuple[str, int], list[str]] = {}
        for k in ks:
            contexts[(FULL_SYSTEM, k)] = []
            for fact in conversation.facts:
                hits = search_memories(principal, user=user, params=SearchParams(query=fact.slot.question, k=k)).hits
                contexts[(FULL_SYSTEM, k)].append("\n".join(h.item.text for h in hits))
        return contexts
    finally:
        organization.delete()


def run(*, seeds: int = 5, ks: tuple[int, ...] = (1, 3, 5), progress=None) -> dict:
    """Shares of questions per outcome, for every policy and k, over `seeds` conversations."""
    counts: dict[str, Counter] = {}
    changed_counts: dict[str, Counter] = {}
    for done, seed in enumerate(range(seeds), start=1):
        conversation = generate(seed)
        contexts = {**turn_contexts(conversation, ks), **full_system_contexts(conversation, ks)}
        for (policy, k), per_question in contexts.items():
            key = f"{policy} @ k={k}"
            for fact, context in zip(conversation.facts, per_question, strict=True):
                counts.setdefault(key, Counter())[outcome(context, fact)] += 1
                if fact.changed:
                    changed_counts.setdefault(key, Counter())[outcome(context, fact)] += 1
        if progress:
            progress(done, seeds)
    return {
        "seeds": seeds, "ks": list(ks), "questions_per_seed": FACTS_PER_CONVERSATION,
        "rows": [_row(policy, k, counts[f"{policy} @ k={k}"], changed_counts[f"{policy} @ k={k}"])
                 for policy in POLICIES for k in ks],
    }


def _row(policy: str, k: int, all_questions: Counter, changed: Counter) -> dict:
    def shares(counter: Counter) -> dict:
        total = sum(counter.values()) or 1
        return {name: round(counter[name] / total, 4) for name in OUTCOMES}

    return {"policy": policy, "k": k, **shares(all_questions), "changed_facts": shares(changed)}


def table(result: dict) -> str:
    lines = [f"changing facts: {result['seeds']} conversations x {result['questions_per_seed']} questions "
             f"(3 facts changed in each)", f"{'policy':40} {'k':>2}  {'current':>8} {'both':>6} {'outdated':>9} "
             f"{'neither':>8}   changed facts: current / outdated"]
    for row in result["rows"]:
        changed = row["changed_facts"]
        lines.append(f"{row['policy']:40} {row['k']:>2}  {row['current_only']:8.0%} {row['both']:6.0%} "
                     f"{row['outdated_only']:9.0%} {row['neither']:8.0%}   {changed['current_only']:6.0%} / "
                     f"{changed['outdated_only']:.0%}")
    full = next(r for r in result["rows"] if r["policy"] == FULL_SYSTEM and r["k"] == min(result["ks"]))
    lines.append(f"full_system_current_only@k={full['k']}={full['current_only']:.2f}")
    return "\n".join(lines)
