"""The MCP server through the official client: in process, over real streamable HTTP
(``memloci serve`` in a subprocess, and in-process uvicorn for the API keys), and over
stdio (``memloci mcp`` in a subprocess). Fake embedder throughout."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent
from mcp_helpers import first_id, stored, text
from rest_server import free_port, running

from memloci import Memory
from memloci.config import Settings
from memloci.interfaces.mcp import build_server
from memloci.providers.fake import FakeEmbedder
from memloci.service import MemoryService
from memloci.service.compose import build_service
from memloci.tools import TOOLS, Tools, mcp_tools

T = TypeVar("T")
FACT = "Sam's greyhound is called Pixel"
CLI = [sys.executable, "-m", "memloci.interfaces.cli"]


@pytest.fixture
def service(db_path: str) -> Iterator[MemoryService]:
    svc = build_service(Settings(path=db_path), embedder=FakeEmbedder())
    yield svc
    svc.close()


def run(scenario: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(scenario())


async def round_trip(client: Client) -> tuple[str, str]:
    """``remember`` then ``recall``: ``(id, recall text)``."""
    saved = await client.call_tool("remember", {"content": FACT, "key": "dog_name"})
    assert not saved.is_error, text(saved)
    assert text(saved).startswith("Remembered [id:")
    memory_id = first_id(text(saved))
    found = await client.call_tool("recall", {"query": "greyhound"})
    assert not found.is_error, text(found)
    assert f"[id:{memory_id}]" in text(found) and "Pixel" in text(found)
    return memory_id, text(found)


def assert_lists_every_tool(listed: list[Any]) -> None:
    by_name = {t.name: t for t in listed}
    expected = mcp_tools()
    assert list(by_name) == [t.name for t in expected]
    for spec in expected:
        tool = by_name[spec.name]
        assert tool.description == spec.description
        assert tool.input_schema == spec.input_schema
        assert tool.annotations.read_only_hint is TOOLS[spec.name].read_only


# ---------------------------------------------------------------------- in process
def test_lists_every_tool_with_its_exact_schema(service: MemoryService) -> None:
    async def scenario() -> list[Any]:
        async with Client(build_server(service)) as client:
            return list((await client.list_tools()).tools)

    assert_lists_every_tool(run(scenario))


def test_remember_then_recall_bound_to_the_user(service: MemoryService) -> None:
    async def scenario() -> str:
        async with Client(build_server(service, user="sam", agent="helper")) as client:
            memory_id, _ = await round_trip(client)
            return memory_id

    memory_id = run(scenario)
    (node,) = stored(service)
    assert node.id == memory_id and node.content == FACT
    assert node.user == "sam" and node.key == "dog_name"


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("remember", {"content": ""}),
        ("remember", {"content": FACT, "user": "someone-else"}),
        ("remember", {}),
        ("forget", {"memory_id": "nope"}),
        ("update_memory", {"memory_id": "a1B2c3D4", "content": "The dog is called Bit"}),
        ("learn_procedure", {"content": 42}),
        ("no_such_tool", {}),
    ],
)
def test_bad_calls_are_error_results_and_write_nothing(
    service: MemoryService, name: str, arguments: dict[str, Any]
) -> None:
    async def scenario() -> tuple[CallToolResult, str]:
        async with Client(build_server(service)) as client:
            result = await client.call_tool(name, arguments)
        return result, await Tools(service).call(name, arguments)

    result, direct = run(scenario)
    assert result.is_error
    assert text(result).startswith("Error:")
    assert text(result) == direct  # the same message as every other agent loop
    assert stored(service) == []


def test_invalid_binding_is_refused_when_building(service: MemoryService) -> None:
    from memloci.errors import ValidationError

    with pytest.raises(ValidationError):
        build_server(service, namespace="Not A Namespace")


def test_memory_stats_counts_only_what_the_bound_caller_sees(service: MemoryService) -> None:
    """Bound to u2, ``memory_stats`` never reports u1's memories or entities (MCP and the
    SDK's tools alike); unbound, it reports the namespace."""

    async def scenario() -> tuple[str, str, str, str]:
        svc = service
        for i in range(3):
            await svc.memories.remember(f"u1 private fact number {i} about Sarah", user="u1")
        await svc.memories.add("u1 talks about Sarah and the locker", user="u1")
        sarah = await svc.records.save_entity("Sarah", type="person")
        u1_fact = (await svc.memories.list_nodes(svc.filter(owner_user="u1", type="semantic")))[0]
        await svc.records.link_entities(u1_fact.id, [sarah.id])
        await svc.memories.remember("u2 likes green tea", user="u2")
        await svc.memories.remember("The office is in Lisbon")  # shared (global)
        async with Client(build_server(service, user="u2")) as client:
            bound = text(await client.call_tool("memory_stats", {}))
        sdk_bound = await Tools(service, user="u2").call("memory_stats")
        owner = await Tools(service, user="u1").call("memory_stats")
        return bound, sdk_bound, owner, await Tools(service).call("memory_stats")

    bound, sdk_bound, owner, unbound = run(scenario)
    assert "1 episodic, 4 semantic current" in owner and "1 entity mentioned" in owner, owner
    assert bound == sdk_bound
    assert "2 semantic current (2 including forgotten)" in bound, bound
    assert "episodic" not in bound and "0 entities" in bound, bound
    assert "users" not in bound and "Storage size" not in bound
    assert "1 episodic, 5 semantic current" in unbound, unbound
    assert "1 entities" in unbound or "1 entity" in unbound


# ---------------------------------------------------------------------- HTTP, API keys
@asynccontextmanager
async def _keyed(url: str, key: str) -> AsyncIterator[Client]:
    """A client sending ``Authorization: Bearer <key>`` (the caller owns the HTTP client)."""
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=20) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def test_http_respects_api_keys_and_namespaces(mem: Memory) -> None:
    svc = mem.service
    _, writer = mem._call(svc.keys.create_key("writer", ["team-a", "team-b"]))
    _, reader = mem._call(svc.keys.create_key("reader", ["team-a"], write=False))
    with running(svc) as base:
        url = f"{base}/mcp/"
        refused = httpx.post(url, json={}, timeout=10)
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == "unauthorized"
        assert refused.headers["www-authenticate"].startswith("Bearer")
        wrong = httpx.post(url, json={}, headers={"Authorization": "Bearer nope"}, timeout=10)
        assert wrong.status_code == 401
        other = httpx.post(
            f"{url}?namespace=team-c", json={}, headers={"Authorization": f"Bearer {writer}"}
        )
        assert other.status_code == 403 and other.json()["error"]["code"] == "forbidden"
        blank = httpx.post(
            f"{url}?user=%20", json={}, headers={"Authorization": f"Bearer {writer}"}
        )
        assert blank.status_code == 400 and blank.json()["error"]["code"] == "invalid_input"
        for empty in ("user=", "agent=", "namespace=team-a&user=", "user=a&user=b"):
            # an unfilled template must not drop the binding, nor a second ?user= move it
            unbound = httpx.post(
                f"{url}?{empty}", json={}, headers={"Authorization": f"Bearer {writer}"}
            )
            assert unbound.status_code == 400, empty
            assert unbound.json()["error"]["code"] == "invalid_input"

        async def scenario() -> tuple[str, str, str]:
            async with _keyed(f"{url}?user=sam", writer) as client:  # first namespace: team-a
                memory_id, _ = await round_trip(client)
            async with _keyed(f"{url}?namespace=team-b", writer) as client:
                elsewhere = text(await client.call_tool("list_memories", {}))
            async with _keyed(url, reader) as client:
                seen = text(await client.call_tool("recall", {"query": "greyhound"}))
                denied = await client.call_tool("forget", {"memory_id": memory_id})
                assert denied.is_error
            return seen, elsewhere, text(denied)

        seen, elsewhere, denied = run(scenario)
    assert "Pixel" in seen
    assert "Pixel" not in elsewhere
    assert denied.startswith("Error: this API key may not write namespace 'team-a'")
    (node,) = stored(svc, namespace="team-a")
    assert node.user == "sam" and node.is_current
    assert stored(svc) == [] and stored(svc, namespace="team-b") == []


# ---------------------------------------------------------------------- HTTP guards
INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "probe", "version": "1"}},
}  # fmt: skip
ACCEPT = {"Accept": "application/json, text/event-stream"}


def _error(r: httpx.Response, status: int, code: str) -> str:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    return str(body["error"]["message"])


def test_http_answers_the_same_hosts_as_the_rest_api(mem: Memory) -> None:
    """One host check (the REST app's) for /mcp too, and every refusal in the JSON error
    shape — not the SDK's 421 for a Host without a port, nor its plain-text errors."""
    with running(mem.service) as base:
        url = f"{base}/mcp/"
        port = base.rsplit(":", 1)[1]
        for host in ("127.0.0.1", "localhost", f"127.0.0.1:{port}", f"localhost:{port}"):
            r = httpx.post(url, json=INIT, headers={**ACCEPT, "Host": host}, timeout=10)
            assert r.status_code == 200, (host, r.text)
            assert httpx.get(f"{base}/api/v1/stats", headers={"Host": host}).status_code == 200
        r = httpx.post(url, json=INIT, headers={**ACCEPT, "Host": "rebind.example"})
        _error(r, 421, "misdirected_request")
        evil = {"Origin": "http://evil.example"}
        _error(httpx.options(url, headers=evil), 403, "forbidden")
        _error(httpx.get(url, headers={**ACCEPT, **evil}), 403, "forbidden")
        _error(httpx.post(url, json=INIT, headers={**ACCEPT, **evil}), 403, "forbidden")
        _error(httpx.post(url, json=INIT, headers={**ACCEPT, "Sec-Fetch-Site": "cross-site"}),
               403, "forbidden")  # fmt: skip
        # the SDK's own plain-text refusals get the one shape
        assert "Content-Type" in _error(httpx.post(url), 400, "invalid_input")
        r = httpx.get(url, headers={"MCP-Protocol-Version": "2026-07-28"})  # an empty 405
        _error(r, 405, "method_not_allowed")
        assert r.headers["allow"] == "POST"
    assert stored(mem.service) == []


def test_a_standalone_http_app_has_the_same_guards(service: MemoryService) -> None:
    """``http_app(service)`` outside the REST app: the same Host, Origin and size checks."""
    from memloci.interfaces.mcp import http_app

    async def scenario() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=http_app(service))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            return [
                await c.post("/", json=INIT, headers={"Host": "rebind.example"}),
                await c.post("/", json=INIT, headers={"Origin": "http://evil.example"}),
                await c.post("/", content=b"x" * (service.settings.max_request_bytes + 1),
                             headers={"content-type": "application/json"}),
            ]  # fmt: skip

    host, origin, size = run(scenario)
    _error(host, 421, "misdirected_request")
    _error(origin, 403, "forbidden")
    _error(size, 413, "request_too_large")
    assert host.headers["x-content-type-options"] == "nosniff"


# ---------------------------------------------------------------------- real servers
def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """``memloci serve`` in a subprocess; yields its base URL once /healthz answers."""
    port = free_port()
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(
        [*CLI, "serve", "--db", str(tmp_path / "served.db"), "--port", str(port),
         "--embedder", "fake", "--no-maintenance", "--log-level", "warning"],
        env=_env(), stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, "memloci serve did not come up"
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


def test_streamable_http_on_the_real_server(served: str) -> None:
    async def scenario() -> list[Any]:
        async with Client(f"{served}/mcp/") as client:  # 2026 per-request protocol
            listed = list((await client.list_tools()).tools)
            await round_trip(client)
        # the 2025 handshake with a session, through the /mcp -> /mcp/ redirect
        async with Client(f"{served}/mcp", mode="legacy") as client:
            assert_lists_every_tool(list((await client.list_tools()).tools))
            found = await client.call_tool("recall", {"query": "greyhound"})
            assert "Pixel" in text(found)
        return listed

    assert_lists_every_tool(run(scenario))
    facts = httpx.get(f"{served}/api/v1/facts/", timeout=10)
    assert facts.status_code == 200 and FACT in facts.text


def test_stdio_memloci_mcp(tmp_path: Path) -> None:
    db = tmp_path / "stdio.db"
    params = StdioServerParameters(
        command=sys.executable,
        args=[*CLI[1:], "mcp", "--db", str(db), "--embedder", "fake", "--user", "sam"],
        env=_env(),
    )

    async def scenario() -> list[Any]:
        with (tmp_path / "mcp.log").open("w") as errlog:
            from mcp.client.stdio import stdio_client

            async with Client(stdio_client(params, errlog=errlog)) as client:
                listed = list((await client.list_tools()).tools)
                await round_trip(client)
        return listed

    assert_lists_every_tool(run(scenario))
    with Memory(str(db), embedder=FakeEmbedder()) as m:
        (node,) = m.list(include_forgotten=True)
    assert node.content == FACT and node.user == "sam"


def test_piped_requests_are_all_answered_when_stdin_ends(tmp_path: Path) -> None:
    """``printf '<initialize><remember><recall>' | memloci mcp``: the input ends while
    the calls run; every request gets its answer before the server exits, none the
    SDK's "Connection closed", and the write is stored."""
    import json

    db = tmp_path / "piped.db"
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "printf", "version": "1"},
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "remember", "arguments": {"content": FACT}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {"query": "greyhound"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "remember", "arguments": {"content": "Sam plays the cello"}},
        },
    ]
    piped = "".join(json.dumps(line) + "\n" for line in lines)
    done = subprocess.run(
        [*CLI, "mcp", "--db", str(db), "--embedder", "fake", "--user", "sam"],
        input=piped,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == [1, 2, 3, 4], done.stdout
    assert all("error" not in a for a in answers.values()), done.stdout
    assert "Remembered" in answers[2]["result"]["content"][0]["text"]
    assert answers[2]["result"]["isError"] is False
    assert "isError" in answers[3]["result"]  # recall ran (it may or may not see the fact)
    with Memory(str(db), embedder=FakeEmbedder()) as m:
        contents = sorted(n.content for n in m.list(include_forgotten=True))
    assert contents == sorted([FACT, "Sam plays the cello"])


def test_a_procedure_use_is_recorded_over_mcp(service: MemoryService) -> None:
    pid = asyncio.run(
        service.memories.learn_procedure("Always run the tests before deploying")
    ).memory.id

    async def scenario() -> str:
        async with Client(build_server(service, user="sam", agent="helper")) as client:
            done = await client.call_tool(
                "record_procedure_use", {"memory_id": pid, "success": True, "duration_ms": 800}
            )
            assert not done.is_error, text(done)
            return text(done)

    assert run(scenario) == (
        f"Recorded a use of [id:{pid}]: used 1 time, success rate 100%, 0.8 s on average."
    )
    node = asyncio.run(service.memories.get(pid))
    assert node.procedure is not None and node.procedure.avg_duration_ms == 800


def test_docs_list_every_tool() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text()
    for name in TOOLS:
        assert f"| `{name}` |" in docs, f"{name} missing from docs/mcp.md"


def test_the_http_server_refuses_a_call_without_its_request(service: MemoryService) -> None:
    """Over HTTP a call acts as its request's key and parameters allow; one that came
    without them (in process, no HTTP request attached) is refused, never run unbound."""

    async def scenario() -> CallToolResult:
        async with Client(build_server(service, http=True)) as client:
            return await client.call_tool("remember", {"content": FACT})

    result = run(scenario)
    assert result.is_error
    text = result.content[0]
    assert isinstance(text, TextContent) and "without an authenticated HTTP request" in text.text
    assert stored(service) == []
