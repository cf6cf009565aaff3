"""The embeddings' column: what is stored is the vector at half precision, exactly."""

import numpy as np
import pytest

from memoryapp.models import Memory
from memoryapp.models.vectors import HalfVectorField
from tests.factories import make_memory, say


def half(vector) -> np.ndarray:
    return np.asarray(vector.to_numpy() if hasattr(vector, "to_numpy") else vector, dtype=np.float16)


def test_every_half_precision_number_is_sent_as_itself():
    numbers = np.arange(65536, dtype=np.uint16).view(np.float16)
    numbers = numbers[np.isfinite(numbers)]
    sent = HalfVectorField(dimensions=len(numbers)).get_prep_value(numbers.astype(np.float32))
    assert np.array_equal(np.array(sent[1:-1].split(","), dtype=np.float64).astype(np.float16), numbers)


@pytest.mark.django_db
def test_a_memory_and_an_episode_keep_their_vectors_at_half_precision(alice):
    rng = np.random.default_rng(7)
    vector = rng.normal(size=384).astype(np.float32)
    vector /= np.linalg.norm(vector)
    memory = make_memory(alice, "Alice keeps bees.", embedding=vector)
    episode = say(alice, "I keep bees.")
    episode.embedding = vector
    episode.save(update_fields=["embedding"])
    stored = Memory.objects.values_list("embedding", "search_embedding").get(pk=memory.pk)
    assert all(np.array_equal(half(column), vector.astype(np.float16)) for column in stored)
    episode.refresh_from_db()
    assert np.array_equal(half(episode.embedding), vector.astype(np.float16))
