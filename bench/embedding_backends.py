"""Embedding backends side by side: fidelity to sentence-transformers float32, query latency, batch rate.

    .venv/bin/python bench/embedding_backends.py [--locomo PATH] [--int8]

Texts: ~450 LoCoMo dev turns and questions (varied lengths, one past the 256-token window). For
each backend (torch float32, torch bfloat16, ONNX Runtime float32, and with --int8 the ONNX export
quantized to int8, dynamic, per channel, MatMul only, the best of the recipes tried) prints the
cosine of its vectors to sentence-transformers float32's (mean and min), the time to embed one
query, and the rate for 1000 short chat messages in batches of EMBEDDING_BATCH_SIZE, on
EMBEDDING_THREADS threads. CPU flags are printed first: compare figures from one machine only.
"""

# ruff: noqa: E402  (Django is configured before the project is imported)
from __future__ import annotations

import argparse
import json
import logging
import re
import tempfile
import time
from pathlib import Path

import numpy as np
from setup_django import setup_django

ROOT = setup_django("bench-embeddings")

from django.conf import settings

from memoryapp import embeddings

SHORT = ["haha ok", "I live in Porto.", "I have a dog named Rex.", "how are you today?", "I'm planning to visit Oslo."]


def locomo_texts(path: Path) -> list[str]:
    conversations = json.loads(path.read_text(encoding="utf-8"))
    turns = [
        turn["text"]
        for conversation in conversations
        for key, session in conversation["conversation"].items()
        if re.fullmatch(r"session_\d+", key)
        for turn in session
    ]
    questions = [qa["question"] for conversation in conversations for qa in conversation["qa"]]
    texts = turns[:: max(1, len(turns) // 300)][:300] + questions[:: max(1, len(questions) // 150)][:150]
    return [*texts, "ok", "thanks!", " ".join(turns[:80])]


def measure(name: str, encode, texts: list[str], reference: np.ndarray) -> None:
    vectors = encode(texts)
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosine = np.sum(vectors * reference, axis=1)
    short = [f"message {i}: {SHORT[i % len(SHORT)]}" for i in range(1000)]
    encode(short[:64])
    started = time.perf_counter()
    encode(short)
    rate = len(short) / (time.perf_counter() - started)
    started = time.perf_counter()
    for _ in range(50):
        encode(["what does her sister like to eat?"])
    query_ms = (time.perf_counter() - started) / 50 * 1000
    fidelity = f"cos mean {cosine.mean():.5f} min {cosine.min():.5f}"
    print(f"{name:<20} {fidelity}   query {query_ms:5.1f} ms   batches {rate:5.0f}/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    locomo = ROOT.parent / "shared" / "data" / "locomo-dev" / "locomo-dev.json"
    parser.add_argument("--locomo", type=Path, default=locomo)
    parser.add_argument("--int8", action="store_true", help="also an int8 (dynamic) quantization of the ONNX export")
    args = parser.parse_args()
    flags = re.findall(r"avx512[a-z_0-9]*|avx2|amx[a-z_]*|avx_vnni", Path("/proc/cpuinfo").read_text())
    print(f"CPU flags: {' '.join(sorted(set(flags)))}; threads {settings.EMBEDDING_THREADS}")
    texts = locomo_texts(args.locomo)

    import torch
    from sentence_transformers import SentenceTransformer

    if settings.EMBEDDING_THREADS:
        torch.set_num_threads(settings.EMBEDDING_THREADS)
    batch = settings.EMBEDDING_BATCH_SIZE
    models = {
        dtype: SentenceTransformer(str(embeddings.model_path()), device="cpu", model_kwargs={"torch_dtype": dtype})
        for dtype in (torch.float32, torch.bfloat16)
    }
    reference = models[torch.float32].encode(texts, batch_size=batch, normalize_embeddings=True)
    print(f"{len(texts)} texts; reference: sentence-transformers float32")
    for dtype, model in models.items():
        measure(f"torch {str(dtype)[6:]}", lambda t, m=model: m.encode(t, batch_size=batch), texts, reference)

    settings.EMBEDDING_BACKEND = "onnx"
    onnx = embeddings._load_onnx()
    measure("onnxruntime float32", lambda t: onnx.encode(t, batch, settings.EMBEDDING_BATCH_TOKENS), texts, reference)
    if args.int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        layout = embeddings._onnx_layout(embeddings.model_path())
        with tempfile.TemporaryDirectory() as folder:
            quantized = Path(folder) / "int8.onnx"
            logging.disable(logging.WARNING)  # the quantizer logs every tensor it leaves in float32
            quantize_dynamic(
                embeddings._onnx_file(layout),
                quantized,
                weight_type=QuantType.QInt8,
                per_channel=True,
                op_types_to_quantize=["MatMul"],
            )
            int8 = embeddings.OnnxEncoder(quantized, layout, settings.EMBEDDING_THREADS)
            tokens = settings.EMBEDDING_BATCH_TOKENS
            measure("onnxruntime int8", lambda t: int8.encode(t, batch, tokens), texts, reference)


if __name__ == "__main__":
    main()
