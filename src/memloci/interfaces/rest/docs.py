"""The API docs page at ``/docs`` (layer: interfaces), served offline.

Swagger UI's assets come from the ``swagger-ui-py`` package (Apache-2.0; part of the
``server`` extra) and are served under ``/docs/assets``, so the page works with no
internet access: nothing is loaded from a CDN. ReDoc is not offered (no offline copy).

No other site may frame the pages (``frame-ancestors 'none'``, ``X-Frame-Options:
DENY``): "Try it out → Execute" sends requests with this server's own Origin, so a
framed page could be clicked into changing memories (clickjacking).
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from memloci._extras import require

ASSETS = "/docs/assets"
# Swagger UI's page has an inline script, so no script-src here; framing is what matters.
PAGE_HEADERS = {
    "Content-Security-Policy": "frame-ancestors 'none'; object-src 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def swagger_ui_dir() -> Path:
    """The folder of Swagger UI's built files inside the ``swagger_ui`` package (found
    without importing it: only its files are used)."""
    spec = find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        require("server", what="the API docs page")
        raise RuntimeError("swagger_ui is not a package")  # pragma: no cover
    return Path(next(iter(spec.submodule_search_locations))).resolve() / "static"


def install(app: FastAPI, *, title: str) -> None:
    """``GET /docs`` (Swagger UI for ``app.openapi_url``), its OAuth2 redirect page and
    its assets under ``/docs/assets``."""
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    async def swagger_page() -> HTMLResponse:
        page = get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{title} — API docs",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon-32x32.png",
            oauth2_redirect_url="/docs/oauth2-redirect",
        )
        page.headers.update(PAGE_HEADERS)
        return page

    @app.get("/docs/oauth2-redirect", include_in_schema=False)
    async def swagger_redirect() -> HTMLResponse:
        page = get_swagger_ui_oauth2_redirect_html()
        page.headers.update(PAGE_HEADERS)
        return page

    app.mount(ASSETS, StaticFiles(directory=swagger_ui_dir()), name="docs-assets")
