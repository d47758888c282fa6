"""POST /api/v1/context/report over real HTTP: the block /context gives, with how it was
composed (sections, items and why, the hits left out), for the reader the body names,
and bad input refused as the server refuses it elsewhere."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from rest_server import client, running
from test_rest_errors import assert_error_shape

from memloci import Memory

PROMPT = "What should I feed Rex tonight?"


def _fact(http: httpx.Client, content: str, **extra: object) -> str:
    r = http.post("/api/v1/facts/", json={"content": content, **extra})
    assert r.status_code == 201, r.text
    mid: str = r.json()["memory"]["id"]
    return mid


@pytest.fixture
def seeded(http: httpx.Client) -> dict[str, str]:
    """Sam's facts and a conversation about his dog, and one fact of another user."""
    ids = {
        "rex": _fact(http, "Sam's dog is called Rex", category="person", user="sam"),
        "lisbon": _fact(http, "Sam lives in Lisbon", category="context", user="sam"),
        "pu": _fact(http, "Pu keeps a secret jar of oolong tea", category="preference", user="pu"),
    }
    turns = [
        {"role": "user", "content": "What should I feed Rex tonight?"},
        {"role": "assistant", "content": "Rex likes salmon with rice."},
    ]
    r = http.post("/api/v1/turns/", json={"messages": turns, "user": "sam"})
    assert r.status_code == 201, r.text
    ids["question"], ids["answer"] = (e["id"] for e in r.json())
    return ids


def _items(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for section in report["sections"] for item in section["items"]]


def test_the_report_shows_how_the_block_was_composed(
    http: httpx.Client, seeded: dict[str, str]
) -> None:
    body = {"prompt": PROMPT, "user": "sam", "budget": 1000}
    r = http.post("/api/v1/context/report", json=body)
    assert r.status_code == 200, r.text
    report = r.json()
    assert set(report) == {
        "block",
        "cacheable",
        "dynamic",
        "budget",
        "tokens",
        "threshold",
        "sections",
        "left_out",
    }
    # the same block /context gives, and the same token count
    plain = http.post("/api/v1/context", json=body).json()
    assert report["block"] == plain["context"] and report["tokens"] == plain["tokens"]
    assert report["block"].startswith(report["cacheable"])
    assert report["budget"] == 1000 and 0 < report["tokens"] <= 1000
    assert 0 < report["threshold"] <= 1

    sections = {s["title"]: s for s in report["sections"]}
    memory = sections["## Your Memory"]
    assert memory["cacheable"] is True and memory["tokens"] > 0
    assert {i for item in memory["items"] for i in item["memory_ids"]} == {
        seeded["rex"],
        seeded["lisbon"],
    }
    # the prompt brings up the conversation about Rex, in a section after the cacheable
    # part, each item with its score (at or above the threshold) and why it is there
    dynamic = [s for s in report["sections"] if not s["cacheable"]]
    assert dynamic, report["sections"]
    turns = [item for s in dynamic for item in s["items"]]
    assert seeded["question"] in {i for item in turns for i in item["memory_ids"]}
    for item in turns:
        assert item["score"] >= report["threshold"] and item["why"] and item["tokens"] > 0
    # every line of every item is in the block as the agent gets it
    for item in _items(report):
        for line in item["lines"]:
            assert line in report["block"], line
    # hits left out score below the threshold, and say so
    for item in report["left_out"]:
        assert item["score"] < report["threshold"]
        assert "below the relevance threshold" in item["why"]
    # another user's fact is nowhere in Sam's report
    assert seeded["pu"] not in r.text and "oolong" not in r.text


def test_without_a_prompt_only_the_cacheable_part(
    http: httpx.Client, seeded: dict[str, str]
) -> None:
    report = http.post("/api/v1/context/report", json={"user": "sam"}).json()
    assert report["dynamic"] == "" and report["left_out"] == []
    assert [s["cacheable"] for s in report["sections"]] == [True]
    assert report["block"] == report["cacheable"]
    default = http.post("/api/v1/context", json={"user": "sam"}).json()
    assert report["block"] == default["context"]


def test_the_namespace_is_the_query_parameter(http: httpx.Client, seeded: dict[str, str]) -> None:
    r = http.post(
        "/api/v1/facts/",
        params={"namespace": "other"},
        json={"content": "Lena's cat is called Mochi", "category": "person"},
    )
    assert r.status_code == 201, r.text
    other = http.post("/api/v1/context/report", params={"namespace": "other"}, json={}).json()
    assert "Mochi" in other["block"] and "Rex" not in other["block"]
    default = http.post("/api/v1/context/report", json={}).json()
    assert "Rex" in default["block"] and "Mochi" not in default["block"]


BAD = [
    ({"budget": -5}, {}),
    ({"budget": 0}, {}),
    ({"budget": 10**20}, {}),
    ({"budget": "500"}, {}),
    ({"budget": True}, {}),
    ({"prompt": 5}, {}),
    ({"user": " "}, {}),
    ({"promt": "typo in the field name"}, {}),
    ({"prompt": "shed"}, {"namespace": "not a namespace!"}),
]


@pytest.mark.parametrize(("body", "params"), BAD)
def test_bad_input_is_a_400_with_the_error_body(
    http: httpx.Client, body: dict[str, Any], params: dict[str, str]
) -> None:
    r = http.post("/api/v1/context/report", json=body, params=params)
    assert_error_shape(r, 400, "invalid_input")


def test_keys_guard_the_report_as_they_guard_context(mem: Memory) -> None:
    mem.remember("Team A's launch code is in the blue binder", namespace="team-a")
    _, secret = mem._call(mem.service.keys.create_key("team-b", ["team-b"]))
    with running(mem.service) as base:
        with client(base) as anon:
            assert_error_shape(anon.post("/api/v1/context/report", json={}), 401, "unauthorized")
        with client(base, secret) as team_b:
            other = team_b.post("/api/v1/context/report", params={"namespace": "team-a"}, json={})
            assert_error_shape(other, 403)
            assert "blue binder" not in other.text
            own = team_b.post("/api/v1/context/report", params={"namespace": "team-b"}, json={})
            assert own.status_code == 200, own.text
            assert "blue binder" not in own.text


def test_the_openapi_document_describes_the_report(http: httpx.Client) -> None:
    spec = http.get("/openapi.json").json()
    op = spec["paths"]["/api/v1/context/report"]["post"]
    assert op["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/ContextRequest"
    )
    ok = op["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok["$ref"].endswith("/ContextReport")
    assert {"400", "401", "403"} <= set(op["responses"])
    report = spec["components"]["schemas"]["ContextReport"]
    assert {"block", "budget", "tokens", "threshold", "sections", "left_out"} <= set(
        report["properties"]
    )
