"""Missed and spurious writes of the whole extractor on the dev split, out of fold: a dev figure that says
what the test split will, so that choices can be made on dev without the test split ever being read.

    .venv/bin/python bench/write_out_of_fold.py [--folds 5] [--offsets 0,0.03]

The classifier weights are trained on the dev split, so the extractor reads dev messages far better than
new ones (sixth session: 1% spurious on dev against 7% on test). Here the dev messages and change pairs
are dealt into folds by id (seeded), each fold's messages are read with weights trained on the other
folds (`memoryapp.services.extract.train` on their files), and every message is read alone, as `evaluate
write-accuracy` sends it: missed = expected facts no candidate's text mentions (by the fact's
must-words), spurious = messages that must yield nothing but yield a candidate (retractions aside: with
nothing to take back they write nothing). Candidates, not stored memories: no database is needed, and
the write path stores what they say. `--offsets` moves both durable thresholds of every fold's weights
by each value, to show what a stricter or looser classifier would trade.
"""

# ruff: noqa: E402  (Django is configured before the project is imported)
from __future__ import annotations

import argparse
import json
import random
import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from setup_django import setup_django

setup_django("bench-write-out-of-fold")

from memoryapp.evaluation import write_corpus
from memoryapp.services.extract import classifier, train
from memoryapp.services.extract.base import EpisodeInput
from memoryapp.services.extract.rules import RulesExtractor

WRITTEN_AT = datetime(2025, 6, 2, 10, tzinfo=UTC)


def folds_trained(folds: int, folder: Path) -> list[tuple[classifier.Weights, list]]:
    """(weights trained without the fold, the fold's dev messages) for each fold."""
    items: dict[str, list[tuple[str, str]]] = {}
    for path in sorted(write_corpus.CORPUS_DIR.glob("*.dev.jsonl")):
        kind = path.name.split("-")[0]  # messages, changes
        items.setdefault(kind, []).extend(
            (json.loads(line)["id"], line) for line in path.read_text().splitlines() if line.strip())
    fold_of = {item_id: random.Random(f"fold-{item_id}").randrange(folds)
               for lines in items.values() for item_id, _ in lines}
    trained = []
    for fold in range(folds):
        training, held_out = folder / f"{fold}-train", folder / f"{fold}-held-out"
        for directory, in_fold in ((training, False), (held_out, True)):
            directory.mkdir()
            for kind, lines in items.items():
                chosen = [line for item_id, line in lines if (fold_of[item_id] == fold) == in_fold]
                (directory / f"{kind}-x.dev.jsonl").write_text("\n".join(chosen) + "\n")
        np.savez_compressed(folder / f"{fold}.npz", **train.train(training))
        trained.append((classifier.load(folder / f"{fold}.npz"), write_corpus.messages("dev", held_out)))
        print(f"fold {fold + 1}/{folds} trained", flush=True)
    return trained


def measure(trained: list[tuple[classifier.Weights, list]], offset: float) -> dict[str, int]:
    extractor = RulesExtractor()
    counts = {"expected": 0, "missed": 0, "none": 0, "spurious": 0}
    try:
        for weights, messages in trained:
            classifier._weights = replace(weights, durable_threshold=weights.durable_threshold + offset,
                                          plain_threshold=weights.plain_threshold + offset)
            for message in messages:
                texts = [c.text for c in extractor.extract([EpisodeInput(message.text, WRITTEN_AT)], subject="eval-1")
                         if c.relation != "retract"]
                if message.family == "none":
                    counts["none"] += 1
                    counts["spurious"] += bool(texts)
                    continue
                for fact in message.facts:
                    counts["expected"] += 1
                    counts["missed"] += not any(write_corpus.mentions(text, fact.must) for text in texts)
    finally:
        classifier._weights = None  # the shipped weights again
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--offsets", default="0", help="comma-separated threshold offsets, e.g. 0,0.03")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        trained = folds_trained(args.folds, Path(folder))
        print(f"{'offset':>7} {'missed':>14} {'spurious':>12}")
        for offset in (float(value) for value in args.offsets.split(",")):
            c = measure(trained, offset)
            print(f"{offset:7.2f} {c['missed'] / c['expected']:7.1%} ({c['missed']:3d}) "
                  f"{c['spurious'] / c['none']:6.1%} ({c['spurious']:2d})   of {c['expected']} facts, "
                  f"{c['none']} none messages", flush=True)


if __name__ == "__main__":
    main()
