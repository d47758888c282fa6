"""Browser tests: the real ``memloci serve`` in a subprocess, driven by headless Chromium.

The browser is Debian's ``chromium`` (``make test`` installs it when it runs as root;
playwright's own browser download is not used). Without it these tests skip locally,
but fail when ``CI`` is set: CI must run them.

Screenshots land in ``test-artifacts/screenshots/``; the README's ``docs/img/web-ui.png``
comes from the demo, through ``scripts/screenshot.py``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1360, "height": 860}
T = TypeVar("T")


@dataclass
class Server:
    """The running server, an API client for it, and the ids of what was seeded."""

    url: str
    api: httpx.Client
    ids: dict[str, Any] = field(default_factory=dict)


def _browser_missing() -> str | None:
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install -e '.[dev]')"
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing: apt-get install chromium (make test does it as root)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium for one test module. Not session-wide: playwright's sync API
    keeps an event loop running while it is open, which would break later tests that
    call ``asyncio.run``."""
    reason = _browser_missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser tests, but {reason}", pytrace=False)
        pytest.skip(reason)
    from playwright.sync_api import expect, sync_playwright

    # a shared 2-core CI machine can be slow: wait up to 15 s for an expectation
    expect.set_options(timeout=15_000)
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


# ------------------------------------------------------------------ the server
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_healthy(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:]
            pytest.fail(f"memloci serve exited with {proc.returncode}:\n{tail}", pytrace=False)
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    pytest.fail(f"memloci serve did not answer /healthz within 60 s; see {log}", pytrace=False)


def _run_async(fn: Callable[[Path], Coroutine[Any, Any, T]], db: Path) -> T:
    """Run SDK setup code in its own thread: playwright's sync API may already run an
    event loop in this one."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(fn(db))).result()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def _seed_entity_graph(db: Path) -> dict[str, str]:
    """Entities linked to facts. The REST API has no route that links a memory to an
    entity (consolidation does that), so this part goes through the SDK, before the
    server opens the file."""
    from memloci.providers.fake import FakeEmbedder
    from memloci.sdk import AsyncMemory

    async with AsyncMemory(str(db), embedder=FakeEmbedder()) as memory:
        svc = memory.service
        acme = await svc.records.save_entity(
            "Acme Robotics", type="organization", aliases=["Acme"],
            summary="Sam's employer: warehouse robots, based in Porto.",
        )  # fmt: skip
        dana = await svc.records.save_entity("Dana Reyes", type="person", summary="Sam's manager.")
        atlas = await svc.records.save_entity(
            "Atlas", type="project", summary="The new picking robot."
        )
        lead = await memory.remember(
            "Dana Reyes leads the Atlas team at Acme Robotics", category="person", user="sam"
        )
        based = await memory.remember("Acme Robotics is based in Porto", category="context")
        await svc.records.link_entities(lead.memory.id, [acme.id, dana.id, atlas.id])
        await svc.records.link_entities(based.memory.id, [acme.id])
    return {"acme": acme.id, "dana": dana.id, "atlas": atlas.id, "lead_fact": lead.memory.id}


FACTS = [
    ("Sam prefers dark roast coffee, no sugar", "preference", "sam"),
    ("Sam works as a firmware engineer", "person", "sam"),  # names no entity: links stay as set
    ("The Atlas project ships its public beta in March", "project", None),
    ("Sam is allergic to peanuts", "person", "sam"),
    ("Sam likes hiking in the Sintra hills on weekends", "preference", "sam"),
    ("Scratch note: the staging server restarts at noon", "context", None),
    ("Scratch note: the old printer on floor two is broken", "context", None),
]


def _ok(response: httpx.Response) -> Any:
    assert response.is_success, f"{response.request.method} {response.request.url}: {response.text}"
    return response.json()


def _seed(api: httpx.Client) -> dict[str, Any]:
    """Seed every tab through the REST API; returns the ids the tests need."""
    ids: dict[str, Any] = {"facts": {}}
    for content, category, user in FACTS:
        result = _ok(api.post("/api/v1/facts/", json={
            "content": content, "category": category, "user": user,
        }))  # fmt: skip
        assert result["action"] == "created", result
        ids["facts"][content] = result["memory"]["id"]
    turns = [
        {"role": "user", "content": "Can you help me plan a weekend in Porto?"},
        {"role": "assistant", "content": "Sure. Trains from Lisbon take about three hours."},
        {"role": "user", "content": "Book the Saturday morning train, please."},
    ]
    episodes = _ok(api.post("/api/v1/turns/", json={
        "messages": turns, "user": "sam", "session": "porto-trip",
    }))  # fmt: skip
    ids["episodes"] = [e["id"] for e in episodes]
    proc = _ok(api.post("/api/v1/procedures/", json={
        "content": "When the user asks about the weather, call the forecast tool first",
        "triggers": {"goal_contains": ["weather"]}, "procedure_type": "tool_sequence",
    }))  # fmt: skip
    ids["procedure"] = proc["memory"]["id"]
    for body in (
        {"id": "telegram:12345", "display_name": "Sam", "identifiers": {"telegram": "12345"}},
        {"id": "email:sam@example.com", "display_name": "Sam (email)",
         "identifiers": {"email": "sam@example.com"}},
    ):  # fmt: skip
        _ok(api.post("/api/v1/memory-users/", json=body))
    thread = _ok(api.post("/api/v1/checkpoints/sam-porto-chat/messages", json={
        "messages": turns, "user": "telegram:12345", "agent": "travel-bot",
    }))  # fmt: skip
    ids["thread"] = thread["id"]
    pixel = _ok(api.post("/api/v1/entities/", json={
        "name": "Pixel", "type": "concept", "aliases": ["the dog"],
        "summary": "Sam's three-year-old greyhound.",
    }))  # fmt: skip
    ids["pixel"] = pixel["id"]
    return ids


@contextmanager
def serve(db: Path) -> Iterator[str]:
    """Run ``memloci serve`` on ``db`` (fake embedder, no maintenance); yields its URL."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = db.with_suffix(".log")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    cmd = [
        sys.executable, "-m", "memloci.interfaces.cli", "serve", "--db", str(db),
        "--port", str(port), "--embedder", "fake", "--no-maintenance", "--log-level", "warning",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=db.parent)
        try:
            _wait_healthy(proc, url, log_path)
            yield url
        finally:
            _stop(proc)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The server on a fresh database, seeded for every tab (shared by the tests)."""
    db = tmp_path_factory.mktemp("web-ui") / "ui.db"
    graph_ids = _run_async(_seed_entity_graph, db)
    with serve(db) as url, httpx.Client(base_url=url, timeout=20) as api:
        yield Server(url=url, api=api, ids={**_seed(api), **graph_ids})


async def _create_key(db: Path) -> str:
    from memloci.providers.fake import FakeEmbedder
    from memloci.sdk import AsyncMemory

    async with AsyncMemory(str(db), embedder=FakeEmbedder()) as memory:
        await memory.remember("The locked store holds this one fact", category="context")
        _key, secret = await memory.service.keys.create_key("ui-test", ["default"])
    return secret


@pytest.fixture(scope="module")
def locked_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A second server whose store has an API key (so every API call needs it);
    ``ids["secret"]`` is the key."""
    db = tmp_path_factory.mktemp("web-ui-locked") / "locked.db"
    secret = _run_async(_create_key, db)
    with serve(db) as url, httpx.Client(base_url=url, timeout=20) as api:
        yield Server(url=url, api=api, ids={"secret": secret})


# ------------------------------------------------------------------ pages
def _open_context(browser: Browser, url: str) -> Iterator[Page]:
    context = browser.new_context(base_url=url, viewport=VIEWPORT)
    outside: list[str] = []
    errors: list[str] = []

    def only_local(route: Any) -> None:
        if route.request.url.startswith(url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", only_local)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    def csp_violation(message: Any) -> None:
        if message.type == "error" and "Content Security Policy" in message.text:
            errors.append(message.text)

    page.on("console", csp_violation)
    yield page
    context.close()
    assert outside == [], f"the page tried to fetch from elsewhere: {outside}"
    assert errors == [], f"JavaScript errors: {errors}"


@pytest.fixture
def page(browser: Browser, server: Server) -> Iterator[Page]:
    """A fresh browser context on the seeded server. Requests to any other origin are
    blocked and fail the test (the UI fetches nothing from the internet), as do uncaught
    JavaScript errors and Content-Security-Policy violations."""
    yield from _open_context(browser, server.url)


@pytest.fixture
def locked_page(browser: Browser, locked_server: Server) -> Iterator[Page]:
    """The same on the server that needs an API key."""
    yield from _open_context(browser, locked_server.url)


@pytest.fixture
def shot() -> Callable[[Page, str], Path]:
    """``shot(page, name)`` saves test-artifacts/screenshots/<name>.png (whole page)."""

    def save(page: Page, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return save


@pytest.fixture
def docs_shot() -> Callable[[Page], Path]:
    """``docs_shot(page)`` saves a screenshot of the viewport to
    test-artifacts/screenshots/web-ui.png (the README's own screenshot is taken from the
    demo by ``scripts/screenshot.py``)."""

    def save(page: Page) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / "web-ui.png"
        page.screenshot(path=str(path))
        return path

    return save
