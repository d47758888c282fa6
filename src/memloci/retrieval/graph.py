"""Graph strategies (layer: retrieval): ranked lists that join the weighted RRF.

Each strategy returns ``[(node_id, score)]`` best first and, per node, how it came
onto the list (:class:`Via`, what the fusion reads) and a reason for people (the search
explanation, ``SearchHit.why``). Every store call is bounded by the
caller's :class:`~memloci.storage.base.NodeFilter`. Two stages:

1. :func:`anchored` — what the query itself *states*, for any intent, and the
   full-text search (:class:`Lexical`) in the same pass:
   ``entity``  memories linked to the entities the query names (name or alias),
               ranked by the *rest* of the query (the name is now a constraint): the
               full-text matches of the rest, deepest :data:`ENTITY_DEPTH` × ``limit``,
               that are linked to them — one search serves both lists;
   ``time``    memories inside the time window the query names ("in May 2023"),
               ranked by the rest of the query.
2. :func:`walks` — from the *seeds*, the top hits after fusing stage 1 with full
   text, vector and key; routed by intent (:data:`ROUTES`):
   ``when`` → ``temporal``  turns before / after the seeds along ``temporal`` edges
               (a conversation's order); "after the trip" walks forward only;
   ``why``  → ``causal``    causes and effects of the seeds along ``causal`` edges;
   ``who`` / ``what`` → ``entity`` (when the query names none) memories sharing a
               specific entity with the seeds;
   ``general`` → none;
   and for every intent but ``when`` (whose temporal walk covers it): ``reply``, the
               two turns after each of the top :data:`REPLY_SEEDS` hits — in a
               conversation what one turn raises is answered by the reply and the
               follow-up, which often share few words with the question.

Chains start from the first ``plan.seeds`` hits (1 for a simple query: it is about
one event; 5 for a complex one), walk ``plan.depth`` steps and keep at most
``plan.limit`` nodes. The seed ranked ``r`` heads its chain with score ``1/r``; a
node ``d`` steps away scores ``1/r · 2^-d`` — after the hit it hangs off, near before
far.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from memloci.models import Entity
from memloci.retrieval.intent import Intent, QueryPlan
from memloci.retrieval.mentions import is_name_word
from memloci.retrieval.query import BEFORE_PERSON, ROLE_PHRASE, fts_match, third_person
from memloci.retrieval.timephrases import (
    YEARS_BACK,
    TimeWindow,
    chain_direction,
    narrow,
    time_window,
)
from memloci.storage.base import NodeFilter, Store
from memloci.words import terms, uncased

ROUTES: dict[Intent, tuple[str, ...]] = {
    Intent.WHY: ("causal",),
    Intent.WHEN: ("temporal",),
    Intent.WHO: ("entity",),
    Intent.WHAT: ("entity",),
    Intent.GENERAL: (),
}
REPLY_SEEDS = 3  # top hits whose next two turns (the reply, the follow-up) join as "reply"
ENTITY_DEPTH = 4  # the entity list is read from this many times ``limit`` full-text matches
SHARED_ENTITY_MAX_LINKS = 50  # an entity linked to more memories than this links too much


class Via(StrEnum):
    """How a node came onto a graph list: what the fusion weighs it by (the reason
    beside it only says so to people)."""

    SEED = "seed"  # a top hit a temporal / causal / reply chain starts from
    CHAIN = "chain"  # reached from a seed along a chain or as a reply
    NAMED = "named"  # linked to an entity the query names, found by the rest of the query
    MEANING = "meaning"  # linked to an entity the query names, found by meaning
    SHARED = "shared"  # shares a specific entity with a seed
    WINDOW = "window"  # inside the time window the query names


@dataclass
class GraphLists:
    """The graph strategies' ranked lists and, per list, how each node came onto it
    (``via``) and why, said for people (``reasons``)."""

    lists: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    via: dict[str, dict[str, Via]] = field(default_factory=dict)
    reasons: dict[str, dict[str, str]] = field(default_factory=dict)
    named: list[tuple[str, Entity]] = field(default_factory=list)  # entities the query names
    # a list's own query weight when its words are not the full-text search's (the time
    # list ranks by the query minus its date): ``Store.match_weight`` of those words
    weights: dict[str, float] = field(default_factory=dict)
    # meaning matches linked to an entity the query names (:func:`linked_to_named`)
    linked: set[str] = field(default_factory=set)
    window: TimeWindow | None = None  # the time window the query names

    def add(
        self,
        name: str,
        ranked: list[tuple[str, float]],
        via: Mapping[str, Via],
        reasons: dict[str, str],
    ) -> None:
        if ranked:
            self.lists[name] = ranked
            self.via[name] = dict(via)
            self.reasons[name] = reasons

    def note(self, name: str, node_id: str, via: Via, reason: str) -> None:
        """Put ``node_id`` on list ``name``'s account (not its ranking) with its reason."""
        self.via[name][node_id] = via
        self.reasons[name][node_id] = reason


@dataclass
class Lexical:
    """The query's full-text search: the FTS5 ``match`` it ran, its best ``ranked`` and
    ``words``, the match without the words' other forms (what its weight is read from:
    "win" or "won" is one word of the query, not two)."""

    match: str
    ranked: list[tuple[str, float]]
    words: str


def fulltext_search(store: Store, flt: NodeFilter, query: str, *, limit: int) -> Lexical:
    """The full-text search for the whole query."""
    match = fts_match(query)
    found = store.search.fulltext(flt, match, limit) if match else []
    return Lexical(match, found, fts_match(query, other_forms=False))


def anchored(
    store: Store,
    flt: NodeFilter,
    query: str,
    *,
    limit: int,
    named: list[tuple[str, Entity]] | None = None,
    unknown: Sequence[str] = (),
) -> tuple[GraphLists, Lexical]:
    """Stage 1, before any seed is known: what the query itself names — its entities
    (any intent; kept in ``named``) and its time window — and the full-text search.
    When the entity list holds the memories of the names the query names, the names
    are its constraint, not words to match: the full-text search is for the other words
    (in one person's store their name is in most memories yet rare across everyone's,
    so a memory sharing only the name would count as a strong match). The people it
    names that no memory does (``unknown``, :func:`strangers`) are no words to match
    either, here or in the time list: no memory can hold them, so they would only weigh
    the query down."""
    out = GraphLists()
    if named is None:  # ``named``: the entities the query names, when already looked up
        named = store.graph.entities_in_text(flt.namespaces, query)
    out.named = named
    # the words to match: the query's, less the people no memory names
    asked = " ".join(without_names(query, [], unknown)) if unknown else query
    lexical = None
    if named:
        lexical = named_entities(store, flt, query, named, out, limit=limit, unknown=unknown)
    if lexical is None:
        lexical = fulltext_search(store, flt, asked, limit=limit)
    window = time_window(query)
    if window is not None:
        out.window = time_strategy(store, flt, asked, window, out, limit=limit)
    return out, lexical


def walks(
    store: Store,
    flt: NodeFilter,
    query: str,
    plan: QueryPlan,
    seeds: Sequence[str],
    out: GraphLists,
) -> None:
    """Stage 2, from the seeds (the top hits after stage 1): the walks the intent routes
    to; chains from the first ``plan.seeds`` hits, at most ``plan.limit`` nodes each."""
    routed = ROUTES[plan.intent]
    start = list(seeds[: plan.seeds])
    if "temporal" in routed:
        direction = chain_direction(query)
        chain(store, flt, start, "temporal", plan.depth, direction, out, limit=plan.limit)
    if "causal" in routed:
        chain(store, flt, start, "causal", plan.depth, "both", out, limit=plan.limit)
    if "entity" in routed and "entity" not in out.lists:
        shared_entities(store, flt, seeds[: plan.limit], out, limit=plan.limit)
    if "temporal" not in routed:
        # what a turn raises is answered in the turns after it: the reply, the follow-up
        replies = list(seeds[:REPLY_SEEDS])
        chain(store, flt, replies, "temporal", 2, "forward", out, limit=plan.limit, name="reply")


def chain(
    store: Store,
    flt: NodeFilter,
    seeds: Sequence[str],
    relation: str,
    depth: int,
    direction: str,
    out: GraphLists,
    *,
    limit: int,
    name: str | None = None,
) -> None:
    """Temporal or causal chain from the seeds (see the module docstring), added to
    ``out`` as ``name`` (default: the relation)."""
    rank = {s: i for i, s in enumerate(seeds, start=1)}
    # the seeds head their own chains (distance 0), so a neighbour is ranked after the
    # hit it hangs off and never overtakes it on the chain's evidence alone
    scored: list[tuple[str, float]] = [(s, 1.0 / r) for s, r in rank.items()]
    via = dict.fromkeys(rank, Via.SEED)
    reasons: dict[str, str] = dict.fromkeys(rank, f"{relation} chain seed")
    walked = store.graph.walk(
        flt, seeds, relation, depth=depth, direction=direction, limit=limit * 4
    )
    if not walked:
        return
    for node_id, seed, distance, sign in walked:
        scored.append((node_id, 1.0 / rank[seed] / 2**distance))
        via[node_id] = Via.CHAIN
        reasons[node_id] = (
            f"reply to [{seed}] (+{distance})"
            if name == "reply"
            else _chain_reason(relation, seed, distance, sign)
        )
    scored.sort(key=lambda r: -r[1])
    out.add(name or relation, scored[:limit], via, reasons)


def _chain_reason(relation: str, seed: str, distance: int, sign: int) -> str:
    """ "temporal chain from [seed] (+1)": one step after it; "cause of [seed]"."""
    if relation == "causal":
        what = "cause" if sign < 0 else "effect"
        return f"{what} of [{seed}]" + (f" ({distance} steps)" if distance > 1 else "")
    return f"temporal chain from [{seed}] ({'+' if sign > 0 else '-'}{distance})"


def meaning_query(
    query: str, named: Sequence[tuple[str, Entity]], strangers: Sequence[str] = ()
) -> str:
    """The query as it is embedded: the names of the entities it names stand as a
    pronoun ("What does Alice cook on Sundays?" → "What does they cook on Sundays?";
    "Alice's" → "their"), since the entity list already holds that person's memories
    and a name in the vector pulls the memories that only greet or mention them ("Hey
    Alice!"); so do ``strangers``, people no memory names (:func:`strangers`), whose name
    can only pull other people's. Unchanged when fewer than two other words would be
    left ("Describe Alice"), and a name typed in lower case ("will") may be a plain word.
    "The user" and "the assistant" stand as a pronoun too ("Where is the user going on
    vacation?" → "Where is they going on vacation?"): as a word, "user" matches the label
    all of their memories carry (or the "User …" of an agent's facts) alike. And the
    query's "I" / "my" stand as "they" / "their", as in the embedded memories
    (:func:`~memloci.retrieval.query.third_person`)."""
    bare = third_person(ROLE_PHRASE.sub(lambda f: "their" if f.group(2) else "they", query))
    query = bare if terms(bare) else query  # "the user" alone stays as it is
    names = {n for n, _ in named} | set(strangers)
    if not names or len(without_names(query, named, strangers)) < 2:
        return query

    cased = not uncased(query)  # in "what did caroline paint?", "caroline" is Caroline

    def pronoun(found: re.Match[str]) -> str:
        if cased and not found.group(0)[:1].isupper():  # "will" may be a plain word
            return found.group(0)
        return "their" if found.group(2) else "they"

    out = query
    for name in sorted(names, key=len, reverse=True):
        words = r"\W+".join(re.escape(w) for w in name.split())
        pattern = rf"(?<![\w'’])({words})(['’]s)?(?![\w'’])"
        out = re.sub(pattern, pronoun, out, flags=re.IGNORECASE)
    return out


_PERSON = re.compile(r"(?<![\w'’])([A-Z][a-z]+)(['’]s)?(?![\w'’])")


def strangers(
    store: Store, flt: NodeFilter, query: str, named: Sequence[tuple[str, Entity]]
) -> list[str]:
    """Capitalised words the query uses as a person — "Robin's", "did Robin", "Robin
    and Kim" — that name no known entity and that no memory the caller sees holds: a
    person the store knows by another name, or not at all. One full-text probe each."""
    known = {w for name, _ in named for w in terms(name)}
    out: list[str] = []
    for found in _PERSON.finditer(query):
        word = found.group(1)
        if found.start() == 0 or word.lower() in known or not is_name_word(word):
            continue
        before = query[: found.start()].split()
        person = found.group(2) or (before and before[-1].lower() in BEFORE_PERSON)
        if not person and not query[found.end() :].lstrip().startswith("and "):
            continue
        if word not in out and not store.search.fulltext(flt, f'"{word.lower()}"', 1):
            out.append(word)
    return out


def without_names(
    query: str, named: Sequence[tuple[str, Entity]], others: Sequence[str] = ()
) -> list[str]:
    """The query's words (:func:`terms`) minus the words of the names in ``named`` (and
    of the names ``others``)."""
    names = {w for name in [*(n for n, _ in named), *others] for w in terms(name)}
    return [t for t in terms(query) if t not in names]


def named_entities(
    store: Store,
    flt: NodeFilter,
    query: str,
    named: list[tuple[str, Entity]],
    out: GraphLists,
    *,
    limit: int,
    unknown: Sequence[str] = (),
) -> Lexical | None:
    """Memories linked to the entities the query names, ranked by the rest of the query
    (the name is now a constraint, so it no longer counts as a matching word); when the
    rest matches none of them, all of them, newest first. One full-text search of the
    rest (``ENTITY_DEPTH × limit`` deep) gives both this list (its matches linked to the
    entities) and the full-text list, returned; None when the full-text search must be
    for the whole query: nothing but the names to search, or no memory the caller sees
    is linked to them (so the name is searched as a word)."""
    rest = without_names(query, named, unknown)
    ids = [e.id for _, e in named]
    words = " ".join(rest)
    match = fts_match(words)
    found = store.search.fulltext(flt, match, limit * ENTITY_DEPTH) if match else []
    linked = store.entities.linked_nodes(flt, [i for i, _ in found], ids) if found else {}
    ranked = [r for r in found if r[0] in linked][:limit]
    if not ranked:
        # nothing else in the query matches ("Describe Sarah", "Who exactly is Sarah
        # King?"): the entity's memories, newest first (score 0, a mild boost)
        ranked = store.graph.entity_fulltext(flt, ids, "", limit)
        linked = store.entities.linked_nodes(flt, [i for i, _ in ranked], ids) if ranked else {}
    if not ranked:
        return None
    out.add(
        "entity",
        ranked,
        dict.fromkeys((i for i, _ in ranked), Via.NAMED),
        {i: _label(named, linked.get(i, set())) for i, _ in ranked},
    )
    return Lexical(match, found[:limit], fts_match(words, other_forms=False)) if match else None


def _label(named: list[tuple[str, Entity]], linked: set[str], suffix: str = "") -> str:
    """``entity <names>``: the named entities a memory is linked to — only those (another
    user's entity of the same given name is nobody this caller knows)."""
    names = dict.fromkeys(e.canonical_name for _, e in named if e.id in linked)
    return "entity " + ", ".join(names) + suffix


def linked_to_named(store: Store, flt: NodeFilter, ids: Sequence[str], out: GraphLists) -> None:
    """Which of ``ids`` (the meaning matches) are linked to an entity the query names,
    kept in ``out.linked``: found by meaning but by none of the query's other words,
    they are still about the entity (fused at :data:`~memloci.retrieval.fusion.NAME_ONLY`
    of their meaning evidence)."""
    if not out.named or "entity" not in out.lists or not ids:
        return
    unlisted = [i for i in ids if i not in out.reasons["entity"]]
    named = {e.id for _, e in out.named}
    for node_id, entities in store.entities.linked_nodes(flt, unlisted, list(named)).items():
        out.linked.add(node_id)
        out.note("entity", node_id, Via.MEANING, _label(out.named, entities, ", by meaning"))


def shared_entities(
    store: Store, flt: NodeFilter, seeds: Sequence[str], out: GraphLists, *, limit: int
) -> None:
    """Memories sharing a specific entity (see :data:`SHARED_ENTITY_MAX_LINKS`) with the
    seeds, by the seeds' ranks (``Σ 1/rank``)."""
    if not seeds:
        return
    rank = {s: i for i, s in enumerate(seeds, start=1)}
    scores: dict[str, float] = {}
    via: dict[str, tuple[int, str, str]] = {}
    for node_id, seed, entity_id in store.graph.entity_neighbours(
        flt, seeds, max_links=SHARED_ENTITY_MAX_LINKS, limit=limit * 4
    ):
        scores[node_id] = scores.get(node_id, 0.0) + 1.0 / rank[seed]
        if node_id not in via or rank[seed] < via[node_id][0]:
            via[node_id] = (rank[seed], entity_id, seed)
    ranked = sorted(scores.items(), key=lambda r: (-r[1], r[0]))[:limit]
    if not ranked:
        return
    labels = _entity_names(store, flt, {via[i][1] for i, _ in ranked})
    reasons = {
        i: f"shares {labels.get(via[i][1], 'an entity')} with [{via[i][2]}]" for i, _ in ranked
    }
    out.add("entity", ranked, dict.fromkeys(reasons, Via.SHARED), reasons)


def _entity_names(store: Store, flt: NodeFilter, ids: set[str]) -> dict[str, str]:
    names: dict[str, str] = {}
    for ns in flt.namespaces:
        for entity_id in ids - set(names):
            entity = store.entities.get_entity(ns, entity_id)
            if entity is not None:
                names[entity_id] = entity.canonical_name
    return names


def time_strategy(
    store: Store,
    flt: NodeFilter,
    query: str,
    window: TimeWindow,
    out: GraphLists,
    *,
    limit: int,
) -> TimeWindow:
    """Memories inside the query's time window, ranked by the rest of the query. A month
    named without a year whose window holds no match is looked for a year earlier, up to
    :data:`~memloci.retrieval.timephrases.YEARS_BACK` years. When the rest of the query
    matches nothing in a narrow window (a day, a week, a month: "what did I do
    yesterday?"), the window's memories are the list, newest first. Returns the window
    that matched, else ``window``."""
    phrase = set(terms(window.phrase))
    words = " ".join(t for t in terms(query) if t not in phrase)
    match = fts_match(words)
    named = window
    for _ in range(1 + (YEARS_BACK if window.yearless and match else 0)):
        inside = _inside(flt, window)
        if match and inside is not None:
            ranked = store.search.fulltext(inside, match, limit)
            if ranked:
                out.weights["time"] = store.search.match_weight(fts_match(words, other_forms=False))
                ids = [i for i, _ in ranked]
                label = window.label()
                out.add("time", ranked, dict.fromkeys(ids, Via.WINDOW), dict.fromkeys(ids, label))
                return window
        window = window.year_before()
    inside = _inside(flt, named)
    if narrow(named) and inside is not None:
        # the query asks what the window holds ("what did I do yesterday?", "what did I
        # tell you on 21 November?"), its other words matching nothing there: all of it,
        # the newest first (the fusion gives each the same evidence; meaning orders them)
        held = store.memories.list_nodes(inside, limit=limit, order="-event")
        ids = [m.id for m in held]
        out.add(
            "time",
            [(i, 0.0) for i in ids],
            dict.fromkeys(ids, Via.WINDOW),
            dict.fromkeys(ids, named.label()),
        )
    return named


def _inside(flt: NodeFilter, window: TimeWindow) -> NodeFilter | None:
    """``flt`` narrowed to ``window``; None when the two leave no time between them."""
    after = max((t for t in (flt.after, window.start) if t is not None), default=None)
    before = min((t for t in (flt.before, window.end) if t is not None), default=None)
    if after is not None and before is not None and after >= before:
        return None
    return replace(flt, after=after, before=before)
