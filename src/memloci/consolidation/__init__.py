"""Consolidation (layer: consolidation): extractors that turn episodes into durable
memories, and the LLM helpers maintenance uses.

``extractor_for(llm)`` gives the :class:`LLMExtractor` when an LLM is configured and
the offline :class:`RuleExtractor` otherwise.
"""

from __future__ import annotations

from memloci.consolidation.base import (
    ExtractedEntity,
    ExtractedFact,
    Extraction,
    Extractor,
)
from memloci.consolidation.llm_extractor import LLMExtractor
from memloci.consolidation.llm_tasks import CausalLink, infer_causal, summarize_entity
from memloci.consolidation.rules import RuleExtractor
from memloci.providers.llm import LLM


def extractor_for(llm: LLM | None) -> Extractor:
    """The LLM extractor for ``llm``, or the rule-based one when ``llm`` is None."""
    return RuleExtractor() if llm is None else LLMExtractor(llm)


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
