"""``/docs`` works offline: Swagger UI's assets come from the server itself. Chromium
opens the page with every request to anything but the server aborted, and sees the
API's operations listed."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import httpx
import pytest

with contextlib.suppress(ImportError):
    from playwright.sync_api import expect

if TYPE_CHECKING:
    from playwright.sync_api import Browser
    from tests.browser.conftest import Server

pytestmark = pytest.mark.browser


def test_docs_list_the_operations_with_the_network_blocked(
    browser: Browser, server: Server
) -> None:
    context = browser.new_context(base_url=server.url, viewport={"width": 1280, "height": 900})
    outside: list[str] = []

    def only_local(route: Any) -> None:
        if route.request.url.startswith(server.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", only_local)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto("/docs")
        expect(page.locator(".swagger-ui .info .title")).to_contain_text("memloci")
        operations = page.locator(".opblock")
        expect(operations.first).to_be_visible()
        paths = page.locator(".opblock-summary-path")
        shown = {paths.nth(i).inner_text().replace("\u200b", "") for i in range(paths.count())}
        spec = httpx.get(f"{server.url}/openapi.json").json()
        assert set(spec["paths"]) <= shown, set(spec["paths"]) - shown
        assert "/api/v1/facts/" in shown and operations.count() >= len(spec["paths"])
    finally:
        context.close()
    assert outside == [] and errors == [], (outside, errors)


def test_docs_assets_are_served_by_the_server(server: Server) -> None:
    page = httpx.get(f"{server.url}/docs")
    assert page.status_code == 200 and "/docs/assets/swagger-ui-bundle.js" in page.text
    assert "cdn" not in page.text.lower() and "https://" not in page.text.replace(
        "https://fastapi.tiangolo.com", ""
    )
    js = httpx.get(f"{server.url}/docs/assets/swagger-ui-bundle.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]
    assert httpx.get(f"{server.url}/redoc").status_code == 404  # no offline copy: not offered
