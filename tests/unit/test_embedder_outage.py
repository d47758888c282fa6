"""Graceful degradation: an OpenAI-compatible embedding endpoint (a real local HTTP
server) that goes down mid-test and comes back. Search, context and the recall /
search_memory tools keep answering by full text (+ key + graph) and say so; opening a
store never waits for the embedder; vectors are filled in when it returns."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from memloci import Memory
from memloci.errors import ProviderError
from memloci.providers.fake import FakeEmbedder
from memloci.providers.openai import OpenAIEmbedder
from memloci.retrieval.embedding import QueryEmbedding

DIM = 16
SKIPPED = "meaning skipped: embedder unavailable"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        vecs = FakeEmbedder(dimension=DIM).embed(body["input"])
        data = [{"object": "embedding", "index": i, "embedding": v.tolist()}
                for i, v in enumerate(vecs)]  # fmt: skip
        reply = json.dumps({"object": "list", "data": data, "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


class Endpoint:
    """An embedding server on a fixed loopback port that can be stopped and restarted."""

    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        server = ThreadingHTTPServer(("127.0.0.1", self.port), _Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
        self._server = server

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    ep = Endpoint()
    ep.start()
    yield ep
    ep.stop()


def _embedder(ep: Endpoint, **options: Any) -> OpenAIEmbedder:
    client = OpenAIEmbedder(base_url=ep.url, model="mini", retries=0, timeout=5, **options)
    client.retry_backoff = 0.0
    return client


def _warnings(caplog: pytest.LogCaptureFixture, logger: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger and r.levelname == "WARNING"]


def test_search_context_and_tools_survive_an_outage(
    endpoint: Endpoint, db_path: str, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    doc = tmp_path / "trams.md"
    doc.write_text("# Trams\n\nLisbon's tram 28 climbs through Alfama every few minutes.\n")
    mem = Memory(db_path, embedder=_embedder(endpoint))
    try:
        mem.add_knowledge(doc)
        mem.add("I moved to Lisbon last spring", user="u1")
        mem.add("My dog Biscuit hates rain", user="u1")
        mem.remember("User lives in Lisbon", user="u1", key="home_city")
        assert mem.flush(timeout=20)
        assert mem.stats().pending_embeddings == 0
        up = mem.search("Lisbon", user="u1")
        assert up and "vector" in up[0].strategies and SKIPPED not in up[0].why

        endpoint.stop()  # --- the endpoint goes down mid-session
        hits = mem.search("Lisbon", user="u1")
        assert hits and all("Lisbon" in h.memory.content for h in hits)
        assert all(SKIPPED in h.why and "vector" not in h.strategies for h in hits)
        assert mem.search("where is Biscuit", user="u1")[0].memory.content.startswith("My dog")
        assert "Lisbon" in mem.context("Tell me about Lisbon", user="u1")
        tools = mem.tools(user="u1")
        for name in ("recall", "search_memory"):
            answer = tools.call(name, {"query": "Lisbon"})
            assert "User lives in Lisbon" in answer and not answer.startswith("Error")
        episodes = tools.call("recall", {"query": "Biscuit", "memory_type": "episodes"})
        assert "Biscuit" in episodes
        knowledge = mem.search_knowledge("tram 28 Alfama", threshold=0.0)
        assert knowledge and "tram 28" in knowledge[0].text and knowledge[0].match == "fulltext"
        # one warning line for the outage, however many searches ran meanwhile
        assert len([w for w in _warnings(caplog, "memloci.search") if "failed" in w]) == 1
        # writes go on: the new turn and fact wait for their vectors
        mem.add("We are planning a trip to Porto in May", user="u1")
        assert mem.remember("User likes trams", user="u1").action == "created"
        assert not mem.flush(timeout=0.5)
        assert mem.stats().pending_embeddings == 2

        endpoint.start()  # --- it comes back: vectors are filled in, meaning returns
        assert mem.flush(timeout=30)
        assert mem.stats().pending_embeddings == 0
        mem.service.retriever.query_vectors.retry_after = 0.0  # type: ignore[union-attr]
        back = mem.search("Porto trip", user="u1")
        assert back[0].memory.content.startswith("We are planning")
        assert "vector" in back[0].strategies and SKIPPED not in back[0].why
        vec = mem.search("User likes trams", recipe="vector", user="u1")
        assert vec[0].memory.content == "User likes trams"
    finally:
        mem.close()


def test_opening_never_waits_for_an_unreachable_embedder(
    endpoint: Endpoint, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    known = str(tmp_path / "known.db")
    first = Memory(known, embedder=_embedder(endpoint))
    first.add("Ana works as a nurse in Porto")
    assert first.flush(timeout=20)
    first.close()
    endpoint.stop()

    # a store that already holds this model keeps its recorded dimension
    again = Memory(known, embedder=_embedder(endpoint))
    try:
        assert again.stats().dimension == DIM
        assert again.search("nurse")[0].memory.content.startswith("Ana")
    finally:
        again.close()
    # a new store opens too (the dimension is not known yet): full text meanwhile
    fresh_path = str(tmp_path / "fresh.db")
    fresh = Memory(fresh_path, embedder=_embedder(endpoint))
    try:
        fresh.add("The office closes at six")
        assert fresh.search("office")[0].memory.content == "The office closes at six"
        assert fresh.stats().embedding_model is None
        assert any("unavailable at open" in w for w in _warnings(caplog, "memloci.worker"))
        endpoint.start()
        assert fresh.flush(timeout=30)
        stats = fresh.stats()
        assert stats.pending_embeddings == 0 and stats.dimension == DIM
        assert stats.embedding_model == _embedder(endpoint).model_id
    finally:
        fresh.close()


def test_query_embedding_breaker() -> None:
    now = [0.0]
    calls: list[str] = []
    failing = [True]

    def embed(text: str) -> np.ndarray:
        calls.append(text)
        if failing[0]:
            raise ProviderError("cannot reach the embedding server")
        return np.ones(4, dtype=np.float32)

    qe = QueryEmbedding(embed, retry_after=5.0, clock=lambda: now[0])
    assert qe.down is None
    assert qe.result(qe.start("a")) is None
    assert qe.down == "cannot reach the embedding server"
    assert qe.start("b") is None and calls == ["a"]  # skipped inside the window
    now[0] = 5.0
    failing[0] = False
    vector = qe.result(qe.start("c"))
    assert vector is not None and vector.shape == (4,)
    assert qe.down is None and calls == ["a", "c"]
    assert qe.result(None) is None
