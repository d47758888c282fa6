"""The ``google`` embedder (reference 004: ``text-embedding-004``) against a real local
HTTP server speaking the Generative Language REST API: ``models/{model}:embedContent``
and ``:batchEmbedContents``, the key in ``x-goog-api-key``; and a role file whose
``memory.embeddings.provider`` is ``google`` building it."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from memloci.config import Settings
from memloci.errors import ProviderError
from memloci.providers.fake import FakeEmbedder
from memloci.providers.google import GoogleEmbedder
from memloci.runtime import Role
from memloci.service.compose import build_embedder

DIM = 12
KEY = "g-right"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    requests: list[dict[str, Any]]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, reply: dict[str, Any]) -> None:
        body = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(body)

    def _values(self, request: dict[str, Any], model: str) -> dict[str, Any]:
        assert request["model"] == f"models/{model}"
        (part,) = request["content"]["parts"]
        return {"values": (FakeEmbedder(dimension=DIM).embed_query(part["text"]) * 2).tolist()}

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        key = self.headers.get("x-goog-api-key")
        self.server.requests.append({"path": self.path, "body": body, "key": key})
        if key != KEY:
            self._send(403, {"error": {"code": 403, "message": "API key not valid"}})
            return
        prefix = "/v1beta/models/"
        model, _, method = self.path.removeprefix(prefix).partition(":")
        if not self.path.startswith(prefix) or model != "text-embedding-004":
            self._send(404, {"error": {"code": 404, "message": "model not found"}})
        elif method == "embedContent":
            self._send(200, {"embedding": self._values(body, model)})
        elif method == "batchEmbedContents":
            rows = [self._values(r, model) for r in body["requests"]]
            self._send(200, {"embeddings": rows})
        else:
            self._send(404, {"error": {"code": 404, "message": "no such method"}})


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    srv.requests = []
    thread = threading.Thread(target=srv.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _url(srv: _Server) -> str:
    return f"http://127.0.0.1:{srv.server_port}/v1beta"


def test_google_embeds_batches_and_queries(server: _Server) -> None:
    with GoogleEmbedder(base_url=_url(server), api_key=KEY, batch_size=2) as client:
        texts = ["alpha beta", "gamma", "delta", "epsilon"]
        vecs = client.embed(texts)
        expected = FakeEmbedder(dimension=DIM).embed(texts)
        np.testing.assert_allclose(vecs, expected, atol=1e-6)
        assert vecs.dtype == np.float32 and client.dimension == DIM
        paths = [r["path"] for r in server.requests]
        assert paths == ["/v1beta/models/text-embedding-004:batchEmbedContents"] * 2
        assert all(r["key"] == KEY for r in server.requests)
        np.testing.assert_allclose(client.embed_query("gamma"), expected[1], atol=1e-6)
        assert server.requests[-1]["path"].endswith(":embedContent")
        assert "outputDimensionality" not in server.requests[-1]["body"]
        assert client.model_id == f"google:text-embedding-004@{_url(server)}"


def test_google_errors_name_the_key_variable_never_the_key(server: _Server) -> None:
    client = GoogleEmbedder(base_url=_url(server), api_key="g-wrong", retries=0)
    with pytest.raises(ProviderError) as info:
        client.embed(["x"])
    assert "g-wrong" not in str(info.value) and "GOOGLE_API_KEY" in str(info.value.hint)
    missing = GoogleEmbedder(base_url=_url(server), api_key=KEY, model="nope", retries=0)
    with pytest.raises(ProviderError, match="404"):
        missing.embed(["x"])


def test_a_role_file_with_provider_google_embeds_through_it(
    server: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_GEMINI_KEY", KEY)
    role = Role.from_mapping(
        {
            "memory": {
                "embeddings": {
                    "provider": "google",
                    "base_url": _url(server),
                    "api_key_env": "MY_GEMINI_KEY",
                }
            }
        }
    )
    embedder = build_embedder(Settings(**role.to_settings()))
    assert isinstance(embedder, GoogleEmbedder) and embedder.model == "text-embedding-004"
    vec = embedder.embed_query("the build server is fast")
    expected = FakeEmbedder(dimension=DIM).embed_query("the build server is fast")
    np.testing.assert_allclose(vec, expected, atol=1e-6)
    assert server.requests[-1]["key"] == KEY
