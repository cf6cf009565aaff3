"""The hand-written question set (memoryapp/evaluation/questions): loading and checking.

For every labelled fact of the write-path corpus (memoryapp/evaluation/corpus), a first-person
question as an agent passes the user's own words on ("where do I live?") and a third-person one
("Where does {name} live?"; `{name}` stands for how the store names the user); plus questions about
things the store cannot know for the user (`unanswerable-<split>.jsonl`, with the fact family they
are about). A fact's questions live in the file mirroring its message's (`messages-b.test.jsonl` ->
`questions-b.test.jsonl`), so they share its split; the unanswerable ones were split 65/35 by a
seeded shuffle when they were written, and never move.

`python -m memoryapp.evaluation.question_set` checks every file against the corpus."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from memoryapp.evaluation import write_corpus

QUESTIONS_DIR = write_corpus.QUESTIONS_DIR
NAME = "{name}"


@dataclass(frozen=True)
class FactQuestions:
    id: str
    message_id: str
    fact_index: int
    first_person: str
    third_person: str


@dataclass(frozen=True)
class Unanswerable:
    id: str
    split: str
    family: str
    first_person: str
    third_person: str


def fact_questions(split: str, questions_dir: Path | None = None) -> list[FactQuestions]:
    found = []
    for path, number, item in write_corpus.jsonl_items(questions_dir or QUESTIONS_DIR, f"questions-*.{split}.jsonl"):
        try:
            found.append(FactQuestions(id=item["id"], message_id=item["message_id"], fact_index=int(item["fact_index"]),
                                       first_person=item["first_person"], third_person=item["third_person"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path.name}:{number}: missing or malformed field {exc}") from exc
    return found


def unanswerable(split: str, questions_dir: Path | None = None) -> list[Unanswerable]:
    found = []
    for path, number, item in write_corpus.jsonl_items(questions_dir or QUESTIONS_DIR, f"unanswerable-{split}.jsonl"):
        try:
            found.append(Unanswerable(id=item["id"], split=item["split"], family=item["family"],
                                      first_person=item["first_person"], third_person=item["third_person"]))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{path.name}:{number}: missing or malformed field {exc}") from exc
    return found


def named(question: str, name: str) -> str:
    """The question as asked of a user the store calls `name` ("the user" reads as is)."""
    return question.replace(NAME, name)


def problems(corpus_dir: Path | None = None, questions_dir: Path | None = None) -> list[str]:
    """What is wrong with the question set as written (empty when it is sound)."""
    found = []
    for split in write_corpus.SPLITS:
        facts = {(m.id, index) for m in write_corpus.messages(split, corpus_dir) for index in range(len(m.facts))}
        asked: dict[tuple[str, int], str] = {}
        for q in fact_questions(split, questions_dir):
            key = (q.message_id, q.fact_index)
            if key not in facts:
                found.append(f"{q.id}: no fact {q.fact_index} of message {q.message_id} in the {split} split")
            if key in asked:
                found.append(f"{q.id}: fact already asked by {asked[key]}")
            asked[key] = q.id
            found += _wording(q.id, q.first_person, q.third_person)
        found += [f"{m}#{i}: no question" for m, i in sorted(facts - set(asked))]
        for q in unanswerable(split, questions_dir):
            if q.split != split:
                found.append(f"{q.id}: says split {q.split} but is in the {split} file")
            found += _wording(q.id, q.first_person, q.third_person)
    return found


def _wording(id: str, first: str, third: str) -> list[str]:
    found = []
    if not re.search(r"\b(i|me|my|mine|we|us|our|i'm|i've)\b", first.lower()):
        found.append(f"{id}: the first-person question does not speak as the user")
    if re.search(r"\b(i|my|me)\b", third.lower().replace(NAME, "")):
        found.append(f"{id}: the third-person question speaks as the user")
    if set(re.findall(r"\{[^}]*\}", first + third)) - {NAME}:
        found.append(f"{id}: an unknown placeholder")
    return found


if __name__ == "__main__":
    issues = problems()
    for split in write_corpus.SPLITS:
        print(f"{split}: {len(fact_questions(split))} facts asked, {len(unanswerable(split))} unanswerable")
    print("\n".join(issues) if issues else "no problems found")
