"""The web UI's Context tab, end to end: the real server, headless Chromium, and the REST
API to check that the page shows the block and the report the server composes."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# Without playwright the `browser` fixture skips (or, on CI, fails) and says why.
with contextlib.suppress(ImportError):
    from playwright.sync_api import expect

if TYPE_CHECKING:
    from playwright.sync_api import Page
    from tests.browser.conftest import Server

pytestmark = pytest.mark.browser
Shot = Callable[["Page", str], Path]
PROMPT = "Can you help me plan a weekend in Porto?"


def open_context(page: Page, query: str = "") -> None:
    page.goto(f"/memories{query}#context")
    expect(page.get_by_test_id("tab-context")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_test_id("context-view")).to_be_visible()


def compose(page: Page, prompt: str, *, user: str = "", budget: str = "") -> None:
    page.get_by_test_id("context-user").fill(user)
    page.get_by_test_id("context-prompt").fill(prompt)
    if budget:
        page.get_by_test_id("context-budget").fill(budget)
    page.get_by_test_id("context-button").click()
    expect(page.get_by_test_id("context-result")).not_to_have_attribute("aria-busy", "true")


def report(server: Server, body: dict[str, Any], namespace: str | None = None) -> Any:
    params = {"namespace": namespace} if namespace else {}
    r = server.api.post("/api/v1/context/report", json=body, params=params)
    assert r.status_code == 200, r.text
    return r.json()


def test_the_context_tab_shows_the_block_its_sections_and_why(
    page: Page, server: Server, shot: Shot
) -> None:
    open_context(page)
    # the list's toolbar and panes give way to the view; the budget starts at 1000
    expect(page.get_by_test_id("toolbar")).to_be_hidden()
    expect(page.get_by_test_id("list-view")).to_be_hidden()
    expect(page.get_by_test_id("context-budget")).to_have_value("1000")
    # 2,000 tokens: the cacheable part (15 % of it) holds every fact of this store
    compose(page, PROMPT, user="sam", budget="2000")
    expected = report(server, {"prompt": PROMPT, "user": "sam", "budget": 2000})

    # the block exactly as the agent gets it, in monospace and wrapped as it is
    block = page.get_by_test_id("context-block")
    assert block.text_content() == expected["block"]
    assert "Sam prefers dark roast coffee" in expected["block"]
    style = block.evaluate(
        "el => [getComputedStyle(el).whiteSpace, getComputedStyle(el).fontFamily]"
    )
    assert style[0] == "pre-wrap" and "monospace" in style[1], style
    expect(page.get_by_test_id("context-tokens")).to_have_text(
        f"{expected['tokens']} of 2000 tokens used"
    )

    # each section with its title, its tokens and whether it is cacheable
    sections = page.get_by_test_id("context-section")
    expect(sections).to_have_count(len(expected["sections"]))
    for n, want in enumerate(expected["sections"]):
        section = sections.nth(n)
        expect(section.get_by_test_id("context-section-title")).to_have_text(want["title"])
        expect(section.get_by_test_id("context-section-tokens")).to_have_text(
            re.compile(rf"^{want['tokens']} tokens?$")
        )
        expect(section.get_by_test_id("context-cacheable")).to_have_count(int(want["cacheable"]))
        expect(section.get_by_test_id("context-item")).to_have_count(len(want["items"]))
    memory = sections.filter(has=page.get_by_text("## Your Memory", exact=True))
    expect(memory.get_by_test_id("context-cacheable")).to_have_text("cacheable")
    # every item says why it is in the block, with its score
    coffee = memory.get_by_test_id("context-item").filter(has_text="dark roast coffee")
    expect(coffee.get_by_test_id("context-why")).to_have_text(
        "kept in 'Your Memory' (protected, then newest first)"
    )
    expect(coffee.get_by_test_id("context-score")).to_contain_text("score 1.000")
    # the prompt brought up the Porto conversation, in a section of its own (not cacheable)
    dynamic = [s for s in expected["sections"] if not s["cacheable"]]
    assert dynamic, expected["sections"]
    first = dynamic[0]["items"][0]
    item = page.get_by_test_id("context-item").filter(has_text=first["lines"][0]).first
    expect(item.get_by_test_id("context-why")).to_have_text(first["why"])
    expect(item.get_by_test_id("context-score")).to_contain_text(f"score {first['score']:.3f}")

    # the hits left out below the threshold, folded until opened
    left_out = page.get_by_test_id("context-left-out")
    n = len(expected["left_out"])
    assert n > 0, expected
    expect(left_out.get_by_test_id("context-left-out-summary")).to_contain_text(
        f"{n} search hit{'s' if n != 1 else ''} left out below the threshold"
    )
    expect(left_out.get_by_test_id("context-left-out-item").first).to_be_hidden()
    left_out.get_by_test_id("context-left-out-summary").click()
    expect(left_out.get_by_test_id("context-left-out-item")).to_have_count(n)
    expect(left_out.get_by_test_id("context-why").first).to_contain_text(
        "below the relevance threshold"
    )
    shot(page, "tab-context")

    # a memory id opens the memory in its own tab
    fact_id = server.ids["facts"]["Sam prefers dark roast coffee, no sugar"]
    coffee.get_by_test_id("context-memory-id").click()
    expect(page).to_have_url(re.compile(f"#facts/{fact_id}$"))
    expect(page.get_by_test_id("detail-content")).to_have_text(
        "Sam prefers dark roast coffee, no sugar"
    )
    expect(page.get_by_test_id("toolbar")).to_be_visible()


def test_the_budget_and_the_user_are_sent(page: Page, server: Server) -> None:
    open_context(page)
    compose(page, "", user="sam", budget="100")
    expected = report(server, {"user": "sam", "budget": 100})
    assert page.get_by_test_id("context-block").text_content() == expected["block"]
    expect(page.get_by_test_id("context-tokens")).to_have_text(
        f"{expected['tokens']} of 100 tokens used"
    )
    # no prompt: only the cacheable part, and no list of hits left out
    expect(page.get_by_test_id("context-left-out")).to_have_count(0)
    expect(page.get_by_test_id("context-dynamic")).to_have_count(0)
    # another user sees the shared facts, not Sam's
    compose(page, PROMPT, user="nobody-else", budget="1000")
    block = page.get_by_test_id("context-block")
    expect(block).to_contain_text("The Atlas project ships its public beta in March")
    expect(block).not_to_contain_text("Sam prefers dark roast coffee")


def test_memory_content_is_shown_as_text_never_as_html(page: Page, server: Server) -> None:
    html = "<img src=x onerror=alert(1)>"
    body = {"content": html, "category": "context", "user": "mallory"}
    assert server.api.post("/api/v1/facts/?namespace=xss-ctx", json=body).status_code == 201
    alerts: list[str] = []
    page.on("dialog", lambda dialog: (alerts.append(dialog.message), dialog.dismiss()))
    open_context(page, "?namespace=xss-ctx")
    compose(page, "img src onerror alert", user="mallory")
    expect(page.get_by_test_id("context-block")).to_contain_text(html)
    expected = report(
        server, {"prompt": "img src onerror alert", "user": "mallory", "budget": 1000}, "xss-ctx"
    )
    assert page.get_by_test_id("context-block").text_content() == expected["block"]
    item = page.get_by_test_id("context-item").filter(has_text=html).first
    expect(item.get_by_test_id("context-lines")).to_contain_text(html)
    page.get_by_test_id("context-left-out-summary").click()
    assert page.locator("#context-view img").count() == 0
    assert alerts == []


def test_an_error_shows_in_the_banner(page: Page) -> None:
    open_context(page, "?namespace=not%20a%20namespace!")
    compose(page, PROMPT)
    banner = page.get_by_test_id("error-banner")
    expect(banner).to_be_visible()
    expect(banner.get_by_test_id("error-code")).to_contain_text("invalid_input")
    expect(banner.get_by_test_id("error-code")).to_contain_text("HTTP 400")
    expect(page.get_by_test_id("context-error")).to_be_visible()
