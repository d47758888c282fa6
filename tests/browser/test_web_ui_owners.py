"""The web UI's filters match exactly (a session filter lists that session's memories,
"Show their facts" that user's), so select-all + Delete selected deletes nothing of
another session or user; and the smaller fixes around it: the namespace suggestions,
a malformed address, the banner after a good key, an edit of a CRLF fact, a forgotten
fact opened by its address. A server of its own (module scope), so the deletes here
do not change what the other browser tests see."""

from __future__ import annotations

import contextlib
import re
from typing import TYPE_CHECKING, Any

import pytest

with contextlib.suppress(ImportError):
    from playwright.sync_api import expect

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page
    from tests.browser.conftest import Server

pytestmark = pytest.mark.browser


def open_tab(page: Page, tab: str, query: str = "") -> None:
    page.goto(f"/memories{query}#{tab}")
    expect(page.get_by_test_id(f"tab-{tab}")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_test_id("list")).not_to_have_attribute("aria-busy", "true")


def row(page: Page, text: str) -> Locator:
    return page.get_by_test_id("row").filter(has_text=text)


def _ok(response: Any) -> Any:
    assert response.is_success, response.text
    return response.json()


def _turns(server: Server, user: str, session: str, *texts: str, ns: str = "owners") -> list[str]:
    body = {"messages": [{"role": "user", "content": t} for t in texts], "user": user,
            "session": session}  # fmt: skip
    return [m["id"] for m in _ok(server.api.post(f"/api/v1/turns/?namespace={ns}", json=body))]


def _current(server: Server, kind: str, ns: str = "owners", **params: str) -> set[str]:
    got = server.api.get(f"/api/v1/{kind}/", params={"namespace": ns, "limit": 500, **params})
    return {m["id"] for m in _ok(got)["items"]}


# ------------------------------------------------------------------ exact filters
def test_session_filter_then_select_all_deletes_only_that_session(
    page: Page, server: Server
) -> None:
    s9 = _turns(server, "sam", "s9", "Sam booked the ferry to Madeira", "Sam packed sunscreen")
    s7 = _turns(server, "ana", "s7", "Ana asked about the garden tulips")
    other_sam = _turns(server, "sam", "s8", "Sam renewed the passport")
    open_tab(page, "episodes", "?namespace=owners")
    expect(page.get_by_test_id("row")).to_have_count(4)
    page.get_by_test_id("filter-session").fill("s9")
    page.get_by_test_id("search-button").click()
    expect(page.get_by_test_id("row")).to_have_count(2)
    expect(row(page, "Madeira")).to_have_count(1)
    expect(row(page, "tulips")).to_have_count(0)

    page.get_by_test_id("select-all").check()
    expect(page.get_by_test_id("delete-selected")).to_have_text("Delete selected (2)")
    page.get_by_test_id("delete-selected").click()
    dialog = page.get_by_test_id("confirm-dialog")
    expect(dialog).to_be_visible()
    message = dialog.get_by_test_id("confirm-message")
    expect(message.locator("li")).to_have_count(2)
    for item in message.locator("li").all():  # each line says whose memory it is
        expect(item).to_contain_text("user sam")
        expect(item).to_contain_text("session s9")
    dialog.get_by_test_id("confirm-ok").click()
    expect(page.get_by_test_id("notice")).to_contain_text("Deleted 2 episodes")
    expect(page.get_by_test_id("empty-state")).to_be_visible()

    assert _current(server, "episodes") == set(s7) | set(other_sam)
    for memory_id in s9:
        got = server.api.get(f"/api/v1/episodes/{memory_id}", params={"namespace": "owners"})
        assert _ok(got)["memory"]["valid_until"]


def test_show_their_facts_lists_only_that_users_facts(page: Page, server: Server) -> None:
    q = {"namespace": "owners"}
    _ok(server.api.post("/api/v1/memory-users/", params=q, json={"id": "pu"}))
    body = {"content": "Pu drinks oolong tea every morning", "user": "pu"}
    pu_fact = _ok(server.api.post("/api/v1/facts/", params=q, json=body))["memory"]["id"]
    shared = {"content": "Alice says the oolong shop moved to Porto", "scope": "global"}
    _ok(server.api.post("/api/v1/facts/", params=q, json=shared))
    open_tab(page, "users", "?namespace=owners")
    row(page, "pu").click()
    page.get_by_test_id("detail").get_by_test_id("user-facts").click()
    expect(page.get_by_test_id("tab-facts")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_test_id("filter-user")).to_have_value("pu")
    expect(page.get_by_test_id("row")).to_have_count(1)
    expect(page.get_by_test_id("row")).to_have_attribute("data-id", pu_fact)

    page.get_by_test_id("search-input").fill("oolong")  # the search keeps the filter
    page.get_by_test_id("search-input").press("Enter")
    expect(page.locator("th", has_text="Score")).to_be_visible()
    expect(page.get_by_test_id("row")).to_have_count(1)
    expect(row(page, "Pu drinks oolong")).to_have_count(1)


# ------------------------------------------------------------------ namespaces, address
def test_namespace_box_suggests_every_namespace_the_server_reports(
    page: Page, server: Server
) -> None:
    _ok(server.api.post("/api/v1/facts/?namespace=team-x", json={"content": "Team X fact"}))
    reported = _ok(server.api.get("/api/v1/namespaces"))
    assert {"default", "team-x"} <= set(reported)
    open_tab(page, "facts")
    listed = page.get_by_test_id("namespace-list").locator("option")
    expect(listed).to_have_count(len(reported))
    assert sorted(o.get_attribute("value") or "" for o in listed.all()) == sorted(reported)


def test_a_malformed_address_falls_back_to_facts(page: Page) -> None:
    page.goto("/memories#facts/%E0%A4%A")  # the page fixture fails on any JS error
    expect(page.get_by_test_id("tab-facts")).to_have_attribute("aria-selected", "true")
    expect(page).to_have_url(re.compile(r"#facts$"))
    expect(page.get_by_test_id("row").first).to_be_visible()
    page.get_by_test_id("tab-episodes").click()  # and the UI works on
    expect(page.get_by_test_id("tab-episodes")).to_have_attribute("aria-selected", "true")


# ------------------------------------------------------------------ small defects
def test_a_good_key_after_a_wrong_one_clears_the_banner(
    locked_page: Page, locked_server: Server
) -> None:
    page = locked_page
    page.goto("/memories#facts")
    dialog = page.get_by_test_id("key-dialog")
    dialog.get_by_test_id("key-input").fill("mlk_wrong_key")
    dialog.get_by_test_id("key-save").click()
    banner = page.get_by_test_id("error-banner")
    expect(banner.get_by_test_id("error-code")).to_contain_text("unauthorized")

    page.get_by_test_id("key-button").click()
    dialog.get_by_test_id("key-input").fill(locked_server.ids["secret"])
    dialog.get_by_test_id("key-save").click()
    expect(row(page, "The locked store holds this one fact")).to_have_count(1)
    expect(banner).to_be_hidden()


def test_changing_only_the_category_of_a_crlf_fact_keeps_its_content(
    page: Page, server: Server
) -> None:
    text = "Deploy checklist: run the tests\r\nthen tag the release"
    body = {"content": text, "category": "context"}
    fact = _ok(server.api.post("/api/v1/facts/?namespace=owners", json=body))["memory"]
    assert fact["content"] == text
    page.goto(f"/memories?namespace=owners#facts/{fact['id']}")
    detail = page.get_by_test_id("detail")
    expect(detail.get_by_test_id("detail-id")).to_have_text(fact["id"])
    detail.get_by_test_id("edit-button").click()
    detail.get_by_test_id("edit-category").fill("project")
    with page.expect_request(lambda r: r.method == "PATCH") as sent:
        detail.get_by_test_id("edit-save").click()
    assert sent.value.post_data_json == {"category": "project"}
    expect(page.get_by_test_id("notice")).to_be_visible()
    stored = _ok(server.api.get(f"/api/v1/facts/{fact['id']}?namespace=owners"))
    assert stored["memory"]["content"] == text
    assert stored["memory"]["category"] == "project"
    assert [v["content"] for v in stored["versions"]] == [text]


def test_a_forgotten_fact_offers_no_edit_or_delete(page: Page, server: Server) -> None:
    body = {"content": "A fact that will be forgotten soon"}
    fid = _ok(server.api.post("/api/v1/facts/?namespace=owners", json=body))["memory"]["id"]
    _ok(server.api.delete(f"/api/v1/facts/{fid}?namespace=owners"))
    page.goto(f"/memories?namespace=owners#facts/{fid}")
    detail = page.get_by_test_id("detail")
    expect(detail.get_by_test_id("detail-id")).to_have_text(fid)
    expect(detail.locator(".badge", has_text="forgotten")).to_be_visible()
    expect(detail.get_by_test_id("forgotten-note")).to_be_visible()
    expect(detail.get_by_test_id("edit-button")).to_have_count(0)
    expect(detail.get_by_test_id("delete-button")).to_have_count(0)
    expect(detail.get_by_test_id("edit-form")).to_have_count(0)
