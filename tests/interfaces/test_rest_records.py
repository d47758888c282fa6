"""REST API over real HTTP: memory users (with merge), checkpoints/threads, entities."""

from __future__ import annotations

import json
from datetime import datetime

import httpx

from memloci import Memory


def test_memory_users_crud_and_merge(http: httpx.Client, mem: Memory) -> None:
    r = http.post(
        "/api/v1/memory-users/",
        json={"id": "telegram:12345", "display_name": "Sam", "identifiers": {"telegram": "12345"}},
    )
    assert r.status_code == 201 and r.json()["display_name"] == "Sam"
    http.post(
        "/api/v1/memory-users/",
        json={"id": "email:sam@example.com", "identifiers": {"email": "sam@example.com"}},
    )
    http.post("/api/v1/memory-users/", json={"id": "someone-else"})
    listing = http.get("/api/v1/memory-users/", params={"q": "sam"}).json()
    assert listing["total"] == 2
    upd = http.patch("/api/v1/memory-users/telegram:12345", json={"preferences": {"tz": "UTC"}})
    assert upd.json()["preferences"] == {"tz": "UTC"} and upd.json()["display_name"] == "Sam"

    mem.remember("Sam writes in email a lot", user="email:sam@example.com")
    merged = http.post(
        "/api/v1/memory-users/email:sam@example.com/merge", json={"into": "telegram:12345"}
    ).json()
    assert merged["id"] == "telegram:12345"
    assert merged["identifiers"] == {"telegram": "12345", "email": "sam@example.com"}
    assert http.get("/api/v1/memory-users/email:sam@example.com").json()["merged_into"] == (
        "telegram:12345"
    )
    assert mem.count(owner="telegram:12345") == 1

    bad = http.post("/api/v1/memory-users/batch-delete/", json={"ids": ["someone-else", "ghost"]})
    assert bad.status_code == 404
    assert http.get("/api/v1/memory-users/someone-else").status_code == 200
    ok = http.post("/api/v1/memory-users/batch-delete/", json={"ids": ["someone-else"]})
    assert ok.json()["deleted"] == 1
    assert http.delete("/api/v1/memory-users/email:sam@example.com").json()["deleted"] == 1
    assert http.get("/api/v1/memory-users/").json()["total"] == 1


def test_checkpoints(http: httpx.Client) -> None:
    r = http.post(
        "/api/v1/checkpoints/sam:chat1:agent/messages",
        json={
            "messages": [
                {"role": "system", "content": "be nice"},
                {"role": "user", "content": "hello"},
                {"role": "assistant", "content": "hi there"},
            ],
            "user": "sam",
            "agent": "helper",
        },
    )
    assert r.status_code == 200, r.text
    thread = r.json()
    assert [m["role"] for m in thread["messages"]] == ["user", "assistant"]
    http.post(
        "/api/v1/checkpoints/other/messages",
        json={"messages": [{"role": "user", "content": "x"}], "user": "bob"},
    )
    listing = http.get("/api/v1/checkpoints/", params={"user": "sam"}).json()
    assert [t["id"] for t in listing["items"]] == ["sam:chat1:agent"]
    assert http.get("/api/v1/threads/sam:chat1:agent").json()["user"] == "sam"
    assert (
        http.post(
            "/api/v1/checkpoints/batch-delete/", json={"ids": ["other", "missing"]}
        ).status_code
        == 404
    )
    assert http.get("/api/v1/checkpoints/other").status_code == 200
    assert http.delete("/api/v1/checkpoints/other").json()["deleted"] == 1
    assert http.get("/api/v1/checkpoints/").json()["total"] == 1


def test_entities_and_graph(http: httpx.Client, mem: Memory) -> None:
    r = http.post(
        "/api/v1/entities/", json={"name": "Sarah", "type": "person", "aliases": ["Sarah K."]}
    )
    assert r.status_code == 201
    sarah = r.json()
    acme = http.post("/api/v1/entities/", json={"name": "Acme", "type": "organization"}).json()
    fact = mem.remember("Sarah works at Acme", category="person").memory
    mem._call(mem.service.records.link_entities(fact.id, [sarah["id"], acme["id"]]))

    listing = http.get("/api/v1/entities/", params={"type": "person"}).json()
    assert [e["canonical_name"] for e in listing["items"]] == ["Sarah"]
    assert http.get("/api/v1/entities/", params={"q": "sarah k"}).json()["total"] == 1
    info = http.get(f"/api/v1/entities/{sarah['id']}").json()
    assert [m["id"] for m in info["memories"]] == [fact.id]
    assert [x["entity"]["canonical_name"] for x in info["related"]] == ["Acme"]
    graph = http.get(f"/api/v1/entities/{sarah['id']}/graph").json()
    ids = {n["id"] for n in graph["nodes"]}
    assert {sarah["id"], acme["id"], fact.id} <= ids
    assert all(link["source"] in ids and link["target"] in ids for link in graph["links"])

    upd = http.patch(f"/api/v1/entities/{sarah['id']}", json={"summary": "Design lead"})
    assert upd.json()["summary"] == "Design lead" and upd.json()["id"] == sarah["id"]
    assert (
        http.post(
            "/api/v1/entities/batch-delete/", json={"ids": [acme["id"], "nope1234"]}
        ).status_code
        == 404
    )
    assert (
        http.post("/api/v1/entities/batch-delete/", json={"ids": [acme["id"]]}).json()["deleted"]
        == 1
    )
    assert http.delete(f"/api/v1/entities/{sarah['id']}").json()["deleted"] == 1
    assert http.get("/api/v1/entities/").json()["total"] == 0


def test_records_are_namespaced(http: httpx.Client) -> None:
    http.post("/api/v1/memory-users/", params={"namespace": "other"}, json={"id": "sam"})
    http.post("/api/v1/entities/", params={"namespace": "other"}, json={"name": "Secret"})
    http.post(
        "/api/v1/checkpoints/t1/messages",
        params={"namespace": "other"},
        json={"messages": [{"role": "user", "content": "hidden"}]},
    )
    for path in ("/api/v1/memory-users/", "/api/v1/entities/", "/api/v1/checkpoints/"):
        assert http.get(path).json()["total"] == 0
        assert http.get(path, params={"namespace": "other"}).json()["total"] == 1
    assert http.get("/api/v1/memory-users/sam").status_code == 404
    assert http.get("/api/v1/checkpoints/t1").status_code == 404


def test_entity_links_over_rest(http: httpx.Client, mem: Memory) -> None:
    ent = http.post("/api/v1/entities/", json={"name": "Lisbon", "type": "place"}).json()
    # names no known entity (a fact naming one is linked to it in the background)
    fact = mem.remember("Sam moved abroad in 2023", category="context").memory
    bad = http.post(
        f"/api/v1/entities/{ent['id']}/links", json={"memory_ids": [fact.id, "zz99zz99"]}
    )
    assert bad.status_code == 404
    assert http.get(f"/api/v1/entities/{ent['id']}").json()["memories"] == []
    ok = http.post(f"/api/v1/entities/{ent['id']}/links", json={"memory_ids": [fact.id]})
    assert [m["id"] for m in ok.json()["memories"]] == [fact.id]


def test_namespaces_listing(http: httpx.Client, mem: Memory) -> None:
    mem.remember("A fact in team one", namespace="team-one")
    mem.remember("A fact in team two", namespace="team-two")
    assert {"team-one", "team-two"} <= set(http.get("/api/v1/namespaces").json())


def test_ids_with_a_slash_are_reachable(http: httpx.Client, mem: Memory) -> None:
    """A user or thread id may hold "/" (the SDK, turns and checkpoints write such ids):
    every path that names one reaches it, percent-encoded (%2F) or not."""
    assert http.post("/api/v1/memory-users/", json={"id": "mail/sam"}).status_code == 201
    http.post("/api/v1/turns/", json={"messages": [{"role": "user", "content": "hi"}],
                                      "user": "mail/sam"})  # fmt: skip
    mem.remember("mail/sam prefers short answers", user="mail/sam")
    for path in ("/api/v1/memory-users/mail%2Fsam", "/api/v1/memory-users/mail/sam"):
        r = http.get(path)
        assert r.status_code == 200 and r.json()["id"] == "mail/sam", r.text
    r = http.patch("/api/v1/memory-users/mail%2Fsam", json={"display_name": "Sam"})
    assert r.status_code == 200 and r.json()["display_name"] == "Sam"
    # a double-encoded id is another (unknown) id: 404, never a 200 that did nothing
    unknown = http.post("/api/v1/memory-users/mail%252Fsam/forget")
    assert unknown.status_code == 404, unknown.text
    assert "mail%2Fsam" in unknown.json()["error"]["message"]
    assert mem.count(owner="mail/sam") == 2
    report = http.post("/api/v1/memory-users/mail%2Fsam/forget")
    assert report.status_code == 200, report.text
    assert (report.json()["user"], report.json()["memories"], report.json()["users"]) == (
        "mail/sam", 2, 1,
    )  # fmt: skip
    assert mem.count(owner="mail/sam", include_forgotten=True) == 0
    assert http.get("/api/v1/memory-users/mail%2Fsam").status_code == 404
    http.post("/api/v1/memory-users/", json={"id": "a/b"})
    http.post("/api/v1/memory-users/", json={"id": "c/d"})
    merged = http.post("/api/v1/memory-users/a/b/merge", json={"into": "c/d"})
    assert merged.status_code == 200 and merged.json()["id"] == "c/d", merged.text
    assert http.delete("/api/v1/memory-users/c%2Fd").json() == {"deleted": 1, "ids": ["c/d"]}

    body = {"messages": [{"role": "user", "content": "hello"}], "user": "mail/sam"}
    r = http.post("/api/v1/checkpoints/mail%2Fsam%7Cchat/messages", json=body)
    assert r.status_code == 200 and r.json()["id"] == "mail/sam|chat", r.text
    assert http.get("/api/v1/checkpoints/mail%2Fsam%7Cchat").json()["message_count"] == 1
    assert http.get("/api/v1/threads/mail/sam|chat").status_code == 200
    assert http.delete("/api/v1/checkpoints/mail%2Fsam%7Cchat").json()["deleted"] == 1


def test_export_and_import_carry_entities_threads_and_sessions(
    http: httpx.Client, mem: Memory
) -> None:
    """The JSON Lines backup over REST holds the records beside the memories too; an
    import into another namespace copies them (entities under ids of their own), twice
    adds nothing, and two unmerged users with one channel id are a 409."""
    mem.add("Remember that my boss is Dana Whitfield", user="u1", session="s1", speaker="user")
    mem.consolidate()
    mem._call(
        mem.service.records.append_messages("t1", [{"role": "user", "content": "hi"}], user="u1")
    )
    body = http.get("/api/v1/export").content
    kinds = {json.loads(line)["kind"] for line in body.decode().splitlines()}
    assert {"entity", "link", "thread", "session"} <= kinds
    ndjson = {"content-type": "application/x-ndjson"}
    first = http.post("/api/v1/import?namespace=copy", content=body, headers=ndjson).json()
    assert first["entities"] >= 1 and first["links"] >= 1
    assert (first["threads"], first["sessions"]) == (1, 1)
    again = http.post("/api/v1/import?namespace=copy", content=body, headers=ndjson).json()
    assert (again["entities"], again["links"], again["threads"], again["sessions"]) == (0, 0, 0, 0)
    copied = http.get("/api/v1/entities/", params={"namespace": "copy"}).json()
    names = [e["canonical_name"] for e in copied.get("items", copied)]
    assert "Dana Whitfield" in names
    users = [
        {"kind": "header", "format": "memloci", "version": 1},
        *({"kind": "user", "id": u, "identifiers": {"telegram": "555"},
           "created_at": "2024-01-01T00:00:00Z"} for u in ("alice", "bob")),
    ]  # fmt: skip
    clash = http.post(
        "/api/v1/import", content="\n".join(json.dumps(u) for u in users), headers=ndjson
    )
    assert clash.status_code == 409 and "belongs to memory user 'alice'" in clash.text


def test_a_users_conversations_and_last_contact_come_from_their_turns(
    http: httpx.Client, mem: Memory
) -> None:
    """Turns recorded through the SDK (not an agent's ``identify_user``) still count: the
    distinct sessions of the user's episodes are their conversations, the newest turn
    their last contact (the Users tab showed "0 conversations" and no time)."""
    assert http.post("/api/v1/memory-users/", json={"id": "sam"}).status_code == 201
    before = http.get("/api/v1/memory-users/sam").json()
    assert (before["conversation_count"], before["last_seen"]) == (0, None)
    for session in ("s1", "s1", "s2", "s3"):
        mem.add(f"A turn of session {session}", user="sam", session=session)
    mem.add("Someone else's turn", user="ana", session="s9")
    newest = max(n.event_time for n in mem.list(type="episodic", user="sam", limit=10))
    sam = http.get("/api/v1/memory-users/sam").json()
    assert sam["conversation_count"] == 3
    assert sam["last_seen"] is not None
    assert abs(datetime.fromisoformat(sam["last_seen"]) - newest).total_seconds() < 0.001
    [listed] = http.get("/api/v1/memory-users/", params={"q": "sam"}).json()["items"]
    assert listed["conversation_count"] == 3 and listed["last_seen"] == sam["last_seen"]
