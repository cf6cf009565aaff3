"""services.replacement: which current memory a change most likely replaces. Pure arithmetic over
hand-made vectors; the write path that feeds it real ones is tested in test_related_changes."""

import numpy as np

from memoryapp.services import replacement


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def held(text: str, vector: np.ndarray, *sources: str) -> replacement.Held:
    return replacement.Held(text, vector, frozenset(sources))


FAMILIES = np.array([[0.9, 0.1], [0.9, 0.1], [0.1, 0.9], [0.1, 0.9]], dtype=np.float32)


def rows(olds, new_vector, message_vector) -> np.ndarray:
    return replacement.features(
        new=held("The user upgraded to a RAV4.", new_vector), message_text="Upgraded to a RAV4 once the baby came",
        message_vector=message_vector, olds=olds, new_families=FAMILIES[0], old_families=FAMILIES[1 : 1 + len(olds)])


def test_the_margin_is_taken_against_memories_of_other_messages_only():
    car, car_again, dog = unit(1, 0.2, 0), unit(1, 0.3, 0), unit(0, 0, 1)
    olds = [held("The user drives a Yaris.", car, "e1"), held("The user's car is a Yaris.", car_again, "e1"),
            held("The user has a dog.", dog, "e2")]
    features = rows(olds, unit(1, 0.25, 0.1), unit(1, 0, 0.1))
    cosine, margin = replacement.REPLACEMENT_FEATURES.index("cosine"), replacement.REPLACEMENT_FEATURES.index(
        "cosine margin")
    # the two car memories came from one message: each is measured against the dog alone (or the floor)
    rival = max(float(features[2, cosine]), replacement.MARGIN_FLOOR)
    assert features[0, margin] == np.float32(features[0, cosine] - rival)
    assert features[1, margin] == np.float32(features[1, cosine] - rival)
    assert features[2, margin] < 0


def test_a_memory_held_alone_is_measured_against_the_floor():
    lone = [held("The user lives in Leeds.", unit(1, 1, 0), "e1")]
    features = rows(lone, unit(1, 0.8, 0.3), unit(1, 0.5, 0.5))
    cosine, margin = replacement.REPLACEMENT_FEATURES.index("cosine"), replacement.REPLACEMENT_FEATURES.index(
        "cosine margin")
    assert features[0, margin] == np.float32(features[0, cosine] - replacement.MARGIN_FLOOR)


def test_the_memory_clearly_nearest_to_the_change_is_the_likeliest_replaced():
    olds = [held("The user drives a little Yaris.", unit(1, 0.9, 0.3), "e1"),
            held("The user has a dog named Rex.", unit(0, 1, 1), "e2"),
            held("The user is allergic to penicillin.", unit(0.2, 0, 1), "e3")]
    likelihood = replacement.probabilities(rows(olds, unit(1, 1, 0), unit(1, 0.8, 0)))
    assert int(np.argmax(likelihood)) == 0 and likelihood[0] > 0.5 > max(likelihood[1:])


def test_content_words_are_counted_once_and_without_fillers():
    assert replacement.content_stems("The user's household has the kittens and the kitten") == {"kitten"}


def test_the_likeliest_is_replaced_at_the_bar_or_when_it_is_clearly_the_one():
    bar = 0.7
    assert replacement.most_likely_replaced(np.array([0.2, 0.75, 0.1]), bar) == 1  # at the bar
    # under the bar: far likelier than every other candidate, it is the one the change replaces...
    assert replacement.most_likely_replaced(np.array([0.64, 0.05, 0.2]), bar) == 0
    # ...but not when another is nearly as likely, nor when none is likely enough
    assert replacement.most_likely_replaced(np.array([0.64, 0.3]), bar) is None
    assert replacement.most_likely_replaced(np.array([0.5, 0.01]), bar) is None
    assert replacement.most_likely_replaced(np.array([]), bar) is None
