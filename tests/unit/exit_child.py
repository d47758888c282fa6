"""A program that ends without ``close()`` while consolidation is queued:
``python exit_child.py DB``. Its embedder embeds on a thread pool, as the bundled
models do, so work still running at exit meets pools that refuse new futures."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

from memloci import Memory
from memloci.providers.fake import FakeEmbedder


class PooledEmbedder(FakeEmbedder):
    """The fake embedder, run in chunks on a thread pool and as slowly as a small model
    on a busy machine (like the ONNX models), so consolidation is still at work at exit."""

    def _chunk(self, texts: list[str]) -> npt.NDArray[np.float32]:
        time.sleep(0.02)
        return FakeEmbedder.embed(self, texts)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return FakeEmbedder.embed(self, texts)
        chunks = [list(texts[i : i + 4]) for i in range(0, len(texts), 4)]
        with ThreadPoolExecutor(2) as pool:
            futures = [pool.submit(self._chunk, chunk) for chunk in chunks]
            return np.concatenate([f.result() for f in futures])


if __name__ == "__main__":
    mem = Memory(sys.argv[1], embedder=PooledEmbedder())
    for user in range(60):
        for session in range(3):
            mem.add(
                f"I moved to Porto in 201{session} and my sister Ana lives in Braga",
                user=f"u{user}", session=f"s{session}",
            )  # fmt: skip
    time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0.3)  # consolidation runs
    print("leaving without close()", flush=True)
