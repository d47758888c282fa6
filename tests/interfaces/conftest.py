"""Fixtures for interface tests: a real HTTP server around a service with the fake embedder."""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpx
import pytest
from rest_server import client, running

from memloci import Memory


@pytest.fixture
def server(mem: Memory) -> Iterator[str]:
    """Base URL of a real server (uvicorn on loopback) over ``mem``'s service."""
    with running(mem.service) as base:
        yield base


@pytest.fixture
def http(server: str) -> Iterator[httpx.Client]:
    with client(server) as c:
        yield c


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``MEMLOCI_*`` variable of the caller's shell reaches the command under test
    (CLI tests: ``pytestmark = pytest.mark.usefixtures("clean_env")``)."""
    for name in list(os.environ):
        if name.startswith("MEMLOCI_"):
            monkeypatch.delenv(name)
