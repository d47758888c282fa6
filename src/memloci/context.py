"""Prompt context (layer: context): a deterministic, token-budgeted markdown block.

The block has two parts. The **cacheable** part (learned procedures, then "Your
Memory" grouped by category) comes first and depends only on the memory set: when not
every fact fits, the ones kept are chosen by a rule that ignores the prompt and anything
a read changes (protected facts first, then the most recently written), then shown by
category and creation time — so the same memories give byte-identical text whatever the
prompt, and provider prompt caches stay warm. With a prompt it takes at most a bounded
share of the budget (``Settings.context_stable_share``, 15 % by default), so it never
starves the answer; with no prompt it may take the whole budget.

The **dynamic** part is what answers the prompt, filled by relevance (:func:`pack`):
the search's hits above the relevance threshold, best first, each a candidate for one
section — "Relevant Facts", "People and Things" (profiles of the entities the prompt
names), "Timeline" (only when the prompt names a time window, and only items in it),
"Relevant Past Conversations" (turns, each with the neighbouring turn that carries its
context when there is one) and the triggered "Procedures for This Task". Reference
002's shares (facts 40 %, entity profiles 25 %, temporal 25 %, evidence 10 %) split the
room when every section has items to fill its share; a share a section cannot fill
flows to the others, evidence first. With no relevant item there is no dynamic part.
An item appears once. The whole block never exceeds the budget by
:func:`estimate_tokens`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace

from memloci.models import ContextItem, ContextReport, ContextSection, Entity, MemoryNode, SearchHit

MAX_PROCEDURES = 20
# the handle of a line of the block: a fact's leads it, a standing procedure's ends it
_LEADING_ID = re.compile(r"^- \[id:([A-Za-z0-9]{8})\]")
_TRAILING_ID = re.compile(r"^- \[.*\] \[id:([A-Za-z0-9]{8})\]$")
PROCEDURES_TITLE = "## Learned Procedures and Policies"
SHARES = {"facts": 0.40, "entities": 0.25, "timeline": 0.25, "evidence": 0.10}
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


def fact_line(node: MemoryNode) -> str:
    subject = f"[{one_line(node.subject)}] " if node.subject and node.subject.strip() else ""
    return f"- [id:{node.id}] {subject}{one_line(node.content)}"


def procedure_line(node: MemoryNode) -> str:
    """A procedure as a standing instruction reads: ``- [category] text``, with its handle
    at the end (for ``record_procedure_use`` and ``update_memory``)."""
    return f"- [{one_line(node.category)}] {one_line(node.content)} [id:{node.id}]"


def shown_ids(text: str) -> set[str]:
    """The memory ids a block shows: a line's leading ``[id:…]`` handle, or in the
    standing procedures its trailing one (a fact's text cannot end a procedure line:
    no field the caller wrote starts a line, so none opens that section)."""
    ids: set[str] = set()
    in_procedures = False
    for line in text.splitlines():
        if line.startswith("## "):
            in_procedures = line == PROCEDURES_TITLE
        elif lead := _LEADING_ID.match(line):
            ids.add(lead[1])
        elif in_procedures and (tail := _TRAILING_ID.match(line)):
            ids.add(tail[1])
    return ids


def _memory_block(facts: Sequence[MemoryNode]) -> str:
    block = [f"## Your Memory\n\n{MEMORY_INTRO}\n"]
    category = None
    for node in _stable_order(facts):
        if node.category != category:
            if category is not None:
                block.append("")
            category = node.category
            block.append(f"### {category.replace('_', ' ').title()}")
        block.append(fact_line(node))
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
        line = len(fact_line(node)) + 1
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


def entity_line(profile: EntityProfile) -> str:
    e = profile.entity
    aliases = [one_line(a) for a in e.aliases if a.lower() != e.canonical_name.lower()]
    head = f"- **{one_line(e.canonical_name)}** ({e.type.value}"
    head += f"; also {', '.join(sorted(aliases)[:3])})" if aliases else ")"
    about = e.summary or "; ".join(_clip(f.content, 160) for f in profile.facts[:2])
    return f"{head}: {_clip(about, 320)}" if about else head


def episode_line(node: MemoryNode, limit: int, *, dated: bool = True) -> str:
    """A turn as a line: ``- [date] speaker: text`` (``dated`` False: without the date,
    for a line under its day's heading)."""
    who = f"{one_line(node.speaker)}: " if node.speaker and node.speaker.strip() else ""
    when = f"[{node.event_time:%Y-%m-%d}] " if dated else ""
    return f"- {when}{who}{_clip(node.content, limit)}"


def day_heading(node: MemoryNode) -> str:
    """The heading turns of ``node``'s day are shown under (``### 2023-05-08``)."""
    return f"### {node.event_time:%Y-%m-%d}"


def time_key(node: MemoryNode) -> str:
    """A key that orders turns by when they happened, then by when they were written."""
    return f"{node.event_time.isoformat()} {node.created_at.isoformat()} {node.id}"


SECTION_TITLES = {
    "procedures": "## Procedures for This Task",
    "facts": "## Relevant Facts",
    "entities": "## People and Things",
    "timeline": "## Timeline",
    "evidence": "## Relevant Past Conversations",
}
# the order the sections are shown in, and the order a share left unused flows to them
SHOWN_ORDER = ("procedures", "facts", "entities", "timeline", "evidence")
FLOW_ORDER = ("evidence", "facts", "entities", "timeline")
_SHARE_OF = {
    "procedures": "evidence",
    "facts": "facts",
    "entities": "entities",
    "timeline": "timeline",
    "evidence": "evidence",
}


@dataclass(frozen=True)
class Candidate:
    """One item the prompt brings up, for the dynamic part: its ``section`` (a key of
    :data:`SECTION_TITLES`), its ``lines`` as shown (a hit and the neighbouring turn that
    carries its context, in time order), ``short``: the hit's line alone, used when the
    lines together do not fit; ``ids`` of the memories it shows; ``score``: the search's
    relevance; ``why``: what brought it up."""

    section: str
    lines: tuple[str, ...]
    ids: tuple[str, ...] = ()
    score: float = 1.0
    why: str = ""
    short: tuple[str, ...] = ()
    group: str = ""  # a heading the item is shown under (turns: their day), "" for none
    order: str = ""  # where the item stands under its heading (turns: by time)


@dataclass(frozen=True)
class Placed:
    """A candidate as placed in the block: the lines it got and their tokens."""

    candidate: Candidate
    lines: tuple[str, ...]
    tokens: int


def _cost(lines: Sequence[str]) -> int:
    return sum(estimate_tokens(line + "\n") for line in lines)


def _header_cost(section: str, first: bool) -> int:
    """What opening ``section`` costs: its title, the blank line after it, and the blank
    line that separates it from the section before (none for the first one)."""
    return estimate_tokens(f"{SECTION_TITLES[section]}\n\n") + (0 if first else 1)


def pack(candidates: Sequence[Candidate], room: int, scale: int) -> dict[str, list[Placed]]:
    """Choose the candidates the dynamic part shows within ``room`` tokens.

    An item with a ``group`` (a turn: its day) costs its heading too when it is the
    first of its group in its section.

    Two passes over ``candidates`` (best first). First each section takes its items
    within its share of ``scale`` (:data:`SHARES`: facts 40 %, entity profiles 25 %,
    timeline 25 %, evidence 10 %, the task's procedures within the evidence share).
    Then what is left of ``room`` goes to the items not yet placed, evidence first
    (:data:`FLOW_ORDER`), best first in each: a share a section cannot fill with relevant
    items flows to the others. An item too long for what is left is passed over (the
    next may fit); a hit shown with its neighbouring turn falls back to the hit alone."""
    shares = {name: int(scale * share) for name, share in SHARES.items()}
    placed: dict[str, list[Placed]] = {}
    groups: set[tuple[str, str]] = set()
    left = room
    taken: set[int] = set()

    def place(index: int, cand: Candidate, *, capped: bool) -> bool:
        nonlocal left
        opening = _header_cost(cand.section, not placed) if cand.section not in placed else 0
        if cand.group and (cand.section, cand.group) not in groups:
            opening += estimate_tokens(cand.group + "\n")
        share = _SHARE_OF[cand.section]
        for lines in (cand.lines, cand.short) if cand.short else (cand.lines,):
            cost = _cost(lines) + opening
            if cost <= left and (not capped or cost <= shares[share]):
                placed.setdefault(cand.section, []).append(Placed(cand, lines, cost))
                if cand.group:
                    groups.add((cand.section, cand.group))
                left -= cost
                shares[share] -= cost
                taken.add(index)
                return True
        return False

    for index, cand in enumerate(candidates):
        place(index, cand, capped=True)
    for section in (*FLOW_ORDER, "procedures"):
        for index, cand in enumerate(candidates):
            if index not in taken and _SHARE_OF[cand.section] == section:
                place(index, cand, capped=False)
    return placed


def render_dynamic(placed: dict[str, list[Placed]]) -> str:
    """The dynamic part: each section that got items, in :data:`SHOWN_ORDER`. Items
    without a group keep the order they were placed in (best first); turns are shown
    under their day's heading, days and turns in time order."""
    parts = []
    for section in SHOWN_ORDER:
        items = placed.get(section)
        if not items:
            continue
        loose = [i for i in items if not i.candidate.group]
        grouped = sorted(
            (i for i in items if i.candidate.group),
            key=lambda i: (i.candidate.group, i.candidate.order),
        )
        lines = [line for item in loose for line in item.lines]
        heading = None
        for item in grouped:
            if item.candidate.group != heading:
                heading = item.candidate.group
                lines.append(heading)
            lines.extend(item.lines)
        parts.append("\n".join([SECTION_TITLES[section], "", *lines]) + "\n")
    return "\n".join(parts)


@dataclass(frozen=True)
class Composed:
    """A composed block: its two parts, the ids the cacheable part shows, and what the
    dynamic part placed (per section, for a report of why each item is there)."""

    cacheable: str
    dynamic: str
    shown: frozenset[str]
    placed: dict[str, list[Placed]]
    stable_facts: tuple[MemoryNode, ...] = ()
    stable_procedures: tuple[MemoryNode, ...] = ()


def compose(
    *,
    facts: Sequence[MemoryNode],
    procedures: Sequence[MemoryNode] = (),
    candidates: Sequence[Candidate] = (),
    budget: int = 1000,
    stable_share: float = 1.0,
    total: int | None = None,
    loaded: str | None = None,
) -> Composed:
    """Compose the block.

    The cacheable part depends on ``facts``, ``procedures``, ``budget`` and
    ``stable_share`` only: the same memories give the same bytes whatever the prompt.
    It holds the standing procedures (the :data:`MAX_PROCEDURES` most recent, in at
    most half of ``budget``: instructions the agent follows on every turn), then "Your
    Memory" in at most ``stable_share`` of ``budget`` (and no more than the procedures
    leave). ``loaded``: the cacheable part the caller holds already (a conversation
    loads it once); it stands for the one ``facts`` would give now, so a fact written
    since is not taken for shown.

    The dynamic part gets what the cacheable part leaves of ``total`` (default
    ``budget``: a complex prompt's block may be given more) and is filled from
    ``candidates`` by :func:`pack`; a candidate the cacheable part shows already is left
    out (an item appears once). The whole block, separators included, is at most
    ``total`` tokens by :func:`estimate_tokens`.
    """
    stable, shown_nodes, procs = _stable_part(facts, procedures, budget, int(budget * stable_share))
    shown = {n.id for n in (*shown_nodes, *procs)}
    if loaded is not None:
        stable, shown = ([loaded] if loaded else []), shown_ids(loaded)
    room = (budget if total is None else total) - sum(estimate_tokens(t) + 1 for t in stable)
    fresh: list[Candidate] = []
    seen = set(shown)
    for cand in candidates:  # an item appears once: in the cacheable part or here, once
        if cand.ids and cand.ids[0] in seen:
            continue
        if cand.short and seen & set(cand.ids[1:]):  # its neighbour is shown already
            cand = replace(cand, lines=cand.short, ids=cand.ids[:1], short=())
        fresh.append(cand)
        seen |= set(cand.ids)
    placed = pack(fresh, max(0, room), max(0, room)) if room > 0 else {}
    return Composed(
        cacheable="\n".join(stable),
        dynamic=render_dynamic(placed),
        shown=frozenset(shown),
        placed=placed,
        stable_facts=tuple(shown_nodes),
        stable_procedures=tuple(procs),
    )


def join_parts(cacheable: str, dynamic: str) -> str:
    """The whole block from the two parts :func:`compose` gives."""
    return "\n".join(p for p in (cacheable, dynamic) if p)


def _procedure_block(procedures: Sequence[MemoryNode]) -> str:
    lines = [PROCEDURES_TITLE, "", *map(procedure_line, _stable_order(procedures))]
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
    facts: Sequence[MemoryNode], procedures: Sequence[MemoryNode], budget: int, fact_room: int
) -> tuple[list[str], list[MemoryNode], list[MemoryNode]]:
    """Procedures (at most half of ``budget``), then "Your Memory" in ``fact_room`` (at
    most what the procedures leave); the facts and the procedures shown."""
    out: list[str] = []
    used = 0
    procs = _fit_procedures(procedures, budget // 2)
    if procs:
        text = _procedure_block(procs)
        out.append(text)
        used += estimate_tokens(text) + 1
    chosen = list(facts)
    if chosen:
        room = min(fact_room, budget - used)
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
    return out, chosen, procs


def report_of(
    composed: Composed,
    budget: int,
    threshold: float,
    *,
    left_out: Sequence[SearchHit] = (),
) -> ContextReport:
    """A :class:`~memloci.models.ContextReport` of ``composed``: each section with its
    tokens and items, the cacheable sections first, and the hits left out for scoring
    below ``threshold``."""
    sections: list[ContextSection] = []
    cacheable = (
        (
            PROCEDURES_TITLE,
            composed.stable_procedures,
            _procedure_block,
            "a standing instruction (no trigger)",
        ),
        (
            "## Your Memory",
            composed.stable_facts,
            _memory_block,
            "kept in 'Your Memory' (protected, then newest first)",
        ),
    )
    for title, nodes, render, why in cacheable:
        if nodes:
            sections.append(_cacheable_section(title, nodes, render(nodes), why))
    for section in SHOWN_ORDER:
        placed = composed.placed.get(section)
        if not placed:
            continue
        items = [
            ContextItem(
                lines=list(p.lines),
                memory_ids=list(p.candidate.ids),
                score=round(p.candidate.score, 4),
                tokens=p.tokens,
                why=p.candidate.why,
            )
            for p in placed
        ]
        sections.append(
            ContextSection(
                title=SECTION_TITLES[section],
                cacheable=False,
                tokens=sum(p.tokens for p in placed),
                items=items,
            )
        )
    block = join_parts(composed.cacheable, composed.dynamic)
    dropped = [
        ContextItem(
            lines=[one_line(h.memory.content)],
            memory_ids=[h.memory.id],
            score=h.score,
            why=f"below the relevance threshold {threshold:.2f}",
        )
        for h in left_out
    ]
    return ContextReport(
        block=block,
        cacheable=composed.cacheable,
        dynamic=composed.dynamic,
        budget=budget,
        tokens=estimate_tokens(block),
        threshold=threshold,
        sections=sections,
        left_out=dropped,
    )


def _cacheable_section(
    title: str, nodes: Sequence[MemoryNode], text: str, why: str
) -> ContextSection:
    """A section of the cacheable part as the report shows it: its lines, one item each."""
    items = [
        ContextItem(
            lines=[fact_line(n)],
            memory_ids=[n.id],
            tokens=estimate_tokens(fact_line(n) + "\n"),
            why=why,
        )
        for n in _stable_order(nodes)
    ]
    return ContextSection(title=title, cacheable=True, tokens=estimate_tokens(text), items=items)
