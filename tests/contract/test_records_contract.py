"""The Store contract for records: memory users, threads, entities and their links, API
keys and the health numbers in ``stats``, through the protocol only (any backend)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from memloci.errors import ConflictError, NotFoundError
from memloci.models import (
    ApiKey,
    Edge,
    EdgeType,
    Entity,
    EntityType,
    MemoryNode,
    MemoryUser,
    NodeType,
    Scope,
    Thread,
    ThreadMessage,
    short_id,
)
from memloci.storage.base import NodeFilter, NodePatch, Store

from .conftest import EMBED_DIM, StoreFactory

T0 = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def node(content: str, ns: str = "default", **fields: Any) -> MemoryNode:
    when = fields.pop("when", at(0))
    data: dict[str, Any] = {
        "id": short_id(), "namespace": ns, "type": NodeType.SEMANTIC, "content": content,
        "scope": Scope.GLOBAL, "event_time": when, "created_at": when, "updated_at": when,
        "valid_from": when,
    }  # fmt: skip
    data.update(fields)
    return MemoryNode(**data)


def user(uid: str, ns: str = "default", **fields: Any) -> MemoryUser:
    return MemoryUser(id=uid, namespace=ns, created_at=fields.pop("created_at", at(0)), **fields)


def thread(tid: str, ns: str = "default", n: int = 2, **fields: Any) -> Thread:
    messages = [
        ThreadMessage(role="user" if i % 2 == 0 else "assistant", content=f"m{i}", created_at=at(i))
        for i in range(n)
    ]
    when = fields.pop("when", at(0))
    return Thread(
        id=tid, namespace=ns, messages=messages, created_at=when, updated_at=when, **fields
    )


def entity(name: str, ns: str = "default", **fields: Any) -> Entity:
    fields.setdefault("id", short_id())
    return Entity(namespace=ns, canonical_name=name, first_seen=at(0), last_seen=at(0), **fields)


def api_key(kid: str | None = None, **fields: Any) -> ApiKey:
    fields.setdefault("namespaces", ["default"])
    fields.setdefault("created_at", at(0))
    return ApiKey(id=kid or short_id(), name="ci", **fields)


# ---------------------------------------------------------------------------- users


def test_users_round_trip_list_count_and_query(store: Store) -> None:
    store.people.upsert_user(
        user("telegram:1", display_name="Alice Smith", identifiers={"telegram": "1"},
             preferences={"tz": "Europe/Lisbon"}, conversation_count=3, last_seen=at(5))
    )  # fmt: skip
    store.people.upsert_user(user("email:bob", display_name="Bob", created_at=at(1)))
    got = store.people.get_user("default", "telegram:1")
    assert got is not None and got.display_name == "Alice Smith"
    assert got.identifiers == {"telegram": "1"} and got.preferences == {"tz": "Europe/Lisbon"}
    assert (got.conversation_count, got.last_seen) == (3, at(5))
    assert [u.id for u in store.people.list_users("default")] == ["telegram:1", "email:bob"]
    assert [u.id for u in store.people.list_users("default", 1, 1)] == ["email:bob"]
    assert [u.id for u in store.people.list_users("default", query="SMITH")] == ["telegram:1"]
    assert [u.id for u in store.people.list_users("default", query="email:")] == ["email:bob"]
    assert store.people.list_users("default", query="100%") == []
    assert (
        store.people.count_users("default") == 2
        and store.people.count_users("default", query="bo") == 1
    )


def test_find_user_by_channel_identifier(store: Store) -> None:
    store.people.upsert_user(user("u1", identifiers={"telegram": "42", "email": "a@x.io"}))
    assert (found := store.people.find_user("default", "email", "a@x.io")) and found.id == "u1"
    assert store.people.find_user("default", "telegram", "43") is None
    assert store.people.find_user("default", "email", "42") is None
    # an upsert replaces the identifiers: the old one no longer finds the user
    store.people.upsert_user(user("u1", identifiers={"telegram": "77"}))
    assert store.people.find_user("default", "telegram", "42") is None
    assert (found := store.people.find_user("default", "telegram", "77")) and found.id == "u1"


def test_find_user_prefers_the_user_that_was_not_merged(store: Store) -> None:
    store.people.upsert_user(user("old", identifiers={"telegram": "1"}, merged_into="new"))
    store.people.upsert_user(user("new", identifiers={"telegram": "1"}, created_at=at(1)))
    assert (found := store.people.find_user("default", "telegram", "1")) and found.id == "new"


def test_users_are_isolated_by_namespace(store: Store) -> None:
    store.people.upsert_user(user("u1", "a", identifiers={"telegram": "1"}))
    store.people.upsert_user(user("u1", "b", display_name="other"))
    assert store.people.get_user("c", "u1") is None and store.people.list_users("c") == []
    assert store.people.find_user("b", "telegram", "1") is None
    assert store.people.delete_users("b", ["u1", "missing"]) == 1
    assert store.people.get_user("b", "u1") is None
    assert (kept := store.people.get_user("a", "u1")) and kept.identifiers == {"telegram": "1"}
    assert store.people.find_user("a", "telegram", "1") is not None
    assert store.people.count_users("a") == 1 and store.people.count_users("b") == 0


def test_reassign_user_moves_memories_threads_and_full_text(store: Store) -> None:
    mine = store.memories.insert_node(node("src likes kayaking", scope=Scope.USER, user="src"))
    shared = store.memories.insert_node(node("src shared a kayak tip", user="src"))
    other = store.memories.insert_node(node("kayaking in another namespace", "b", scope=Scope.USER,
                                   user="src"))  # fmt: skip
    store.people.upsert_thread(thread("t1", user="src"))
    assert store.people.reassign_user("default", "src", "dst") == 2
    moved = store.memories.list_nodes(NodeFilter(owner_user="dst"))
    assert {n.id for n in moved} == {mine.id, shared.id}
    assert store.memories.list_nodes(NodeFilter(owner_user="src")) == []
    ids = {i for i, _ in store.search.fulltext(NodeFilter(user="dst"), "kayaking", 10)}
    assert mine.id in ids
    assert mine.id not in {
        i for i, _ in store.search.fulltext(NodeFilter(user="src"), "kayaking", 10)
    }
    assert (t := store.people.get_thread("default", "t1")) and t.user == "dst"
    assert (
        o := store.memories.get_node("b", other.id)
    ) and o.user == "src"  # other namespace untouched


def test_reassign_user_refreshes_the_vector_cache(store: Store) -> None:
    a = store.memories.insert_node(node("a user-scoped memory", scope=Scope.USER, user="src"))
    pending = store.search.pending_embeddings(10)
    vec = np.zeros(EMBED_DIM, dtype=np.float32)
    vec[0] = 1.0
    store.search.save_embeddings(pending, vec[None, :])
    flt_src, flt_dst = NodeFilter(user="src"), NodeFilter(user="dst")
    assert [i for i, _ in store.search.vector_search(flt_src, vec, 5)] == [a.id]  # cache loaded
    store.people.reassign_user("default", "src", "dst")
    assert [i for i, _ in store.search.vector_search(flt_dst, vec, 5)] == [a.id]
    assert store.search.vector_search(flt_src, vec, 5) == []


# ---------------------------------------------------------------------------- threads


def test_thread_round_trip(store: Store) -> None:
    t = thread("telegram:1:chat:bot", n=3, user="u1", agent="bot", summary="earlier: hi")
    store.people.upsert_thread(t)
    got = store.people.get_thread("default", t.id)
    assert got == t and got.message_count == 3
    assert [m.content for m in got.messages] == ["m0", "m1", "m2"]
    assert store.people.get_thread("default", "nope") is None


def test_thread_listing_is_newest_first_without_messages(store: Store) -> None:
    store.people.upsert_thread(thread("t1", n=4, user="u1", agent="a", when=at(1)))
    store.people.upsert_thread(thread("t2", n=1, user="u1", agent="b", when=at(3)))
    store.people.upsert_thread(thread("t3", n=0, user="u2", agent="a", when=at(2)))
    listed = store.people.list_threads("default")
    assert [t.id for t in listed] == ["t2", "t3", "t1"]
    assert [t.message_count for t in listed] == [1, 0, 4]
    assert all(t.messages == [] for t in listed)
    assert [t.id for t in store.people.list_threads("default", user="u1")] == ["t2", "t1"]
    assert [t.id for t in store.people.list_threads("default", agent="a")] == ["t3", "t1"]
    assert [t.id for t in store.people.list_threads("default", limit=1, offset=1)] == ["t3"]
    assert store.people.count_threads("default") == 3
    assert store.people.count_threads("default", user="u1", agent="b") == 1


def test_threads_are_isolated_by_namespace(store: Store) -> None:
    store.people.upsert_thread(thread("t1", "a"))
    store.people.upsert_thread(thread("t1", "b", n=5))
    assert store.people.list_threads("c") == [] and store.people.get_thread("c", "t1") is None
    assert store.people.delete_threads("b", ["t1", "t9"]) == 1
    assert store.people.get_thread("b", "t1") is None
    assert (kept := store.people.get_thread("a", "t1")) and kept.message_count == 2
    assert store.people.count_threads("a") == 1 and store.people.count_threads("b") == 0


# ---------------------------------------------------------------------------- entities


def test_entity_round_trip_and_update(store: Store) -> None:
    e = store.entities.insert_entity(
        entity("Ada Lovelace", type=EntityType.PERSON, aliases=["Ada"], summary="mathematician",
               attributes={"born": 1815}, mention_count=2)
    )  # fmt: skip
    assert store.entities.get_entity("default", e.id) == e
    changed = e.model_copy(
        update={"canonical_name": "Augusta Ada King", "aliases": ["Ada Lovelace"]}
    )
    store.entities.update_entity(changed)
    assert store.entities.get_entity("default", e.id) == changed
    assert (found := store.entities.find_entity("default", "ada lovelace")) and found.id == e.id
    assert store.entities.find_entity("default", "Ada") is None  # the old alias is gone
    with pytest.raises(NotFoundError):
        store.entities.update_entity(entity("ghost"))
    with pytest.raises(NotFoundError):
        store.entities.update_entity(changed.model_copy(update={"namespace": "b"}))


def test_insert_entity_never_overwrites_another_namespace(store: Store) -> None:
    first = store.entities.insert_entity(entity("Lisbon", "a", type=EntityType.PLACE))
    second = store.entities.insert_entity(entity("Paris", "b", id=first.id))
    assert second.id != first.id
    assert (a := store.entities.get_entity("a", first.id)) and a.canonical_name == "Lisbon"
    assert (b := store.entities.get_entity("b", second.id)) and b.canonical_name == "Paris"


def test_find_entity_is_case_insensitive_and_prefers_the_canonical_name(store: Store) -> None:
    cafe = store.entities.insert_entity(entity("Café Ärzte", aliases=["the  cafe"]))
    store.entities.insert_entity(entity("Jordan", type=EntityType.PLACE, mention_count=1))
    person = store.entities.insert_entity(
        entity("Michael Jordan", aliases=["jordan"], mention_count=9)
    )
    assert (f := store.entities.find_entity("default", "CAFÉ ÄRZTE")) and f.id == cafe.id
    assert (f := store.entities.find_entity("default", "The Cafe")) and f.id == cafe.id
    assert (f := store.entities.find_entity("default", "JORDAN")) and f.type is EntityType.PLACE
    assert (f := store.entities.find_entity("default", "michael jordan")) and f.id == person.id
    assert store.entities.find_entity("default", "Café") is None
    assert store.entities.find_entity("other", "jordan") is None


def test_list_and_count_entities(store: Store) -> None:
    store.entities.insert_entity(entity("Alice", type=EntityType.PERSON, mention_count=5))
    store.entities.insert_entity(entity("Bob", type=EntityType.PERSON, aliases=["Roberto"]))
    store.entities.insert_entity(entity("Acme", type=EntityType.ORGANIZATION, mention_count=3))
    store.entities.insert_entity(entity("Alice", "b"))
    assert [e.canonical_name for e in store.entities.list_entities("default")] == [
        "Alice",
        "Acme",
        "Bob",
    ]
    assert [e.canonical_name for e in store.entities.list_entities("default", type="person")] == [
        "Alice", "Bob",
    ]  # fmt: skip
    assert [e.canonical_name for e in store.entities.list_entities("default", query="BERT")] == [
        "Bob"
    ]
    assert [e.canonical_name for e in store.entities.list_entities("default", query="%")] == []
    assert [
        e.canonical_name for e in store.entities.list_entities("default", limit=1, offset=1)
    ] == ["Acme"]
    assert store.entities.count_entities("default") == 3
    assert store.entities.count_entities("default", type="person", query="a") == 1
    assert store.entities.count_entities("b") == 1 and store.entities.count_entities("c") == 0


def test_entity_nodes_bounded_for_a_busy_entity_exact_for_its_facts(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A speaker linked to every turn: the newest memories are read from the last
    NEWEST_LINKED links; its facts (few) are found however old their link is."""
    import memloci.storage.sql.records as sql_records

    monkeypatch.setattr(sql_records, "NEWEST_LINKED", 2)  # the one core of both backends
    mel = store.entities.insert_entity(entity("Melanie"))
    fact = store.memories.insert_node(node("Melanie paints", when=at(1)))
    store.entities.link_entities("default", fact.id, [mel.id])
    turns = [
        store.memories.insert_node(node(f"turn {i}", type=NodeType.EPISODIC, when=at(2 + i)))
        for i in range(4)
    ]
    for t in turns:
        store.entities.link_entities("default", t.id, [mel.id])
    newest = store.entities.entity_nodes(NodeFilter(), mel.id, limit=10)
    assert [n.id for n in newest] == [turns[3].id, turns[2].id]  # the last two links
    facts = NodeFilter(types=(NodeType.SEMANTIC, NodeType.OPINION))
    assert [n.id for n in store.entities.entity_nodes(facts, mel.id, limit=2)] == [fact.id]


def test_entity_links(store: Store) -> None:
    alice, bob = (
        store.entities.insert_entity(entity("Alice")),
        store.entities.insert_entity(entity("Bob")),
    )
    acme = store.entities.insert_entity(entity("Acme", mention_count=5))  # wins ties
    n1 = store.memories.insert_node(node("Alice works at Acme", when=at(1)))
    n2 = store.memories.insert_node(node("Alice met Bob at Acme", when=at(2)))
    n3 = store.memories.insert_node(
        node("Alice, privately", scope=Scope.USER, user="u2", when=at(3))
    )
    gone = store.memories.insert_node(node("Alice used to work at Initech", when=at(0)))
    assert store.entities.link_entities("default", n1.id, [alice.id, acme.id]) == 2
    assert store.entities.link_entities("default", n1.id, [alice.id]) == 0  # already linked
    store.entities.link_entities("default", n2.id, [alice.id, bob.id, acme.id])
    store.entities.link_entities("default", n3.id, [alice.id, bob.id])
    store.entities.link_entities("default", gone.id, [alice.id])
    store.memories.update_node("default", gone.id, NodePatch(valid_until=at(4)))

    everyone = NodeFilter()
    assert [n.id for n in store.entities.entity_nodes(everyone, alice.id)] == [n3.id, n2.id, n1.id]
    assert [n.id for n in store.entities.entity_nodes(everyone, alice.id, limit=1)] == [n3.id]
    assert [n.id for n in store.entities.entity_nodes(NodeFilter(user="u1"), alice.id)] == [
        n2.id,
        n1.id,
    ]
    # its newest links, whoever owns them, each with whether the filter sees it
    order = [n.id for n in store.entities.entity_nodes(NodeFilter(include_invalid=True), alice.id)]
    assert sorted(order) == sorted([n1.id, n2.id, n3.id, gone.id])
    seen = store.entities.entity_links_seen(NodeFilter(user="u1"), alice.id)
    assert seen == [(i, i in (n1.id, n2.id)) for i in order]
    every = store.entities.entity_links_seen(NodeFilter(user="u1", include_invalid=True), alice.id)
    assert every == [(i, i != n3.id) for i in order]
    assert len(store.entities.entity_links_seen(everyone, alice.id, limit=2)) == 2
    assert store.entities.entity_links_seen(NodeFilter(namespaces=("other",)), alice.id) == []
    related = store.entities.related_entities(everyone, alice.id)
    assert [(e.id, shared) for e, shared in related] == [(acme.id, 2), (bob.id, 2)]
    related = store.entities.related_entities(NodeFilter(user="u1"), bob.id)  # n3 is hidden
    assert [(e.id, shared) for e, shared in related] == [(acme.id, 1), (alice.id, 1)]
    assert store.entities.related_entities(everyone, alice.id, limit=1)[0][0].id == acme.id
    linked = store.entities.node_entities("default", [n1.id, n3.id, "missing1"])
    assert {e.id for e in linked[n1.id]} == {alice.id, acme.id}
    assert {e.id for e in linked[n3.id]} == {alice.id, bob.id} and linked["missing1"] == []
    # which of these memories are linked to these entities, bounded by the filter
    ids = [n1.id, n2.id, n3.id, "missing1"]
    assert store.entities.linked_nodes(everyone, ids, [bob.id]) == {
        n2.id: {bob.id},
        n3.id: {bob.id},
    }
    assert store.entities.linked_nodes(NodeFilter(user="u1"), ids, [bob.id]) == {n2.id: {bob.id}}
    assert store.entities.linked_nodes(NodeFilter(user="u1"), ids, [bob.id, acme.id]) == {
        n1.id: {acme.id},
        n2.id: {bob.id, acme.id},
    }  # n3 is u2's
    assert store.entities.linked_nodes(NodeFilter(namespaces=("other",)), ids, [bob.id]) == {}
    assert store.entities.linked_nodes(everyone, [], [bob.id]) == {}
    assert store.entities.linked_nodes(everyone, ids, []) == {}


def test_link_entities_checks_both_ends_in_the_namespace(store: Store) -> None:
    mine = store.entities.insert_entity(entity("Alice"))
    theirs = store.entities.insert_entity(entity("Alice", "b"))
    n = store.memories.insert_node(node("Alice is here"))
    elsewhere = store.memories.insert_node(node("Alice is there", "b"))
    with pytest.raises(NotFoundError):
        store.entities.link_entities("default", elsewhere.id, [mine.id])
    with pytest.raises(NotFoundError):
        store.entities.link_entities("default", n.id, [mine.id, theirs.id])  # nothing is linked
    assert store.entities.node_entities("default", [n.id])[n.id] == []


def test_deleting_entities_and_nodes_removes_links(store: Store) -> None:
    alice, bob = (
        store.entities.insert_entity(entity("Alice")),
        store.entities.insert_entity(entity("Bob")),
    )
    other = store.entities.insert_entity(entity("Alice", "b"))
    n1, n2 = (
        store.memories.insert_node(node("Alice and Bob")),
        store.memories.insert_node(node("Alice alone")),
    )
    store.entities.link_entities("default", n1.id, [alice.id, bob.id])
    store.entities.link_entities("default", n2.id, [alice.id])
    assert store.entities.delete_entities("b", [alice.id]) == 0  # not in that namespace
    assert store.entities.delete_entities("default", [bob.id, other.id]) == 1
    assert (
        store.entities.get_entity("default", bob.id) is None
        and store.entities.find_entity("default", "bob") is None
    )
    assert store.entities.get_entity("b", other.id) is not None
    assert [e.id for e in store.entities.node_entities("default", [n1.id])[n1.id]] == [alice.id]
    store.memories.purge_node("default", n1.id)
    assert [n.id for n in store.entities.entity_nodes(NodeFilter(), alice.id)] == [n2.id]


# ---------------------------------------------------------------------------- API keys


def test_api_keys(store: Store) -> None:
    assert store.people.has_keys() is False and store.people.list_keys() == []
    k1 = api_key(namespaces=["a", "b"], can_write=False)
    k2 = api_key(namespaces=["*"], admin=True, created_at=at(1))
    store.people.insert_key(k1, "h1")
    store.people.insert_key(k2, "h2")
    assert store.people.get_key(k1.id) == (k1, "h1") and store.people.get_key("zzzzzzzz") is None
    with pytest.raises(ConflictError):
        store.people.insert_key(api_key(k1.id), "h3")
    assert store.people.has_keys() is True
    revoked = store.people.revoke_key(k1.id, now=at(1))
    assert revoked.revoked_at == at(1)
    assert store.people.revoke_key(k1.id, now=at(2)).revoked_at == at(1)  # the first time stays
    with pytest.raises(NotFoundError):
        store.people.revoke_key("zzzzzzzz", now=at(1))
    assert [k.id for k in store.people.list_keys()] == [k2.id]
    assert [k.id for k in store.people.list_keys(include_revoked=True)] == [k1.id, k2.id]
    store.people.touch_key(k2.id, now=at(3))
    assert (got := store.people.get_key(k2.id)) and got[0].last_used_at == at(3)
    store.people.revoke_key(k2.id, now=at(4))
    assert store.people.has_keys() is False


def test_api_keys_survive_reopening(store_factory: StoreFactory) -> None:
    store = store_factory.open()
    key = api_key()
    store.people.insert_key(key, "hash")
    store.close()
    assert store_factory.open().people.get_key(key.id) == (key, "hash")


# ---------------------------------------------------------------------------- stats


def test_stats_count_orphans_and_report_last_maintenance(store: Store) -> None:
    assert store.stats(["default"]).last_maintenance is None
    lonely = store.memories.insert_node(node("a fact linked to nothing"))
    store.memories.insert_node(node("an opinion linked to nothing", type=NodeType.OPINION))
    linked = store.memories.insert_node(node("a fact about Alice"))
    store.entities.link_entities(
        "default", linked.id, [store.entities.insert_entity(entity("Alice")).id]
    )
    a, b = store.memories.insert_node(node("fact a")), store.memories.insert_node(node("fact b"))
    store.memories.insert_edge(
        Edge(id=short_id(), source_id=a.id, target_id=b.id, relation=EdgeType.CAUSAL,
             valid_from=at(0), created_at=at(0))
    )  # fmt: skip
    store.memories.insert_node(node("an episode linked to nothing", type=NodeType.EPISODIC))
    store.memories.insert_node(node("elsewhere, linked to nothing", "b"))
    store.memories.update_node("default", lonely.id, NodePatch(valid_until=at(1)))
    assert store.stats(["default"]).orphans == 1  # the opinion
    assert store.stats(["default", "b"]).orphans == 2
    store.set_meta("last_maintenance", at(5).isoformat())
    assert store.stats(["default"]).last_maintenance == at(5)
