"""The web UI's routes (layer: interfaces): ``GET /memories`` and its assets under ``/static``.

The page is plain HTML and vanilla JavaScript (ES modules, no build step): it
reads and changes memories only through the public JSON API, so the page itself
needs no auth — its API calls carry the user's key. Nothing is fetched from
outside the server, which the page's Content-Security-Policy also enforces.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles

from memloci.interfaces.web import STATIC_DIR

# Everything from this origin, nothing inline, nothing from elsewhere.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class _Assets(StaticFiles):
    """Static files that the browser revalidates (ETag) so an upgrade never runs stale JS."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers["Cache-Control"] = "no-cache"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response


def install(app: FastAPI) -> None:
    """Add the UI page (``GET /memories``) and its assets (``/static``) to ``app``."""

    @app.api_route("/memories", methods=["GET", "HEAD"], include_in_schema=False)
    async def memories_page() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", headers=PAGE_HEADERS)

    app.mount("/static", _Assets(directory=STATIC_DIR), name="static")
