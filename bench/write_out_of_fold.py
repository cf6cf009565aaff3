"""Missed and spurious writes of the whole extractor on the dev split, out of fold: a dev figure that says
what the test split will, so that choices can be made on dev without the test split ever being read.

    .venv/bin/python bench/write_out_of_fold.py [--folds 5] [--offsets 0,0.03] [--whole-path [--examples FILE]]
        [--held-out-parts tr5,tr6]

The classifier weights are trained on the dev split, so the extractor reads dev messages far better than
new ones (sixth session: 1% spurious on dev against 7% on test). Here the dev messages and change pairs
are dealt into folds by id (seeded), each fold's messages are read with weights trained on the other
folds (`memoryapp.services.extract.train` on their files), and every message is read alone, as `evaluate
write-accuracy` sends it: missed = expected facts no candidate's text mentions (by the fact's
must-words), spurious = messages that must yield nothing but yield a candidate (retractions aside: with
nothing to take back they write nothing). Candidates, not stored memories: no database is needed, and
the write path stores what they say. `--offsets` moves both durable thresholds of every fold's weights
by each value, to show what a stricter or looser classifier would trade.

`--held-out-parts tr5,tr6` reads training-only parts (memoryapp/services/extract/training) instead of the
dev folds, with weights trained on the dev split and the other parts: the dev split's rules were written from
its failures, these parts' were not, so their figures are the nearer to what new users meet (about 8 minutes).

`--whole-path` also runs `evaluate write-accuracy` on each fold's dev items under that fold's weights:
messages and change pairs through ingest, extraction and the database, as the test split is measured
(the change pairs' users first hold four facts of the fold's other messages). It prints missed, spurious,
changes recognised and unrelated facts closed over all folds: the dev figure to compare with the test
split's (the eighth session: 75.8% of changes recognised here, 75.7% on the test split). About 35
minutes on two cores, training included. `--examples FILE` writes each fold's examples of what went wrong
(missed, spurious, unrecognised changes, unrelated facts closed: dev items, which tuning may read).
"""

# ruff: noqa: E402  (Django is configured before the project is imported)
from __future__ import annotations

import argparse
import json
import random
import tempfile
from collections import Counter
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


def folds_trained(folds: int, folder: Path) -> list[tuple[classifier.Weights, list, Path]]:
    """(weights trained without the fold, the fold's dev messages, the folder of its dev items) for each fold."""
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
        trained.append((classifier.load(folder / f"{fold}.npz"), write_corpus.messages("dev", held_out), held_out))
        print(f"fold {fold + 1}/{folds} trained", flush=True)
    return trained


def parts_held_out(parts: list[str], folder: Path) -> list[tuple[classifier.Weights, list, Path]]:
    """Weights trained on the dev split and every training part but `parts`, with those parts' messages: the
    rules were never written from them, so the whole extractor reads them as it reads new users."""
    training, held_out = folder / "training", folder / "held-out"
    training.mkdir()
    held_out.mkdir()
    for path in write_corpus.TRAINING_DIR.glob("*.train.jsonl"):
        part = path.name.split("-", 1)[1].removesuffix(".train.jsonl")
        (held_out if part in parts else training).joinpath(path.name).write_bytes(path.read_bytes())
    np.savez_compressed(folder / "held-out.npz", **train.train(training_dir=training))
    return [(classifier.load(folder / "held-out.npz"), write_corpus.messages("train", held_out), held_out)]


def measure(trained: list[tuple[classifier.Weights, list, Path]], offset: float) -> dict[str, int]:
    extractor = RulesExtractor()
    counts = {"expected": 0, "missed": 0, "none": 0, "spurious": 0}
    try:
        for weights, messages, _ in trained:
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


def measure_whole_path(trained: list[tuple[classifier.Weights, list, Path]], examples_file: str = "") -> Counter:
    """Sums of `write_accuracy.run` over the folds, each fold's items under its own weights; with
    `examples_file`, each fold's examples of what went wrong are written there (JSON, one list per fold)."""
    from django.core.management import call_command

    from memoryapp.evaluation import write_accuracy

    call_command("migrate", verbosity=0)
    totals, examples = Counter(), []
    try:
        for number, (weights, _, held_out) in enumerate(trained, start=1):
            classifier._weights = weights
            result = write_accuracy.run(split="dev", corpus_dir=held_out)
            changes = result["changes"]
            examples.append(result["examples"])
            totals.update(expected=result["expected"], missed=result["missed"], none=result["none_messages"],
                          spurious=result["spurious"], pairs=changes["pairs"], recognised=changes["recognised"],
                          held=changes["unrelated_held"], closed=changes["unrelated_closed"])
            print(f"fold {number}/{len(trained)} written: changes recognised {changes['recognised']} of "
                  f"{changes['pairs']}", flush=True)
    finally:
        classifier._weights = None
    if examples_file:
        Path(examples_file).write_text(json.dumps(examples, indent=1, ensure_ascii=False))
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--offsets", default="0", help="comma-separated threshold offsets, e.g. 0,0.03")
    parser.add_argument("--whole-path", action="store_true",
                        help="also write each fold's dev items through the whole write path (changes recognised)")
    parser.add_argument("--examples", default="",
                        help="with --whole-path: write each fold's examples of what went wrong to this JSON file")
    parser.add_argument("--held-out-parts", default="",
                        help="comma-separated training parts (e.g. tr5,tr6): train without them and read their "
                             "messages instead of the dev folds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        if args.held_out_parts:
            trained = parts_held_out(args.held_out_parts.split(","), Path(folder))
        else:
            trained = folds_trained(args.folds, Path(folder))
        if args.whole_path and not args.held_out_parts:
            c = measure_whole_path(trained, args.examples)
            print(f"whole write path, out of fold: missed {c['missed'] / c['expected']:.1%} of {c['expected']} facts, "
                  f"spurious {c['spurious'] / c['none']:.1%} of {c['none']}, changes recognised "
                  f"{c['recognised'] / c['pairs']:.1%} of {c['pairs']} pairs, unrelated facts closed {c['closed']} "
                  f"of {c['held']}", flush=True)
        print(f"{'offset':>7} {'missed':>14} {'spurious':>12}")
        for offset in (float(value) for value in args.offsets.split(",")):
            c = measure(trained, offset)
            print(f"{offset:7.2f} {c['missed'] / c['expected']:7.1%} ({c['missed']:3d}) "
                  f"{c['spurious'] / c['none']:6.1%} ({c['spurious']:2d})   of {c['expected']} facts, "
                  f"{c['none']} none messages", flush=True)


if __name__ == "__main__":
    main()
