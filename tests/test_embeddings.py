import numpy as np
import pytest

from memoryapp import embeddings


def test_real_model_puts_related_sentences_closer_than_unrelated():
    vectors = embeddings.encode(
        [
            "I am a vegetarian and never eat meat.",
            "She follows a plant-based diet.",
            "The train to Berlin leaves at nine.",
        ]
    )
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    related, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert related > unrelated + 0.2, (related, unrelated)


def test_model_loads_once_per_process():
    embeddings.encode_one("warm up")
    model = embeddings._get_model()
    embeddings.encode(["again", "and again"])
    assert embeddings._get_model() is model


def test_batches_give_the_same_vectors_as_single_calls():
    texts = [f"memory number {i} about coffee" for i in range(40)]
    batched = embeddings.encode(texts)
    assert np.allclose(batched[7], embeddings.encode_one(texts[7]), atol=1e-5)


def test_bfloat16_and_float32_models_give_the_same_vectors(settings, monkeypatch):
    """Stored vectors stay comparable whichever precision a machine picks (EMBEDDING_PRECISION=auto)."""
    texts = ["I moved to Lisbon last spring.", "What instrument does her sister play?", "allergic to peanuts"]
    vectors = {}
    for precision in ("float32", "bfloat16"):
        settings.EMBEDDING_PRECISION = precision
        monkeypatch.setattr(embeddings, "_model", None)
        vectors[precision] = embeddings.encode(texts)
        assert embeddings.loaded_precision() == precision
    agreement = np.sum(vectors["float32"] * vectors["bfloat16"], axis=1)
    assert np.all(agreement > 0.999), agreement
    assert np.allclose(np.linalg.norm(vectors["bfloat16"], axis=1), 1.0, atol=1e-5)


def test_an_unknown_precision_is_refused_by_name(settings):
    settings.EMBEDDING_PRECISION = "float8"
    with pytest.raises(ValueError, match="EMBEDDING_PRECISION must be one of .* not 'float8'"):
        embeddings.precision()
