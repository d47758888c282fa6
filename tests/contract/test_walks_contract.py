"""The Store contract for graph walks: chains over edges by relation, entity lookup in
text, entity neighbourhoods — every walk bounded by the NodeFilter (namespace, user,
session visibility), through the protocol only (any backend)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memloci.models import (
    Edge,
    EdgeType,
    Entity,
    EntityType,
    MemoryNode,
    NodeType,
    Scope,
    short_id,
)
from memloci.storage.base import NodeFilter, NodePatch, Store

T0 = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


def episode(content: str, ns: str = "default", **fields: Any) -> MemoryNode:
    when = fields.pop("when", T0)
    data: dict[str, Any] = {
        "id": short_id(), "namespace": ns, "type": NodeType.EPISODIC, "content": content,
        "scope": Scope.GLOBAL, "event_time": when, "created_at": when, "updated_at": when,
        "valid_from": when,
    }  # fmt: skip
    data.update(fields)
    return MemoryNode(**data)


def edge(a: MemoryNode, b: MemoryNode, relation: EdgeType, **fields: Any) -> Edge:
    return Edge(
        id=short_id() + short_id(), namespace=a.namespace, source_id=a.id, target_id=b.id,
        relation=relation, valid_from=T0, created_at=T0, **fields,
    )  # fmt: skip


def entity(name: str, ns: str = "default", **fields: Any) -> Entity:
    return Entity(
        id=short_id(), namespace=ns, canonical_name=name, first_seen=T0, last_seen=T0, **fields
    )


def chain_of(store: Store, n: int, ns: str = "default", **fields: Any) -> list[MemoryNode]:
    """``n`` episodes of one session linked by temporal edges (t0 → t1 → …)."""
    nodes = [
        episode(f"turn {i}", ns, session="s1", when=T0 + timedelta(minutes=i), **fields)
        for i in range(n)
    ]
    store.memories.insert_nodes(nodes, link_previous=True)
    return nodes


ALL = NodeFilter(namespaces=("default",))


# ---------------------------------------------------------------------- walk
def test_walk_follows_temporal_edges_both_ways_by_distance(store: Store) -> None:
    t = chain_of(store, 7)
    found = store.graph.walk(ALL, [t[3].id], "temporal", depth=2)
    assert found == [
        (t[4].id, t[3].id, 1, 1),
        (t[2].id, t[3].id, 1, -1),
        (t[5].id, t[3].id, 2, 1),
        (t[1].id, t[3].id, 2, -1),
    ]
    assert store.graph.walk(ALL, [t[3].id], "temporal", depth=2, direction="forward") == [
        (t[4].id, t[3].id, 1, 1),
        (t[5].id, t[3].id, 2, 1),
    ]
    assert [r[0] for r in store.graph.walk(ALL, [t[3].id], "temporal", direction="backward")] == [
        t[2].id
    ]


def test_walk_keeps_one_direction_never_returns_seeds_and_stops_at_the_limit(
    store: Store,
) -> None:
    t = chain_of(store, 6)
    # a chain never turns back: from t2 forward to t3, it does not come back to t1
    found = store.graph.walk(ALL, [t[2].id, t[3].id], "temporal", depth=3)
    ids = [r[0] for r in found]
    assert t[2].id not in ids and t[3].id not in ids
    assert sorted(ids) == sorted([t[4].id, t[1].id, t[5].id, t[0].id])
    # each node once, at its shortest distance, from the first seed that reaches it
    assert (t[4].id, t[3].id, 1, 1) in found and (t[1].id, t[2].id, 1, -1) in found
    assert len(store.graph.walk(ALL, [t[0].id], "temporal", depth=5, limit=2)) == 2
    assert store.graph.walk(ALL, [], "temporal", depth=2) == []
    assert store.graph.walk(ALL, [t[0].id], "temporal", depth=0) == []


def test_walk_is_by_relation_and_ignores_ended_edges(store: Store) -> None:
    a, b, c, d = (episode(x) for x in "abcd")
    store.memories.insert_nodes([a, b, c, d])
    store.memories.insert_edges(
        [
            edge(a, b, EdgeType.CAUSAL),
            edge(b, c, EdgeType.CAUSAL),
            edge(a, d, EdgeType.CAUSAL, valid_until=T0),  # no longer holds
        ]
    )
    assert store.graph.walk(ALL, [a.id], "causal", depth=3) == [
        (b.id, a.id, 1, 1),
        (c.id, a.id, 2, 1),
    ]
    assert store.graph.walk(ALL, [c.id], "causal", depth=1) == [(b.id, c.id, 1, -1)]
    assert store.graph.walk(ALL, [a.id], "temporal", depth=3) == []


def test_walk_never_returns_or_crosses_hidden_nodes(store: Store) -> None:
    """alice's turn → bob's turn → alice's turn: alice cannot see bob's, nor walk past it."""
    a1 = episode("a1", scope=Scope.USER, user="alice")
    b1 = episode("b1", scope=Scope.USER, user="bob")
    a2 = episode("a2", scope=Scope.USER, user="alice")
    s1 = episode("s1", scope=Scope.SESSION, user="alice", session="x")
    store.memories.insert_nodes([a1, b1, a2, s1])
    store.memories.insert_edges(
        [edge(x, y, EdgeType.TEMPORAL) for x, y in ((a1, b1), (b1, a2), (a2, s1))]
    )
    alice = NodeFilter(namespaces=("default",), user="alice")
    assert store.graph.walk(alice, [a1.id], "temporal", depth=4) == []
    # the session-scoped turn is hidden from alice outside that session
    assert store.graph.walk(alice, [a2.id], "temporal", depth=1, direction="forward") == []
    inside = replace(alice, session="x")
    assert store.graph.walk(inside, [a2.id], "temporal", depth=1, direction="forward") == [
        (s1.id, a2.id, 1, 1)
    ]
    bob = NodeFilter(namespaces=("default",), user="bob")
    assert store.graph.walk(bob, [a1.id], "temporal", depth=4) == [(b1.id, a1.id, 1, 1)]
    # the rest of the filter applies too
    facts_only = replace(ALL, types=(NodeType.SEMANTIC,))
    assert store.graph.walk(facts_only, [a1.id], "temporal", depth=4) == []


def test_walk_stays_in_the_filters_namespaces(store: Store) -> None:
    a = chain_of(store, 2, ns="a")
    b = chain_of(store, 2, ns="b")
    assert store.graph.walk(NodeFilter(namespaces=("b",)), [a[0].id], "temporal", depth=2) == []
    assert store.graph.walk(NodeFilter(namespaces=("b",)), [b[0].id], "temporal") == [
        (b[1].id, b[0].id, 1, 1)
    ]
    assert store.graph.walk(NodeFilter(namespaces=()), [b[0].id], "temporal") == []


# ---------------------------------------------------------------------- replies
def said_chain(store: Store, speakers: list[str | None], **fields: Any) -> list[MemoryNode]:
    """One session's turns, said by ``speakers`` in order, linked by temporal edges."""
    nodes = [
        episode(f"turn {i}", session="s1", speaker=who, when=T0 + timedelta(minutes=i), **fields)
        for i, who in enumerate(speakers)
    ]
    store.memories.insert_nodes(nodes, link_previous=True)
    return nodes


def test_replies_name_the_nearest_earlier_turn_of_someone_else(
    store: Store,
) -> None:
    t = said_chain(store, ["ana", "ben", "ben", "ana", "ana", "ben"])
    got = store.graph.replies(ALL, [x.id for x in t], reach=4)
    assert got == {
        t[0].id: None,  # the first turn replies to nobody
        t[1].id: t[0].id,  # an answer, to its question
        t[2].id: t[0].id,  # the rest of ben's burst, to what came before the burst
        t[3].id: t[2].id,
        t[4].id: t[2].id,
        t[5].id: t[4].id,
    }
    # the turns after each turn asked about are answered for too: the next one, and
    # the rest of the other person's reply to it (not the asker's next turn)
    assert store.graph.replies(ALL, [t[0].id], reach=4) == {
        t[0].id: None, t[1].id: t[0].id, t[2].id: t[0].id,
    }  # fmt: skip
    assert store.graph.replies(ALL, [t[3].id], reach=4) == {t[3].id: t[2].id, t[4].id: t[2].id}
    assert store.graph.replies(ALL, [t[4].id], reach=4) == {t[4].id: t[2].id, t[5].id: t[4].id}
    assert store.graph.replies(ALL, [], reach=4) == {}


def test_a_reply_burst_answers_the_turn_before_it_to_its_end(store: Store) -> None:
    """ "How's the pup?" → "Awesome!", "Sounds great.", "The little one is doing great":
    every message of the reply is found from the question, as far as ``reach`` goes."""
    t = said_chain(store, ["john", "maria", "maria", "maria", "john", "maria"])
    assert store.graph.replies(ALL, [t[0].id], reach=4) == {
        t[0].id: None, t[1].id: t[0].id, t[2].id: t[0].id, t[3].id: t[0].id,
    }  # fmt: skip
    assert store.graph.replies(ALL, [t[0].id], reach=2) == {
        t[0].id: None, t[1].id: t[0].id, t[2].id: t[0].id,
    }  # fmt: skip


def test_replies_reach_only_so_far_and_pass_over_turns_nobody_says(store: Store) -> None:
    t = said_chain(store, ["ana", "ben", "ben", "ben", None, "ana"])
    got = store.graph.replies(ALL, [x.id for x in t], reach=2)
    # t3: ana is 3 turns back; t5 passes over the turn nobody said, which is left out
    assert got == {
        t[0].id: None, t[1].id: t[0].id, t[2].id: t[0].id, t[3].id: None, t[5].id: t[3].id,
    }  # fmt: skip
    # one person's notes to an assistant that never answers reply to nobody
    notes = said_chain(store, ["user", "user", "user"], user="u9")
    assert store.graph.replies(ALL, [x.id for x in notes], reach=4) == dict.fromkeys(
        x.id for x in notes
    )
    # nor does a message that says nothing, and a reply passes over it
    chat = said_chain(store, ["ana", "ben", "ana"], user="u8")
    store.memories.update_node("default", chat[1].id, NodePatch(content="lol"))
    got = store.graph.replies(ALL, [x.id for x in chat], reach=4)
    assert got == {chat[0].id: None, chat[2].id: None}


def test_replies_never_see_or_cross_hidden_turns(store: Store) -> None:
    """alice's turn → bob's turn → alice's turn: alice's replies never reach bob's."""
    a1 = episode("a1", scope=Scope.USER, user="alice", speaker="alice")
    b1 = episode("b1", scope=Scope.USER, user="bob", speaker="bob")
    a2 = episode("a2", scope=Scope.USER, user="alice", speaker="carol")
    store.memories.insert_nodes([a1, b1, a2])
    store.memories.insert_edges([edge(x, y, EdgeType.TEMPORAL) for x, y in ((a1, b1), (b1, a2))])
    alice = NodeFilter(namespaces=("default",), user="alice")
    assert store.graph.replies(alice, [a1.id, b1.id, a2.id], reach=4) == {a1.id: None, a2.id: None}
    bob = NodeFilter(namespaces=("default",), user="bob")
    assert store.graph.replies(bob, [a1.id, b1.id, a2.id], reach=4) == {b1.id: None}
    assert store.graph.replies(NodeFilter(namespaces=("other",)), [b1.id], reach=4) == {}
    # an ended (forgotten) turn is hidden from the replies as from every read
    t = said_chain(store, ["ana", "ben", "ana"], user="u2", scope=Scope.USER)
    u2 = NodeFilter(namespaces=("default",), user="u2")
    assert store.graph.replies(u2, [t[2].id], reach=4) == {t[2].id: t[1].id}
    store.memories.update_node("default", t[1].id, NodePatch(valid_until=T0 + timedelta(hours=1)))
    assert store.graph.replies(u2, [x.id for x in t], reach=4) == {t[0].id: None, t[2].id: None}


# ---------------------------------------------------------------------- entities in text
def test_entities_in_text_by_name_or_alias_longest_first(store: Store) -> None:
    caro = store.entities.insert_entity(
        entity("Caroline", aliases=["Caro"], type=EntityType.PERSON)
    )
    seuss = store.entities.insert_entity(entity("Dr. Seuss"))
    lgbtq = store.entities.insert_entity(entity("LGBTQ"))
    york = store.entities.insert_entity(entity("New York"))
    store.entities.insert_entity(entity("York"))
    store.entities.insert_entity(entity("Caroline", ns="other"))
    found = store.graph.entities_in_text(
        ["default"], "Did caro's friends in NEW YORK read Dr. Seuss at the LGBTQ+ center?"
    )
    assert [(name, e.id) for name, e in found] == [
        ("new york", york.id),
        ("dr. seuss", seuss.id),
        ("caro", caro.id),
        ("lgbtq", lgbtq.id),
    ]
    assert [e.id for _, e in store.graph.entities_in_text(["default"], "Dr. Seuss books")] == [
        seuss.id
    ]
    assert store.graph.entities_in_text(["default"], "nothing known here") == []
    assert store.graph.entities_in_text([], "Caroline") == []
    other = store.graph.entities_in_text(["other"], "Caroline")
    assert [e.namespace for _, e in other] == ["other"]


def test_entities_in_text_keeps_every_entity_of_a_shared_name(store: Store) -> None:
    one = store.entities.insert_entity(entity("John", mention_count=5))
    two = store.entities.insert_entity(entity("John", mention_count=1))
    found = store.graph.entities_in_text(["default"], "What did John say?")
    assert [e.id for _, e in found] == [one.id, two.id]


def test_a_label_that_is_a_common_word_is_named_only_with_a_capital(store: Store) -> None:
    """Speakers labelled "A" and "B", or "May": the question's "a" and "may" are words,
    not the speaker; "What did A say?" and "Did May call?" name them."""
    a = store.entities.insert_entity(entity("A", type=EntityType.PERSON))
    may = store.entities.insert_entity(entity("May", type=EntityType.PERSON))
    store.entities.insert_entity(entity("Rome", type=EntityType.PLACE))

    def named(text: str) -> list[str]:
        return [e.id for _, e in store.graph.entities_in_text(["default"], text)]

    assert named("Who likes painting a sunset?") == []
    assert named("A sunset or a sunrise?") == []  # the first word is capitalised anyway
    assert named("When may I visit?") == []
    assert named("What did A say about hiking?") == [a.id]
    assert named("Did May call?") == [may.id]
    assert [e.canonical_name for _, e in store.graph.entities_in_text(["default"], "rome")] == [
        "Rome"
    ]


def test_people_named_by_the_beginning_of_a_name_or_alias(store: Store) -> None:
    """Person entities whose name or alias begins with a prefix: "mel" finds Melanie
    and Mel Okafor, not Pamela (the name holds it but does not begin with it), not a
    place, not another namespace's Melanie; most mentioned first, at most ``limit``."""
    melanie = store.entities.insert_entity(
        entity("Melanie", type=EntityType.PERSON, mention_count=9)
    )
    okafor = store.entities.insert_entity(
        entity("Mel Okafor", type=EntityType.PERSON, mention_count=3)
    )
    mike = store.entities.insert_entity(entity("Michael", aliases=["Mick"], type=EntityType.PERSON))
    store.entities.insert_entity(entity("Pamela", type=EntityType.PERSON))
    store.entities.insert_entity(entity("Melbourne", type=EntityType.PLACE))
    store.entities.insert_entity(entity("Melanie", ns="other", type=EntityType.PERSON))

    def ids(prefixes: list[str], ns: str = "default", limit: int = 20) -> list[str]:
        return [e.id for e in store.graph.people_named([ns], prefixes, limit)]

    assert ids(["mel"]) == [melanie.id, okafor.id]
    assert ids(["mel"], limit=1) == [melanie.id]
    assert ids(["melanie"]) == [melanie.id]
    assert ids(["mick", "zed"]) == [mike.id]  # by an alias; any of the prefixes
    assert ids(["mel", "melan"]) == [melanie.id, okafor.id]  # each entity once
    assert ids(["pam"]) != [] and ids(["amela"]) == []
    assert [e.namespace for e in store.graph.people_named(["other"], ["mel"])] == ["other"]
    assert ids([]) == [] and ids([""]) == [] and store.graph.people_named([], ["mel"]) == []


def test_entities_in_text_finds_a_person_by_their_given_name(store: Store) -> None:
    fahim = store.entities.insert_entity(
        entity("Fahim Khan", type=EntityType.PERSON, mention_count=9)
    )
    other = store.entities.insert_entity(entity("Fahim Rahman", type=EntityType.PERSON))
    store.entities.insert_entity(entity("Fahim Khan", ns="other", type=EntityType.PERSON))
    store.entities.insert_entity(entity("Speaker A", type=EntityType.PERSON))
    store.entities.insert_entity(entity("Dr Lee", type=EntityType.PERSON))
    store.entities.insert_entity(entity("Fahim Street", type=EntityType.PLACE))
    store.entities.insert_entity(entity("Mel Okafor-Reyes", type=EntityType.PERSON))
    store.entities.insert_entity(entity("Joanna K.", type=EntityType.PERSON))  # an initial
    store.entities.insert_entity(entity("Guest B.", type=EntityType.PERSON))

    def named(text: str, ns: str = "default") -> list[tuple[str, str]]:
        return [(name, e.canonical_name) for name, e in store.graph.entities_in_text([ns], text)]

    # a question about "Fahim" means the people called Fahim, most mentioned first
    assert named("What does Fahim's sister do?") == [
        ("fahim", "Fahim Khan"),
        ("fahim", "Fahim Rahman"),
    ]
    assert {e.id for _, e in store.graph.entities_in_text(["default"], "Fahim?")} == {
        fahim.id,
        other.id,
    }
    assert named("Where did Fahim Khan go?") == [("fahim khan", "Fahim Khan")]
    assert named("Did Mel call?") == [("mel", "Mel Okafor-Reyes")]
    assert named("What does Joanna write?") == [("joanna", "Joanna K.")]
    assert named("Did the Guest pay?") == []  # a label word, not a given name
    # capitalised words are looked up as given names (titles and handles are none); in a
    # query typed all in lower case, every word of letters but the function words is
    assert named("What does fahim like?") == []
    assert named("what does fahim like?") == [
        ("fahim", "Fahim Khan"),
        ("fahim", "Fahim Rahman"),
    ]
    assert named("What did the Speaker say?") == []
    assert named("Is Dr in?") == []
    assert named("Fahim", ns="other") == [("fahim", "Fahim Khan")]
    assert named("Fahim", ns="nowhere") == []
    # a given name is only looked up, never an alias: mentions still need the whole name
    assert store.entities.find_entity("default", "Fahim") is None


def test_entities_in_text_finds_names_typed_without_their_accents(store: Store) -> None:
    """Names are often typed without their accents: "Jose" for a speaker "José", "Zoe"
    for "Zoë Müller"; and the other way round, "Ána" for "Ana"."""
    jose = store.entities.insert_entity(entity("José", type=EntityType.PERSON))
    zoe = store.entities.insert_entity(entity("Zoë Müller", type=EntityType.PERSON))
    ana = store.entities.insert_entity(entity("Ana", type=EntityType.PERSON))
    store.entities.insert_entity(entity("José", ns="other", type=EntityType.PERSON))

    def named(text: str, ns: str = "default") -> list[tuple[str, str]]:
        return [(name, e.id) for name, e in store.graph.entities_in_text([ns], text)]

    assert named("What did Jose buy?") == [("jose", jose.id)]
    assert named("What did José buy?") == [("josé", jose.id)]  # as the query has it
    assert named("what did jose buy") == [("jose", jose.id)]
    assert named("Where does Zoe live?") == [("zoe", zoe.id)]  # a given name
    assert named("Where does Zoe Muller live?") == [("zoe muller", zoe.id)]
    assert named("What does Ána do?") == [("ana", ana.id)]
    assert named("Jose", ns="nowhere") == []
    assert (f := store.entities.find_entity("default", "JOSE")) and f.id == jose.id
    assert (f := store.entities.find_entity("default", "Ána")) and f.id == ana.id
    # renamed: the old name's forms go with it
    store.entities.update_entity(jose.model_copy(update={"canonical_name": "Joseph"}))
    assert named("What did Jose buy?") == []


# ---------------------------------------------------------------------- entity nodes
def test_entity_fulltext_ranks_linked_nodes_by_the_match(store: Store) -> None:
    mel = store.entities.insert_entity(entity("Melanie"))
    pottery = episode("I signed up for a pottery class", when=T0)
    paint = episode("I painted a sunrise", when=T0 + timedelta(days=1))
    unlinked = episode("Pottery is fun, Melanie!", when=T0)
    store.memories.insert_nodes([pottery, paint, unlinked])
    for n in (pottery, paint):
        store.entities.link_entities("default", n.id, [mel.id])
    found = store.graph.entity_fulltext(ALL, [mel.id], '"pottery"', 10)
    assert [i for i, _ in found] == [pottery.id]
    assert found[0][1] > 0  # -bm25: higher is better
    newest = store.graph.entity_fulltext(ALL, [mel.id], "", 10)
    assert newest == [(paint.id, 0.0), (pottery.id, 0.0)]
    assert store.graph.entity_fulltext(ALL, [], '"pottery"', 10) == []


def test_entity_fulltext_is_bounded_by_the_filter(store: Store) -> None:
    mel = store.entities.insert_entity(entity("Melanie"))
    mine = episode("pottery with alice", scope=Scope.USER, user="alice")
    theirs = episode("pottery with bob", scope=Scope.USER, user="bob")
    elsewhere = episode("pottery in tenant b", ns="b")
    store.memories.insert_nodes([mine, theirs, elsewhere])
    for n in (mine, theirs):
        store.entities.link_entities("default", n.id, [mel.id])
    alice = NodeFilter(namespaces=("default",), user="alice")
    assert [i for i, _ in store.graph.entity_fulltext(alice, [mel.id], '"pottery"', 10)] == [
        mine.id
    ]
    assert [i for i, _ in store.graph.entity_fulltext(alice, [mel.id], "", 10)] == [mine.id]
    assert (
        store.graph.entity_fulltext(NodeFilter(namespaces=("b",)), [mel.id], '"pottery"', 10) == []
    )


def test_entity_newest_first_looks_at_the_last_links_only(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A speaker linked to every turn they said: "newest first" reads the last
    NEWEST_LINKED links (bounded work), then orders the visible ones by time."""
    import memloci.storage.postgres.walks as pg_walks
    import memloci.storage.sqlite.walks as sqlite_walks

    for module in (sqlite_walks, pg_walks):
        monkeypatch.setattr(module, "NEWEST_LINKED", 2)
    mel = store.entities.insert_entity(entity("Melanie"))
    first = episode("linked first, said last", when=T0 + timedelta(days=9))
    second = episode("linked second", when=T0)
    third = episode("linked third", when=T0 + timedelta(days=1))
    store.memories.insert_nodes([first])
    store.entities.link_entities("default", first.id, [mel.id])
    store.memories.insert_nodes([second, third])
    for n in (second, third):
        store.entities.link_entities("default", n.id, [mel.id])
    newest = store.graph.entity_fulltext(ALL, [mel.id], "", 10)
    assert newest == [(third.id, 0.0), (second.id, 0.0)]


def test_entity_neighbours_share_specific_entities_only(store: Store) -> None:
    oscar = store.entities.insert_entity(entity("Oscar"))
    busy = store.entities.insert_entity(entity("Melanie"))
    seed = episode("my guinea pig Oscar")
    near = episode("Oscar loves carrots")
    far = [episode(f"Melanie says {i}") for i in range(4)]
    hidden = episode("Oscar, bob's note", scope=Scope.USER, user="bob")
    store.memories.insert_nodes([seed, near, hidden, *far])
    store.entities.link_entities("default", seed.id, [oscar.id, busy.id])
    store.entities.link_entities("default", near.id, [oscar.id])
    store.entities.link_entities("default", hidden.id, [oscar.id])
    for n in far:
        store.entities.link_entities("default", n.id, [busy.id])
    alice = NodeFilter(namespaces=("default",), user="alice")
    assert store.graph.entity_neighbours(alice, [seed.id], max_links=3) == [
        (near.id, seed.id, oscar.id)
    ]
    wide = store.graph.entity_neighbours(alice, [seed.id], max_links=10)
    assert {r[0] for r in wide} == {near.id, *(n.id for n in far)}
    assert store.graph.entity_neighbours(alice, [], max_links=3) == []


def test_mention_texts_lists_current_episodes_and_facts(store: Store) -> None:
    turn = episode("Hi, I'm Caroline", speaker="Caroline")
    fact = episode("Caroline likes tea", type=NodeType.SEMANTIC, subject="Caroline")
    rule = episode("Greet first", type=NodeType.PROCEDURAL)
    gone = episode("old turn", valid_until=T0)
    store.memories.insert_nodes([turn, fact, rule, gone])
    assert store.graph.mention_texts([turn.id, fact.id, rule.id, gone.id, "missing0"]) == [
        (turn.id, "default", "Caroline", "Hi, I'm Caroline"),
        (fact.id, "default", "Caroline", "Caroline likes tea"),
    ]
