"""The Store contract: every method of :class:`memloci.storage.base.Store`, through the
protocol only (no private attributes, no SQL), so any backend can run it."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from memloci.errors import EmbeddingModelError, NotFoundError, ValidationError
from memloci.models import (
    NODE_ORDERS,
    Edge,
    EdgeType,
    EpisodeDetails,
    FactType,
    MemoryNode,
    MemoryUser,
    MemoryVersion,
    NodeType,
    ProcedureDetails,
    ProcedureType,
    Scope,
    SourceType,
    short_id,
)
from memloci.storage.base import PAUSE, NodeFilter, NodePatch, Store
from memloci.storage.rows import content_hash

from .conftest import EMBED_DIM, EMBED_MODEL, StoreFactory

T0 = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
EPI, SEM, PROC, OPI = NodeType.EPISODIC, NodeType.SEMANTIC, NodeType.PROCEDURAL, NodeType.OPINION


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def make_node(content: str = "a memory worth keeping", **fields: Any) -> MemoryNode:
    when = fields.pop("when", None) or at(0)
    data: dict[str, Any] = {
        "id": short_id(),
        "namespace": "default",
        "type": SEM,
        "content": content,
        "scope": Scope.GLOBAL,
        "event_time": when,
        "created_at": when,
        "updated_at": when,
        "valid_from": when,
    }
    data.update(fields)
    return MemoryNode(**data)


def flt(*namespaces: str, **kw: Any) -> NodeFilter:
    return NodeFilter(namespaces=namespaces or ("default",), **kw)


def unit(values: list[float] | np.ndarray) -> np.ndarray:
    vec = np.zeros(EMBED_DIM, dtype=np.float32)
    arr = np.asarray(values, dtype=np.float32)
    vec[: len(arr)] = arr
    return (vec / np.linalg.norm(vec)).astype(np.float32)


def axis(i: int) -> np.ndarray:
    vec = np.zeros(EMBED_DIM, dtype=np.float32)
    vec[i] = 1.0
    return vec


def embed(store: Store, vectors: dict[str, np.ndarray]) -> int:
    """Save the given vectors for pending nodes (through the public queue)."""
    pending = {p.id: p for p in store.search.pending_embeddings(100_000)}
    items = [pending[i] for i in vectors]
    mat = np.stack([vectors[i] for i in vectors]).astype(np.float32)
    return store.search.save_embeddings(items, mat)


def names(result: list[MemoryNode] | list[tuple[str, float]], world: dict[str, MemoryNode]):
    by_id = {n.id: name for name, n in world.items()}
    ids = [r.id if isinstance(r, MemoryNode) else r[0] for r in result]
    return {by_id.get(i, i) for i in ids}


# ---------------------------------------------------------------------------- a small world


@pytest.fixture
def world(store: Store) -> dict[str, MemoryNode]:
    """One node per visibility situation in ``default`` plus one in ``other``."""
    spec: dict[str, MemoryNode] = {
        "turn_u1": make_node(
            "alice said hello in session one", type=EPI, scope=Scope.USER, user="u1",
            session="s1", category="conversation", when=at(0),
        ),
        "turn_u2": make_node(
            "bob said hello in session two", type=EPI, scope=Scope.USER, user="u2",
            session="s2", category="conversation", when=at(1),
        ),
        "global": make_node(
            "the office closes at six", key="Office Hours", category="context",
            confidence=0.9, when=at(2),
        ),
        "user_u1": make_node(
            "alice prefers green tea", scope=Scope.USER, user="u1", category="preference",
            confidence=0.4, when=at(3),
        ),
        "user_u2": make_node(
            "bob prefers black coffee", scope=Scope.USER, user="u2", category="preference",
            confidence=0.6, when=at(4),
        ),
        "agent_x": make_node("agent x speaks formally", scope=Scope.AGENT, agent="x", when=at(5)),
        "agent_y": make_node("agent y speaks casually", scope=Scope.AGENT, agent="y", when=at(6)),
        "agent_any": make_node("agents answer in english", scope=Scope.AGENT, when=at(7)),
        "session_s1": make_node(
            "this chat is about taxes", scope=Scope.SESSION, session="s1", user="u1", when=at(8)
        ),
        "session_s2": make_node(
            "this chat is about travel", scope=Scope.SESSION, session="s2", user="u2", when=at(9)
        ),
        "procedure": make_node("always greet the user by name", type=PROC, when=at(10)),
        "opinion": make_node("jazz is better than pop", type=OPI, confidence=0.7, when=at(11)),
        "old": make_node("the office closes at five", when=at(0), valid_until=at(5)),
        "elsewhere": make_node(
            "the office closes at six", namespace="other", key="office hours", when=at(2)
        ),
    }  # fmt: skip
    return {name: store.memories.insert_node(node) for name, node in spec.items()}


CURRENT = {
    "turn_u1", "turn_u2", "global", "user_u1", "user_u2", "agent_x", "agent_y", "agent_any",
    "session_s1", "session_s2", "procedure", "opinion",
}  # fmt: skip


def listed(store: Store, world: dict[str, MemoryNode], **kw: Any) -> set[str]:
    namespaces = kw.pop("namespaces", ("default",))
    f = NodeFilter(namespaces=namespaces, **kw)
    found = store.memories.list_nodes(f, limit=1000)
    assert store.memories.count_nodes(f) == len(found)
    return names(found, world)


# ---------------------------------------------------------------------------- nodes


def test_insert_and_get_round_trip_every_field(store: Store) -> None:
    node = make_node(
        "the user's cat is called Miso", key="cat_name", value={"name": "Miso", "age": 3},
        category="person", subject="Miso", fact_type=FactType.RELATIONSHIP, scope=Scope.USER,
        user="u1", agent="bot", session="s1", speaker="user", confidence=0.75,
        times_confirmed=2, times_contradicted=1, access_count=4, last_accessed=at(3),
        decay_rate=0.2, source_type=SourceType.EXTRACTION, source_role="assistant",
        metadata={"nested": {"list": [1, 2, "x"]}, "unicode": "日本語"}, when=at(1),
    )  # fmt: skip
    stored = store.memories.insert_node(node)
    assert stored.id == node.id
    got = store.memories.get_node("default", node.id)
    assert got is not None
    assert got.model_dump(exclude={"embedded"}) == node.model_dump(exclude={"embedded"})
    assert got.embedded is False
    assert store.memories.id_exists(node.id)
    assert not store.memories.id_exists("zzzzzzzz")


def test_episode_and_procedure_details_round_trip(store: Store) -> None:
    episode = EpisodeDetails(
        trigger={"message": "book a table"},
        actions=[{"tool": "search", "result": "3 places"}],
        outcome={"success": True, "final_output": "booked"},
        started_at=at(1), ended_at=at(2), duration_ms=3_600_000.0,
        feedback={"rating": 5, "comment": "great"},
    )  # fmt: skip
    proc = ProcedureDetails(
        procedure_type=ProcedureType.TOOL_SEQUENCE, triggers={"goal_contains": ["weather"]}
    )
    e = store.memories.insert_node(make_node("booked a table for two", type=EPI, episode=episode))
    p = store.memories.insert_node(make_node("check the forecast first", type=PROC, procedure=proc))
    got_e, got_p = (
        store.memories.get_node("default", e.id),
        store.memories.get_node("default", p.id),
    )
    assert got_e is not None and got_e.episode == episode
    assert got_p is not None and got_p.procedure == proc


def test_insert_with_taken_id_gets_a_fresh_id(store: Store) -> None:
    first = store.memories.insert_node(make_node("first memory with this id"))
    second = store.memories.insert_node(make_node("second memory wanting it", id=first.id))
    assert second.id != first.id and len(second.id) == 8
    assert store.memories.get_node("default", first.id).content == "first memory with this id"
    assert store.memories.get_node("default", second.id).content == "second memory wanting it"


def test_get_nodes_keeps_requested_order_and_skips_unknown(store: Store) -> None:
    a, b, c = (store.memories.insert_node(make_node(f"memory {x}")) for x in "abc")
    d = store.memories.insert_node(make_node("memory d", namespace="other"))
    got = store.memories.get_nodes("default", [c.id, "unknown1", a.id, b.id, d.id])
    assert [n.id for n in got] == [c.id, a.id, b.id]
    both = store.memories.get_nodes(["default", "other"], [d.id, a.id])
    assert [n.id for n in both] == [d.id, a.id]
    assert store.memories.get_nodes("default", []) == []


def test_people_of_names_the_speaker_else_the_subject(store: Store) -> None:
    said = store.memories.insert_node(
        make_node("I moved to Lisbon", speaker="Ana", subject="Lisbon")
    )
    fact = store.memories.insert_node(make_node("Ben owns a labrador", subject="Ben"))
    nobody = store.memories.insert_node(make_node("a memory of no one"))
    elsewhere = store.memories.insert_node(
        make_node("said elsewhere", namespace="other", speaker="Cy")
    )
    ids = [said.id, fact.id, nobody.id, elsewhere.id, "unknown1"]
    assert store.memories.people_of("default", ids) == {said.id: "Ana", fact.id: "Ben"}
    assert store.memories.people_of(["default", "other"], [elsewhere.id]) == {elsewhere.id: "Cy"}
    assert store.memories.people_of("default", []) == {}


def test_insert_nodes_batch(store: Store) -> None:
    batch = [make_node(f"batch memory {i}", when=at(i)) for i in range(5)]
    store.memories.insert_nodes(batch)
    assert [n.id for n in store.memories.list_nodes(flt())] == [n.id for n in batch]


def test_iter_nodes_yields_namespace_including_invalid(store: Store, world) -> None:
    got = names(list(store.memories.iter_nodes("default")), world)
    assert got == CURRENT | {"old"}
    assert names(list(store.memories.iter_nodes("other")), world) == {"elsewhere"}
    assert list(store.memories.iter_nodes("nobody")) == []


def test_iter_nodes_pages_through_many(store: Store) -> None:
    store.memories.insert_nodes([make_node(f"bulk memory {i}", when=at(i)) for i in range(1203)])
    assert len({n.id for n in store.memories.iter_nodes("default")}) == 1203


# ---------------------------------------------------------------------------- list filters


def test_no_filter_lists_current_nodes_of_the_namespace(store: Store, world) -> None:
    assert listed(store, world) == CURRENT
    assert listed(store, world, namespaces=("other",)) == {"elsewhere"}
    assert listed(store, world, namespaces=("default", "other")) == CURRENT | {"elsewhere"}
    assert listed(store, world, namespaces=()) == set()


def test_filter_user_hides_other_users_and_keeps_shared(store: Store, world) -> None:
    got = listed(store, world, user="u1")
    assert {"turn_u2", "user_u2"}.isdisjoint(got)
    assert {"turn_u1", "user_u1", "global", "agent_x", "agent_any", "procedure"} <= got
    assert {"turn_u2", "user_u2"} <= listed(store, world, user="u2")


def test_filter_user_hides_other_users_session_memories(store: Store, world) -> None:
    assert "session_s2" not in listed(store, world, user="u1")


def test_filter_agent_hides_other_agents(store: Store, world) -> None:
    got = listed(store, world, agent="x")
    assert "agent_y" not in got
    assert {"agent_x", "agent_any", "global", "user_u1"} <= got


def test_filter_session_hides_other_sessions(store: Store, world) -> None:
    got = listed(store, world, session="s1")
    assert "session_s2" not in got
    assert {"session_s1", "global", "turn_u2"} <= got


def test_filter_owner_user_and_sessions(store: Store, world) -> None:
    assert listed(store, world, owner_user="u1") == {"turn_u1", "user_u1", "session_s1"}
    assert listed(store, world, sessions=("s1",)) == {"turn_u1", "session_s1"}
    assert listed(store, world, sessions=("s1", "s2")) == {
        "turn_u1", "session_s1", "turn_u2", "session_s2",
    }  # fmt: skip


def test_filter_types_scopes_categories(store: Store, world) -> None:
    assert listed(store, world, types=(EPI,)) == {"turn_u1", "turn_u2"}
    assert listed(store, world, types=(PROC, OPI)) == {"procedure", "opinion"}
    assert listed(store, world, scopes=(Scope.AGENT,)) == {"agent_x", "agent_y", "agent_any"}
    assert listed(store, world, scopes=(Scope.SESSION,)) == {"session_s1", "session_s2"}
    assert listed(store, world, categories=("preference",)) == {"user_u1", "user_u2"}
    assert listed(store, world, categories=("context", "conversation")) == {
        "global", "turn_u1", "turn_u2",
    }  # fmt: skip


def test_filter_time_window_and_confidence(store: Store, world) -> None:
    assert listed(store, world, after=at(2.5), before=at(4.5)) == {"user_u1", "user_u2"}
    assert listed(store, world, after=at(10.5)) == {"opinion"}
    assert listed(store, world, before=at(0.5)) == {"turn_u1"}
    got = listed(store, world, min_confidence=0.65)
    assert {"user_u1", "user_u2"}.isdisjoint(got)
    assert {"global", "opinion", "procedure"} <= got


def test_filter_validity_as_of_and_include_invalid(store: Store, world) -> None:
    assert "old" not in listed(store, world)
    assert listed(store, world, as_of=at(4.5)) == {
        "turn_u1", "turn_u2", "global", "user_u1", "user_u2", "old",
    }  # fmt: skip
    assert "old" not in listed(store, world, as_of=at(5.5))
    assert "agent_x" in listed(store, world, as_of=at(5.5))
    assert listed(store, world, include_invalid=True) == CURRENT | {"old"}


def test_filter_key_norm_and_ids(store: Store, world) -> None:
    assert listed(store, world, key_norm="office_hours") == {"global"}
    assert listed(store, world, key_norm="office_hours", namespaces=("default", "other")) == {
        "global", "elsewhere",
    }  # fmt: skip
    wanted = (world["global"].id, world["procedure"].id, world["elsewhere"].id)
    assert listed(store, world, ids=wanted) == {"global", "procedure"}
    assert listed(store, world, ids=()) == set()


def test_filter_by_subject_ignores_case(store: Store) -> None:
    a = store.memories.insert_node(make_node("Sarah works at Globex", subject="Sarah"))
    store.memories.insert_node(make_node("Sam works at Initech", subject="Sam"))
    store.memories.insert_node(make_node("No subject here at all"))
    got = store.memories.list_nodes(flt(subject="sarah"), limit=10)
    assert [n.id for n in got] == [a.id]
    assert store.memories.count_nodes(flt(subject="SARAH")) == 1


def test_list_orders_and_paging(store: Store, world) -> None:
    f = flt()
    created = [n.id for n in store.memories.list_nodes(f, limit=100)]
    assert created == [world[n].id for n in world if n in CURRENT]
    assert [n.id for n in store.memories.list_nodes(f, limit=100, order="-created")] == created[
        ::-1
    ]
    assert [n.id for n in store.memories.list_nodes(f, limit=100, order="event")] == created
    confs = [n.confidence for n in store.memories.list_nodes(f, limit=100, order="confidence")]
    assert confs == sorted(confs) and confs[0] == 0.4
    desc = store.memories.list_nodes(f, limit=100, order="-confidence")
    assert [n.confidence for n in desc] == sorted(confs, reverse=True)
    assert {
        order for order in NODE_ORDERS if store.memories.list_nodes(f, limit=1, order=order)
    } == set(NODE_ORDERS)
    cats = [n.category for n in store.memories.list_nodes(f, limit=100, order="category")]
    assert cats == sorted(cats)
    pages = [
        n.id for off in range(0, 12, 5) for n in store.memories.list_nodes(f, limit=5, offset=off)
    ]
    assert pages == created
    with pytest.raises(ValidationError) as refused:
        store.memories.list_nodes(f, order="nonsense")
    assert refused.value.hint == f"use one of {', '.join(NODE_ORDERS)}"  # alike on both


def test_protected_order_puts_protected_then_most_recently_written_first(store: Store) -> None:
    """``protected``: decay rate 0 first, then ``updated_at`` descending (not creation),
    ties by id — so a limit keeps the newest writes, not the oldest rows."""
    spec = [  # (name, created hour, updated hour, decay rate)
        ("old_protected", 0, 0, 0.0), ("newer_protected", 1, 5, 0.0), ("oldest", 2, 2, 0.1),
        ("edited_late", 3, 9, 0.1), ("newest", 8, 8, 0.1), ("tie_b", 4, 6, 0.1),
        ("tie_a", 4, 6, 0.1),
    ]  # fmt: skip
    ids = {}
    for name, created, updated, rate in spec:
        node = make_node(f"fact {name}", when=at(created), updated_at=at(updated), decay_rate=rate)
        # ties by id in code-point order ("Z" < "a", as in Python), whatever the locale
        node = node.model_copy(update={"id": ("Z" if name == "tie_a" else "a") + node.id[1:]})
        ids[store.memories.insert_node(node).id] = name
    got = [ids[n.id] for n in store.memories.list_nodes(flt(), limit=100, order="protected")]
    assert got == [
        "newer_protected", "old_protected", "edited_late", "newest", "tie_a", "tie_b", "oldest",
    ]  # fmt: skip
    assert [ids[n.id] for n in store.memories.list_nodes(flt(), limit=3, order="protected")] == got[
        :3
    ]


# ---------------------------------------------------------------------------- changes


def test_update_content_bumps_version_keeps_id_and_requeues_embedding(store: Store) -> None:
    node = store.memories.insert_node(make_node("the user lives in Paris", session="s1"))
    embed(store, {node.id: axis(0)})
    assert node.id in store.search.vectors("default", [node.id])
    updated = store.memories.update_node(
        "default", node.id, NodePatch(content="the user lives in Lyon"), session="s2"
    )
    assert updated.id == node.id and updated.version == 2
    assert updated.content == "the user lives in Lyon"
    got = store.memories.get_node("default", node.id)
    assert got is not None and got.version == 2 and got.content == "the user lives in Lyon"
    history = store.memories.versions("default", node.id)
    assert [(v.version, v.content) for v in history] == [
        (1, "the user lives in Paris"), (2, "the user lives in Lyon"),
    ]  # fmt: skip
    assert history[1].source_session == "s2"
    assert node.id in {p.id for p in store.search.pending_embeddings(100)}
    assert store.search.vectors("default", [node.id]) == {}
    assert store.search.fulltext(flt(), '"lyon"', 5)[0][0] == node.id
    assert store.search.fulltext(flt(), '"paris"', 5) == []


def test_update_without_content_change_keeps_version_and_vector(store: Store) -> None:
    node = store.memories.insert_node(make_node("the user likes hiking"))
    embed(store, {node.id: axis(1)})
    patch = NodePatch(
        metadata={"source": "chat"}, category="Hobby", confidence=0.3, decay_rate=0.0,
        times_confirmed_delta=2, content="the user likes hiking",
    )  # fmt: skip
    updated = store.memories.update_node("default", node.id, patch)
    assert updated.version == 1
    got = store.memories.get_node("default", node.id)
    assert got is not None
    assert (got.metadata, got.category, got.confidence, got.decay_rate) == (
        {"source": "chat"}, "Hobby", 0.3, 0.0,
    )  # fmt: skip
    assert got.times_confirmed == 2
    assert len(store.memories.versions("default", node.id)) == 1
    assert node.id in store.search.vectors("default", [node.id])


def test_update_value_bumps_version(store: Store) -> None:
    node = store.memories.insert_node(make_node("timezone of the user", key="tz", value="UTC"))
    updated = store.memories.update_node("default", node.id, NodePatch(value="CET", set_value=True))
    assert updated.version == 2 and updated.value == "CET"
    assert [v.value for v in store.memories.versions("default", node.id)] == ["UTC", "CET"]


def test_update_valid_until_ends_validity(store: Store) -> None:
    node = store.memories.insert_node(make_node("a memory to end"))
    store.memories.update_node("default", node.id, NodePatch(valid_until=at(1)))
    assert store.memories.list_nodes(flt()) == []
    assert [n.id for n in store.memories.list_nodes(flt(include_invalid=True))] == [node.id]


def test_update_unknown_or_foreign_id_is_not_found(store: Store) -> None:
    node = store.memories.insert_node(make_node("belongs to default"))
    with pytest.raises(NotFoundError):
        store.memories.update_node("default", "nosuchid", NodePatch(content="x y z"))
    with pytest.raises(NotFoundError):
        store.memories.update_node("other", node.id, NodePatch(content="hijacked"))
    assert store.memories.get_node("default", node.id).content == "belongs to default"


def test_supersede(store: Store) -> None:
    old = store.memories.insert_node(make_node("the user works at Acme", key="employer"))
    new = make_node("the user works at Globex", key="employer", when=at(5))
    store.memories.supersede("default", old.id, new, now=at(5))
    got_old, got_new = (
        store.memories.get_node("default", old.id),
        store.memories.get_node("default", new.id),
    )
    assert got_old is not None and got_old.valid_until == at(5) and not got_old.is_current
    assert got_old.times_contradicted == 1
    assert got_new is not None and got_new.is_current
    assert [n.id for n in store.memories.list_nodes(flt())] == [new.id]
    assert {n.id for n in store.memories.list_nodes(flt(include_invalid=True))} == {old.id, new.id}
    edges = store.memories.edges("default", new.id, "supersedes")
    assert [(e.source_id, e.target_id, e.relation) for e in edges] == [
        (new.id, old.id, EdgeType.SUPERSEDES)
    ]
    assert store.memories.versions("default", new.id)[0].content == "the user works at Globex"
    assert store.memories.versions("default", old.id)[0].content == "the user works at Acme"


def test_supersede_non_current_writes_nothing(store: Store) -> None:
    old = store.memories.insert_node(make_node("first version of a fact"))
    store.memories.supersede("default", old.id, make_node("second version of a fact"), now=at(1))
    third = make_node("third version of a fact")
    with pytest.raises(NotFoundError):
        store.memories.supersede("default", old.id, third, now=at(2))
    with pytest.raises(NotFoundError):
        store.memories.supersede("other", old.id, third, now=at(2))
    assert store.memories.get_node("default", third.id) is None
    assert not store.memories.id_exists(third.id)


def test_purge_removes_node_versions_edges_vector_and_text(store: Store) -> None:
    keep = store.memories.insert_node(make_node("first turn of the chat", type=EPI, session="s"))
    gone = store.memories.insert_node(
        make_node("second turn about zeppelins", type=EPI, session="s"), link_previous=True
    )
    store.memories.update_node("default", gone.id, NodePatch(content="edited turn about zeppelins"))
    embed(store, {gone.id: axis(2), keep.id: axis(3)})
    assert store.memories.edges("default", keep.id)
    assert store.memories.purge_node("default", gone.id) is True
    assert store.memories.get_node("default", gone.id) is None
    assert not store.memories.id_exists(gone.id)
    with pytest.raises(NotFoundError):
        store.memories.versions("default", gone.id)
    assert all(v.node_id != gone.id for v in store.memories.iter_versions("default"))
    assert store.memories.edges("default", keep.id) == []
    assert list(store.memories.iter_edges("default")) == []
    assert store.search.vectors("default", [gone.id]) == {}
    assert gone.id not in {h[0] for h in store.search.fulltext(flt(), '"zeppelins"', 5)}
    assert [h[0] for h in store.search.vector_search(flt(), axis(2), 5)] == [keep.id]
    assert store.memories.purge_node("default", gone.id) is False
    assert store.memories.get_node("default", keep.id) is not None


def test_purged_turn_text_is_no_longer_searchable(store: Store) -> None:
    store.memories.insert_node(make_node("first turn of the chat", type=EPI, session="s"))
    gone = store.memories.insert_node(
        make_node("my password is hunter2", type=EPI, session="s"), link_previous=True
    )
    assert store.memories.purge_node("default", gone.id)
    assert store.search.fulltext(flt(), '"hunter2"', 5) == []


def test_edited_turn_old_text_is_no_longer_searchable(store: Store) -> None:
    first = store.memories.insert_node(make_node("first turn of the chat", type=EPI, session="s"))
    middle = store.memories.insert_node(
        make_node("my password is hunter2", type=EPI, session="s"), link_previous=True
    )
    last = store.memories.insert_node(
        make_node("noted, thanks", type=EPI, session="s"), link_previous=True
    )
    store.memories.update_node("default", middle.id, NodePatch(content="my password is [redacted]"))
    assert store.search.fulltext(flt(), '"hunter2"', 5) == []
    found = {h[0] for h in store.search.fulltext(flt(), '"redacted"', 5)}
    assert middle.id in found and found <= {first.id, middle.id, last.id}


def test_clear_whole_namespace_or_filtered(store: Store, world) -> None:
    assert store.memories.clear("default", flt(include_invalid=True, types=(EPI,))) == 2
    assert listed(store, world) == CURRENT - {"turn_u1", "turn_u2"}
    with pytest.raises(ValidationError):
        store.memories.clear("default", flt("default", "other"))
    assert store.memories.clear("default") == len(CURRENT) - 2 + 1  # includes the forgotten one
    assert list(store.memories.iter_nodes("default")) == []
    assert names(list(store.memories.iter_nodes("other")), world) == {"elsewhere"}


def test_find_by_hash(store: Store) -> None:
    node = store.memories.insert_node(make_node("Hello   World, said the user"))
    store.memories.insert_node(make_node("hello world, said the user", namespace="other"))
    found = store.memories.find_by_hash(flt(), content_hash("hello world, SAID the user "))
    assert [n.id for n in found] == [node.id]
    assert store.memories.find_by_hash(flt(types=(EPI,)), content_hash(node.content)) == []
    assert store.memories.find_by_hash(flt(), content_hash("something else entirely")) == []
    store.memories.update_node("default", node.id, NodePatch(valid_until=at(1)))
    assert store.memories.find_by_hash(flt(), content_hash(node.content)) == []
    assert store.memories.find_by_hash(flt(include_invalid=True), content_hash(node.content))


def test_prune_oldest_keeps_the_newest(store: Store) -> None:
    eps = [
        store.memories.insert_node(make_node(f"episode {i}", type=EPI, when=at(i)))
        for i in range(5)
    ]
    fact = store.memories.insert_node(make_node("an old fact", when=at(-10)))
    other = store.memories.insert_node(make_node("episode elsewhere", type=EPI, namespace="other"))
    pruned = store.memories.prune_oldest(flt(types=(EPI,), include_invalid=True), 2, now=at(10))
    assert pruned == 3
    left = store.memories.list_nodes(flt(include_invalid=True), limit=100)
    assert {n.id for n in left} == {eps[3].id, eps[4].id, fact.id}
    assert store.memories.get_node("other", other.id) is not None
    assert store.memories.prune_oldest(flt(types=(EPI,)), 5, now=at(10)) == 0
    with pytest.raises(ValidationError):
        store.memories.prune_oldest(flt("default", "other"), 1, now=at(10))


def test_prune_oldest_drops_records_no_longer_current_first(store: Store) -> None:
    """A cap protects what holds now: a superseded or forgotten record goes (oldest first)
    before any current memory, however old that one is."""
    oldest = store.memories.insert_node(make_node("User is allergic to penicillin", when=at(0)))
    ended = [
        store.memories.insert_node(make_node(f"replaced fact {i}", when=at(i), valid_until=at(5)))
        for i in (1, 2)
    ]
    newer = [store.memories.insert_node(make_node(f"current fact {i}", when=at(i))) for i in (3, 4)]
    assert store.memories.prune_oldest(flt(include_invalid=True), 4, now=at(10)) == 1
    left = {n.id for n in store.memories.list_nodes(flt(include_invalid=True), limit=100)}
    assert left == {oldest.id, ended[1].id, *(n.id for n in newer)}
    assert store.memories.prune_oldest(flt(include_invalid=True), 2, now=at(10)) == 2
    left = {n.id for n in store.memories.list_nodes(flt(include_invalid=True), limit=100)}
    assert left == {n.id for n in newer}  # then the oldest current ones


def test_touch_counts_accesses_and_reinforces_confidence(store: Store) -> None:
    node = store.memories.insert_node(make_node("a memory that gets read", confidence=0.5))
    expected = 0.5
    for n in range(1, 4):
        store.memories.touch("default", [node.id], now=at(n))
        expected = min(1.0, expected + 0.05 * math.log(1 + n / 20))
        got = store.memories.get_node("default", node.id)
        assert got is not None
        assert got.access_count == n and got.last_accessed == at(n)
        assert got.confidence == pytest.approx(expected)
    assert expected > 0.5


def test_touch_caps_confidence_and_ignores_other_namespaces(store: Store) -> None:
    node = store.memories.insert_node(make_node("an almost certain memory", confidence=0.999))
    store.memories.touch("default", [node.id] * 2, now=at(1))
    for _ in range(30):
        store.memories.touch("default", [node.id], now=at(1))
    got = store.memories.get_node("default", node.id)
    assert got is not None and got.confidence == 1.0 and got.access_count == 31
    store.memories.touch("other", [node.id], now=at(2))
    store.memories.touch("default", [], now=at(2))
    assert store.memories.get_node("default", node.id).access_count == 31


# ---------------------------------------------------------------------------- versions / edges


def test_import_versions_and_iter_versions(store: Store) -> None:
    node = store.memories.insert_node(make_node("current text", version=3))
    history = [
        MemoryVersion(node_id=node.id, version=i, content=f"text {i}", created_at=at(i))
        for i in (1, 2, 3)
    ]
    store.memories.import_versions(history)
    assert store.memories.versions("default", node.id) == history
    assert list(store.memories.iter_versions("default")) == history
    assert list(store.memories.iter_versions("other")) == []


def test_link_previous_links_the_previous_turn_of_the_same_session_only(store: Store) -> None:
    a1 = store.memories.insert_node(make_node("turn a1", type=EPI, session="a"), link_previous=True)
    b1 = store.memories.insert_node(make_node("turn b1", type=EPI, session="b"), link_previous=True)
    a2 = store.memories.insert_node(make_node("turn a2", type=EPI, session="a"), link_previous=True)
    loose = store.memories.insert_node(
        make_node("turn without session", type=EPI), link_previous=True
    )
    other = store.memories.insert_node(
        make_node("turn a in another namespace", type=EPI, session="a", namespace="other"),
        link_previous=True,
    )
    edges = store.memories.edges("default", a2.id, "temporal")
    assert [(e.source_id, e.target_id) for e in edges] == [(a1.id, a2.id)]
    assert store.memories.edges("default", b1.id) == []
    assert store.memories.edges("default", loose.id) == []
    assert store.memories.edges("other", other.id) == []
    assert store.memories.neighbours("default", [a1.id, a2.id, b1.id], "temporal") == {
        a1.id: [a2.id], a2.id: [a1.id], b1.id: [],
    }  # fmt: skip


def test_link_previous_never_links_another_owners_turn_of_a_session(store: Store) -> None:
    """Two users (or agents) may use the same session id: each one's turns are chained
    apart, and one's words never index the other's row (a search of one would match the
    other's words through the neighbour context)."""

    def turn(text: str, user: str | None, agent: str | None = None) -> MemoryNode:
        scope = Scope.USER if user else Scope.AGENT if agent else Scope.GLOBAL
        node = make_node(text, type=EPI, session="s1", user=user, agent=agent, scope=scope)
        return store.memories.insert_node(node, link_previous=True)

    u1 = turn("my pin code is pineapple", "u1")
    u2 = turn("hello there", "u2")
    u1b = turn("and my dog is Rex", "u1")
    bot = turn("the agent's own note", None, agent="a1")
    assert store.memories.edges("default", u2.id) == []
    assert store.memories.edges("default", bot.id) == []
    assert [(e.source_id, e.target_id) for e in store.memories.edges("default", u1b.id)] == [
        (u1.id, u1b.id)
    ]
    mine = NodeFilter(namespaces=("default",), user="u2")
    assert store.search.fulltext(mine, '"pineapple"', 5) == []
    assert store.search.fulltext(mine, '"rex"', 5) == []
    theirs = NodeFilter(namespaces=("default",), user="u1")
    assert {h[0] for h in store.search.fulltext(theirs, '"pineapple"', 5)} == {u1.id, u1b.id}


def test_link_previous_chains_a_chat_without_sessions_until_a_pause(store: Store) -> None:
    """Turns without a session id that say who speaks are chained per owner while they
    follow each other closely; a pause longer than PAUSE starts a new chain, another
    owner's turn in between changes nothing, and a turn without a speaker (a note) is
    never chained."""

    def turn(text: str, user: str, minutes: float, speaker: str | None = "user") -> MemoryNode:
        when = at(0) + timedelta(minutes=minutes)
        node = make_node(text, type=EPI, user=user, scope=Scope.USER, when=when, speaker=speaker)
        return store.memories.insert_node(node, link_previous=True)

    note = turn("a note on its own", "u1", -1, speaker=None)  # no speaker: never chained
    hi = turn("we adopted a kitten", "u1", 0)
    other = turn("what a day", "u2", 1)
    reply = turn("her name is Miso", "u1", 2)
    later = turn("back from a long trip", "u1", 2 + PAUSE / 60 + 1)
    assert [(e.source_id, e.target_id) for e in store.memories.edges("default", reply.id)] == [
        (hi.id, reply.id)
    ]
    assert store.memories.edges("default", other.id) == []
    assert store.memories.edges("default", later.id) == []
    assert store.memories.edges("default", note.id) == []
    assert store.memories.edges("default", hi.id) == [store.memories.edges("default", reply.id)[0]]
    # the kitten's row holds its reply's words, and only for its owner
    mine = NodeFilter(namespaces=("default",), user="u1")
    assert {h[0] for h in store.search.fulltext(mine, '"miso"', 5)} == {hi.id, reply.id}
    theirs = NodeFilter(namespaces=("default",), user="u2")
    assert store.search.fulltext(theirs, '"miso"', 5) == []


def test_insert_nodes_links_a_batch_in_order(store: Store) -> None:
    turns = [make_node(f"batch turn {i}", type=EPI, session="s", when=at(i)) for i in range(3)]
    store.memories.insert_nodes(turns, link_previous=True)
    pairs = {(e.source_id, e.target_id) for e in store.memories.iter_edges("default")}
    assert pairs == {(turns[0].id, turns[1].id), (turns[1].id, turns[2].id)}


def test_without_link_previous_no_edge(store: Store) -> None:
    store.memories.insert_node(make_node("turn one", type=EPI, session="s"))
    store.memories.insert_node(make_node("turn two", type=EPI, session="s"))
    assert list(store.memories.iter_edges("default")) == []


def test_edges_round_trip_and_neighbours(store: Store) -> None:
    a, b, c = (store.memories.insert_node(make_node(f"node {x}")) for x in "abc")
    e1 = Edge(
        id=short_id() + short_id(), source_id=a.id, target_id=b.id, relation=EdgeType.CAUSAL,
        predicate="led_to", weight=0.5, confidence=0.8, valid_from=at(1), valid_until=at(2),
        evidence=[a.id, "chat-1"], created_at=at(1),
    )  # fmt: skip
    e2 = Edge(
        id=short_id() + short_id(), source_id=c.id, target_id=a.id,
        relation=EdgeType.ENTITY, valid_from=at(3), created_at=at(3),
    )  # fmt: skip
    store.memories.insert_edges([e1])
    store.memories.insert_edge(e2)
    assert store.memories.edges("default", a.id) == [e1, e2]
    assert store.memories.edges("default", a.id, "causal") == [e1]
    assert store.memories.edges("default", b.id, "entity") == []
    assert list(store.memories.iter_edges("default")) == [e1, e2]
    assert store.memories.neighbours("default", [a.id], "causal") == {a.id: [b.id]}
    assert store.memories.neighbours("default", [a.id], "entity") == {a.id: [c.id]}
    assert store.memories.neighbours("default", [], "entity") == {}
    assert store.memories.edges("other", a.id) == []


# ---------------------------------------------------------------------------- embeddings


def test_pending_and_save_embeddings(store: Store) -> None:
    node = store.memories.insert_node(
        make_node("the user drinks tea", key="drink", subject="tea", speaker="user")
    )
    pending = store.search.pending_embeddings(10)
    assert [(p.id, p.content, p.key, p.subject, p.speaker) for p in pending] == [
        (node.id, "the user drinks tea", "drink", "tea", "user")
    ]
    assert pending[0].content_hash == content_hash(node.content)
    vec = unit([1, 2, 3])
    assert store.search.save_embeddings(pending, vec[None, :]) == 1
    assert store.search.pending_embeddings(10) == []
    blob = store.search.vectors("default", [node.id])[node.id]
    np.testing.assert_array_equal(np.frombuffer(blob, dtype=np.float32), vec)
    assert store.memories.get_node("default", node.id).embedded is True
    assert store.search.vectors("default", []) == {}
    assert store.search.vectors("other", [node.id]) == {}


def test_pending_embeddings_respects_limit(store: Store) -> None:
    store.memories.insert_nodes([make_node(f"pending memory {i}") for i in range(7)])
    assert len(store.search.pending_embeddings(3)) == 3
    assert len(store.search.pending_embeddings(100)) == 7


def test_save_embeddings_ignores_stale_vectors_of_edited_content(store: Store) -> None:
    node = store.memories.insert_node(make_node("original wording"))
    stale = store.search.pending_embeddings(10)
    store.memories.update_node("default", node.id, NodePatch(content="edited wording"))
    assert store.search.save_embeddings(stale, axis(0)[None, :]) == 0
    assert store.search.vectors("default", [node.id]) == {}
    fresh = store.search.pending_embeddings(10)
    assert [p.content for p in fresh] == ["edited wording"]
    assert store.search.save_embeddings(fresh, axis(1)[None, :]) == 1


def test_save_embeddings_rejects_wrong_shape(store: Store) -> None:
    store.memories.insert_node(make_node("a memory to embed"))
    pending = store.search.pending_embeddings(10)
    with pytest.raises(EmbeddingModelError):
        store.search.save_embeddings(pending, np.ones((1, EMBED_DIM + 1), dtype=np.float32))
    with pytest.raises(EmbeddingModelError):
        store.search.save_embeddings(pending, np.ones((2, EMBED_DIM), dtype=np.float32))
    assert len(store.search.pending_embeddings(10)) == 1


def test_reset_embeddings_and_rebind(store: Store) -> None:
    nodes = [store.memories.insert_node(make_node(f"memory {i}")) for i in range(3)]
    embed(store, {n.id: axis(i) for i, n in enumerate(nodes)})
    assert store.search.reset_embeddings() == 3
    assert store.search.vectors("default", [n.id for n in nodes]) == {}
    assert len(store.search.pending_embeddings(10)) == 3
    assert store.get_meta("embedding_model") is None
    store.bind_embedder("fake:32", 32)  # another model is welcome now
    assert store.get_meta("embedding_model") == "fake:32"
    pending = store.search.pending_embeddings(10)
    assert store.search.save_embeddings(pending, np.ones((3, 32), dtype=np.float32) / 32**0.5) == 3


def test_bind_embedder_mismatch(store: Store) -> None:
    store.bind_embedder(EMBED_MODEL, EMBED_DIM)  # same model again: fine
    with pytest.raises(EmbeddingModelError) as err:
        store.bind_embedder("fake:32", 32)
    assert EMBED_MODEL in err.value.message and err.value.hint
    with pytest.raises(EmbeddingModelError):
        store.bind_embedder("other-model", EMBED_DIM)
    with pytest.raises(EmbeddingModelError):
        store.bind_embedder(EMBED_MODEL, EMBED_DIM * 2)
    assert store.get_meta("embedding_model") == EMBED_MODEL
    assert store.get_meta("dimension") == str(EMBED_DIM)


# ---------------------------------------------------------------------------- search primitives


def test_fulltext_scores_higher_is_better_and_stems(store: Store) -> None:
    best = store.memories.insert_node(make_node("coffee coffee coffee"))
    weak = store.memories.insert_node(
        make_node("we talked about many things today and then briefly about coffee and cake")
    )
    store.memories.insert_node(make_node("nothing relevant in this one"))
    hits = store.search.fulltext(flt(), '"coffee"', 10)
    assert [h[0] for h in hits] == [best.id, weak.id]
    assert hits[0][1] > hits[1][1]
    runner = store.memories.insert_node(make_node("she was running with her dogs"))
    assert [h[0] for h in store.search.fulltext(flt(), '"run" AND "dog"', 10)] == [runner.id]
    assert store.search.fulltext(flt(), "   ", 10) == []
    assert len(store.search.fulltext(flt(), '"coffee"', 1)) == 1


def test_fulltext_folds_accents_both_ways(store: Store) -> None:
    """Names are typed with or without their accents: "cafe" finds "Café", "José"
    finds "Jose", and a prefix does too."""
    cafe = store.memories.insert_node(make_node("We met at the Café Flore with José"))
    plain = store.memories.insert_node(make_node("Jose said the cafe was closed"))
    for match in ('"cafe"', '"café"', '"CAFÉ"', '"jose"', '"José"', '"caf"*', '"josé"*'):
        assert {h[0] for h in store.search.fulltext(flt(), match, 10)} == {cafe.id, plain.id}, match
    assert store.search.match_weight('"café"') == pytest.approx(store.search.match_weight('"cafe"'))


def test_unseen_words_are_those_no_memory_holds_in_any_form(store: Store) -> None:
    """``unseen``: the words whose stems no memory holds — misspelt ("alergic") or never
    said; "runs" is held by "running", "café" by "cafe"; punctuation is no word."""
    store.memories.insert_node(make_node("I'm allergic to peanuts and I was running at the cafe"))
    words = ["alergic", "allergic", "runs", "café", "penuts", "zebra", "--"]
    assert store.search.unseen(words) == ["alergic", "penuts", "zebra"]
    assert store.search.unseen([]) == []


def test_match_weight_is_the_sum_of_the_words_idf(store: Store) -> None:
    """The bm25 of a memory holding each query word once: Σ ln((N − df + ½) / (df + ½))
    over the whole index, words as the index holds them (stemmed); 0 when empty."""
    for i in range(9):
        store.memories.insert_node(make_node(f"the cat sat on mat number {i}"))
    store.memories.insert_node(make_node("she was running for coffee", namespace="other"))

    def idf(df: int, total: int = 10) -> float:
        return max(math.log((total - df + 0.5) / (df + 0.5)), 1e-6)

    assert store.search.match_weight('"coffee"') == pytest.approx(idf(1), rel=1e-6)
    assert store.search.match_weight('"runs"') == pytest.approx(idf(1), rel=1e-6)  # stem "run"
    assert store.search.match_weight('"cat"') == pytest.approx(1e-6, abs=1e-6)  # in 9 of 10
    assert store.search.match_weight('"zebra"') == pytest.approx(idf(0), rel=1e-6)
    both = store.search.match_weight('"coffee" OR "zebra"')
    assert both == pytest.approx(idf(1) + idf(0), rel=1e-6)
    assert store.search.match_weight("   ") == 0.0


def test_fulltext_matches_keys_with_separators_as_words(store: Store) -> None:
    node = store.memories.insert_node(make_node("stored value here", key="favourite_colour"))
    assert [h[0] for h in store.search.fulltext(flt(), '"colour"', 5)] == [node.id]


def test_fulltext_quoted_terms_are_safe_and_bad_syntax_is_validation_error(store: Store) -> None:
    node = store.memories.insert_node(make_node('C++ AND "quotes" (parens) NOT near: col*'))
    for match in ('"and"', '"not"', '"near"', '"col"', '"c"', '"parens" OR "quotes"'):
        assert [h[0] for h in store.search.fulltext(flt(), match, 5)] == [node.id], match
    for bad in ('coffee"', "(", "AND", 'nodes_fts:"x"'):
        with pytest.raises(ValidationError):
            store.search.fulltext(flt(), bad, 5)


def test_fulltext_respects_filters(store: Store, world) -> None:
    assert names(store.search.fulltext(flt(), '"office"', 10), world) == {"global"}
    assert names(store.search.fulltext(flt(include_invalid=True), '"office"', 10), world) == {
        "global", "old",
    }  # fmt: skip
    assert names(store.search.fulltext(flt("default", "other"), '"office"', 10), world) == {
        "global", "elsewhere",
    }  # fmt: skip
    assert names(store.search.fulltext(flt(user="u1"), '"prefers"', 10), world) == {"user_u1"}
    assert store.search.fulltext(flt(types=(EPI,)), '"office"', 10) == []


def test_vector_search_orders_by_cosine(store: Store) -> None:
    a, b, c = (store.memories.insert_node(make_node(f"vector node {x}")) for x in "abc")
    embed(store, {a.id: unit([1, 0]), b.id: unit([1, 1]), c.id: unit([0, 1])})
    query = unit([1, 0.2])
    hits = store.search.vector_search(flt(), query, 10)
    assert [h[0] for h in hits] == [a.id, b.id, c.id]
    expected = [
        float(unit([1, 0]) @ query),
        float(unit([1, 1]) @ query),
        float(unit([0, 1]) @ query),
    ]
    assert [h[1] for h in hits] == pytest.approx(expected, abs=1e-5)
    assert len(store.search.vector_search(flt(), query, 2)) == 2
    unembedded = store.memories.insert_node(make_node("no vector yet"))
    assert unembedded.id not in {h[0] for h in store.search.vector_search(flt(), query, 10)}
    with pytest.raises(EmbeddingModelError):
        store.search.vector_search(flt(), np.ones(EMBED_DIM + 1, dtype=np.float32), 5)


def test_vector_search_respects_filters(store: Store, world) -> None:
    embed(store, {n.id: unit([1, i / 10]) for i, n in enumerate(world.values())})
    q = unit([1, 0])

    def found(**kw: Any) -> set[str]:
        namespaces = kw.pop("namespaces", ("default",))
        return names(
            store.search.vector_search(NodeFilter(namespaces=namespaces, **kw), q, 50), world
        )

    assert found() == CURRENT
    assert found(include_invalid=True) == CURRENT | {"old"}
    assert found(namespaces=("other",)) == {"elsewhere"}
    assert {"user_u2", "turn_u2"}.isdisjoint(found(user="u1"))
    assert "agent_y" not in found(agent="x")
    assert found(types=(EPI,)) == {"turn_u1", "turn_u2"}
    assert found(categories=("preference",)) == {"user_u1", "user_u2"}
    assert found(scopes=(Scope.SESSION,), session="s1") == {"session_s1"}
    assert found(min_confidence=0.65, types=(SEM,), scopes=(Scope.USER,)) == set()
    assert found(as_of=at(4.5), types=(SEM,)) == {"global", "user_u1", "user_u2", "old"}
    assert found(after=at(10.5)) == {"opinion"}
    assert found(key_norm="office_hours") == {"global"}
    assert found(ids=(world["procedure"].id,)) == {"procedure"}


def test_vector_search_reads_past_closest_candidates_a_filter_hides(store: Store) -> None:
    """The 20 closest memories are outside the time window: the next ones, in order of
    similarity, are still found, as many as asked for."""
    old = [make_node(f"early node {i}", when=at(1)) for i in range(20)]
    new = [make_node(f"late node {i}", when=at(10)) for i in range(8)]
    store.memories.insert_nodes(old + new)
    vectors = {n.id: unit(axis(0) + 0.01 * i * axis(1)) for i, n in enumerate(old)}
    vectors.update({n.id: unit(axis(0) + (0.5 + 0.1 * i) * axis(1)) for i, n in enumerate(new)})
    embed(store, vectors)
    hits = store.search.vector_search(flt(after=at(5)), axis(0), 4)
    assert [h[0] for h in hits] == [n.id for n in new[:4]]


def test_vector_search_finds_a_tiny_filtered_set_in_a_big_namespace(store: Store) -> None:
    rng = np.random.default_rng(7)
    bulk = [make_node(f"bulk node {i}") for i in range(300)]
    rare = [make_node(f"rare node {i}", category="rare") for i in range(2)]
    store.memories.insert_nodes(bulk + rare)
    vectors = {n.id: unit(rng.normal(size=EMBED_DIM) + 4 * axis(0)) for n in bulk}
    vectors.update({n.id: unit(-axis(0) + 0.1 * axis(1 + i)) for i, n in enumerate(rare)})
    embed(store, vectors)
    hits = store.search.vector_search(flt(categories=("rare",)), axis(0), 5)
    assert {h[0] for h in hits} == {n.id for n in rare}
    users = [make_node(f"u9 memory {i}", scope=Scope.USER, user="u9") for i in range(2)]
    store.memories.insert_nodes(users)
    embed(store, {n.id: unit(-axis(0) + 0.1 * axis(3 + i)) for i, n in enumerate(users)})
    hits = store.search.vector_search(flt(owner_user="u9"), axis(0), 5)
    assert {h[0] for h in hits} == {n.id for n in users}


def test_vector_search_sees_new_and_re_embedded_vectors(store: Store) -> None:
    a = store.memories.insert_node(make_node("first vector memory"))
    embed(store, {a.id: axis(0)})
    assert [h[0] for h in store.search.vector_search(flt(), axis(0), 5)] == [a.id]
    b = store.memories.insert_node(make_node("second vector memory"))
    embed(store, {b.id: axis(1)})
    assert store.search.vector_search(flt(), axis(1), 1)[0][0] == b.id
    store.memories.update_node("default", b.id, NodePatch(content="second memory, edited"))
    embed(store, {b.id: axis(2)})
    scores = dict(store.search.vector_search(flt(), axis(2), 5))
    assert scores[b.id] == pytest.approx(1.0, abs=1e-5)
    assert dict(store.search.vector_search(flt(), axis(1), 5))[b.id] == pytest.approx(0.0, abs=1e-5)


def test_vector_search_ignores_the_old_vector_of_edited_content(store: Store) -> None:
    a = store.memories.insert_node(make_node("first vector memory"))
    b = store.memories.insert_node(make_node("second vector memory"))
    embed(store, {a.id: axis(0), b.id: axis(1)})
    assert store.search.vector_search(flt(), axis(1), 1)[0][0] == b.id
    store.memories.update_node("default", b.id, NodePatch(content="second memory, edited"))
    assert [h[0] for h in store.search.vector_search(flt(), axis(1), 5)] == [a.id]


def test_key_search_fuzzy_separators_and_ranking(store: Store) -> None:
    keys = {
        "contains": "old-user-timezone",
        "exact": "user_timezone",
        "exact2": "User TimeZone",
        "prefix": "user-timezone backup",
        "none": "timezone",
        "underscore_wildcard": "userXtimezone",
    }
    ids = {
        name: store.memories.insert_node(make_node(f"value of {name}", key=k)).id
        for name, k in keys.items()
    }
    hits = store.search.key_search(flt(), "user_timezone", 10)
    by_id = {v: k for k, v in ids.items()}
    got = [(by_id[i], s) for i, s in hits]
    assert {n for n, _ in got[:2]} == {"exact", "exact2"}
    assert got[2:] == [("prefix", pytest.approx(got[2][1])), ("contains", pytest.approx(got[3][1]))]
    scores = [s for _, s in got]
    assert scores[0] == scores[1] > scores[2] > scores[3]
    assert "none" not in dict(got) and "underscore_wildcard" not in dict(got)
    assert store.search.key_search(flt(), "", 10) == []
    assert len(store.search.key_search(flt(), "user_timezone", 1)) == 1


def test_key_search_treats_percent_literally_and_respects_filters(store: Store, world) -> None:
    pct = store.memories.insert_node(make_node("discount code", key="50% off"))
    store.memories.insert_node(make_node("another key", key="fifty_off"))
    assert [h[0] for h in store.search.key_search(flt(), "%", 10)] == [pct.id]
    assert names(store.search.key_search(flt(), "office", 10), world) == {"global"}
    assert names(store.search.key_search(flt("default", "other"), "office", 10), world) == {
        "global", "elsewhere",
    }  # fmt: skip
    assert store.search.key_search(flt(types=(EPI,)), "office", 10) == []


# ---------------------------------------------------------------------------- people


def test_users_upsert_get_list(store: Store) -> None:
    alice = MemoryUser(
        id="telegram:1", display_name="Alice", identifiers={"telegram": "1", "email": "a@x.io"},
        preferences={"lang": "en"}, conversation_count=2, last_seen=at(2), created_at=at(0),
    )  # fmt: skip
    bob = MemoryUser(id="email:bob", display_name="Bob", created_at=at(1))
    carol = MemoryUser(id="telegram:3", namespace="other", created_at=at(0))
    for user in (alice, bob, carol):
        assert store.people.upsert_user(user) == user
    assert store.people.get_user("default", "telegram:1") == alice
    assert store.people.get_user("default", "nobody") is None
    assert store.people.get_user("default", "telegram:3") is None
    assert store.people.list_users("default") == [alice, bob]
    assert store.people.list_users("default", limit=1, offset=1) == [bob]
    renamed = alice.model_copy(update={"display_name": "Alice B.", "merged_into": "email:bob"})
    store.people.upsert_user(renamed)
    assert store.people.get_user("default", "telegram:1") == renamed
    assert len(store.people.list_users("default")) == 2
    assert store.people.list_users("other") == [carol]


# ---------------------------------------------------------------------------- housekeeping


def test_stats(store: Store, world) -> None:
    follow_up = make_node(
        "follow-up turn", type=EPI, scope=Scope.USER, user="u1", session="s1", when=at(12)
    )
    store.memories.insert_node(follow_up, link_previous=True)  # u1's turn of s1 before it: chained
    store.people.upsert_user(MemoryUser(id="u1", created_at=at(0)))
    s = store.stats(["default"])
    assert s.nodes_by_type == {"episodic": 3, "semantic": 9, "procedural": 1, "opinion": 1}
    assert s.current_by_type == {"episodic": 3, "semantic": 8, "procedural": 1, "opinion": 1}
    assert s.edges_by_type == {"temporal": 1}
    a, b = store.memories.list_nodes(flt(), limit=2)
    store.memories.insert_edge(
        Edge(id=short_id() + short_id(), source_id=a.id, target_id=b.id,
             relation=EdgeType.CAUSAL, valid_from=at(3), created_at=at(3))
    )  # fmt: skip
    edges = store.stats(["default"]).edges_by_type
    assert list(edges.items()) == [("causal", 1), ("temporal", 1)]  # by relation, alike
    assert s.users == 1 and s.entities == 0
    assert s.pending_embeddings == 14
    assert (s.embedding_model, s.dimension) == (EMBED_MODEL, EMBED_DIM)
    assert s.size_bytes > 0
    both = store.stats(["default", "other"])
    assert sum(both.nodes_by_type.values()) == 15
    assert store.stats(["nobody"]).nodes_by_type == {}


def test_stats_names_only_the_requested_namespaces(store: Store) -> None:
    store.memories.insert_node(make_node("tenant a memory", namespace="a"))
    store.memories.insert_node(make_node("tenant b memory", namespace="b"))
    assert store.stats(["a"]).namespaces == ["a"]


def test_namespaces(store: Store) -> None:
    assert store.namespaces() == []
    for ns in ("zeta", "alpha", "alpha", "mid"):
        store.memories.insert_node(make_node(f"memory in {ns}", namespace=ns))
    assert store.namespaces() == ["alpha", "mid", "zeta"]


def test_meta_and_schema_survive_reopen(store_factory: StoreFactory) -> None:
    store = store_factory.open()
    version = store.schema_version()
    assert version >= 1
    node = store.memories.insert_node(make_node("persisted across reopen", key="persist"))
    store.memories.update_node("default", node.id, NodePatch(content="persisted and edited"))
    embed(store, {node.id: axis(4)})
    store.set_meta("custom", "value")
    store.close()

    again = store_factory.open(bind=False)  # migrations must not run twice
    assert again.schema_version() == version
    assert again.get_meta("custom") == "value"
    assert again.get_meta("embedding_model") == EMBED_MODEL
    got = again.memories.get_node("default", node.id)
    assert got is not None and got.content == "persisted and edited" and got.version == 2
    assert len(again.memories.versions("default", node.id)) == 2
    assert [h[0] for h in again.search.vector_search(flt(), axis(4), 1)] == [node.id]
    assert [h[0] for h in again.search.fulltext(flt(), '"edited"', 1)] == [node.id]
    again.bind_embedder(EMBED_MODEL, EMBED_DIM)
    with pytest.raises(EmbeddingModelError):
        again.bind_embedder("fake:32", 32)


def test_unknown_meta_is_none(store: Store) -> None:
    assert store.get_meta("never-set") is None
    store.set_meta("k", "1")
    store.set_meta("k", "2")
    assert store.get_meta("k") == "2"


def test_supports_vectors_flag(store: Store) -> None:
    assert isinstance(store.supports_vectors, bool)


# ---------------------------------------------------------------------------- isolation


def test_namespace_isolation_for_every_read_method(store: Store) -> None:
    a1 = store.memories.insert_node(
        make_node("alpha secret about zucchini", namespace="a", type=EPI, session="s", key="k a"),
        link_previous=True,
    )
    a2 = store.memories.insert_node(
        make_node("alpha follow-up zucchini", namespace="a", type=EPI, session="s"),
        link_previous=True,
    )
    store.memories.update_node("a", a2.id, NodePatch(content="alpha follow-up zucchini, edited"))
    embed(store, {a1.id: axis(5), a2.id: axis(6)})
    store.people.upsert_user(MemoryUser(id="alice", namespace="a", created_at=at(0)))
    ids = [a1.id, a2.id]
    b = flt("b", include_invalid=True)

    assert store.memories.get_node("b", a1.id) is None
    assert store.memories.get_nodes("b", ids) == []
    assert store.memories.list_nodes(b) == []
    assert store.memories.count_nodes(b) == 0
    assert store.memories.count_nodes(flt("b", ids=tuple(ids))) == 0
    assert list(store.memories.iter_nodes("b")) == []
    with pytest.raises(NotFoundError):
        store.memories.versions("b", a1.id)
    assert list(store.memories.iter_versions("b")) == []
    assert store.memories.find_by_hash(b, content_hash(a1.content)) == []
    assert store.search.fulltext(b, '"zucchini"', 10) == []
    assert store.search.vector_search(b, axis(5), 10) == []
    assert store.search.key_search(b, "k_a", 10) == []
    assert store.memories.edges("b", a1.id) == []
    assert list(store.memories.iter_edges("b")) == []
    assert store.memories.neighbours("b", ids, "temporal") == {a1.id: [], a2.id: []}
    assert store.search.vectors("b", ids) == {}
    assert store.people.get_user("b", "alice") is None
    assert store.people.list_users("b") == []
    assert store.stats(["b"]).nodes_by_type == {}
    assert store.stats(["b"]).users == 0

    # writes aimed at the wrong namespace change nothing
    with pytest.raises(NotFoundError):
        store.memories.update_node("b", a1.id, NodePatch(content="hijacked"))
    with pytest.raises(NotFoundError):
        store.memories.supersede("b", a1.id, make_node("hijack", namespace="b"), now=at(1))
    assert store.memories.purge_node("b", a1.id) is False
    store.memories.touch("b", ids, now=at(1))
    assert store.memories.clear("b") == 0
    assert store.memories.prune_oldest(flt("b", include_invalid=True), 0, now=at(1)) == 0
    after = {n.id: n for n in store.memories.iter_nodes("a")}
    assert set(after) == set(ids)
    assert after[a1.id].access_count == 0 and after[a1.id].content == a1.content
    assert len(list(store.memories.iter_edges("a"))) == 1
    assert store.search.key_search(flt("a"), "k_a", 10)[0][0] == a1.id


def test_batch_is_all_or_nothing(store: Store) -> None:
    first, second = make_node("first of a batch"), make_node("second of a batch")
    with pytest.raises(RuntimeError), store.batch():
        store.memories.insert_node(first)
        store.memories.insert_node(second)
        raise RuntimeError("fail before commit")
    assert store.memories.get_nodes("default", [first.id, second.id]) == []
    with store.batch():
        store.memories.insert_node(first)
        store.memories.insert_node(second)
    assert [n.id for n in store.memories.get_nodes("default", [first.id, second.id])] == [
        first.id,
        second.id,
    ]
