"""``memloci serve --demo`` in a real browser: the bundled demo fills every tab of the web
UI (rows in each, an entity graph of several linked entities, a fact with two versions,
a corrected fact, a user known on two channels, a checkpointed thread)."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

with contextlib.suppress(ImportError):
    from playwright.sync_api import expect

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

pytestmark = pytest.mark.browser
Shot = Callable[["Page", str], Path]


@dataclass
class DemoServer:
    url: str
    api: httpx.Client


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoServer]:
    """``memloci serve --demo`` (the bundled local model, a throw-away store); overrides
    the seeded server of ``conftest.py`` for this module, so ``page`` opens this one."""
    home = tmp_path_factory.mktemp("demo-ui")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    env["TMPDIR"] = str(home)  # the throw-away store lands here (and is removed on exit)
    log_path = home / "serve.log"
    cmd = [
        sys.executable, "-m", "memloci.interfaces.cli", "serve", "--demo", "--port", str(port),
        "--no-maintenance", "--log-level", "warning",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=home)
        try:
            deadline = time.monotonic() + 120
            while True:
                if proc.poll() is not None:
                    pytest.fail(f"memloci serve --demo exited: {log_path.read_text()[-3000:]}")
                with contextlib.suppress(httpx.TransportError):
                    if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    pytest.fail(f"memloci serve --demo did not answer; see {log_path}")
                time.sleep(0.2)
            with httpx.Client(base_url=url, timeout=20) as api:
                yield DemoServer(url, api)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    leftovers = [p for p in home.iterdir() if p.name.startswith("memloci-serve-")]
    assert leftovers == [], "the throw-away demo store was not removed"


def open_tab(page: Page, tab: str) -> None:
    page.goto(f"/memories#{tab}")
    expect(page.get_by_test_id(f"tab-{tab}")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_test_id("list")).not_to_have_attribute("aria-busy", "true")


def row(page: Page, text: str) -> Locator:
    return page.get_by_test_id("row").filter(has_text=text)


# the demo's rows a reader should find in each tab, and at least how many rows it has
TABS = {
    "facts": ("Marta Silva, Solara's head of data, is Sam's manager", 10),
    "episodes": ("I call it Skylark", 25),  # one page of the 36 turns
    "checkpoints": ("telegram-sam-2024-04-06", 1),
    "procedures": ("check Skylark's forecast first", 2),
    "users": ("Sam Rivera", 1),
    "entities": ("Solara", 8),
}


def test_every_tab_of_the_demo_has_rows(page: Page, shot: Shot) -> None:
    page.goto("/memories")
    for tab, (text, at_least) in TABS.items():
        page.get_by_test_id(f"tab-{tab}").click()
        expect(page).to_have_url(re.compile(f"#{tab}$"))
        expect(row(page, text)).to_have_count(1)
        expect(page.get_by_test_id("empty-state")).to_have_count(0)
        assert page.get_by_test_id("row").count() >= at_least, tab
        shot(page, f"demo-{tab}")


def test_the_entity_graph_links_several_entities(page: Page, shot: Shot) -> None:
    open_tab(page, "entities")
    row(page, "Solara").click()
    detail = page.get_by_test_id("detail")
    expect(detail.get_by_test_id("detail-title")).to_have_text("Solara")
    expect(detail.get_by_test_id("entity-memories")).to_contain_text("head of data")
    related = detail.get_by_test_id("related")
    for name in ("Sam", "Marta Silva", "Lisbon"):
        expect(related).to_contain_text(name)
    graph = detail.get_by_test_id("graph")
    expect(graph).to_be_visible()
    memories = graph.locator("[data-kind=memory]").count()
    assert memories >= 3
    assert graph.get_by_test_id("graph-node").count() - memories >= 4  # Solara + 3 or more
    shot(page, "demo-entity-graph")


def test_a_versioned_fact_and_a_corrected_one(page: Page, server: DemoServer) -> None:
    facts = server.api.get("/api/v1/facts/", params={"limit": 100}).json()["items"]
    job = next(f for f in facts if f["key"] == "job")
    assert job["version"] == 2
    page.goto(f"/memories#facts/{job['id']}")
    detail = page.get_by_test_id("detail")
    versions = detail.get_by_test_id("version")
    expect(versions).to_have_count(2)
    expect(versions.first).to_contain_text("forecasting team")
    office = next(f for f in facts if f["key"] == "office")
    assert "Alcântara" in office["content"]
    explained = server.api.get(f"/api/v1/memories/{office['id']}/explain").json()
    assert "Cais do Sodré" in str(explained)  # what it supersedes
    page.goto(f"/memories#facts/{office['id']}")
    expect(detail.get_by_test_id("provenance")).to_contain_text("Cais do Sodré")


def test_the_user_is_known_on_two_channels_and_the_thread_is_checkpointed(page: Page) -> None:
    open_tab(page, "users")
    row(page, "Sam Rivera").first.click()
    detail = page.get_by_test_id("detail")
    expect(detail.get_by_test_id("identifier")).to_have_count(2)
    expect(detail.get_by_test_id("identifiers")).to_contain_text("sam.rivera@example.com")
    expect(detail.get_by_test_id("identifiers")).to_contain_text("sam_rivera")
    open_tab(page, "checkpoints")
    row(page, "telegram-sam-2024-04-06").click()
    messages = page.get_by_test_id("detail").get_by_test_id("message")
    expect(messages).to_have_count(12)
    expect(messages.first).to_contain_text("Pixel and I are planning a day trip")


# ---------------------------------------------------------------------- issue 39's look
def test_the_users_tab_counts_conversations_and_shows_when_last_seen(
    page: Page, server: DemoServer
) -> None:
    """Sam's turns (36 episodes in 3 sessions, a 12-message thread) came from the demo,
    not from an agent's contact: the tab still counts them and says when."""
    users = server.api.get("/api/v1/memory-users/").json()["items"]
    sam = next(u for u in users if u["display_name"] == "Sam Rivera" and not u["merged_into"])
    assert sam["conversation_count"] == 3 and sam["last_seen"] is not None
    open_tab(page, "users")
    cells = row(page, "Sam Rivera").first.locator("td")
    texts = [cells.nth(i).inner_text() for i in range(cells.count())]
    assert "3" in texts, texts
    assert texts[-1].strip() not in ("", "—"), texts  # last seen, a time
    row(page, "Sam Rivera").first.click()
    fields = page.get_by_test_id("detail").get_by_test_id("fields")
    expect(fields).to_contain_text("3")
    expect(fields).not_to_contain_text("0 conversations")


def test_confidence_reads_rounded(page: Page, server: DemoServer) -> None:
    facts = server.api.get("/api/v1/facts/", params={"limit": 100}).json()["items"]
    fact = max(facts, key=lambda f: len(repr(f["confidence"])))  # the longest decimals
    page.goto(f"/memories#facts/{fact['id']}")
    detail = page.get_by_test_id("detail")
    expect(detail.get_by_test_id("detail-title")).to_be_visible()
    shown = detail.locator("dt", has_text="confidence").locator("xpath=following-sibling::dd[1]")
    text = shown.inner_text().strip()
    assert re.fullmatch(r"[01](\.\d{1,2})?", text), text
    assert float(text) == round(fact["confidence"], 2)


LABEL_BOXES = """(svg) => [...svg.querySelectorAll('[data-testid=graph-label]')].map((t) => {
  const b = t.getBoundingClientRect();
  return {text: t.textContent, left: b.left, right: b.right, top: b.top, bottom: b.bottom};
})"""


def test_the_entity_graphs_labels_do_not_overlap(page: Page, shot: Shot) -> None:
    open_tab(page, "entities")
    for name in ("Solara", "Sam", "Lisbon"):
        row(page, name).first.click()
        detail = page.get_by_test_id("detail")
        expect(detail.get_by_test_id("detail-title")).to_have_text(name)  # this one's graph
        graph = detail.get_by_test_id("graph")
        expect(graph).to_have_attribute("aria-label", f"Graph around {name}")
        boxes = graph.evaluate(LABEL_BOXES)
        assert all(b["right"] > b["left"] for b in boxes), boxes  # drawn, not detached
        assert len(boxes) >= 4, boxes
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                side = a["right"] <= b["left"] + 0.5 or b["right"] <= a["left"] + 0.5
                apart = side or a["bottom"] <= b["top"] + 0.5 or b["bottom"] <= a["top"] + 0.5
                assert apart, (name, a, b)
        frame = graph.evaluate("(svg) => svg.getBoundingClientRect().toJSON()")
        cut = [b for b in boxes if b["right"] > frame["right"] + 1 or b["left"] < frame["left"] - 1]
        assert cut == [], (name, frame, cut)  # none cut off
        entity_names = graph.locator("[data-kind=entity] [data-testid=graph-label]")
        names = entity_names.evaluate_all("(ts) => ts.map((t) => t.textContent)")
        assert names and all("…" not in t for t in names), names  # names in full
        shot(page, f"demo-graph-{name.lower()}")


# a word broken across two lines has two client rects (a hyphen is a place to break)
SPLIT_WORDS = """(cells) => {
  const split = [];
  for (const cell of cells) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const re = /[^\\s-]+/g;
      let m;
      while ((m = re.exec(node.textContent))) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
        if (lines.size > 1) split.push(m[0]);
      }
    }
  }
  return split;
}"""


@pytest.mark.parametrize("tab", ["facts", "episodes", "procedures", "users", "entities"])
def test_at_420_px_the_table_wraps_between_words(page: Page, tab: str) -> None:
    page.set_viewport_size({"width": 420, "height": 800})
    open_tab(page, tab)
    cells = page.get_by_test_id("row").locator("td:not(.id)")  # ids may break anywhere
    assert cells.count() > 4
    assert cells.evaluate_all(SPLIT_WORDS) == []
