"""Score-aware fusion (layer: retrieval): each strategy's raw scores become evidence
in ``[0, 1]``, and the evidence of all strategies combines into one relevance score
in ``[0, 1]`` — higher is better, comparable across queries and stores.

Evidence per strategy (how strongly *this* list says a memory is relevant):

* **lexical** (full text, the entity and time lists): FTS5 ``-bm25`` scores ``r``
  become ``r / (max(r_top, W) + h)``. The ratio keeps the order; ``W`` is the query's
  *weight*, the bm25 a memory holding each query word once would score (the sum of the
  words' IDF, ``Store.match_weight``): when the best match misses the query's rarest
  words — no memory says "hurt" or "Robin", the best ones only share a common word —
  the whole list counts for little, and meaning decides. ``h`` (:data:`LEXICAL_HALF`,
  the score of one word found in about a quarter of the memories) discounts a list
  whose best match is weak. bm25's IDF already gives a word found in most memories (a
  speaker label, "user") a near-zero score, so such a list ends up near zero instead
  of counting like a decisive match — and that holds for a three-memory store as for
  a million-memory one. Any match keeps at least :data:`LEXICAL_FLOOR`: with one or
  two memories bm25's IDF is zero for every word, yet a matching word still says
  something.
* **semantic** (vector): cosine ``c`` counts by how far it stands above the
  *background* — the median cosine of the candidate list —, relative to the headroom:
  ``(c − bg) / (1 − bg)`` (``1`` is the embedder's *decisive* cosine: 1 for MiniLM, lower
  for a model whose matches rarely score that high, see
  :class:`~memloci.providers.base.Calibration`). In a large store the candidates are
  all on topic, so only a clearly closer memory gets much evidence and the words
  decide; in a small store the background is low and a decisive semantic match wins.
  With fewer than :data:`MIN_BACKGROUND` candidates the background is at most
  :data:`PRIOR_BACKGROUND` (the embedder's *unrelated* cosine: what unrelated sentences
  score), since a median of two or three says little.
* **entity** (the memories linked to an entity the query names, ranked by its other
  words): lexical on those words; a linked memory found by meaning alone joins at
  :data:`NAME_ONLY` of its semantic evidence (it is about the person even when it
  shares no other word with the question). When the other words match none of the
  entity's memories, each gets :data:`NAME_ONLY`.
* **time** (the memories inside a time window the query names, ranked by its other
  words): lexical on those words' own weight; when the window is narrow (a day, a week,
  a month: :func:`narrow`) a match counts at least :data:`IN_WINDOW` — the query named
  when, and this memory is from then and says something of what it asks.
* **key** scores (1 / 0.8 / 0.6 for exact / prefix / contained) are evidence as is.
* **walks** (temporal, causal, shared-entity chains) carry their seed's relevance,
  halved per step (see :mod:`memloci.retrieval.graph`).

Combination: a noisy-OR, ``score = 1 − Π_s (1 − w_s · e_s)`` over the strategies
``s`` that found the memory, with weights ``w_s ∈ [0, 1]`` — how much one decisive
result of that strategy is worth. One strong strategy is enough for a high score,
agreeing strategies add up, and weak evidence stays weak however many lists carry
it. Ties break by best single rank, then id, so the order is deterministic.

Last, a memory that only asks a question ("Do you have any pets?") keeps half its
score (:func:`discount_questions`): it matches a question by words and meaning better
than the answer does, but the answer is in its reply. Then (``hybrid``) the best hits'
**sessions** count (:func:`session_context`): a conversation session is about a few
things, so a memory from the session where the strongest hits are is likelier to
answer than an equal one from elsewhere; a memory without a session is grouped by the
day it happened (facts told in one conversation share it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from memloci.providers.base import DEFAULT_CALIBRATION, Calibration
from memloci.retrieval.graph import GraphLists, Via
from memloci.retrieval.timephrases import NARROW as NARROW  # re-exported
from memloci.retrieval.timephrases import narrow

LEXICAL_HALF = 1.0  # bm25 of one content word found in ~27% of the memories (idf = 1)
LEXICAL_FLOOR = 0.1  # any match counts a little: in a store of 1-2 memories idf is ~0
PRIOR_BACKGROUND = 0.2  # MiniLM-class cosine of unrelated sentences (0.0-0.2)
MIN_BACKGROUND = 10  # candidates needed before the list's own median is the background
NAME_ONLY = 0.5  # evidence of each memory of a named entity when the rest matches none
ASKS_ONLY = 0.5  # what a memory that only asks a question keeps of its score
SAYS_NOTHING = 0.3  # what a memory that says nothing of its own ("lol", "Thanks!") keeps
OTHER_PERSON = 0.7  # what another person's memory keeps when the query names one speaker
IN_WINDOW = 0.5  # least evidence of a time-list match when the query names a narrow window
CONFIDENT = 0.8  # a best hit this strong lends its session and neighbours full weight


@dataclass
class Fused:
    """One memory's fused result: ``score`` in [0, 1]; per strategy its 1-based rank,
    raw score and evidence."""

    id: str
    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)
    raw: dict[str, float] = field(default_factory=dict)
    evidence: dict[str, float] = field(default_factory=dict)
    note: str = ""  # said last in ``why`` (e.g. why the score was lowered)
    lent: float = 0.0  # what the memory's session lent its score (weight · evidence)


@dataclass(frozen=True)
class Scored:
    """A strategy's ranked list with evidence already attached: ``(id, raw, evidence)``."""

    items: Sequence[tuple[str, float, float]]


def lexical(
    results: Sequence[tuple[str, float]], *, top: float | None = None, weight: float = 0.0
) -> Scored:
    """bm25 scores (higher is better) → evidence ``r / (max(top, weight) + h)``; ``top``
    defaults to the list's best score, ``weight`` is the query's (module docstring)."""
    best = max((r for _, r in results), default=0.0) if top is None else top
    scale = max(best, weight, 0.0) + LEXICAL_HALF
    return Scored([(i, r, max(_clip(r / scale), LEXICAL_FLOOR)) for i, r in results])


def semantic(
    results: Sequence[tuple[str, float]],
    *,
    unrelated: float = PRIOR_BACKGROUND,
    decisive: float = 1.0,
) -> Scored:
    """Cosines → evidence above the candidates' background (module docstring):
    ``(c − bg) / (max(decisive, best) − bg)``. ``unrelated`` and ``decisive`` come from
    the embedder's calibration (what unrelated sentences score; from which cosine a match
    is certain) — with MiniLM 0.2 and 1.0."""
    if not results:
        return Scored([])
    sims = sorted(r for _, r in results)
    median = (
        sims[len(sims) // 2]
        if len(sims) % 2
        else (sims[len(sims) // 2 - 1] + sims[len(sims) // 2]) / 2
    )
    background = median if len(sims) >= MIN_BACKGROUND else min(median, unrelated)
    room = max(max(decisive, sims[-1]) - background, 1e-6)
    return Scored([(i, c, _clip((c - background) / room)) for i, c in results])


def direct(results: Sequence[tuple[str, float]]) -> Scored:
    """Scores that already are evidence in [0, 1] (key matches, walk shares)."""
    return Scored([(i, r, _clip(r)) for i, r in results])


def fuse(lists: Mapping[str, Scored], weights: Mapping[str, float]) -> list[Fused]:
    """Noisy-OR of weighted evidence (module docstring); best first."""
    table: dict[str, Fused] = {}
    miss: dict[str, float] = {}
    for name, scored in lists.items():
        weight = min(max(weights.get(name, 1.0), 0.0), 1.0)
        if weight <= 0:
            continue
        for rank, (node_id, raw, evidence) in enumerate(scored.items, start=1):
            entry = table.setdefault(node_id, Fused(node_id))
            if name in entry.ranks:
                continue
            entry.ranks[name] = rank
            entry.raw[name] = raw
            entry.evidence[name] = evidence
            miss[node_id] = miss.get(node_id, 1.0) * (1.0 - weight * evidence)
    for node_id, entry in table.items():
        entry.score = 1.0 - miss[node_id]
    return sorted(table.values(), key=lambda f: (-f.score, min(f.ranks.values()), f.id))


def _clip(value: float) -> float:
    return 0.0 if value <= 0 else 1.0 if value >= 1 else value


def fuse_lists(
    ranked: Mapping[str, Sequence[tuple[str, float]]],
    graph: GraphLists,
    weights: Mapping[str, float],
    weight_graph: float,
    seeds: Mapping[str, float] | None = None,
    *,
    query_weight: float = 0.0,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> list[Fused]:
    """Every strategy's ranked ``(id, raw score)`` list → evidence → one order.

    ``ranked`` holds ``fulltext`` (bm25), ``vector`` (cosine) and ``key``; ``graph``
    the graph strategies. The entity and time lists are full text inside a constraint
    (the entity named, the time window), so their evidence is lexical on their own
    scale; when the query's other words match none of the entity's memories, its
    (newest) memories all get the same mild boost and meaning orders them (a full-text
    only search keeps them newest first). A walk's node carries the relevance of the best seed
    (``seeds``: the stage-1 score of each seed) times its share on the walk
    (``1/rank · 2^-steps``); the seeds themselves gain nothing from their own walk.
    ``query_weight`` is the full-text query's weight (``Store.match_weight``);
    ``calibration`` the embedder's (how its cosines become evidence)."""
    lists: dict[str, Scored] = {}
    for name, results in ranked.items():
        if name in ("vector", "context", "feedback"):
            lists[name] = semantic(
                results, unrelated=calibration.unrelated, decisive=calibration.decisive
            )
        elif name == "fulltext":
            lists[name] = lexical(results, weight=query_weight)
        else:
            lists[name] = direct(results)
    best = max(seeds.values(), default=0.0) if seeds else 0.0
    for name, results in graph.lists.items():
        via = graph.via.get(name, {})
        walked = Via.SHARED in via.values()
        if name in ("entity", "time") and not walked and any(r for _, r in results):
            # on its own words' weight (the time list's are the query's minus the date)
            lists[name] = lexical(results, weight=graph.weights.get(name, query_weight))
            if name == "time" and narrow(graph.window):
                # inside a window of days or weeks the query names, and matching its
                # other words: at least as strong as a name-only entity match
                lists[name] = Scored([(i, r, max(e, IN_WINDOW)) for i, r, e in lists[name].items])
        elif name == "time" and narrow(graph.window):
            # the query asks what the window holds ("what did I do yesterday?"): all of
            # it, the newest first, at :data:`IN_WINDOW`; meaning orders it
            lists[name] = Scored([(i, r, IN_WINDOW) for i, r in results])
        elif name == "entity" and not walked:
            lists[name] = Scored([(i, r, NAME_ONLY) for i, r in results])
        else:
            share = [(i, r) for i, r in results if via.get(i) is not Via.SEED]
            lists[name] = Scored([(i, r, _clip(r) * best) for i, r in share])
    if graph.linked and "entity" in lists and "vector" in lists:
        lists["entity"] = _with_meaning(lists["entity"], lists["vector"], graph.linked)
    both = {**weights, **dict.fromkeys(graph.lists, weight_graph)}
    return fuse(lists, both)


def _with_meaning(entity: Scored, vector: Scored, linked: set[str]) -> Scored:
    """The entity list plus the meaning matches linked to the named entity that none of
    the query's other words found, at :data:`NAME_ONLY` of their meaning evidence."""
    items = list(entity.items)
    listed = {i for i, _, _ in items}
    items += [(i, 0.0, NAME_ONLY * e) for i, _, e in vector.items if i in linked - listed]
    return Scored(sorted(items, key=lambda item: -item[2]))


def discount_questions(
    fused: list[Fused], asks: AbstractSet[str], idle: AbstractSet[str] = frozenset()
) -> list[Fused]:
    """The memories in ``asks`` only ask a question ("What pet do you have?"): their words
    and meaning match a question best of all, yet the answer is in the reply (which the
    reply walk has already reached from them). They keep :data:`ASKS_ONLY` of their score.
    The memories in ``idle`` say nothing of their own ("lol", "Thanks!",
    :func:`~memloci.words.says_nothing`): they match only through the turns
    around them (their full-text row holds them) and their session; they keep
    :data:`SAYS_NOTHING` (the caller leaves out one whose words the query asks for: a
    search for "lol" finds "lol"). Best first again."""
    if not asks and not idle:
        return fused
    for entry in fused:
        if entry.id in idle:
            entry.score *= SAYS_NOTHING
            entry.note = f"says nothing of its own (×{SAYS_NOTHING:g})"
        elif entry.id in asks:
            entry.score *= ASKS_ONLY
            entry.note = f"asks, does not tell (×{ASKS_ONLY:g})"
    return sorted(fused, key=lambda f: (-f.score, min(f.ranks.values()), f.id))


def favour_person(
    fused: list[Fused], people: Mapping[str, str | None], person: str, name: str | None = None
) -> list[Fused]:
    """The query names one person who speaks (or is the subject of) memories here: a
    question about someone is answered mostly by what they said, or what is known of
    them (on the LoCoMo dev turns, 96 % of the evidence of a question that names one of
    the two speakers is that speaker's own turns). A memory said by, or about, someone
    else (``people``: id → speaker or subject) keeps :data:`OTHER_PERSON` of its score;
    memories of no one keep theirs. ``name``: what the query calls ``person`` (a label
    such as ``user`` is called by a name), said in ``why``. Best first again."""
    for entry in fused:
        other = people.get(entry.id)
        if other and other != person:
            entry.score *= OTHER_PERSON
            note = f"said by another person than {name or person} (×{OTHER_PERSON:g})"
            entry.note = "; ".join(filter(None, [entry.note, note]))
    return sorted(fused, key=lambda f: (-f.score, min(f.ranks.values()), f.id))


Group = tuple[str, str]  # (kind, key): ("session", "s3") or ("day", "2023-05-08")


def confident(best: float) -> float:
    """How far evidence drawn from the best hits counts (their sessions, the meaning of
    the best facts): fully when the best hit scores :data:`CONFIDENT` or more, in
    proportion below — what goes with a weak best hit is no evidence of relevance, and
    a query nothing answers keeps low scores."""
    return min(1.0, best / CONFIDENT)


def session_context(
    head: list[Fused], groups: Mapping[str, Group | None], weight: float
) -> list[Fused]:
    """``head`` with each memory's group — its session, or for a memory without one the
    day it happened — as one more strategy, named by the group's kind (``"session"`` /
    ``"day"``).

    A group's strength is its best score in ``head``; a memory's evidence is where its
    group's strength stands between the weakest group's and the strongest's (0–1), times
    :func:`confident` of the strongest's (the session of a weak best hit says little). So
    when the best hits all share one group, or none has one, nothing changes; otherwise
    a memory of the strongest group gains ``weight`` of its remaining headroom, like any
    strategy of the noisy-OR. Memories without a group get nothing. The best hit is in
    the strongest group and gains the most, so it is never moved down. Best first
    again."""
    strength: dict[Group, float] = {}
    for entry in head:
        group = groups.get(entry.id)
        if group:
            strength[group] = max(strength.get(group, 0.0), entry.score)
    if weight <= 0 or len(strength) < 2:
        return head
    top, low = max(strength.values()), min(strength.values())
    if top <= low:
        return head
    order = sorted(strength, key=lambda g: (-strength[g], g))
    rank = {g: i for i, g in enumerate(order, start=1)}
    for entry in head:
        group = groups.get(entry.id)
        # as far as the group stands toward the strongest; the session of a weak best hit
        # says little (a query nothing answers stays low)
        lead = (strength[group] - low) / (top - low) if group else 0.0
        evidence = confident(top) * lead
        if group and evidence > 0:
            entry.ranks[group[0]] = rank[group]
            entry.evidence[group[0]] = evidence
            entry.lent = weight * evidence
            entry.score = 1.0 - (1.0 - entry.score) * (1.0 - entry.lent)
    return sorted(head, key=lambda f: (-f.score, min(f.ranks.values()), f.id))


def rerank(head: list[Fused], relevance: Sequence[float], weight: float) -> list[Fused]:
    """Blend a reranker's relevance ``p`` (0-1) into the fused scores of ``head`` and
    reorder it: ``score = (1 − weight) · fused + weight · p``."""
    for entry, p in zip(head, relevance, strict=True):
        entry.raw["rerank"] = p
        entry.evidence["rerank"] = p
        entry.score = (1.0 - weight) * entry.score + weight * p
    for rank, entry in enumerate(sorted(head, key=lambda f: -f.raw["rerank"]), start=1):
        entry.ranks["rerank"] = rank
    return sorted(head, key=lambda f: (-f.score, min(f.ranks.values()), f.id))
