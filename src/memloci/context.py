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
            used += estimate_tokens(text)

    chosen = list(facts)
    header = f"## Your Memory\n\n{MEMORY_INTRO}\n"
    if chosen:
        room = stable_budget - used - estimate_tokens(header)
        lines = {n.id: _fact_line(n) for n in chosen}
        total = sum(estimate_tokens(line + "\n") + 1 for line in lines.values())
        if total > room:
            ranked = sorted(
                chosen,
                key=lambda n: (relevance.get(n.id, 10**6), -n.confidence, n.created_at, n.id),
            )
            chosen, spent = [], 0
            for node in ranked:
                cost = estimate_tokens(lines[node.id] + "\n") + 1
                if spent + cost > room:
                    continue
                chosen.append(node)
                spent += cost
        if chosen:
            block = [header]
            category = None
            for node in _stable_order(chosen):
                if node.category != category:
                    if category is not None:
                        block.append("")
                    category = node.category
                    block.append(f"### {category.replace('_', ' ').title()}")
                block.append(lines[node.id])
            text = "\n".join(block) + "\n"
            out.append(text)
            used += estimate_tokens(text)

    if evidence:
        block = ["## Relevant Past Conversations", ""]
        room = budget - used - estimate_tokens("\n".join(block))
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
