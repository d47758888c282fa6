"""The server's operations surface over real servers: ``/metrics`` in the Prometheus text
format (read by a strict parser; its counters move with requests and with the service's
own calls), who may read it, the request id a 500 carries in its header and log
record, the JSON access log of a real ``memloci serve --log-format json`` process, and
readiness: 503 while the (real, held back) embedding model loads, then 200."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from rest_server import client, free_port, running
from test_rest_errors import assert_error_shape

from memloci import Memory
from memloci.interfaces.rest.ops import JsonFormatter
from memloci.telemetry import OPERATIONS
from pgtest import both_backends
from prom_text import ExpositionError, Family, parse

HERE = Path(__file__).resolve().parent


def _scrape(http: httpx.Client) -> dict[str, Family]:
    r = http.get("/metrics")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    return parse(r.text)


def _requests(m: dict[str, Family], method: str, route: str, status: str) -> float:
    return m["memloci_http_requests_total"].value(method=method, route=route, status=status)


def _operation(m: dict[str, Family], operation: str) -> float:
    fam = m["memloci_operation_duration_seconds"]
    return fam.value("_count", operation=operation, outcome="ok")


@both_backends
def test_metrics_parse_and_move_with_requests(mem: Memory, http: httpx.Client) -> None:
    before = _scrape(http)
    fact = mem.remember("Sam prefers green tea", user="sam").memory
    turns = {"messages": [{"role": "user", "content": "I moved to Lisbon"}], "user": "sam"}
    assert http.post("/api/v1/turns/", json=turns).status_code == 201
    assert http.post("/api/v1/search", json={"query": "tea"}).status_code == 200
    assert http.post("/api/v1/context", json={"prompt": "tea?", "user": "sam"}).is_success
    assert http.get(f"/api/v1/facts/{fact.id}").status_code == 200
    assert http.get("/api/v1/facts/zzzzzzzz").status_code == 404
    assert http.head("/healthz").status_code == 200
    after = _scrape(http)

    route = "/api/v1/facts/{memory_id}"
    assert _requests(after, "GET", route, "200") == _requests(before, "GET", route, "200") + 1
    assert _requests(after, "GET", route, "404") == _requests(before, "GET", route, "404") + 1
    search = ("POST", "/api/v1/search", "200")
    assert _requests(after, *search) == _requests(before, *search) + 1
    assert _requests(after, "HEAD", "/healthz", "200") == 1
    assert _requests(after, "GET", "/metrics", "200") >= 1  # the first scrape
    routes = {s["route"] for s in after["memloci_http_requests_total"].series()}
    assert fact.id not in str(routes) and "zzzzzzzz" not in str(routes)  # templates only
    latency = after["memloci_http_request_duration_seconds"]
    labels = dict(zip(("method", "route", "status"), search, strict=True))
    assert latency.value("_count", **labels) == _requests(after, *search)
    assert latency.value("_sum", **labels) > 0
    # measured in the service: each call once (the search a context makes is its own part)
    for operation in ("add", "search", "context"):
        assert _operation(after, operation) == _operation(before, operation) + 1, operation

    assert after["memloci_store_up"].value() == 1
    assert after["memloci_store_size_bytes"].series() and after["memloci_ready"].value() == 1
    assert "memloci_embedding_backlog" in after
    assert after["memloci_build_info"].series()[0]["version"]
    assert after["process_resident_memory_bytes"].value() > 0
    postgres = not mem.service.settings.path.endswith(".db")
    backend = "postgres" if postgres else "sqlite"
    assert after["memloci_store_size_bytes"].value(backend=backend) > 0
    if postgres:  # the pool lent this scrape a connection, and has some open
        assert after["memloci_pg_pool_requests_total"].value() > 0
        assert after["memloci_pg_pool_connections"].value() >= 1
        assert after["memloci_pg_pool_max_connections"].value() >= 1
    else:
        assert "memloci_pg_pool_connections" not in after


def test_the_strict_parser_refuses_what_prometheus_would() -> None:
    good = '# TYPE a_total counter\na_total{x="1"} 2\n'
    assert parse(good)["a_total"].value(x="1") == 2
    for bad in (
        'a_total{x="1"} 2\n',  # no TYPE
        "# TYPE a counter\na 1\n",  # a counter not named _total
        good + 'a_total{x="1"} 3\n',  # a series twice
        '# TYPE a_total counter\na_total{x="1} 2\n',  # a broken label
        '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n',
        "# TYPE g gauge\ng 1",  # no final line feed
    ):
        with pytest.raises(ExpositionError):
            parse(bad)


def test_operations_are_measured_in_the_service_not_only_over_http(mem: Memory) -> None:
    searches = OPERATIONS.count(operation="search", outcome="ok")
    failed = OPERATIONS.count(operation="search", outcome="error")
    mem.add("I drink green tea every morning", user="sam")
    mem.search("tea", user="sam")
    assert OPERATIONS.count(operation="search", outcome="ok") == searches + 1
    with pytest.raises(Exception, match="query"):
        mem.search("", user="sam")
    assert OPERATIONS.count(operation="search", outcome="error") == failed + 1


def test_metrics_need_a_key_where_the_api_does(mem: Memory) -> None:
    """Loopback: open, like /healthz (even once keys exist). Bound beyond loopback: any
    valid key (a read-only one is enough); /readyz and /healthz never need one."""
    _, reader = mem._call(mem.service.keys.create_key("scraper", ["default"], write=False))
    with running(mem.service) as base, client(base) as anon:
        assert anon.get("/metrics").status_code == 200
    mem.service.settings = mem.service.settings.model_copy(update={"host": "0.0.0.0"})
    with running(mem.service) as base:
        with client(base) as anon:
            assert_error_shape(anon.get("/metrics"), 401, "unauthorized")
            assert anon.get("/readyz").status_code == 200
            assert anon.get("/healthz").status_code == 200
        with client(base, "mlk_not-a-key") as wrong:
            assert_error_shape(wrong.get("/metrics"), 401, "unauthorized")
        with client(base, reader) as scraper:
            assert parse(scraper.get("/metrics").text)["memloci_http_requests_total"]


def test_a_500_carries_the_request_id_in_header_body_and_log(
    mem: Memory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("internal detail")

    monkeypatch.setattr(mem.service.memories, "stats", broken)
    with running(mem.service) as base, client(base) as http:
        ok = http.get("/healthz")
        with caplog.at_level(logging.ERROR, logger="memloci.server"):
            r = http.get("/api/v1/stats")
        metrics = parse(http.get("/metrics").text)
    assert ok.headers["x-request-id"] != r.headers["x-request-id"]
    error_id = assert_error_shape(r, 500, "internal_error")["details"]["error_id"]
    assert r.headers["x-request-id"] == error_id
    assert _requests(metrics, "GET", "/api/v1/stats", "500") == 1
    (record,) = [x for x in caplog.records if error_id in x.getMessage()]
    line = json.loads(JsonFormatter().format(record))
    assert line["request_id"] == error_id and line["level"] == "ERROR"
    assert "RuntimeError: internal detail" in line["exception"]


# ------------------------------------------------------------- real serve processes
def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    return {**env, **extra}


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _until_live(proc: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + 90
    while True:
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "the server did not come up"
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)


@pytest.fixture
def json_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``memloci serve --log-format json`` in a subprocess, its stderr in a file."""
    port, log = free_port(), tmp_path / "stderr.log"
    cmd = [
        sys.executable,
        "-m",
        "memloci.interfaces.cli",
        "serve",
        "--db",
        str(tmp_path / "s.db"),
        "--port",
        str(port),
        "--embedder",
        "fake",
        "--no-maintenance",
        "--log-format",
        "json",
    ]
    with log.open("wb") as err:
        proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=err)
    base = f"http://127.0.0.1:{port}"
    try:
        _until_live(proc, base, log)
        yield base, log
    finally:
        _stop(proc)
    assert proc.returncode == 0, log.read_text()


def test_serve_writes_a_json_access_log(json_server: tuple[str, Path]) -> None:
    base, log = json_server
    agent = {"User-Agent": "ops-test/1.0"}
    with httpx.Client(base_url=base, headers=agent, timeout=20) as http:
        listed = http.get("/api/v1/facts/", params={"namespace": "team-a"})
        missing = http.get("/api/v1/facts/zzzzzzzz")
        turns = {"messages": [{"role": "user", "content": "I like tea"}], "user": "sam"}
        added = http.post("/api/v1/turns/", json=turns)
    assert (listed.status_code, missing.status_code) == (200, 404) and added.is_success
    deadline = time.monotonic() + 20
    while missing.headers["x-request-id"] not in log.read_text():  # written after the answer
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    access = {e["request_id"]: e for e in lines if e["logger"] == "memloci.access"}
    first = access[listed.headers["x-request-id"]]
    assert first["method"] == "GET" and first["path"] == "/api/v1/facts/"
    assert first["route"] == "/api/v1/facts/" and first["status"] == 200
    assert first["namespace"] == "team-a" and first["user_agent"] == "ops-test/1.0"
    assert first["client"] == "127.0.0.1" and first["level"] == "INFO"
    assert first["duration_ms"] >= 0 and first["ts"].endswith("Z")
    second = access[missing.headers["x-request-id"]]
    assert second["route"] == "/api/v1/facts/{memory_id}" and second["status"] == 404
    assert second["path"] == "/api/v1/facts/zzzzzzzz" and second["namespace"] == "default"
    assert access[added.headers["x-request-id"]]["route"] == "/api/v1/turns/"
    others = [e for e in lines if e["logger"] != "memloci.access"]
    assert any(e["logger"].startswith("uvicorn") for e in others), others  # as JSON too
    assert all({"ts", "level", "logger", "message"} <= set(e) for e in lines)


GATE = "MEMLOCI_TEST_GATE_FILE"


def test_readiness_waits_for_the_embedding_model(tmp_path: Path) -> None:
    """A real bge-small whose loading waits for a gate file (gated_serve.py): while it
    loads, /healthz is 200 (alive) and /readyz 503; once loaded, /readyz is 200."""
    port, log, gate = free_port(), tmp_path / "serve.log", tmp_path / "gate"
    cmd = [
        sys.executable,
        str(HERE / "gated_serve.py"),
        "serve",
        "--db",
        str(tmp_path / "s.db"),
        "--port",
        str(port),
        "--no-maintenance",
    ]
    env = _env(GATED_EMBEDDER_GATE=str(gate), MEMLOCI_EMBEDDER="gated-bge")
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        _until_live(proc, base, log)
        with httpx.Client(base_url=base, timeout=20) as http:
            waiting = http.get("/readyz")
            body = assert_error_shape(waiting, 503, "not_ready")
            assert body["details"] == {"store": "ready", "embedder": "loading"}
            assert "loading" in body["message"] and waiting.headers["retry-after"] == "1"
            assert parse(http.get("/metrics").text)["memloci_ready"].value() == 0
            assert http.get("/healthz").json()["status"] == "ok"
            gate.touch()
            deadline = time.monotonic() + 120
            while (ready := http.get("/readyz")).status_code == 503:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
            assert ready.status_code == 200, ready.text
            assert ready.json()["embedder"] == "loaded" and ready.json()["store"] == "ready"
            assert "bge-small" in ready.json()["model"]
            assert parse(http.get("/metrics").text)["memloci_ready"].value() == 1
    finally:
        gate.touch()
        _stop(proc)
