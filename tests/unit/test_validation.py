"""Bad input: every case raises the right MemlociError subclass with a readable message,
and writes nothing at all."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memloci import Memory
from memloci.errors import (
    EmbeddingModelError,
    MemlociError,
    NotFoundError,
    ValidationError,
)
from memloci.providers.fake import FakeEmbedder

Ids = dict[str, str]
Call = Callable[[Memory, Ids], Any]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Memory, Ids]]:
    """One seeded memory shared by the bad-input cases: each case compares the whole
    store before and after itself, so a case that wrongly writes cannot hide."""
    with pytest.MonkeyPatch.context() as mp:
        for name in [n for n in os.environ if n.startswith("MEMLOCI_")]:
            mp.delenv(name)
        mem = Memory(str(tmp_path_factory.mktemp("bad") / "m.db"), embedder=FakeEmbedder())
    try:
        fact = mem.remember("The user's favourite city is Porto", key="city", user="alice")
        turn = mem.add("hello, this is a turn", session="s1", user="alice")
        proc = mem.learn_procedure("Always greet the user by name")
        foreign = mem.remember("A fact that lives in another tenant", namespace="other")
        assert mem.flush(20)
        yield mem, {
            "fact": fact.memory.id, "turn": turn.id, "proc": proc.memory.id,
            "foreign": foreign.memory.id,
        }  # fmt: skip
    finally:
        mem.close()


def snapshot(mem: Memory) -> dict[str, Any]:
    """Everything the store holds, namespace by namespace (through the Store protocol)."""
    store = mem.service.store
    return {
        ns: (
            [n.model_dump() for n in store.memories.iter_nodes(ns)],
            [v.model_dump() for v in store.memories.iter_versions(ns)],
            [e.model_dump() for e in store.memories.iter_edges(ns)],
        )
        for ns in store.namespaces()
    }


def total(snap: dict[str, Any]) -> int:
    return sum(len(nodes) for nodes, _, _ in snap.values())


def assert_readable(err: MemlociError, fragment: str | None) -> None:
    text = str(err)
    assert err.message and len(err.message) < 400
    assert "Traceback" not in text and "sqlite" not in text.lower()
    assert err.to_dict()["code"] == err.code
    if fragment is not None:
        assert fragment.lower() in text.lower(), text


NAN = float("nan")
LONG_TURN = "x" * 20_001
OK = "A perfectly valid fact"
MSG = {"role": "user", "content": "fine message"}

VALIDATION: list[tuple[str, Call, str | None]] = [
    # content of turns
    ("add empty", lambda m, i: m.add(""), "empty"),
    ("add whitespace", lambda m, i: m.add("  \n\t  "), "empty"),
    ("add oversized", lambda m, i: m.add(LONG_TURN), "limit"),
    ("add int content", lambda m, i: m.add(123), "content"),
    ("add None content", lambda m, i: m.add(None), "content"),
    ("add NUL", lambda m, i: m.add("bad \x00 byte"), "NUL"),
    ("add no messages", lambda m, i: m.add([]), "no user or assistant"),
    ("add only system", lambda m, i: m.add([{"role": "system", "content": "sys"}]), None),
    ("add message w/o content", lambda m, i: m.add([MSG, {"role": "user"}]), "message 1"),
    ("add empty message", lambda m, i: m.add([MSG, {"role": "user", "content": " "}]), "message 1"),
    ("add message not a dict", lambda m, i: m.add([MSG, "plain"]), "message 1"),
    ("add list + speaker", lambda m, i: m.add([MSG], speaker="bob"), "speaker"),
    ("add metadata list", lambda m, i: m.add("hi there", metadata=["a"]), "metadata"),
    ("add metadata NaN", lambda m, i: m.add("hi there", metadata={"x": NAN}), "metadata"),
    ("add metadata object", lambda m, i: m.add("hi there", metadata={"x": object()}), "metadata"),
    ("add metadata huge", lambda m, i: m.add("hi", metadata={"x": "y" * 70_000}), "metadata"),
    ("add bad time", lambda m, i: m.add("hi there", event_time="soonish"), "time"),
    ("add int time", lambda m, i: m.add("hi there", event_time=12345), "event_time"),
    ("add empty user", lambda m, i: m.add("hi there", user=""), "user"),
    ("add control-char session", lambda m, i: m.add("hi", session="a\nb"), "session"),
    # namespaces
    ("namespace upper", lambda m, i: m.add("hi there", namespace="Bad"), "namespace"),
    ("namespace space", lambda m, i: m.add("hi there", namespace="a b"), "namespace"),
    ("namespace digit", lambda m, i: m.add("hi there", namespace="1abc"), "namespace"),
    ("namespace long", lambda m, i: m.add("hi there", namespace="a" * 65), "namespace"),
    ("namespace int", lambda m, i: m.remember(OK, namespace=7), "namespace"),
    ("search bad namespace", lambda m, i: m.search("x", namespace=["default", "BAD"]), "namespace"),
    # facts
    ("fact too short", lambda m, i: m.remember("abcd"), "5"),
    ("fact too long", lambda m, i: m.remember("x" * 501), "500"),
    ("fact empty", lambda m, i: m.remember("   "), "empty"),
    ("fact int", lambda m, i: m.remember(42), "text"),
    ("confidence NaN", lambda m, i: m.remember(OK, confidence=NAN), "confidence"),
    ("confidence 2", lambda m, i: m.remember(OK, confidence=2), "confidence"),
    ("confidence negative", lambda m, i: m.remember(OK, confidence=-0.1), "confidence"),
    ("confidence text", lambda m, i: m.remember(OK, confidence="high"), "confidence"),
    ("confidence bool", lambda m, i: m.remember(OK, confidence=True), "confidence"),
    ("bad scope", lambda m, i: m.remember(OK, scope="planet"), "scope"),
    ("bad type", lambda m, i: m.remember(OK, type="memo"), "type"),
    ("episodic via remember", lambda m, i: m.remember(OK, type="episodic"), "semantic"),
    ("bad fact_type", lambda m, i: m.remember(OK, fact_type="gossip"), "fact_type"),
    ("bad source_type", lambda m, i: m.remember(OK, source_type="rumour"), "source_type"),
    ("user scope w/o user", lambda m, i: m.remember(OK, scope="user"), "user"),
    ("session scope w/o session", lambda m, i: m.remember(OK, scope="session"), "session"),
    ("agent scope w/o agent", lambda m, i: m.remember(OK, scope="agent"), "agent"),
    ("fact metadata str", lambda m, i: m.remember(OK, metadata="x"), "metadata"),
    ("value set", lambda m, i: m.remember(OK, value={1, 2}), "value"),
    ("value inf", lambda m, i: m.remember(OK, value=float("inf")), "value"),
    ("category int", lambda m, i: m.remember(OK, category=5), "category"),
    ("category long", lambda m, i: m.remember(OK, category="c" * 60), "category"),
    ("key punctuation", lambda m, i: m.remember(OK, key="___"), "key"),
    ("key empty", lambda m, i: m.remember(OK, key=""), "key"),
    ("fact bad time", lambda m, i: m.remember(OK, event_time="31/12/2024"), "time"),
    # ids
    ("get short id", lambda m, i: m.get("short"), "id"),
    ("get id with space", lambda m, i: m.get("abc defg"), "id"),
    ("get id punctuation", lambda m, i: m.get("abcdefg!"), "id"),
    ("get int id", lambda m, i: m.get(12345678), "id"),
    ("history bad id", lambda m, i: m.history("../../etc"), "id"),
    ("forget bad id", lambda m, i: m.forget("x"), "id"),
    ("purge bad id", lambda m, i: m.purge("DROP TABLE"), "id"),
    ("confirm bad id", lambda m, i: m.confirm(""), "id"),
    ("update bad id", lambda m, i: m.update("nope", "new content here"), "id"),
    # update / correct
    ("update too short", lambda m, i: m.update(i["fact"], "abc"), "5"),
    ("update int content", lambda m, i: m.update(i["fact"], 123), "text"),
    ("update turn oversized", lambda m, i: m.update(i["turn"], LONG_TURN), "limit"),
    ("update metadata list", lambda m, i: m.update(i["fact"], metadata=[1]), "metadata"),
    ("update bad value", lambda m, i: m.update(i["fact"], value={1}, set_value=True), "value"),
    ("correct empty", lambda m, i: m.correct(i["fact"], ""), "empty"),
    ("correct too long", lambda m, i: m.correct(i["fact"], "y" * 501), "500"),
    ("correct bad value", lambda m, i: m.correct(i["fact"], OK, value=NAN), "value"),
    # procedures / episodes
    ("procedure too short", lambda m, i: m.learn_procedure("hey"), "5"),
    ("procedure type", lambda m, i: m.learn_procedure(OK, procedure_type="script"), "procedure"),
    ("episode extra field", lambda m, i: m.record_episode("done", details={"nope": 1}), "episode"),
    ("episode details text", lambda m, i: m.record_episode("done", details="text"), "episode"),
    ("episode empty", lambda m, i: m.record_episode(""), "empty"),
    # search / list / context / lookup
    ("search empty", lambda m, i: m.search(""), "query"),
    ("search oversized", lambda m, i: m.search("q" * 2001), "query"),
    ("search k=0", lambda m, i: m.search("porto", k=0), "k"),
    ("search k=10000", lambda m, i: m.search("porto", k=10_000), "k"),
    ("search k float", lambda m, i: m.search("porto", k=2.5), "k"),
    ("search k bool", lambda m, i: m.search("porto", k=True), "k"),
    ("search after", lambda m, i: m.search("porto", after="sometime"), "time"),
    ("search before", lambda m, i: m.search("porto", before="31/12/2024"), "time"),
    ("search as_of", lambda m, i: m.search("porto", as_of="never"), "time"),
    ("search type", lambda m, i: m.search("porto", type="memo"), "type"),
    ("search scope", lambda m, i: m.search("porto", scope="planet"), "scope"),
    ("search min_conf 2", lambda m, i: m.search("porto", min_confidence=2), "min_confidence"),
    ("search min_conf NaN", lambda m, i: m.search("porto", min_confidence=NAN), "min_confidence"),
    ("search recipe", lambda m, i: m.search("porto", recipe="magic"), "recipe"),
    ("list limit 0", lambda m, i: m.list(limit=0), "limit"),
    ("list limit huge", lambda m, i: m.list(limit=10_001), "limit"),
    ("list offset", lambda m, i: m.list(offset=-1), "offset"),
    ("list order", lambda m, i: m.list(order="random"), "order"),
    ("context budget negative", lambda m, i: m.context(budget=-5), "budget"),
    ("context budget huge", lambda m, i: m.context(budget=10**6), "budget"),
    ("lookup empty", lambda m, i: m.lookup(""), "key"),
    ("lookup punctuation", lambda m, i: m.lookup("---"), "key"),
    ("stats namespace", lambda m, i: m.stats("Nope!"), "namespace"),
]

NOT_FOUND: list[tuple[str, Call, str | None]] = [
    ("get unknown", lambda m, i: m.get("zzzzzzzz"), "zzzzzzzz"),
    ("update unknown", lambda m, i: m.update("zzzzzzzz", "new content here"), "zzzzzzzz"),
    ("correct unknown", lambda m, i: m.correct("zzzzzzzz", "new content here"), "zzzzzzzz"),
    ("confirm unknown", lambda m, i: m.confirm("zzzzzzzz"), "zzzzzzzz"),
    ("forget unknown", lambda m, i: m.forget("zzzzzzzz"), "zzzzzzzz"),
    ("purge unknown", lambda m, i: m.purge("zzzzzzzz"), "zzzzzzzz"),
    ("history unknown", lambda m, i: m.history("zzzzzzzz"), "zzzzzzzz"),
    ("get wrong namespace", lambda m, i: m.get(i["foreign"]), "default"),
    ("get other namespace", lambda m, i: m.get(i["fact"], namespace="other"), "other"),
    ("update wrong ns", lambda m, i: m.update(i["fact"], OK, namespace="other"), "other"),
    ("correct wrong ns", lambda m, i: m.correct(i["fact"], OK, namespace="other"), "other"),
    ("confirm wrong ns", lambda m, i: m.confirm(i["fact"], namespace="other"), "other"),
    ("forget wrong ns", lambda m, i: m.forget(i["fact"], namespace="other"), "other"),
    ("purge wrong ns", lambda m, i: m.purge(i["fact"], namespace="other"), "other"),
    ("history wrong ns", lambda m, i: m.history(i["fact"], namespace="other"), "other"),
]

CASES = [pytest.param(call, ValidationError, frag, id=label) for label, call, frag in VALIDATION]
CASES += [pytest.param(call, NotFoundError, frag, id=label) for label, call, frag in NOT_FOUND]


@pytest.mark.parametrize(("call", "error", "fragment"), CASES)
def test_bad_input_is_rejected_and_writes_nothing(
    seeded: tuple[Memory, Ids], call: Call, error: type[MemlociError], fragment: str | None
) -> None:
    mem, ids = seeded
    before = snapshot(mem)
    with pytest.raises(MemlociError) as exc:
        call(mem, ids)
    assert type(exc.value) is error, f"{type(exc.value).__name__}: {exc.value}"
    assert_readable(exc.value, fragment)
    assert mem.flush(20)
    after = snapshot(mem)
    assert total(after) == total(before)
    assert after == before


def test_validation_errors_carry_hints(mem: Memory) -> None:
    for call in (
        lambda: mem.remember("abc"),
        lambda: mem.add("hi", namespace="Bad"),
        lambda: mem.get("bad"),
        lambda: mem.remember(OK, scope="planet"),
        lambda: mem.search("x", after="whenever"),
    ):
        with pytest.raises(ValidationError) as exc:
            call()
        assert exc.value.hint, exc.value.message
        assert exc.value.to_dict()["hint"] == exc.value.hint


def test_bad_triggers_error_names_the_field(mem: Memory) -> None:
    with pytest.raises(ValidationError) as exc:
        mem.learn_procedure(OK, triggers="weather")
    assert "trigger" in exc.value.message
    assert mem.list(type="procedural") == []


def test_context_budget_zero_is_rejected(mem: Memory) -> None:
    with pytest.raises(ValidationError):
        mem.context(budget=0)


@pytest.mark.parametrize("options", [{"bogus": 1}, {"max_episodes": 0}], ids=["unknown", "range"])
def test_bad_memory_options_raise_memloci_validation_error(
    db_path: str, options: dict[str, Any]
) -> None:
    with pytest.raises(ValidationError):
        Memory(db_path, embedder=None, **options)


def test_bad_namespace_or_embedder_option(db_path: str) -> None:
    with pytest.raises(ValidationError) as exc:
        Memory(db_path, embedder=None, namespace="Not_Valid")
    assert "namespace" in exc.value.message
    with pytest.raises(ValidationError) as exc:
        Memory(db_path, embedder="no-such-embedder")
    assert exc.value.hint and "fake" in exc.value.hint


# ---------------------------------------------------------------------------- embedding model


def _worker_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "memloci-embedder" and t.is_alive()]


def test_mismatched_embedding_model_is_refused_and_reembed_recovers(db_path: str) -> None:
    with Memory(db_path, embedder=FakeEmbedder(dimension=16)) as mem:
        fact = mem.remember("The user grows chilli peppers")
        mem.add("we talked about chilli sauce")
    workers = len(_worker_threads())

    with pytest.raises(EmbeddingModelError) as exc:
        Memory(db_path, embedder=FakeEmbedder(dimension=32))
    err = exc.value
    assert "fake:16" in err.message and "fake:32" in err.message
    assert err.hint and "reembed" in err.hint
    assert len(_worker_threads()) == workers  # nothing left running

    with Memory(db_path, embedder=FakeEmbedder(dimension=16)) as same:  # nothing changed
        stats = same.stats()
        assert (stats.embedding_model, stats.dimension) == ("fake:16", 16)
        assert sum(stats.nodes_by_type.values()) == 2 and stats.pending_embeddings == 0

    with Memory(db_path, embedder=FakeEmbedder(dimension=32), reembed=True) as mem:
        assert mem.flush(20)
        stats = mem.stats()
        assert (stats.embedding_model, stats.dimension) == ("fake:32", 32)
        assert stats.pending_embeddings == 0
        hits = mem.search("chilli peppers", recipe="vector")
        assert hits[0].memory.id == fact.memory.id
        assert mem.get(fact.memory.id).content == "The user grows chilli peppers"


def test_embedder_none_opens_a_store_built_with_another_model(db_path: str) -> None:
    with Memory(db_path, embedder=FakeEmbedder(dimension=16)) as mem:
        fact = mem.remember("The user grows chilli peppers")
    with Memory(db_path, embedder=None) as mem:
        assert mem.search("chilli")[0].memory.id == fact.memory.id


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("Préférences", "préférences"),
        ("Работа", "работа"),
        ("Work Stuff!", "work_stuff"),
        ("日本語 メモ", "日本語_メモ"),
        ("  ", "general"),
    ],
)
def test_a_category_keeps_its_letters_in_any_script(mem: Memory, given: str, stored: str) -> None:
    """Lower case, non-alphanumerics to ``_`` (the reference's rule): "Работа" was
    ``general`` and "Préférences" ``pr_f_rences`` while only ASCII letters stayed."""
    node = mem.remember("User's office is in Kyiv", category=given).memory
    assert node.category == stored
    assert [n.id for n in mem.list(category=given)] == [node.id]
