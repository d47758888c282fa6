"""The OpenAPI document and the server agree where the fuzz run once found them apart:
``POST /api/v1/entities/{id}/links`` with no memory ids (the schema wants at least one)
is a 400 that links nothing, and ``after`` / ``before`` take exactly the forms the
schema states (empty is no bound: ``GET /api/v1/facts/?after=`` is a 200). The fuzz run
(tests/reliability/test_fuzz_api.py) checks the rest with every check on."""

from __future__ import annotations

from typing import Any

import httpx
from test_rest_errors import assert_error_shape

from memloci import Memory


def test_linking_no_memories_is_a_400_as_the_schema_says(mem: Memory, http: httpx.Client) -> None:
    fact = mem.remember("Sam moved to Lisbon", user="sam").memory
    entity = http.post("/api/v1/entities/", json={"name": "Lisbon"}).json()
    spec = http.get("/openapi.json").json()
    links = spec["components"]["schemas"]["LinksBody"]["properties"]["memory_ids"]
    assert links["minItems"] == 1
    url = f"/api/v1/entities/{entity['id']}/links"
    body = assert_error_shape(http.post(url, json={"memory_ids": []}), 400, "invalid_input")
    assert "memory_ids" in body["message"]
    view = f"/api/v1/entities/{entity['id']}"
    assert http.get(view).json()["memories"] == []
    assert http.post(url, json={"memory_ids": [fact.id]}).status_code == 200
    assert len(http.get(view).json()["memories"]) == 1


def _after_schema(spec: dict[str, Any]) -> dict[str, Any]:
    params = spec["paths"]["/api/v1/facts/"]["get"]["parameters"]
    return next(p["schema"] for p in params if p["name"] == "after")


def test_after_and_before_take_exactly_what_the_schema_states(
    mem: Memory, http: httpx.Client
) -> None:
    mem.remember("Sam likes green tea", user="sam")
    schema = _after_schema(http.get("/openapi.json").json())
    kinds = {a.get("format") or a.get("type") for a in schema["anyOf"]}
    assert kinds == {"string", "date", "date-time", "null"}
    for value in ("", "last_week", "today", "7d", "2w", "12h", "2024-05-01",
                  "2024-05-01T10:00:00Z", "2024-05-01T10:00:00.5+02:00"):  # fmt: skip
        r = http.get("/api/v1/facts/", params={"after": value, "before": value or None})
        assert r.status_code == 200, (value, r.text)
    assert http.get("/api/v1/facts/", params={"after": ""}).json()["total"] == 1
    for value in ("junk", "2024-02-30", "2024-05-01T10:00", "Last Week", " 7d"):
        body = assert_error_shape(http.get("/api/v1/facts/", params={"after": value}), 400)
        assert "cannot read time" in body["message"] and "last_week" in body["hint"]
    r = http.post("/api/v1/search", json={"query": "tea", "after": "", "before": "today"})
    assert r.status_code == 200, r.text
    assert_error_shape(http.post("/api/v1/search", json={"query": "tea", "after": "x"}), 400)


def test_an_empty_cursor_is_the_first_page(mem: Memory, http: httpx.Client) -> None:
    for i in range(3):
        mem.remember(f"fact number {i} about tea", user="sam")
    first = http.get("/api/v1/facts/", params={"limit": 2}).json()
    blank = http.get("/api/v1/facts/", params={"limit": 2, "cursor": ""}).json()
    assert [m["id"] for m in blank["items"]] == [m["id"] for m in first["items"]]


def test_blank_text_is_blank_for_the_schema_and_the_server_alike(
    mem: Memory, http: httpx.Client
) -> None:
    """The fuzz run once sent an alias of U+001C and tabs: the server strips it to
    nothing (400), so the schema must call it blank too, for every whitespace
    character ``str.strip()`` removes and in any regex engine (no bare ``\\s``)."""
    import re

    spec = http.get("/openapi.json").json()
    aliases = spec["components"]["schemas"]["EntityCreate"]["properties"]["aliases"]
    alias = next(a for a in aliases.get("anyOf", [aliases]) if a.get("type") == "array")["items"]
    assert "\\s" not in alias["pattern"]
    spaces = [chr(c) for c in range(0x110000) if chr(c).isspace()]
    for ch in spaces:
        assert not re.match(alias["pattern"], f"\t{ch} "), hex(ord(ch))
        assert re.match(alias["pattern"], f"{ch}x{ch}"), hex(ord(ch))
    assert re.match(alias["pattern"], "\ufeff")  # not stripped, so not blank
    blank = "\f \n\t\f \x1c\t  \f\t\x0b\r\f\f"
    r = http.post("/api/v1/entities/", json={"name": "Lisbon", "aliases": [blank]})
    assert_error_shape(r, 400, "invalid_input")
    assert http.get("/api/v1/entities/").json()["total"] == 0


def test_an_empty_patch_is_refused_by_the_schema_and_the_server(
    mem: Memory, http: httpx.Client
) -> None:
    """The fuzz run sent ``PATCH /api/v1/facts/ID {}``: the server answers 400 "nothing
    to update", so the schema asks for at least one field."""
    fact = mem.remember("Sam likes green tea", user="sam").memory
    spec = http.get("/openapi.json").json()
    assert spec["components"]["schemas"]["NodeUpdate"]["minProperties"] == 1
    body = assert_error_shape(http.patch(f"/api/v1/facts/{fact.id}", json={}), 400)
    assert "nothing to update" in body["message"]
    assert mem.get(fact.id).version == 1


def test_search_takes_type_as_one_value_or_a_list_in_both_forms(
    mem: Memory, http: httpx.Client
) -> None:
    """``POST /search`` takes ``type`` (and ``scope``, ``category``) as a string, as
    ``GET /search?type=`` does, or as a list; the schema says both."""
    mem.remember("Sam drinks green tea every morning", user="sam")
    mem.add("Sam and I talked about green tea", user="sam")
    spec = http.get("/openapi.json").json()
    prop = spec["components"]["schemas"]["SearchRequest"]["properties"]["type"]
    kinds = [a.get("type") for a in prop["anyOf"]]
    assert kinds == ["string", "array", "null"]
    assert prop["anyOf"][0]["enum"] == prop["anyOf"][1]["items"]["enum"]
    ids = {}
    for form in ("semantic", ["semantic"]):
        r = http.post("/api/v1/search", json={"query": "green tea", "user": "sam", "type": form})
        assert r.status_code == 200, r.text
        ids[str(form)] = [h["memory"]["id"] for h in r.json()["hits"]]
        assert {h["memory"]["type"] for h in r.json()["hits"]} == {"semantic"}
    got = http.get("/api/v1/search", params={"q": "green tea", "user": "sam", "type": "semantic"})
    assert ids["semantic"] == ids["['semantic']"] == [h["memory"]["id"] for h in got.json()["hits"]]
    assert ids["semantic"]  # the fact was found
    both = {"query": "green tea", "user": "sam", "type": "semantic", "scope": "user"}
    assert http.post("/api/v1/search", json=both).status_code == 200
    for bad in ([], "planet", ["semantic", "planet"], 3):
        r = http.post("/api/v1/search", json={"query": "tea", "type": bad})
        assert_error_shape(r, 400)
