"""REST API over real HTTP: facts, episodes, procedures, /api/memory/, search, context,
provenance, stats, export/import and the chat command."""

from __future__ import annotations

import httpx
import pytest

from memloci import Memory


def _fact(http: httpx.Client, content: str, **extra: object) -> dict:
    r = http.post("/api/v1/facts/", json={"content": content, **extra})
    assert r.status_code == 201, r.text
    return r.json()


def test_health_root_and_openapi(http: httpx.Client) -> None:
    assert http.get("/healthz").json()["status"] == "ok"
    r = http.get("/", follow_redirects=False)
    assert r.status_code in (302, 307) and r.headers["location"] == "/memories"
    paths = http.get("/openapi.json").json()["paths"]
    for path in (
        "/api/v1/facts/", "/api/v1/facts/{memory_id}", "/api/v1/facts/batch-delete/",
        "/api/v1/episodes/", "/api/v1/procedures/", "/api/v1/turns/", "/api/v1/search",
        "/api/v1/context", "/api/v1/stats", "/api/v1/export", "/api/v1/import",
        "/api/v1/memories/{memory_id}/explain", "/api/memory/", "/api/memory/{memory_id}",
        "/api/v1/memory-users/", "/api/v1/memory-users/{user_id}/merge", "/api/v1/checkpoints/",
        "/api/v1/entities/", "/api/v1/entities/{entity_id}/graph", "/api/v1/keys/",
    ):  # fmt: skip
        assert path in paths, path


def test_fact_lifecycle(http: httpx.Client, mem: Memory) -> None:
    created = _fact(http, "Sam prefers green tea", category="preference", user="sam")
    assert created["action"] == "created"
    mid = created["memory"]["id"]
    again = _fact(http, "Sam prefers green tea", category="preference", user="sam")
    assert again["action"] == "confirmed" and again["memory"]["id"] == mid

    detail = http.get(f"/api/v1/facts/{mid}").json()
    assert detail["memory"]["content"] == "Sam prefers green tea"
    assert [v["version"] for v in detail["versions"]] == [1]

    r = http.patch(f"/api/v1/facts/{mid}", json={"content": "Sam prefers jasmine tea"})
    assert r.status_code == 200 and r.json()["memory"]["version"] == 2
    versions = http.get(f"/api/v1/facts/{mid}").json()["versions"]
    assert [v["content"] for v in versions] == ["Sam prefers green tea", "Sam prefers jasmine tea"]

    assert http.post(f"/api/v1/facts/{mid}/confirm").json()["action"] == "confirmed"
    fixed = http.post(f"/api/v1/facts/{mid}/correct", json={"content": "Sam prefers oolong"})
    new_id = fixed.json()["memory"]["id"]
    assert new_id != mid
    explained = http.get(f"/api/v1/memories/{new_id}/explain").json()
    assert [n["id"] for n in explained["supersedes"]] == [mid]

    listing = http.get("/api/v1/facts/", params={"user": "sam"}).json()
    assert [m["id"] for m in listing["items"]] == [new_id] and listing["total"] == 1
    with_old = http.get("/api/v1/facts/", params={"include_forgotten": True}).json()
    assert {m["id"] for m in with_old["items"]} == {mid, new_id}

    assert http.delete(f"/api/v1/facts/{new_id}").json() == {
        "id": new_id, "deleted": True, "hard": False,
    }  # fmt: skip
    assert http.get(f"/api/v1/facts/{new_id}").json()["memory"]["valid_until"] is not None
    assert http.delete(f"/api/v1/facts/{new_id}", params={"hard": True}).status_code == 200
    assert http.get(f"/api/v1/facts/{new_id}").status_code == 404


def test_list_filters_and_paging(http: httpx.Client) -> None:
    for i in range(5):
        _fact(http, f"Project fact number {i}", category="project")
    _fact(http, "Alec is the user's boss", category="person", subject="Alec")
    page = http.get("/api/v1/facts/", params={"category": "project", "limit": 2, "offset": 2})
    body = page.json()
    assert body["total"] == 5 and body["limit"] == 2 and body["offset"] == 2
    assert len(body["items"]) == 2
    people = http.get("/api/v1/facts/", params={"category": "person"}).json()
    assert [m["subject"] for m in people["items"]] == ["Alec"]


def test_kinds_are_kept_apart(http: httpx.Client) -> None:
    ep = http.post("/api/v1/episodes/", json={"content": "Deployed v2 to staging", "session": "s1"})
    assert ep.status_code == 201
    eid = ep.json()["memory"]["id"]
    assert http.get(f"/api/v1/facts/{eid}").status_code == 404
    assert http.get(f"/api/v1/episodes/{eid}").status_code == 200
    r = http.post("/api/v1/facts/batch-delete/", json={"ids": [eid]})
    assert r.status_code == 404
    assert http.get(f"/api/v1/episodes/{eid}").json()["memory"]["valid_until"] is None


def test_batch_delete_is_all_or_nothing(http: httpx.Client, mem: Memory) -> None:
    ids = [_fact(http, f"Batch fact {i} here")["memory"]["id"] for i in range(3)]
    r = http.post("/api/v1/facts/batch-delete/", json={"ids": [ids[0], "zzzzzzzz"]})
    assert r.status_code == 404 and r.json()["error"]["details"]["missing"] == ["zzzzzzzz"]
    assert mem.count(type="semantic") == 3
    r = http.post("/api/v1/facts/batch-delete/", json={"ids": ids[:2]})
    assert r.json() == {"deleted": 2, "ids": ids[:2]}
    assert mem.count(type="semantic") == 1


def test_turns_episodes_procedures(http: httpx.Client) -> None:
    turns = http.post(
        "/api/v1/turns/",
        json={
            "messages": [
                {"role": "system", "content": "You are helpful"},
                {"role": "user", "content": "I adopted a beagle named Rex"},
                {"role": "assistant", "content": "Congratulations on Rex!"},
            ],
            "user": "sam",
            "session": "s9",
        },
    )
    assert turns.status_code == 201 and len(turns.json()) == 2
    listed = http.get("/api/v1/episodes/", params={"session": "s9"}).json()
    assert listed["total"] == 2
    proc = http.post("/api/v1/procedures/", json={"content": "Always answer in British English"})
    assert proc.status_code == 201
    procs = http.get("/api/v1/procedures/").json()
    assert procs["items"][0]["content"] == "Always answer in British English"


def test_procedure_uses(http: httpx.Client) -> None:
    proc = http.post(
        "/api/v1/procedures/",
        json={
            "content": "Always run the tests before deploying",
            "triggers": {"goal_contains": ["deploy"]},
        },
    ).json()["memory"]
    pid = proc["id"]
    r = http.post(f"/api/v1/procedures/{pid}/uses", json={"success": True, "duration_ms": 1000})
    assert r.status_code == 200, r.text
    assert r.json()["procedure"]["times_used"] == 1
    r = http.post(f"/api/v1/procedures/{pid}/uses", json={"success": False, "duration_ms": 3000})
    track = r.json()["procedure"]
    assert (track["times_used"], track["success_rate"], track["avg_duration_ms"]) == (2, 0.5, 2000)
    assert http.post(f"/api/v1/procedures/{pid}/uses", json={}).status_code == 200
    # refused before anything is written
    fact = _fact(http, "Sam prefers green tea")["memory"]["id"]
    bad = [
        (f"/api/v1/procedures/{fact}/uses", {}, 404),  # a fact is no procedure
        ("/api/v1/procedures/zzzzzzzz/uses", {}, 404),
        (f"/api/v1/procedures/{pid}/uses", {"duration_ms": -1}, 400),
        (f"/api/v1/procedures/{pid}/uses", {"success": "yes"}, 400),
        (f"/api/v1/procedures/{pid}/uses", {"success": 1}, 400),
        (f"/api/v1/procedures/{pid}/uses", {"outcome": "ok"}, 400),
    ]
    for url, body, code in bad:
        r = http.post(url, json=body)
        assert r.status_code == code, (url, body, r.text)
    assert http.get(f"/api/v1/procedures/{pid}").json()["memory"]["procedure"]["times_used"] == 3
    http.delete(f"/api/v1/procedures/{pid}")
    gone = http.post(f"/api/v1/procedures/{pid}/uses", json={"success": True})
    assert gone.status_code == 400 and "no longer current" in gone.text


def _turns(http: httpx.Client, text: str, user: str, session: str) -> list[str]:
    r = http.post(
        "/api/v1/turns/",
        json={"messages": [{"role": "user", "content": text}], "user": user, "session": session},
    )
    assert r.status_code == 201, r.text
    return [m["id"] for m in r.json()]


def test_list_owner_and_in_session_match_exactly(http: httpx.Client) -> None:
    """``user`` / ``session`` are the reader (plus shared memories); ``owner`` and
    ``in_session`` keep only what was recorded for that user / in that session."""
    s9 = _turns(http, "I adopted a beagle named Rex", "sam", "s9")
    other = _turns(http, "We talked about the garden", "ana", "s7")
    ep = http.post("/api/v1/episodes/", json={"content": "Ana planted tulips", "session": "s7"})
    other.append(ep.json()["memory"]["id"])

    def ids(kind: str, **params: str) -> set[str]:
        body = http.get(f"/api/v1/{kind}/", params=params).json()
        assert body["total"] == len(body["items"])
        return {m["id"] for m in body["items"]}

    # the reader's context: turns of scope "user" are not tied to the reader's session
    assert ids("episodes", session="s9") >= set(s9) | set(other[:1])
    assert ids("episodes", in_session="s9") == set(s9)
    assert ids("episodes", in_session="s7") == set(other)
    assert ids("episodes", in_session="zzz") == set()
    assert ids("episodes", owner="sam") == set(s9)
    assert ids("episodes", owner="sam", in_session="s7") == set()
    for body in ({"in_session": "s7"}, {"owner": "ana"}):
        found = http.post("/api/v1/search", json={"query": "garden beagle tulips", **body})
        hits = {h["memory"]["id"] for h in found.json()["hits"]}
        assert hits and hits <= set(other), body

    shared = _fact(http, "Alice says the office is in Porto", scope="global")["memory"]["id"]
    pu = _fact(http, "Pu likes oolong tea", user="pu")["memory"]["id"]
    assert ids("facts", user="nobody-at-all") == {shared}  # shared facts are visible
    assert ids("facts", owner="nobody-at-all") == set()
    assert ids("facts", owner="pu") == {pu}
    bad = http.get("/api/v1/facts/", params={"in_session": " "})
    assert bad.status_code == 400


def test_search_context_stats(http: httpx.Client) -> None:
    _fact(http, "Sam's dog is called Rex", category="person", user="sam")
    _fact(http, "Sam lives in Lisbon", category="context", user="sam")
    hits = http.post("/api/v1/search", json={"query": "dog name", "user": "sam"}).json()["hits"]
    assert hits and "Rex" in hits[0]["memory"]["content"] and hits[0]["why"]
    got = http.get("/api/v1/search", params={"q": "Lisbon"}).json()["hits"]
    assert "Lisbon" in got[0]["memory"]["content"]
    ctx = http.post("/api/v1/context", json={"prompt": "walk the dog", "user": "sam"}).json()
    assert "## Your Memory" in ctx["context"] and ctx["tokens"] > 0
    again = http.post("/api/v1/context", json={"prompt": "walk the dog", "user": "sam"}).json()
    assert again["context"] == ctx["context"]
    stats = http.get("/api/v1/stats").json()
    assert stats["current_by_type"]["semantic"] == 2


def test_export_import_round_trip(http: httpx.Client) -> None:
    ids = [_fact(http, f"Exported fact {n}")["memory"]["id"] for n in ("one", "two")]
    r = http.get("/api/v1/export")
    assert r.headers["content-type"].startswith("application/x-ndjson")
    assert len(r.text.splitlines()) >= 3
    http.post("/api/v1/facts/batch-delete/", json={"ids": ids, "hard": True})
    assert http.get("/api/v1/facts/").json()["total"] == 0
    jsonl = {"content-type": "application/x-ndjson"}
    imp = http.post("/api/v1/import", content=r.content, headers=jsonl)
    assert imp.status_code == 200 and imp.json()["nodes"] == 2
    assert http.get("/api/v1/facts/").json()["total"] == 2
    again = http.post("/api/v1/import", content=r.content, headers=jsonl).json()
    assert again["nodes"] == 0 and again["skipped"] == 2
    bad = http.post(
        "/api/v1/import", params={"namespace": "copy2"}, content=b'{"not": "jsonl', headers=jsonl
    )
    assert bad.status_code == 400
    assert http.get("/api/v1/facts/", params={"namespace": "copy2"}).json()["total"] == 0


def test_versioned_memory_api(http: httpx.Client) -> None:
    r = http.post(
        "/api/memory/",
        json={"content": "Sarah works on the Platform team", "category": "person",
              "subject": "Sarah"},
    )  # fmt: skip
    assert r.status_code == 201
    created = r.json()
    assert set(created) == {"id", "category", "subject", "content", "version", "created_at",
                            "updated_at", "action", "message"}  # fmt: skip
    mid = created["id"]
    assert len(mid) == 8 and created["version"] == 1 and created["action"] == "created"
    assert created["updated_at"] == created["created_at"]  # version 1: set, not null
    dup = http.post(
        "/api/memory/",
        json={"content": "Sarah likes climbing", "category": "person", "subject": "Sarah"},
    )
    assert dup.status_code == 409 and dup.json()["error"]["details"]["similar"] == [mid]
    upd = http.put(f"/api/memory/{mid}", json={"content": "Sarah works on the Design team"})
    assert upd.status_code == 200
    assert upd.json()["version"] == 2 and upd.json()["id"] == mid
    assert upd.json()["previous_content"] == "Sarah works on the Platform team"
    got = http.get(f"/api/memory/{mid}").json()
    assert [v["content"] for v in got["versions"]] == [
        "Sarah works on the Platform team", "Sarah works on the Design team",
    ]  # fmt: skip
    listing = http.get("/api/memory/").json()
    assert listing["total"] == 1 and listing["memories"][0]["content"].endswith("Design team")
    short = http.post("/api/memory/", json={"content": "hi", "category": "person"})
    assert short.status_code == 400
    deleted = http.delete(f"/api/memory/{mid}").json()
    assert deleted == {"id": mid, "content": "Sarah works on the Design team", "deleted": True}
    assert http.get(f"/api/memory/{mid}").status_code == 404
    assert http.get("/api/memory/").json()["total"] == 0


def test_chat_command_endpoint(http: httpx.Client) -> None:
    _fact(http, "Alec is the user's boss", category="person")
    r = http.post("/api/v1/chat-command", json={"text": "/memory"}).json()
    assert r["command"] is True and "Alec is the user's boss" in r["answer"]
    assert http.post("/api/v1/chat-command", json={"text": "hello"}).json() == {
        "command": False, "answer": None,
    }  # fmt: skip


def test_history_and_maintain(http: httpx.Client, mem: Memory) -> None:
    mid = _fact(http, "Maintenance keeps things tidy")["memory"]["id"]
    hist = http.get(f"/api/v1/memories/{mid}/history").json()
    assert hist["memory"]["id"] == mid and len(hist["versions"]) == 1
    report = http.post("/api/v1/maintain").json()
    assert "started" in report
    assert http.get("/api/v1/stats").json()["last_maintenance"] is not None


CREATE = {
    "facts": {"content": "Generic fact for CRUD"},
    "episodes": {"content": "Generic episode for CRUD", "session": "crud"},
    "procedures": {"content": "Generic procedure for CRUD"},
}


@pytest.mark.parametrize("kind", sorted(CREATE))
def test_every_kind_has_full_crud(http: httpx.Client, kind: str) -> None:
    ids = []
    for n in range(3):
        body = {**CREATE[kind], "content": f"{CREATE[kind]['content']} {n}"}
        r = http.post(f"/api/v1/{kind}/", json=body)
        assert r.status_code == 201, r.text
        ids.append(r.json()["memory"]["id"])
    assert http.get(f"/api/v1/{kind}/").json()["total"] == 3
    got = http.get(f"/api/v1/{kind}/{ids[0]}").json()
    assert got["memory"]["id"] == ids[0]
    upd = http.patch(f"/api/v1/{kind}/{ids[0]}", json={"content": f"Changed {kind} content"})
    assert upd.status_code == 200 and upd.json()["memory"]["version"] == 2
    assert http.delete(f"/api/v1/{kind}/{ids[0]}").status_code == 200
    done = http.post(f"/api/v1/{kind}/batch-delete/", json={"ids": ids[1:]}).json()
    assert done["deleted"] == 2
    assert http.get(f"/api/v1/{kind}/").json()["total"] == 0
    assert http.patch(f"/api/v1/{kind}/{ids[0]}", json={}).status_code in (400, 404)


def test_facts_list_by_confidence_descending(http: httpx.Client) -> None:
    for text, conf in (("Sam owns a red kayak", 0.6), ("Sam has two cats", 0.9)):
        _fact(http, text, confidence=conf)
    _fact(http, "Sam dislikes onions", confidence=0.3)
    items = http.get("/api/v1/facts/", params={"order": "-confidence"}).json()["items"]
    assert [m["confidence"] for m in items] == [0.9, 0.6, 0.3]
    bad = http.get("/api/v1/facts/", params={"order": "sideways"})
    assert bad.status_code == 400 and "-confidence" in bad.json()["error"]["hint"]
