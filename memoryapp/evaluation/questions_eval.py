"""Answers to questions as agents ask them (issue 18): the hand-written question set
(memoryapp/evaluation/questions, loaded by evaluation.question_set) asked of users built from the
write-path corpus, through the real write and read paths.

Design:
- Users. The split's fact messages (family `none` left out) are dealt, in a seeded shuffle, to
  synthetic users of about USER_SIZE messages each. A user never gets two messages that could
  say conflicting single values: no two messages of one family, no two facts about the user with
  the same attribute ("home" from a `moves` message and from a `home` one), no two facts about the
  same other person ("sister", "Leo"). A message that fits no user starts a new one. Each user's
  external id reads as a name ("riley"), so the store has a name to call them by.
- Writing. Each user's messages go, one session each, through the real write path as
  POST /api/v1/episodes with "wait": true does (services.ingest.episodes_ingest, then
  services.extraction.episodes_extract with the chosen extractor), at successive dates (one day
  apart from FIRST_AT), in one throwaway organization per run that is deleted at the end.
- Written or missed. A fact is *written* when one of its user's ACTIVE memories mentions all its
  must-words (write_corpus.mentions). Facts not written are *write misses*: reported apart and not
  asked, so the figures below measure retrieval alone (evaluate write-accuracy measures writing).
- Asking. Each written fact's first-person and third-person question is asked through
  selectors.search.search_memories, the read path of POST /api/v1/search, as an agent of the
  organization with that user and k = K, as of an hour after the user's last message (`as_of`: the
  conversation's "now"; the real now is long after every date in it). A fact said only as a plan
  whose day had passed by then ("a dentist appointment next Friday" in the user's first message) is
  *over*: it no longer holds, so it is reported apart and not asked. `{name}` in a question becomes how the
  store names the user (selectors.names.user_display_name: the name they stated, else the id).
- recall@1 / recall@5: the share of asked questions whose top 1 / top 5 results include a memory
  mentioning all the fact's must-words. *wrong abstention*: the share of asked questions that got
  no result at all (abstained).
- Unanswerable questions are about a fact family; each is asked (both persons) of up to
  UNANSWERABLE_USERS users chosen with a seeded draw among those none of whose messages is of that
  family or holds a user fact with that attribute. *correct abstention*: the share of those asks
  that got no result.
Reported overall, for first and third person apart, and per family (the fact's message family; the
unanswerable question's family). Examples of misses are kept for the dev split only: the test
split is never read while tuning.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memoryapp.evaluation import question_set, write_corpus
from memoryapp.evaluation.write_accuracy import EXTRACTORS, active_texts, current_texts, extractor_for

FIRST_AT = datetime(2025, 3, 3, 10, tzinfo=UTC)
USER_SIZE = 15
K = 5
UNANSWERABLE_USERS = 3
SEED = 18
EXAMPLES = 40
PERSONS = ("first", "third")
# External ids that read as first names, none of them a name the corpus uses.
USER_NAMES = (
    "riley", "morgan", "quinn", "avery", "rowan", "harper", "emerson", "finley", "sasha", "jules", "robin",
    "kai", "noor", "ezra", "remy", "devon", "blair", "casey", "dana", "ellis", "frankie", "hollis", "jesse",
    "kendall", "lane", "marlow", "nico", "oakley", "parker", "reese", "sage", "teagan", "wren", "yael", "zion",
    "arden", "bellamy", "carmel", "darcy", "eden", "fallon", "gwen", "haley", "iris", "jory", "keaton", "lindy",
    "maren", "nell", "orla", "perrin", "rosalind", "selby", "tamsin", "ursula", "vivian", "winona", "xavi",
    "yvette", "zelda",
)


def conflict_keys(message: write_corpus.Message) -> set[str]:
    """What a user may hold only once: the message's family, each attribute it states about the user,
    each other person it speaks of."""
    keys = {f"family:{message.family}"}
    for fact in message.facts:
        subject = fact.subject.strip().lower()
        keys.add(f"user:{fact.attribute.lower()}" if subject == "user" else f"person:{subject}")
    return keys


def group_users(messages: list[write_corpus.Message], *, size: int = USER_SIZE, seed: int = SEED
                ) -> list[list[write_corpus.Message]]:
    """The fact messages dealt to users of about `size` messages, none holding a conflict twice."""
    shuffled = sorted((m for m in messages if m.facts), key=lambda m: m.id)
    random.Random(seed).shuffle(shuffled)
    count = max(1, -(-len(shuffled) // size))
    users: list[list[write_corpus.Message]] = [[] for _ in range(count)]
    held: list[set[str]] = [set() for _ in range(count)]
    for message in shuffled:
        keys = conflict_keys(message)
        fitting = [i for i in range(len(users)) if len(users[i]) < size and not held[i] & keys]
        if not fitting:
            users.append([])
            held.append(set())
            fitting = [len(users) - 1]
        chosen = min(fitting, key=lambda i: len(users[i]))
        users[chosen].append(message)
        held[chosen] |= keys
    return [user for user in users if user]


def _user_name(number: int) -> str:
    first = USER_NAMES[number % len(USER_NAMES)]
    return first if number < len(USER_NAMES) else f"{first}-{USER_NAMES[number // len(USER_NAMES) - 1]}"


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def asked_outcome(texts: list[str], must: tuple[str, ...]) -> dict:
    """One answerable question's outcome from its results' texts, best first."""
    return {"at1": any(write_corpus.mentions(t, must) for t in texts[:1]),
            "at5": any(write_corpus.mentions(t, must) for t in texts[:K]),
            "abstained": not texts}


def tally(outcomes: list[Counter]) -> dict:
    total = sum(outcomes, Counter())
    return {"questions": total["questions"], "at1": total["at1"], "at5": total["at5"],
            "abstained": total["abstained"], "recall_at_1": _rate(total["at1"], total["questions"]),
            "recall_at_5": _rate(total["at5"], total["questions"]),
            "wrong_abstention": _rate(total["abstained"], total["questions"])}


def tally_unanswerable(outcomes: list[Counter]) -> dict:
    total = sum(outcomes, Counter())
    return {"asks": total["asks"], "abstained": total["abstained"],
            "correct_abstention": _rate(total["abstained"], total["asks"])}


class _Store:
    """Users of one throwaway organization, written through the real write path and asked through
    the real read path, as an agent of the organization."""

    def __init__(self, organization, extractor):
        from memoryapp.actors import ActorRef, Principal
        from memoryapp.services.tenancy import agent_create

        self.organization, self.extractor = organization, extractor
        self.actor = ActorRef.for_job("evaluation")
        agent, _ = agent_create(organization=organization, name="evaluation", permissions=("read", "write"))
        self.principal = Principal.for_agent(agent)

    def user(self, external_id: str):
        from memoryapp.services.tenancy import user_create

        return user_create(organization=self.organization, external_id=external_id)

    def send(self, user, text: str, at: datetime, session: str) -> None:
        from memoryapp.services.extraction import episodes_extract
        from memoryapp.services.ingest import MessageIn, episodes_ingest

        result = episodes_ingest(organization=self.organization, user=user, actor=self.actor, session=session,
                                 messages=[MessageIn("user", text, at)])
        episodes_extract(episode_ids=[e.id for e in result.episodes], actor=self.actor, extractor=self.extractor)

    def ask(self, user, query: str, as_of: datetime) -> list[str]:
        from memoryapp.selectors.search import SearchParams, search_memories

        result = search_memories(self.principal, user=user, params=SearchParams(query=query, k=K, as_of=as_of))
        return [] if result.abstained else [hit.item.text for hit in result.hits]


def _asked_at(group: list) -> datetime:
    """An hour after the user's last message, one a day from FIRST_AT."""
    return FIRST_AT + timedelta(days=len(group) - 1, hours=1)


def run(*, split: str = "dev", extractor: str = "rules", corpus_dir: str | Path | None = None,
        questions_dir: str | Path | None = None, progress=None) -> dict:
    """recall@1/@5, wrong and correct abstention of the read path on the question set's `split`."""
    from memoryapp.models import Organization
    from memoryapp.selectors.names import user_display_name

    if split not in write_corpus.SPLITS:
        raise ValueError(f"unknown split {split!r}: choose one of {', '.join(write_corpus.SPLITS)}")
    chosen = extractor_for(extractor)
    corpus = Path(corpus_dir) if corpus_dir else None
    folder = Path(questions_dir) if questions_dir else None
    messages = write_corpus.messages(split, corpus)
    asked_for = {(q.message_id, q.fact_index): q for q in question_set.fact_questions(split, folder)}
    never_said = question_set.unanswerable(split, folder)
    groups = group_users(messages)
    if not groups:
        raise ValueError(f"the corpus has no {split} fact messages")
    keep_examples = split == "dev"
    examples: dict[str, list] = {"not_found": [], "wrong_abstention": [], "not_abstained": [], "write_missed": []}
    organization = Organization.objects.create(name=f"eval-questions-{uuid.uuid4().hex[:12]}")
    try:
        store = _Store(organization, chosen)
        asked_facts = sum(1 for group in groups for m in group for i in range(len(m.facts)) if (m.id, i) in asked_for)
        total = sum(map(len, groups)) + 2 * asked_facts + 2 * UNANSWERABLE_USERS * len(never_said)
        done = 0

        def step(amount: int = 1) -> None:
            nonlocal done
            done += amount
            if progress:
                progress(min(done, total), total)

        users = []
        for number, group in enumerate(groups):
            user = store.user(_user_name(number))
            for day, message in enumerate(group):
                store.send(user, message.text, FIRST_AT + timedelta(days=day), f"s{day + 1}")
                step()
            users.append((user, group))

        facts, families = Counter(), {}
        persons = {person: Counter() for person in PERSONS}
        for user, group in users:
            name, texts, asked_at = user_display_name(user), active_texts(user), _asked_at(group)
            holding = current_texts(user, asked_at)
            for message in group:
                for index, fact in enumerate(message.facts):
                    question = asked_for.get((message.id, index))
                    facts["facts"] += 1
                    if question is None:
                        facts["unasked"] += 1
                        continue
                    if not any(write_corpus.mentions(t, fact.must) for t in texts):
                        facts["write_missed"] += 1
                        if keep_examples:
                            examples["write_missed"].append({"id": question.id, "text": message.text,
                                                             "must": list(fact.must)})
                        step(2)
                        continue
                    if not any(write_corpus.mentions(t, fact.must) for t in holding):
                        facts["over"] += 1  # a plan whose day passed before the questions
                        step(2)
                        continue
                    facts["written"] += 1
                    counts = families.setdefault(message.family, Counter())
                    for person, wording in zip(PERSONS, (question.first_person, question.third_person), strict=True):
                        query = question_set.named(wording, name)
                        found = store.ask(user, query, asked_at)
                        outcome = asked_outcome(found, fact.must)
                        for target in (counts, persons[person]):
                            target["questions"] += 1
                            target.update(key for key, value in outcome.items() if value)
                        if keep_examples and not outcome["at5"]:
                            kind = "wrong_abstention" if outcome["abstained"] else "not_found"
                            examples[kind].append({"id": question.id, "question": query, "must": list(fact.must),
                                                   "said": message.text, "found": found})
                        step()

        unanswered = {person: Counter() for person in PERSONS}
        unanswered_families: dict[str, Counter] = {}
        for question in never_said:
            eligible = [(user, group) for user, group in users
                        if not any(_about(message, question.family) for message in group)]
            draw = random.Random(f"{SEED}:{split}:{question.id}")
            for user, group in draw.sample(eligible, min(UNANSWERABLE_USERS, len(eligible))):
                name, asked_at = user_display_name(user), _asked_at(group)
                for person, wording in zip(PERSONS, (question.first_person, question.third_person), strict=True):
                    query = question_set.named(wording, name)
                    found = store.ask(user, query, asked_at)
                    for target in (unanswered[person], unanswered_families.setdefault(question.family, Counter())):
                        target["asks"] += 1
                        target["abstained"] += not found
                    if keep_examples and found:
                        examples["not_abstained"].append({"id": question.id, "question": query, "found": found[:2]})
            step(2 * UNANSWERABLE_USERS)
    finally:
        organization.delete()
    return {
        "split": split, "extractor": extractor, "k": K, "first_at": FIRST_AT.isoformat(),
        "users": len(users), "messages": sum(map(len, groups)),
        "facts": facts["facts"], "written": facts["written"], "write_missed": facts["write_missed"],
        "over": facts["over"],
        "unasked": facts["unasked"],
        "answerable": {**tally(list(persons.values())),
                       "persons": {person: tally([persons[person]]) for person in PERSONS}},
        "unanswerable": {**tally_unanswerable(list(unanswered.values())), "questions": len(never_said),
                         "persons": {person: tally_unanswerable([unanswered[person]]) for person in PERSONS}},
        "families": [{"family": family, **tally([families[family]])} for family in sorted(families)],
        "unanswerable_families": [{"family": family, **tally_unanswerable([unanswered_families[family]])}
                                  for family in sorted(unanswered_families)],
        "examples": {kind: found[:EXAMPLES] for kind, found in examples.items()} if keep_examples else {},
    }


def _about(message: write_corpus.Message, family: str) -> bool:
    """Whether the message says something of the family: it is of that family, or states a fact
    about the user under that attribute."""
    return message.family == family or any(f.subject.lower() == "user" and f.attribute.lower() == family
                                           for f in message.facts)


def table(result: dict) -> str:
    """The printed report; its last line is machine-readable."""
    answerable, unanswerable = result["answerable"], result["unanswerable"]
    lines = [
        f"questions: {result['split']} split, {result['extractor']} extractor, {result['messages']} messages "
        f"dealt to {result['users']} users, search k={result['k']}",
        f"  facts written       {result['written']} of {result['facts']} (not asked: write misses "
        f"{result['write_missed']}, plans over before the questions {result.get('over', 0)})",
        f"  recall@1            {answerable['recall_at_1']:6.1%}  ({answerable['at1']} of {answerable['questions']} "
        "questions about written facts)",
        f"  recall@5            {answerable['recall_at_5']:6.1%}  ({answerable['at5']} of {answerable['questions']})",
        f"  wrong abstention    {answerable['wrong_abstention']:6.1%}  ({answerable['abstained']} of "
        f"{answerable['questions']} answerable questions got no result)",
        f"  correct abstention  {unanswerable['correct_abstention']:6.1%}  ({unanswerable['abstained']} of "
        f"{unanswerable['asks']} asks of {unanswerable['questions']} unanswerable questions)",
        "",
        f"{'person':8} {'asked':>6} {'R@1':>6} {'R@5':>6} {'wrong abst.':>11} {'unanswerable':>12} {'abstained':>9}",
    ]
    for person in PERSONS:
        row, never = answerable["persons"][person], unanswerable["persons"][person]
        lines.append(f"{person:8} {row['questions']:6d} {row['recall_at_1']:6.0%} {row['recall_at_5']:6.0%} "
                     f"{row['wrong_abstention']:11.0%} {never['asks']:12d} {never['correct_abstention']:9.0%}")
    lines += ["", f"{'family':18} {'asked':>6} {'R@1':>6} {'R@5':>6} {'wrong abst.':>11}"]
    for row in result["families"]:
        lines.append(f"{row['family']:18} {row['questions']:6d} {row['recall_at_1']:6.0%} {row['recall_at_5']:6.0%} "
                     f"{row['wrong_abstention']:11.0%}")
    lines += ["", f"{'unanswerable about':18} {'asks':>6} {'abstained':>9}"]
    for row in result["unanswerable_families"]:
        lines.append(f"{row['family']:18} {row['asks']:6d} {row['correct_abstention']:9.0%}")
    lines.append(f"questions split={result['split']} extractor={result['extractor']} "
                 f"recall_at_1={answerable['recall_at_1']:.3f} recall_at_5={answerable['recall_at_5']:.3f} "
                 f"wrong_abstention={answerable['wrong_abstention']:.3f} "
                 f"correct_abstention={unanswerable['correct_abstention']:.3f}")
    return "\n".join(lines)


__all__ = ["EXTRACTORS", "run", "table", "group_users", "asked_outcome", "tally", "tally_unanswerable"]
