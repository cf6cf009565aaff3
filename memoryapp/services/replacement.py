"""Which of a user's current memories a change replaces, when no slot says it: "Upgraded to a RAV4 once
the baby arrived" ends "The user drives a little Toyota Yaris.", "cancelled my gym membership and joined
a crossfit box" ends "The user goes to PureGym near their flat.".

A logistic model over REPLACEMENT_FEATURES of (new memory, old memory, the message that said the change).
The two texts often share few words and a low cosine (MiniLM does not know a RAV4 from a Yaris): what
tells the replaced memory is that it is the one the new memory and the whole message are *nearest to*,
clearly nearer than the user's other memories, and of the same kind of fact. Fitted on the dev split's
change pairs, cross-fitted, by `bench/change_closing.py`, which prints the table behind the numbers.
Pure arithmetic over what the caller loaded: no database here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memoryapp.services.extract.grammar import stem

REPLACEMENT_FEATURES = (
    "cosine",  # new memory and old memory
    "message cosine",  # the whole message that said the change and the old memory
    "cosine margin",  # the cosine less the best of the user's memories from other messages
    "message cosine margin",
    "family agreement",  # dot product of the fact-family model's probabilities of the two memories
    "same family",  # their likeliest families are the same
    "shared words",  # content words of the new memory or the message also in the old memory
)
# bench/change_closing.py, dev split (648 pairs, 4,619 labelled candidates), cross-fitted. Out of fold the
# margin to the message separates replaced values from unrelated facts best (AUC 0.979; cosine alone 0.907),
# the model 0.990 (the cosine-and-family model before it: 0.940).
REPLACEMENT_WEIGHTS = (-1.14, 4.03, 7.22, 8.11, 2.5, 2.08, 0.36)
REPLACEMENT_INTERCEPT = -0.3
# A margin is taken over at least this: a user who holds little else ("I live in Leeds." alone) would
# otherwise see any change as clearly nearest to it ("I've moved like 9 times, army family"). On dev the
# replaced memory's best rival scores 0.27 (median); the floor cost 9 of 236 old values ended at 0.6.
MARGIN_FLOOR = 0.3

_WORD = re.compile(r"[a-z0-9']+")
_NOT_CONTENT = frozenset(
    "the a an of in at to for and with my not user user's is are was has have had their them they household"
    " household's been be on from this that it its it's now so but".split()
)


@dataclass(frozen=True)
class Held:
    """A current memory as the model reads it."""

    text: str
    vector: np.ndarray
    sources: frozenset  # the ids of the episodes it was written from


def content_stems(text: str) -> set[str]:
    return {stem(word) for word in _WORD.findall(text.lower()) if word not in _NOT_CONTENT and len(word) > 2}


def features(*, new: Held, message_text: str, message_vector: np.ndarray, olds: Sequence[Held],
             new_families: np.ndarray, old_families: np.ndarray) -> np.ndarray:
    """One row of REPLACEMENT_FEATURES per old memory. The families are the family model's
    probabilities (classifier.family_probabilities) of the new memory and of each old one."""
    if not olds:
        return np.zeros((0, len(REPLACEMENT_FEATURES)), dtype=np.float32)
    vectors = np.vstack([old.vector for old in olds]).astype(np.float32)
    cosines = vectors @ np.asarray(new.vector, dtype=np.float32)
    message_cosines = vectors @ np.asarray(message_vector, dtype=np.float32)
    said = content_stems(f"{new.text} {message_text}")
    rows = []
    for i, old in enumerate(olds):
        # Margins against memories of other messages: what the same message wrote beside the old value says
        # the same kind of thing and must not hide it.
        others = [j for j, other in enumerate(olds) if j != i and not (other.sources & old.sources)]
        best_other = max([float(cosines[j]) for j in others], default=0.0)
        best_other_message = max([float(message_cosines[j]) for j in others], default=0.0)
        rows.append([
            float(cosines[i]),
            float(message_cosines[i]),
            float(cosines[i]) - max(best_other, MARGIN_FLOOR),
            float(message_cosines[i]) - max(best_other_message, MARGIN_FLOOR),
            float(new_families @ old_families[i]),
            float(new_families.argmax() == old_families[i].argmax()),
            float(len(said & content_stems(old.text))),
        ])
    return np.array(rows, dtype=np.float32)


def probabilities(rows: np.ndarray) -> np.ndarray:
    """How likely each old memory is the one replaced."""
    scores = rows @ np.asarray(REPLACEMENT_WEIGHTS, dtype=np.float32) + REPLACEMENT_INTERCEPT
    return 1 / (1 + np.exp(-scores))


# Under the caller's bar, a candidate far likelier than every other one looked at is the one replaced. Dev pairs
# written under weights trained without them, each user holding four unrelated facts (logged likelihoods): 15 more
# old values ended for 4 other memories at 0.6 and 0.4; 22 for 9 at 0.5 and 0.4; 27 for 11 at 0.5 and 0.3.
CLEAR_FLOOR = 0.6
CLEAR_GAP = 0.4


def most_likely_replaced(likelihood: np.ndarray, bar: float, *, clear_gap_suffices: bool = True) -> int | None:
    """The index of the old memory replaced, if any: the likeliest, when at least `bar` likely or (unless
    `clear_gap_suffices` is false) clearly the one (at least CLEAR_FLOOR, and CLEAR_GAP above every other)."""
    if len(likelihood) == 0:
        return None
    best = int(np.argmax(likelihood))
    runner_up = max((float(p) for i, p in enumerate(likelihood) if i != best), default=0.0)
    clearly_the_one = likelihood[best] >= CLEAR_FLOOR and likelihood[best] - runner_up >= CLEAR_GAP
    return best if likelihood[best] >= bar or (clear_gap_suffices and clearly_the_one) else None
