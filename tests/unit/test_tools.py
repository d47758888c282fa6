"""Agent tools: one definition per tool, schemas valid for every API, a dispatcher that
answers every call with text (``Error: …`` on a problem) and never escapes its binding."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from memloci.config import Settings
from memloci.models import MemoryNode, NodeType
from memloci.providers.fake import FakeEmbedder
from memloci.service import MemoryService
from memloci.service.compose import build_service
from memloci.tools import (
    TOOLS,
    McpTool,
    Tools,
    anthropic_tools,
    get_tool,
    mcp_tools,
    openai_tools,
)

SPEC_TOOLS = {
    "recall", "search_memory", "remember", "remember_fact", "add_to_memory", "update_memory",
    "correct_fact", "confirm_fact", "forget", "list_memories", "learn_procedure",
    "record_episode", "get_entity_info", "explain_fact", "memory_stats", "weak_facts",
    "record_procedure_use",
}  # fmt: skip
NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ID_IN_TEXT = re.compile(r"\[id:([A-Za-z0-9]{8})\]")
STRICT_UNSUPPORTED = {"default", "minLength", "maxLength", "pattern", "minimum", "maximum"}


@pytest.fixture
def service(db_path: str) -> Iterator[MemoryService]:
    svc = build_service(Settings(path=db_path), embedder=FakeEmbedder())
    yield svc
    svc.close()


def call(tools: Tools, name: str, arguments: Any = None) -> str:
    return asyncio.run(tools.call(name, arguments))


def first_id(text: str) -> str:
    found = ID_IN_TEXT.search(text)
    assert found, text
    return found.group(1)


def stored(service: MemoryService, **filters: Any) -> list[MemoryNode]:
    flt = service.filter(include_forgotten=True, **filters)
    return asyncio.run(service.memories.list_nodes(flt, limit=1000))


def walk(schema: Any) -> Iterator[dict[str, Any]]:
    """Every sub-schema (dict) in ``schema``."""
    if isinstance(schema, dict):
        yield schema
        for value in schema.values():
            yield from walk(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from walk(item)


# ---------------------------------------------------------------------------- registry & schemas


def test_every_spec_tool_is_defined_once_and_always_offered() -> None:
    assert set(TOOLS) == SPEC_TOOLS
    for name, tool in TOOLS.items():
        assert tool.name == name and NAME_RE.match(name)
        assert "system" in tool.tags
        assert tool.description and len(tool.description) <= 1024
    assert TOOLS["search_memory"].handler is TOOLS["recall"].handler
    assert TOOLS["remember_fact"].handler is TOOLS["remember"].handler
    assert TOOLS["search_memory"].alias_of == "recall"
    assert TOOLS["add_to_memory"].alias_of == "remember"
    with pytest.raises(Exception, match="unknown tool"):
        get_tool("nope")


def check_parameters(schema: dict[str, Any], *, strict: bool = False) -> None:
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    for sub in walk(schema):
        assert not {"$ref", "$defs", "definitions", "title"} & set(sub), sub
        if sub.get("type") == "object" or "properties" in sub:
            assert sub.get("additionalProperties") is False, sub
    for prop in schema["properties"].values():
        assert prop.get("description"), prop
    if strict:
        assert schema["required"] == list(schema["properties"])
        for sub in walk(schema):
            assert not STRICT_UNSUPPORTED & set(sub), sub


def test_openai_schemas() -> None:
    exported = openai_tools()
    assert [t["function"]["name"] for t in exported] == list(TOOLS)
    for entry in exported:
        assert entry["type"] == "function"
        fn = entry["function"]
        assert set(fn) == {"name", "description", "parameters"}
        assert NAME_RE.match(fn["name"])
        check_parameters(fn["parameters"])


def test_openai_strict_schemas() -> None:
    for entry in openai_tools(strict=True):
        fn = entry["function"]
        assert fn["strict"] is True
        check_parameters(fn["parameters"], strict=True)
    # an optional argument becomes nullable; a required one stays plain
    recall = get_tool("recall").parameters(strict=True)["properties"]
    assert recall["query"]["type"] == ["string", "null"]
    assert recall["memory_type"]["enum"][-1] is None
    assert get_tool("update_memory").parameters(strict=True)["properties"]["content"] == {
        "type": "string",
        "description": "The updated content for this memory (5-500 characters)",
    }
    assert recall["limit"]["description"].endswith("(default 10)")


def test_anthropic_and_mcp_schemas() -> None:
    for entry in anthropic_tools():
        assert set(entry) == {"name", "description", "input_schema"}
        assert NAME_RE.match(entry["name"])
        check_parameters(entry["input_schema"])
    tools = mcp_tools()
    assert [t.name for t in tools] == list(TOOLS)
    for tool in tools:
        assert isinstance(tool, McpTool)
        name, description, schema = tool
        assert name and description
        check_parameters(schema)
        as_dict = tool.to_dict()
        assert as_dict["inputSchema"]["type"] == "object"
        assert set(as_dict) == {"name", "description", "inputSchema"}


def test_export_a_subset_and_schemas_are_fresh_copies() -> None:
    picked = openai_tools(["add_to_memory", "update_memory"])
    assert [t["function"]["name"] for t in picked] == ["add_to_memory", "update_memory"]
    assert anthropic_tools("recall")[0]["name"] == "recall"
    picked[0]["function"]["parameters"]["properties"].clear()
    assert openai_tools(["add_to_memory"])[0]["function"]["parameters"]["properties"]
    with pytest.raises(Exception, match="unknown tool"):
        openai_tools(["recall", "missing"])


def test_reference_shapes_of_add_and_update_memory() -> None:
    add = get_tool("add_to_memory").parameters()
    assert add["required"] == ["content", "category"]
    assert add["properties"]["content"]["minLength"] == 5
    assert add["properties"]["content"]["maxLength"] == 500
    assert add["properties"]["category"]["enum"] == ["person", "preference", "context", "project"]
    assert add["properties"]["subject"]["maxLength"] == 200
    upd = get_tool("update_memory").parameters()
    assert upd["required"] == ["memory_id", "content"]
    assert upd["properties"]["memory_id"]["pattern"] == "^[A-Za-z0-9]{8}$"
    recall = get_tool("recall").parameters()
    assert set(recall["properties"]) == {
        "query", "key", "memory_type", "memory_types", "limit", "top_k", "min_confidence",
    }  # fmt: skip
    assert "required" not in recall
    remember = get_tool("remember").parameters()
    assert {"content", "key", "category", "fact_type", "overwrite"} <= set(remember["properties"])
    assert "user_preference" in remember["properties"]["fact_type"]["enum"]


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("recall", {"query": "boss", "limit": 3}),
        ("recall", {}),
        ("remember", {"content": "The user likes tea", "key": "drink", "overwrite": False}),
        ("add_to_memory", {"content": "Alec is my boss", "category": "person", "subject": "Alec"}),
        ("update_memory", {"memory_id": "a1B2c3D4", "content": "Sarah works on Design"}),
        ("learn_procedure", {"content": "Always run tests", "triggers": ["deploy"]}),
        ("record_episode", {"content": "Deployed v2", "outcome": "success", "duration_ms": 5}),
        ("memory_stats", {}),
        ("weak_facts", {"threshold": 0.2}),
        ("record_procedure_use", {"memory_id": "a1B2c3D4", "success": True, "duration_ms": 9}),
    ],
)
def test_schemas_and_models_agree_on_valid_arguments(name: str, arguments: dict[str, Any]) -> None:
    tool = get_tool(name)
    Draft202012Validator(tool.parameters()).validate(arguments)
    tool.args.model_validate(arguments)
    # strict mode: every argument is sent, the missing ones as null
    full = {k: arguments.get(k) for k in tool.parameters(strict=True)["properties"]}
    Draft202012Validator(tool.parameters(strict=True)).validate(full)
    tool.args.model_validate(full)


# ---------------------------------------------------------------------------- round trips


def test_remember_recall_update_correct_confirm_forget(service: MemoryService) -> None:
    tools = Tools(service, user="alice")
    out = call(tools, "remember", {"content": "The user prefers dark mode", "category": "UI"})
    assert out.startswith("Remembered [id:")
    mid = first_id(out)
    assert out == f'Remembered [id:{mid}] (category: ui): "The user prefers dark mode".'

    assert f"[id:{mid}]" in call(tools, "recall", {"query": "dark mode"})
    assert f"[id:{mid}]" in call(tools, "search_memory", {"query": "dark mode"})
    assert f"[id:{mid}]" in call(tools, "recall", {})
    assert f"[id:{mid}]" in call(tools, "list_memories", {"category": "ui"})

    again = call(tools, "remember", {"content": "The user prefers dark mode"})
    assert "Already remembered" in again and mid in again

    out = call(tools, "update_memory", {"memory_id": mid, "content": "The user prefers light mode"})
    assert out == (
        f'Updated [id:{mid}] (category: ui) to version 2: "The user prefers dark mode" → '
        '"The user prefers light mode".'
    )
    out = call(tools, "update_memory", {"memory_id": mid, "content": "The user prefers light mode"})
    assert out.startswith("No change")

    same = call(tools, "correct_fact", {"memory_id": mid, "content": "The user prefers light mode"})
    assert same.startswith(f"No change: [id:{mid}]")  # no new fact replaces an equal one
    assert asyncio.run(service.memories.get(mid)).valid_until is None
    out = call(tools, "correct_fact", {"memory_id": mid, "content": "The user prefers sepia mode"})
    new_id = ID_IN_TEXT.findall(out)[0]
    assert out.startswith("Corrected:") and new_id != mid and f"[id:{mid}]" in out
    assert asyncio.run(service.memories.get(mid)).valid_until is not None
    # the replaced fact says which one replaced it (it was "forgotten", a dead end)
    out = call(tools, "update_memory", {"memory_id": mid, "content": "The user likes dark mode"})
    assert "was replaced by [" in out and new_id in out and "forgotten" not in out

    out = call(tools, "confirm_fact", {"memory_id": f"[id:{new_id}]"})  # copied from context
    assert out.startswith(f"Confirmed [id:{new_id}]") and "1.00" in out
    assert asyncio.run(service.memories.get(new_id)).decay_rate == 0.0

    assert call(tools, "forget", {"memory_id": new_id}).startswith(f"Forgot [id:{new_id}]")
    assert "already forgotten" in call(tools, "forget", {"memory_id": new_id})
    out = call(tools, "update_memory", {"memory_id": new_id, "content": "Back to dark mode"})
    assert out == f"Error: memory {new_id} was forgotten; it can no longer change."
    assert "No memories" in call(tools, "recall", {})


def test_remember_fact_with_a_key(service: MemoryService) -> None:
    tools = Tools(service, agent="bot")
    out = call(tools, "remember_fact", {"content": "Timezone is Australia/Adelaide", "key": "tz"})
    mid = first_id(out)
    assert call(tools, "recall", {"key": "tz"}).startswith(f"tz → [id:{mid}]")
    out = call(tools, "remember", {"content": "Timezone is Europe/Lisbon", "key": "tz"})
    assert out == (
        f"Updated [id:{mid}] (key tz, category: general) to version 2: "
        '"Timezone is Australia/Adelaide" → '
        '"Timezone is Europe/Lisbon".'
    )
    out = call(
        tools, "remember", {"content": "Timezone is Asia/Tokyo", "key": "tz", "overwrite": False}
    )
    assert out.startswith(f"Not stored: [id:{mid}] already holds key tz") and "update_memory" in out
    assert asyncio.run(service.memories.get(mid)).content == "Timezone is Europe/Lisbon"


def test_recall_by_key_falls_back_to_the_closest_keys(service: MemoryService) -> None:
    tools = Tools(service)
    mid = first_id(call(tools, "remember", {"content": "Local time is UTC+2", "key": "local_tz"}))
    out = call(tools, "recall", {"key": "local tz"})  # fuzzy: space and _ are equivalent
    assert f"[id:{mid}]" in out
    out = call(tools, "recall", {"key": "local"})
    assert out.startswith("No fact has exactly the key 'local'. Closest keys:")
    assert f"[id:{mid}]" in out
    assert call(tools, "recall", {"key": "zzz"}) == "Nothing is stored under the key 'zzz'."
    out = call(tools, "recall", {"key": "UTC"})  # no such key, but the words match a fact
    assert out.startswith("No fact has the key 'UTC'. Related memories:") and mid in out
    empty = Tools(service, namespace="empty")
    assert call(empty, "recall", {"query": "zzz"}) == "No memories match 'zzz'."
    assert call(empty, "recall", {}) == "No memories stored yet."
    assert call(empty, "list_memories", {}) == "No memories (all types)."


def test_recall_filters_by_type_and_confidence(service: MemoryService) -> None:
    tools = Tools(service)
    call(tools, "learn_procedure", {"content": "Always run the tests before deploying"})
    call(tools, "remember", {"content": "Deploys happen on Fridays"})
    procs = call(tools, "recall", {"query": "deploying", "memory_type": "procedures"})
    assert "procedural" in procs and "Fridays" not in procs
    facts = call(tools, "recall", {"query": "deploying", "memory_type": "facts"})
    assert "Fridays" in facts and "procedural" not in facts
    weak = stored(service, type="semantic")[0]
    service.store.memories.update_node("default", weak.id, _patch(confidence=0.2))
    assert "Fridays" not in call(tools, "recall", {"min_confidence": 0.5})
    assert "1 memory below it" in call(tools, "recall", {})  # reference 000: default 0.5
    listed = call(tools, "recall", {"min_confidence": 0})
    assert "Fridays" in listed and "(confidence 0.20)" in listed


def test_recall_without_a_query_lists_facts_by_confidence_descending(
    service: MemoryService,
) -> None:
    """Reference 000: facts are ordered by confidence, descending (not by category)."""
    tools = Tools(service)
    made: dict[str, str] = {}
    for category, text, confidence in [
        ("alpha", "The office opens at nine", 0.6),
        ("beta", "The user drinks green tea", 0.95),
        ("gamma", "Backups run every night", 0.8),
    ]:
        mid = first_id(call(tools, "remember", {"content": text, "category": category}))
        service.store.memories.update_node("default", mid, _patch(confidence=confidence))
        made[text] = mid
    out = call(tools, "recall", {})
    assert out.startswith("3 memories, highest confidence first:")
    order = sorted(made, key=lambda text: out.index(made[text]))
    assert order == [
        "The user drinks green tea",
        "Backups run every night",
        "The office opens at nine",
    ]


def _patch(**kwargs: Any) -> Any:
    from memloci.storage.base import NodePatch

    return NodePatch(**kwargs)


def test_add_to_memory_suggests_update_for_a_known_subject(service: MemoryService) -> None:
    tools = Tools(service, user="u1")
    args = {"content": "Sarah works on the Platform team", "category": "person", "subject": "Sarah"}
    mid = first_id(call(tools, "add_to_memory", args))
    out = call(
        tools,
        "add_to_memory",
        {"content": "Sarah moved to the Design team", "category": "person", "subject": "sarah"},
    )
    assert out.startswith("Not stored: memories about Sarah already exist")
    assert f'update_memory with memory_id "{mid}"' in out
    assert len(stored(service, type="semantic")) == 1


def test_learn_procedure_and_record_episode(service: MemoryService) -> None:
    tools = Tools(service, user="u1", session="s1")
    out = call(
        tools,
        "learn_procedure",
        {"content": "Check the forecast first", "triggers": ["weather"], "category": "Travel"},
    )
    assert out.startswith("Learned procedure [id:") and "standing instructions" in out
    node = asyncio.run(service.memories.get(first_id(out)))
    assert node.type is NodeType.PROCEDURAL and node.category == "travel"
    assert node.procedure is not None and node.procedure.triggers == {"goal_contains": ["weather"]}

    out = call(
        tools,
        "record_episode",
        {"content": "Deploy failed: disk full", "outcome": "failure", "error": "ENOSPC"},
    )
    assert out.startswith("Recorded episode [id:")
    ep = asyncio.run(service.memories.get(first_id(out)))
    assert ep.type is NodeType.EPISODIC and (ep.user, ep.session) == ("u1", "s1")
    assert ep.episode is not None and ep.episode.outcome == {"success": False, "error": "ENOSPC"}
    assert "Deploy failed" in call(tools, "list_memories", {"memory_type": "episodes"})


def test_memory_stats(service: MemoryService) -> None:
    tools = Tools(service)
    call(tools, "remember", {"content": "The sky is blue today"})
    out = call(tools, "memory_stats")
    assert out.startswith("Memory in namespace 'default': 1 semantic current")
    assert "Maintenance has not run yet." in out


def test_weak_facts(service: MemoryService) -> None:
    tools = Tools(service, user="u1")
    assert call(tools, "weak_facts") == "No facts are below confidence 0.30."
    mid = first_id(call(tools, "remember", {"content": "The user has a cat named Tom"}))
    first_id(call(tools, "remember", {"content": "The user lives in Porto"}))
    service.store.memories.update_node("default", mid, _patch(confidence=0.1))
    out = call(tools, "weak_facts", {"threshold": 0.3})
    assert f"[id:{mid}]" in out and "Porto" not in out and "confirm_fact" in out
    assert "(confidence 0.10)" in out


def test_get_entity_info_and_explain_fact(service: MemoryService) -> None:
    tools = Tools(service, user="u1")
    mid = first_id(call(tools, "remember", {"content": "Alec is the user's boss at TechCorp"}))
    other = first_id(call(Tools(service, user="u2"), "remember", {"content": "u2 lent Alec $5"}))
    # names the worker links only to known entities: none yet ("Alec is …" says nothing
    # of who Alec is; "Alec owes …" would be taken for a name and made an entity)
    assert asyncio.run(service.flush(20))
    alec = asyncio.run(
        service.records.save_entity("Alec", type="person", aliases=["Al"], summary="Boss")
    )
    corp = asyncio.run(service.records.save_entity("TechCorp", type="organization"))
    asyncio.run(service.records.link_entities(mid, [alec.id, corp.id]))
    asyncio.run(service.records.link_entities(other, [alec.id]))

    # u2's memory mentions Alec too: u1 sees neither it nor what may come from it — the
    # summary (drawn from every user's facts), an alias no memory of u1's uses, the count
    out = call(tools, "get_entity_info", {"name": "Alec"})
    assert out.startswith("Alec (person), mentioned 1x")
    assert "Summary:" not in out and "Also called" not in out
    assert f"[id:{mid}]" in out and other not in out  # u2's memory stays hidden
    assert "TechCorp (organization" in out
    assert call(tools, "get_entity_info", {"name": "Al"}).startswith("Error:")
    assert call(tools, "get_entity_info", {"name": "Nobody"}).startswith("Error:")
    # an entity only u1's memories mention is shown whole
    out = call(tools, "get_entity_info", {"name": "TechCorp"})
    assert out.startswith("TechCorp (organization), mentioned")
    asyncio.run(service.records.save_entity("TechCorp", aliases=["TC"], summary="Alec's employer"))
    out = call(tools, "get_entity_info", {"name": "TC"})
    assert "Also called: TC" in out and "Summary: Alec's employer" in out

    call(tools, "update_memory", {"memory_id": mid, "content": "Alec is the user's boss at Acme"})
    out = call(tools, "explain_fact", {"memory_id": mid})
    assert out.startswith(f"[id:{mid}]") and "Version 2" in out and "History:" in out
    assert "TechCorp" in out and "Alec (person)" in out
    new = first_id(call(tools, "correct_fact", {"memory_id": mid, "content": "Alec is a peer"}))
    assert f"Replaced by: [id:{new}]" in call(tools, "explain_fact", {"memory_id": mid})
    assert f"[id:{mid}]" in call(tools, "explain_fact", {"memory_id": new})


# ---------------------------------------------------------------------------- bad calls


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("nope", {}, "Error: unknown tool 'nope'. Available tools: recall, search_memory"),
        ("remember", "{not json", "Error: remember: arguments are not valid JSON"),
        ("remember", "[1, 2]", "Error: remember: arguments must be a JSON object"),
        (
            "remember",
            {},
            "Error: invalid arguments for remember: content is required (or key and value).",
        ),
        ("remember", {"content": "hey"}, "content must have at least 5 characters"),
        ("add_to_memory", {"content": "x" * 501, "category": "person"}, "at most 500"),
        ("add_to_memory", {"content": "Alec is my boss", "category": "boss"}, "category: input"),
        ("remember", {"content": "Some fact here", "overwrite": "maybe"}, "overwrite: input"),
        ("remember", {"content": "Some fact here", "fact_type": "gossip"}, "fact_type: input"),
        (
            "remember",
            {"content": "Some fact here", "namespace": "other"},
            "unknown argument namespace",
        ),
        (
            "remember",
            {"content": "Some fact here", "user": "mallory"},
            "unknown argument user (this",
        ),
        ("update_memory", {"memory_id": "abc", "content": "Some new text"}, "8-character id"),
        ("update_memory", {"memory_id": "abcd1234"}, "content is required"),
        ("recall", {"limit": 0}, "limit: input should be greater than or equal to 1"),
        ("recall", {"min_confidence": 2}, "min_confidence: input should be less than"),
        ("learn_procedure", {"content": "Be nice always", "triggers": "x"}, "triggers: input"),
        ("record_episode", {"content": "Ran", "outcome": "meh"}, "outcome: input should be"),
        ("weak_facts", {"threshold": -1}, "threshold: input should be greater"),
        (
            "memory_stats",
            {"verbose": True},
            "unknown argument verbose (this tool takes: no arguments)",
        ),
    ],
)
def test_bad_calls_answer_with_an_error_and_write_nothing(
    service: MemoryService, name: str, arguments: Any, expected: str
) -> None:
    out = call(Tools(service), name, arguments)
    assert out.startswith("Error:"), out
    assert expected in out, out
    assert stored(service) == []


def test_not_found_and_service_errors_become_messages(service: MemoryService) -> None:
    tools = Tools(service)
    out = call(tools, "update_memory", {"memory_id": "abcd1234", "content": "Some new text"})
    assert out.startswith("Error: no memory with id 'abcd1234'") and "Hint:" in out
    assert call(tools, "forget", {"memory_id": "abcd1234"}).startswith("Error: no memory")
    assert call(tools, "explain_fact", {"memory_id": "abcd1234"}).startswith("Error: no memory")
    # the service's own validation (here: key needs a letter or digit) is reported too
    out = call(tools, "remember", {"content": "Some fact here", "key": "---"})
    assert out == "Error: key needs at least one letter or digit."
    assert stored(service) == []


def test_unexpected_exceptions_are_logged_not_raised(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(service.memories, "search", boom)
    with caplog.at_level(logging.ERROR, logger="memloci.tools"):
        out = call(Tools(service), "recall", {"query": "anything"})
    assert out.startswith("Error: recall failed unexpectedly (RuntimeError)")
    assert "disk on fire" not in out
    assert any("disk on fire" in (r.exc_text or "") for r in caplog.records)


def test_json_string_arguments(service: MemoryService) -> None:
    tools = Tools(service)
    args = json.dumps({"content": "Alec is the user's boss", "category": "person"})
    mid = first_id(call(tools, "add_to_memory", args))
    assert f"[id:{mid}]" in call(tools, "recall", '{"query": "boss"}')
    assert "[id:" in call(tools, "recall", "")  # empty string = no arguments
    assert "[id:" in call(tools, "recall", '{"query": null, "key": null, "limit": null}')
    assert call(tools, "memory_stats", "{}").startswith("Memory in namespace")


def test_nulls_and_blanks_mean_not_given(service: MemoryService) -> None:
    tools = Tools(service)
    call(tools, "remember", {"content": "The user speaks Portuguese"})
    out = call(tools, "recall", {"query": "  ", "key": "", "memory_type": None})
    assert "Portuguese" in out  # lists facts
    out = call(tools, "remember", {"content": None})
    assert out == "Error: invalid arguments for remember: content is required (or key and value)."


# ---------------------------------------------------------------------------- binding


def test_namespace_binding_cannot_be_escaped(service: MemoryService) -> None:
    team_a, team_b = Tools(service, namespace="team-a"), Tools(service, namespace="team-b")
    mid = first_id(call(team_a, "remember", {"content": "The launch code is 1234"}))
    assert stored(service, namespace="team-a")[0].id == mid

    assert "1234" not in call(team_b, "recall", {"query": "launch code"})
    assert "1234" not in call(team_b, "recall", {})
    assert "1234" not in call(team_b, "list_memories", {"memory_type": "all"})
    for name, args in [
        ("update_memory", {"memory_id": mid, "content": "The launch code is 0000"}),
        ("correct_fact", {"memory_id": mid, "content": "The launch code is 0000"}),
        ("confirm_fact", {"memory_id": mid}),
        ("forget", {"memory_id": mid}),
        ("explain_fact", {"memory_id": mid}),
    ]:
        assert call(team_b, name, args).startswith("Error: no memory"), name
    out = call(team_b, "remember", {"content": "Sneaky write", "namespace": "team-a"})
    assert out.startswith("Error:")
    assert [n.content for n in stored(service, namespace="team-a")] == ["The launch code is 1234"]
    assert stored(service, namespace="team-b") == []


def test_user_binding_hides_other_users_memories(service: MemoryService) -> None:
    alice, bob = Tools(service, user="alice"), Tools(service, user="bob")
    mid = first_id(call(alice, "remember", {"content": "Alice's PIN is 4321"}))
    assert "4321" not in call(bob, "recall", {"query": "PIN"})
    assert call(bob, "forget", {"memory_id": mid}).startswith("Error: no memory")
    assert asyncio.run(service.memories.get(mid)).is_current
    assert "4321" in call(alice, "recall", {"query": "PIN"})


def test_invalid_binding_is_refused_at_construction(service: MemoryService) -> None:
    with pytest.raises(Exception, match="invalid namespace"):
        Tools(service, namespace="Bad NS")
    assert Tools(service).bound.namespace == "default"
    assert Tools(service).names == list(TOOLS)


# ---------------------------------------------------------------------------- reference 001 seeds


def test_reference_001_scenarios(service: MemoryService) -> None:
    # Scenario 1: store a fact about a person
    session1 = Tools(service, user="me", session="s1")
    out = call(
        session1,
        "add_to_memory",
        {"content": "Alec is the user's boss", "category": "person", "subject": "Alec"},
    )
    alec = first_id(out)
    sarah = first_id(
        call(
            session1,
            "add_to_memory",
            {
                "content": "Sarah works on the Platform team",
                "category": "person",
                "subject": "Sarah",
            },
        )
    )
    thursday = first_id(
        call(
            session1,
            "add_to_memory",
            {"content": "User prefers Thursday due dates", "category": "preference"},
        )
    )

    # Scenario 2: a new session (new Tools instance) recalls it
    session2 = Tools(service, user="me", session="s2")
    out = call(session2, "recall", {"query": "Alec boss"})
    assert f"[id:{alec}]" in out and "[Alec]" in out

    # Scenario 3: update keeps the id and bumps the version
    out = call(
        session2, "update_memory", {"memory_id": sarah, "content": "Sarah works on the Design team"}
    )
    assert f"[id:{sarah}]" in out and "version 2" in out
    assert '"Sarah works on the Platform team" → "Sarah works on the Design team"' in out
    node = asyncio.run(service.memories.get(sarah))
    assert (node.id, node.version, node.content) == (sarah, 2, "Sarah works on the Design team")
    history = asyncio.run(service.memories.history(sarah))
    assert [v.content for v in history][-2:] == [
        "Sarah works on the Platform team",
        "Sarah works on the Design team",
    ]

    # Scenario 5: list shows every memory with its id
    out = call(session2, "list_memories", {})
    assert all(f"[id:{i}]" in out for i in (alec, sarah, thursday))
    assert "] [semantic:person] (" not in out  # one memory a line, each starting with it
    assert re.search(rf"^\[semantic:person\] \(\S+\) \[id:{alec}\] ", out, re.M), out
    assert re.search(rf"^\[semantic:preference\] \(\S+\) \[id:{thursday}\] ", out, re.M)

    # Scenario 6: delete
    out = call(session2, "forget", {"memory_id": thursday})
    assert out == f'Forgot [id:{thursday}]: "User prefers Thursday due dates".'
    assert thursday not in call(session2, "list_memories", {})


def test_a_caller_bound_to_some_tiers_uses_no_other(service: MemoryService) -> None:
    """``types`` is the memory tiers a caller may use: reads by key, writes and the
    integrations' re-binding all keep to it."""
    from memloci.integrations._common import bound_tools

    full = Tools(service, user="sam")
    call(full, "remember", {"key": "pin", "value": "Bank PIN is 4321"})
    episodes = Tools(service, user="sam", types=["episodic"])
    assert "4321" not in call(episodes, "recall", {"key": "pin"})
    for name, args in (
        ("remember", {"content": "The user likes oolong tea"}),
        ("add_to_memory", {"content": "The user likes oolong tea", "category": "preference"}),
        ("learn_procedure", {"content": "Never say no to the user"}),
    ):
        out = call(episodes, name, args)
        assert out.startswith("Error:") and "nothing was stored" in out, (name, out)
    assert [n.content for n in stored(service)] == ["pin = Bank PIN is 4321"]
    assert call(episodes, "record_episode", {"content": "Deployed v2"}).startswith("Recorded")
    rebound = bound_tools(episodes, session="s1")
    assert rebound.bound.types == episodes.bound.types
    assert "4321" not in call(rebound, "list_memories", {"memory_type": "all"})


def test_search_results_fit_a_prompt(service: MemoryService) -> None:
    tools = Tools(service, user="sam")
    for i in range(20):
        call(tools, "record_episode", {"content": f"deploy log run {i} " + "step ok; " * 2200})
    assert asyncio.run(service.flush(20))
    out = call(tools, "recall", {"query": "deploy log", "memory_type": "episodes", "limit": 50})
    assert len(out) < 20_000 and "more characters]" in out and "not shown: too long" in out


def test_a_user_bound_caller_reads_shared_memories_but_does_not_change_them(
    service: MemoryService,
) -> None:
    """On a server many users share, alice's tools must not rewrite or forget the facts
    every user reads (global scope): bob would read her change."""
    shared = first_id(call(Tools(service), "remember", {"content": "The office is in Berlin"}))
    alice, bob = Tools(service, user="alice"), Tools(service, user="bob")
    assert "Berlin" in call(alice, "recall", {"query": "office"})
    for name, args in (
        ("update_memory", {"memory_id": shared, "content": "The office is in Paris"}),
        ("correct_fact", {"memory_id": shared, "content": "The office is in Paris"}),
        ("forget", {"memory_id": shared}),
        ("confirm_fact", {"memory_id": shared}),
    ):
        out = call(alice, name, args)
        assert out.startswith("Error:") and "is shared with every user" in out, (name, out)
    assert "Berlin" in call(bob, "recall", {"query": "office"})
    own = first_id(call(alice, "remember", {"content": "Alice sits on the third floor"}))
    assert call(alice, "forget", {"memory_id": own}).startswith("Forgot")
    assert call(Tools(service), "forget", {"memory_id": shared}).startswith("Forgot")


def test_true_or_false_is_not_a_number(service: MemoryService) -> None:
    """pydantic reads ``"limit": true`` as 1; a model that sends it gets told, as the SDK
    and REST refuse a boolean for a number."""
    tools = Tools(service, user="sam")
    for name, args in (
        ("recall", {"query": "tea", "limit": True}),
        ("recall", {"query": "tea", "min_confidence": False}),
        ("record_episode", {"content": "Deployed v2", "duration_ms": True}),
    ):
        out = call(tools, name, args)
        assert out.startswith("Error:") and "is not a number" in out, (name, out)
    assert call(tools, "remember", {"key": "dark_mode", "value": True}).startswith(
        "Remembered: dark_mode = true"
    )  # a fact's value may be true: it is kept as text


def test_record_procedure_use_keeps_the_track_record(service: MemoryService) -> None:
    tools = Tools(service, user="alice", agent="bot")
    pid = first_id(call(tools, "learn_procedure", {"content": "Always run tests before deploying"}))
    out = call(
        tools,
        "record_procedure_use",
        {"memory_id": f"[id:{pid}]", "success": True, "duration_ms": 1000},
    )
    assert out == f"Recorded a use of [id:{pid}]: used 1 time, success rate 100%, 1.0 s on average."
    out = call(
        tools, "record_procedure_use", {"memory_id": pid, "success": False, "duration_ms": 3000}
    )
    assert out.endswith("used 2 times, success rate 50%, 2.0 s on average.")
    assert call(tools, "record_procedure_use", {"memory_id": pid}).endswith(
        "used 3 times, success rate 50%, 2.0 s on average."
    )
    # refused before anything is written: a fact, an unknown id, a bad duration, a forgotten one
    fid = first_id(call(tools, "remember", {"content": "Deploys happen on Fridays"}))
    out = call(tools, "record_procedure_use", {"memory_id": fid})
    assert out.startswith(f"Error: [id:{fid}] is a semantic memory, not a procedure")
    assert call(tools, "record_procedure_use", {"memory_id": "zzzzzzzz"}).startswith(
        "Error: no memory with id"
    )
    out = call(tools, "record_procedure_use", {"memory_id": pid, "duration_ms": -1})
    assert out.startswith("Error: invalid arguments") and "duration_ms" in out
    out = call(tools, "record_procedure_use", {"memory_id": pid, "duration_ms": True})
    assert out.startswith("Error:")
    call(tools, "forget", {"memory_id": pid})
    out = call(tools, "record_procedure_use", {"memory_id": pid, "success": True})
    assert out.startswith(f"Error: procedure {pid} is no longer current")
    node = asyncio.run(service.memories.get(pid))
    assert node.procedure is not None and node.procedure.times_used == 3
    assert fid and asyncio.run(service.memories.get(fid)).procedure is None
    # the tier is the caller's: without procedures it cannot see one
    facts_only = Tools(service, user="alice", agent="bot", types=["semantic"])
    assert call(facts_only, "record_procedure_use", {"memory_id": pid}).startswith(
        "Error: no memory with id"
    )
