"""The hand-written write-accuracy corpus (memoryapp/evaluation/corpus/README.md): loading and checking.

`python -m memoryapp.evaluation.write_corpus` checks every file and prints the counts."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"
SPLITS = ("dev", "test")
# Training-only items (services/extract/training/README.md): the same format, split "train", never measured.
TRAINING_DIR = Path(__file__).resolve().parents[1] / "services" / "extract" / "training"
# The question set written for the corpus' facts (evaluation.question_set reads it; the search's question head is
# trained on its dev files)
QUESTIONS_DIR = Path(__file__).resolve().parent / "questions"


def _files() -> list[tuple[str, Path]]:
    """(split, folder) of every item: the corpus' splits and the training items."""
    return [*((split, CORPUS_DIR) for split in SPLITS), ("train", TRAINING_DIR)]


@dataclass(frozen=True)
class ExpectedFact:
    subject: str
    attribute: str
    value: str
    must: tuple[str, ...]
    negated: bool = False


@dataclass(frozen=True)
class Message:
    id: str
    family: str
    text: str
    facts: tuple[ExpectedFact, ...]
    tags: tuple[str, ...]
    split: str


@dataclass(frozen=True)
class ChangePair:
    id: str
    family: str
    way: str
    before: str
    before_must: tuple[str, ...]
    after: str
    after_must: tuple[str, ...]
    question: str
    split: str


def jsonl_items(directory: Path, pattern: str):
    """(path, line number, object) of every JSON line of the files matching `pattern`, in name order."""
    for path in sorted(directory.glob(pattern)):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                try:
                    yield path, number, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path.name}:{number}: not JSON: {exc}") from exc


def messages(split: str, corpus_dir: Path | None = None) -> list[Message]:
    """The split's messages, from `corpus_dir` (tests point it at a small corpus) or the project's."""
    found = []
    for path, number, item in jsonl_items(corpus_dir or CORPUS_DIR, f"messages-*.{split}.jsonl"):
        try:
            facts = tuple(ExpectedFact(subject=f["subject"], attribute=f["attribute"], value=f["value"],
                                       must=tuple(f["must"]), negated=bool(f.get("negated", False)))
                          for f in item["facts"])
            found.append(Message(id=item["id"], family=item["family"], text=item["text"], facts=facts,
                                 tags=tuple(item.get("tags", ())), split=split))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{path.name}:{number}: missing or malformed field {exc}") from exc
    return found


def changes(split: str, corpus_dir: Path | None = None) -> list[ChangePair]:
    return _pairs(corpus_dir, f"changes-*.{split}.jsonl", split, way="way", asked=True)


def continuations(split: str, corpus_dir: Path | None = None) -> list[ChangePair]:
    """The split's continuation pairs: a statement, then later news on its topic that changes nothing ("I have a
    collie called Jess." then "Jess is terrified of the hoover lol"); `way` is the pair's `kind` (detail,
    addition, reaffirm, same_topic_event, other_person, plan_or_wish, tricky) and there is no question."""
    return _pairs(corpus_dir, f"continues-*.{split}.jsonl", split, way="kind", asked=False)


def _pairs(corpus_dir: Path | None, pattern: str, split: str, *, way: str, asked: bool) -> list[ChangePair]:
    found = []
    for path, number, item in jsonl_items(corpus_dir or CORPUS_DIR, pattern):
        try:
            found.append(ChangePair(id=item["id"], family=item["family"], way=item[way],
                                    before=item["before"]["text"], before_must=tuple(item["before"]["must"]),
                                    after=item["after"]["text"], after_must=tuple(item["after"]["must"]),
                                    question=item["question"] if asked else "", split=split))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{path.name}:{number}: missing or malformed field {exc}") from exc
    return found


def mentions(text: str, must: tuple[str, ...]) -> bool:
    """Whether a stored text holds every must-word, as whole words, ignoring case. A word also counts
    with the ending the third person gives it: a memory says "The user drives to work." of "I drive to
    work." (must-word "drive"), "The user watches..." of "I watch...", "The user studies..." of "I study..."."""
    lowered = text.lower()
    return all(re.search(rf"(?<!\w){_inflected(word.lower())}(?!\w)", lowered) for word in must)


def _inflected(word: str) -> str:
    """A pattern for the word, or for its third-person form when it is a word of letters."""
    if not word.isalpha():
        return re.escape(word)
    if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        return f"{re.escape(word[:-1])}(?:y|ies)"
    return f"{re.escape(word)}(?:e?s)?"


def problems() -> list[str]:
    """What is wrong with the corpus and the training items as written (empty when they are sound)."""
    found, ids, texts = [], Counter(), {}
    for split, folder in _files():
        said = texts.setdefault(split, [])
        for message in messages(split, folder):
            ids[message.id] += 1
            said.append(message.text)
            if message.family == "none" and message.facts:
                found.append(f"{message.id}: family none but facts given")
            if message.family != "none" and not message.facts:
                found.append(f"{message.id}: no facts for family {message.family}")
            for fact in message.facts:
                if not fact.must or not all(isinstance(w, str) and w.strip() for w in fact.must):
                    found.append(f"{message.id}: a fact without must-words")
                elif not mentions(message.text, fact.must) and not fact.negated:
                    found.append(f"{message.id}: must-words {fact.must} not all in the message text")
        for pair in [*changes(split, folder), *continuations(split, folder)]:
            ids[pair.id] += 1
            said += [pair.before, pair.after]
            if not pair.before_must or not pair.after_must:
                found.append(f"{pair.id}: before and after need must-words")
            # a change's two values differ; news that changes nothing (no question) may say the same words again
            elif pair.question and set(map(str.lower, pair.before_must)) == set(map(str.lower, pair.after_must)):
                found.append(f"{pair.id}: before and after have the same must-words")
            if not mentions(pair.after, pair.after_must):
                found.append(f"{pair.id}: after.must not in the after text")
            if not mentions(pair.before, pair.before_must):
                found.append(f"{pair.id}: before.must not in the before text")
    found += [f"{item}: id used {count} times" for item, count in ids.items() if count > 1]
    # A test item trained on, or one said again in nearly its words, would make the test split measure memory,
    # not generalization.
    tested = [_words(text) for text in texts["test"]]
    found += [f"training item says a test item: {text!r}" for text in texts["train"]
              if _said_in(_words(text), tested)]
    return found


def _words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"\w+", text.lower()))


NEAR_DUPLICATE = 0.7  # shared words over all words of the two: "I'm a size 14 in most shops" / "...high-street shops"


def _said_in(words: frozenset[str], texts: list[frozenset[str]]) -> bool:
    """Whether `words` are (nearly) those of one of `texts` (a text's words sets)."""
    return any(words == other or len(words & other) >= NEAR_DUPLICATE * len(words | other)
               for other in texts if NEAR_DUPLICATE * len(other) <= len(words) <= len(other) / NEAR_DUPLICATE)


def summary() -> str:
    lines = []
    for split, folder in _files():
        msgs, pairs = messages(split, folder), changes(split, folder)
        facts = [m for m in msgs if m.family != "none"]
        lines.append(f"{split}: {len(msgs)} messages ({len(facts)} with facts, {len(msgs) - len(facts)} none, "
                     f"{len({m.family for m in facts})} families), {len(pairs)} change pairs "
                     f"({len({p.way for p in pairs})} ways), {len(continuations(split, folder))} continuation pairs")
    return "\n".join(lines)


if __name__ == "__main__":
    issues = problems()
    print(summary())
    print("\n".join(issues) if issues else "no problems found")
