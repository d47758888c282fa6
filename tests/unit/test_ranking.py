"""Ranking: score-aware fusion (evidence per strategy, one 0-1 score), the first
queries a new user tries (real bundled embedder), and entity lists that survive extra
words in the query."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memloci import Memory
from memloci.retrieval import graph
from memloci.retrieval.forms import forms
from memloci.retrieval.fusion import (
    ASKS_ONLY,
    CONFIDENT,
    IN_WINDOW,
    LEXICAL_FLOOR,
    NAME_ONLY,
    Fused,
    discount_questions,
    fuse,
    fuse_lists,
    lexical,
    narrow,
    semantic,
    session_context,
)
from memloci.retrieval.graph import GraphLists, Via, anchored, fulltext_search, linked_to_named
from memloci.retrieval.query import asks_only, fts_match
from memloci.retrieval.timephrases import time_window
from memloci.service.worker import link_mentions
from memloci.storage.base import NodeFilter
from pgtest import both_backends

MakeMemory = Callable[..., Memory]


# ---------------------------------------------------------------------- evidence
def test_lexical_evidence_keeps_the_order_and_discounts_a_weak_list() -> None:
    strong = lexical([("a", 12.0), ("b", 6.0), ("c", 1.0)]).items
    assert [e for _, _, e in strong] == sorted((e for _, _, e in strong), reverse=True)
    assert strong[0][2] > 0.9 and 0.4 < strong[1][2] < 0.5
    # a word found in nearly every memory: bm25 ~1e-6, so only the floor a match keeps
    noise = lexical([("a", 1e-6), ("b", 9e-7)]).items
    assert all(e == LEXICAL_FLOOR for _, _, e in noise)


def test_semantic_evidence_stands_above_the_background() -> None:
    few = semantic([("lisbon", 0.55), ("dog", 0.07), ("friday", 0.05)]).items
    assert few[0][2] > 0.5 and few[1][2] == 0.0 and few[2][2] == 0.0
    # many candidates on topic: only what stands above their median counts
    many = semantic([(str(i), 0.40 + i / 1000) for i in range(40)] + [("x", 0.7)]).items
    assert dict((i, e) for i, _, e in many)["x"] > 0.4
    assert all(e < 0.05 for i, _, e in many if i != "x")


def test_a_decisive_semantic_match_beats_weak_lexical_noise() -> None:
    fused = fuse(
        {
            "fulltext": lexical([("friday", 1e-6), ("dog", 9e-7), ("lisbon", 8e-7)]),
            "vector": semantic([("lisbon", 0.55), ("friday", 0.07), ("dog", 0.05)]),
        },
        {"fulltext": 0.9, "vector": 0.9},
    )
    assert fused[0].id == "lisbon"
    assert fused[0].ranks == {"fulltext": 3, "vector": 1}


def test_scores_are_0_to_1_and_monotone_in_every_strategys_evidence() -> None:
    weights = {"fulltext": 0.9, "vector": 0.9}
    base = {"fulltext": lexical([("a", 5.0), ("b", 2.0)]), "vector": semantic([("b", 0.4)])}
    scores = {f.id: f.score for f in fuse(base, weights)}
    assert all(0.0 <= s <= 1.0 for s in scores.values())
    assert scores["a"] > scores["b"] > 0
    # more evidence from one strategy never lowers a score; agreeing strategies add up
    more = {**base, "vector": semantic([("b", 0.9)])}
    assert {f.id: f.score for f in fuse(more, weights)}["b"] > scores["b"]
    both = {**base, "vector": semantic([("a", 0.9), ("b", 0.4)])}
    assert {f.id: f.score for f in fuse(both, weights)}["a"] > scores["a"]
    # a zero weight switches a strategy off
    assert {f.id for f in fuse(base, {"fulltext": 0.0, "vector": 0.9})} == {"b"}


def test_role_words_are_not_searched_as_content() -> None:
    assert fts_match("where does the user live?") == '"live"'
    assert fts_match("what did the assistant suggest") == '"suggest"'


@pytest.mark.parametrize(
    ("word", "others"),
    [
        ("win", ("won",)),
        ("won", ("win",)),
        ("bought", ("buy",)),
        ("go", ("went", "gone")),
        ("children", ("child",)),
        ("favourite", ("favorite",)),  # spelt two ways
        ("traveled", ("travelled",)),
        ("bit", ()),  # "a bit"
        ("ground", ()),  # "the ground"
        ("did", ()),  # the stopwords' business
        ("walk", ()),  # stemming joins "walked"
    ],
)
def test_forms_stemming_does_not_join(word: str, others: tuple[str, ...]) -> None:
    assert forms(word) == others


def test_the_full_text_search_looks_for_every_form_of_a_word() -> None:
    assert fts_match("What did the team win?") == '"team" OR ("win" OR "won")'
    assert fts_match("What did the team win?", other_forms=False) == '"team" OR "win"'


@both_backends
def test_a_question_in_the_present_finds_what_was_told_in_the_past(
    make_memory: MakeMemory,
) -> None:
    """ "What did the team win?" is answered by "We even won a trophy!": full text alone
    (no meaning) finds it, on both backends, and the query's weight is its words'."""
    mem = make_memory(embedder=None)
    trophy = mem.add("We even won a trophy!", user="u")
    mem.add("The team trained hard all season", user="u")
    mem.add("Practice starts at six", user="u")
    mem.add("I bought new running shoes", user="u")
    hits = mem.search("What did they win?", user="u", k=3)
    assert hits and hits[0].memory.id == trophy.id and "full text #1" in hits[0].why
    shoes = mem.search("what did I buy", user="u", k=3)
    assert shoes and shoes[0].memory.content == "I bought new running shoes"
    colour = mem.add("My favourite colour is teal", user="u")
    hits = mem.search("favorite color", user="u", k=3)
    assert hits and hits[0].memory.id == colour.id
    # "win" or "won" is one word of the query: its weight is read from the words alone
    found = fulltext_search(mem.service.store, NodeFilter(("default",), user="u"), "win", limit=5)
    assert (found.match, found.words) == ('("win" OR "won")', '"win"')
    assert [i for i, _ in found.ranked] == [trophy.id]


def test_hits_carry_a_readable_score_and_why(make_memory: MakeMemory) -> None:
    mem = make_memory(embedder=None)
    mem.add("The deploy failed because the staging database was full", user="u")
    mem.add("We fixed the staging database yesterday", user="u")
    hits = mem.search("why did the deploy fail", user="u")
    assert hits and 0.0 < hits[0].score <= 1.0
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert "full text #1 (bm25 " in hits[0].why and "evidence " in hits[0].why
    for hit in hits:  # two decimals, never 5.5e-07
        assert not re.search(r"\de-\d", hit.why)


# ---------------------------------------------------------------------- entity lists
@pytest.mark.parametrize(
    ("query", "entity", "expected"),
    [
        ("Tell me about Tech Corp", "TechCorp", "I started a new job at TechCorp last week"),
        ("Who exactly is Sarah King?", "Sarah", "Had lunch with Sarah today, she is great"),
        ("Describe Sarah", "Sarah", "Had lunch with Sarah today, she is great"),
    ],
)
def test_entity_list_survives_extra_words(
    make_memory: MakeMemory, query: str, entity: str, expected: str
) -> None:
    mem = make_memory(embedder=None)  # full text only: the entity list must carry it
    turns = [
        "I started a new job at TechCorp last week",
        "My dog Rex loves the beach",
        "Had lunch with Sarah today, she is great",
    ]
    nodes = mem.add(
        [{"role": "user", "content": t, "name": "Sam"} for t in turns], user="u1", session="s"
    )
    store = mem.service.store
    link_mentions(store, [n.id for n in nodes], now=datetime.now(UTC), register=True)
    named = [e.canonical_name for _, e in store.graph.entities_in_text(["default"], query)]
    assert entity in named
    hits = mem.search(query, user="u1")
    assert hits[0].memory.content == expected
    assert "entity" in hits[0].strategies and f"entity {entity}" in hits[0].why


def test_a_named_entitys_memory_found_by_meaning_alone_joins_the_entity_list() -> None:
    """Linked to the entity the query names, found by meaning but by none of its other
    words: it joins the entity list at NAME_ONLY of its meaning evidence."""
    graph = GraphLists()
    graph.add("entity", [("words", 4.0)], {"words": Via.NAMED}, {"words": "entity Nate"})
    graph.linked = {"meaning"}
    vector = [("meaning", 0.9), ("other", 0.85)] + [(f"x{i}", 0.5) for i in range(10)]
    fused = {f.id: f for f in fuse_lists({"vector": vector}, graph, {}, 1.0)}
    meaning = fused["meaning"].evidence
    assert meaning["entity"] == pytest.approx(NAME_ONLY * meaning["vector"])
    assert "entity" not in fused["other"].evidence  # not linked: meaning only
    assert fused["meaning"].score > fused["other"].score


def test_linked_to_named_reads_the_links_of_the_meaning_matches(make_memory: MakeMemory) -> None:
    mem = make_memory()  # the fake embedder: the vector strategy runs
    said = [
        "My friend Nate recommended a fantasy series",
        "My sister Joanna read a thriller",
        "I think Nate likes turtles",
    ]  # three sessions: no turn's row holds another's words
    nodes = [mem.add(text, user="u1", session=f"s{i}") for i, text in enumerate(said)]
    store = mem.service.store
    link_mentions(store, [n.id for n in nodes], now=datetime.now(UTC), register=True)
    flt = NodeFilter(namespaces=["default"], user="u1")
    graph, lexical = anchored(store, flt, "Does Nate enjoy turtles or books?", limit=10)
    assert [i for i, _ in graph.lists["entity"]] == [nodes[2].id]  # by "turtles"
    # one full-text search, for the words other than the name, served both lists
    assert "nate" not in lexical.match.lower() and "turtles" in lexical.match
    assert lexical.ranked[0][0] == nodes[2].id  # the entity list is its linked part
    linked_to_named(store, flt, [n.id for n in nodes], graph)
    assert graph.linked == {nodes[0].id}  # Nate's, not yet on the list; not Joanna's
    assert graph.reasons["entity"][nodes[0].id] == "entity Nate, by meaning"
    assert graph.via["entity"][nodes[0].id] is Via.MEANING
    # the ids come from the caller's meaning matches, bounded by user in storage: another
    # user's memory linked to the same entity never joins a search
    other = mem.add("My friend Nate told me about his books", user="u2", session="t")
    link_mentions(store, [other.id], now=datetime.now(UTC), register=True)
    mem.flush()
    hits = mem.search("Does Nate enjoy turtles or books?", user="u1", k=10)
    assert other.id not in {h.memory.id for h in hits} and hits


# ---------------------------------------------------------------------- first queries
@pytest.fixture(scope="module")
def real() -> Memory:
    """One real-embedder ``Memory`` for the first-query tests (namespaces keep apart)."""
    memory = Memory(":memory:", embedder="local")
    yield memory  # type: ignore[misc]
    memory.close()


@pytest.mark.slow
def test_readme_sdk_example_returns_lisbon_first(real: Memory) -> None:
    real.add(
        "I moved to Lisbon", user="u1", session="s1", speaker="user", namespace="readme",
        event_time=datetime(2024, 5, 8, tzinfo=UTC), metadata={"turn": "D1:3"},
    )  # fmt: skip
    real.add(
        [
            {"role": "user", "content": "My dog Biscuit hates rain"},
            {"role": "assistant", "content": "Poor Biscuit!"},
        ],
        user="u1", session="s1", namespace="readme",
    )  # fmt: skip
    assert real.flush(60)
    hits = real.search("where does the user live?", user="u1", namespace="readme")
    assert hits[0].memory.content == "I moved to Lisbon"
    # the answer scores as one, the rest do not (the calibrated relevance threshold)
    threshold = real.service.settings.relevance_threshold
    assert hits[0].score >= threshold > max((h.score for h in hits[1:]), default=0.0)


@pytest.mark.slow
def test_three_memories_city_question_returns_lisbon_first(real: Memory) -> None:
    real.add("I moved to Lisbon last spring", user="u1", namespace="three")
    real.add("My sister Ana works as a nurse", user="u1", namespace="three")
    real.remember("User prefers Friday due dates", user="u1", namespace="three")
    assert real.flush(60)
    hits = real.search("which city does the user live in now?", user="u1", namespace="three")
    assert hits[0].memory.content == "I moved to Lisbon last spring"
    assert "meaning #1" in hits[0].why


@pytest.mark.slow
def test_the_user_in_a_question_means_them_not_the_label_every_memory_has(
    real: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    said = [
        "My daughter Emma just turned six",
        "Work has been stressful lately",
        "We're planning a trip to Japan in April",
        "Emma loves drawing horses",
    ]
    for text in said:
        real.add(text, user="u1", speaker="user", namespace="trip")
    assert real.flush(60)
    query = "where is the user going on vacation?"
    assert real.search(query, user="u1", namespace="trip")[0].memory.content == said[2]
    # embedded as written, "user" matches every memory's label alike and the stress of
    # work comes first by meaning
    monkeypatch.setattr(graph, "ROLE_PHRASE", re.compile("(?!)"))
    assert real.search(query, user="u1", namespace="trip")[0].memory.content == said[1]


@pytest.mark.slow
def test_a_fact_named_by_its_subject_and_topic_comes_first(real: Memory) -> None:
    real.add(
        [
            {"role": "user", "content": "Sam went hiking with friends on Saturday", "name": "Sam"},
            {"role": "user", "content": "Sam is learning to cook Thai food", "name": "Sam"},
            {"role": "user", "content": "Sam thinks the new office is too loud", "name": "Sam"},
            {"role": "user", "content": "Sam visited his parents last month", "name": "Sam"},
        ],
        user="u1", session="s", namespace="dog",
    )  # fmt: skip
    real.remember("Sam's dog is a beagle called Max", subject="Sam", user="u1", namespace="dog")
    assert real.flush(60)
    hits = real.search("What is the name of Sam's dog?", user="u1", namespace="dog", k=3)
    assert hits[0].memory.content == "Sam's dog is a beagle called Max"


def test_lexical_evidence_is_scaled_by_the_query_weight() -> None:
    """When the best full-text match misses the query's rare words (the query weighs
    more than any match scores), the whole list counts for less; the order stays."""
    alone = lexical([("a", 4.0), ("b", 2.0)]).items
    weighed = lexical([("a", 4.0), ("b", 2.0)], weight=12.0).items
    assert [i for i, _, _ in weighed] == ["a", "b"]
    assert alone[0][2] == pytest.approx(0.8) and weighed[0][2] == pytest.approx(4 / 13)
    # a query whose words the best match all holds: the weight changes nothing
    assert lexical([("a", 4.0)], weight=3.0).items == lexical([("a", 4.0)]).items


def test_the_time_list_weighs_its_own_words() -> None:
    """The time list ranks by the query minus its date ("on 1 May, 2022"), so its
    evidence is scaled by those words' weight, not the whole query's."""
    graph = GraphLists()
    graph.add("time", [("a", 4.0)], {"a": Via.WINDOW}, {"a": "1 May, 2022"})
    whole = fuse_lists({}, graph, {}, 1.0, query_weight=12.0)
    graph.weights["time"] = 3.0  # the words left once the date is taken out
    own = fuse_lists({}, graph, {}, 1.0, query_weight=12.0)
    assert whole[0].evidence["time"] == pytest.approx(4 / 13)
    assert own[0].evidence["time"] == pytest.approx(0.8)


def test_a_match_inside_a_narrow_window_counts_at_least_in_window() -> None:
    """A day, a week or a month named: a time-list match counts at least IN_WINDOW;
    a year or an open window ("before June 2023") keeps its lexical evidence."""

    def evidence(phrase: str) -> float:
        graph = GraphLists(window=time_window(phrase))
        graph.add("time", [("a", 1.0)], {"a": Via.WINDOW}, {"a": phrase})
        graph.weights["time"] = 9.0
        return fuse_lists({}, graph, {}, 1.0)[0].evidence["time"]

    assert narrow(time_window("on 7 July, 2023")) and narrow(time_window("in May 2023"))
    assert not narrow(time_window("in 2023")) and not narrow(time_window("before June 2023"))
    assert evidence("on 7 July, 2023") == IN_WINDOW == evidence("in May 2023")
    assert evidence("in 2023") == pytest.approx(0.1) == evidence("before June 2023")


@pytest.mark.slow
def test_a_memory_of_the_named_day_comes_first(real: Memory) -> None:
    ns = "timeday"
    real.add("I watched a film with Nate", user="u1", event_time="2022-05-01", namespace=ns)
    real.add("I watched the game", user="u1", event_time="2022-07-01", namespace=ns)
    real.flush()
    hits = real.search("What movie did I watch on 1 May, 2022?", user="u1", k=2, namespace=ns)
    assert hits[0].memory.content == "I watched a film with Nate"
    assert "time: " in hits[0].why


@pytest.mark.slow
def test_a_turn_and_the_fact_drawn_from_it_take_one_place(real: Memory) -> None:
    """Consolidation draws "Melanie loves camping" from Melanie's turn: a search that finds
    both shows the turn once (her own words, at the better score) and names the fact."""
    ns = "saidonce"
    for text, speaker in [
        ("I love camping with my kids.", "Melanie"),
        ("Camping sounds fun! I prefer museums.", "Caroline"),
        ("We went to the lake last week.", "Melanie"),
    ]:
        real.add(text, user="u1", session="s1", speaker=speaker, namespace=ns)
    real.flush()
    real.service.consolidation.consolidate.now("s1", namespace=ns, user="u1")
    facts = [m.content for m in real.list(user="u1", namespace=ns) if m.type.value != "episodic"]
    assert "Melanie loves camping with their kids" in facts
    hits = real.search("Does Melanie like camping?", user="u1", namespace=ns)
    contents = [h.memory.content for h in hits]
    assert contents[0] == "I love camping with my kids."
    assert "also kept as fact [" in hits[0].why
    assert "Melanie loves camping with their kids" not in contents
    # the fact alone is still found when its turn is not among the hits
    only = real.search("loves camping kids", user="u1", namespace=ns, recipe="fulltext")
    assert "Melanie loves camping with their kids" in [h.memory.content for h in only]


@both_backends
def test_merged_facts_leave_no_gap_in_k(make_memory: MakeMemory) -> None:
    """A fact merged into its turn frees a place: the next hit fills it, so a search
    still returns k hits when the store holds more."""
    mem = make_memory()
    turns = ["I love camping in the mountains."] + [f"Camping trip number {i}" for i in range(45)]
    mem.add(turns[0], user="u1", session="s1", speaker="Melanie")
    for text in turns[1:]:
        mem.add(text, user="u1", session="s1", speaker="Caroline")
    mem.flush()
    mem.service.consolidation.consolidate.now("s1", namespace="default", user="u1")
    hits = mem.search("love camping in the mountains", user="u1", k=40)
    contents = [h.memory.content for h in hits]
    assert len(hits) == 40 and len(set(contents)) == 40
    assert contents[0] == turns[0] and "also kept as fact [" in hits[0].why
    assert "Melanie loves camping in the mountains" not in contents


@pytest.mark.slow
def test_a_name_shared_by_every_fact_does_not_outrank_the_answer(real: Memory) -> None:
    """In one person's store their name is in most facts, yet rare across the whole index
    (other users' stores): a fact sharing only the name must not beat the fact that
    answers by meaning ("hurt" ~ "injury"). The name is the entity list's constraint."""
    others = ["enjoys long walks by the river", "plays chess on Sundays", "works as a nurse",
              "grows tomatoes on the balcony", "collects old maps", "bakes bread every week",
              "learned to swim last summer", "volunteers at the library"]  # fmt: skip
    for n, name in enumerate(("Dana", "Omar", "Priya", "Tomas", "Yuki", "Lars", "Ines")):
        for text in others:
            real.remember(f"{name} {text}", subject=name, user=f"other-{n}", namespace="hurt")
    facts = [
        "Melanie bought figurines that remind her of family love",
        "Melanie has been married for 5 years",
        "Melanie created a painting inspired by autumn",
        "Melanie loves painting landscapes and still life",
        "Melanie has pets including a cat named Bailey",
        "Melanie had a setback due to an injury and took a break from running",
        "Melanie's family visited the Grand Canyon and enjoyed it",
        "Melanie went camping with her family two weekends ago",
        "Melanie values family time and finds it special",
        "Melanie signed up for a pottery class",
        "Melanie is realizing the importance of self-care",
        "Melanie took her kids to the museum",
        "Melanie reads to her children every night",
        "Melanie ran a charity race for a local shelter",
        "Melanie plays the clarinet",
        "Melanie went to a concert with her husband",
    ]
    for fact in facts:
        real.remember(fact, subject="Melanie", user="u1", namespace="hurt")
    assert real.flush(60)
    link_all(real, "hurt")
    hits = real.search("When did Melanie get hurt?", user="u1", namespace="hurt", k=3)
    assert hits[0].memory.content.startswith("Melanie had a setback due to an injury")
    assert "meaning #1" in hits[0].why


def link_all(mem: Memory, namespace: str) -> None:
    """Link every memory of ``namespace`` to the entities it names now (the worker does
    this in the background)."""
    store = mem.service.store
    ids = [n.id for n in mem.list(namespace=namespace, limit=500)]
    link_mentions(store, ids, now=datetime.now(UTC), register=True)


def test_a_name_is_still_searched_when_no_memory_of_the_caller_is_linked_to_it(
    make_memory: MakeMemory,
) -> None:
    """Full text leaves a name out only when the entity list holds that entity's
    memories; when none of the caller's are linked to it yet (the worker links them in
    the background), the name is still a word to match."""
    mem = make_memory(embedder=None)
    other = mem.add(
        [{"role": "user", "content": "Had lunch with Ana today", "name": "Lee"}],
        user="u2", session="s",
    )  # fmt: skip
    link_mentions(mem.service.store, [n.id for n in other], now=datetime.now(UTC), register=True)
    assert [
        e.canonical_name for _, e in mem.service.store.graph.entities_in_text(["default"], "Ana")
    ]
    mem.add("Ana is my sister", user="u1", session="s")  # not linked yet
    mem.add("I like hiking in the hills", user="u1", session="s")
    hits = mem.search("What are Ana's hobbies?", user="u1")
    assert hits and hits[0].memory.content == "Ana is my sister"


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("Do you have any pets?", True),
        ("Wow, Caroline! How was it?", True),
        ("  what happened??  ", True),
        ("That's great. How did you do it?", False),  # states something, then asks
        ("We've got a pup and two kitties.", False),
        ("Is it 3.5 km? I think so", False),
        ("", False),
        # typed as chats are, without a question mark
        ("how was the trip", True),
        ("what did u do today", True),
        ("we went to the lake", False),
        ("can't wait", False),
        ("how was it I loved the part where the hero finally comes home to his family", False),
    ],
)
def test_asks_only(text: str, asks: bool) -> None:
    assert asks_only(text, said=True) is asks


def test_a_note_without_punctuation_is_no_question() -> None:
    assert asks_only("Is vegetarian") is False  # a fact, subject left out
    assert asks_only("is it ok", said=True) is True  # a chat message
    assert asks_only("Is it ok?") is True


def test_discount_questions_halves_and_reorders() -> None:
    a, b = Fused("q", score=0.8, ranks={"fulltext": 1}), Fused("a", score=0.5, ranks={"vector": 1})
    out = discount_questions([a, b], {"q"})
    assert [f.id for f in out] == ["a", "q"]
    assert out[1].score == pytest.approx(0.8 * ASKS_ONLY) and "asks" in out[1].note
    assert discount_questions([a, b], set()) == [a, b]


def test_session_context_lifts_the_strongest_sessions_memories() -> None:
    """Two hits tie at 0.4: the one from the session of the best hits comes first. The
    weakest session's memories, and memories without a session, keep their score."""

    def head() -> list[Fused]:
        scores = {"a1": 0.9, "a2": 0.7, "b1": 0.4, "a3": 0.4, "c1": 0.3, "x": 0.35}
        return [
            Fused(i, score=v, ranks={"vector": n}) for n, (i, v) in enumerate(scores.items(), 1)
        ]

    sessions: dict[str, tuple[str, str] | None] = {
        "a1": ("session", "A"), "a2": ("session", "A"), "a3": ("session", "A"),
        "b1": ("session", "B"), "c1": ("day", "2023-05-08"), "x": None,
    }  # fmt: skip
    out = session_context(head(), sessions, 0.5)
    assert [f.id for f in out] == ["a1", "a2", "a3", "b1", "x", "c1"]
    by_id = {f.id: f for f in out}
    # a session is as strong as its best hit: A 0.9 (strongest), B 0.4, C 0.3 (weakest)
    assert by_id["a3"].evidence["session"] == pytest.approx(1.0)
    assert by_id["a3"].score == pytest.approx(1 - (1 - 0.4) * (1 - 0.5))
    assert by_id["a3"].ranks["session"] == 1 and by_id["b1"].ranks["session"] == 2
    assert by_id["b1"].evidence["session"] == pytest.approx((0.4 - 0.3) / (0.9 - 0.3))
    assert not by_id["c1"].evidence.keys() & {"session", "day"} and by_id["c1"].score == 0.3
    assert "session" not in by_id["x"].evidence and by_id["x"].score == 0.35
    assert all(0.0 <= f.score <= 1.0 for f in out)
    # one session (or none) says nothing: the head is left as it was; so is weight 0
    for same in ({i: ("session", "A") for i in sessions}, dict.fromkeys(sessions)):
        kept = session_context(head(), same, 0.5)
        assert [(f.id, f.score) for f in kept] == [(f.id, f.score) for f in head()]
    assert [f.score for f in session_context(head(), sessions, 0.0)] == [f.score for f in head()]


def test_the_session_of_a_weak_best_hit_says_little() -> None:
    """A best hit of 0.4 (nothing answers well) lends its session half the evidence one
    of 0.8 or more would: a query nothing answers keeps low scores."""
    groups: dict[str, tuple[str, str] | None] = {
        "a1": ("session", "A"), "a2": ("session", "A"), "b1": ("session", "B"),
    }  # fmt: skip

    def head(top: float) -> list[Fused]:
        scores = {"a1": top, "a2": 0.0, "b1": 0.1}
        return [Fused(i, score=v, ranks={"vector": n}) for n, (i, v) in enumerate(scores.items())]

    weak = {f.id: f for f in session_context(head(0.4), groups, 0.5)}
    assert weak["a2"].evidence["session"] == pytest.approx(0.4 / CONFIDENT)
    assert weak["a2"].score == pytest.approx(0.5 * 0.4 / CONFIDENT)
    strong = {f.id: f for f in session_context(head(0.9), groups, 0.5)}
    assert strong["a2"].evidence["session"] == pytest.approx(1.0)


def test_session_context_never_moves_the_best_hit_down() -> None:
    """A lone strong hit in its own session stays first, however many fair hits another
    session holds: the best hit's session is the strongest, and it gains the most."""
    head = [Fused("best", score=0.5, ranks={"vector": 1})] + [
        Fused(f"o{i}", score=0.45, ranks={"vector": i + 2}) for i in range(5)
    ]
    groups = {"best": ("session", "A")} | {f"o{i}": ("session", "B") for i in range(5)}
    groups["o4"] = ("day", "2023-05-08")
    out = session_context(head, groups, 1.0)
    assert out[0].id == "best" and all(f.score < out[0].score for f in out[1:])


def test_the_best_hits_session_counts_in_a_real_search(tmp_path: Path) -> None:
    """Two sessions, each with a short "It was amazing!" reply: asked about the trip,
    the reply in the trip's session outranks its twin from the concert session, and
    says why. ``weight_session=0`` and the ``core`` recipe leave sessions out."""
    trip = [
        "We just got back from our trip to Japan.",
        # long: the reply's row holds this turn only, not the words of the one before
        "Tokyo was huge, the trains were always on time, we ate ramen at midnight in"
        " Shinjuku, walked for hours through quiet backstreets and watched the sunrise"
        " over the bay from a rooftop.",
        "It was amazing!",
    ]
    concert = ["I saw a jazz concert downtown on Friday.", "It was amazing!"]
    for weight in (0.5, 0.0):
        # without meaning in context, whose list changes the seeds of the reply walk
        options = {"weight_session": weight, "weight_context": 0.0}
        with Memory(str(tmp_path / f"s{weight}.db"), **options) as mem:
            for session, texts in (("trip", trip), ("concert", concert)):
                for text in texts:
                    mem.add(text, user="u1", session=session, speaker="user")
            mem.flush()
            hits = mem.search("how was the user's trip to Japan?", user="u1", k=5)
            replies = [h for h in hits if h.memory.content == "It was amazing!"]
            if weight:
                assert [h.memory.session for h in replies] == ["trip", "concert"]
                assert "session #1" in replies[0].why
                assert replies[0].score > replies[1].score
            else:  # no session: the twins tie, unless the reply walk (which the query's
                # intent routes) lifts the one that answers a hit, and says so
                assert all("session" not in h.why for h in hits)
                if replies[0].score != replies[1].score:
                    assert replies[0].memory.session == "trip" and "reply to" in replies[0].why
                    assert "reply to" not in replies[1].why
            core = mem.search("how was the user's trip to Japan?", user="u1", k=5, recipe="core")
            assert all("session" not in h.why for h in core)


@both_backends
def test_facts_without_a_session_are_grouped_by_their_day(make_memory: MakeMemory) -> None:
    """Facts told on one day (no session): asked about that day's trip, a fact of the
    same day that shares little with the question gains ("day #1"); another day's
    facts do not."""
    trip = datetime(2023, 5, 8, 15, tzinfo=UTC)
    other = datetime(2023, 6, 20, 10, tzinfo=UTC)
    facts = [
        ("Ana flew to Japan for a two-week trip", trip),
        ("Ana visited temples in Kyoto on the trip", trip),
        ("Ana bought a ceramic teapot as a souvenir", trip),
        ("Ana bought new running shoes", other),
        ("Ana started a pottery class", other),
    ]
    mem = make_memory(embedder="local")
    for text, when in facts:
        mem.remember(text, user="u1", event_time=when)
    mem.flush()
    hits = mem.search("What did Ana do on her trip to Japan?", user="u1", k=5)
    why = {h.memory.content: h.why for h in hits}
    assert "day #1" in why["Ana bought a ceramic teapot as a souvenir"]
    assert all("day" not in why[t] for t, when in facts if when == other and t in why)
    assert all("session" not in w for w in why.values())


def test_a_question_gives_way_to_its_answer(tmp_path: Path) -> None:
    """ "Do you have any pets?" shares every word and most of the meaning with the query,
    yet the reply holds the answer; the baselines keep their own order."""
    turns = [
        ("Caroline", "Hey Mel! How was your weekend?"),
        ("Melanie", "Great, we went to the beach with the kids."),
        ("Caroline", "Do you have any pets?"),
        ("Melanie", "We've got a pup and two kitties, they keep us busy."),
        ("Caroline", "That sounds lovely."),
        ("Melanie", "I painted a sunset last week."),
    ]
    with Memory(str(tmp_path / "q.db")) as mem:
        for speaker, text in turns:
            mem.add(text, user="u1", session="s1", speaker=speaker)
        mem.flush()
        hits = mem.search("do you have pets", user="u1", k=6)
        assert hits[0].memory.content.startswith("We've got a pup")
        asked = next(h for h in hits if h.memory.content == "Do you have any pets?")
        assert asked.why.endswith("asks, does not tell (×0.5)")
        dense = mem.search("do you have pets", user="u1", k=3, recipe="vector")
        assert dense[0].memory.content == "Do you have any pets?"
        assert "asks" not in dense[0].why


def _moved(mem: Memory, ns: str) -> None:
    """Lisbon in one session, Porto the next; the earlier session consolidated last."""
    day = datetime(2024, 5, 1, tzinfo=UTC)
    mem.add("I live in Lisbon", user="u", session="s1", speaker="user", event_time=day,
            namespace=ns)  # fmt: skip
    for minute, text in enumerate(["I no longer live in Lisbon", "I live in Porto now"]):
        when = day.replace(day=2, minute=minute)
        mem.add(text, user="u", session="s2", speaker="user", event_time=when, namespace=ns)
    mem.flush()
    mem.service.consolidation.consolidate.now("s2", namespace=ns, user="u")
    mem.service.consolidation.consolidate.now("s1", namespace=ns, user="u")
    facts = [m.content for m in mem.list(user="u", namespace=ns, type="semantic")]
    assert facts == ["User lives in Porto"]


@both_backends
def test_a_turn_whose_facts_were_replaced_says_so(make_memory: MakeMemory) -> None:
    mem = make_memory()
    _moved(mem, "moved")
    hits = {h.memory.content: h for h in mem.search("live Lisbon Porto", user="u", k=5,
                                                     namespace="moved")}  # fmt: skip
    assert "since replaced by [" in hits["I live in Lisbon"].why
    assert "since replaced by" not in hits["I live in Porto now"].why


@pytest.mark.slow
def test_what_holds_now_ranks_above_what_was_replaced(real: Memory) -> None:
    """The audit's case: "where do I live?" after a move answers Porto first, although
    "I live in Lisbon" is as close by meaning; the Lisbon turn stays findable below."""
    _moved(real, "movedreal")
    hits = real.search("where do I live?", user="u", k=4, namespace="movedreal")
    contents = [h.memory.content for h in hits]
    assert contents[0] == "I live in Porto now", [(h.memory.content, h.why) for h in hits]
    assert "I live in Lisbon" in contents


@pytest.mark.slow
def test_the_fact_that_replaced_a_hit_holds_its_place(real: Memory) -> None:
    """ "I moved to Porto last week" shares no word with "where does the user live?" and
    is further by meaning than "I live in Lisbon"; once consolidation says the move
    replaced Lisbon, the move holds Lisbon's place and comes first."""
    ns = "movedaway"
    chat = [
        ("s1", datetime(2024, 5, 1, 9, tzinfo=UTC), "I live in Lisbon, in a flat in Alfama."),
        ("s1", datetime(2024, 5, 1, 9, 1, tzinfo=UTC), "I work as a nurse."),
        ("s2", datetime(2024, 6, 3, 9, tzinfo=UTC), "I moved to Porto last week, new flat."),
        ("s2", datetime(2024, 6, 3, 9, 1, tzinfo=UTC), "I adopted a cat called Miso."),
    ]  # fmt: skip
    for session, when, text in chat:
        real.add(text, user="u", session=session, speaker="user", event_time=when, namespace=ns)
    real.flush()
    for session in ("s1", "s2"):
        real.service.consolidation.consolidate.now(session, namespace=ns, user="u")
    hits = real.search("where does the user live?", user="u", k=3, namespace=ns)
    assert hits[0].memory.content.startswith("I moved to Porto"), [
        (h.memory.content, h.why) for h in hits
    ]
    lisbon = [h for h in hits if "Lisbon" in h.memory.content]
    assert lisbon and "since replaced by" in lisbon[0].why


def test_the_fusion_reads_how_a_node_came_onto_a_list_not_its_reason_text() -> None:
    """A chain's seeds gain nothing from their own chain and a shared-entity list is a
    walk, whatever the reasons say for people (an entity named "Linseed" once read as
    a seed)."""
    graph = GraphLists()
    via = {"seed": Via.SEED, "next": Via.CHAIN}
    reasons = {"seed": "temporal chain from [x] (+1)", "next": "shares Linseed with [seed]"}
    graph.add("temporal", [("seed", 1.0), ("next", 0.5)], via, reasons)
    fused = {f.id: f for f in fuse_lists({}, graph, {}, 1.0, seeds={"seed": 0.8})}
    assert "temporal" not in fused.get("seed", Fused("seed")).evidence
    assert fused["next"].evidence["temporal"] == pytest.approx(0.5 * 0.8)
    # an entity list reached by walking (shared entities) is weighed as a walk: by the
    # seeds' relevance, not as full text on its own words
    graph = GraphLists()
    graph.add("entity", [("a", 2.0)], {"a": Via.SHARED}, {"a": "entity Nate"})
    fused = {f.id: f for f in fuse_lists({}, graph, {}, 1.0, seeds={"s": 0.6})}
    assert fused["a"].evidence["entity"] == pytest.approx(1.0 * 0.6)
