"""The ``local`` embedder (layer: providers): ``embedder="local"`` picks a runner.

The default is the bundled int8 bge-small-en; with ``model_path=`` a MiniLM: the numpy
float32 runner for a folder of safetensors weights, onnxruntime for an ONNX export. The
runners are imported only when chosen.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memloci.providers.base import Embedder


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
            from memloci.providers.minilm_fp32 import MiniLMFp32Embedder

            return MiniLMFp32Embedder(model_path=str(path), **options)
    if model_path is None:
        from memloci.providers.bge import BgeSmallEmbedder

        return BgeSmallEmbedder(**options)
    from memloci.providers.minilm_int8 import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder(model_path=model_path, **options)


__all__ = ["local_embedder"]
