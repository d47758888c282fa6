"""The web UI on a 360 px wide phone screen: every tab, with a row opened, fits the
width (nothing makes the page scroll sideways; wide tables scroll inside their pane),
and so does the Context tab with a composed block, at 360 and 420 px."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

with contextlib.suppress(ImportError):
    from playwright.sync_api import expect

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page
    from tests.browser.conftest import Server

pytestmark = pytest.mark.browser
PHONE = {"width": 360, "height": 740}
TABS = ["facts", "episodes", "checkpoints", "procedures", "users", "entities"]
BUTTONS = [*TABS, "context"]  # the Context tab has no rows: tested on its own below

# every visible element that sticks out past the right edge of the window, unless it
# sits inside a box that scrolls sideways by itself
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const scrolls = (el) => {
    for (let p = el.parentElement; p; p = p.parentElement) {
      const style = getComputedStyle(p);
      if (["auto", "scroll", "hidden"].includes(style.overflowX)) return true;
    }
    return false;
  };
  const out = [];
  for (const el of document.body.querySelectorAll("*")) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    if (box.right > width + 1 && !scrolls(el)) {
      out.push(`${el.tagName.toLowerCase()}.${el.className} right=${Math.round(box.right)}`);
    }
  }
  return {width, scrollWidth: document.documentElement.scrollWidth, out: out.slice(0, 10)};
}"""


@pytest.fixture
def phone(browser: Browser, server: Server) -> Iterator[Page]:
    context = browser.new_context(base_url=server.url, viewport=PHONE)
    context.route(
        "**/*",
        lambda route: (
            route.continue_() if route.request.url.startswith(server.url) else route.abort()
        ),
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert errors == [], errors


def _fits(page: Page) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(OVERFLOW)
    return result


@pytest.mark.parametrize("tab", TABS)
def test_every_tab_fits_a_360_px_screen(phone: Page, tab: str) -> None:
    phone.goto(f"/memories#{tab}")
    expect(phone.get_by_test_id(f"tab-{tab}")).to_have_attribute("aria-selected", "true")
    expect(phone.get_by_test_id("list")).not_to_have_attribute("aria-busy", "true")
    rows = phone.get_by_test_id("row")
    expect(rows.first).to_be_visible()
    for name in BUTTONS:  # every tab button is on screen, none pushed off the edge
        box = phone.get_by_test_id(f"tab-{name}").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    result = _fits(phone)
    assert result["scrollWidth"] <= result["width"] and result["out"] == [], result
    rows.first.click()
    expect(phone.get_by_test_id("detail-title")).to_be_visible()
    result = _fits(phone)
    assert result["scrollWidth"] <= result["width"] and result["out"] == [], result


@pytest.mark.parametrize("width", [360, 420])
def test_the_context_tab_fits_a_small_screen(
    phone: Page, width: int, shot: Callable[[Page, str], Path]
) -> None:
    phone.set_viewport_size({"width": width, "height": PHONE["height"]})
    phone.goto("/memories#context")
    expect(phone.get_by_test_id("tab-context")).to_have_attribute("aria-selected", "true")
    for name in BUTTONS:
        box = phone.get_by_test_id(f"tab-{name}").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    result = _fits(phone)
    assert result["scrollWidth"] <= result["width"] and result["out"] == [], result
    phone.get_by_test_id("context-user").fill("sam")
    phone.get_by_test_id("context-prompt").fill("Can you help me plan a weekend in Porto?")
    phone.get_by_test_id("context-button").click()
    expect(phone.get_by_test_id("context-block")).to_contain_text("## Your Memory")
    phone.get_by_test_id("context-left-out-summary").click()
    expect(phone.get_by_test_id("context-left-out-item").first).to_be_visible()
    # the block, the sections and the long "why" lines wrap inside the screen
    result = _fits(phone)
    assert result["scrollWidth"] <= result["width"] and result["out"] == [], result
    shot(phone, f"context-{width}px")
