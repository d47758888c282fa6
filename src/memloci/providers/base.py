"""Provider protocols and the registry (layer: providers).

Scores everywhere in memloci are *higher is better*. Embedders return
L2-normalised float32 vectors so cosine similarity is a dot product.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memloci.errors import ValidationError

log = logging.getLogger("memloci.providers")

Vector = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors.

    ``model_id`` identifies the vector space (recorded in store metadata; a
    store refuses vectors from another space). ``dimension`` is the vector size.
    An optional class attribute ``in_process = True`` says it embeds in this process
    (no network): a query may then embed a few just-written memories itself. An
    optional ``calibration`` (:class:`Calibration`) says where its cosines fall.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed a batch (documents); returns shape (len(texts), dimension)."""
        ...

    def embed_query(self, text: str) -> Vector:
        """Embed one search query; returns shape (dimension,)."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """Scores how well each text answers a query, reading both together (a
    cross-encoder); used to reorder the best fused search candidates.

    ``score`` returns one relevance per text, a probability in ``[0, 1]`` (higher is
    better, comparable across queries), in the order of ``texts``.
    """

    @property
    def model_id(self) -> str: ...

    def score(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Relevance of each text to ``query``; shape (len(texts),), values in [0, 1]."""
        ...


@dataclass(frozen=True)
class Calibration:
    """Where an embedding model's cosines fall: each model spreads them differently
    (MiniLM scores unrelated sentences 0.0-0.2, bge-small 0.4-0.5), so every threshold
    that reads a cosine comes from the model's calibration, not from one constant.

    ``duplicate``: cosine at which a new fact restates a stored one (with the same
    numbers, names and negations; see :mod:`memloci.consolidation.dedupe`); ``names``:
    at which two names of one type are one entity; ``unrelated``: what unrelated
    sentences typically score (the background of a search with few candidates);
    ``decisive``: the cosine at which a semantic match counts as certain in search;
    ``answers``: the cosine from which the best hits' meaning alone says a store holds an
    answer to the query (:mod:`memloci.retrieval.relevance`).
    An embedder states its own as a ``calibration`` attribute; without one, these
    defaults (measured on all-MiniLM-L6-v2) apply."""

    duplicate: float = 0.92
    names: float = 0.85
    unrelated: float = 0.2
    decisive: float = 1.0
    answers: float = 0.6


DEFAULT_CALIBRATION = Calibration()


def calibration_of(embedder: object | None) -> Calibration:
    """The embedder's :class:`Calibration` (the defaults when it states none)."""
    found = getattr(embedder, "calibration", None)
    return found if isinstance(found, Calibration) else DEFAULT_CALIBRATION


# name -> "module:factory"; factories take keyword options and return an Embedder.
_EMBEDDERS: dict[str, str] = {
    "local": "memloci.providers.local:local_embedder",
    "minilm-int8": "memloci.providers.minilm_int8:OnnxMiniLMEmbedder",
    "minilm-fp32": "memloci.providers.minilm_fp32:MiniLMFp32Embedder",
    "bge-small": "memloci.providers.bge:BgeSmallEmbedder",
    "openai": "memloci.providers.openai:OpenAIEmbedder",
    "google": "memloci.providers.google:GoogleEmbedder",
    "fake": "memloci.providers.fake:FakeEmbedder",
}


def embedder_names() -> list[str]:
    """Names of the known embedders."""
    return sorted(_EMBEDDERS)


def registered(table: dict[str, str], name: str, *, kind: str, choices: str) -> Callable[..., Any]:
    """The factory registered in ``table`` under ``name``, its module imported now; a
    ``ValidationError`` naming the ``choices`` for an unknown ``kind`` (embedder, …)."""
    try:
        target = table[name]
    except KeyError:
        raise ValidationError(
            f"unknown {kind} {name!r}", hint=f"choose one of: {choices}"
        ) from None
    module_name, _, attr = target.partition(":")
    factory: Callable[..., Any] = getattr(import_module(module_name), attr)
    return factory


def load_embedder(name: str, **options: Any) -> Embedder:
    """Build the embedder registered under ``name`` (imported lazily)."""
    choices = ", ".join(embedder_names())
    factory: Callable[..., Embedder] = registered(
        _EMBEDDERS, name, kind="embedder", choices=choices
    )
    return factory(**options)


def warm_up(embedder: Embedder | None) -> None:
    """Start loading an in-process model (``in_process`` and a ``load()`` method, e.g. the
    bundled MiniLM) on a background thread, so it loads while the rest of the program
    imports and the store opens, and the first search does not wait for all of it
    (onnxruntime releases the GIL while it loads). A failure here is left to the first use
    to report (the model is loaded again then)."""
    load = getattr(embedder, "load", None)
    if not getattr(embedder, "in_process", False) or not callable(load):
        return

    def run() -> None:
        try:
            load()
        except Exception as exc:  # reported by the first embedding that needs it
            log.debug("loading the embedder in the background failed: %s", exc)

    threading.Thread(target=run, name="memloci-embedder-load", daemon=True).start()


# name -> "module:factory"; factories take keyword options and return a Reranker.
_RERANKERS: dict[str, str] = {
    "minilm-ce": "memloci.providers.crossencoder:MiniLMCrossEncoder",
}


def reranker_names() -> list[str]:
    """Names of the known rerankers (``none`` turns reranking off)."""
    return sorted(_RERANKERS)


def load_reranker(name: str, **options: Any) -> Reranker:
    """Build the reranker registered under ``name`` (imported lazily)."""
    choices = f"none, {', '.join(reranker_names())}"
    factory: Callable[..., Reranker] = registered(
        _RERANKERS, name, kind="reranker", choices=choices
    )
    try:
        return factory(**options)
    except TypeError as exc:  # an option the reranker does not take
        raise ValidationError(f"bad reranker_options for {name!r}: {exc}") from None
