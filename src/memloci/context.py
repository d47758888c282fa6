"""Prompt context (layer: context): a deterministic, token-budgeted markdown block.

The cacheable part (learned procedures, then "Your Memory" grouped by category)
comes first. It gets a fixed 40 % of the budget and depends only on the memory set:
when not every fact fits, the ones kept are chosen by a rule that ignores the prompt
and anything a read changes (protected facts first, then the most recently written,
in that order until the room is full), then shown by category and creation time — so
the same memories give byte-identical text whatever the prompt, however often they are
searched or decayed. The parts that depend on the prompt come last, each within its
share of the budget and the room left: entity profiles ("People and Things", 25 %),
temporal context ("Timeline", 25 %) and evidence (10 %: triggered procedures for the
task first, then "Relevant Past Conversations"); relevant facts that did not fit in the
cacheable part ("Relevant Facts") take what those sections leave. The shares add up to
the budget, and the whole block never exceeds it by :func:`estimate_tokens`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memloci.models import Entity, MemoryNode

MAX_PROCEDURES = 20
_SHOWN = re.compile(r"^- \[id:([A-Za-z0-9]{8})\]", re.MULTILINE)  # a line of the block
SHARES = {"facts": 0.40, "entities": 0.25, "timeline": 0.25, "evidence": 0.10}
STABLE_SHARE = SHARES["facts"]
MEMORY_INTRO = (
    "The following is information you've learned about the user from previous conversations.\n"
    "Use this context naturally. To update a memory, use the update_memory tool with the "
    "memory ID."
)


def estimate_tokens(text: str) -> int:
    """A deterministic, tokenizer-free estimate (about four characters a token)."""
    return (len(text) + 3) // 4


def one_line(text: str) -> str:
    """``text`` on one line: a field the caller wrote (content, subject, speaker, name)
    never starts a line, so it cannot forge a section of the block."""
    return " ".join(text.split())


def _fact_line(node: MemoryNode) -> str:
    subject = f"[{one_line(node.subject)}] " if node.subject and node.subject.strip() else ""
    return f"- [id:{node.id}] {subject}{one_line(node.content)}"


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


def _fit(facts: Sequence[MemoryNode], chars: int) -> list[MemoryNode]:
    """The facts kept when not all fit in ``chars``: protected ones (confirmed, decay rate
    0) first, then the most recently written. Nothing a read changes (confidence,
    access counts) and nothing the prompt says takes part, so the choice is stable.

    The kept facts are a prefix of that ranking: the first fact that does not fit in the
    room left ends the list, so an older, shorter fact never takes the place of a newer
    one. Only a fact too long for the whole room (it could never be shown) is passed over.
    """
    ranked = sorted(facts, key=_keep_rank)
    empty = len(_memory_block([]))
    spent = empty
    seen: set[str] = set()
    chosen: list[MemoryNode] = []
    for node in ranked:
        line = len(_fact_line(node)) + 1
        header = len(f"### {node.category.replace('_', ' ').title()}") + 2
        cost = line + (header if node.category not in seen else 0)
        if spent + cost > chars:
            if empty + line + header > chars:
                continue  # too long to show at this budget at all
            break
        chosen.append(node)
        seen.add(node.category)
        spent += cost
    return chosen


def _keep_rank(node: MemoryNode) -> tuple[bool, float, str]:
    """Protected first, then the most recently written (the stores' ``"protected"`` order)."""
    return (node.decay_rate > 0, -node.updated_at.timestamp(), node.id)


def _stable_order(nodes: Sequence[MemoryNode]) -> list[MemoryNode]:
    return sorted(nodes, key=lambda n: (n.category, n.created_at, n.id))


@dataclass(frozen=True)
class EntityProfile:
    """An entity for the "People and Things" section, with its most relevant facts."""

    entity: Entity
    facts: tuple[MemoryNode, ...] = ()


_JOINERS = {"\u200d", "\ufe0e", "\ufe0f"}  # zero-width joiner, variation selectors


def _joined(ch: str) -> bool:
    """Whether ``ch`` belongs to the character before it (a combining mark, a joiner,
    a variation selector, a skin-tone modifier)."""
    return ch in _JOINERS or unicodedata.combining(ch) > 0 or "\U0001f3fb" <= ch <= "\U0001f3ff"


def _clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with "…" when longer; the cut
    never splits a character from its accents or an emoji sequence."""
    text = one_line(text)
    if len(text) <= limit:
        return text
    cut = limit - 1
    while cut > 0 and (_joined(text[cut]) or text[cut - 1] == "\u200d"):
        cut -= 1
    return text[:cut].rstrip() + "…"


def _entity_line(profile: EntityProfile) -> str:
    e = profile.entity
    aliases = [one_line(a) for a in e.aliases if a.lower() != e.canonical_name.lower()]
    head = f"- **{one_line(e.canonical_name)}** ({e.type.value}"
    head += f"; also {', '.join(sorted(aliases)[:3])})" if aliases else ")"
    about = e.summary or "; ".join(_clip(f.content, 160) for f in profile.facts[:2])
    return f"{head}: {_clip(about, 320)}" if about else head


def _episode_line(node: MemoryNode, limit: int) -> str:
    who = f"{one_line(node.speaker)}: " if node.speaker and node.speaker.strip() else ""
    return f"- [{node.event_time:%Y-%m-%d}] {who}{_clip(node.content, limit)}"


def _section(title: str, lines: Sequence[str], room: int) -> str:
    """The title and as many lines (in order) as fit in ``room`` tokens; "" if none fit."""
    kept: list[str] = []
    left = room - estimate_tokens(f"{title}\n\n") - 1
    for line in lines:
        cost = estimate_tokens(line + "\n")
        if cost <= left:
            kept.append(line)
            left -= cost
    return "\n".join([title, "", *kept]) + "\n" if kept else ""


def _by_time(nodes: Sequence[MemoryNode]) -> list[MemoryNode]:
    return sorted(nodes, key=lambda n: (n.event_time, n.id))


def build_context_parts(
    *,
    facts: Sequence[MemoryNode],
    procedures: Sequence[MemoryNode] = (),
    entities: Sequence[EntityProfile] = (),
    timeline: Sequence[MemoryNode] = (),
    evidence: Sequence[MemoryNode] = (),
    relevant: Sequence[MemoryNode] = (),
    task_procedures: Sequence[MemoryNode] = (),
    budget: int = 1000,
    dynamic_budget: int | None = None,
    loaded: str | None = None,
) -> tuple[str, str]:
    """Render the block as ``(cacheable, dynamic)``: the cacheable part within
    ``STABLE_SHARE`` of ``budget``, the prompt-dependent sections within
    ``dynamic_budget`` (default: the rest of ``budget``)
    — entity profiles 25 %, temporal context 25 %, evidence 10 % of ``budget`` scaled
    to it, then ``relevant`` facts not shown above in what is left. ``task_procedures``
    (triggered procedures that apply to the prompt) come first, within the evidence
    share (the evidence gets what they leave of it). No section takes more than the
    room left, so without ``dynamic_budget`` the whole block (headers and separators
    included) is at most ``budget`` tokens by :func:`estimate_tokens`; with it, at most
    ``STABLE_SHARE`` of ``budget`` plus ``dynamic_budget``. Same inputs, same bytes;
    the cacheable part depends on ``facts``, ``procedures`` and ``budget`` only.
    ``loaded``: the cacheable part the caller holds already (a conversation loads it
    once): it stands for the one ``facts`` would give now, so a fact written since is
    not taken for shown, and comes under "Relevant Facts" when the prompt brings it up.
    """
    stable_room = int(budget * STABLE_SHARE)
    stable, shown = _stable_part(facts, procedures, stable_room)
    if loaded is not None:
        stable, shown = ([loaded] if loaded else []), set(_SHOWN.findall(loaded))
    room = budget - sum(estimate_tokens(t) + 1 for t in stable)
    scale: float = budget  # each section's share is of this
    if dynamic_budget is not None:
        room, scale = dynamic_budget, max(0, dynamic_budget) / (1 - STABLE_SHARE)
    parts: dict[str, str] = {}
    sections = (
        (
            "## Procedures for This Task",
            [_fact_line(p) for p in task_procedures],
            "evidence",
        ),
        (
            "## People and Things",
            [_entity_line(p) for p in entities if p.entity.summary or p.facts],
            "entities",
        ),
        ("## Timeline", [_episode_line(n, 240) for n in _by_time(timeline)], "timeline"),
        (
            "## Relevant Past Conversations",
            [_episode_line(n, 600) for n in _by_time(evidence)],
            "evidence",
        ),
    )
    # each section's share, of which it may use no more than the room left; the task's
    # procedures and the evidence share one (the procedures first)
    shares = {name: int(scale * share) for name, share in SHARES.items() if name != "facts"}
    for title, lines, share in sections:
        text = _section(title, lines, min(shares[share], room)) if lines and scale else ""
        if text:
            parts[title] = text
            room -= estimate_tokens(text) + 1
            shares[share] -= estimate_tokens(text) + 1
    extra = [_fact_line(n) for n in relevant if n.id not in shown]
    if extra and room > 0:
        text = _section("## Relevant Facts", extra, room)
        if text:
            parts["## Relevant Facts"] = text
    order = ("## Procedures for This Task", "## Relevant Facts")  # then the sections' order
    shown_parts = [parts[t] for t in order if t in parts]
    shown_parts += [text for title, text in parts.items() if title not in order]
    return "\n".join(stable), "\n".join(shown_parts)


def join_parts(cacheable: str, dynamic: str) -> str:
    """The whole block from :func:`build_context_parts`' two parts."""
    return "\n".join(p for p in (cacheable, dynamic) if p)


def build_context(**kwargs: Any) -> str:
    """:func:`build_context_parts`, joined: the cacheable part, then the dynamic one."""
    return join_parts(*build_context_parts(**kwargs))


def _procedure_block(procedures: Sequence[MemoryNode]) -> str:
    lines = ["## Learned Procedures and Policies", "", *map(_fact_line, _stable_order(procedures))]
    return "\n".join(lines) + "\n"


def _fit_procedures(procedures: Sequence[MemoryNode], room: int) -> list[MemoryNode]:
    """The standing instructions shown in ``room`` tokens: of the :data:`MAX_PROCEDURES`
    most recent, the newest first until one does not fit (as :func:`_fit` keeps facts);
    only one too long for the whole room is passed over, so a long instruction never
    hides the others."""
    ranked = sorted(procedures, key=lambda n: (-n.created_at.timestamp(), n.id))
    chosen: list[MemoryNode] = []
    for node in ranked[:MAX_PROCEDURES]:
        if estimate_tokens(_procedure_block([*chosen, node])) <= room:
            chosen.append(node)
        elif estimate_tokens(_procedure_block([node])) <= room:
            break
    return chosen


def _stable_part(
    facts: Sequence[MemoryNode], procedures: Sequence[MemoryNode], budget: int
) -> tuple[list[str], set[str]]:
    """Procedures (at most half the room), then "Your Memory" in the rest; and the ids
    of the facts shown."""
    out: list[str] = []
    used = 0
    procs = _fit_procedures(procedures, budget // 2)
    if procs:
        text = _procedure_block(procs)
        out.append(text)
        used += estimate_tokens(text) + 1
    chosen = list(facts)
    if chosen:
        room = budget - used
        text = _memory_block(chosen)
        if estimate_tokens(text) > room:
            chosen = _fit(chosen, room * 4 - 4)
            text = _memory_block(chosen) if chosen else ""
            while chosen and estimate_tokens(text) > room:  # rounding slack, rarely used
                chosen = chosen[:-1]
                text = _memory_block(chosen) if chosen else ""
        if text:
            out.append(text)
        else:
            chosen = []
    return out, {n.id for n in chosen}
