"""The Store contract for forgetting a person: ``delete_user_data`` removes one user's
data (and that of users merged into them) in one namespace and nothing else; ``scrub``
runs after it. Through the protocol only (any backend)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from memloci.errors import StorageError
from memloci.models import Edge, EdgeType, NodeType, Scope, short_id
from memloci.storage.base import NodeFilter, NodePatch, Store

from .conftest import EMBED_DIM, StoreFactory
from .test_records_contract import at, entity, node, thread, user

KINDS = {
    "users", "identifiers", "memories", "versions", "vectors", "edges", "entity_links",
    "entities", "threads", "sessions", "decay_states", "neighbours_blanked",
}  # fmt: skip


def everything(store: Store, ns: str) -> list[str]:
    flt = NodeFilter(namespaces=(ns,), include_invalid=True)
    return sorted(n.id for n in store.memories.list_nodes(flt, limit=10_000))


def embed_all(store: Store) -> None:
    pending = store.search.pending_embeddings(10_000)
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(len(pending), EMBED_DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store.search.save_embeddings(pending, vecs)


def seed_person(store: Store, ns: str, uid: str, tag: str) -> dict[str, list[str]]:
    """One person's data in ``ns``: turns in a session, facts of every scope, an opinion,
    a forgotten fact, an edited fact, entities, a thread, identifiers, a session."""
    turns = [
        node(f"{tag} turn {i}", ns, type=NodeType.EPISODIC, scope=Scope.USER, user=uid,
             session=f"{tag}-s", when=at(i))
        for i in range(3)
    ]  # fmt: skip
    for t in turns:
        store.memories.insert_node(t, link_previous=True)
    facts = [
        node(f"{tag} fact user", ns, scope=Scope.USER, user=uid, key=f"{tag}_key", value="v1"),
        node(f"{tag} fact global", ns, scope=Scope.GLOBAL, user=uid),
        node(f"{tag} opinion", ns, type=NodeType.OPINION, scope=Scope.USER, user=uid),
        node(f"{tag} forgotten", ns, scope=Scope.USER, user=uid, valid_until=at(1)),
    ]
    store.memories.insert_nodes(facts)
    store.memories.update_node(ns, facts[0].id, NodePatch(content=f"{tag} fact user v2"))
    store.memories.insert_edge(
        Edge(id=short_id() + short_id(), namespace=ns, source_id=facts[1].id,
             target_id=turns[0].id, relation=EdgeType.DERIVED_FROM, valid_from=at(0),
             created_at=at(0))
    )  # fmt: skip
    own = store.entities.insert_entity(entity(f"{tag}-only place", ns))
    store.entities.link_entities(ns, facts[1].id, [own.id])
    store.people.upsert_user(user(uid, ns, identifiers={"telegram": f"{tag}-tg"}))
    store.people.upsert_thread(thread(f"{tag}-thread", ns, user=uid))
    store.jobs.register_session(ns, f"{tag}-s", user=uid, agent=None, now=at(0))
    return {"nodes": [n.id for n in turns + facts], "entities": [own.id]}


def test_delete_user_data_removes_one_person_and_only_them(store: Store) -> None:
    a = seed_person(store, "default", "alice", "aa")
    b = seed_person(store, "default", "bob", "bb")
    other_ns = seed_person(store, "other", "alice", "oo")  # same user id, other namespace
    shared = store.entities.insert_entity(entity("Shared Co"))
    store.entities.link_entities("default", a["nodes"][3], [shared.id])
    store.entities.link_entities("default", b["nodes"][3], [shared.id])
    store.people.upsert_user(
        user("alice-old", identifiers={"email": "a@x.io"}, merged_into="alice")
    )
    store.memories.insert_node(node("merged user's fact", scope=Scope.USER, user="alice-old"))
    embed_all(store)

    report = store.delete_user_data("default", "alice")

    assert set(report) == KINDS
    assert report["memories"] == len(a["nodes"]) + 1
    assert report["users"] == 2 and report["identifiers"] == 2 and report["threads"] == 1
    assert report["vectors"] == len(a["nodes"]) + 1 and report["versions"] >= report["memories"]
    assert report["entities"] == 1 and report["entity_links"] == 2
    assert report["edges"] >= 3 and report["sessions"] == 1
    assert everything(store, "default") == sorted(b["nodes"])
    assert store.people.get_user("default", "alice") is None
    assert store.people.get_user("default", "alice-old") is None
    assert store.people.find_user("default", "telegram", "aa-tg") is None
    assert store.people.find_user("default", "email", "a@x.io") is None
    assert store.people.get_thread("default", "aa-thread") is None
    assert store.entities.get_entity("default", a["entities"][0]) is None
    assert store.entities.find_entity("default", "aa-only place") is None
    assert store.entities.get_entity("default", shared.id) is not None  # bob still mentions it
    assert store.search.vectors("default", a["nodes"]) == {}
    assert [p.session for p in store.jobs.pending_sessions("default")] == ["bb-s"]
    # bob and the other namespace are whole
    assert len(store.search.vectors("default", b["nodes"])) == len(b["nodes"])
    assert store.people.get_thread("default", "bb-thread") is not None
    assert store.people.find_user("default", "telegram", "bb-tg") is not None
    assert everything(store, "other") == sorted(other_ns["nodes"])
    assert store.people.get_user("other", "alice") is not None
    assert store.people.get_thread("other", "oo-thread") is not None
    assert store.entities.get_entity("other", other_ns["entities"][0]) is not None
    assert [p.session for p in store.jobs.pending_sessions("other")] == ["oo-s"]
    flt = NodeFilter(namespaces=("default",), user="bob")
    assert {i for i, _ in store.search.fulltext(flt, "bb", 50)} >= set(b["nodes"][:3])
    assert store.search.fulltext(NodeFilter(namespaces=("default",), user="alice"), "aa", 50) == []
    assert store.scrub().done is True


def test_delete_user_data_leaves_no_trace_in_a_shared_sessions_turns(store: Store) -> None:
    # one session: alice's turn between two turns recorded without a user. Turns are
    # chained per owner, so hers never indexed theirs (and theirs never hers); a store
    # written before that (schema v6 / v8 unlinks it) had her words in their rows, which
    # deleting her blanked ("neighbours_blanked")
    turns = [
        node("before turn", type=NodeType.EPISODIC, scope=Scope.SESSION, session="s"),
        node("alice secret quokkaline", type=NodeType.EPISODIC, scope=Scope.USER,
             user="alice", session="s"),
        node("after turn", type=NodeType.EPISODIC, scope=Scope.SESSION, session="s"),
    ]  # fmt: skip
    for t in turns:
        store.memories.insert_node(t, link_previous=True)
    assert [e.target_id for e in store.memories.edges("default", turns[0].id)] == [turns[2].id]
    report = store.delete_user_data("default", "alice")
    assert report["memories"] == 1 and report["neighbours_blanked"] == 0
    assert store.search.fulltext(NodeFilter(namespaces=("default",)), "quokkaline", 10) == []
    assert {
        n for n, _ in store.search.fulltext(NodeFilter(namespaces=("default",)), "turn", 10)
    } == {
        turns[0].id,
        turns[2].id,
    }


def test_delete_user_data_of_unknown_user_is_empty(store: Store) -> None:
    store.memories.insert_node(node("bob's", scope=Scope.USER, user="bob"))
    report = store.delete_user_data("default", "nobody")
    assert set(report) == KINDS and not any(report.values())
    assert len(everything(store, "default")) == 1
    assert store.scrub().done is True


def test_delete_user_data_is_one_transaction(store: Store) -> None:
    seed_person(store, "default", "alice", "aa")
    with pytest.raises(RuntimeError), store.batch():
        store.delete_user_data("default", "alice")
        raise RuntimeError("abort")
    assert len(everything(store, "default")) == 7
    assert store.people.get_user("default", "alice") is not None
    assert store.people.get_thread("default", "aa-thread") is not None


def test_a_forget_that_removed_something_marks_a_scrub_due_until_one_finishes(
    store_factory: StoreFactory,
) -> None:
    first = store_factory.open()
    first.memories.insert_node(node("alice's", scope=Scope.USER, user="alice"))
    first.delete_user_data("default", "nobody")
    assert first.scrub_due() is False  # nothing removed: nothing to scrub
    first.delete_user_data("default", "alice")
    other = store_factory.open()  # the mark is in the store: another process sees it
    assert first.scrub_due() is True and other.scrub_due() is True
    # another client of the database running a statement at that instant (a test's
    # background thread) holds a snapshot: the scrub says so and stays due; a later
    # one that finds none finishes it
    for _ in range(20):
        scrub = other.scrub()
        if scrub.done:
            break
        assert scrub.reason and first.scrub_due() is True
        time.sleep(0.25)
    assert scrub.done is True and scrub.reason is None
    assert first.scrub_due() is False


def test_scrub_refuses_to_run_inside_a_batch(store: Store) -> None:
    with pytest.raises(StorageError), store.batch():
        store.scrub()


def test_concurrent_forgets_remove_each_memory_once(store_factory: StoreFactory) -> None:
    first = store_factory.open()
    for i in range(200):
        first.memories.insert_node(node(f"alice {i}", scope=Scope.USER, user="alice"))
        first.memories.insert_node(node(f"bob {i}", scope=Scope.USER, user="bob"))
    stores = [first, store_factory.open(), store_factory.open()]
    reports: list[dict[str, int]] = []
    barrier = threading.Barrier(len(stores))

    def forget(s: Store) -> None:
        barrier.wait()
        reports.append(s.delete_user_data("default", "alice"))

    threads = [threading.Thread(target=forget, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r["memories"] for r in reports) == [0, 0, 200]
    assert len(everything(first, "default")) == 200


def test_hard_deletes_drop_entities_no_memory_mentions_any_more(store: Store) -> None:
    """``purge_node``, ``clear`` and pruning remove the entities only the deleted memories
    linked (with their names); an entity another memory still links stays, its mention
    count lowered by the links removed but never below the memories linking it."""
    ns = "default"
    lone, shared, other = node("Zebulon Quartzfield visited"), node("Ana met Bo"), node("Bo ran")
    store.memories.insert_nodes([lone, shared, other])
    zeb = store.entities.insert_entity(entity("Zebulon Quartzfield", ns, mention_count=1))
    bo = store.entities.insert_entity(entity("Bo", ns, mention_count=3))
    ana = store.entities.insert_entity(entity("Ana", ns, mention_count=1))
    store.entities.link_entities(ns, lone.id, [zeb.id])
    store.entities.link_entities(ns, shared.id, [bo.id, ana.id])
    store.entities.link_entities(ns, other.id, [bo.id])
    assert store.memories.purge_node(ns, lone.id)
    assert store.entities.get_entity(ns, zeb.id) is None
    assert store.entities.find_entity(ns, "Zebulon Quartzfield") is None
    assert store.memories.purge_node(ns, shared.id)
    assert store.entities.get_entity(ns, ana.id) is None
    kept = store.entities.get_entity(ns, bo.id)
    assert kept is not None and kept.mention_count == 2
    every = NodeFilter(namespaces=(ns,), include_invalid=True)
    assert [n.id for n in store.entities.entity_nodes(every, bo.id)] == [other.id]
    assert store.memories.clear(ns) == 1
    assert store.entities.get_entity(ns, bo.id) is None
    manual = store.entities.insert_entity(entity("Nobody links me", ns))  # never linked: stays
    store.memories.insert_node(node("an unrelated memory"))
    store.memories.clear(ns)
    assert store.entities.get_entity(ns, manual.id) is not None


def test_forgetting_a_user_takes_what_they_gave_an_entity_others_mention(store: Store) -> None:
    """An entity bob's memories mention too stays, but alice's part goes with her: her
    mentions, and the summary drawn from every user's facts (it held her secret)."""
    ns = "default"
    mine = [node(f"Alice interviews at Initech, round {i}", user="alice", scope=Scope.USER)
            for i in (1, 2)]  # fmt: skip
    bobs = node("Initech makes TPS reports", user="bob", scope=Scope.USER)
    store.memories.insert_nodes([*mine, bobs])
    summary = "Initech makes TPS reports. Alice is secretly interviewing there."
    initech = store.entities.insert_entity(entity("Initech", ns, mention_count=3, summary=summary))
    for n in (*mine, bobs):
        store.entities.link_entities(ns, n.id, [initech.id])
    store.delete_user_data(ns, "alice")
    kept = store.entities.get_entity(ns, initech.id)
    assert kept is not None and kept.summary is None and kept.mention_count == 1


@pytest.mark.parametrize("how", ["forget", "purge"])
def test_hard_deletes_take_the_aliases_only_the_removed_memories_used(
    store: Store, how: str
) -> None:
    """Alice called Ana Silva "Anita"; once Alice is forgotten (or that memory purged) the
    entity bob's memories keep no longer holds her word, nor is it found by it. An alias
    the remaining memories still use stays, and one no memory ever used (given through
    the API) too."""
    ns = "default"
    alices = node("Alice went climbing with Anita again", user="alice", scope=Scope.USER)
    bobs = node("Bob's colleague Ana Silva codes in Go", user="bob", scope=Scope.USER)
    store.memories.insert_nodes([alices, bobs])
    ana = store.entities.insert_entity(
        entity("Ana Silva", ns, mention_count=2, aliases=["Anita", "Ana", "A. Silva"])
    )
    for n in (alices, bobs):
        store.entities.link_entities(ns, n.id, [ana.id])
    assert store.entities.find_entity(ns, "anita") is not None
    if how == "forget":
        store.delete_user_data(ns, "alice")
    else:
        assert store.memories.purge_node(ns, alices.id)
    kept = store.entities.get_entity(ns, ana.id)
    assert kept is not None and kept.aliases == ["Ana", "A. Silva"]
    assert store.entities.find_entity(ns, "Anita") is None
    for name in ("Ana", "a. silva", "Ana Silva"):
        found = store.entities.find_entity(ns, name)
        assert found is not None and found.id == ana.id, name


@pytest.mark.parametrize("how", ["forget", "purge"])
def test_a_canonical_name_only_the_removed_memories_used_gives_way(store: Store, how: str) -> None:
    """Only Alice called her "Ana Souza"; Bob says "Ana". Once Alice is forgotten (or her
    memory purged) the entity is "Ana", not found by the full name, and the old name's
    vector is gone. A canonical name that no alias left can replace stays."""
    ns = "default"
    alices = node("Alice's sister Ana Souza moved to Porto", user="alice", scope=Scope.USER)
    bobs = node("Bob had lunch with Ana today", user="bob", scope=Scope.USER)
    lonely = node("Alice met Zed Quill", user="alice", scope=Scope.USER)
    rest = node("Bob saw him yesterday", user="bob", scope=Scope.USER)
    store.memories.insert_nodes([alices, bobs, lonely, rest])
    ana = store.entities.insert_entity(entity("Ana Souza", ns, mention_count=2, aliases=["Ana"]))
    zed = store.entities.insert_entity(entity("Zed Quill", ns, mention_count=2, aliases=["Z"]))
    store.jobs.save_entity_vector(ns, ana.id, "m:4", b"\0" * 16)
    for n, e in ((alices, ana), (bobs, ana), (lonely, zed), (rest, zed)):
        store.entities.link_entities(ns, n.id, [e.id])
    if how == "forget":
        store.delete_user_data(ns, "alice")
    else:
        assert store.memories.purge_node(ns, alices.id) and store.memories.purge_node(ns, lonely.id)
    kept = store.entities.get_entity(ns, ana.id)
    assert kept is not None and (kept.canonical_name, kept.aliases) == ("Ana", [])
    assert store.entities.find_entity(ns, "Ana Souza") is None
    found = store.entities.find_entity(ns, "ana")
    assert found is not None and found.id == ana.id
    assert store.jobs.entity_vectors(ns, "m:4") == {}
    still = store.entities.get_entity(ns, zed.id)  # no alias the memories left use: unchanged
    assert still is not None and still.canonical_name == "Zed Quill"


def test_forgetting_a_user_drops_the_profile_vectors_their_facts_fed(store: Store) -> None:
    """An entity's summary is drawn from every user's facts: forgetting one user clears
    it, and the vector made from it goes too (a deleted entity's goes with it)."""
    ns = "default"
    alices = node("Alice works on Atlas, the billing platform", user="alice", scope=Scope.USER)
    bobs = node("Bob also works on Atlas", user="bob", scope=Scope.USER)
    lonely = node("Alice built Zephyr alone", user="alice", scope=Scope.USER)
    store.memories.insert_nodes([alices, bobs, lonely])
    atlas = store.entities.insert_entity(entity("Atlas", ns, mention_count=2))
    zephyr = store.entities.insert_entity(entity("Zephyr", ns, mention_count=1))
    for n, e in ((alices, atlas), (bobs, atlas), (lonely, zephyr)):
        store.entities.link_entities(ns, n.id, [e.id])
    for e in (atlas, zephyr):
        store.entities.update_entity(e.model_copy(update={"summary": f"{e.canonical_name} bills"}))
        store.jobs.save_profile_vector(ns, e.id, "m:4", "d1", b"\0" * 16)
    assert set(store.jobs.profile_vectors(ns, "m:4")) == {atlas.id, zephyr.id}
    store.delete_user_data(ns, "alice")
    kept = store.entities.get_entity(ns, atlas.id)
    assert kept is not None and kept.summary is None
    assert store.jobs.profile_vectors(ns, "m:4") == {}
    store.jobs.drop_orphans()
    store.entities.update_entity(kept.model_copy(update={"summary": "Atlas bills again"}))
    assert store.jobs.profile_vectors(ns, "m:4") == {}  # no vector survived to stand for it
