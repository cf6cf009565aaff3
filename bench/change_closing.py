"""Fits the model that decides whether a change ends an old memory kept in another slot
(services.apply.REPLACEMENT_MODEL) and prints how it separates replaced values from unrelated facts.

    .venv/bin/python bench/change_closing.py [--split dev] [--folds 4]

Data: the corpus' change pairs of the split (dev: the model is never fitted on test), each sent to a
fresh user who first holds four unrelated facts, as `evaluate write-accuracy` does. Cross-fitted: the
corpus parts are dealt into folds, and each fold's pairs are written with classifier weights trained on
the other folds' dev files, so that the family model is as unsure of them as it is of sentences it never
saw (with the shipped weights, trained on these very pairs, their families would agree far too well).
For every memory the change wrote that names the new value, and every memory the user held before it:
the pair is labelled *replaced* when the old memory names the pair's old value, *unrelated* when it names
one of the four facts (others are left out). Features: their cosine, how much their fact families agree
(the dot product of the family model's probabilities), whether their likeliest families are the same.
Prints each feature's AUC, the out-of-fold AUC of the logistic model, its coefficients
(REPLACEMENT_MODEL), and, for bars from 0.3 to 0.9, how many pairs whose old value the rest of the write
path left current the model would end, against how many unrelated facts, closing each change's
best-scoring memory.
"""

# ruff: noqa: E402  (Django is configured before the project is imported)
from __future__ import annotations

import argparse
import shutil
import tempfile
import uuid
from datetime import timedelta
from pathlib import Path

import numpy as np
from setup_django import setup_django

setup_django("bench-change-closing")

from django.core.management import call_command

from memoryapp.evaluation import write_accuracy, write_corpus
from memoryapp.models import Memory, Organization
from memoryapp.selectors.scoping import valid_at
from memoryapp.services import apply
from memoryapp.services.extract import classifier, train


def _part(item_id: str) -> str:
    return item_id.split("-", 1)[0]


def pairs_cross_fitted(split: str, folds: int) -> list[dict]:
    """pairs_written for each fold of corpus parts, under weights trained without that fold's dev files."""
    pairs = write_corpus.changes(split)
    facts = [m for m in write_corpus.messages(split) if m.family != "none"]
    parts = sorted({_part(pair.id) for pair in pairs})
    found = []
    try:
        for fold in range(folds):
            held_out = set(parts[fold::folds])
            with tempfile.TemporaryDirectory() as folder:
                for path in write_corpus.CORPUS_DIR.glob("*.dev.jsonl"):
                    if path.name.split(".")[0].rsplit("-", 1)[1] not in held_out:
                        shutil.copy(path, Path(folder) / path.name)
                weights = Path(folder) / "weights.npz"
                np.savez_compressed(weights, **train.train(Path(folder)))
                classifier._weights = classifier.load(weights)
            print(f"fold {fold + 1}/{folds}: parts {', '.join(sorted(held_out))} held out")
            for written in pairs_written([pair for pair in pairs if _part(pair.id) in held_out], facts):
                olds = [memory for memory, _, _ in written["old"]]
                # Under this fold's weights: the family model must not have seen the pair.
                written["features"] = [features(new, olds) for new in written["new"]] if olds else []
                found.append(written)
    finally:
        classifier._weights = None  # the shipped weights again
    return found


def pairs_written(pairs: list, facts: list) -> list[dict]:
    """Per change pair: the new value's memories, and the user's memories before it with their label."""
    organization = Organization.objects.create(name=f"bench-change-closing-{uuid.uuid4().hex[:8]}")
    found = []
    bar, apply.REPLACEMENT_BAR = apply.REPLACEMENT_BAR, 2.0  # the model off: "current" is what the rest left
    try:
        writer = write_accuracy._Writer(organization, write_accuracy.extractor_for("rules"))
        changed_at = write_accuracy.CHANGE_FROM + timedelta(days=write_accuracy.CHANGE_AFTER_DAYS)
        for pair in pairs:
            user = writer.user()
            others = write_accuracy._distractors(pair, facts)
            for other in others:
                writer.send(user, other.text, write_accuracy.CHANGE_FROM - timedelta(days=1), "s0")
            writer.send(user, pair.before, write_accuracy.CHANGE_FROM, "s1")
            held = list(Memory.objects.filter(user=user, status=Memory.Status.ACTIVE))
            writer.send(user, pair.after, changed_at, "s2")
            current = set(valid_at(Memory.objects.filter(user=user)).values_list("id", flat=True))
            new = [m for m in Memory.objects.filter(user=user, valid_from__gte=changed_at)
                   if write_corpus.mentions(m.text, pair.after_must)]
            unrelated = [f.must for m in others for f in m.facts]
            old = []
            for memory in held:
                if write_corpus.mentions(memory.text, pair.before_must):
                    old.append((memory, 1, memory.id in current))
                elif any(write_corpus.mentions(memory.text, must) for must in unrelated):
                    old.append((memory, 0, memory.id in current))
            found.append({"new": new, "old": old})
    finally:
        apply.REPLACEMENT_BAR = bar
        organization.delete()
    return found


def features(new: Memory, olds: list[Memory]) -> np.ndarray:
    texts = [new.text, *(m.text for m in olds)]
    vectors = np.vstack([np.asarray(m.embedding, dtype=np.float32) for m in [new, *olds]])
    probabilities = classifier.family_probabilities(texts, vectors)
    cosines = vectors[1:] @ vectors[0]
    agreement = probabilities[1:] @ probabilities[0]
    same = (probabilities[1:].argmax(axis=1) == probabilities[0].argmax()).astype(np.float32)
    return np.column_stack([cosines, agreement, same])


def main() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="dev", choices=write_corpus.SPLITS)
    parser.add_argument("--folds", type=int, default=4, help="folds of corpus parts for cross-fitting")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    rows, labels, still_current, pair_of = [], [], [], []
    for number, pair in enumerate(pairs_cross_fitted(args.split, args.folds)):
        for row in pair["features"]:
            rows.append(row)
            labels += [label for _, label, _ in pair["old"]]
            still_current += [current for _, _, current in pair["old"]]
            pair_of += [number] * len(pair["old"])
    x, y = np.vstack(rows), np.array(labels)
    current, pair_of = np.array(still_current), np.array(pair_of)
    print(f"{args.split} split: {len(set(pair_of))} pairs, {len(y)} (new, old) memory pairs, {int(y.sum())} replaced")
    for column, name in enumerate(("cosine", "family agreement", "same family")):
        print(f"  AUC of {name:17} {roc_auc_score(y, x[:, column]):.3f}")
    folds = pair_of % 5
    out_of_fold = np.zeros(len(y))
    for fold in range(5):
        model = LogisticRegression(max_iter=2000).fit(x[folds != fold], y[folds != fold])
        out_of_fold[folds == fold] = model.predict_proba(x[folds == fold])[:, 1]
    print(f"  AUC of the model, out of fold {roc_auc_score(y, out_of_fold):.3f}")
    model = LogisticRegression(max_iter=2000).fit(x, y)
    print("REPLACEMENT_MODEL =", tuple(round(float(v), 3) for v in [*model.coef_[0], model.intercept_[0]]))
    print(f"{'bar':>5} {'old values ended that stayed current':>37} {'unrelated facts ended':>22}")
    for bar in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        ended = unrelated = 0
        for number in set(pair_of):
            rows_of = np.where(pair_of == number)[0]
            best = rows_of[np.argmax(out_of_fold[rows_of])]
            if out_of_fold[best] >= bar:
                ended += int(y[best] == 1 and current[best])
                unrelated += int(y[best] == 0)
        print(f"{bar:5.1f} {ended:37d} {unrelated:22d}")


if __name__ == "__main__":
    main()
