"""The REST API (layer: interfaces): ``create_app(service)`` builds the FastAPI app."""

from memloci._extras import require

try:
    from memloci.interfaces.rest.app import create_app
except ImportError:  # fastapi / uvicorn / mcp missing: say which extra adds them
    require("server", what="memloci.interfaces.rest")
    raise

__all__ = ["create_app"]
