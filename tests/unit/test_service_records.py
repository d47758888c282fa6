"""MemoryService records: memory users (merge), threads, entities, ``explain``,
``weak_facts`` and API keys; bad input raises and writes nothing."""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Coroutine, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest

from memloci.config import Settings
from memloci.decay import retention
from memloci.errors import ConflictError, NotFoundError, ValidationError
from memloci.models import (
    ApiKey,
    Edge,
    EdgeType,
    EntityType,
    MemoryNode,
    MemoryUser,
    NodeType,
    Scope,
    Thread,
    short_id,
    utcnow,
)
from memloci.providers.fake import FakeEmbedder
from memloci.service import MemoryService
from memloci.service.compose import build_service
from memloci.storage.base import NodeFilter
from pgtest import both_backends

T = TypeVar("T")


@pytest.fixture
def service(db_path: str) -> Iterator[MemoryService]:
    svc = build_service(Settings(path=db_path), embedder=FakeEmbedder())
    yield svc
    svc.close()


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def fact(service: MemoryService, content: str, **kw: Any) -> MemoryNode:
    return run(service.memories.remember(content, **kw)).memory


def aged(content: str, days: float, **fields: Any) -> MemoryNode:
    """A fact last updated ``days`` ago."""
    when = utcnow() - timedelta(days=days)
    data: dict[str, Any] = {
        "id": short_id(), "type": NodeType.SEMANTIC, "content": content, "scope": Scope.GLOBAL,
        "event_time": when, "created_at": when, "updated_at": when, "valid_from": when,
    }  # fmt: skip
    return MemoryNode(**{**data, **fields})


# ---------------------------------------------------------------------------- users


def test_save_user_creates_then_changes_only_given_fields(service: MemoryService) -> None:
    created = run(
        service.records.save_user(
            "telegram:1", display_name="Alice", identifiers={"Telegram": 1},
            preferences={"tz": "UTC"},
        )
    )  # fmt: skip
    assert created.identifiers == {"telegram": "1"} and created.preferences == {"tz": "UTC"}
    updated = run(service.records.save_user("telegram:1", identifiers={"email": "a@x.io"}))
    assert updated.display_name == "Alice" and updated.preferences == {"tz": "UTC"}
    assert updated.identifiers == {"telegram": "1", "email": "a@x.io"}
    assert updated.created_at == created.created_at
    again = run(service.records.save_user("telegram:1", preferences={"lang": "pt"}))
    assert again.preferences == {"lang": "pt"} and again.identifiers == updated.identifiers
    assert run(service.records.get_user("telegram:1")) == again
    found = run(service.records.find_user("EMAIL", "a@x.io"))
    assert found is not None and found.id == "telegram:1"
    assert run(service.records.find_user("email", "b@x.io")) is None


def test_list_and_count_users(service: MemoryService) -> None:
    for uid, name in (("u1", "Alice"), ("u2", "Bob"), ("u3", "alicia")):
        run(service.records.save_user(uid, display_name=name))
    assert [u.id for u in run(service.records.list_users(query="ALI"))] == ["u1", "u3"]
    assert [u.id for u in run(service.records.list_users(limit=1, offset=1))] == ["u2"]
    assert (
        run(service.records.count_users()) == 3
        and run(service.records.count_users(query="bob")) == 1
    )
    assert run(service.records.list_users(namespace="other")) == []


@pytest.mark.parametrize(
    "kwargs",
    [
        {"user_id": ""},
        {"user_id": None},
        {"user_id": "u1", "display_name": "x" * 201},
        {"user_id": "u1", "identifiers": ["telegram", "1"]},
        {"user_id": "u1", "identifiers": {"telegram": ""}},
        {"user_id": "u1", "identifiers": {"": "1"}},
        {"user_id": "u1", "preferences": {"bad": {1, 2}}},
        {"user_id": "u1", "namespace": "Not Valid"},
    ],
)
def test_save_user_rejects_bad_input_and_writes_nothing(
    service: MemoryService, kwargs: dict[str, Any]
) -> None:
    uid = kwargs.pop("user_id")
    with pytest.raises(ValidationError):
        run(service.records.save_user(uid, **kwargs))
    assert run(service.records.count_users()) == 0


def test_user_reads_validate_and_report_unknown_ids(service: MemoryService) -> None:
    with pytest.raises(NotFoundError):
        run(service.records.get_user("nobody"))
    with pytest.raises(ValidationError):
        run(service.records.list_users(limit=0))
    with pytest.raises(ValidationError):
        run(service.records.get_user("u1", follow_merged="yes"))  # type: ignore[arg-type]


def test_a_channel_id_of_another_user_is_a_conflict(service: MemoryService) -> None:
    run(service.records.save_user("u1", identifiers={"telegram": "1"}))
    with pytest.raises(ConflictError, match="belongs to memory user 'u1'"):
        run(service.records.save_user("u2", display_name="Bob", identifiers={"telegram": "1"}))
    assert run(service.records.count_users()) == 1
    run(service.records.save_user("u1", identifiers={"telegram": "1"}))  # its own id is fine


def test_merge_users_moves_memories_and_is_followed(service: MemoryService) -> None:
    idents = {"telegram": "1", "email": "old@x.io"}
    prefs = {"tz": "UTC", "lang": "en"}
    run(
        service.records.save_user(
            "telegram:1", display_name="Al", identifiers=idents, preferences=prefs
        )
    )
    run(
        service.records.save_user(
            "email:al", identifiers={"email": "al@x.io"}, preferences={"tz": "WET"}
        )
    )
    service.store.people.upsert_user(
        run(service.records.get_user("telegram:1")).model_copy(update={"conversation_count": 2})
    )
    moved = fact(service, "Al keeps bees on the roof", user="telegram:1")
    kept = fact(service, "Someone else keeps bees too", user="u9")

    merged = run(service.records.merge_users("telegram:1", "email:al"))
    assert merged.id == "email:al" and merged.display_name == "Al"
    assert merged.identifiers == {"telegram": "1", "email": "al@x.io"}  # the target wins
    assert merged.preferences == {"tz": "WET", "lang": "en"}
    assert merged.conversation_count == 2
    assert run(service.records.get_user("telegram:1")).merged_into == "email:al"
    assert run(service.records.get_user("telegram:1", follow_merged=True)) == merged
    assert (found := run(service.records.find_user("email", "old@x.io"))) and found.id == "email:al"

    assert run(service.memories.get(moved.id)).user == "email:al"
    assert run(service.memories.get(kept.id)).user == "u9"
    hits = run(service.memories.search("bees", service.filter(user="email:al"), recipe="fulltext"))
    assert [h.memory.id for h in hits] == [moved.id]
    as_old = run(
        service.memories.search("bees", service.filter(user="telegram:1"), recipe="fulltext")
    )
    assert [h.memory.id for h in as_old] == [moved.id]  # the old id names the user it joined


def test_merge_users_refuses_loops_and_unknown_users(service: MemoryService) -> None:
    for uid in ("a", "b", "c"):
        run(service.records.save_user(uid))
    with pytest.raises(ValidationError):
        run(service.records.merge_users("a", "a"))
    with pytest.raises(NotFoundError):
        run(service.records.merge_users("a", "zz"))
    run(service.records.merge_users("a", "b"))
    with pytest.raises(ConflictError, match="already merged"):
        run(service.records.merge_users("a", "c"))
    with pytest.raises(ConflictError, match="was merged into 'b'"):
        run(service.records.merge_users("b", "a"))  # the target is merged into the source
    with pytest.raises(ConflictError, match="merge into 'b' instead"):
        run(service.records.merge_users("c", "a"))
    assert run(service.records.get_user("b")).merged_into is None
    assert run(service.records.get_user("c")).merged_into is None


def test_following_merged_users_is_loop_safe(service: MemoryService) -> None:
    now = utcnow()
    service.store.people.upsert_user(MemoryUser(id="x", merged_into="y", created_at=now))
    service.store.people.upsert_user(MemoryUser(id="y", merged_into="x", created_at=now))
    assert run(service.records.get_user("x", follow_merged=True)).id == "y"
    service.store.people.upsert_user(MemoryUser(id="z", merged_into="deleted", created_at=now))
    assert run(service.records.get_user("z", follow_merged=True)).id == "z"


def test_delete_users_keeps_their_memories(service: MemoryService) -> None:
    run(service.records.save_user("u1"))
    run(service.records.save_user("u1", namespace="other"))
    node = fact(service, "u1 drinks green tea", user="u1")
    assert run(service.records.delete_users(["u1", "u1", "nobody"])) == 1
    assert (
        run(service.records.count_users()) == 0
        and run(service.records.count_users(namespace="other")) == 1
    )
    assert run(service.memories.get(node.id)).user == "u1"
    with pytest.raises(ValidationError):
        run(service.records.delete_users("u1"))


# ---------------------------------------------------------------------------- threads


def test_append_messages_creates_strips_system_and_appends(service: MemoryService) -> None:
    thread = run(
        service.records.append_messages(
            "tg:1:chat:bot",
            [{"role": "system", "content": "You are a bot"}, {"role": "user", "content": "hi"},
             {"role": "assistant", "content": "", "metadata": {"tool_calls": 1}}],
            user="tg:1", agent="bot",
        )
    )  # fmt: skip
    assert [(m.role, m.content) for m in thread.messages] == [("user", "hi"), ("assistant", "")]
    assert thread.message_count == 2 and thread.messages[1].metadata == {"tool_calls": 1}
    later = run(service.records.append_messages("tg:1:chat:bot", [thread.messages[0]], user="tg:1"))
    assert later.message_count == 3 and later.created_at == thread.created_at
    assert later.updated_at >= thread.updated_at and later.agent == "bot"
    assert run(service.records.get_thread("tg:1:chat:bot")) == later
    with pytest.raises(ConflictError):
        run(
            service.records.append_messages(
                "tg:1:chat:bot", [{"role": "user", "content": "x"}], user="u2"
            )
        )


@both_backends
def test_concurrent_appends_to_one_thread_lose_nothing(service: MemoryService) -> None:
    """Eight writers append to the same thread at once: every message is kept (the
    read-modify-write holds the thread's lock on both backends)."""
    barrier = threading.Barrier(8)

    def append(n: int) -> None:
        barrier.wait()
        run(
            service.records.append_messages(
                "t1", [{"role": "user", "content": f"m{n}"}], user="sam"
            )
        )

    writers = [threading.Thread(target=append, args=(n,)) for n in range(8)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    kept = run(service.records.get_thread("t1")).messages
    assert sorted(m.content for m in kept) == [f"m{n}" for n in range(8)]


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "narrator", "content": "once upon a time"}],
        [{"role": "user", "content": "x" * 20_001}],
        [{"role": "user", "content": 42}],
        [{"role": "user"}],
        [{"role": "user", "content": "hi", "name": "al"}],
        "hello",
        [],
    ],
)
def test_append_messages_rejects_bad_messages_and_writes_nothing(
    service: MemoryService, messages: Any
) -> None:
    if isinstance(messages, list) and messages:  # a good message first: nothing is kept
        messages = [{"role": "user", "content": "fine"}, *messages]
    with pytest.raises(ValidationError):
        run(service.records.append_messages("t1", messages))
    assert run(service.records.count_threads()) == 0


def test_save_list_and_delete_threads(service: MemoryService) -> None:
    now = utcnow()
    first = run(
        service.records.save_thread(Thread(id="t1", user="u1", created_at=now, updated_at=now))
    )
    run(service.records.append_messages("t2", [{"role": "user", "content": "hi"}], user="u2"))
    run(
        service.records.append_messages(
            "t3", [{"role": "user", "content": "yo"}], namespace="other"
        )
    )
    later = now + timedelta(days=1)
    changed = first.model_copy(update={"summary": "short", "created_at": later})
    again = run(service.records.save_thread(changed))
    assert again.created_at == first.created_at and again.summary == "short"
    assert [t.id for t in run(service.records.list_threads())] == ["t1", "t2"]
    assert [(t.id, t.message_count) for t in run(service.records.list_threads(user="u2"))] == [
        ("t2", 1)
    ]
    assert (
        run(service.records.count_threads()) == 2
        and run(service.records.count_threads(namespace="other")) == 1
    )
    assert run(service.records.delete_threads(["t1", "t2", "t3"])) == 2
    assert run(service.records.count_threads(namespace="other")) == 1
    with pytest.raises(NotFoundError):
        run(service.records.get_thread("t1"))


# ---------------------------------------------------------------------------- entities


def test_save_entity_creates_and_re_mentions(service: MemoryService) -> None:
    ada = run(service.records.save_entity("Ada  Lovelace", aliases=["Ada", "ada"]))
    assert (ada.canonical_name, ada.type, ada.aliases) == ("Ada Lovelace", EntityType.CONCEPT,
                                                            ["Ada"])  # fmt: skip
    again = run(
        service.records.save_entity("ADA", type="person", aliases=["Countess"], summary="maths")
    )
    assert again.id == ada.id and again.mention_count == 2 and again.last_seen >= ada.last_seen
    assert again.type is EntityType.PERSON and again.summary == "maths"
    assert again.aliases == ["Ada", "Countess"]
    third = run(service.records.save_entity("Ada", type=EntityType.PLACE))
    assert third.type is EntityType.PERSON and third.mention_count == 3  # only from concept
    assert run(service.records.find_entity("countess")) == third
    assert run(service.records.get_entity(ada.id)) == third
    assert run(service.records.find_entity("Ada", namespace="other")) is None


def test_save_entity_by_id_edits_and_keeps_the_old_name(service: MemoryService) -> None:
    ada = run(service.records.save_entity("Ada", type="person", attributes={"born": 1815}))
    run(service.records.save_entity("Charles Babbage", type="person"))
    edited = run(
        service.records.save_entity("Ada Lovelace", entity_id=ada.id, summary="first programmer")
    )
    assert edited.canonical_name == "Ada Lovelace" and edited.aliases == ["Ada"]
    assert edited.type is EntityType.PERSON and edited.mention_count == 1
    assert edited.attributes == {"born": 1815} and edited.summary == "first programmer"
    with pytest.raises(ConflictError):
        run(service.records.save_entity("charles babbage", entity_id=ada.id))
    with pytest.raises(NotFoundError):
        run(service.records.save_entity("Ada", entity_id="zzzzzzzz"))
    assert run(service.records.get_entity(ada.id)) == edited


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": ""},
        {"name": "x" * 201},
        {"name": "Ada", "type": "wizard"},
        {"name": "Ada", "aliases": "Lovelace"},
        {"name": "Ada", "aliases": [""]},
        {"name": "Ada", "entity_id": "not-an-id"},
        {"name": "Ada", "attributes": ["born", 1815]},
        {"name": "Ada", "summary": "x" * 2001},
    ],
)
def test_save_entity_rejects_bad_input_and_writes_nothing(
    service: MemoryService, kwargs: dict[str, Any]
) -> None:
    with pytest.raises(ValidationError):
        run(service.records.save_entity(kwargs.pop("name"), **kwargs))
    assert run(service.records.count_entities()) == 0


def test_list_count_and_delete_entities(service: MemoryService) -> None:
    alice = run(service.records.save_entity("Alice", type="person"))
    run(service.records.save_entity("Acme", type="organization"))
    run(service.records.save_entity("Alice", namespace="other"))
    node = fact(service, "Alice works at a bakery")  # names no other known entity
    # the worker links the fact to Alice now, not after she is deleted (under load it
    # came late and made a new "Alice" of the name the fact begins with)
    assert run(service.flush(30))
    run(service.records.link_entities(node.id, [alice.id]))
    assert [e.canonical_name for e in run(service.records.list_entities(type="person"))] == [
        "Alice"
    ]
    assert run(service.records.count_entities(query="a")) == 2
    with pytest.raises(ValidationError):
        run(service.records.list_entities(type="wizard"))
    assert run(service.records.delete_entities([alice.id])) == 1
    assert run(service.records.count_entities(namespace="other")) == 1
    assert run(service.records.explain(node.id)).entities == []
    with pytest.raises(NotFoundError):
        run(service.records.get_entity(alice.id))


def test_link_entities_needs_both_ends(service: MemoryService) -> None:
    alice = run(service.records.save_entity("Alice"))
    node = fact(service, "Likes green tea")  # names nobody: the worker links nothing
    with pytest.raises(NotFoundError):
        run(service.records.link_entities(node.id, [alice.id], namespace="other"))
    with pytest.raises(NotFoundError):
        run(service.records.link_entities(node.id, [alice.id, "zzzzzzzz"]))
    with pytest.raises(ValidationError):
        run(service.records.link_entities(node.id, ["bad"]))
    assert run(service.records.explain(node.id)).entities == []


def test_entity_info_and_graph(service: MemoryService) -> None:
    alice = run(service.records.save_entity("Alice", type="person", aliases=["Al"]))
    acme = run(service.records.save_entity("Acme", type="organization"))
    bob = run(service.records.save_entity("Bob", type="person"))
    n1 = fact(service, "Alice works at Acme")
    n2 = fact(service, "Alice and Bob founded Acme together")
    n3 = fact(service, "Al is private", user="u2")
    for node, ents in ((n1, [alice, acme]), (n2, [alice, bob, acme]), (n3, [alice])):
        run(service.records.link_entities(node.id, [e.id for e in ents]))
    info = run(service.records.entity_info("al"))
    assert info.entity.id == alice.id
    assert [m.id for m in info.memories] == [n3.id, n2.id, n1.id]
    assert (info.related[0].entity.id, info.related[0].weight) == (acme.id, 2)
    assert run(service.records.entity_info(alice.id, limit=1)).memories == [info.memories[0]]
    assert n3.id not in {
        m.id for m in run(service.records.entity_info("Alice", user="u1")).memories
    }
    with pytest.raises(NotFoundError) as err:
        run(service.records.entity_info("Nobody"))
    assert err.value.hint

    graph = run(service.records.entity_graph(alice.id))
    kinds = {n.id: (n.kind, n.type) for n in graph.nodes}
    assert kinds[alice.id] == ("entity", "person") and kinds[n2.id] == ("memory", "semantic")
    assert {acme.id, bob.id} <= set(kinds)
    links = {(lk.source, lk.target) for lk in graph.links}
    assert {(n1.id, alice.id), (n2.id, bob.id), (n3.id, alice.id)} <= links
    assert all(lk.relation == "mentions" for lk in graph.links)
    assert len(run(service.records.entity_graph(alice.id, limit=1)).nodes) <= 3


# ---------------------------------------------------------------------------- provenance


def test_explain_shows_versions_and_the_supersedes_chain(service: MemoryService) -> None:
    first = fact(service, "The office is in Lisbon")
    run(service.edits.update(first.id, "The office is in Lisbon, Portugal"))
    second = run(service.edits.correct(first.id, "The office is in Porto")).memory
    third = run(service.edits.correct(second.id, "The office is in Braga")).memory

    old = run(service.records.explain(first.id))
    assert [v.content for v in old.versions] == [
        "The office is in Lisbon", "The office is in Lisbon, Portugal",
    ]  # fmt: skip
    assert old.superseded_by is not None and old.superseded_by.id == second.id
    assert old.supersedes == []
    newest = run(service.records.explain(third.id))
    assert [n.id for n in newest.supersedes] == [second.id, first.id]
    assert newest.superseded_by is None and len(newest.versions) == 1
    assert {e.relation for e in newest.edges} == {EdgeType.SUPERSEDES}


def test_explain_lists_source_episodes(service: MemoryService) -> None:
    turn = run(service.memories.add("I moved to Porto last week", user="u1", session="s1"))[0]
    derived = fact(service, "The user lives in Porto", user="u1")
    now = utcnow()
    service.store.memories.insert_edge(
        Edge(id=short_id(), source_id=derived.id, target_id=turn.id,
             relation=EdgeType.DERIVED_FROM, valid_from=now, created_at=now)
    )  # fmt: skip
    assert [n.id for n in run(service.records.explain(derived.id)).sources] == [turn.id]
    assert run(service.records.explain(turn.id)).sources == []
    with pytest.raises(NotFoundError):
        run(service.records.explain(derived.id, namespace="other"))


# ---------------------------------------------------------------------------- weak facts


def test_retention_formula() -> None:
    node = aged("a fact", 10, confidence=0.8, decay_rate=0.2)
    expected = 0.8 * math.exp(-0.2 * 10**0.8)
    assert retention(node, node.updated_at + timedelta(days=10)) == pytest.approx(expected)
    touched = node.model_copy(update={"last_accessed": node.updated_at + timedelta(days=9)})
    assert retention(touched, node.updated_at + timedelta(days=10)) == pytest.approx(
        0.8 * math.exp(-0.2)
    )
    assert retention(node.model_copy(update={"decay_rate": 0.0}), utcnow()) == 0.8


def test_weak_facts_are_weakest_first_and_skip_protected_and_episodes(
    service: MemoryService,
) -> None:
    store = service.store
    weak = store.memories.insert_node(aged("an old fact", 60))
    weaker = store.memories.insert_node(aged("an older opinion", 120, type=NodeType.OPINION))
    store.memories.insert_node(aged("a fresh fact", 0))
    store.memories.insert_node(aged("a protected fact", 365, decay_rate=0.0, confidence=0.1))
    store.memories.insert_node(aged("an old episode", 365, type=NodeType.EPISODIC, confidence=0.1))
    store.memories.insert_node(aged("a forgotten fact", 365, valid_until=utcnow()))
    store.memories.insert_node(aged("an old private fact", 365, scope=Scope.USER, user="u2"))
    store.memories.insert_node(aged("elsewhere", 365, namespace="other"))

    pairs = run(service.records.weak_facts(user="u1"))
    assert [n.id for n, _ in pairs] == [weaker.id, weak.id]
    assert pairs[0][1] < pairs[1][1] < 0.3
    assert (
        len(run(service.records.weak_facts())) == 3
        and len(run(service.records.weak_facts(limit=1))) == 1
    )
    assert run(service.records.weak_facts(threshold=0.0)) == []
    with pytest.raises(ValidationError):
        run(service.records.weak_facts(threshold=2))


def test_stats_report_orphans_and_last_maintenance(service: MemoryService) -> None:
    fact(service, "A fact linked to nothing")
    service.store.set_meta("last_maintenance", "2024-05-01T03:00:00+00:00")
    stats = run(service.memories.stats())
    assert stats.orphans == 1
    assert stats.last_maintenance is not None and stats.last_maintenance.year == 2024


# ---------------------------------------------------------------------------- API keys


def test_create_and_verify_keys(service: MemoryService) -> None:
    assert run(service.keys.has_keys()) is False
    key, secret = run(service.keys.create_key("ci bot", ["default", "team-a", "default"]))
    prefix, kid, token = secret[:4], secret[4:12], secret[13:]
    assert (prefix, kid, secret[12], len(token)) == ("mlk_", key.id, "_", 43)
    assert key.namespaces == ["default", "team-a"] and key.can_write and not key.admin
    stored = service.store.people.get_key(key.id)
    assert stored is not None and secret not in stored[1] and len(stored[1]) == 64
    assert run(service.keys.has_keys()) is True

    seen = run(service.keys.verify_key(secret))
    assert seen is not None and seen.id == key.id and seen.last_used_at is not None
    again = run(service.keys.verify_key(secret))
    assert again is not None and again.last_used_at == seen.last_used_at  # once a minute

    tampered = secret[:-1] + ("A" if secret[-1] != "A" else "B")
    other_id = "mlk_" + ("Z" if kid[0] != "Z" else "Y") + secret[5:]
    for bad in (tampered, other_id, "", "garbage", secret + "x", "Bearer " + secret, None, 42):
        assert run(service.keys.verify_key(bad)) is None  # type: ignore[arg-type]

    assert run(service.keys.revoke_key(key.id)).revoked_at is not None
    assert run(service.keys.verify_key(secret)) is None
    assert run(service.keys.has_keys()) is False
    assert run(service.keys.list_keys()) == []
    listed = run(service.keys.list_keys(include_revoked=True))
    assert [k.id for k in listed] == [key.id] and "key_hash" not in listed[0].model_dump()


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("", ["default"]), {}),
        (("k", []), {}),
        (("k", "default"), {}),
        (("k", ["Bad NS"]), {}),
        (("k", ["*"]), {}),
        (("k", ["default"]), {"write": "yes"}),
    ],
)
def test_create_key_rejects_bad_input_and_writes_nothing(
    service: MemoryService, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(ValidationError):
        run(service.keys.create_key(*args, **kwargs))
    assert run(service.keys.list_keys(include_revoked=True)) == []


def test_admin_keys_and_allows(service: MemoryService) -> None:
    admin, _ = run(service.keys.create_key("root", ["*", "default"], admin=True))
    assert admin.namespaces == ["*"] and admin.allows("anything", write=True)
    reader, _ = run(service.keys.create_key("reader", ["team-a"], write=False))
    assert reader.allows("team-a", write=False) and not reader.allows("team-a", write=True)
    assert not reader.allows("default", write=False)
    assert not reader.model_copy(update={"revoked_at": utcnow()}).allows("team-a", write=False)
    with pytest.raises(NotFoundError):
        run(service.keys.revoke_key("zzzzzzzz"))
    with pytest.raises(ValidationError):
        run(service.keys.revoke_key("short"))
    assert isinstance(admin, ApiKey)


# ---------------------------------------------------------------------------- migration


def test_a_version_1_store_gains_the_lookup_tables(tmp_path: Path) -> None:
    """Users and entities written before migration 2 are found by channel id and alias."""
    from memloci.storage.base import migration_scripts
    from memloci.storage.sqlite import SQLiteStore
    from memloci.storage.sqlite import base as sqlite_base

    path = str(tmp_path / "v1.db")
    conn = sqlite_base.sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for statement in sqlite_base._split_sql(migration_scripts("sqlite")[0][1]):
        conn.execute(statement)
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    conn.execute(
        "INSERT INTO memory_users (namespace, id, identifiers, created_at)"
        " VALUES ('default', 'u1', '{\"telegram\": \"42\"}', 0)"
    )
    conn.execute(
        "INSERT INTO entities (id, namespace, canonical_name, type, aliases, first_seen,"
        " last_seen) VALUES ('abcdEFGH', 'default', 'Alice', 'person', '[\"Al\"]', 0, 0)"
    )
    conn.close()
    store = SQLiteStore(path)
    try:
        assert store.schema_version() >= 2
        assert (user := store.people.find_user("default", "telegram", "42")) and user.id == "u1"
        assert (found := store.entities.find_entity("default", "al")) and found.id == "abcdEFGH"
        assert store.memories.list_nodes(NodeFilter()) == []
    finally:
        store.close()
