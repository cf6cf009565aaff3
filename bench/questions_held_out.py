"""The question set's measure (`evaluate questions`) on writers nobody tuned on: the messages of
memoryapp/services/extract/training/next (parts the classifiers have not been trained on), with questions written
for their facts by people who read neither the read path nor the dev questions (questions-<part>.train.jsonl there),
and 160 questions about things those users never said (unanswerable-next.jsonl).

    .venv/bin/python bench/questions_held_out.py [--json out.json]

Prints the same table as `manage.py evaluate questions`. The files are copied into a temporary folder under the
names questions_eval reads (each part as a dev split); the project's question set is not touched.
"""

# ruff: noqa: E402  (Django is configured before the project is imported)
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from setup_django import setup_django

ROOT = setup_django("bench-questions-held-out")

from memoryapp.evaluation import questions_eval

NEXT = ROOT / "memoryapp" / "services" / "extract" / "training" / "next"


def held_out_folder(folder: Path) -> None:
    """Copies the held-out messages, their questions and the unanswerable ones into `folder` as a dev split."""
    for messages in sorted(NEXT.glob("messages-*.train.jsonl")):
        shutil.copy(messages, folder / messages.name.replace(".train.", ".dev."))
    for questions in sorted(NEXT.glob("questions-*.train.jsonl")):
        shutil.copy(questions, folder / questions.name.replace(".train.", ".dev."))
    lines = [json.loads(line) for line in (NEXT / "unanswerable-next.jsonl").read_text().splitlines() if line.strip()]
    (folder / "unanswerable-dev.jsonl").write_text("".join(json.dumps({**q, "split": "dev"}) + "\n" for q in lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the whole result here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        held_out_folder(Path(folder))
        result = questions_eval.run(split="dev", corpus_dir=folder, questions_dir=folder)
    print(questions_eval.table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
