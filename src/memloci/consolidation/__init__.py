"""Consolidation (layer: consolidation): extractors that turn episodes into durable
memories, and the LLM helpers maintenance uses.

``extractor_for(llm)`` gives the :class:`LLMExtractor` when an LLM is configured and
the offline :class:`RuleExtractor` otherwise.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memloci.consolidation.base import ExtractedEntity, ExtractedFact, Extraction, Extractor
    from memloci.consolidation.llm_extractor import LLMExtractor
    from memloci.consolidation.llm_tasks import CausalLink, infer_causal, summarize_entity
    from memloci.consolidation.rules import RuleExtractor
    from memloci.providers.llm import LLM

# loaded on first use: the LLM extractor pulls in the HTTP client (httpx), which a
# one-shot command that never calls an LLM should not pay for at start-up; the result
# models are not needed by a store that is only searched
_LAZY = {
    "ExtractedEntity": "base",
    "ExtractedFact": "base",
    "Extraction": "base",
    "Extractor": "base",
    "LLMExtractor": "llm_extractor",
    "CausalLink": "llm_tasks",
    "infer_causal": "llm_tasks",
    "summarize_entity": "llm_tasks",
    "RuleExtractor": "rules",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(f"memloci.consolidation.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def extractor_for(llm: LLM | None) -> Extractor:
    """The LLM extractor for ``llm``, or the rule-based one when ``llm`` is None."""
    if llm is None:
        from memloci.consolidation.rules import RuleExtractor

        return RuleExtractor()
    from memloci.consolidation.llm_extractor import LLMExtractor

    return LLMExtractor(llm)


__all__ = [
    "CausalLink",
    "ExtractedEntity",
    "ExtractedFact",
    "Extraction",
    "Extractor",
    "LLMExtractor",
    "RuleExtractor",
    "extractor_for",
    "infer_causal",
    "summarize_entity",
]
