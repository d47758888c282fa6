"""The search pipeline (layer: retrieval): strategies → score-aware fusion → hits.

Named recipes pick the strategies: ``hybrid`` (default: full text + vector +
fuzzy key, then the graph strategies the query's intent routes to), ``core`` (the
same without graph), ``fulltext`` (BM25 only) and ``vector`` (dense only) — the
last three are the baselines the benchmarks compare against.

Graph in two stages (:mod:`memloci.retrieval.graph`): what the query names (its
entities, a time window) is searched while the query is being embedded and fused
with full text, vector and key; the top hits of that fusion are the *seeds* of the
walks the query's intent routes to (temporal / causal chains, shared entities),
which join the same fusion (weight ``weight_graph``) for the final order; see
:mod:`memloci.retrieval.fusion` for how scores become evidence and one 0–1 score.

Last stages (``hybrid`` and ``core`` only): a memory among the best
:data:`QUESTION_WINDOW` that only asks a question keeps half its score, one that says
nothing of its own ("lol", "Thanks!") 0.3 of it
(:func:`~memloci.retrieval.fusion.discount_questions`); in ``hybrid`` the sessions of
those hits count too (:func:`~memloci.retrieval.fusion.session_context`,
``weight_session``); then, off unless
``settings.reranker`` names one, a :class:`~memloci.providers.base.Reranker` reads
the query with each of the best ``rerank_candidates`` hits and its relevance is blended
with their fused score (``rerank_weight``); a reranker that fails leaves the fused
order and says so.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from memloci.config import Settings
from memloci.errors import ProviderError, ValidationError
from memloci.models import (
    EdgeType,
    Entity,
    EntityType,
    MemoryNode,
    NodeType,
    SearchHit,
    SourceType,
)
from memloci.providers.base import Embedder, Reranker, calibration_of, load_reranker
from memloci.retrieval.embedding import QueryEmbedding, degraded_note
from memloci.retrieval.feedback import FEEDBACK_WEIGHT, feedback_vector
from memloci.retrieval.fusion import (
    Fused,
    Group,
    confident,
    discount_questions,
    favour_person,
    fuse_lists,
    rerank,
    session_context,
)
from memloci.retrieval.graph import (
    GraphLists,
    anchored,
    fulltext_search,
    linked_to_named,
    meaning_query,
    strangers,
    walks,
)
from memloci.retrieval.incontext import meaning_in_context
from memloci.retrieval.intent import EmbeddingIntentClassifier, QueryPlan, plan_query
from memloci.retrieval.mentions import speaker_name
from memloci.retrieval.nicknames import nicknamed, with_surnames
from memloci.retrieval.query import (
    FIRST_PERSON,
    ROLE_PHRASE,
    asks_only,
    key_form,
    labelled,
    subjects,
)
from memloci.retrieval.relevance import by_relevance
from memloci.retrieval.replaced import replaced
from memloci.retrieval.spelling import meant
from memloci.storage.base import NodeFilter, Store
from memloci.words import asks_reaction, only_reacts, says_nothing, terms, uncased

RECIPES: dict[str, tuple[str, ...]] = {
    "hybrid": ("fulltext", "vector", "key", "graph"),
    "core": ("fulltext", "vector", "key"),
    "fulltext": ("fulltext",),
    "vector": ("vector",),
}
_RAW = {
    "fulltext": "bm25",
    "vector": "cosine",
    "context": "cosine",
    "feedback": "cosine",
    "rerank": "p",
}
REFINED = ("hybrid", "core")  # get the last stages (questions, reranker); baselines stay as is
QUESTION_WINDOW = 30  # fused hits read to find the ones that only ask (discounted)
PERSON_WINDOW = 100  # fused hits read when the query names one speaker (favour_person)
CALLED_MIN, CALLED_SHARE = 3, 0.9  # a label is the named person's (see Retriever._person)
# the speaker labels each role goes by (role_person)
ROLE_LABELS = {"user": {"user", "human", "me"}, "assistant": {"assistant", "ai", "bot"}}
log = logging.getLogger(__name__)
_LABELS = {
    "fulltext": "full text",
    "vector": "meaning",
    "context": "meaning in context",
    "feedback": "meaning of the best facts",
    "key": "key",
    "temporal": "",
    "causal": "",
    "entity": "",
    "time": "time",
    "session": "session",  # "session #1": the strongest session among the best hits
    "day": "day",  # "day #1": the same, by the day of memories without a session
    "rerank": "reranker",
    "replaces": "holds now in place of the hit",  # replaced.py: the newer fact of a hit
}


@dataclass
class Retriever:
    """Runs one search: every interface's search ends here."""

    store: Store
    embedder: Embedder | None
    settings: Settings
    embed_query: Callable[[str], npt.NDArray[np.float32]] | None = None
    reranker: Reranker | None = None
    query_vectors: QueryEmbedding | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.reranker is None and self.settings.reranker not in ("none", ""):
            # built now so a missing model fails at open, naming the extra
            self.reranker = load_reranker(self.settings.reranker, **self.settings.reranker_options)
        if self.embedder is not None:
            # a failing embedder degrades search to full text + key + graph
            self.query_vectors = QueryEmbedding(self.embed_query or self.embedder.embed_query)
            EmbeddingIntentClassifier(self.embedder).ready()  # embeds exemplars, background

    def search(
        self, query: str, flt: NodeFilter, k: int = 10, *, recipe: str = "hybrid"
    ) -> list[SearchHit]:
        if recipe not in RECIPES:
            raise ValidationError(
                f"unknown search recipe {recipe!r}", hint=f"use one of {sorted(RECIPES)}"
            )
        strategies = RECIPES[recipe]
        n = max(self.settings.candidates, k * 3)
        ranked: dict[str, list[tuple[str, float]]] = {}
        vector: Future[npt.NDArray[np.float32]] | None = None
        qv = self.query_vectors if "vector" in strategies else None
        graphs = "graph" in strategies and self.settings.weight_graph > 0
        # the vector scan, and (hybrid) the turns around its best matches in context
        scan = _VectorScan(self.store, flt, n, context=graphs and self.settings.weight_context > 0)
        # the entities the query names (one lookup), and the people it names that no
        # memory does (a probe each): their names are not embedded
        named = self.store.graph.entities_in_text(flt.namespaces, query) if graphs else []
        if graphs:  # and the people it calls otherwise: "Mel" for a speaker "Melanie"
            named += nicknamed(self.store, flt, query, named)
            named = with_surnames(self.store, flt, query, named)
        # the people it names that no memory does: neither embedded nor weighed as words
        unknown = strangers(self.store, flt, query, named) if graphs else []
        if qv is not None:
            # embed the query on another core (onnxruntime releases the GIL) and scan the
            # vectors right after, there too, while SQLite runs the full-text search and
            # the graph's first stage here; None while the embedder is known to be down
            vector = qv.start(meaning_query(query, named, unknown), then=scan)
        graph = GraphLists()
        lexical = None
        if graphs:
            # stage 1, still while the query is being embedded: what the query names,
            # and the full-text search with it (names the entity list holds are its
            # constraint, not words to match)
            graph, lexical = anchored(self.store, flt, query, limit=n, named=named, unknown=unknown)
        query_weight = 0.0
        if "fulltext" in strategies:
            lexical = lexical or fulltext_search(self.store, flt, query, limit=n)
            ranked["fulltext"] = lexical.ranked
            query_weight = self.store.search.match_weight(lexical.words)
        key = None  # also while the query is being embedded (listed after the vectors)
        if "key" in strategies and 0 < len(terms(query)) <= 6:
            key = self.store.search.key_search(flt, key_form(query), n)
        query_vector = qv.result(vector) if qv is not None else None
        respelt = None
        if query_vector is not None:
            ranked["vector"] = scan.result()
            respelt = meant(self.store, flt, query, ranked["vector"], unknown) if lexical else None
            if respelt is not None:  # "alergic" meant "allergic": its words searched again
                query = respelt.query
                if graphs:
                    graph, lexical = anchored(
                        self.store, flt, query, limit=n, named=named, unknown=unknown
                    )
                else:
                    lexical = fulltext_search(self.store, flt, query, limit=n)
                ranked["fulltext"] = lexical.ranked
                query_weight = self.store.search.match_weight(lexical.words)
            if scan.context is not None:
                ranked["context"] = scan.context
            if graphs:
                linked_to_named(self.store, flt, [i for i, _ in ranked["vector"]], graph)
        if key is not None:
            ranked["key"] = key
        down = qv.down if qv is not None else None
        weights = {
            "fulltext": self.settings.weight_fulltext,
            "vector": self.settings.weight_vector,
            "context": self.settings.weight_context,
            "key": self.settings.weight_key,
        }
        fused = self._fuse(ranked, weights, graph, query_weight=query_weight)
        if graphs and query_vector is not None and not unknown:
            # the best hits are facts: meaning searched again from where they are
            moved = feedback_vector(self.store, flt, [f.id for f in fused], query_vector)
            if moved is not None:
                ranked["feedback"] = self.store.search.vector_search(flt, moved, n)
                weights["feedback"] = FEEDBACK_WEIGHT * confident(fused[0].score)
                fused = self._fuse(ranked, weights, graph, query_weight=query_weight)
        if graphs:
            # stage 2: walks from the seeds, the top hits so far
            plan = self.plan(query, vector)
            top_seeds = fused[: max(plan.seeds, plan.limit)]
            walked = len(graph.lists)
            walks(self.store, flt, query, plan, [f.id for f in top_seeds], graph)
            if len(graph.lists) > walked:
                relevance = {f.id: f.score for f in top_seeds}
                fused = self._fuse(ranked, weights, graph, relevance, query_weight=query_weight)
        reranking = self.reranker is not None and recipe in REFINED
        want = max(k, self.settings.rerank_candidates) if reranking else k
        # the head read once: questions in it are discounted, the best ``want`` returned
        refined = recipe in REFINED
        head = fused[: max(want, QUESTION_WINDOW) if refined else want]
        nodes = {
            m.id: m for m in self.store.memories.get_nodes(flt.namespaces, [f.id for f in head])
        }
        person = self._person(flt, query, named, nodes) if refined and named else None
        by_role = False
        if person is None and refined and graphs:
            person = role_person(query, nodes.values()) or handle_person(query, nodes.values())
            by_role = person is not None
        if person is not None:  # over a wider head, so their memories further down move up
            wide = fused[:PERSON_WINDOW]
            beyond = [f.id for f in wide[len(head) :]]
            speaks = any(m.speaker and same_person(m.speaker, person[0]) for m in nodes.values())
            if by_role or not speaks:
                # a label meant by a role or handle ("my", "the user") is a speaker's: what
                # another speaker said is discounted, never a fact about someone ("Tom's
                # partner is Lena" answers "who is my partner?"); a person who says none
                # of the hits, only the subject of facts ("Ana Souza is the user's
                # friend"), is talked about: facts about others are discounted, never
                # the turns that talk about her
                seen = [*nodes.values(), *self.store.memories.get_nodes(flt.namespaces, beyond)]
                people = {m.id: p for m in seen if (p := m.speaker if by_role else _subject_of(m))}
            else:
                people = self.store.memories.people_of(flt.namespaces, beyond)
                people |= {i: p for i, m in nodes.items() if (p := person_of(m))}
            # the labels the person goes by ("Fahim", then "Fahim Khan") are all theirs
            theirs = {p for p in set(people.values()) if p and same_person(p, person[0])}
            people = {i: person[0] if p in theirs else p for i, p in people.items()}
            fused = favour_person(wide, people, *person) + fused[len(wide) :]
            head = fused[: len(head)]
            risen = [f.id for f in head if f.id not in nodes]
            nodes |= {m.id: m for m in self.store.memories.get_nodes(flt.namespaces, risen)}
        asks = {i for i, m in nodes.items() if refined and asks_only(m.content, said=_said(m))}
        asked = set(terms(query))  # "lol" is found when asked for
        # praise too says nothing, unless the query asks how someone took something
        idles = says_nothing if asks_reaction(query) else only_reacts
        idle = {
            i
            for i, m in nodes.items()
            if refined and idles(m.content) and not asked & set(terms(m.content))
        }
        top = [f for f in discount_questions(head, asks, idle) if f.id in nodes]
        if "graph" in strategies:  # the sessions (or days) of the best hits
            top = session_context(top, _groups(nodes), self.settings.weight_session)
        if refined:
            top = self._said_once(replaced(self.store, top, nodes, flt), nodes, flt)
            if len(top) < want and len(head) < len(fused):
                # facts merged into their turns: the next hits fill their places
                more = fused[len(head) : len(head) + want - len(top)]
                found = self.store.memories.get_nodes(flt.namespaces, [f.id for f in more])
                nodes |= {m.id: m for m in found}
                top += [f for f in more if f.id in nodes]
        top = top[:want]
        failed = None
        if reranking:
            top, failed = self._rerank(query, top, nodes)
        # the fused ranking's top k, scored and ordered by calibrated relevance
        candidates = len(ranked.get("vector") or ()) or len(fused)
        scored = by_relevance(
            top[:k],
            candidates=candidates,
            query_weight=query_weight,
            calibration=calibration_of(self.embedder),
        )
        hits = [_hit(nodes[f.id], f, graph, score) for f, score in scored]
        if failed is not None:
            hits = [h.model_copy(update={"why": f"{h.why}; {failed}"}) for h in hits]
        if respelt is not None:
            hits = [h.model_copy(update={"why": f"{h.why}; {respelt.note()}"}) for h in hits]
        if down is not None:  # say so in every hit: meaning was not searched
            note = degraded_note(down)
            hits = [
                h.model_copy(update={"why": f"{h.why}; {note}" if h.why else note}) for h in hits
            ]
        return hits

    def _person(
        self,
        flt: NodeFilter,
        query: str,
        named: Sequence[tuple[str, Entity]],
        nodes: dict[str, MemoryNode],
    ) -> tuple[str, str] | None:
        """The one person the query names, as ``nodes`` (the best hits) label them, and
        the name the query calls them by: by their name (:func:`named_person`; of two
        people, the one it names as who does what it asks, :func:`subjects`), else the
        one speaker label of at least :data:`CALLED_MIN` of them whose memories are
        nearly all (:data:`CALLED_SHARE`) linked to a named person — a speaker labelled
        `user` or by a handle, whose turns the worker linked to the name the other
        speaker calls them by ("Thanks, Mel!"). None when there is no such one person."""
        person = named_person(named, nodes.values())
        if person is None:  # "What did Jon say about Gina's store?": Jon's words
            said = [n for n, e in named if e.type is EntityType.PERSON]
            if len(said) > 1 and len(doer := subjects(query, said)) == 1:
                person = named_person([(n, e) for n, e in named if n == doer[0]], nodes.values())
        if person is not None:
            return person, person
        people = [e.id for _, e in named if e.type is EntityType.PERSON]
        by_label: dict[str, list[str]] = {}
        for m in nodes.values():
            if m.speaker:
                by_label.setdefault(m.speaker, []).append(m.id)
        if not people or len(by_label) < 2:
            return None
        links = self.store.entities.linked_nodes(flt, list(nodes), people)
        called = [
            label
            for label, ids in by_label.items()
            if len(ids) >= CALLED_MIN and sum(i in links for i in ids) >= CALLED_SHARE * len(ids)
        ]
        if len(called) != 1:
            return None
        label = called[0]
        names = {e for i in by_label[label] for e in links.get(i, ())}
        shown = [e.canonical_name for _, e in named if e.id in names]
        return label, shown[0] if len(shown) == 1 else label

    def _said_once(
        self, head: list[Fused], nodes: dict[str, MemoryNode], flt: NodeFilter
    ) -> list[Fused]:
        """``head`` without the facts consolidation derived from turns that are in it too:
        the turn says it in the speaker's own words, and one statement takes one place in
        the top ``k``, at the better of the two scores; the turn's ``why`` names the fact."""
        derived = [f.id for f in head if nodes[f.id].source_type is SourceType.CONSOLIDATION]
        if not derived:
            return head
        shown = {f.id: f for f in head}
        said: set[str] = set()
        for source, fact, _, _ in self.store.graph.walk(
            flt, derived, EdgeType.DERIVED_FROM, depth=1, direction="forward", limit=len(head) * 4
        ):
            if source in shown and fact not in said:
                said.add(fact)
                entry = shown[source]
                entry.score = max(entry.score, shown[fact].score)
                entry.note = "; ".join(filter(None, [entry.note, f"also kept as fact [{fact}]"]))
        if not said:
            return head
        kept = [f for f in head if f.id not in said]
        return sorted(kept, key=lambda f: (-f.score, min(f.ranks.values()), f.id))

    def _rerank(
        self, query: str, top: list[Fused], nodes: dict[str, MemoryNode]
    ) -> tuple[list[Fused], str | None]:
        """The best ``rerank_candidates`` hits (all of ``top``: at least ``k``, so every
        returned score is blended alike) reordered by the reranker blended with their
        fused score (:func:`memloci.retrieval.fusion.rerank`); a failing reranker leaves
        the fused order and says so (second item)."""
        assert self.reranker is not None
        head = top
        # as written: the cross-encoder reads the query as asked, "I" and all
        texts = [
            labelled(n.content, n.speaker, n.key, n.subject) for n in (nodes[f.id] for f in head)
        ]
        try:
            relevance = [float(p) for p in self.reranker.score(query, texts)]
        except ProviderError as exc:
            log.warning("reranker failed (%s); the fused order stands", exc)
            return top, f"not reranked: {exc.message}"
        return rerank(head, relevance, self.settings.rerank_weight), None

    def _fuse(
        self,
        ranked: dict[str, list[tuple[str, float]]],
        weights: dict[str, float],
        graph: GraphLists,
        seeds: dict[str, float] | None = None,
        *,
        query_weight: float = 0.0,
    ) -> list[Fused]:
        return fuse_lists(
            ranked,
            graph,
            weights,
            self.settings.weight_graph,
            seeds,
            query_weight=query_weight,
            calibration=calibration_of(self.embedder),
        )

    def plan(self, query: str, vector: Future[npt.NDArray[np.float32]] | None = None) -> QueryPlan:
        """The query's intent and complexity (exemplars with an embedder, rules without);
        ``vector`` is the query embedding already under way, if any."""
        qv = self.query_vectors
        if qv is None or qv.down is not None:  # no embedder, or it is down: keyword rules
            return plan_query(query)
        return plan_query(
            query,
            embedder=self.embedder,
            vector=(lambda: qv.result(vector)) if vector is not None else None,
            threshold=self.settings.intent_similarity_threshold,
        )


def _said(m: MemoryNode) -> bool:
    """Whether a memory is a message of a conversation (a turn someone said), not a note."""
    return m.type is NodeType.EPISODIC and m.speaker is not None


def _groups(nodes: dict[str, MemoryNode]) -> dict[str, Group]:
    """Each memory's session, or the (UTC) day it happened when it has none."""
    return {
        i: ("session", m.session) if m.session else ("day", m.event_time.date().isoformat())
        for i, m in nodes.items()
    }


class _VectorScan:
    """A search's vector scan, run on the query-embedding thread as soon as the vector
    exists, and there too, with ``context``, the turns around its best matches ranked by
    their meaning in context (:func:`~memloci.retrieval.incontext.meaning_in_context`);
    the store's error, if any, is raised in the caller's thread by :meth:`result`, never
    taken for an embedder failure."""

    def __init__(self, store: Store, flt: NodeFilter, n: int, *, context: bool) -> None:
        self.store, self.flt, self.n, self.in_context = store, flt, n, context
        self.ranked: list[tuple[str, float]] = []
        self.context: list[tuple[str, float]] | None = None
        self.error: BaseException | None = None

    def __call__(self, vector: npt.NDArray[np.float32]) -> None:
        try:
            self.ranked = self.store.search.vector_search(self.flt, vector, self.n)
            if self.in_context:
                self.context = meaning_in_context(
                    self.store, self.flt, self.ranked, vector, limit=self.n
                )
        except BaseException as exc:  # handed to the caller's thread
            self.error = exc

    def result(self) -> list[tuple[str, float]]:
        if self.error is not None:
            raise self.error
        return self.ranked


def _hit(node: MemoryNode, fused: Fused, graph: GraphLists, score: float) -> SearchHit:
    parts = []
    for name, rank in sorted(fused.ranks.items(), key=lambda r: r[1]):
        weight = fused.evidence.get(name, 0.0)
        if name in graph.reasons:
            label = _LABELS.get(name) or ""
            reason = graph.reasons[name].get(node.id, name)
            parts.append(f"{label + ': ' if label else ''}{reason} ({weight:.2f})")
            continue
        raw = fused.raw.get(name)
        kind = _RAW.get(name)
        detail = f"{kind} {raw:.2f}, " if kind and raw is not None else ""
        parts.append(f"{_LABELS.get(name, name)} #{rank} ({detail}evidence {weight:.2f})")
    if fused.note:
        parts.append(fused.note)
    if round(score, 2) < round(fused.score, 2):
        parts.append(
            f"relevance {score:.2f} of fused {fused.score:.2f}: the best hits share little "
            "meaning and few words with the query"
        )
    return SearchHit(
        memory=node, score=round(score, 4), strategies=fused.ranks, why="; ".join(parts)
    )


def _subject_of(memory: MemoryNode) -> str | None:
    """Whom a memory that nobody says is about (a fact's subject); None for a turn."""
    return None if memory.speaker else memory.subject


def person_of(memory: MemoryNode) -> str | None:
    """Who a memory is by: its speaker, else its subject (as ``Store.people_of``)."""
    return memory.speaker or memory.subject


def named_person(named: Sequence[tuple[str, Entity]], nodes: Iterable[MemoryNode]) -> str | None:
    """The one person the query names (``named``: the entities it names) who speaks, or
    is the subject of, some of ``nodes``, as their memories name them (the shortest of
    the labels they go by: "Fahim" for "Fahim" and "Fahim Khan", see :func:`same_person`);
    None when it names none of them or several."""
    if not named:
        return None
    names = {n.casefold() for _, e in named for n in (e.canonical_name, *e.aliases)}
    found = {
        p
        for m in nodes
        if (p := person_of(m)) and names & {p.casefold(), (speaker_name(p) or "").casefold()}
    }
    first = min(found, key=lambda p: (len(p), p), default=None)
    return first if first and all(same_person(p, first) for p in found) else None


def same_person(label: str, other: str) -> bool:
    """Whether two speaker labels (or subjects) are one person's: the same, or one name's
    words begin the other's ("Fahim" and "Fahim Khan", "Emi" and "Emi 🌸"); not two
    full names ("Fahim Khan" and "Fahim Ali")."""
    if label == other:
        return True
    words = [(speaker_name(x) or x).casefold().split() for x in (label, other)]
    short, long = sorted(words, key=len)
    return bool(short) and long[: len(short)] == short


def role_person(query: str, nodes: Iterable[MemoryNode]) -> tuple[str, str] | None:
    """The speaker the query means by a role ("what does the user cook?", "the
    assistant's advice") — or by "I", "my", "me": a query is the user's own message
    ("what's my dog called?") — as ``nodes`` (the best hits) label them, and how the query
    calls them: when it means one role, not both, and at least :data:`CALLED_MIN` of the
    hits carry that label among others. None otherwise."""
    roles = {m.group(1).casefold() for m in ROLE_PHRASE.finditer(query)}
    if FIRST_PERSON.search(query):  # the user asks
        roles.add("user")
    if len(roles) != 1:
        return None
    (role,) = roles
    labels = _speakers(nodes)
    said = [(n, label) for label, n in labels.items() if label.casefold() in ROLE_LABELS[role]]
    if not said or not _says_enough(labels, label := max(said)[1]):
        return None
    return label, f"the {role}"


def _speakers(nodes: Iterable[MemoryNode]) -> Counter[str]:
    """How many of ``nodes`` each speaker label says."""
    return Counter(m.speaker for m in nodes if m.speaker)


def _says_enough(labels: Counter[str], label: str) -> bool:
    """Whether ``label`` is one speaker among others in ``labels`` and says at least
    :data:`CALLED_MIN` of the hits: enough to tell their memories from the rest."""
    return len(labels) >= 2 and labels[label] >= CALLED_MIN


_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")
_LETTERS = re.compile(r"\b[a-z]{2,}\b")


def handle_person(query: str, nodes: Iterable[MemoryNode]) -> tuple[str, str] | None:
    """The speaker a query names by the name their handle begins with ("Melanie" for the
    label "melanie18", "@melanie_k", "melanie.h"), as ``nodes`` (the best hits) label them:
    one such label, at least :data:`CALLED_MIN` of the hits, among other labels. For a
    chat labelled by user names where nobody calls anyone by name. None otherwise."""
    labels = _speakers(nodes)
    found: dict[str, str] = {}
    # in a query typed all in lower case, any word of letters may be the name
    words = _LETTERS if uncased(query) else _CAPITALISED
    for word in words.findall(query):
        probe = word.casefold()
        for label in labels:
            handle = label.casefold().lstrip("@")
            rest = handle[len(probe) :] if handle.startswith(probe) else ""
            if rest and not rest[0].isalpha() and not rest[0].isspace():
                found[label] = word
    if len(found) != 1:
        return None
    ((label, word),) = found.items()
    return (label, word) if _says_enough(labels, label) else None
