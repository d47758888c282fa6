"""The write API and retrieval v1, driven through the SDK with the fake embedder."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt
import pytest

from memloci import Memory, MemoryNode, NodeType, Scope, ValidationError
from memloci.errors import ConflictError, NotFoundError
from memloci.models import EpisodeDetails, ProcedureType, SourceType
from memloci.providers.fake import FakeEmbedder
from pgtest import both_backends

STRATEGIES = {"fulltext", "vector", "key"}


def contents(nodes: Sequence[MemoryNode]) -> list[str]:
    return [n.content for n in nodes]


def hit_contents(mem: Memory, query: str, **kw: object) -> list[str]:
    return [h.memory.content for h in mem.search(query, **kw)]


def temporal(mem: Memory, node_id: str, namespace: str = "default") -> set[tuple[str, str]]:
    edges = mem.service.store.memories.edges(namespace, node_id, "temporal")
    return {(e.source_id, e.target_id) for e in edges}


class GatedEmbedder(FakeEmbedder):
    """A fake embedder whose batch ``embed`` blocks until the test opens the gate (a slow,
    remote-like embedder: queries never wait for it)."""

    in_process = False

    def __init__(self) -> None:
        super().__init__(dimension=64)
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not self.gate.wait(20):
            raise TimeoutError("gate never opened")
        return super().embed(texts)


# ---------------------------------------------------------------------------- add (hot path)


def test_add_single_turn(mem: Memory) -> None:
    before = datetime.now(UTC)
    node = mem.add(
        "I just moved to Lisbon", user="alice", session="s1", speaker="Alice", role="user",
        metadata={"channel": "telegram", "nested": {"ids": [1, 2]}, "ok": True},
    )  # fmt: skip
    assert isinstance(node, MemoryNode)
    assert node.type is NodeType.EPISODIC and node.scope is Scope.USER
    assert (node.user, node.session, node.speaker, node.source_role) == (
        "alice", "s1", "Alice", "user",
    )  # fmt: skip
    assert node.source_type is SourceType.CONVERSATION
    assert before <= node.event_time <= datetime.now(UTC)
    got = mem.get(node.id)
    assert got.content == "I just moved to Lisbon"
    assert got.metadata == {"channel": "telegram", "nested": {"ids": [1, 2]}, "ok": True}
    assert got.decay_rate == 0.0  # episodes never decay


def test_add_strips_surrounding_whitespace(mem: Memory) -> None:
    assert mem.add("   hello there   ").content == "hello there"


def test_add_single_system_prompt_is_not_stored(mem: Memory) -> None:
    with pytest.raises(ValidationError):
        mem.add("You are a helpful assistant.", role="system")
    assert mem.list(include_forgotten=True) == []


def test_add_messages_drops_system_prompts_and_chains_turns(mem: Memory) -> None:
    nodes = mem.add(
        [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "My sister is called Ana", "name": "Bea"},
            {"role": "developer", "content": "internal instructions"},
            {"role": "assistant", "content": "Nice, tell me about Ana"},
        ],
        session="s1",
        user="bea",
    )
    assert isinstance(nodes, list) and len(nodes) == 2
    assert contents(nodes) == ["My sister is called Ana", "Nice, tell me about Ana"]
    assert [(n.speaker, n.source_role) for n in nodes] == [
        ("Bea", "user"),
        ("assistant", "assistant"),
    ]
    assert "You are a helpful assistant." not in contents(mem.list(limit=100))
    assert temporal(mem, nodes[1].id) == {(nodes[0].id, nodes[1].id)}
    nxt = mem.add("Ana lives in Porto", session="s1", user="bea")
    assert temporal(mem, nxt.id) == {(nodes[1].id, nxt.id)}


def test_turns_of_different_sessions_are_not_linked(mem: Memory) -> None:
    a = mem.add("first turn in session A", session="a")
    b = mem.add("first turn in session B", session="b")
    a2 = mem.add("second turn in session A", session="a")
    loose = mem.add("a turn without any session")
    assert temporal(mem, a2.id) == {(a.id, a2.id)}
    assert temporal(mem, b.id) == set()
    assert temporal(mem, loose.id) == set()


def test_add_event_time(mem: Memory) -> None:
    when = datetime(2023, 5, 7, 18, 30, tzinfo=UTC)
    assert mem.add("we met at the conference", event_time=when).event_time == when
    naive = mem.add("naive times are UTC", event_time=datetime(2023, 5, 8, 9, 0))
    assert naive.event_time == datetime(2023, 5, 8, 9, 0, tzinfo=UTC)
    iso = mem.add("iso strings work too", event_time="2023-05-09T10:00:00+02:00")
    assert iso.event_time == datetime(2023, 5, 9, 8, 0, tzinfo=UTC)
    assert mem.get(iso.id).event_time == iso.event_time


# ---------------------------------------------------------------------------- search


def test_search_hits_carry_score_and_strategies(mem: Memory) -> None:
    target = mem.remember("The user keeps bees in the garden")
    mem.remember("The user plays the violin on weekends")
    mem.flush()
    hits = mem.search("bees garden")
    assert hits and hits[0].memory.id == target.memory.id
    assert set(hits[0].strategies) == {"fulltext", "vector"}
    assert all(rank >= 1 for rank in hits[0].strategies.values())
    assert hits[0].why
    for hit in hits:
        assert set(hit.strategies) <= STRATEGIES and hit.score > 0
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert len(mem.search("bees", k=1)) == 1


def test_search_recipes_use_only_their_strategy(mem: Memory) -> None:
    mem.remember("The user keeps bees in the garden")
    mem.flush()
    for recipe, name in (("fulltext", "fulltext"), ("vector", "vector")):
        hits = mem.search("bees", recipe=recipe)
        assert hits and all(set(h.strategies) == {name} for h in hits)
    with pytest.raises(ValidationError):
        mem.search("bees", recipe="magic")


def test_search_fuzzy_key_strategy(mem: Memory) -> None:
    fact = mem.remember("Deep ocean blue", key="favourite_colour")
    mem.flush()
    for query in ("favourite colour", "favourite-colour", "FAVOURITE_COLOUR"):
        hits = mem.search(query)
        assert hits[0].memory.id == fact.memory.id
        assert "key" in hits[0].strategies, query


def test_search_survives_query_syntax_characters(mem: Memory) -> None:
    mem.remember("The user writes C++ and Rust at work")
    for query in ('"C++"', "rust AND (c OR", "NOT near*", "col:rust", "-rust ^ work", "'''"):
        assert isinstance(mem.search(query), list)
    assert hit_contents(mem, 'what about "Rust"?', recipe="fulltext") == [
        "The user writes C++ and Rust at work"
    ]


def test_fulltext_finds_non_ascii_words(mem: Memory) -> None:
    node = mem.remember("Herr Müller runs the café downtown")
    assert [h.memory.id for h in mem.search("Müller", recipe="fulltext")] == [node.memory.id]
    assert [h.memory.id for h in mem.search("café", recipe="fulltext")] == [node.memory.id]


def test_turn_is_found_by_full_text_before_its_embedding_exists(make_memory) -> None:
    embedder = GatedEmbedder()
    mem = make_memory(embedder=embedder)
    try:
        turn = mem.add("We adopted a tortoise called Sheldon", user="alice")
        hits = mem.search("tortoise Sheldon", user="alice")
        assert [h.memory.id for h in hits] == [turn.id]
        assert hits[0].strategies == {"fulltext": 1}
        assert mem.stats().pending_embeddings == 1
        assert mem.flush(timeout=0.2) is False  # still blocked
    finally:
        embedder.gate.set()
    assert mem.flush(timeout=20) is True
    assert mem.stats().pending_embeddings == 0
    hits = mem.search("tortoise Sheldon", user="alice")
    assert set(hits[0].strategies) == {"fulltext", "vector"}


class SlowLocalEmbedder(FakeEmbedder):
    """An in-process embedder whose first batch is slow (a model loading on first use):
    the background thread is inside it when the query arrives."""

    in_process = True

    def __init__(self) -> None:
        super().__init__(dimension=64)
        self.started = threading.Event()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not self.started.is_set() and any("Lisbon" in t for t in texts):
            self.started.set()
            time.sleep(0.5)
        return super().embed(texts)


def test_query_right_after_a_write_waits_for_the_batch_being_embedded(make_memory) -> None:
    embedder = SlowLocalEmbedder()
    mem = make_memory(embedder=embedder)
    turn = mem.add("I moved to Lisbon", user="u1")
    assert embedder.started.wait(10)  # the background thread holds the batch now
    hits = mem.search("moved Lisbon relocation", user="u1", recipe="vector")
    assert [h.memory.id for h in hits] == [turn.id]  # found by meaning, not missed


def test_without_embedder_full_text_still_works(make_memory) -> None:
    mem = make_memory(embedder=None)
    mem.add("The plumber comes on Friday")
    fact = mem.remember("The user is allergic to peanuts")
    assert mem.flush() is True
    hits = mem.search("peanuts allergy")
    assert [h.memory.id for h in hits] == [fact.memory.id]
    assert mem.search("peanuts", recipe="vector") == []
    assert mem.stats().embedding_model is None


def test_flush_embeds_everything(mem: Memory) -> None:
    for i in range(30):
        mem.add(f"turn {i} about gardening and tomatoes")
    assert mem.flush(timeout=20) is True
    stats = mem.stats()
    assert stats.pending_embeddings == 0 and stats.embedding_model == "fake:64"
    assert all(n.embedded for n in mem.list(limit=100))


def test_search_reinforces_accessed_memories(mem: Memory) -> None:
    fact = mem.remember("The user owns a red bicycle", confidence=0.5)
    other = mem.remember("The user hates mornings", confidence=0.5)
    mem.search("red bicycle", k=1)
    assert mem.flush(timeout=20)
    hit = mem.get(fact.memory.id)
    assert hit.access_count == 1 and hit.last_accessed is not None
    assert hit.confidence == pytest.approx(min(1.0, 0.5 + 0.05 * np.log1p(1 / 20)))
    untouched = mem.get(other.memory.id)
    assert untouched.access_count == 0 and untouched.confidence == 0.5


def test_search_reinforces_without_an_embedder(make_memory) -> None:
    mem = make_memory(embedder=None)
    fact = mem.remember("The user owns a red bicycle", confidence=0.5)
    assert [h.memory.id for h in mem.search("bicycle")] == [fact.memory.id]
    mem.flush()
    got = mem.get(fact.memory.id)
    assert got.access_count == 1 and got.confidence > 0.5


def test_search_reinforcement_can_be_switched_off(make_memory) -> None:
    mem = make_memory(reinforce_on_search=False)
    fact = mem.remember("The user owns a red bicycle", confidence=0.5)
    mem.search("red bicycle")
    mem.flush()
    assert mem.get(fact.memory.id).access_count == 0


# ---------------------------------------------------------------------------- filters


def test_filter_type_category_scope(mem: Memory) -> None:
    mem.add("a conversation turn about cheese")
    mem.remember("The user loves cheese", category="Food & Drink")
    mem.remember("Cheese opinions are strong", type="opinion")
    mem.learn_procedure("Suggest a cheese pairing when asked")
    assert contents(mem.list(type="episodic")) == ["a conversation turn about cheese"]
    assert contents(mem.list(type=["semantic", "opinion"])) == [
        "The user loves cheese", "Cheese opinions are strong",
    ]  # fmt: skip
    assert contents(mem.list(category="food_drink")) == ["The user loves cheese"]
    assert contents(mem.list(category="Food & Drink")) == ["The user loves cheese"]
    assert hit_contents(mem, "cheese", type="procedural") == ["Suggest a cheese pairing when asked"]
    assert hit_contents(mem, "cheese", category="food_drink") == ["The user loves cheese"]
    assert hit_contents(mem, "cheese", scope="user") == []


def test_filter_time_window(mem: Memory) -> None:
    now = datetime.now(UTC)
    mem.add("we went skiing in the alps", event_time=now - timedelta(days=30))
    mem.add("we went surfing in Portugal", event_time=now - timedelta(days=2))
    assert hit_contents(mem, "went skiing surfing", after="last_week", recipe="fulltext") == [
        "we went surfing in Portugal"
    ]
    assert hit_contents(mem, "went skiing surfing", before="last_week", recipe="fulltext") == [
        "we went skiing in the alps"
    ]
    assert contents(mem.list(after="last_month")) == ["we went surfing in Portugal"]
    iso = (now - timedelta(days=10)).date().isoformat()
    assert contents(mem.list(after=iso)) == ["we went surfing in Portugal"]
    assert contents(mem.list(before=now - timedelta(days=10))) == ["we went skiing in the alps"]


def test_filter_min_confidence(mem: Memory) -> None:
    mem.remember("The user might like jazz", confidence=0.3)
    mem.remember("The user definitely likes blues", confidence=0.95)
    assert hit_contents(mem, "user likes jazz blues", min_confidence=0.5) == [
        "The user definitely likes blues"
    ]
    assert len(mem.search("user likes jazz blues", min_confidence=0.2)) == 2


@both_backends
def test_filter_as_of_sees_the_past(mem: Memory) -> None:
    old = mem.remember("The user works at Acme Corp", key="employer")
    time.sleep(0.01)
    between = datetime.now(UTC)
    time.sleep(0.01)
    new = mem.correct(old.memory.id, "The user works at Globex Inc")
    assert [h.memory.id for h in mem.search("works", recipe="fulltext")] == [new.memory.id]
    past = mem.search("works", as_of=between, recipe="fulltext")
    assert [h.memory.id for h in past] == [old.memory.id]
    assert mem.search("works", as_of="2000-01-01", recipe="fulltext") == []


# ---------------------------------------------------------------------------- remember


def test_remember_creates_a_fact(mem: Memory) -> None:
    res = mem.remember(
        "The user's timezone is Europe/Berlin", key="user_timezone", value={"tz": "Europe/Berlin"},
        category="Context", subject="timezone", fact_type="user_preference", confidence=0.8,
        user="alice", metadata={"source": "onboarding"},
    )  # fmt: skip
    assert res.action == "created" and res.memory.id in res.message
    got = mem.get(res.memory.id)
    assert got.type is NodeType.SEMANTIC and got.scope is Scope.USER and got.user == "alice"
    assert (got.key, got.value, got.category, got.subject) == (
        "user_timezone", {"tz": "Europe/Berlin"}, "context", "timezone",
    )  # fmt: skip
    assert got.fact_type.value == "user_preference" and got.confidence == 0.8
    assert got.metadata == {"source": "onboarding"} and got.version == 1


@both_backends
def test_remember_exact_duplicate_confirms(mem: Memory) -> None:
    first = mem.remember("The user likes green tea")
    again = mem.remember("  the user   likes GREEN tea ")
    assert again.action == "confirmed" and again.memory.id == first.memory.id
    assert again.memory.times_confirmed == 1
    assert "already" in again.message.lower() and first.memory.id in again.message
    third = mem.remember("The user likes green tea")
    assert third.memory.times_confirmed == 2
    assert len(mem.list()) == 1


def test_remember_near_duplicate_confirms(mem: Memory) -> None:
    first = mem.remember("The user likes green tea.")
    near = mem.remember("the user likes green tea!!")
    assert near.action == "confirmed" and near.memory.id == first.memory.id
    assert "near-duplicate" in near.message
    assert mem.get(first.memory.id).times_confirmed == 1
    distinct = mem.remember("The user's brother collects vintage stamps")
    assert distinct.action == "created"
    assert len(mem.list()) == 2


def test_duplicates_are_only_detected_within_the_same_scope(mem: Memory) -> None:
    a = mem.remember("Prefers the window seat", user="alice")
    b = mem.remember("Prefers the window seat", user="bob")
    g = mem.remember("Prefers the window seat")
    assert {a.action, b.action, g.action} == {"created"}
    assert len({a.memory.id, b.memory.id, g.memory.id}) == 3


def test_session_scoped_duplicates_are_per_session(mem: Memory) -> None:
    kw = {"user": "alice", "agent": "bot", "scope": "session"}
    first = mem.remember("This chat is about the tax return", session="s1", **kw)
    again = mem.remember("This chat is about the tax return", session="s1", **kw)
    other = mem.remember("This chat is about the tax return", session="s2", **kw)
    assert again.action == "confirmed" and again.memory.id == first.memory.id
    assert other.action == "created" and other.memory.id != first.memory.id


@both_backends
def test_remember_same_key_updates_in_place(mem: Memory) -> None:
    first = mem.remember("Timezone is Europe/Berlin", key="user_timezone", value="Europe/Berlin")
    second = mem.remember("Timezone is Europe/Paris", key="User Timezone", value="Europe/Paris")
    assert second.action == "updated" and second.memory.id == first.memory.id
    assert second.memory.version == 2 and second.memory.value == "Europe/Paris"
    assert [v.content for v in mem.history(first.memory.id)] == [
        "Timezone is Europe/Berlin", "Timezone is Europe/Paris",
    ]  # fmt: skip
    same = mem.remember("Timezone is Europe/Paris", key="user-timezone", value="Europe/Paris")
    assert same.action == "confirmed" and same.memory.version == 2
    assert len(mem.list()) == 1


def test_remember_same_key_without_overwrite_reports_exists(mem: Memory) -> None:
    first = mem.remember("Timezone is Europe/Berlin", key="user_timezone")
    res = mem.remember("Timezone is Asia/Tokyo", key="user_timezone", overwrite=False)
    assert res.action == "exists" and res.memory.id == first.memory.id
    assert first.memory.id in res.message
    assert mem.get(first.memory.id).content == "Timezone is Europe/Berlin"
    assert len(mem.list()) == 1


def test_remember_same_subject_suggests_an_update(mem: Memory) -> None:
    bob = mem.remember("Bob is the user's manager", subject="Bob")
    res = mem.remember("Bob plays chess every Sunday", subject="bob", suggest_on_subject=True)
    assert res.action == "suggest_update" and res.memory.id == bob.memory.id
    assert bob.memory.id in res.message
    assert len(mem.list()) == 1
    created = mem.remember("Bob plays chess every Sunday", subject="Bob")
    assert created.action == "created"
    assert [n.id for n in created.similar] == [bob.memory.id]
    assert bob.memory.id in created.message


def test_remember_opinion_and_agent_scope(mem: Memory) -> None:
    res = mem.remember("Tabs are better than spaces", type="opinion", agent="coder")
    assert res.memory.type is NodeType.OPINION and res.memory.scope is Scope.AGENT
    with pytest.raises(ValidationError):
        mem.remember("Turns are not facts here", type="episodic")


# ------------------------------------------------------------- update / correct / confirm


@both_backends
def test_update_keeps_id_and_adds_a_version(mem: Memory) -> None:
    fact = mem.remember("The user lives in Paris", session="s1")
    res = mem.update(fact.memory.id, "The user lives in Lyon", session="s2")
    assert res.action == "updated" and res.memory.id == fact.memory.id
    assert res.memory.version == 2 and "Paris" in res.message and "Lyon" in res.message
    history = mem.history(fact.memory.id)
    assert [(v.version, v.content) for v in history] == [
        (1, "The user lives in Paris"), (2, "The user lives in Lyon"),
    ]  # fmt: skip
    assert mem.get(fact.memory.id).content == "The user lives in Lyon"
    assert len(mem.list()) == 1
    assert hit_contents(mem, "Lyon", recipe="fulltext") == ["The user lives in Lyon"]
    assert hit_contents(mem, "Paris", recipe="fulltext") == []


@both_backends
def test_update_metadata_only_keeps_the_version(mem: Memory) -> None:
    fact = mem.remember("The user lives in Paris")
    res = mem.update(fact.memory.id, metadata={"checked": True}, category="Places")
    assert res.memory.version == 1
    got = mem.get(fact.memory.id)
    assert got.metadata == {"checked": True} and got.category == "places"


def test_update_forgotten_memory_is_refused(mem: Memory) -> None:
    fact = mem.remember("The user lives in Paris")
    mem.forget(fact.memory.id)
    with pytest.raises(ValidationError):
        mem.update(fact.memory.id, "The user lives in Rome")
    assert mem.get(fact.memory.id).content == "The user lives in Paris"


@both_backends
def test_correct_supersedes(mem: Memory) -> None:
    old = mem.remember("The user works at Acme Corp", key="employer", category="work")
    res = mem.correct(old.memory.id, "The user works at Globex Inc")
    new = res.memory
    assert res.action == "corrected" and new.id != old.memory.id
    assert old.memory.id in res.message and new.id in res.message
    assert new.is_current and (new.key, new.category) == ("employer", "work")
    stale = mem.get(old.memory.id)
    assert not stale.is_current and stale.times_contradicted == 1
    assert [v.content for v in mem.history(old.memory.id)] == ["The user works at Acme Corp"]
    assert [v.content for v in mem.history(new.id)] == ["The user works at Globex Inc"]
    assert contents(mem.list()) == ["The user works at Globex Inc"]
    assert len(mem.list(include_forgotten=True)) == 2
    edges = mem.service.store.memories.edges("default", new.id, "supersedes")
    assert [(e.source_id, e.target_id) for e in edges] == [(new.id, old.memory.id)]
    assert mem.lookup("employer").id == new.id
    with pytest.raises(ValidationError):
        mem.correct(old.memory.id, "The user works at Initech")


def test_confirm_refuses_a_forgotten_memory(mem: Memory) -> None:
    fact = mem.remember("The user is vegetarian", confidence=0.4)
    mem.forget(fact.memory.id)
    with pytest.raises((ValidationError, ConflictError)):
        mem.confirm(fact.memory.id)
    got = mem.get(fact.memory.id)
    assert (got.confidence, got.times_confirmed) == (0.4, 0)


def test_confirm_protects_a_fact(mem: Memory) -> None:
    fact = mem.remember("The user is vegetarian", confidence=0.4)
    res = mem.confirm(fact.memory.id)
    assert res.action == "confirmed"
    got = mem.get(fact.memory.id)
    assert (got.confidence, got.decay_rate, got.times_confirmed) == (1.0, 0.0, 1)


# ---------------------------------------------------------------------------- forget / purge


@both_backends
def test_forget_is_a_soft_delete(mem: Memory) -> None:
    fact = mem.remember("The user's locker code is 4711", key="locker")
    mem.flush()
    res = mem.forget(fact.memory.id)
    assert res.action == "forgotten" and res.memory.valid_until is not None
    assert mem.search("locker code 4711") == []
    assert mem.list() == []
    assert mem.lookup("locker") is None
    assert contents(mem.list(include_forgotten=True)) == ["The user's locker code is 4711"]
    assert not mem.get(fact.memory.id).is_current
    assert len(mem.history(fact.memory.id)) == 1
    assert mem.forget(fact.memory.id).action == "unchanged"


@both_backends
def test_purge_is_a_hard_delete(mem: Memory) -> None:
    fact = mem.remember("The user's passport number is X1234567")
    keep = mem.remember("The user likes sunny weather")
    mem.flush()
    mem.purge(fact.memory.id)
    with pytest.raises(NotFoundError):
        mem.get(fact.memory.id)
    with pytest.raises(NotFoundError):
        mem.history(fact.memory.id)
    assert contents(mem.list(include_forgotten=True)) == ["The user likes sunny weather"]
    assert all(h.memory.id != fact.memory.id for h in mem.search("passport number X1234567"))
    with pytest.raises(NotFoundError):
        mem.purge(fact.memory.id)
    assert mem.get(keep.memory.id).is_current


# ---------------------------------------------------------------------------- procedures / episodes


def test_learn_procedure(mem: Memory) -> None:
    res = mem.learn_procedure(
        "Check the forecast before suggesting outdoor plans",
        triggers={"goal_contains": ["weather", "picnic"]}, procedure_type="tool_sequence",
    )  # fmt: skip
    assert res.action == "created"
    got = mem.get(res.memory.id)
    assert got.type is NodeType.PROCEDURAL and got.category == "procedure"
    assert got.procedure is not None
    assert got.procedure.procedure_type is ProcedureType.TOOL_SEQUENCE
    assert got.procedure.triggers == {"goal_contains": ["weather", "picnic"]}
    again = mem.learn_procedure("check the forecast before suggesting outdoor plans")
    assert again.action == "confirmed" and again.memory.id == got.id
    assert hit_contents(mem, "forecast", type="procedural") == [got.content]


def test_record_episode_with_structured_details(mem: Memory) -> None:
    details = {
        "trigger": {"message": "book dinner for two"},
        "actions": [{"tool": "search_restaurants", "result": "3 found"}, {"tool": "book"}],
        "outcome": {"success": True, "final_output": "Booked Luigi's at 8pm"},
        "started_at": "2024-05-01T19:00:00+00:00",
        "ended_at": "2024-05-01T19:00:02+00:00",
        "duration_ms": 2000,
        "feedback": {"rating": 5, "comment": "perfect"},
    }
    res = mem.record_episode("Booked a table at Luigi's", details=details, session="s9")
    got = mem.get(res.memory.id)
    assert res.action == "created" and got.type is NodeType.EPISODIC
    assert got.episode == EpisodeDetails.model_validate(details)
    assert got.episode.outcome == {"success": True, "final_output": "Booked Luigi's at 8pm"}
    assert got.episode.started_at == datetime(2024, 5, 1, 19, 0, tzinfo=UTC)
    nxt = mem.record_episode("Sent the confirmation e-mail", session="s9")
    assert temporal(mem, nxt.memory.id) == {(got.id, nxt.memory.id)}


# ---------------------------------------------------------------------------- limits


def test_episode_limit_prunes_oldest_first(make_memory) -> None:
    mem = make_memory(max_episodes=3)
    fact = mem.remember("Facts are not episodes")
    turns = [mem.add(f"turn number {i}") for i in range(5)]
    mem.add(
        [{"role": "user", "content": "message a"}, {"role": "assistant", "content": "message b"}]
    )
    left = mem.list(type="episodic", include_forgotten=True, limit=100)
    assert contents(left) == [turns[4].content, "message a", "message b"]
    assert mem.get(fact.memory.id).is_current
    mem.record_episode("an episode pushes another turn out")
    assert len(mem.list(type="episodic", limit=100)) == 3


def test_memory_limit_prunes_oldest_facts_and_opinions(make_memory) -> None:
    mem = make_memory(max_memories=2)
    mem.add("turns are not facts")
    mem.remember("First fact about apples")
    mem.remember("An opinion about pears", type="opinion")
    mem.remember("Third fact about cherries")
    assert contents(mem.list(type=["semantic", "opinion"])) == [
        "An opinion about pears", "Third fact about cherries",
    ]  # fmt: skip
    assert contents(mem.list(type="episodic")) == ["turns are not facts"]


def test_memory_limit_never_drops_a_current_fact_to_keep_an_ended_one(make_memory) -> None:
    """With a cap of 3, a forgotten and a replaced record go before the oldest fact
    that still holds (which used to be deleted to keep them)."""
    from memloci.errors import NotFoundError

    mem = make_memory(max_memories=3)
    allergy = mem.remember("User is allergic to penicillin", user="u1").memory
    team = mem.remember("User's favourite team is Benfica", user="u1").memory
    car = mem.remember("User drives a Volvo", user="u1").memory
    mem.forget(team.id)
    mem.remember("User plays chess on Sundays", user="u1")
    assert contents(mem.list(user="u1", type="semantic", include_forgotten=True)) == [
        "User is allergic to penicillin", "User drives a Volvo", "User plays chess on Sundays",
    ]  # fmt: skip
    mem.correct(car.id, "User drives a Tesla")
    mem.remember("User's sister is called Ana", user="u1")
    assert contents(mem.list(user="u1", type="semantic", include_forgotten=True)) == [
        "User plays chess on Sundays",
        "User drives a Tesla",
        "User's sister is called Ana",
    ]  # fmt: skip  (the replaced Volvo first, then the oldest fact: four held)
    with pytest.raises(NotFoundError):
        mem.get(allergy.id)


def test_fact_cap_of_consolidation_counts_each_users_facts_apart(make_memory) -> None:
    """Facts a session's consolidation creates prune their owner's facts only, and a
    shared fact prunes the shared ones only: never another user's."""
    mem = make_memory(max_memories=2)
    mine = [mem.remember(t, user="ana").memory for t in ("Ana likes tea", "Ana owns a bike")]
    shared = mem.remember("The office opens at nine", scope="global").memory
    mem.add("I live in Lisbon", user="ben", session="b1")
    mem.add("I work as a nurse", user="ben", session="b1")
    mem.add("My favourite colour is green", user="ben", session="b1")
    assert mem.end_session("b1").created
    assert len(mem.list(user="ben", type="semantic")) == 2
    for fact in (*mine, shared):
        assert mem.get(fact.id).is_current
    mem.remember("The office closes at six", scope="global")
    mem.remember("The wifi password is on the fridge", scope="global")
    assert mem.list(user="ana", type="semantic", scope="user")  # shared facts never evict
    assert len(mem.list(user="ana", type="semantic", scope="user")) == 2


def test_procedure_limit_prunes_oldest(make_memory) -> None:
    mem = make_memory(max_procedures=1)
    mem.learn_procedure("Always greet the user")
    mem.learn_procedure("Always answer in English")
    assert contents(mem.list(type="procedural")) == ["Always answer in English"]


def test_limits_are_per_namespace(make_memory) -> None:
    mem = make_memory(max_episodes=2)
    mem.add("only turn in tenant b", namespace="b")
    for i in range(3):
        mem.add(f"turn {i} in tenant a", namespace="a")
    assert contents(mem.list(namespace="b")) == ["only turn in tenant b"]
    assert len(mem.list(namespace="a")) == 2


# ---------------------------------------------------------------------------- lookup


def test_lookup_walks_session_user_agent_global(mem: Memory) -> None:
    mem.remember("Timezone is UTC", key="tz", scope="global")
    mem.remember("Timezone is CET", key="tz", agent="bot", scope="agent")
    mem.remember("Timezone is PST", key="tz", user="u1", scope="user")
    mem.remember("Timezone is EST", key="tz", user="u1", session="s1", scope="session")
    ctx = {"agent": "bot"}
    assert mem.lookup("tz", user="u1", session="s1", **ctx).content == "Timezone is EST"
    assert mem.lookup("tz", user="u1", session="s2", **ctx).content == "Timezone is PST"
    assert mem.lookup("tz", user="u1", **ctx).content == "Timezone is PST"
    assert mem.lookup("tz", user="u2", **ctx).content == "Timezone is CET"
    assert mem.lookup("tz", user="u2", agent="other").content == "Timezone is UTC"
    assert mem.lookup("TZ ", user="u2", agent="other").content == "Timezone is UTC"
    assert mem.lookup("unknown key") is None


def test_lookup_key_separators_are_equivalent(mem: Memory) -> None:
    fact = mem.remember("Deep ocean blue", key="favourite colour")
    for key in ("favourite_colour", "favourite-colour", "Favourite  Colour"):
        assert mem.lookup(key).id == fact.memory.id


def test_lookup_without_agent_skips_agent_scoped_facts(mem: Memory) -> None:
    mem.remember("Timezone is UTC", key="tz", scope="global")
    mem.remember("Timezone is CET", key="tz", agent="bot", scope="agent")
    assert mem.lookup("tz").content == "Timezone is UTC"


# ---------------------------------------------------------------------------- stats


def test_stats(mem: Memory) -> None:
    mem.add("hello there", session="s")
    mem.add("general kenobi", session="s")
    fact = mem.remember("The user collects stamps")
    mem.forget(fact.memory.id)
    mem.learn_procedure("Say hello back")
    mem.flush()
    s = mem.stats()
    assert s.nodes_by_type == {"episodic": 2, "semantic": 1, "procedural": 1}
    assert s.current_by_type == {"episodic": 2, "procedural": 1}
    assert s.edges_by_type == {"temporal": 1}
    assert s.pending_embeddings == 0 and s.dimension == 64


def test_fact_cap_counts_each_users_facts_apart(make_memory) -> None:
    mem = make_memory(max_memories=2)
    mem.remember("Ana likes the window seat", user="ana")
    mem.remember("Ana flies with a bike box", user="ana")
    for i, text in enumerate(["Ben drinks oat milk", "Ben runs at dawn", "Ben owns a kayak"]):
        mem.remember(text, user="ben")
        assert len(mem.list(user="ben", type="semantic")) == min(i + 1, 2)
    assert contents(mem.list(user="ana", type="semantic")) == [
        "Ana likes the window seat",
        "Ana flies with a bike box",
    ]  # fmt: skip  (another user's new facts never evict Ana's)


def test_a_failing_vector_scan_is_the_stores_error_not_an_embedder_outage(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memloci.errors import StorageError

    turn = mem.add("We adopted a tortoise called Sheldon", user="alice")
    mem.flush()
    store = mem.service.store

    def broken(*args: object, **kwargs: object) -> list[tuple[str, float]]:
        raise StorageError("the disk went away")

    with monkeypatch.context() as patch:
        patch.setattr(store.search, "vector_search", broken)
        with pytest.raises(StorageError, match="disk went away"):
            mem.search("pet reptile", user="alice")
    hits = mem.search("tortoise", user="alice")  # meaning search was never switched off
    assert hits[0].memory.id == turn.id and "vector" in hits[0].strategies
    assert "meaning skipped" not in hits[0].why


def test_a_remembered_fact_is_linked_to_its_subject_and_found_through_it(mem: Memory) -> None:
    tea = mem.remember("Caroline drinks green tea every morning", subject="Caroline", user="u1")
    mem.remember("The office moved to the fourth floor", user="u1")
    assert mem.flush(timeout=20)
    store = mem.service.store
    caroline = store.entities.find_entity("default", "Caroline")
    assert caroline is not None
    linked = store.graph.entity_fulltext(mem.service.filter(user="u1"), [caroline.id], "", 10)
    assert [i for i, _ in linked] == [tea.memory.id]
    hits = {h.memory.id: h for h in mem.search("What does Caroline have?", user="u1")}
    assert "entity" in hits[tea.memory.id].strategies  # the entity list reaches facts too
