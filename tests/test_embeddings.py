import json
import os
import subprocess
import sys
from pathlib import Path

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


def _varied_sentences() -> list[str]:
    """Some 300 sentences of every shape users send: the evaluation corpus's messages (dev splits),
    a few words, punctuation, accents, one text longer than the model's 256-token window."""
    corpus = Path(embeddings.__file__).parent / "evaluation" / "corpus"
    texts = [json.loads(line)["text"] for name in "abcd" for line in (corpus / f"messages-{name}.dev.jsonl").open()]
    texts = texts[:: max(1, len(texts) // 280)]
    texts += ["ok", "lol", "thanks!", "I'm vegetarian.", "Café in Zürich — naïve résumé?", "   ", "😀 🎉"]
    texts.append(" ".join(texts[:60]))  # past 256 tokens: both backends must cut it at the same place
    return texts


def _sentence_transformers_float32(texts: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(embeddings.model_path()), device="cpu")
    return reference.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)


def test_onnx_backend_gives_sentence_transformers_float32_vectors(settings, monkeypatch):
    """The ONNX Runtime backend (the default on CPUs without bfloat16) reproduces sentence-transformers'
    float32 vectors, so search behaves the same whichever backend embedded the query or the store."""
    settings.EMBEDDING_BACKEND = "onnx"
    monkeypatch.setattr(embeddings, "_model", None)
    texts = _varied_sentences()
    assert len(texts) > 250
    vectors = embeddings.encode(texts)
    assert (embeddings.loaded_backend(), embeddings.loaded_precision()) == ("onnx", "float32")
    agreement = np.sum(vectors * _sentence_transformers_float32(texts), axis=1)
    assert agreement.min() > 0.9999, (agreement.min(), texts[int(agreement.argmin())])
    assert np.allclose(embeddings.encode_one(texts[5]), vectors[5], atol=1e-5)  # alone as in a batch


def test_auto_backend_is_torch_in_bfloat16_only_where_that_was_measured_faster(settings, monkeypatch, client):
    settings.EMBEDDING_BACKEND = settings.EMBEDDING_PRECISION = "auto"
    texts = ["I moved to Lisbon last spring.", "What instrument does her sister play?", "allergic to peanuts"]
    vectors = {}
    for faster, expected in ((False, ("onnx", "float32")), (True, ("torch", "bfloat16"))):
        monkeypatch.setattr(embeddings, "_bfloat16_measured_faster", lambda faster=faster: faster)
        monkeypatch.setattr(embeddings, "_model", None)
        vectors[expected] = embeddings.encode(texts)
        assert (embeddings.loaded_backend(), embeddings.loaded_precision()) == expected
        health = client.get("/healthz").json()["embedding_model"]
        assert (health["backend"], health["precision"]) == expected
    # A store embedded by one machine is searched by the other's queries: the vectors must agree.
    assert np.all(np.sum(vectors["onnx", "float32"] * vectors["torch", "bfloat16"], axis=1) > 0.999)


def test_bfloat16_is_measured_against_float32_once_per_cpu_and_data_folder(settings, monkeypatch, tmp_path):
    """Native bfloat16 is twice as fast as ONNX Runtime's float32 on some CPUs and half as fast on others:
    the first load on a bfloat16 CPU times both and keeps the answer; later loads read it, and another
    CPU measures again."""
    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(embeddings, "_bfloat16_is_native", lambda: True)
    monkeypatch.setattr(embeddings, "_cpu_flags", lambda: {"avx2", "avx512_bf16"})
    faster = embeddings._bfloat16_measured_faster()
    [record] = (tmp_path / "embedding-cache").glob("bfloat16-*.json")
    timings = json.loads(record.read_text())
    assert timings["float32_backend"] == "onnx"
    assert 0 < timings["float32_ms"] < 60_000 and 0 < timings["bfloat16_ms"] < 60_000
    assert faster == (timings["bfloat16_ms"] < timings["float32_ms"])

    def no_load(*args):
        raise AssertionError("measured again")

    monkeypatch.setattr(embeddings, "_load_torch", no_load)
    monkeypatch.setattr(embeddings, "_load_onnx", no_load)
    record.write_text(json.dumps({**timings, "bfloat16_ms": 1.0, "float32_ms": 2.0}))
    assert embeddings._bfloat16_measured_faster() is True  # read back, not measured
    monkeypatch.setattr(embeddings, "_cpu_flags", lambda: {"avx2"})
    assert embeddings._bfloat16_measured_faster() is False  # no native bfloat16: nothing to measure
    monkeypatch.setattr(embeddings, "_cpu_flags", lambda: {"avx2", "avx512_bf16", "amx_bf16"})
    with pytest.raises(AssertionError, match="measured again"):
        embeddings._bfloat16_measured_faster()  # another CPU: its own measurement


def test_onnx_export_is_made_once_and_reused_without_torch(settings, monkeypatch, tmp_path):
    """The first load exports the packaged model to ONNX under the data folder; a later process loads
    that file and starts without importing torch at all (about 3.5 s and 300 MiB saved)."""
    settings.DATA_DIR = tmp_path
    settings.EMBEDDING_BACKEND = "onnx"
    monkeypatch.setattr(embeddings, "_model", None)
    embeddings.warm_up()
    exports = list((tmp_path / "embedding-cache").glob("*.onnx"))
    assert len(exports) == 1, exports
    code = (
        "import sys, django; django.setup(); from memoryapp import embeddings; "
        "v = embeddings.encode(['I moved to Lisbon last spring.']); "
        "print(embeddings.loaded_backend(), 'torch' in sys.modules, v.shape[1])"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(embeddings.__file__).parent.parent,
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "memoryapp.settings",
            "MEMORYAPP_DATA_DIR": str(tmp_path),
            "EMBEDDING_BACKEND": "onnx",
            "DATABASE_URL": "postgres://x@localhost/x",
            "REDIS_URL": "redis://localhost:1/0",
        },
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["onnx", "False", "384"]
    assert list((tmp_path / "embedding-cache").glob("*.onnx")) == exports  # reused, not exported again


def test_bfloat16_with_the_onnx_backend_is_refused_by_name(settings):
    settings.EMBEDDING_BACKEND, settings.EMBEDDING_PRECISION = "onnx", "bfloat16"
    with pytest.raises(ValueError, match="EMBEDDING_BACKEND=onnx computes in float32"):
        embeddings.precision()
    settings.EMBEDDING_BACKEND = "tensorflow"
    with pytest.raises(ValueError, match="EMBEDDING_BACKEND must be one of .* not 'tensorflow'"):
        embeddings.backend()
