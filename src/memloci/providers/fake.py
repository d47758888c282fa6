"""Deterministic fake embedder for tests (layer: providers).

``FakeEmbedder`` needs no model: it hashes lower-cased alphanumeric word unigrams into
a ``dimension``-sized float32 vector with a stable hash (BLAKE2b, not Python's salted
``hash``), so the same text gives the same vector in every process. Texts that share
words have a positive cosine similarity; texts without words map to one fixed unit
vector. Use it in your own tests instead of the real model.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from memloci.errors import ValidationError
from memloci.providers.base import Calibration

_WORD = re.compile(r"[^\W_]+")


class FakeEmbedder:
    """Bag-of-words hashing embedder: deterministic, instant, no dependencies."""

    in_process = True  # embeds in this process: cheap enough for a query to wait on
    # the defaults, but a query sharing a third of its words with a memory (cosine about
    # 0.35) is as much an answer by meaning as a real model's close paraphrase
    calibration = Calibration(answers=0.35)

    def __init__(self, *, dimension: int = 64) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise ValidationError(
                f"dimension must be a positive integer, got {dimension!r}",
                hint="use e.g. dimension=64",
            )
        self._dimension = dimension

    @property
    def model_id(self) -> str:
        return f"fake:{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def __repr__(self) -> str:
        return f"FakeEmbedder(dimension={self._dimension})"

    def _vector(self, text: str) -> npt.NDArray[np.float32]:
        vec = np.zeros(self._dimension, dtype=np.float64)
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            # Always positive weights: texts sharing a word never cancel out.
            vec[value % self._dimension] += 1.0 + (value >> 32) / 2**32
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec[0] = 1.0
            norm = 1.0
        return (vec / norm).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed a batch; returns shape (len(texts), dimension), unit-length rows."""
        if isinstance(texts, str):
            raise ValidationError(
                "embed() takes a sequence of strings, not a single string",
                hint="wrap it in a list, or use embed_query() for one text",
            )
        out = np.empty((len(texts), self._dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValidationError(f"texts[{i}] is a {type(text).__name__}, not a string")
            out[i] = self._vector(text)
        return out

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Embed one query; returns shape (dimension,)."""
        if not isinstance(text, str):
            raise ValidationError(f"query must be a string, got {type(text).__name__}")
        return self._vector(text)


__all__ = ["FakeEmbedder"]
