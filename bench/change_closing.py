"""Fits the model that decides which current memory a change ends when no slot says it
(services.replacement) and prints how it separates replaced values from unrelated facts.

    .venv/bin/python bench/change_closing.py [--split dev] [--folds 4]

Data: the corpus' change pairs of the split (dev: the model is never fitted on test), each sent to a
fresh user who first holds four unrelated facts, as `evaluate write-accuracy` does. Cross-fitted: the
corpus parts are dealt into folds, and each fold's pairs are written with classifier weights trained on
the other folds' dev files, so that the family model is as unsure of them as it is of sentences it never
saw. The model is off while they are written (every bar above 1): "current" is what the rest of the write
path left current.

For every memory the later message wrote, the candidates are those services.apply would look at (the
user's memories nearest to it and nearest to the message); a candidate is *replaced* when it names the
pair's old value, *unrelated* when it names one of the four facts, and left out of the fit otherwise.
Prints each feature's AUC, the out-of-fold AUC of the logistic model (folds by pair), its weights
(REPLACEMENT_WEIGHTS, REPLACEMENT_INTERCEPT), and for bars from 0.3 to 0.8 how many pairs whose old value
the rest of the write path left current the model would end, against how many unrelated facts and other
memories it would end, closing each new memory's best-scoring candidate.
"""

# ruff: noqa: E402  (Django is configured before the project is imported)
from __future__ import annotations

import argparse
import shutil
import tempfile
import uuid
import zlib
from pathlib import Path

import numpy as np
from setup_django import setup_django

setup_django("bench-change-closing")

from django.core.management import call_command

from memoryapp import embeddings
from memoryapp.evaluation import write_accuracy, write_corpus
from memoryapp.models import Memory, Organization
from memoryapp.selectors.scoping import valid_at
from memoryapp.services import apply, replacement
from memoryapp.services.extract import classifier, train

BARS = ("REPLACEMENT_BAR", "HEARD_CHANGE_BAR", "NAMED_PERSON_BAR")


def pairs_cross_fitted(split: str, folds: int) -> list[dict]:
    """pairs_written for each fold of corpus parts, under weights trained without that fold's dev files."""
    pairs = write_corpus.changes(split)
    facts = [m for m in write_corpus.messages(split) if m.family != "none"]
    parts = sorted({train.writer_of(pair.id) for pair in pairs})
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
            print(f"fold {fold + 1}/{folds}: parts {', '.join(sorted(held_out))} held out", flush=True)
            found += pairs_written([pair for pair in pairs if train.writer_of(pair.id) in held_out], facts)
    finally:
        classifier._weights = None  # the shipped weights again
    return found


def pairs_written(pairs: list, facts: list) -> list[dict]:
    """Per change pair and memory the later message wrote: the features of the candidates it might end,
    their labels (1 replaced, 0 unrelated, -1 other) and whether the rest of the write path left them current."""
    organization = Organization.objects.create(name=f"bench-change-closing-{uuid.uuid4().hex[:8]}")
    found = []
    bars = {name: getattr(apply, name) for name in BARS}
    for name in BARS:
        setattr(apply, name, 2.0)  # the model off
    try:
        writer = write_accuracy._Writer(organization, write_accuracy.extractor_for("rules"))
        for pair in pairs:
            user, others = writer.pair_begun(pair, facts)
            held = Memory.objects.filter(id__in=list(Memory.objects.filter(  # what was held before the change
                user=user, status=Memory.Status.ACTIVE, kind=Memory.Kind.SEMANTIC).values_list("id", flat=True)))
            writer.pair_ended(user, pair)
            current = set(valid_at(Memory.objects.filter(user=user)).values_list("id", flat=True))
            unrelated = [f.must for m in others for f in m.facts]
            message_vector = embeddings.encode([pair.after])[0]
            for new in Memory.objects.filter(user=user, valid_from__gte=write_accuracy.CHANGED_AT,
                                             status=Memory.Status.ACTIVE):
                # as services.apply.related_close looks
                theirs = held.filter(apply.subject_and_their_people(new.subject))
                olds = apply.replacement_candidates(theirs, new.embedding, message_vector)
                if not olds:
                    continue
                labels = [1 if write_corpus.mentions(m.text, pair.before_must)
                          else 0 if any(write_corpus.mentions(m.text, must) for must in unrelated) else -1
                          for m in olds]
                found.append({"pair": pair.id, "labels": np.array(labels),
                              "current": np.array([m.id in current for m in olds]),
                              "features": features(new, olds, pair.after, message_vector)})
    finally:
        for name, bar in bars.items():
            setattr(apply, name, bar)
        organization.delete()
    return found


def features(new: Memory, olds: list[Memory], message: str, message_vector: np.ndarray) -> np.ndarray:
    """services.replacement's features, as services.apply computes them (the users here have no name)."""
    vectors = np.vstack([np.asarray(m.embedding, dtype=np.float32) for m in [new, *olds]])
    return apply.replacement_rows([new.text, *(m.text for m in olds)], vectors, olds, (message, message_vector))


def main() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="dev", choices=write_corpus.SPLITS)
    parser.add_argument("--folds", type=int, default=4, help="folds of corpus parts for cross-fitting")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    written = pairs_cross_fitted(args.split, args.folds)
    x = np.vstack([w["features"] for w in written])
    y = np.concatenate([w["labels"] for w in written])
    group = np.concatenate([[number] * len(w["labels"]) for number, w in enumerate(written)])
    fold = np.array([zlib.crc32(written[number]["pair"].encode()) % 5 for number in group])
    labelled = y >= 0
    stuck = {w["pair"] for w in written if ((w["labels"] == 1) & w["current"]).any()}
    print(f"{args.split} split: {len({w['pair'] for w in written})} pairs, {int(labelled.sum())} labelled "
          f"(new, old) memory pairs, {int((y == 1).sum())} replaced; {len(stuck)} pairs whose old value the "
          "rest of the write path left current")
    for column, name in enumerate(replacement.REPLACEMENT_FEATURES):
        print(f"  AUC of {name:22} {roc_auc_score(y[labelled], x[labelled, column]):.3f}")
    out_of_fold = np.zeros(len(y))
    for held_out in range(5):
        fitting = labelled & (fold != held_out)
        model = LogisticRegression(max_iter=3000).fit(x[fitting], y[fitting])
        out_of_fold[fold == held_out] = model.predict_proba(x[fold == held_out])[:, 1]
    print(f"  AUC of the model, out of fold {roc_auc_score(y[labelled], out_of_fold[labelled]):.3f}")
    model = LogisticRegression(max_iter=3000).fit(x[labelled], y[labelled])
    print("REPLACEMENT_WEIGHTS =", tuple(round(float(v), 2) for v in model.coef_[0]))
    print("REPLACEMENT_INTERCEPT =", round(float(model.intercept_[0]), 2))
    print(f"{'bar':>5} {'pairs whose current old value ends':>35} {'unrelated facts ended':>22} {'others ended':>13}")
    for bar in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
        ended, unrelated, other = set(), 0, 0
        for number, w in enumerate(written):
            scores = out_of_fold[group == number]
            best = int(np.argmax(scores))
            if scores[best] >= bar:
                if w["labels"][best] == 1 and w["current"][best]:
                    ended.add(w["pair"])
                unrelated += int(w["labels"][best] == 0)
                other += int(w["labels"][best] == -1)
        print(f"{bar:5.1f} {len(ended):35d} {unrelated:22d} {other:13d}")


if __name__ == "__main__":
    main()
