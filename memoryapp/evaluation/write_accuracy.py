"""Write accuracy on the hand-written corpus (memoryapp/evaluation/corpus): does the write path
store what everyday messages say, only that, and recognise a change as a change?

Everything goes through the real write path, as POST /api/v1/episodes with "wait": true does
(services.ingest.episodes_ingest, then services.extraction.episodes_extract with the chosen
extractor), in one throwaway organization per run that is deleted at the end. Each message and
each change pair goes to a fresh user of its own, so nothing one item wrote can help another.

Definitions:
- A message is sent alone, dated WRITTEN_AT (fixed, so "next Friday" resolves the same every run).
  The memories it produced are its user's ACTIVE memories afterwards.
- An expected fact is *written* when one of those memories' text holds all its must-words
  (write_corpus.mentions: whole words, any case). missed rate = facts not written / expected facts.
- A `none` message is *spurious* when it produced any memory. spurious rate = spurious messages /
  none messages.
- Informational: *unmatched* memories, produced by fact messages but holding no expected fact's
  must-words (an extra fact, or an expected one worded without its distinctive words).
- A change pair: `before` dated CHANGE_FROM in session s1, `after` CHANGE_AFTER_DAYS later in
  session s2. Then, as of an hour after it (READ_AT; selectors.scoping.valid_at: status, validity and belief
  time):
  *new value current* when a current memory mentions after.must, *old value still current* when
  a current memory mentions before.must and not after.must (one that mentions both tells the change:
  "The user moved to Seville, Madrid was too expensive."), nor says it is over in words `before` did not
  use ("The user is no longer vegetarian.": holds_old_value; since 2026-12-01); *recognised* when
  the new value is current and the old is not (closed: superseded, invalidated or its validity
  ended). Also *new value written*: an active memory mentions after.must, current or not.
  change recognition = recognised / pairs.
- A change must end the old value and nothing else, so the pair's user is not empty: before the
  pair, DISTRACTORS fact messages of other families (a seeded draw per pair, none mentioning the
  pair's values) are sent in session s0. *Unrelated facts closed*: those messages' facts current
  (as of READ_AT) before `after` is sent and no longer current after it (collateral rate = closed / such facts).

Per family (messages) and per way of saying the change (pairs), for one split. Examples of what
went wrong are kept for the dev split only: the test split is never read while tuning.
"""

from __future__ import annotations

import random
import re
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memoryapp.evaluation import write_corpus

WRITTEN_AT = datetime(2025, 6, 2, 10, tzinfo=UTC)
CHANGE_FROM = WRITTEN_AT
CHANGE_AFTER_DAYS = 30
CHANGED_AT = CHANGE_FROM + timedelta(days=CHANGE_AFTER_DAYS)
# What holds is read for an hour after the later statement, before it is sent and after: what that statement ended.
# Never on the day the evaluation runs (a plan "on 4 March" said in June 2025 is over by a later December, and the
# figures would change with the calendar), nor at two moments (a plan whose day passed between them ended alone).
READ_AT = CHANGED_AT + timedelta(hours=1)
EXTRACTORS = ("rules", "llm")
EXAMPLES = 40  # per kind of failure, dev split only
DISTRACTORS = 4  # other facts a change pair's user holds before the pair


class ExtractorUnavailable(ValueError):
    """The LLM extractor was asked for without MEMORY_LLM_* configured."""


def extractor_for(name: str):
    """The extractor this run measures, chosen here rather than by settings.MEMORY_EXTRACTOR, so
    that one process can measure both on the same data."""
    from memoryapp import llm
    from memoryapp.services.extract import get_extractor

    if name not in EXTRACTORS:
        raise ValueError(f"unknown extractor {name!r}: choose one of {', '.join(EXTRACTORS)}")
    if name == "llm" and not llm.is_configured():
        raise ExtractorUnavailable("the LLM extractor needs an endpoint: set MEMORY_LLM_BASE_URL (and "
                                   "MEMORY_LLM_MODEL, MEMORY_LLM_API_KEY as the endpoint requires)")
    return get_extractor(name)


class _Writer:
    """Fresh users of one throwaway organization, written to through the real write path."""

    def __init__(self, organization, extractor):
        from memoryapp.actors import ActorRef

        self.organization, self.extractor = organization, extractor
        self.actor = ActorRef.for_job("evaluation")
        self.users = 0

    def user(self):
        from memoryapp.services.tenancy import user_create

        self.users += 1
        return user_create(organization=self.organization, external_id=f"eval-{self.users:05d}")

    def send(self, user, text: str, at: datetime, session: str) -> None:
        from memoryapp.services.extraction import episodes_extract
        from memoryapp.services.ingest import MessageIn, episodes_ingest

        result = episodes_ingest(organization=self.organization, user=user, actor=self.actor, session=session,
                                 messages=[MessageIn("user", text, at)])
        episodes_extract(episode_ids=[e.id for e in result.episodes], actor=self.actor, extractor=self.extractor)

    def pair_begun(self, pair, fact_messages: list) -> tuple:
        """(a fresh user, the messages of other facts they were told first), after the pair's first statement."""
        user, others = self.user(), _distractors(pair, fact_messages)
        for other in others:
            self.send(user, other.text, CHANGE_FROM - timedelta(days=1), "s0")
        self.send(user, pair.before, CHANGE_FROM, "s1")
        return user, others

    def pair_ended(self, user, pair) -> None:
        """The pair's later statement, a month after the first, in another session."""
        self.send(user, pair.after, CHANGED_AT, "s2")


def active_texts(user) -> list[str]:
    """The texts of the user's ACTIVE memories, current or not."""
    from memoryapp.models import Memory

    return list(Memory.objects.filter(user=user, status=Memory.Status.ACTIVE).values_list("text", flat=True))


def current_texts(user, as_of: datetime | None = None) -> list[str]:
    """The texts of the user's memories that hold at `as_of` (default now), as searches read them."""
    from memoryapp.models import Memory
    from memoryapp.selectors.scoping import valid_at

    return list(valid_at(Memory.objects.filter(user=user), as_of=as_of).values_list("text", flat=True))


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def run(*, split: str = "dev", extractor: str = "rules", corpus_dir: str | Path | None = None,
        progress=None) -> dict:
    """Missed, spurious and change recognition of `extractor` on the corpus' `split`."""
    from memoryapp.models import Organization

    if split not in write_corpus.SPLITS:
        raise ValueError(f"unknown split {split!r}: choose one of {', '.join(write_corpus.SPLITS)}")
    chosen = extractor_for(extractor)
    folder = Path(corpus_dir) if corpus_dir else None
    messages, pairs = write_corpus.messages(split, folder), write_corpus.changes(split, folder)
    continuations = write_corpus.continuations(split, folder)
    if not messages and not pairs:
        raise ValueError(f"the corpus has no {split} items")
    keep_examples = split == "dev"
    organization = Organization.objects.create(name=f"eval-write-accuracy-{uuid.uuid4().hex[:12]}")
    try:
        writer = _Writer(organization, chosen)
        total, done = len(messages) + len(pairs) + len(continuations), 0
        families: dict[str, Counter] = {}
        kinds: dict[str, Counter] = {}  # continuation pairs by kind: their first statements held, and ended
        examples: dict[str, list] = {"missed": [], "spurious": [], "unrecognised": [], "collateral": [],
                                     "continued_ended": []}
        collateral = Counter()
        unmatched = 0
        for message in messages:
            user = writer.user()
            writer.send(user, message.text, WRITTEN_AT, "s1")
            texts = active_texts(user)
            counts = families.setdefault(message.family, Counter())
            counts["messages"] += 1
            if message.family == "none":
                if texts:
                    counts["spurious"] += 1
                    if keep_examples:
                        examples["spurious"].append({"id": message.id, "text": message.text, "written": texts})
            else:
                for fact in message.facts:
                    counts["expected"] += 1
                    if not _mentioned(texts, fact.must):
                        counts["missed"] += 1
                        if keep_examples:
                            examples["missed"].append({"id": message.id, "text": message.text,
                                                       "must": list(fact.must), "written": texts})
                unmatched += sum(1 for t in texts if not any(write_corpus.mentions(t, f.must) for f in message.facts))
            done += 1
            if progress:
                progress(done, total)
        ways: dict[str, Counter] = {}
        fact_messages = [m for m in messages if m.family != "none"]
        for pair in pairs:
            user, others = writer.pair_begun(pair, fact_messages)
            held = [f for m in others for f in m.facts if _mentioned(current_texts(user, READ_AT), f.must)]
            writer.pair_ended(user, pair)
            current, active = current_texts(user, READ_AT), active_texts(user)
            closed = [f for f in held if not _mentioned(current, f.must)]
            collateral["held"] += len(held)
            collateral["closed"] += len(closed)
            if keep_examples and closed:
                examples["collateral"].append({"id": pair.id, "after": pair.after,
                                               "closed": [" ".join(f.must) for f in closed]})
            new_current = _mentioned(current, pair.after_must)
            old_current = holds_old_value(current, pair)
            counts = ways.setdefault(pair.way, Counter())
            counts["pairs"] += 1
            counts["new_written"] += _mentioned(active, pair.after_must)
            counts["new_current"] += new_current
            counts["old_current"] += old_current
            counts["recognised"] += new_current and not old_current
            if keep_examples and not (new_current and not old_current):
                examples["unrecognised"].append({"id": pair.id, "before": pair.before, "after": pair.after,
                                                 "current": current})
            done += 1
            if progress:
                progress(done, total)
        for pair in continuations:
            user, _ = writer.pair_begun(pair, fact_messages)
            if _mentioned(current_texts(user, READ_AT), pair.before_must):
                writer.pair_ended(user, pair)
                current = current_texts(user, READ_AT)
                counts = kinds.setdefault(pair.way, Counter())
                counts["held"] += 1
                if not _mentioned(current, pair.before_must):
                    counts["ended"] += 1
                    if keep_examples:
                        examples["continued_ended"].append({"id": pair.id, "before": pair.before, "after": pair.after,
                                                            "current": current})
            done += 1
            if progress:
                progress(done, total)
    finally:
        organization.delete()
    return _result(split=split, extractor=extractor, families=families, ways=ways, unmatched=unmatched,
                   collateral=collateral, kinds=kinds,
                   examples={kind: found[:EXAMPLES] for kind, found in examples.items()} if keep_examples else {})


def _distractors(pair, fact_messages: list) -> list:
    """The other facts a pair's user already holds: messages of other families that name neither value."""
    eligible = [m for m in fact_messages if m.family != pair.family
                and not any(write_corpus.mentions(m.text, must) for must in (pair.before_must, pair.after_must))]
    return random.Random(pair.id).sample(eligible, min(DISTRACTORS, len(eligible)))


def _mentioned(texts: list[str], must) -> bool:
    return any(write_corpus.mentions(t, must) for t in texts)


def holds_old_value(texts: list[str], pair) -> bool:
    """A memory that names the old value and not the new one, unless it says the old value is over in words
    the first statement did not use. One that names both tells the change ("The user moved to Seville,
    Madrid was too expensive."); so does one that says it ended ("The user is no longer vegetarian.",
    "Jake and the user split in February."), though "The user doesn't eat meat." still holds its own value
    when the first statement said so."""
    said_before = _words_of_ending(pair.before)
    return any(write_corpus.mentions(t, pair.before_must) and not write_corpus.mentions(t, pair.after_must)
               and not _words_of_ending(t) - said_before
               for t in texts)


def says_over(text: str) -> bool:
    """Whether a text says something is over ("The user sold the Vespa.", "no longer vegetarian")."""
    return bool(_words_of_ending(text))


def _words_of_ending(text: str) -> set[str]:
    return {word.lower() for word in _SAYS_OVER.findall(text)}


# Words that say a value is over (a memory saying them of the old value does not hold it).
_SAYS_OVER = re.compile(r"\b(?:no longer|not|never|anymore|any more|quit|left|stopped|gave up|given up|sold|split"
                        r"|broke up|divorced|died|passed away|ended|last day|cancell?ed|moved out|retired from"
                        r"|passed(?= (?:in|on|over|last|this|yesterday)\b)|rehome|rehomed|got rid of"
                        r"|stepped (?:back|down|away) from|dropped out"
                        # a plan that did not happen: "the user scrapped the Portland plan", "the Calgary job fell
                        # through", "the Lima trip's off"
                        r"|scrapped|fell through|called off|(?:is|'s|are) off)\b"
                        r"|n't\b", re.I)


def _message_row(name: str, counts: Counter) -> dict:
    return {"family": name, "messages": counts["messages"], "expected": counts["expected"],
            "missed": counts["missed"], "missed_rate": _rate(counts["missed"], counts["expected"]),
            "spurious": counts["spurious"]}


def _change_row(name: str, counts: Counter) -> dict:
    return {"way": name, "pairs": counts["pairs"], "recognised": counts["recognised"],
            "recognised_rate": _rate(counts["recognised"], counts["pairs"]),
            "new_written": counts["new_written"], "new_current": counts["new_current"],
            "old_current": counts["old_current"]}


def _continued_row(name: str, counts: Counter) -> dict:
    return {"kind": name, "held": counts["held"], "ended": counts["ended"],
            "ended_rate": _rate(counts["ended"], counts["held"])}


def _result(*, split, extractor, families, ways, unmatched, collateral, kinds, examples) -> dict:
    overall = sum(families.values(), Counter())
    none = families.get("none", Counter())
    changes = sum(ways.values(), Counter())
    return {
        "split": split, "extractor": extractor, "written_at": WRITTEN_AT.isoformat(),
        "messages": overall["messages"], "expected": overall["expected"], "missed": overall["missed"],
        "missed_rate": _rate(overall["missed"], overall["expected"]),
        "none_messages": none["messages"], "spurious": none["spurious"],
        "spurious_rate": _rate(none["spurious"], none["messages"]),
        "unmatched_memories": unmatched,
        "changes": {**_change_row("all", changes),
                    "new_written_rate": _rate(changes["new_written"], changes["pairs"]),
                    "old_current_rate": _rate(changes["old_current"], changes["pairs"]),
                    "unrelated_held": collateral["held"], "unrelated_closed": collateral["closed"],
                    "unrelated_closed_rate": _rate(collateral["closed"], collateral["held"])},
        # News on a fact's topic that changes nothing ("Jess is terrified of the hoover") must leave it current.
        "continuations": {**_continued_row("all", sum(kinds.values(), Counter())),
                          "kinds": [_continued_row(name, kinds[name]) for name in sorted(kinds)]},
        "families": [_message_row(name, families[name]) for name in sorted(families) if name != "none"],
        "ways": [_change_row(name, ways[name]) for name in sorted(ways)],
        "examples": examples,
    }


def table(result: dict) -> str:
    """The printed report; its last line is machine-readable."""
    changes, continued = result["changes"], result["continuations"]
    lines = [
        f"write accuracy: {result['split']} split, {result['extractor']} extractor, each message alone to a fresh "
        f"user, dated {result['written_at'][:10]}",
        f"  missed writes      {result['missed_rate']:6.1%}  ({result['missed']} of {result['expected']} expected "
        f"facts in {result['messages'] - result['none_messages']} messages)",
        f"  spurious writes    {result['spurious_rate']:6.1%}  ({result['spurious']} of {result['none_messages']} "
        "messages that must yield nothing)",
        f"  change recognised  {changes['recognised_rate']:6.1%}  ({changes['recognised']} of {changes['pairs']} "
        f"pairs; new value written {changes['new_written']}, current {changes['new_current']}; old value still "
        f"current {changes['old_current']})",
        f"  unrelated closed   {changes['unrelated_closed_rate']:6.1%}  ({changes['unrelated_closed']} of "
        f"{changes['unrelated_held']} facts the pairs' users held before)",
        f"  same topic ended   {continued['ended_rate']:6.1%}  ({continued['ended']} of {continued['held']} "
        "facts ended by later news on their topic that changes nothing)",
        f"  unmatched memories from fact messages: {result['unmatched_memories']} (informational)",
        "",
        f"{'family':18} {'messages':>8} {'facts':>6} {'missed':>7} {'rate':>6}",
    ]
    for row in result["families"]:
        lines.append(f"{row['family']:18} {row['messages']:8d} {row['expected']:6d} {row['missed']:7d} "
                     f"{row['missed_rate']:6.0%}")
    lines += ["", f"{'way of changing':18} {'pairs':>6} {'recognised':>10} {'rate':>6} {'new written':>11} "
                  f"{'old current':>11}"]
    for row in result["ways"]:
        lines.append(f"{row['way']:18} {row['pairs']:6d} {row['recognised']:10d} {row['recognised_rate']:6.0%} "
                     f"{row['new_written']:11d} {row['old_current']:11d}")
    if continued["kinds"]:
        lines += ["", f"{'news that changes nothing':26} {'held':>5} {'ended':>6} {'rate':>6}"]
        lines += [f"{row['kind']:26} {row['held']:5d} {row['ended']:6d} {row['ended_rate']:6.0%}"
                  for row in continued["kinds"]]
    lines.append(f"write_accuracy split={result['split']} extractor={result['extractor']} "
                 f"missed={result['missed_rate']:.3f} spurious={result['spurious_rate']:.3f} "
                 f"changes_recognised={changes['recognised_rate']:.3f} "
                 f"unrelated_closed={changes['unrelated_closed_rate']:.3f} "
                 f"same_topic_ended={continued['ended_rate']:.3f}")
    return "\n".join(lines)
