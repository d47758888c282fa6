"""Prompt context (layer: context): a deterministic, token-budgeted markdown block.

The cacheable part (learned procedures, then "Your Memory" grouped by
category) comes first and depends only on the memory set, ordered by category
then creation time, so the same memories give byte-identical text. Relevant
past conversation excerpts, which depend on the prompt, come last.
"""

from __future__ import annotations

from collections.abc import Sequence

from memloci.models import MemoryNode

MAX_PROCEDURES = 20
MEMORY_INTRO = (
    "The following is information you've learned about the user from previous conversations.\n"
    "Use this context naturally. To update a memory, use the update_memory tool with the "
    "memory ID."
)


def estimate_tokens(text: str) -> int:
    """A deterministic, tokenizer-free estimate (about four characters a token)."""
    return (len(text) + 3) // 4


def _fact_line(node: MemoryNode) -> str:
    subject = f"[{node.subject}] " if node.subject else ""
    text = " ".join(node.content.split())
    return f"- [id:{node.id}] {subject}{text}"


def _memory_block(facts: Sequence[MemoryNode]) -> str:
    block = [f"## Your Memory\n\n{MEMORY_INTRO}\n"]
    category = None
    for node in _stable_order(facts):
        if node.category != category:
            if category is not None:
                block.append("")
            category = node.category
            block.append(f"### {category.replace('_', ' ').title()}")
        block.append(_fact_line(node))
    return "\n".join(block) + "\n"


def _fit(facts: Sequence[MemoryNode], chars: int, relevance: dict[str, int]) -> list[MemoryNode]:
    """The most relevant (then most trusted) facts whose rendered block fits in ``chars``."""
    ranked = sorted(
        facts, key=lambda n: (relevance.get(n.id, 10**6), -n.confidence, n.created_at, n.id)
    )
    spent = len(_memory_block([]))
    seen: set[str] = set()
    chosen: list[MemoryNode] = []
    for node in ranked:
        cost = len(_fact_line(node)) + 1
        if node.category not in seen:
            cost += len(f"### {node.category.replace('_', ' ').title()}") + 2
        if spent + cost > chars:
            continue
        chosen.append(node)
        seen.add(node.category)
        spent += cost
    return chosen


def _stable_order(nodes: Sequence[MemoryNode]) -> list[MemoryNode]:
    return sorted(nodes, key=lambda n: (n.category, n.created_at, n.id))


def build_context(
    *,
    facts: Sequence[MemoryNode],
    procedures: Sequence[MemoryNode] = (),
    evidence: Sequence[MemoryNode] = (),
    budget: int = 1000,
    relevance: dict[str, int] | None = None,
) -> str:
    """Render the block. ``relevance`` (id → rank) decides which facts stay when not all fit."""
    relevance = relevance or {}
    stable_budget = budget if not evidence else max(budget * 3 // 4, budget - 400)
    out: list[str] = []
    used = 0

    procs = _stable_order(procedures)[:MAX_PROCEDURES]
    if procs:
        block = ["## Learned Procedures and Policies", ""]
        block += [_fact_line(p) for p in procs]
        text = "\n".join(block) + "\n"
        while procs and estimate_tokens(text) > stable_budget // 2:
            procs = procs[:-1]
            text = "\n".join(block[:2] + [_fact_line(p) for p in procs]) + "\n"
        if procs:
            out.append(text)
            used += estimate_tokens(text) + 1

    chosen = list(facts)
    if chosen:
        room = stable_budget - used
        text = _memory_block(chosen)
        if estimate_tokens(text) > room:
            chosen = _fit(chosen, room * 4 - 4, relevance)
            text = _memory_block(chosen) if chosen else ""
            while chosen and estimate_tokens(text) > room:  # rounding slack, rarely used
                chosen = chosen[:-1]
                text = _memory_block(chosen) if chosen else ""
        if text:
            out.append(text)
            used += estimate_tokens(text) + 1

    if evidence:
        block = ["## Relevant Past Conversations", ""]
        room = budget - used - estimate_tokens("\n".join(block)) - 1
        for node in sorted(evidence, key=lambda n: (n.event_time, n.id)):
            who = f"{node.speaker}: " if node.speaker else ""
            line = f"- [{node.event_time:%Y-%m-%d}] {who}{' '.join(node.content.split())}"
            cost = estimate_tokens(line + "\n")
            if cost > room:
                continue
            block.append(line)
            room -= cost
        if len(block) > 2:
            out.append("\n".join(block) + "\n")
    return "\n".join(out)
