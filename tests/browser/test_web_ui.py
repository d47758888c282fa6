"""The web UI at /memories, end to end: the real server, headless Chromium, and the REST
API to check that what the page shows and does is what the store holds."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

# Without playwright the `browser` fixture skips (or, on CI, fails) and says why.
with contextlib.suppress(ImportError):
    from playwright.sync_api import expect

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page, Route
    from tests.browser.conftest import Server

pytestmark = pytest.mark.browser
Shot = Callable[["Page", str], Path]


def open_tab(page: Page, tab: str, query: str = "") -> None:
    page.goto(f"/memories{query}#{tab}")
    expect(page.get_by_test_id(f"tab-{tab}")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_test_id("list")).not_to_have_attribute("aria-busy", "true")


def switch_tab(page: Page, tab: str) -> None:
    """Click a tab and wait until its list is loaded: a search typed before that can be
    lost to the tab's own first load."""
    page.get_by_test_id(f"tab-{tab}").click()
    expect(page.get_by_test_id(f"tab-{tab}")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_test_id("list")).not_to_have_attribute("aria-busy", "true")


def row(page: Page, text: str) -> Locator:
    return page.get_by_test_id("row").filter(has_text=text)


def search(page: Page, text: str) -> None:
    page.get_by_test_id("search-input").fill(text)
    page.get_by_test_id("search-input").press("Enter")


def confirm_dialog(page: Page) -> Locator:
    dialog = page.get_by_test_id("confirm-dialog")
    expect(dialog).to_be_visible()
    return dialog


# ------------------------------------------------------------------ the page itself
def test_page_and_assets_are_served_without_auth(server: Server) -> None:
    page = httpx.get(f"{server.url}/memories")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert 'data-testid="tabs"' in page.text
    for asset, kind in [("app.js", "javascript"), ("app.css", "text/css")]:
        response = httpx.get(f"{server.url}/static/{asset}")
        assert response.status_code == 200 and kind in response.headers["content-type"]
    missing = httpx.get(f"{server.url}/static/nope.js")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"


def test_root_redirects_to_the_ui(page: Page) -> None:
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/memories"))
    expect(page.get_by_test_id("tab-facts")).to_have_attribute("aria-selected", "true")


# ------------------------------------------------------------------ tabs
TAB_ROWS = {
    "facts": "Sam prefers dark roast coffee",
    "episodes": "weekend in Porto",
    "checkpoints": "sam-porto-chat",
    "procedures": "call the forecast tool",
    "users": "telegram:12345",
    "entities": "Acme Robotics",
}


def test_every_tab_shows_its_rows(page: Page, shot: Shot) -> None:
    page.goto("/memories")
    for tab, text in TAB_ROWS.items():
        page.get_by_test_id(f"tab-{tab}").click()
        expect(page).to_have_url(re.compile(f"#{tab}$"))
        expect(row(page, text)).to_have_count(1)
        expect(page.get_by_test_id("empty-state")).to_have_count(0)
        shot(page, f"tab-{tab}")


EMPTY = {
    "facts": "No facts yet",
    "episodes": "No episodes yet",
    "checkpoints": "No checkpoints yet",
    "procedures": "No procedures yet",
    "users": "No users yet",
    "entities": "No entities yet",
}


def test_every_tab_has_an_empty_state(page: Page, shot: Shot) -> None:
    page.goto("/memories?namespace=nothing-here")
    expect(page.get_by_test_id("namespace")).to_have_value("nothing-here")
    for tab, text in EMPTY.items():
        page.get_by_test_id(f"tab-{tab}").click()
        expect(page.get_by_test_id("empty-state")).to_contain_text(text)
        expect(page.get_by_test_id("row")).to_have_count(0)
    shot(page, "empty-state")


def test_switching_namespace_and_paging(page: Page, server: Server) -> None:
    turns = [{"role": "user", "content": f"bulk message number {i}"} for i in range(30)]
    response = server.api.post("/api/v1/turns/?namespace=bulk", json={"messages": turns})
    assert response.status_code == 201, response.text
    open_tab(page, "episodes")
    expect(row(page, "bulk message")).to_have_count(0)
    page.get_by_test_id("namespace").fill("bulk")
    page.get_by_test_id("namespace").press("Enter")
    expect(page).to_have_url(re.compile(r"namespace=bulk"))
    expect(page.get_by_test_id("pager-info")).to_have_text("1–25 of 30")
    expect(page.get_by_test_id("row")).to_have_count(25)
    page.get_by_test_id("page-next").click()
    expect(page.get_by_test_id("pager-info")).to_have_text("26–30 of 30")
    expect(page.get_by_test_id("row")).to_have_count(5)
    expect(page.get_by_test_id("page-next")).to_be_disabled()
    page.get_by_test_id("page-prev").click()
    expect(page.get_by_test_id("row")).to_have_count(25)


def test_paging_while_new_memories_arrive_skips_and_repeats_nothing(
    page: Page, server: Server
) -> None:
    turns = [{"role": "user", "content": f"old turn no{i:02d}"} for i in range(30)]
    assert server.api.post("/api/v1/turns/?namespace=live", json={"messages": turns}).is_success
    open_tab(page, "episodes", "?namespace=live")
    expect(page.get_by_test_id("pager-info")).to_have_text("1–25 of 30")
    first = set(page.get_by_test_id("row").all_inner_texts())
    # an agent adds three turns: they go to the top of the newest-first list
    more = [{"role": "user", "content": f"new turn no{i}"} for i in range(3)]
    assert server.api.post("/api/v1/turns/?namespace=live", json={"messages": more}).is_success
    page.get_by_test_id("page-next").click()
    expect(page.get_by_test_id("row")).to_have_count(5)  # by offset: 8, 3 of them seen
    second = page.get_by_test_id("row").all_inner_texts()
    assert not first & set(second)
    assert sorted(re.findall(r"old turn no(\d\d)", " ".join(second))) == [
        f"{i:02d}" for i in range(5)
    ]
    expect(page.get_by_test_id("page-next")).to_be_disabled()
    page.get_by_test_id("page-prev").click()  # page 1 again: the newest, as it is now
    expect(row(page, "new turn")).to_have_count(3)
    expect(page.get_by_test_id("pager-info")).to_have_text("1–25 of 33")


# ------------------------------------------------------------------ search and filters
def test_search_finds_facts_and_filters_other_tabs(page: Page, shot: Shot) -> None:
    open_tab(page, "facts")
    search(page, "coffee roast")  # hybrid search ranks every fact; the match comes first
    first = page.get_by_test_id("row").first
    expect(first).to_contain_text("dark roast coffee")
    expect(first).to_contain_text("fulltext")
    expect(page.locator("th", has_text="Score")).to_be_visible()
    expect(page.get_by_test_id("pager-info")).to_contain_text("results")
    shot(page, "search-facts")
    page.get_by_test_id("reset-button").click()
    expect(page.locator("th", has_text="Score")).to_have_count(0)

    switch_tab(page, "entities")
    search(page, "acme")
    expect(page.get_by_test_id("row")).to_have_count(1)
    expect(row(page, "Acme Robotics")).to_have_count(1)

    switch_tab(page, "users")
    search(page, "email")
    expect(row(page, "email:sam@example.com")).to_have_count(1)
    expect(row(page, "telegram:12345")).to_have_count(0)
    search(page, "zeppelin")
    expect(page.get_by_test_id("empty-state")).to_have_text("No users match “zeppelin”.")


def test_filters_by_category_user_and_type(page: Page, server: Server) -> None:
    open_tab(page, "facts")
    page.get_by_test_id("filter-category").fill("preference")
    page.get_by_test_id("search-button").click()
    want = server.api.get("/api/v1/facts/", params={"category": "preference"}).json()["total"]
    expect(page.get_by_test_id("row")).to_have_count(want)
    expect(row(page, "allergic")).to_have_count(0)
    page.get_by_test_id("reset-button").click()
    expect(row(page, "allergic")).to_have_count(1)

    switch_tab(page, "entities")
    page.get_by_test_id("filter-type").select_option("person")
    expect(page.get_by_test_id("row")).to_have_count(1)
    expect(row(page, "Dana Reyes")).to_have_count(1)

    switch_tab(page, "episodes")
    page.get_by_test_id("filter-session").fill("porto-trip")
    page.get_by_test_id("search-button").click()
    expect(page.get_by_test_id("row")).to_have_count(3)


# ------------------------------------------------------------------ detail, edit, delete
def test_open_a_fact_edit_it_and_see_version_two(page: Page, server: Server, shot: Shot) -> None:
    fact_id = server.ids["facts"]["Sam is allergic to peanuts"]
    open_tab(page, "facts")
    row(page, "allergic to peanuts").click()
    expect(page).to_have_url(re.compile(f"#facts/{fact_id}$"))
    detail = page.get_by_test_id("detail")
    expect(detail.get_by_test_id("detail-id")).to_have_text(fact_id)
    expect(detail.get_by_test_id("detail-content")).to_have_text("Sam is allergic to peanuts")
    expect(detail.get_by_test_id("version")).to_have_count(1)
    expect(detail.get_by_test_id("provenance-body")).not_to_contain_text("Loading")

    detail.get_by_test_id("edit-button").click()
    detail.get_by_test_id("edit-content").fill("Sam is allergic to peanuts and cashews")
    detail.get_by_test_id("edit-save").click()

    versions = detail.get_by_test_id("version")
    expect(versions).to_have_count(2)
    expect(versions.first).to_have_attribute("data-version", "2")
    expect(versions.first).to_contain_text("peanuts and cashews")
    expect(versions.last).to_contain_text("Sam is allergic to peanuts")
    expect(detail.get_by_test_id("detail-content")).to_have_text(
        "Sam is allergic to peanuts and cashews"
    )
    expect(row(page, "peanuts and cashews")).to_have_count(1)
    shot(page, "fact-edited")
    stored = server.api.get(f"/api/v1/facts/{fact_id}").json()
    assert stored["memory"]["version"] == 2
    assert stored["memory"]["content"] == "Sam is allergic to peanuts and cashews"


def test_batch_delete_two_facts_through_the_modal(page: Page, server: Server, shot: Shot) -> None:
    doomed = [text for text in server.ids["facts"] if text.startswith("Scratch note")]
    ids = [server.ids["facts"][text] for text in doomed]
    open_tab(page, "facts")
    for text in doomed:
        row(page, text).get_by_test_id("row-check").check()
    expect(page.get_by_test_id("delete-selected")).to_have_text("Delete selected (2)")

    page.get_by_test_id("delete-selected").click()  # cancel first: nothing changes
    confirm_dialog(page).get_by_test_id("confirm-cancel").click()
    expect(page.get_by_test_id("confirm-dialog")).to_be_hidden()
    expect(row(page, "Scratch note")).to_have_count(2)

    page.get_by_test_id("delete-selected").click()
    dialog = confirm_dialog(page)
    expect(dialog.get_by_test_id("confirm-title")).to_have_text("Delete 2 facts?")
    for text in doomed:
        expect(dialog.get_by_test_id("confirm-message")).to_contain_text(text)
    shot(page, "batch-delete-confirm")
    dialog.get_by_test_id("confirm-ok").click()

    expect(row(page, "Scratch note")).to_have_count(0)
    expect(page.get_by_test_id("notice")).to_contain_text("Deleted 2 facts")
    expect(page.get_by_test_id("delete-selected")).to_be_disabled()
    listed = server.api.get("/api/v1/facts/", params={"limit": 500}).json()["items"]
    assert {f["id"] for f in listed}.isdisjoint(ids)
    for memory_id in ids:  # soft delete: gone from the list, history kept
        assert server.api.get(f"/api/v1/facts/{memory_id}").json()["memory"]["valid_until"]


def test_delete_one_entity_from_its_detail(page: Page, server: Server) -> None:
    pixel = server.ids["pixel"]
    page.goto(f"/memories#entities/{pixel}")
    detail = page.get_by_test_id("detail")
    expect(detail.get_by_test_id("detail-title")).to_have_text("Pixel")
    detail.get_by_test_id("delete-button").click()
    confirm_dialog(page).get_by_test_id("confirm-ok").click()
    expect(row(page, "Pixel")).to_have_count(0)
    expect(page).to_have_url(re.compile(r"#entities$"))
    assert server.api.get(f"/api/v1/entities/{pixel}").status_code == 404


# ------------------------------------------------------------------ other kinds
def test_entity_detail_with_graph_and_links(page: Page, server: Server, shot: Shot) -> None:
    open_tab(page, "entities")
    row(page, "Acme Robotics").click()
    detail = page.get_by_test_id("detail")
    expect(detail.get_by_test_id("detail-title")).to_have_text("Acme Robotics")
    expect(detail.get_by_test_id("entity-memories")).to_contain_text("leads the Atlas team")
    expect(detail.get_by_test_id("related")).to_contain_text("Dana Reyes")
    graph = detail.get_by_test_id("graph")
    expect(graph).to_be_visible()
    # Acme, its two memories, and Dana + Atlas mentioned with it
    expect(graph.get_by_test_id("graph-node")).to_have_count(5)
    expect(graph.locator("[data-kind=memory]")).to_have_count(2)
    assert graph.get_by_test_id("graph-link").count() >= 4
    shot(page, "entity-graph")

    graph.locator(f"[data-id='{server.ids['dana']}'] circle").click()
    expect(detail.get_by_test_id("detail-title")).to_have_text("Dana Reyes")
    detail.get_by_test_id("memory-link").first.click()
    expect(page.get_by_test_id("tab-facts")).to_have_attribute("aria-selected", "true")
    expect(detail.get_by_test_id("detail-content")).to_contain_text("leads the Atlas team")
    expect(detail.get_by_test_id("provenance")).to_contain_text("Acme Robotics")


def test_checkpoint_shows_the_thread_messages(page: Page, shot: Shot) -> None:
    open_tab(page, "checkpoints")
    row(page, "sam-porto-chat").click()
    messages = page.get_by_test_id("detail").get_by_test_id("message")
    expect(messages).to_have_count(3)
    expect(messages.first).to_contain_text("Can you help me plan a weekend in Porto?")
    expect(messages.nth(1)).to_contain_text("assistant")
    shot(page, "checkpoint")


def test_user_identifiers_and_merge(page: Page, server: Server, shot: Shot) -> None:
    open_tab(page, "users")
    row(page, "email:sam@example.com").click()
    detail = page.get_by_test_id("detail")
    expect(detail.get_by_test_id("identifier")).to_have_text(["emailsam@example.com"])
    detail.get_by_test_id("merge-into").fill("telegram:12345")
    detail.get_by_test_id("merge-button").click()
    confirm_dialog(page).get_by_test_id("confirm-ok").click()
    expect(detail.get_by_test_id("detail-id")).to_have_text("telegram:12345")
    expect(detail.get_by_test_id("identifiers")).to_contain_text("sam@example.com")
    expect(detail.get_by_test_id("identifiers")).to_contain_text("12345")
    shot(page, "user-merged")
    merged = server.api.get("/api/v1/memory-users/telegram:12345").json()
    assert merged["identifiers"]["email"] == "sam@example.com"


def test_user_text_is_shown_as_text_never_as_html(page: Page, server: Server) -> None:
    html = '<img src="/x" onerror="document.title=1"> <b>bold</b> claims'
    body = {"content": html, "category": "context"}
    assert server.api.post("/api/v1/facts/?namespace=xss", json=body).status_code == 201
    open_tab(page, "facts", "?namespace=xss")
    row(page, "<b>bold</b>").click()
    expect(page.get_by_test_id("detail-content")).to_have_text(html)
    assert page.locator("img, b").count() == 0
    assert page.title() != "1"


# ------------------------------------------------------------------ errors and auth
def test_unknown_memory_shows_the_api_error_in_the_banner(page: Page, shot: Shot) -> None:
    page.goto("/memories#facts/NoSuch99")
    banner = page.get_by_test_id("error-banner")
    expect(banner).to_be_visible()
    expect(banner.get_by_test_id("error-message")).to_have_text(
        "no memory 'NoSuch99' in namespace 'default'"
    )
    expect(banner.get_by_test_id("error-code")).to_contain_text("not_found")
    expect(banner.get_by_test_id("error-code")).to_contain_text("HTTP 404")
    expect(banner.get_by_test_id("error-hint")).to_contain_text("Hint:")
    expect(page.get_by_test_id("detail-error")).to_be_visible()
    shot(page, "error-404")
    banner.get_by_test_id("error-close").click()
    expect(banner).to_be_hidden()


def test_invalid_edit_shows_the_validation_error(page: Page, server: Server) -> None:
    fact_id = server.ids["facts"]["Sam likes hiking in the Sintra hills on weekends"]
    page.goto(f"/memories#facts/{fact_id}")
    detail = page.get_by_test_id("detail")
    detail.get_by_test_id("edit-button").click()
    detail.get_by_test_id("edit-content").fill("hey")
    detail.get_by_test_id("edit-save").click()
    banner = page.get_by_test_id("error-banner")
    expect(banner).to_be_visible()
    expect(banner.get_by_test_id("error-code")).to_contain_text("HTTP 400")
    expect(detail.get_by_test_id("version")).to_have_count(1)
    assert server.api.get(f"/api/v1/facts/{fact_id}").json()["memory"]["version"] == 1


def test_api_key_is_asked_for_and_sent(locked_page: Page, locked_server: Server) -> None:
    page = locked_page
    page.goto("/memories#facts")
    dialog = page.get_by_test_id("key-dialog")
    expect(dialog).to_be_visible()
    dialog.get_by_test_id("key-input").fill(locked_server.ids["secret"])
    dialog.get_by_test_id("key-input").press("Enter")  # Enter saves (not "forget")
    expect(row(page, "The locked store holds this one fact")).to_have_count(1)
    stored = page.evaluate("localStorage.getItem('memloci.apiKey')")
    assert stored == locked_server.ids["secret"]

    page.reload()  # the key is remembered: no prompt this time
    expect(row(page, "The locked store holds this one fact")).to_have_count(1)
    expect(page.get_by_test_id("key-dialog")).to_be_hidden()


def test_a_request_answered_after_the_key_was_saved_uses_it(
    locked_page: Page, locked_server: Server
) -> None:
    """The list and the namespaces go out together without a key: the namespaces' 401
    asks for it, and the list's 401, held back until the key is saved, retries with the
    new key instead of asking again."""
    page = locked_page
    held: list[Route] = []

    def hold_the_first(route: Route) -> None:
        if held:
            route.continue_()
        else:
            held.append(route)

    page.route(re.compile(r".*/api/v1/facts/(\?.*)?$"), hold_the_first)
    page.goto("/memories#facts")
    dialog = page.get_by_test_id("key-dialog")
    expect(dialog).to_be_visible()
    for _ in range(200):  # the handler runs while playwright waits
        if held:
            break
        page.wait_for_timeout(25)
    assert held, "the list request was not held"
    dialog.get_by_test_id("key-input").fill(locked_server.ids["secret"])
    dialog.get_by_test_id("key-save").click()
    expect(dialog).to_be_hidden()
    held[0].continue_()  # sent without a key: a 401 now
    expect(row(page, "The locked store holds this one fact")).to_have_count(1)
    expect(dialog).to_be_hidden()


def test_a_wrong_key_shows_the_error(locked_page: Page) -> None:
    page = locked_page
    page.goto("/memories#facts")
    dialog = page.get_by_test_id("key-dialog")
    dialog.get_by_test_id("key-input").fill("mlk_wrong_key")
    dialog.get_by_test_id("key-save").click()
    banner = page.get_by_test_id("error-banner")
    expect(banner.get_by_test_id("error-code")).to_contain_text("unauthorized")
    expect(page.get_by_test_id("list-error")).to_be_visible()


# ------------------------------------------------------------------ the README picture
def test_readme_screenshot(page: Page, server: Server, docs_shot: Callable[[Page], Path]) -> None:
    open_tab(page, "facts")
    row(page, "leads the Atlas team").click()
    detail = page.get_by_test_id("detail")
    expect(detail.get_by_test_id("provenance")).to_contain_text("Acme Robotics")
    page.mouse.move(0, 0)
    assert docs_shot(page).stat().st_size > 10_000
