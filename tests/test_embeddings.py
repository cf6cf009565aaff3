import numpy as np

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
