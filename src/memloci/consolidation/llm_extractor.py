"""The LLM extractor (layer: consolidation): durable facts, opinions, procedures and
entities from episodes, via any :class:`~memloci.providers.llm.LLM` with structured
output. A reply of the wrong shape raises ``ProviderError`` (the caller stores
nothing); single malformed items in a well-formed reply are dropped. A reply cut off at
``max_tokens`` is asked again for each half of its episodes; a reply with more facts
than ``max_facts`` (or entities than ``max_entities``) keeps the first ones.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from memloci.consolidation.base import (
    ExtractedEntity,
    ExtractedFact,
    Extraction,
    finalize,
)
from memloci.errors import ProviderError
from memloci.models import MemoryNode, NodeType
from memloci.providers.llm import LLM, complete_json, is_cut_off, json_schema_for

log = logging.getLogger(__name__)

SYSTEM_PROMPT = """\
You maintain the long-term memory of an AI assistant. Read the conversation and \
extract only what is worth remembering in future conversations with this user.

Store:
- facts about people (names, roles, relationships to the user)
- explicit preferences and opinions ("I prefer…", "I'd rather…", "I love/hate…")
- standing instructions and procedures ("from now on…", "always…", "never…", how-to steps)
- recurring context ("I work at…", "I live in…", "my project uses…")
- corrections of something already in memory

Do NOT store:
- transient states or one-off details ("I'm tired today", "this task is for the Monday meeting")
- information already in KNOWN MEMORIES, unless the conversation changes it
- casual mentions not meant to be permanent, questions, hypotheticals ("if I…", "maybe…")
- anything the user declined to have remembered ("No, it's just for this task")
- things only the assistant said that the user did not state or confirm
When unsure, leave it out: precision matters more than recall.

For each fact:
- content: one self-contained sentence in the third person ("User prefers Friday due \
dates", "Alec is the user's boss"), 5–500 characters; keep dates as written.
- type: "semantic" (a fact), "opinion" (a preference, like or judgement) or \
"procedural" (an instruction or how-to).
- fact_type: user_preference, relationship, self_knowledge (facts about the user), \
world_knowledge, or correction (replaces something in KNOWN MEMORIES).
- category: person, preference, context, project or general.
- subject: the person or thing it is about, or null. key: a short stable name for \
single-valued facts (e.g. "employer", "home_city", "boss"), else null.
- confidence: 0–1, how certain and how lasting it is.
- source_ids: the [ids] of the conversation lines it comes from.
- entities: names of the people, organisations, places, projects and tools it mentions; \
describe each once under "entities" with its type (person, organization, place, project, \
tool, concept) and aliases (other names used for it).

Answer with JSON: {"facts": [...], "entities": [...]}; {"facts": [], "entities": []} \
when nothing is worth remembering."""


class _Reply(BaseModel):
    """The shape a reply must have; items are validated one by one afterwards."""

    model_config = ConfigDict(extra="ignore")
    facts: list[dict[str, Any]]
    entities: list[dict[str, Any]] = Field(default_factory=list)


class LLMExtractor:
    """Extracts memories with ``llm``. ``max_chars`` bounds the conversation text per
    call (longer batches are split); ``max_known`` bounds the known memories shown;
    ``max_facts`` and ``max_entities`` bound what one reply may add."""

    name = "llm"

    def __init__(
        self,
        llm: LLM,
        *,
        max_chars: int = 24_000,
        max_known: int = 40,
        max_tokens: int = 4096,
        max_facts: int = 100,
        max_entities: int = 200,
    ) -> None:
        self.llm = llm
        self.max_facts, self.max_entities = max_facts, max_entities
        self.max_chars = max_chars
        self.max_known = max_known
        self.max_tokens = max_tokens
        self.schema = json_schema_for(Extraction)

    def __repr__(self) -> str:
        return f"LLMExtractor({self.llm.model_id!r})"

    def extract(
        self, episodes: Sequence[MemoryNode], *, known: Sequence[MemoryNode] = ()
    ) -> Extraction:
        """Facts and entities from ``episodes``; raises ``ProviderError`` on failure."""
        facts: list[ExtractedFact] = []
        entities: list[ExtractedEntity] = []
        known_block = self._known_block(known)
        for chunk in self._chunks(episodes):
            part = self._extract_chunk(chunk, known_block)
            facts.extend(part.facts)
            entities.extend(part.entities)
        return finalize(facts, entities)

    def _chunks(self, episodes: Sequence[MemoryNode]) -> list[list[MemoryNode]]:
        chunks: list[list[MemoryNode]] = []
        size = 0
        for node in episodes:
            cost = min(len(node.content), self.max_chars) + 40
            if not chunks or size + cost > self.max_chars:
                chunks.append([])
                size = 0
            chunks[-1].append(node)
            size += cost
        return chunks

    def _known_block(self, known: Sequence[MemoryNode]) -> str:
        current = [n for n in known if n.type is not NodeType.EPISODIC and n.is_current]
        lines = [f"- [{n.id}] {' '.join(n.content.split())}" for n in current[: self.max_known]]
        return "KNOWN MEMORIES:\n" + ("\n".join(lines) if lines else "(none)")

    def _extract_chunk(self, chunk: list[MemoryNode], known_block: str) -> Extraction:
        lines = [_line(n, self.max_chars) for n in chunk]
        prompt = f"{known_block}\n\nCONVERSATION:\n" + "\n".join(lines)
        try:
            reply = complete_json(
                self.llm,
                [{"role": "user", "content": prompt}],
                _Reply,
                system=SYSTEM_PROMPT,
                schema=self.schema,
                max_tokens=self.max_tokens,
            )
        except ProviderError as exc:
            if not is_cut_off(exc) or len(chunk) < 2:
                raise
            # too much to say about these turns in max_tokens: half of them at a time
            log.info("the LLM reply was cut off; extracting %d turns in two parts", len(chunk))
            half = len(chunk) // 2
            parts = [self._extract_chunk(p, known_block) for p in (chunk[:half], chunk[half:])]
            return Extraction(
                facts=[f for p in parts for f in p.facts],
                entities=[e for p in parts for e in p.entities],
            )
        return self._items(chunk, reply)

    def _items(self, chunk: list[MemoryNode], reply: _Reply) -> Extraction:
        """The valid facts and entities of ``reply``, at most ``max_facts`` and
        ``max_entities`` of them; sources outside ``chunk`` left out."""
        for what, items, cap in (
            ("facts", reply.facts, self.max_facts),
            ("entities", reply.entities, self.max_entities),
        ):
            if len(items) > cap:
                log.warning(
                    "the LLM proposed %d %s for %d turns; keeping the first %d",
                    len(items),
                    what,
                    len(chunk),
                    cap,
                )
                del items[cap:]
        ids = [n.id for n in chunk]
        facts, entities = [], []
        for item in reply.facts:
            try:
                fact = ExtractedFact.model_validate(item)
            except PydanticValidationError as exc:
                log.debug("dropped an extracted fact (%s): %r", exc.errors()[0]["msg"], item)
                continue
            sources = [i for i in fact.source_ids if i in ids]
            facts.append(fact.model_copy(update={"source_ids": sources or ids}))
        for item in reply.entities:
            try:
                entities.append(ExtractedEntity.model_validate(item))
            except PydanticValidationError:
                log.debug("dropped an extracted entity: %r", item)
        return Extraction(facts=facts, entities=entities)


def _line(node: MemoryNode, limit: int) -> str:
    who = node.source_role or node.speaker or "user"
    text = " ".join(node.content.split())[:limit]
    return f"[{node.id}] {node.event_time:%Y-%m-%d} {who}: {text}"


__all__ = ["SYSTEM_PROMPT", "LLMExtractor"]
