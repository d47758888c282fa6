"""An export taken while agents keep writing (``GET /api/v1/export`` on a live server)
still imports back whole: every record it holds refers only to records it holds, and no
thread is lost or written twice because another one changed meanwhile.

The export streams lines from ``MemoryService.admin.export_lines`` (the route sends them as they
come); the tests step that same iterator and write over real HTTP between two lines, at
the points where a write used to tear the file: after the memories were read and before
their versions and edges, and between two pages of threads.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator

import httpx

from memloci import Memory

NDJSON = {"Content-Type": "application/x-ndjson"}


def _turns(http: httpx.Client, session: str, count: int) -> None:
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} of {session}"}
        for i in range(count)
    ]
    r = http.post("/api/v1/turns/", json={"messages": messages, "user": "sam", "session": session})
    assert r.status_code == 201, r.text


def _until(lines: Iterator[str], kind: str, count: int) -> list[str]:
    """Lines up to and including the ``count``-th line of ``kind``."""
    taken, seen = [], 0
    for line in lines:
        taken.append(line)
        if json.loads(line)["kind"] == kind:
            seen += 1
            if seen == count:
                return taken
    raise AssertionError(f"the export has fewer than {count} {kind} lines")


def _import(http: httpx.Client, lines: list[str], namespace: str) -> dict[str, int]:
    body = "".join(line + "\n" for line in lines).encode()
    r = http.post("/api/v1/import", params={"namespace": namespace}, content=body, headers=NDJSON)
    assert r.status_code == 200, r.text
    result: dict[str, int] = r.json()
    return result


def test_turns_written_while_exporting_leave_an_export_that_imports(
    http: httpx.Client, mem: Memory
) -> None:
    _turns(http, "before", 450)
    lines = mem.service.admin.export_lines("default")
    taken = _until(lines, "node", 450)  # every memory of the namespace has been read
    _turns(http, "before", 3)  # the same conversation goes on: edges to exported turns
    fact = http.post("/api/v1/facts/", json={"content": "Sam moved to Porto last spring"})
    assert fact.status_code == 201, fact.text
    taken += list(lines)

    nodes = [json.loads(x)["node"] for x in taken if json.loads(x)["kind"] == "node"]
    assert len(nodes) == 450
    result = _import(http, taken, "restored")  # ids held elsewhere: copied under new ones
    assert result["nodes"] == 450 and result["versions"] == 450 and result["edges"] == 449
    listed = http.get("/api/v1/episodes/", params={"namespace": "restored", "limit": 1000})
    assert sorted(m["content"] for m in listed.json()["items"]) == sorted(
        n["content"] for n in nodes
    )


def test_a_thread_changed_while_exporting_is_neither_lost_nor_doubled(
    http: httpx.Client, mem: Memory
) -> None:
    ids = [f"chat-{i:03d}" for i in range(260)]
    for thread in ids:
        r = http.post(
            f"/api/v1/checkpoints/{thread}/messages",
            json={"messages": [{"role": "user", "content": f"hello from {thread}"}]},
        )
        assert r.status_code == 200, r.text
    lines = mem.service.admin.export_lines("default")
    taken = _until(lines, "thread", 1)  # the first page of threads has been read
    # the oldest thread (last page) gets a new message: it moves to the front
    r = http.post(
        f"/api/v1/checkpoints/{ids[0]}/messages",
        json={"messages": [{"role": "assistant", "content": "a late reply"}]},
    )
    assert r.status_code == 200, r.text
    taken += list(lines)

    exported = Counter(json.loads(x)["id"] for x in taken if json.loads(x)["kind"] == "thread")
    assert sorted(exported) == sorted(ids)
    assert set(exported.values()) == {1}
    assert _import(http, taken, "restored")["threads"] == len(ids)
