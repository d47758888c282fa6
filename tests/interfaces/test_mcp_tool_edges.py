"""Agent tools at their edges, through the MCP server and the dispatcher every agent loop
uses: what a bound caller may learn once another user forgets, numbers JSON should not
hold, results that must stay a readable size, and descriptions the model relies on."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client
from mcp.types import CallToolResult
from mcp_helpers import first_id, stored, text

from memloci.config import Settings
from memloci.interfaces.mcp import build_server
from memloci.providers.fake import FakeEmbedder
from memloci.service import MemoryService
from memloci.service.compose import build_service
from memloci.tools import TOOLS, Tools
from memloci.tools.render import RESULT_CHARS


@pytest.fixture
def service(db_path: str) -> Iterator[MemoryService]:
    svc = build_service(Settings(path=db_path), embedder=FakeEmbedder())
    yield svc
    svc.close()


def mcp_calls(service: MemoryService, user: str, calls: list[tuple[str, Any]]) -> list[Any]:
    """Each ``(tool, arguments)`` through an MCP server bound to ``user``."""

    async def scenario() -> list[CallToolResult]:
        async with Client(build_server(service, user=user)) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return asyncio.run(scenario())


def test_an_entity_only_a_forgotten_memory_of_another_user_names_stays_hidden(
    service: MemoryService,
) -> None:
    """u1 tells the agent about their doctor, then forgets it. The entity and its summary
    (drawn from u1's words) must not reach u2 — by name, alias or id."""
    u1 = Tools(service, user="u1")
    secret = asyncio.run(u1.call("remember", {"content": "Dr. Miles Dyson treats my ulcer"}))
    doctor = asyncio.run(
        service.records.save_entity(
            "Miles Dyson", type="person", aliases=["Milo"], summary="u1's ulcer doctor"
        )
    )
    asyncio.run(service.records.link_entities(first_id(secret), [doctor.id]))
    assert "ulcer doctor" in asyncio.run(u1.call("get_entity_info", {"name": "Milo"}))
    forgot = asyncio.run(u1.call("forget", {"memory_id": first_id(secret)}))
    assert forgot.startswith("Forgot")

    asks = [{"name": "Miles Dyson"}, {"name": "Milo"}, {"name": doctor.id}]
    results = mcp_calls(service, "u2", [("get_entity_info", a) for a in asks])
    results.append(
        mcp_calls(service, "u2", [("search_memory", {"query": "doctor", "entity_name": "Milo"})])[0]
    )
    for result in results:
        assert "ulcer" not in text(result), text(result)
    assert "Miles" not in text(results[1]) + text(results[2])
    for result in results[:3]:
        assert result.is_error and text(result).startswith("Error: no entity"), text(result)
    # u1 still sees what their own (forgotten) words gave it
    assert "ulcer doctor" in asyncio.run(u1.call("get_entity_info", {"name": "Miles Dyson"}))


@pytest.mark.parametrize("duration", ["Infinity", "-Infinity", "NaN", "1e999"])
def test_record_episode_refuses_a_duration_json_cannot_hold(
    service: MemoryService, duration: str
) -> None:
    """Python's JSON reader takes ``Infinity``; stored, it made the export unimportable
    (``Infinity`` is not JSON) and read back as null over REST. Refused, nothing written."""
    arguments = f'{{"content": "Deployed v2 to staging", "duration_ms": {duration}}}'
    answer = asyncio.run(Tools(service).call("record_episode", arguments))
    assert answer.startswith("Error: invalid arguments for record_episode: duration_ms"), answer
    assert stored(service) == []


def test_episode_details_with_a_non_finite_number_are_refused_by_the_service(
    service: MemoryService,
) -> None:
    from memloci.errors import ValidationError
    from memloci.models import EpisodeDetails

    details = EpisodeDetails(duration_ms=float("inf"), outcome={"success": True})
    with pytest.raises(ValidationError, match="non-finite"):
        asyncio.run(service.memories.record_episode("Deployed v2 to staging", details=details))
    assert stored(service) == []


def test_explain_fact_stays_readable_for_a_long_history(service: MemoryService) -> None:
    """A key an agent rewrites every session gathers hundreds of versions, a fact
    corrected again and again a long chain: explain_fact shows the newest, says how many
    more there are, and stays within a tool result's size (as search results do)."""
    tools = Tools(service, user="sam")
    padding = "x" * 380
    first = asyncio.run(
        tools.call("remember", {"key": "current_task", "value": f"task 0 {padding}"})
    )
    memory_id = first_id(first)
    for i in range(1, 80):
        asyncio.run(tools.call("remember", {"key": "current_task", "value": f"task {i} {padding}"}))
    newest = first_id(first)
    for i in range(40):
        answer = asyncio.run(
            tools.call(
                "correct_fact", {"memory_id": newest, "content": f"Sam's rank is {i} {padding}"}
            )
        )
        newest = first_id(answer)

    (history, chain) = mcp_calls(
        service,
        "sam",
        [("explain_fact", {"memory_id": memory_id}), ("explain_fact", {"memory_id": newest})],
    )
    for result in (history, chain):
        assert not result.is_error, text(result)
        assert len(text(result)) <= RESULT_CHARS, len(text(result))
    assert "task 79" in text(history) and "80 versions" in text(history), text(history)[:600]
    assert "not shown" in text(chain) and "Sam's rank is 38" in text(chain)


def test_search_memory_says_what_it_searches_when_no_type_is_given(
    service: MemoryService,
) -> None:
    """Its description promised "facts, procedures and past episodes", but like recall it
    searches facts unless ``type`` says otherwise: a model following the description got
    no episode back. The description now says so, and the documented ``type`` works."""
    tools = Tools(service)
    asyncio.run(tools.call("record_episode", {"content": "The deploy of v2 failed with OOM"}))
    by_default = asyncio.run(tools.call("search_memory", {"query": "deploy OOM"}))
    assert "failed with OOM" not in by_default
    description = TOOLS["search_memory"].description
    assert "past episodes" not in description.split("type")[0], description
    assert "facts" in description and "type" in description, description
    for kind in ("episodes", "all"):
        found = asyncio.run(tools.call("search_memory", {"query": "deploy OOM", "type": kind}))
        assert "failed with OOM" in found, found


def test_recall_says_when_a_faded_fact_holds_the_answer(service: MemoryService) -> None:
    """A fact that faded below recall's default ``min_confidence`` (0.5) is still stored:
    "Nothing is stored under the key" made the model tell the user it never heard of it.
    recall says a weaker fact holds it, and how to see it; as the listing already did."""
    from memloci.storage.base import NodePatch

    tools = Tools(service, user="sam")
    saved = asyncio.run(
        tools.call("remember", {"key": "passport", "value": "X1234567 (expires 2031)"})
    )
    service.store.memories.update_node("default", first_id(saved), NodePatch(confidence=0.3))

    by_key, by_query, shown = mcp_calls(
        service,
        "sam",
        [
            ("recall", {"key": "passport"}),
            ("search_memory", {"query": "passport"}),
            ("recall", {"key": "passport", "min_confidence": 0}),
        ],
    )
    assert not text(by_key).startswith("Nothing is stored"), text(by_key)
    for result in (by_key, by_query):
        assert "below" in text(result) and "min_confidence=0" in text(result), text(result)
    assert "X1234567" in text(shown)


def test_arguments_nested_too_deeply_are_bad_input_not_a_failure(
    service: MemoryService, caplog: pytest.LogCaptureFixture
) -> None:
    """OpenAI sends arguments as JSON text; text nested 100,000 deep made the reader
    recurse out: "failed unexpectedly … Try again later" and a traceback in the log, for
    input the model can fix."""
    deep = '{"content": ' + "[" * 100_000 + "]" * 100_000 + "}"
    answer = asyncio.run(Tools(service).call("remember", deep))
    assert answer.startswith("Error: remember: arguments are not valid JSON"), answer
    assert "unexpectedly" not in answer and "again later" not in answer
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    assert stored(service) == []


def test_the_look_for_faded_facts_does_not_reinforce_them(service: MemoryService) -> None:
    """recall's extra look below ``min_confidence`` is not shown to the model: the faded
    facts it finds are not counted as accessed (a search's hits are)."""
    from memloci.storage.base import NodePatch

    tools = Tools(service, user="sam")
    saved = asyncio.run(tools.call("remember", {"content": "Sam's passport expires in 2031"}))
    mid = first_id(saved)
    service.store.memories.update_node("default", mid, NodePatch(confidence=0.3))
    answer = asyncio.run(tools.call("search_memory", {"query": "passport"}))
    assert "below" in answer
    assert service.worker is not None
    service.worker.flush()
    node = service.store.memories.get_node("default", mid)
    assert node is not None and node.access_count == 0 and node.confidence == 0.3


def test_a_long_listing_stays_under_the_result_size(service: MemoryService) -> None:
    """``list_memories`` at limit 100 of long facts was some 34,000 characters; a list is
    cut to the size a search result is, and says how many more there are."""
    tools = Tools(service, user="sam")
    for i in range(100):
        asyncio.run(
            tools.call("remember", {"content": f"Fact {i:03d} about the garden: " + "roses " * 60})
        )
    out = asyncio.run(tools.call("list_memories", {"limit": 100}))
    assert len(out) <= RESULT_CHARS + 200, len(out)
    shown = out.count("\n[semantic:")
    assert 10 < shown < 100
    assert f"({100 - shown} more not shown: too long" in out
