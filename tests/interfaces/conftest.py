"""Fixtures for interface tests: a real HTTP server around a service with the fake embedder."""

from __future__ import annotations

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
