"""The built-in changing-facts benchmark: is the current version of a fact what reaches the agent?

Each conversation has 50 user turns, one a day: 8 facts about the user among small talk, 3 of
them changed later, and one question per fact at the end. Read policies pick k items for each
question; a question's context then holds the current value only, both values, the outdated
value only, or neither. The first five policies read the raw turns (as a memory stream); the
full system reads what the write path made of them: supersession at write time plus the
validity filter at read time.

The sentences are not the benchmark's own: they come from the hand-written corpus' change pairs
(memoryapp/evaluation/corpus, one split at a time), which the extractor was not written from.
A pair gives a fact's first statement (`before`), its change (`after`), the question, and the
must-words that show each value in a context (write_corpus.mentions); a steady fact is a pair
whose change is never said. Small talk is the same split's messages that must yield nothing.
The 8 pairs of a conversation are of 8 different families and share no must-word, so that one
fact's answer is never another's.
"""

from __future__ import annotations

import functools
import random
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memoryapp import embeddings
from memoryapp.evaluation import write_corpus
from memoryapp.evaluation.write_accuracy import holds_old_value
from memoryapp.evaluation.write_corpus import ChangePair
from memoryapp.selectors.ranking import Scored, Weights, recency, score

TURNS = 50
FACTS_PER_CONVERSATION = 8
CHANGED_PER_CONVERSATION = 3
DECAY_PER_HOUR = 0.995
OUTCOMES = ("current_only", "both", "outdated_only", "neither")


@dataclass
class Fact:
    pair: ChangePair
    turn_first: int
    turn_change: int | None = None

    @property
    def changed(self) -> bool:
        return self.turn_change is not None

    @property
    def question(self) -> str:
        return self.pair.question

    @property
    def first(self) -> tuple[str, ...]:
        """The must-words of the value first stated."""
        return self.pair.before_must

    @property
    def current(self) -> tuple[str, ...]:
        """The must-words of the value current at the end."""
        return self.pair.after_must if self.changed else self.pair.before_must


@dataclass
class Conversation:
    seed: int
    turns: list[str]
    times: list[datetime]
    facts: list[Fact] = field(default_factory=list)
    asked_at: datetime = datetime(2025, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Source:
    """What conversations are made of: one split's change pairs and small talk."""

    split: str
    pairs: tuple[ChangePair, ...]
    small_talk: tuple[str, ...]


def source(split: str = "test", corpus_dir: Path | None = None) -> Source:
    pairs = tuple(write_corpus.changes(split, corpus_dir))
    small_talk = tuple(m.text for m in write_corpus.messages(split, corpus_dir) if m.family == "none")
    if len({p.family for p in pairs}) < FACTS_PER_CONVERSATION or not small_talk:
        raise ValueError(f"the corpus' {split} split needs change pairs of at least {FACTS_PER_CONVERSATION} "
                         "families and some messages of family none")
    return Source(split=split, pairs=pairs, small_talk=small_talk)


def _words(pair: ChangePair) -> set[str]:
    return {w.lower() for w in (*pair.before_must, *pair.after_must)}


def _pick_pairs(rng: random.Random, pairs: tuple[ChangePair, ...]) -> list[ChangePair]:
    """8 pairs of different families whose must-words do not overlap."""
    chosen: list[ChangePair] = []
    for pair in rng.sample(pairs, len(pairs)):
        if all(pair.family != c.family and not _words(pair) & _words(c) for c in chosen):
            chosen.append(pair)
            if len(chosen) == FACTS_PER_CONVERSATION:
                return chosen
    raise ValueError(f"cannot find {FACTS_PER_CONVERSATION} change pairs of different families with "
                     "distinct must-words")


def generate(seed: int, corpus: Source | None = None) -> Conversation:
    """One conversation: 50 turns (8 facts, 3 of them changed later, the rest small talk)."""
    corpus = corpus or source()
    rng = random.Random(seed)
    pairs = _pick_pairs(rng, corpus.pairs)
    fact_turns = sorted(rng.sample(range(TURNS - 12), FACTS_PER_CONVERSATION))
    change_turns = iter(sorted(rng.sample(range(TURNS - 10, TURNS), CHANGED_PER_CONVERSATION)))
    # Small talk that happens to name a value ("if I moved to Berlin...") would answer for it.
    small_talk = [text for text in corpus.small_talk
                  if not any(write_corpus.mentions(text, (word,)) for pair in pairs for word in _words(pair))]
    turns = [rng.choice(small_talk or corpus.small_talk) for _ in range(TURNS)]
    facts = []
    for position, (pair, turn) in enumerate(zip(pairs, fact_turns, strict=True)):
        turns[turn] = pair.before
        fact = Fact(pair=pair, turn_first=turn)
        if position < CHANGED_PER_CONVERSATION:  # the pairs come shuffled: the first three change
            fact.turn_change = next(change_turns)
            turns[fact.turn_change] = pair.after
        facts.append(fact)
    start = datetime(2025, 1, 1, 9, tzinfo=UTC)
    times = [start + timedelta(days=i) for i in range(TURNS)]
    return Conversation(seed=seed, turns=turns, times=times, facts=facts, asked_at=times[-1] + timedelta(days=1))


def outcome(context: str, fact: Fact) -> str:
    """What a context (one item a line) tells of the fact. A line that names the old value holds it only as
    write accuracy reads a memory (write_accuracy.holds_old_value): one that names the new value too tells
    the change ("The user switched to MTN, Vodacom was too dear."), and so does one saying the old value is
    over ("Kwame passed away two weeks ago." for "Is Kwame still alive?")."""
    lines = context.split("\n")
    current = any(write_corpus.mentions(line, fact.current) for line in lines)
    outdated = fact.changed and holds_old_value(lines, fact.pair)
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
    question_vectors = embeddings.encode([f.question for f in conversation.facts])
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
    from memoryapp.actors import ActorRef, Principal
    from memoryapp.models import Organization
    from memoryapp.selectors.search import SearchParams, search_memories
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
                # Asked when the conversation asks (as the turn policies are), not today: a plan said for
                # "next month" in 2025 has ended by now.
                params = SearchParams(query=fact.question, k=k, as_of=conversation.asked_at)
                hits = search_memories(principal, user=user, params=params).hits
                contexts[(FULL_SYSTEM, k)].append("\n".join(h.item.text for h in hits))
        return contexts
    finally:
        organization.delete()


def run(*, seeds: int = 5, ks: tuple[int, ...] = (1, 3, 5), split: str = "test", corpus_dir: str | Path | None = None,
        progress=None) -> dict:
    """Shares of questions per outcome, for every policy and k, over `seeds` conversations made
    from the corpus' `split`."""
    if split not in write_corpus.SPLITS:
        raise ValueError(f"unknown split {split!r}: choose one of {', '.join(write_corpus.SPLITS)}")
    corpus = source(split, Path(corpus_dir) if corpus_dir else None)
    counts: dict[str, Counter] = {}
    changed_counts: dict[str, Counter] = {}
    for done, seed in enumerate(range(seeds), start=1):
        conversation = generate(seed, corpus)
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
        "split": split, "pairs": len(corpus.pairs), "seeds": seeds, "ks": list(ks),
        "questions_per_seed": FACTS_PER_CONVERSATION,
        "rows": [_row(policy, k, counts[f"{policy} @ k={k}"], changed_counts[f"{policy} @ k={k}"])
                 for policy in POLICIES for k in ks],
    }


def _row(policy: str, k: int, all_questions: Counter, changed: Counter) -> dict:
    def shares(counter: Counter) -> dict:
        total = sum(counter.values()) or 1
        return {name: round(counter[name] / total, 4) for name in OUTCOMES}

    return {"policy": policy, "k": k, **shares(all_questions), "changed_facts": shares(changed)}


def table(result: dict) -> str:
    lines = [f"changing facts, {result.get('split', '?')} split: {result['seeds']} conversations x "
             f"{result['questions_per_seed']} questions (3 facts changed in each), sentences from "
             f"{result.get('pairs', '?')} corpus change pairs",
             f"{'policy':40} {'k':>2}  {'current':>8} {'both':>6} {'outdated':>9} "
             f"{'neither':>8}   changed facts: current / outdated"]
    for row in result["rows"]:
        changed = row["changed_facts"]
        lines.append(f"{row['policy']:40} {row['k']:>2}  {row['current_only']:8.0%} {row['both']:6.0%} "
                     f"{row['outdated_only']:9.0%} {row['neither']:8.0%}   {changed['current_only']:6.0%} / "
                     f"{changed['outdated_only']:.0%}")
    full = next(r for r in result["rows"] if r["policy"] == FULL_SYSTEM and r["k"] == min(result["ks"]))
    lines.append(f"full_system_current_only@k={full['k']}={full['current_only']:.2f} split={result.get('split', '?')}")
    return "\n".join(lines)
