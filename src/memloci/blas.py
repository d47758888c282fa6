"""OpenBLAS thread limit (a leaf utility: numpy only).

numpy's OpenBLAS starts one thread per core for every matrix product. On a small
machine shared with other processes (a server, PostgreSQL, other agents) a
multi-threaded product collapses as soon as another process holds a core — a
2000x384 matrix-vector product measured 16 ms with 2 threads under load against
0.2 ms with one. The small products memloci runs on the query path (the embedding
forward pass, vector re-ranking) therefore hold :data:`BLAS` at one thread while they
run; the previous count is restored when the last holder leaves.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np


class _BlasThreads:
    """Process-wide OpenBLAS thread count, lowered while any caller holds the limit."""

    _SYMBOLS = tuple(
        (f"{lib}_set_num_threads{sfx}", f"{lib}_get_num_threads{sfx}")
        for lib in ("scipy_openblas", "openblas")
        for sfx in ("64_", "")
    )

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._api: tuple[Any, Any] | None = None
        self._probed = False
        self._holders = self._saved = 0

    @classmethod
    def _probe(cls) -> tuple[Any, Any] | None:
        """The (setter, getter) of the OpenBLAS numpy uses, if found (best effort)."""
        paths: list[str] = []
        if sys.platform.startswith("linux"):  # every loaded library, wherever it lives
            with contextlib.suppress(OSError), open("/proc/self/maps", "rb") as maps:
                names = {ln.split()[-1].decode(errors="replace") for ln in maps if b"/" in ln}
                paths = sorted(n for n in names if "openblas" in n.lower())
        root = Path(np.__file__).parent
        for folder in (root.parent / "numpy.libs", root / ".dylibs"):
            paths += [str(p) for p in sorted(folder.glob("*openblas*"))]
        for path in paths:
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for set_name, get_name in cls._SYMBOLS:
                setter, getter = getattr(lib, set_name, None), getattr(lib, get_name, None)
                if setter is not None and getter is not None:
                    setter.argtypes, setter.restype = [ctypes.c_int], None
                    getter.argtypes, getter.restype = [], ctypes.c_int
                    return setter, getter
        return None

    @contextmanager
    def limit(self, threads: int) -> Iterator[None]:
        """Run the block with at most ``threads`` BLAS threads (no-op without OpenBLAS)."""
        with self._lock:
            if not self._probed:
                self._api, self._probed = self._probe(), True
            api = self._api
            if api is not None:
                if self._holders == 0:
                    self._saved = api[1]()
                    api[0](threads)
                self._holders += 1
        try:
            yield
        finally:
            if api is not None:
                with self._lock:
                    self._holders -= 1
                    if self._holders == 0:
                        api[0](self._saved)


BLAS = _BlasThreads()

__all__ = ["BLAS"]
