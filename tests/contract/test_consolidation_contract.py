"""The Store contract for consolidation and maintenance: sessions and episode claims,
decay anchors, entity name vectors, causal pairs and named locks (protocol only)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from memloci.models import Entity, EntityType, MemoryNode, NodeType, Scope, short_id
from memloci.storage.base import DecayUpdate, Store

from .conftest import StoreFactory

T0 = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


def node(content: str = "a memory worth keeping", **fields: Any) -> MemoryNode:
    data: dict[str, Any] = {
        "id": short_id(), "namespace": "default", "type": NodeType.EPISODIC,
        "content": content, "scope": Scope.SESSION, "event_time": T0, "created_at": T0,
        "updated_at": T0, "valid_from": T0,
    }  # fmt: skip
    data.update(fields)
    return MemoryNode(**data)


def turn(store: Store, session: str | None, text: str, user: str | None = "sam", **kw: Any) -> str:
    stored = store.memories.insert_node(
        node(text, session=session, user=user, **kw), link_previous=True
    )
    return stored.id


# ---------------------------------------------------------------------- sessions
def test_pending_sessions_are_those_with_unclaimed_episodes(store: Store) -> None:
    a1, a2 = turn(store, "s1", "first turn"), turn(store, "s1", "second turn")
    b1 = turn(store, "s2", "another session", user="ann")
    turn(store, "x1", "elsewhere", namespace="other")
    store.memories.insert_node(
        node("a fact", type=NodeType.SEMANTIC, scope=Scope.GLOBAL, session="s3")
    )
    pending = store.jobs.pending_sessions("default")
    assert [(p.session, p.user, p.episodes) for p in pending] == [
        ("s1", "sam", 2),
        ("s2", "ann", 1),
    ]
    assert [p.session for p in store.jobs.pending_sessions("default", user="ann")] == ["s2"]
    assert store.jobs.count_pending_sessions(["default", "other"]) == 3
    assert [e.id for e in store.jobs.session_episodes("default", "s1", limit=10)] == [a1, a2]
    assert [e.id for e in store.jobs.session_episodes("default", "s1", limit=1)] == [a1]
    assert store.jobs.claim_episodes("default", [a1, a2, b1], now=T0) == 3
    assert store.jobs.claim_episodes("default", [a1, a2], now=T0) == 0  # already taken
    assert store.jobs.pending_sessions("default") == []
    assert store.memories.get_node("default", a1).consolidated_at == T0  # type: ignore[union-attr]
    a3 = turn(store, "s1", "a turn after consolidation")
    assert [e.id for e in store.jobs.session_episodes("default", "s1", limit=10)] == [a3]


def test_turns_without_a_session_are_pending_per_owner(store: Store) -> None:
    s1 = turn(store, "s1", "in a session")
    sam1 = turn(store, None, "sam says one thing")
    ann = turn(store, None, "ann says another", user="ann")
    bot = turn(store, None, "sam talks to the bot", agent="bot")
    sam2 = turn(store, None, "sam says more")
    anon = turn(store, None, "nobody's turn", user=None)
    turn(store, None, "elsewhere", namespace="other")
    pending = store.jobs.pending_sessions("default")
    assert [(p.session, p.user, p.agent, p.episodes) for p in pending] == [
        ("s1", "sam", None, 1),
        (None, "sam", None, 2),
        (None, "ann", None, 1),
        (None, "sam", "bot", 1),
        (None, None, None, 1),
    ]
    assert [p.label for p in pending] == [
        "s1", "(no session: user sam)", "(no session: user ann)",
        "(no session: user sam, agent bot)", "(no session)",
    ]  # fmt: skip
    assert [(p.session, p.agent) for p in store.jobs.pending_sessions("default", user="sam")] == [
        ("s1", None), (None, None), (None, "bot"),
    ]  # fmt: skip
    assert store.jobs.count_pending_sessions(["default"]) == 5
    assert store.jobs.count_pending_sessions(["default", "other"]) == 6

    def loose(user: str | None, agent: str | None = None, limit: int = 10) -> list[str]:
        found = store.jobs.session_episodes("default", None, limit=limit, user=user, agent=agent)
        return [e.id for e in found]

    assert loose("sam") == [sam1, sam2] and loose("sam", limit=1) == [sam1]
    assert loose("ann") == [ann] and loose("sam", "bot") == [bot] and loose(None) == [anon]
    assert loose("nobody") == []
    assert [e.id for e in store.jobs.session_episodes("default", "s1", limit=10)] == [s1]
    assert store.jobs.claim_episodes("default", [sam1, sam2], now=T0) == 2
    assert loose("sam") == [] and loose("ann") == [ann]
    assert [p.label for p in store.jobs.pending_sessions("default", user="sam")] == [
        "s1", "(no session: user sam, agent bot)",
    ]  # fmt: skip


def test_claims_stay_in_their_namespace_and_skip_facts(store: Store) -> None:
    other = turn(store, "s1", "other namespace", namespace="other")
    fact = store.memories.insert_node(node("a fact", type=NodeType.SEMANTIC, scope=Scope.GLOBAL))
    assert store.jobs.claim_episodes("default", [other, fact.id, "missing1"], now=T0) == 0


def test_register_and_finish_sessions(store: Store) -> None:
    store.jobs.register_session("default", "s1", user="sam", agent=None, now=T0)
    store.jobs.register_session("default", "s1", user="sam", agent=None, now=T0)  # no-op
    store.jobs.finish_session("default", "s1", user=None, agent=None, now=T0)
    store.jobs.finish_session("default", "s2", user="ann", agent="bot", now=T0)  # unseen: recorded
    assert store.jobs.pending_sessions("default") == []  # state rows alone are not episodes


# ---------------------------------------------------------------------- decay
def test_decay_candidates_page_and_apply_decay(store: Store) -> None:
    facts = [
        store.memories.insert_node(
            node(f"fact number {i}", type=NodeType.SEMANTIC, scope=Scope.GLOBAL)
        )
        for i in range(5)
    ]
    protected = store.memories.insert_node(
        node("protected fact", type=NodeType.SEMANTIC, scope=Scope.GLOBAL, decay_rate=0.0)
    )
    store.memories.insert_node(node("an opinion", type=NodeType.OPINION, scope=Scope.GLOBAL))
    turn(store, "s1", "an episode")
    first = store.jobs.decay_candidates("default", NodeType.SEMANTIC, after=0, limit=3)
    rest = store.jobs.decay_candidates(
        "default", NodeType.SEMANTIC, after=first[-1].cursor, limit=3
    )
    ids = [c.node.id for c in [*first, *rest]]
    assert ids == [f.id for f in facts] and protected.id not in ids
    assert all(c.base is None and c.anchor is None for c in first)
    later = T0 + timedelta(days=3)
    store.jobs.apply_decay(
        "default",
        [DecayUpdate(facts[0].id, 0.5, 1.0, T0), DecayUpdate(protected.id, 0.1, 1.0, T0)],
        [facts[1].id],
        now=later,
    )
    again = {c.node.id: c for c in store.jobs.decay_candidates("default", NodeType.SEMANTIC,
                                                             after=0, limit=10)}  # fmt: skip
    assert facts[1].id not in again  # forgotten
    decayed = again[facts[0].id]
    assert decayed.node.confidence == 0.5 and decayed.base == 1.0 and decayed.anchor == T0
    assert decayed.node.updated_at == T0  # decay is not an edit
    assert store.memories.get_node("default", protected.id).confidence == 1.0  # type: ignore[union-attr]
    gone = store.memories.get_node("default", facts[1].id)
    assert gone is not None and gone.valid_until == later
    assert store.jobs.drop_orphans() == 0
    store.memories.purge_node("default", facts[0].id)
    assert store.jobs.drop_orphans() == 1


def test_apply_decay_never_touches_episodes(store: Store) -> None:
    ep = turn(store, "s1", "an episode")
    store.jobs.apply_decay("default", [DecayUpdate(ep, 0.1, 1.0, T0)], [ep], now=T0)
    got = store.memories.get_node("default", ep)
    assert got is not None and got.confidence == 1.0 and got.valid_until is None


# ---------------------------------------------------------------------- entities
def _entity(name: str, mentions: int, summary: str | None = None) -> Entity:
    return Entity(
        id=short_id(), canonical_name=name, type=EntityType.PERSON, first_seen=T0,
        last_seen=T0, mention_count=mentions, summary=summary,
    )  # fmt: skip


def test_entities_to_enrich_and_name_vectors(store: Store) -> None:
    busy = store.entities.insert_entity(_entity("Alec", 5))
    store.entities.insert_entity(_entity("Bea", 1))
    store.entities.insert_entity(_entity("Cleo", 9, summary="known"))
    assert [e.id for e in store.jobs.entities_to_enrich("default", min_mentions=3, limit=10)] == [
        busy.id
    ]
    vec = np.arange(4, dtype=np.float32).tobytes()
    store.jobs.save_entity_vector("default", busy.id, "m:4", vec)
    assert store.jobs.entity_vectors("default", "m:4") == {busy.id: vec}
    assert store.jobs.entity_vectors("default", "other-model") == {}
    assert store.jobs.entity_vectors("other", "m:4") == {}
    store.entities.delete_entities("default", [busy.id])
    assert store.jobs.drop_orphans() == 1 and store.jobs.entity_vectors("default", "m:4") == {}


def test_profile_vectors_stand_for_a_summary_of_their_namespace(store: Store) -> None:
    known = store.entities.insert_entity(_entity("Cleo", 9, summary="runs the billing platform"))
    bare = store.entities.insert_entity(_entity("Bea", 1))
    vec = np.arange(4, dtype=np.float32).tobytes()
    store.jobs.save_profile_vector("default", known.id, "m:4", "d1", vec)
    store.jobs.save_profile_vector("default", bare.id, "m:4", "d0", vec)  # no summary: not shown
    assert store.jobs.profile_vectors("default", "m:4") == {known.id: ("d1", vec)}
    assert store.jobs.profile_vectors("default", "other-model") == {}
    assert store.jobs.profile_vectors("other", "m:4") == {}
    store.jobs.save_profile_vector("default", known.id, "m:4", "d2", vec[::-1])  # a new summary
    assert store.jobs.profile_vectors("default", "m:4") == {known.id: ("d2", vec[::-1])}
    store.entities.delete_entities("default", [known.id, bare.id])
    assert store.jobs.profile_vectors("default", "m:4") == {}
    assert store.jobs.drop_orphans() == 2


# ---------------------------------------------------------------------- causal pairs
def test_temporal_pairs_follow_a_cursor(store: Store) -> None:
    ids = [turn(store, "s1", f"turn {i}") for i in range(4)]
    turn(store, "s9", "other namespace", namespace="other")
    turn(store, "s9", "other namespace again", namespace="other")
    first = store.jobs.temporal_pairs("default", after=0, limit=2)
    assert [(a, b) for _, a, b in first] == [(ids[0], ids[1]), (ids[1], ids[2])]
    rest = store.jobs.temporal_pairs("default", after=first[-1][0], limit=10)
    assert [(a, b) for _, a, b in rest] == [(ids[2], ids[3])]
    assert store.jobs.temporal_pairs("default", after=rest[-1][0], limit=10) == []


# ---------------------------------------------------------------------- locks
def test_named_locks(store_factory: StoreFactory) -> None:
    one, two = store_factory.open(), store_factory.open()  # two connections to one store
    ttl, now = timedelta(minutes=5), datetime.now(UTC)
    assert one.jobs.acquire_lock("job", "a", now=now, ttl=ttl)
    assert not two.jobs.acquire_lock("job", "b", now=now, ttl=ttl)
    holder = two.jobs.lock_holder("job", now=now)
    assert holder is not None and holder[0] == "a"
    assert abs((holder[1] - (now + ttl)).total_seconds()) < 0.01
    assert one.jobs.acquire_lock("job", "a", now=now, ttl=ttl)  # the owner renews
    assert two.jobs.acquire_lock("other-job", "b", now=now, ttl=ttl)  # locks are per name
    assert two.jobs.acquire_lock("job", "b", now=now + 2 * ttl, ttl=ttl)  # expired: taken over
    one.jobs.release_lock("job", "a")  # not the owner any more: no effect
    assert two.jobs.lock_holder("job", now=now + 2 * ttl) is not None
    two.jobs.release_lock("job", "b")
    assert one.jobs.lock_holder("job", now=now) is None
    assert one.jobs.acquire_lock("job", "a", now=now, ttl=ttl)


def test_a_lock_whose_holder_is_gone_is_taken_over_at_once(store_factory: StoreFactory) -> None:
    one, two = store_factory.open(), store_factory.open()
    ttl, now = timedelta(minutes=30), datetime.now(UTC)
    assert one.jobs.acquire_lock("job", "dead-run", now=now, ttl=ttl)
    judged: list[str] = []

    def alive(owner: str) -> bool:
        judged.append(owner)
        return False

    assert not two.jobs.acquire_lock("job", "b", now=now, ttl=ttl, stale=alive)
    assert judged == ["dead-run"]
    assert two.jobs.acquire_lock("job", "b", now=now, ttl=ttl, stale=lambda o: o == "dead-run")
    holder = one.jobs.lock_holder("job", now=now)
    assert holder is not None and holder[0] == "b"
    # the new holder is alive: nobody takes it over, and its own renewal is not judged
    assert not one.jobs.acquire_lock("job", "c", now=now, ttl=ttl, stale=lambda o: o == "dead-run")
    assert two.jobs.acquire_lock("job", "b", now=now, ttl=ttl, stale=lambda o: True)
