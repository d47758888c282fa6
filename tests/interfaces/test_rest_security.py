"""HTTP security over a real server: the auth mode survives revoking every key, keys are
minted only with an admin key, cross-site requests (writes, and reads that reinforce)
and foreign Host headers are refused, no page can be framed, an oversized chunked body
is a 413, a 500 leaks nothing and leaves the keep-alive connection usable, 405 names
what is allowed, an agent tool does not confirm another user's entity, and an import
cannot plant edges into another namespace."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from rest_server import client, running
from test_rest_errors import assert_error_shape

from memloci import Memory
from memloci.interfaces.rest.security import HostPolicy, host_name
from memloci.tools import Tools


def _everything(mem: Memory) -> int:
    return mem.count(include_forgotten=True) + mem.count(namespace="copy", include_forgotten=True)


# ---------------------------------------------------------------- item 1: auth mode
def test_revoking_the_last_key_does_not_open_the_server(mem: Memory) -> None:
    mem.remember("The launch code is in the blue binder")
    _, admin = mem._call(mem.service.keys.create_key("ops", ["*"], admin=True))
    with running(mem.service) as base:
        with client(base, admin) as c:
            (key,) = c.get("/api/v1/keys/").json()
            assert c.delete(f"/api/v1/keys/{key['id']}").json()["revoked_at"]
        with client(base) as anon:
            assert_error_shape(anon.get("/api/v1/export"), 401, "unauthorized")
            assert_error_shape(anon.get("/api/v1/facts/"), 401, "unauthorized")
            made = anon.post(
                "/api/v1/keys/", json={"name": "me", "namespaces": ["*"], "admin": True}
            )
            assert_error_shape(made, 401, "unauthorized")
        with client(base, admin) as revoked:
            assert_error_shape(revoked.get("/api/v1/export"), 401, "unauthorized")
    assert len(mem._call(mem.service.keys.list_keys(include_revoked=True))) == 1
    # the store remembers: a new server on it is closed too
    with running(mem.service) as base, client(base) as anon:
        assert_error_shape(anon.get("/api/v1/export"), 401, "unauthorized")
    assert mem._call(mem.service.keys.auth_required()) is True


def test_an_open_server_does_not_mint_keys(http: httpx.Client, mem: Memory) -> None:
    assert http.get("/api/v1/facts/").status_code == 200  # open: loopback, never had a key
    r = http.post("/api/v1/keys/", json={"name": "me", "namespaces": ["*"], "admin": True})
    assert "memloci keys create" in assert_error_shape(r, 401, "unauthorized")["hint"]
    assert_error_shape(http.get("/api/v1/keys/"), 401)
    assert mem._call(mem.service.keys.list_keys(include_revoked=True)) == []
    assert mem._call(mem.service.keys.auth_required()) is False


def test_a_server_bound_beyond_loopback_always_needs_a_key(mem: Memory) -> None:
    assert HostPolicy("0.0.0.0").require_key and HostPolicy("192.168.1.4").require_key
    assert not HostPolicy("127.0.0.1").require_key and not HostPolicy("localhost").require_key
    mem.service.settings = mem.service.settings.model_copy(update={"host": "0.0.0.0"})
    with running(mem.service) as base, client(base) as anon:
        assert_error_shape(anon.get("/api/v1/facts/"), 401, "unauthorized")
        assert anon.get("/healthz").status_code == 200


# ---------------------------------------------------------------- item 5: cross-site writes
def _export(mem: Memory) -> bytes:
    return "".join(line + "\n" for line in mem.service.admin.export_lines("default")).encode()


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_a_body_must_declare_json(mem: Memory, content_type: str | None) -> None:
    mem.remember("Exported fact about the garden")
    lines = _export(mem)
    headers = {"content-type": content_type} if content_type else {}
    fact = json.dumps({"content": "Planted by another site"}).encode()
    with running(mem.service) as base, client(base) as http:
        for path, body in (("/api/v1/import?namespace=copy", lines), ("/api/v1/facts/", fact)):
            r = httpx.post(base + path, content=body, headers=headers)
            assert_error_shape(r, 415, "unsupported_media_type")
        assert _everything(mem) == 1
        for kind in ("application/x-ndjson", "application/jsonl", "application/json"):
            r = http.post(
                "/api/v1/import?namespace=copy", content=lines, headers={"content-type": kind}
            )
            assert r.status_code == 200, r.text
        r = http.post("/api/v1/facts/", content=fact, headers={"content-type": "text/json"})
        assert_error_shape(r, 415)
        r = http.post(
            "/api/v1/facts/",
            content=fact,
            headers={"content-type": "application/json; charset=utf-8"},
        )
        assert r.status_code == 201


def test_cross_site_writes_are_refused(http: httpx.Client, mem: Memory, server: str) -> None:
    for origin in ("https://evil.example", "null", "http://127.0.0.1:1"):
        headers = {"Origin": origin}
        r = http.post("/api/v1/facts/", json={"content": "Cross-site fact"}, headers=headers)
        assert_error_shape(r, 403, "forbidden")
        assert_error_shape(http.delete("/api/v1/facts/abcd1234", headers=headers), 403)
    assert mem.count(include_forgotten=True) == 0
    own = http.post(
        "/api/v1/facts/", json={"content": "Same-site fact"}, headers={"Origin": server}
    )
    assert own.status_code == 201  # the web UI's own pages
    # a read from a foreign page is refused too (a search reinforces what it finds)
    assert_error_shape(http.get("/api/v1/facts/", headers={"Origin": "https://evil.example"}), 403)


def _accessed(mem: Memory, memory_id: str) -> int:
    mem._call(mem.service.flush(timeout=10))  # touches are applied in the background
    node = mem.get(memory_id)
    assert node is not None
    return node.access_count


def test_cross_site_reads_are_refused(http: httpx.Client, mem: Memory, server: str) -> None:
    """A foreign page's ``fetch(url, {mode: "no-cors"})`` carries no Origin, only
    Sec-Fetch-Site; a search it triggered would still reinforce every hit."""
    fact = mem.remember("The spare key is under the blue flowerpot").memory.id
    search = "/api/v1/search?q=spare+key+flowerpot"
    before = _accessed(mem, fact)
    refused = [
        {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "empty"},
        {"Sec-Fetch-Site": "same-site"},  # another port on localhost
        {
            "Sec-Fetch-Site": "cross-site",
            "Sec-Fetch-Mode": "navigate",
            "Sec-Fetch-Dest": "document",
        },
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
    ]
    for headers in refused:
        r = http.get(search, headers=headers)
        assert "cross-site" in assert_error_shape(r, 403, "forbidden")["message"], headers
    preflight = http.options(search, headers={"Origin": "https://evil.example"})
    assert_error_shape(preflight, 403, "forbidden")
    assert _accessed(mem, fact) == before
    # the UI's own calls, a typed address and non-browser clients pass (and do reinforce)
    for headers in ({"Sec-Fetch-Site": "same-origin", "Origin": server},
                    {"Sec-Fetch-Site": "none"}, {}):  # fmt: skip
        assert http.get(search, headers=headers).status_code == 200, headers
        assert _accessed(mem, fact) > before, headers
        before = _accessed(mem, fact)
    # a link from another site to a page opens it; framing it or an API call does not
    link = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}
    for path in ("/memories", "/docs", "/"):
        r = http.get(path, headers={**link, "Sec-Fetch-Dest": "document"}, follow_redirects=True)
        assert r.status_code == 200 and r.url.path != "/", path
        assert_error_shape(http.get(path, headers={**link, "Sec-Fetch-Dest": "iframe"}), 403)


def test_no_page_can_be_framed_and_nothing_is_sniffed(http: httpx.Client) -> None:
    for path in ("/docs", "/docs/oauth2-redirect", "/memories"):
        r = http.get(path)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"], path
        assert r.headers["x-frame-options"] == "DENY", path
        assert r.headers["x-content-type-options"] == "nosniff", path
    answers = [
        http.get("/healthz"), http.get("/openapi.json"), http.get("/api/v1/facts/"),
        http.get("/api/v1/nope"), http.get("/static/app.js"),
        http.get("/docs/assets/swagger-ui.css"),
        http.get("/api/v1/facts/", headers={"Host": "evil.example"}),
        http.post("/api/v1/facts/", content=b"x", headers={"content-type": "text/plain"}),
        http.post("/mcp/", json={}), http.get("/"),
    ]  # fmt: skip
    for r in answers:
        assert r.headers["x-content-type-options"] == "nosniff", r.request.url
        assert r.headers["x-frame-options"] == "DENY", r.request.url


def _chunked(size: int) -> Iterator[bytes]:
    """A JSON body of about ``size`` bytes, streamed without a Content-Length."""
    yield b'{"content": "A long fact'
    for _ in range(size // 65536 + 1):
        yield b" " * 65536
    yield b'"}'


def test_an_oversized_chunked_body_is_a_413(mem: Memory, caplog: pytest.LogCaptureFixture) -> None:
    settings = mem.service.settings.model_copy(update={"max_request_bytes": 200_000})
    mem.service.settings = settings
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    with (
        caplog.at_level(logging.WARNING),
        running(mem.service) as base,
        client(base) as http,
    ):
        for path in ("/api/v1/facts/", "/mcp/", "/api/v1/import", "/api/memory/"):
            r = http.post(path, content=_chunked(300_000), headers=headers)
            assert "200000 bytes" in assert_error_shape(r, 413, "request_too_large")["message"]
        small = http.post(
            "/api/v1/facts/", content=iter([b'{"content": "A chunked', b' fact"}']), headers=headers
        )
        assert small.status_code == 201, small.text  # under the limit: read whole, then served
        assert http.get("/healthz").status_code == 200
    assert mem.count() == 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


# ---------------------------------------------------------------- item 6: DNS rebinding
def test_foreign_host_headers_get_421(http: httpx.Client, server: str) -> None:
    port = urlsplit(server).port
    for path in ("/api/v1/export", "/api/v1/facts/", "/memories", "/mcp/", "/openapi.json"):
        r = http.get(path, headers={"Host": f"rebind.evil.example:{port}"})
        assert_error_shape(r, 421, "misdirected_request")
    r = http.post("/api/v1/facts/", json={"content": "Rebound write"}, headers={"Host": "evil"})
    assert_error_shape(r, 421)
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "localhost"):
        assert http.get("/api/v1/facts/", headers={"Host": host}).status_code == 200, host


def test_allowed_hosts_for_a_proxy(mem: Memory) -> None:
    settings = mem.service.settings.model_copy(update={"allowed_hosts": ["mem.example.org"]})
    mem.service.settings = settings
    with running(mem.service) as base, client(base) as http:
        host = {"Host": "MEM.example.org"}
        assert http.get("/api/v1/facts/", headers=host).status_code == 200
        origin = {**host, "Origin": "https://mem.example.org"}
        assert http.post("/api/v1/facts/", json={"content": "Via proxy"}, headers=origin).is_success
        assert_error_shape(http.get("/api/v1/facts/", headers={"Host": "other.org"}), 421)
        assert http.post("/mcp/", json={}, headers=host).status_code != 421


def test_host_policy() -> None:
    assert host_name("[::1]:8765") == "::1" and host_name("Example.org:80") == "example.org"
    wildcard = HostPolicy("0.0.0.0")
    assert wildcard.allows("192.168.1.4:8765") and wildcard.allows("[fe80::1]:80")
    assert not wildcard.allows("evil.example") and not wildcard.allows(None)
    bound = HostPolicy("10.0.0.2", ["memory.lan"])
    assert bound.allows("10.0.0.2:8765") and bound.allows("memory.lan")
    assert not bound.allows("10.0.0.3") and HostPolicy("127.0.0.1", ["*"]).allows("any.where")
    assert HostPolicy("127.0.0.1", ["*"]).require_key  # no Host check: a key takes its place
    assert not HostPolicy("127.0.0.1", ["memory.lan"]).require_key


def test_a_server_answering_any_host_needs_a_key(mem: Memory) -> None:
    """``--allowed-host '*'`` turns off the DNS-rebinding check: a page at
    attacker.example re-pointed at 127.0.0.1 sends Host and Origin attacker.example.
    ``memloci serve`` refuses it without keys (test_serve_lifecycle); an app built
    directly demands a key all the same."""
    mem.remember("The alarm code is 4711")
    mem.service.settings = mem.service.settings.model_copy(update={"allowed_hosts": ["*"]})
    rebound = {"Host": "attacker.example", "Origin": "http://attacker.example"}
    with running(mem.service) as base, client(base) as anon:
        assert_error_shape(anon.get("/api/v1/stats", headers=rebound), 401, "unauthorized")
        r = anon.post("/api/v1/facts/", json={"content": "Planted by a rebinding page"},
                      headers=rebound)  # fmt: skip
        assert_error_shape(r, 401)
        assert_error_shape(anon.post("/mcp/", json={}, headers=rebound), 401)
        _, key = mem._call(mem.service.keys.create_key("agent", ["default"]))
        with client(base, key) as keyed:  # behind a proxy, the operator's clients have keys
            assert keyed.get("/api/v1/stats", headers={"Host": "mem.example.org"}).is_success
    assert mem.count(include_forgotten=True) == 1


# ---------------------------------------------------------------- items 9 and 10: 500s
def _exchange(sock: socket.socket, host: str, path: str) -> tuple[int, bytes]:
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        body += chunk
    return int(head.split(b" ")[1]), body


def test_a_500_leaks_nothing_and_keeps_the_connection(
    mem: Memory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("internal detail: /secret/path and the user's query")

    monkeypatch.setattr(mem.service.memories, "stats", broken)
    with running(mem.service) as base:
        host = urlsplit(base).netloc
        with (
            caplog.at_level(logging.ERROR, logger="memloci.server"),
            socket.create_connection(
                (urlsplit(base).hostname, urlsplit(base).port), timeout=20
            ) as sock,
        ):
            for _ in range(3):  # the same connection, every time
                status, body = _exchange(sock, host, "/api/v1/stats")
                assert status == 500
                err = json.loads(body)["error"]
                assert err["code"] == "internal_error" and "secret" not in body.decode()
                assert "RuntimeError" not in body.decode()
                status, body = _exchange(sock, host, "/healthz")
                assert status == 200 and json.loads(body)["status"] == "ok"
    error_id = err["details"]["error_id"]
    assert error_id in err["message"]
    logged = [r for r in caplog.records if error_id in r.getMessage()]
    assert logged and logged[0].exc_info and "secret/path" in str(logged[0].exc_info[1])


# ---------------------------------------------------------------- item 11: 405 with Allow
def test_405_names_the_allowed_methods(http: httpx.Client) -> None:
    r = http.put("/api/v1/stats")
    assert_error_shape(r, 405, "method_not_allowed")
    assert r.headers["allow"] == "GET, HEAD"
    r = http.post("/api/v1/facts/abcd1234", json={})
    assert_error_shape(r, 405)
    assert set(r.headers["allow"].split(", ")) == {"DELETE", "GET", "HEAD", "PATCH"}


# ---------------------------------------------------------------- item 10: small leaks
def test_entity_info_does_not_confirm_another_users_entity(mem: Memory) -> None:
    svc = mem.service
    entity = mem._call(svc.records.save_entity("Zorblax Project", type="project"))
    secret = mem.remember("Bo works on the Zorblax project", user="bo")
    mem._call(svc.records.link_entities(secret.memory.id, [entity.id]))
    mem._call(svc.records.save_entity("Shared Garden", type="place"))

    def info(user: str, name: str) -> str:
        return mem._call(Tools(svc, user=user).call("get_entity_info", {"name": name}))

    assert "Zorblax" in info("bo", "Zorblax Project") and "Bo works" in info(
        "bo", "Zorblax Project"
    )
    seen_by_al = info("al", "Zorblax Project")
    assert seen_by_al.startswith("Error:") and "Zorblax Project" in seen_by_al  # the asked name
    assert seen_by_al == info("al", "Zorblax Projekt").replace("Projekt", "Project")
    assert "Shared Garden" in info("al", "Shared Garden")  # mentioned by nobody: namespace-wide


def test_import_refuses_edges_that_leave_the_import(http: httpx.Client, mem: Memory) -> None:
    mine = mem.remember("A fact the import brings along")
    also = mem.remember("A second fact in the same file")
    theirs = mem.remember("Another namespace's fact", namespace="other")
    lines = _export(mem).decode().splitlines()
    mem.purge(mine.memory.id)
    mem.purge(also.memory.id)
    edge = {
        "kind": "edge", "id": "edge0001", "source_id": mine.memory.id,
        "target_id": theirs.memory.id, "relation": "causal",
        "valid_from": "2024-01-01T00:00:00Z", "created_at": "2024-01-01T00:00:00Z",
    }  # fmt: skip
    body = "\n".join([*lines, json.dumps(edge)]).encode()
    jsonl = {"content-type": "application/x-ndjson"}
    r = http.post("/api/v1/import", content=body, headers=jsonl)
    assert theirs.memory.id in assert_error_shape(r, 400, "invalid_input")["message"]
    assert mem.count(include_forgotten=True) == 0 and mem.count(namespace="other") == 1
    inside = {**edge, "target_id": also.memory.id}
    r = http.post("/api/v1/import", content="\n".join([*lines, json.dumps(inside)]), headers=jsonl)
    assert r.status_code == 200 and r.json()["edges"] == 1


# ---------------------------------------------------------------- item 11: the document
def test_openapi_documents_the_real_errors_and_limits(http: httpx.Client) -> None:
    spec = http.get("/openapi.json").json()
    ops = [(p, m, op) for p, item in spec["paths"].items() for m, op in item.items()]
    assert len(ops) > 40
    for path, method, op in ops:
        codes = set(op["responses"])
        assert "422" not in codes, (method, path)
        if path.startswith("/api/"):
            assert {"400", "401", "403", "421"} <= codes, (method, path)
            err = op["responses"]["400"]["content"]["application/json"]["schema"]
            assert err == {"$ref": "#/components/schemas/Error"}
        if method in ("post", "put", "patch"):
            assert {"413", "415"} <= codes, (method, path)
    params = {
        (p, prm["name"]): prm["schema"]
        for p, item in spec["paths"].items()
        for op in item.values()
        for prm in op.get("parameters", [])
    }
    assert params[("/api/v1/facts/{memory_id}", "memory_id")]["pattern"] == "^[A-Za-z0-9]{8}$"
    limit = params[("/api/v1/facts/", "limit")]
    assert (limit["minimum"], limit["maximum"]) == (1, 10_000)
    fact = spec["components"]["schemas"]["FactCreate"]["properties"]
    assert fact["content"]["pattern"] and fact["confidence"]["maximum"] == 1
    body = spec["paths"]["/api/v1/import"]["post"]["requestBody"]["content"]
    assert set(body) == {"application/json", "application/x-ndjson", "application/jsonl"}


def test_an_empty_namespace_is_invalid_not_the_default(http: httpx.Client) -> None:
    assert_error_shape(http.get("/api/v1/facts/", params={"namespace": ""}), 400, "invalid_input")
    r = http.post("/api/v1/facts/?namespace=", json={"content": "Where does it go"})
    assert_error_shape(r, 400)
    r = http.post("/api/v1/facts/", json={"content": "Not a boolean", "overwrite": 0})
    assert_error_shape(r, 400)
    r = http.post("/api/v1/episodes/", json={"content": "A number", "event_time": 0})
    assert_error_shape(r, 400)
