"""Optimised ONNX models on disk, so a new process loads a model in ~40 ms (layer: providers).

onnxruntime optimises a graph every time it opens it. For the bundled int8 MiniLM that
costs ~0.4 s of every process that embeds (the int8 weights are unpacked to float32 and
pre-packed), which is most of a one-shot ``memloci memory search``. The first process
that opens a model therefore saves onnxruntime's optimised graph, with its weights in a
separate file that later processes map instead of parse, and opens that copy with
optimisation off. The computation is the same graph: embeddings are identical.

Where: ``$MEMLOCI_CACHE_DIR/onnx`` if that variable is set (``off`` turns the cache
off), else ``$XDG_CACHE_HOME/memloci/onnx``, else ``~/.cache/memloci/onnx``; one folder
(35–90 MB) per model, onnxruntime version and machine type. A model is known by its
file's name, size and first and last 64 KiB, not by where it is installed, so every
virtualenv holding the same wheel shares one folder; a new onnxruntime version replaces
the model's old folder, and folders of an older layout of the cache are removed. Safe
across processes: a copy is written to a private folder and renamed into place whole; a
copy that fails its check (the model's output for a probe input, stored beside it) is
deleted and the model opened from its original file. Any failure to write or read the
cache only costs the time it would save.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("memloci.providers")

FORMAT = 2  # bump when what is saved, or how, changes
_OFF = {"", "0", "off", "false", "no", "none"}
_MODEL, _WEIGHTS, _PROBE = "model.onnx", "weights.bin", "probe.npy"
_STALE_TMP_S = 3600.0


def cache_root() -> Path | None:
    """The folder that holds optimised models, or None when the cache is off."""
    raw = os.environ.get("MEMLOCI_CACHE_DIR")
    if raw is not None:
        return None if raw.strip().lower() in _OFF else Path(raw).expanduser() / "onnx"
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError, OSError):  # no home directory (a bare service user)
            return None
    return Path(base).expanduser() / "memloci" / "onnx"


_SAMPLE = 64 * 1024
# a folder of FORMAT 1, named after the model's install path (one per virtualenv)
_OLD_LAYOUT = re.compile(r"[0-9a-f]{12}-[0-9a-f]{16}")


def _names(model: Path, version: str) -> tuple[str, str]:
    """(prefix naming the model, full folder name naming this copy of it). The model is
    named by its content (name, size, first and last 64 KiB), wherever it is installed;
    a copy that matches by name but not by output is rebuilt (the probe check)."""
    size = model.stat().st_size
    digest = hashlib.sha256(f"{model.name}|{size}|".encode())
    with model.open("rb") as f:
        digest.update(f.read(_SAMPLE))
        f.seek(max(0, size - _SAMPLE))
        digest.update(f.read(_SAMPLE))
    prefix = f"v{FORMAT}-{digest.hexdigest()[:12]}"
    ident = f"{version}|{platform.machine()}"
    return prefix, f"{prefix}-{hashlib.sha256(ident.encode()).hexdigest()[:16]}"


def _probe(session: Any) -> Any:
    """The model's first output for a fixed three-token input (a BERT-style graph)."""
    ids = np.array([[101, 7592, 102]], dtype=np.int64)
    feed = {}
    for given in session.get_inputs():
        if given.name == "input_ids":
            feed[given.name] = ids
        elif "mask" in given.name:
            feed[given.name] = np.ones_like(ids)
        else:
            feed[given.name] = np.zeros_like(ids)
    return np.asarray(session.run(None, feed)[0], dtype=np.float32)


def open_session(ort: Any, model: Path, options: Callable[[], Any], *, providers: list[str]) -> Any:
    """An onnxruntime session for ``model``: from the optimised copy when there is a good
    one, else from ``model`` itself (saving the copy for the next process).

    ``options`` makes a fresh ``SessionOptions`` each call (threads, logging); the
    optimisation level is set here. Errors opening ``model`` itself propagate."""
    root = cache_root()
    if root is None:
        return _plain(ort, model, options(), providers)
    try:
        prefix, name = _names(model, ort.__version__)
    except OSError:
        return _plain(ort, model, options(), providers)
    entry = root / name
    if (entry / _PROBE).is_file():
        session = _from_copy(ort, entry, options(), providers)
        if session is not None:
            return session
    return _build(ort, model, options, providers, root, prefix, entry)


def _plain(ort: Any, model: Path, opts: Any, providers: list[str]) -> Any:
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    return ort.InferenceSession(str(model), opts, providers=providers)


def _from_copy(ort: Any, entry: Path, opts: Any, providers: list[str]) -> Any | None:
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        session = ort.InferenceSession(str(entry / _MODEL), opts, providers=providers)
        expected = np.load(entry / _PROBE, allow_pickle=False)
        got = _probe(session)
        if got.shape == expected.shape and np.allclose(got, expected, rtol=0.0, atol=1e-5):
            return session
        log.warning("the optimised model copy in %s gives other results: rebuilding it", entry)
    except Exception as exc:  # a damaged or foreign copy: rebuild it
        log.warning("cannot use the optimised model copy in %s (%s): rebuilding it", entry, exc)
    shutil.rmtree(entry, ignore_errors=True)
    return None


def _build(
    ort: Any,
    model: Path,
    options: Callable[[], Any],
    providers: list[str],
    root: Path,
    prefix: str,
    entry: Path,
) -> Any:
    """Open ``model`` with optimisation on, saving the optimised graph to a private
    folder that is then renamed to ``entry`` whole (another process may win the race)."""
    tmp = root / f".tmp-{entry.name}-{os.getpid()}-{time.monotonic_ns()}"
    try:
        tmp.mkdir(parents=True)
    except OSError as exc:
        log.debug("no optimised model cache (%s): %s", root, exc)
        return _plain(ort, model, options(), providers)
    opts = options()
    opts.optimized_model_filepath = str(tmp / _MODEL)
    opts.add_session_config_entry(
        "session.optimized_model_external_initializers_file_name", _WEIGHTS
    )
    opts.add_session_config_entry(
        "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
    )
    try:
        session = _plain(ort, model, opts, providers)
    except Exception:
        shutil.rmtree(tmp, ignore_errors=True)
        # the model opens without the copy, or its own error is the one to report
        return _plain(ort, model, options(), providers)
    try:
        np.save(tmp / _PROBE, _probe(session), allow_pickle=False)
        os.rename(tmp, entry)
    except Exception as exc:  # placed first by another process, a full disk, a model the
        # probe cannot feed (its own checks report that): the session stands, uncached
        log.debug("optimised model copy not kept: %s", exc)
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        try:
            _drop_stale(root, prefix, keep=entry.name)
        except OSError as exc:  # tidying up is best effort
            log.debug("old optimised model copies not removed: %s", exc)
    return session


def _drop_stale(root: Path, prefix: str, *, keep: str) -> None:
    """Remove older copies of the same model, copies of the cache's older layout and
    abandoned private folders."""
    now = time.time()
    for path in root.iterdir():
        name = path.name
        old_copy = name.startswith(prefix + "-") and name != keep
        old_copy = old_copy or bool(_OLD_LAYOUT.fullmatch(name))
        try:
            abandoned = name.startswith(".tmp-") and now - path.stat().st_mtime > _STALE_TMP_S
        except OSError:
            continue
        if old_copy or abandoned:
            shutil.rmtree(path, ignore_errors=True)


__all__ = ["FORMAT", "cache_root", "open_session"]
