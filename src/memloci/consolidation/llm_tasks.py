"""LLM helpers for maintenance (layer: consolidation): entity summaries and causal
links between consecutive episodes. Synchronous; callers run them in a worker thread.
Both only propose text / links; storing them is the caller's job.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticValidationError

from memloci.consolidation.base import clamp_confidence
from memloci.errors import ProviderError
from memloci.models import Entity, MemoryNode
from memloci.providers.llm import LLM, complete_json, is_cut_off, json_schema_for, strip_think

log = logging.getLogger(__name__)

SUMMARY_MAX = 500
CAUSAL_DEFAULT_CONFIDENCE = 0.7
_FACTS_IN_SUMMARY = 50
_PAIRS_PER_CALL = 20
_TEXT_CHARS = 600  # of each episode shown for causal inference


class CausalLink(BaseModel):
    """``cause_id``'s episode led to ``effect_id``'s (ids of the pair given)."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    cause_id: str
    effect_id: str
    confidence: float = CAUSAL_DEFAULT_CONFIDENCE
    explanation: str = Field("", description="one short sentence: how the first led to the second")

    @field_validator("confidence", mode="before")
    @classmethod
    def _clamp(cls, value: Any) -> float:
        return clamp_confidence(value, CAUSAL_DEFAULT_CONFIDENCE)

    @field_validator("explanation", mode="before")
    @classmethod
    def _short(cls, value: Any) -> str:
        return " ".join(str(value or "").split())[:300]


class _Links(BaseModel):
    model_config = ConfigDict(extra="ignore")
    links: list[dict[str, Any]]


class _LinksSchema(BaseModel):
    links: list[CausalLink]


_SUMMARY_SYSTEM = (
    "You write short profiles of people, organisations, places and things for an "
    "assistant's long-term memory. Use only the facts given; do not guess. Reply with "
    "the profile only: plain text, 1–3 sentences, at most 400 characters, no preamble."
)

_CAUSAL_SYSTEM = (
    "You find cause and effect in an assistant's conversation history. You get pairs of "
    "consecutive events. For each pair where the first event caused, triggered or "
    "directly led to the second (not merely came before it), give a link with the "
    "ids, a confidence between 0 and 1 and a one-sentence explanation. Leave out "
    'pairs without a causal connection; answer {"links": []} when there are none.'
)


def summarize_entity(llm: LLM, entity: Entity, facts: Sequence[MemoryNode]) -> str:
    """A short profile of ``entity`` written from ``facts`` (at most 500 characters).

    Returns ``""`` without calling the LLM when there are no facts; raises
    ``ProviderError`` when the LLM fails or answers with nothing.
    """
    if not facts:
        return ""
    kind = entity.type.value
    aliases = f" (also called {', '.join(entity.aliases)})" if entity.aliases else ""
    lines = [f"- {' '.join(f.content.split())}" for f in facts[:_FACTS_IN_SUMMARY]]
    prompt = f"Entity: {entity.canonical_name}{aliases}, a {kind}.\nFacts:\n" + "\n".join(lines)
    if entity.summary:
        prompt += f"\nCurrent profile (update it): {entity.summary}"
    reply = llm.complete(
        [{"role": "user", "content": prompt}], system=_SUMMARY_SYSTEM, max_tokens=400
    )
    summary = _clean_summary(reply)
    if not summary:
        raise ProviderError(
            f"the LLM wrote an empty summary for {entity.canonical_name!r}",
            hint="try another model, or raise max_tokens for reasoning models",
        )
    return summary


def _clean_summary(reply: str) -> str:
    text = strip_think(reply)
    text = re.sub(r"^```[a-z]*\s*|\s*```$", "", text.strip())
    text = re.sub(r"^(?:summary|profile)\s*:\s*", "", text, flags=re.IGNORECASE)
    text = " ".join(text.split()).strip("\"'“” ")
    if len(text) > SUMMARY_MAX:
        cut = text[:SUMMARY_MAX]
        end = max(cut.rfind(". "), cut.rfind("! "), cut.rfind("? "))
        text = cut[: end + 1] if end > SUMMARY_MAX // 2 else cut.rsplit(" ", 1)[0] + "…"
    return text


def infer_causal(llm: LLM, pairs: Sequence[tuple[MemoryNode, MemoryNode]]) -> list[CausalLink]:
    """Cause→effect links the LLM finds among ``pairs`` of consecutive episodes.

    Only links between the two ids of a given pair are kept, the earlier episode as
    the cause; malformed items are dropped; a reply cut off at ``max_tokens`` is asked
    again for each half of its pairs; a reply that is not the right JSON shape (after
    one repair attempt) raises ``ProviderError``.
    """
    links: list[CausalLink] = []
    for start in range(0, len(pairs), _PAIRS_PER_CALL):
        links.extend(_causal_batch(llm, pairs[start : start + _PAIRS_PER_CALL]))
    return links


def _causal_batch(llm: LLM, pairs: Sequence[tuple[MemoryNode, MemoryNode]]) -> list[CausalLink]:
    allowed: dict[frozenset[str], tuple[MemoryNode, MemoryNode]] = {}
    blocks = []
    for n, (a, b) in enumerate(pairs, 1):
        if a.id == b.id:
            continue
        first, second = (a, b) if a.event_time <= b.event_time else (b, a)
        allowed[frozenset((a.id, b.id))] = (first, second)
        blocks.append(f"Pair {n}:\n  {_event(first)}\n  {_event(second)}")
    if not blocks:
        return []
    try:
        raw = complete_json(
            llm,
            [{"role": "user", "content": "\n".join(blocks)}],
            _Links,
            system=_CAUSAL_SYSTEM,
            schema=json_schema_for(_LinksSchema),
        )
    except ProviderError as exc:
        if not is_cut_off(exc) or len(pairs) < 2:
            raise
        half = len(pairs) // 2  # too many links to explain in max_tokens: half at a time
        return [*_causal_batch(llm, pairs[:half]), *_causal_batch(llm, pairs[half:])]
    out: list[CausalLink] = []
    seen: set[frozenset[str]] = set()
    for item in raw.links:
        try:
            link = CausalLink.model_validate(item)
        except PydanticValidationError:
            log.debug("dropped a malformed causal link: %r", item)
            continue
        pair = frozenset((link.cause_id, link.effect_id))
        if pair not in allowed or pair in seen or link.cause_id != allowed[pair][0].id:
            continue  # not a pair we asked about, a repeat, or an effect before its cause
        seen.add(pair)
        out.append(link)
    return out


def _event(node: MemoryNode) -> str:
    who = node.source_role or node.speaker or "unknown"
    text = " ".join(node.content.split())[:_TEXT_CHARS]
    return f"[{node.id}] {node.event_time:%Y-%m-%d %H:%M} {who}: {text}"


__all__ = ["CAUSAL_DEFAULT_CONFIDENCE", "CausalLink", "infer_causal", "summarize_entity"]
