"""Tool result texts (layer: tools): short lines an LLM (or a person) can read and act on.

Every memory is shown with its ``[id:xxxxxxxx]`` handle so the model can refer to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memloci.models import MemoryNode, NodeType, SearchHit, WriteResult

SNIPPET = 300
HIT_CHARS = 2000  # of one search hit's text: a 20,000-character episode is not read whole
RESULT_CHARS = 16_000  # of a search's hits or a list's lines: a tool result must fit a prompt


def ref(node: MemoryNode) -> str:
    return f"[id:{node.id}]"


def quote(text: str, limit: int = SNIPPET) -> str:
    """``text`` in quotes, on one line, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return f'"{flat}"'


def kind(node: MemoryNode) -> str:
    return node.type.value if node.category == "general" else f"{node.type.value}/{node.category}"


def line(node: MemoryNode, *, confidence: float | None = None) -> str:
    """``[id:…] semantic/person 2025-06-01 [Alec] key=boss: "Alec is the user's boss"``."""
    parts = [ref(node), kind(node), f"{node.event_time:%Y-%m-%d}"]
    if node.subject:
        parts.append(f"[{node.subject}]")
    if node.key:
        parts.append(f"key={node.key}")
    conf = node.confidence if confidence is None else confidence
    if node.type is not NodeType.EPISODIC and conf < 0.5:
        parts.append(f"(confidence {conf:.2f})")
    if not node.is_current:
        parts.append("(forgotten)")
    return " ".join(parts) + ": " + quote(node.content)


def count(n: int, noun: str = "memory", plural: str = "memories") -> str:
    return f"{n} {noun if n == 1 else plural}"


def lines(nodes: Iterable[MemoryNode]) -> str:
    """One line a memory, as many as fit :data:`RESULT_CHARS`, then how many more."""
    return _fit([f"- {line(n)}" for n in nodes])


def _fit(shown: list[str]) -> str:
    size = 0
    for i, text in enumerate(shown):
        size += len(text) + 1
        if size > RESULT_CHARS and i:
            left = len(shown) - i
            more = f"({left} more not shown: too long; narrow the list, e.g. by category)"
            return "\n".join([*shown[:i], more])
    return "\n".join(shown)


def entry(node: MemoryNode) -> str:
    """A ``list_memories`` line, with the id handle the model passes back::

    [semantic:preferences] (2025-06-01T10:30:00+00:00) [id:a1B2c3D4] The user prefers dark mode.
    """
    when = node.created_at.isoformat(timespec="seconds")
    marks = [x for x in (node.subject and f"[{node.subject}]", node.key and f"key={node.key}") if x]
    if node.type is not NodeType.EPISODIC and node.confidence < 0.5:
        marks.append(f"(confidence {node.confidence:.2f})")
    if not node.is_current:
        marks.append("(forgotten)")
    about = "".join(f" {x}" for x in marks) + (":" if marks else "")
    text = quote(node.content, HIT_CHARS)[1:-1]
    return f"[{node.type.value}:{node.category}] ({when}) {ref(node)}{about} {text}"


def listed(nodes: Iterable[MemoryNode]) -> str:
    """:func:`entry` lines, as many as fit :data:`RESULT_CHARS`, then how many more."""
    return _fit([entry(n) for n in nodes])


def scored(hits: Sequence[SearchHit], threshold: float = 0.0) -> str:
    """Search results, each with its id handle the model passes back; a hit scoring
    below ``threshold`` (the relevance threshold) is marked a weak match::

    [Type: semantic | Category: preferences | Score: 0.912 | 2025-06-01T10:30:00+00:00]
    [id:a1B2c3D4] The user prefers dark mode.
    """
    blocks: list[str] = []
    for hit in hits:
        m = hit.memory
        when = m.event_time.isoformat(timespec="seconds")
        weak = " (weak match)" if hit.score < threshold else ""
        head = (
            f"[Type: {m.type.value} | Category: {m.category} | Score: {hit.score:.3f}{weak}"
            f" | {when}]"
        )
        about = "".join(
            f" {x}" for x in (m.subject and f"[{m.subject}]", m.key and f"key={m.key}") if x
        )
        text = m.content
        if len(text) > HIT_CHARS:
            text = f"{text[:HIT_CHARS].rstrip()}… [{len(m.content) - HIT_CHARS} more characters]"
        block = f"{head}\n{ref(m)}{about}{':' if about else ''} {text}"
        if blocks and sum(len(x) for x in blocks) + len(block) > RESULT_CHARS:
            left = len(hits) - len(blocks)
            blocks.append(f"({left} more {'hit' if left == 1 else 'hits'} not shown: too long)")
            break
        blocks.append(block)
    return "\n\n---\n\n".join(blocks)


def write(result: WriteResult, *, previous: str | None = None) -> str:
    """The outcome of remember / add_to_memory / learn_procedure / record_episode."""
    node, action = result.memory, result.action
    if action == "created":
        noun = {
            NodeType.PROCEDURAL: "Learned procedure",
            NodeType.EPISODIC: "Recorded episode",
        }.get(node.type, "Remembered")
        text = f"{noun} {ref(node)} (category: {node.category}): {quote(node.content)}."
        if node.type is NodeType.PROCEDURAL:
            text += " It is part of your standing instructions from now on."
        if result.similar:
            others = ", ".join(ref(n) for n in result.similar[:3])
            text += f" Other memories about {node.subject}: {others}."
        return text
    if action == "superseded":  # a new fact that contradicts an older one replaced it
        gone = result.similar[0] if result.similar else None
        text = f"Remembered {ref(node)}: {quote(node.content)}."
        if gone is not None:
            text += (
                f" It replaces {ref(gone)} {quote(gone.content)}, which no longer holds "
                "(kept in its history)."
            )
        return text
    if action == "confirmed":
        return (
            f"Already remembered as {ref(node)} (category: {node.category}): "
            f"{quote(node.content)}. Nothing new was stored; "
            f"the existing memory was confirmed ({node.times_confirmed}x)."
        )
    if action == "updated":
        change = quote(node.content)
        if previous and previous != node.content:  # not when only its key or value did
            change = f"{quote(previous)} → {change}"
        where = f"key {node.key}, " if node.key else ""
        where = f" ({where}category: {node.category})"
        return f"Updated {ref(node)}{where} to version {node.version}: {change}."
    if action == "exists":
        return (
            f"Not stored: {ref(node)} already holds key {node.key}: {quote(node.content)}. "
            f'To change it, call update_memory with memory_id "{node.id}" '
            "(or remember with overwrite=true)."
        )
    if action == "suggest_update":
        shown = "\n".join(f"- {line(n)}" for n in result.similar[:3])
        return (
            f"Not stored: memories about {node.subject} already exist:\n{shown}\n"
            f'If the new information replaces one, call update_memory with memory_id "{node.id}" '
            "(or the id of the one it replaces) and the new content. If it is a separate fact, "
            "store it with remember."
        )
    return f"{action.capitalize()} {ref(node)}: {quote(node.content)}."


def procedure_record(node: MemoryNode) -> str:
    """``used 3 times, success rate 67%, 1.2 s on average`` (what is known of it)."""
    p = node.procedure
    if p is None:
        return "used 0 times"
    out = [f"used {p.times_used} {'time' if p.times_used == 1 else 'times'}"]
    if p.success_rate is not None:
        out.append(f"success rate {p.success_rate:.0%}")
    if p.avg_duration_ms is not None:
        out.append(f"{p.avg_duration_ms / 1000:.1f} s on average")
    return ", ".join(out)
