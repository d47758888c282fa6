"""The isolation matrix over the agent tools: every tool (enumerated from ``TOOLS``),
called through the SDK's dispatcher (``memory.tools``) and through the real MCP client
over HTTP with an API key, bound to team-b / user u2, with arguments aimed at team-a's
and at u1's records (their ids, their entities, words from their facts). No answer may
show a team-a marker or a u1 marker, and team-a is left exactly as it was.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from matrix import NAMESPACES, USERS, Seeded, leaked, marker, seed, sent_strings
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from memloci import Memory
from memloci.tools import TOOLS, Tools

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interfaces"))
from rest_server import client, running

pytestmark = pytest.mark.reliability
A, B = NAMESPACES
TEXT = "The teal bicycle probe keeps its own words here"


def calls(targets: list[Seeded]) -> list[tuple[str, dict[str, Any]]]:
    """Every tool with arguments aimed at each target's records: reads first, then
    writes, and ``forget`` last."""
    out: list[tuple[str, dict[str, Any]]] = []
    for name in TOOLS:
        props = _schema(name)
        variants: list[dict[str, Any]] = []
        for t in targets:
            args: dict[str, Any] = {}
            if "memory_id" in props:
                args["memory_id"] = t.fact
            if "name" in props:
                args["name"] = t.entity
            if "query" in props:
                args["query"] = "teal bicycle garage"
            if "content" in props:
                args["content"] = TEXT
            if "category" in props and "enum" in props["category"]:
                args["category"] = props["category"]["enum"][0]
            variants.append(args)
            if "name" in props:  # the entity by its name too (a name is text it may echo)
                variants.append({"name": f"{t.mark.title()} Cycles"})
            if "key" in props:
                variants.append({"key": "bicycle"})
        for args in variants:
            out.append((name, args))
    order = {n: i for i, n in enumerate(TOOLS)}
    return sorted(out, key=lambda c: (not TOOLS[c[0]].read_only, c[0] == "forget", order[c[0]]))


def _schema(name: str) -> dict[str, Any]:
    from memloci.tools import mcp_tools

    (spec,) = [t for t in mcp_tools() if t.name == name]
    props: dict[str, Any] = spec.input_schema.get("properties", {})
    return props


def forbid(findings: list[str], how: str, name: str, args: dict[str, Any], answer: str,
           forbidden: list[str]) -> None:  # fmt: skip
    found = leaked(answer, forbidden, sent_strings(args))
    if found:
        findings.append(f"{how} {name}({args}) shows {found}: {answer[:300]}")


def export(mem: Memory, namespace: str) -> list[str]:
    return sorted(mem.service.admin.export_lines(namespace, vectors=False))[1:]


@pytest.fixture
def world(mem: Memory) -> Iterator[tuple[str, dict[tuple[str, str], Seeded]]]:
    with running(mem.service) as base:
        with client(base) as http:
            seeded = {(ns, u): seed(http, ns, u) for ns in NAMESPACES for u in USERS}
        yield base, seeded


def test_agent_and_mcp_tools_keep_namespaces_and_users_apart(
    mem: Memory, world: tuple[str, dict[tuple[str, str], Seeded]]
) -> None:
    base, seeded = world
    targets = [seeded[(A, "u1")], seeded[(A, "u2")], seeded[(B, "u1")]]
    forbidden = [marker(A, u) for u in USERS] + [marker(B, "u1")]
    probes = calls(targets)
    assert {name for name, _ in probes} == set(TOOLS)
    before = sorted(line for line in export(mem, A) if '"exported_at"' not in line)
    findings: list[str] = []

    # 1. the SDK's dispatcher, bound by the host application
    tools = Tools(mem.service, namespace=B, user="u2", agent="helper")
    shown = 0
    for name, args in probes:
        answer = mem._call(tools.call(name, args))
        forbid(findings, "tools", name, args, answer, forbidden)
        shown += marker(B, "u2") in answer
    # 2. MCP over HTTP, with a key bound to team-b
    _, secret = mem._call(mem.service.keys.create_key("team-b", [B]))
    url = f"{base}/mcp/?namespace={B}&user=u2"

    async def over_mcp() -> list[tuple[str, dict[str, Any], str]]:
        answers = []
        headers = {"Authorization": f"Bearer {secret}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http)) as mcp,
        ):
            listed = {t.name for t in (await mcp.list_tools()).tools}
            assert listed == set(TOOLS)
            for name, args in probes:
                result = await mcp.call_tool(name, args)
                block = result.content[0]
                assert isinstance(block, TextContent)
                answers.append((name, args, block.text))
        return answers

    for name, args, answer in asyncio.run(over_mcp()):
        forbid(findings, "mcp", name, args, answer, forbidden)
    refused = httpx.post(
        f"{base}/mcp/?namespace={A}", json={}, timeout=10,
        headers={"Authorization": f"Bearer {secret}"},
    )  # fmt: skip
    assert refused.status_code == 403 and not leaked(refused.text, forbidden)

    assert not findings, "\n".join(findings)
    after = sorted(line for line in export(mem, A) if '"exported_at"' not in line)
    assert after == before, "team-a changed"
    assert shown > 0, "u2's own memories never showed: the probes did not reach data"
    print(
        f"\nisolation matrix (tools): {len(TOOLS)} tools, {len(probes)} calls each through "
        f"the SDK dispatcher and MCP over HTTP ({2 * len(probes)} probes), 0 leaks"
    )
