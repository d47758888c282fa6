"""Bad input through the SDK is one ValidationError and writes nothing (issue 11 items 4
and 8): JSON nested hundreds of levels deep (never a RecursionError), lone surrogates
(never a UnicodeEncodeError), integers past 64 bits and times past the calendar (never
an OverflowError). Afterwards the namespace still lists, searches and exports."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memloci import Memory
from memloci.errors import NotFoundError, ValidationError
from pgtest import both_backends

BAD = "bad \ud800 text"


def deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def snapshot(mem: Memory) -> tuple[Any, ...]:
    s = mem.stats()
    return s.nodes_by_type, s.edges_by_type, s.entities, s.users


def keeps_working(mem: Memory, tmp_path: Path) -> None:
    assert [n.content for n in mem.list(user="u1")] == ["The user keeps bees in the garden"]
    assert mem.search("bees garden", user="u1")
    out = tmp_path / "export.jsonl"
    mem.export(str(out))
    assert "keeps bees" in out.read_text()


@pytest.fixture
def seeded(mem: Memory) -> Memory:
    mem.remember("The user keeps bees in the garden", user="u1")
    asyncio.run(mem.service.records.save_user("u1", display_name="Uma"))
    return mem


def cases(mem: Memory) -> dict[str, Callable[[], object]]:
    svc = mem.service
    fid = mem.list(user="u1")[0].id
    return {
        # item 4: deep JSON, 300–999 levels
        "turn metadata 300": lambda: mem.add("hello there", user="u1", metadata=deep(300)),
        "turn metadata 999": lambda: mem.add("hello there", user="u1", metadata=deep(999)),
        "fact value 999": lambda: mem.remember("a valid fact text", value=deep(999)),
        "fact value list": lambda: mem.remember("a valid fact text", value=[[[deep(40)]]]),
        "update metadata": lambda: mem.update(fid, metadata=deep(500)),
        "preferences 999": lambda: asyncio.run(svc.records.save_user("u1", preferences=deep(999))),
        "new user prefs": lambda: asyncio.run(svc.records.save_user("u2", preferences=deep(300))),
        "triggers": lambda: mem.learn_procedure("a valid procedure", triggers=deep(300)),
        "thread metadata": lambda: asyncio.run(
            svc.records.append_messages(
                "t1", [{"role": "user", "content": "hi", "metadata": deep(300)}]
            )
        ),
        # item 8: lone surrogates
        "turn": lambda: mem.add(BAD, user="u1"),
        "turn list": lambda: mem.add([{"role": "user", "content": BAD}], user="u1"),
        "speaker": lambda: mem.add("hello there", user="u1", speaker=BAD),
        "session": lambda: mem.add("hello there", user="u1", session=BAD),
        "fact": lambda: mem.remember(BAD, user="u1"),
        "key": lambda: mem.remember("a valid fact text", user="u1", key=BAD),
        "subject": lambda: mem.remember("a valid fact text", user="u1", subject=BAD),
        "value text": lambda: mem.remember("a valid fact text", value={"k": BAD}),
        "metadata key": lambda: mem.add("hello there", metadata={BAD: 1}),
        "update": lambda: mem.update(fid, BAD),
        "correct": lambda: mem.correct(fid, BAD),
        "procedure": lambda: mem.learn_procedure(BAD),
        "episode": lambda: mem.record_episode(BAD),
        "query": lambda: mem.search(BAD),
        "context": lambda: mem.context(BAD),
        "user filter": lambda: mem.list(user=BAD),
        "display name": lambda: asyncio.run(svc.records.save_user("u1", display_name=BAD)),
        "identifier": lambda: asyncio.run(svc.records.save_user("u1", identifiers={"email": BAD})),
        "thread message": lambda: asyncio.run(
            svc.records.append_messages("t1", [{"role": "user", "content": BAD}])
        ),
        "entity": lambda: asyncio.run(svc.records.save_entity(BAD)),
        # item 8: past 64 bits / past the calendar
        "offset": lambda: mem.list(offset=10**20),
        "limit": lambda: mem.list(limit=10**20),
        "after": lambda: mem.list(after="99999999999d"),
        "before weeks": lambda: mem.search("bees", before="99999999999w"),
        "event time": lambda: mem.add("hello there", event_time="99999999999d"),
        "year 10000": lambda: mem.add("hello there", event_time="9999-12-31T23:00:00-05:00"),
        "value int": lambda: mem.remember("a valid fact text", value=10**20),
        "metadata int": lambda: mem.add("hello there", metadata={"n": -(2**64)}),
    }


def test_bad_input_raises_one_validation_error_and_writes_nothing(
    seeded: Memory, tmp_path: Path
) -> None:
    mem = seeded
    before = snapshot(mem)
    wrong = {}
    for name, call in cases(mem).items():
        try:
            call()
        except ValidationError as exc:
            exc.message.encode()  # printable: the message never carries the surrogate
            continue
        except Exception as exc:  # collected and reported below
            wrong[name] = f"{type(exc).__name__}: {exc!r}"[:200]
        else:
            wrong[name] = "accepted"
    assert wrong == {}
    assert snapshot(mem) == before
    keeps_working(mem, tmp_path)


def test_deep_json_at_the_limit_is_kept(mem: Memory) -> None:
    mem.add("hello there", metadata=deep(32))
    with pytest.raises(ValidationError, match="nested more than 32 levels"):
        mem.add("hello there", metadata=deep(33))


def test_an_error_echoing_bad_text_is_printable(mem: Memory) -> None:
    with pytest.raises(NotFoundError) as info:
        mem.add_knowledge(BAD)
    assert "\\ud800" in info.value.message and str(info.value).encode()


@pytest.mark.parametrize(
    "node_patch",
    [
        {"metadata": deep(300)},
        {"value": [deep(200)]},
        {"content": BAD},
        {"confidence": 1, "metadata": {"n": 10**30}},
    ],
)
def test_import_refuses_bad_records_and_imports_nothing(
    seeded: Memory, tmp_path: Path, node_patch: dict[str, Any]
) -> None:
    mem = seeded
    good = tmp_path / "good.jsonl"
    mem.export(str(good))
    lines = [json.loads(x) for x in good.read_text().splitlines()]
    node = next(x for x in lines if x["kind"] == "node")
    node["node"] = {**node["node"], **node_patch, "id": "Zz9Yy8Xx"}
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    before = snapshot(mem)
    with pytest.raises(ValidationError):
        mem.import_file(str(bad))
    assert snapshot(mem) == before
    keeps_working(mem, tmp_path)


def test_wrong_types_and_unknown_keywords_name_the_public_method(seeded: Memory) -> None:
    mem = seeded
    before = snapshot(mem)
    for call in (
        lambda: mem.search("bees", category=5),
        lambda: mem.list(category=5),
        lambda: mem.search("bees", category=["garden", 5]),
        lambda: mem.list(type=3.5),
        lambda: mem.count(type=[None]),
    ):
        with pytest.raises(ValidationError, match="must be text or a list of texts"):
            call()
    calls = {
        "add": lambda: mem.add("hello there", foo=1),
        "remember": lambda: mem.remember("a valid fact text", bogus=1),
        "search": lambda: mem.search("bees", usr="u1"),
        "context": lambda: mem.context("bees", usr="u1"),
        "learn_procedure": lambda: mem.learn_procedure("a valid procedure", trigger={}),
        "record_episode": lambda: mem.record_episode("ran it", detail={}),
        "update": lambda: mem.update(mem.list()[0].id, "new text here", conten="x"),
        "lookup": lambda: mem.lookup("k", usr="u1"),
    }
    for name, call in calls.items():
        with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword") as info:
            call()
        assert "MemoryService" not in str(info.value) and "_turn_nodes" not in str(info.value)
    assert snapshot(mem) == before

    async def scenario() -> None:
        from memloci import AsyncMemory

        am = AsyncMemory(mem.settings.path, embedder=None)
        try:
            with pytest.raises(ValidationError):
                await am.search("bees", category=5)
            with pytest.raises(ValidationError):
                await am.list(category=5)
            with pytest.raises(TypeError, match=r"^add\(\) got an unexpected keyword"):
                await am.add("hello there", foo=1)
        finally:
            await am.aclose()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "triggers",
    [
        {"bogus": ["x"]},
        {"goal_contain": ["deploy"]},  # a typo must not make it an always-on procedure
        {"goal_contains": [1, 2]},
        {"goal_contains": []},
        {"goal_contains": ["", "  "]},
        {"goal_contains": ["!!!"]},
        {"goal_contains": {"deploy": 1}},
        ["deploy"],
    ],
)
def test_procedure_triggers_are_validated(mem: Memory, triggers: Any) -> None:
    with pytest.raises(ValidationError, match="trigger"):
        mem.learn_procedure("Run the tests before deploying", triggers=triggers)
    assert mem.count(include_forgotten=True) == 0
    bound = mem.tools(user="u1")
    answer = bound.call("learn_procedure", {"content": "Run the tests first", "triggers": ["!!"]})
    assert answer.startswith("Error:") and mem.count(include_forgotten=True) == 0


def test_relearning_a_procedure_applies_new_triggers(mem: Memory) -> None:
    text = "Run the tests before deploying"
    first = mem.learn_procedure(text, user="u1")
    assert first.action == "created" and "Run the tests" in mem.context("lunch", user="u1")
    again = mem.learn_procedure(text, user="u1", triggers={"goal_contains": "deploy"})
    assert again.action == "updated" and again.memory.id == first.memory.id
    assert again.memory.procedure is not None
    assert again.memory.procedure.triggers == {"goal_contains": ["deploy"]}
    assert again.memory.version == 2 and "triggers" in again.message
    assert "Run the tests" not in mem.context("lunch", user="u1")
    assert "Run the tests" in mem.context("deploy the site", user="u1")
    same = mem.learn_procedure(text, user="u1", triggers={"goal_contains": ["deploy"]})
    assert same.action == "confirmed"
    kept = mem.learn_procedure(text, user="u1")  # no triggers given: the known ones stay
    assert kept.action == "confirmed" and kept.memory.procedure is not None
    assert kept.memory.procedure.triggers == {"goal_contains": ["deploy"]}
    # another user's same text is their own procedure, never a change to u1's
    other = mem.learn_procedure(text, user="u2", triggers={"goal_contains": ["release"]})
    assert other.action == "created" and other.memory.id != first.memory.id
    mine = mem.get(first.memory.id)
    assert mine.procedure is not None and mine.procedure.triggers == {"goal_contains": ["deploy"]}


def test_episode_details_errors_name_the_field_plainly(mem: Memory) -> None:
    with pytest.raises(ValidationError) as info:
        mem.record_episode("ran the job", details={"duration_ms": "slow", "outcom": {}})
    message = info.value.message
    assert "details.duration_ms" in message and "details.outcom: unknown field" in message
    assert "pydantic" not in message and "validation error for" not in message
    assert "outcome" in (info.value.hint or "")


@both_backends
def test_a_nul_in_metadata_or_a_value_is_refused_alike(make_memory: Callable[..., Memory]) -> None:
    """PostgreSQL's JSONB cannot hold a NUL: both backends refuse it before writing, so a
    store never holds what `memloci migrate` could not copy."""
    mem = make_memory()
    for kwargs in (
        {"metadata": {"a": "x\x00y"}},
        {"metadata": {"a\x00": 1}},
        {"metadata": {"deep": [{"x": "\x00"}]}},
        {"key": "k", "value": "a\x00"},
    ):
        with pytest.raises(ValidationError, match="contains a NUL character"):
            mem.remember("A fact with odd metadata", user="sam", **kwargs)
    assert mem.count(include_forgotten=True) == 0
