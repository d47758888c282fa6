"""Reference 001's versioned memory over real HTTP: ``POST /api/memory/`` says whether it
created (201) or only confirmed (200, with what was not applied), takes the reference's
four categories only, ``updated_at`` is set from version 1, and ``limit`` is validated
as its description says."""

from __future__ import annotations

import re

import httpx

from memloci import Memory


def test_create_then_the_same_memory_again_is_a_confirmation(http: httpx.Client) -> None:
    body = {"content": "Alec is the user's boss", "category": "person", "subject": "Alec"}
    created = http.post("/api/memory/", json=body)
    assert created.status_code == 201, created.text
    first = created.json()
    assert first["action"] == "created" and first["version"] == 1

    again = http.post("/api/memory/", json=body)
    assert again.status_code == 200, again.text
    same = again.json()
    assert same["action"] == "confirmed" and same["id"] == first["id"]
    assert "nothing new was created" in same["message"]


def test_a_confirmation_says_which_requested_fields_were_not_applied(
    http: httpx.Client, mem: Memory
) -> None:
    first = http.post(
        "/api/memory/", json={"content": "The user works at TechCorp", "category": "context"}
    ).json()
    again = http.post(
        "/api/memory/",
        json={"content": "The user works at TechCorp", "category": "project", "subject": "work"},
    )
    assert again.status_code == 200
    data = again.json()
    assert data["id"] == first["id"] and data["category"] == "context"
    assert "category 'project' was not applied" in data["message"]
    assert "subject 'work' was not applied" in data["message"]
    assert mem.count(type="semantic") == 1


def test_only_the_four_categories(http: httpx.Client, mem: Memory) -> None:
    for category in ("person", "preference", "context", "project"):
        r = http.post(
            "/api/memory/", json={"content": f"A {category} memory", "category": category}
        )
        assert r.status_code == 201, r.text
    r = http.post("/api/memory/", json={"content": "Some other memory", "category": "misc"})
    assert r.status_code == 400
    assert "category" in r.json()["error"]["message"]
    assert mem.count(type="semantic") == 4


def test_updated_at_is_set_on_version_1(http: httpx.Client) -> None:
    created = http.post(
        "/api/memory/", json={"content": "Sarah leads design", "category": "person"}
    ).json()
    assert created["updated_at"] == created["created_at"]
    listed = http.get("/api/memory/").json()["memories"][0]
    assert listed["updated_at"] == listed["created_at"]
    got = http.get(f"/api/memory/{created['id']}").json()
    assert got["updated_at"] == got["created_at"]
    updated = http.put(
        f"/api/memory/{created['id']}", json={"content": "Sarah leads research"}
    ).json()
    assert updated["version"] == 2 and updated["updated_at"] > updated["created_at"]


def test_limit_is_validated_as_described(http: httpx.Client) -> None:
    spec = http.get("/openapi.json").json()
    params = spec["paths"]["/api/memory/"]["get"]["parameters"]
    (limit,) = [p for p in params if p["name"] == "limit"]
    lo, hi = map(int, re.fullmatch(r"(\d+)–(\d+)", limit["description"]).groups())  # type: ignore[union-attr]
    for value in (lo, hi):
        assert http.get("/api/memory/", params={"limit": value}).status_code == 200
    for value in (lo - 1, hi + 1):
        r = http.get("/api/memory/", params={"limit": value})
        assert r.status_code == 400 and "limit" in r.json()["error"]["message"]
