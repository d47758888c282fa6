"""The REST API (layer: interfaces): ``create_app(service)`` builds the FastAPI app."""

from memloci.interfaces.rest.app import create_app

__all__ = ["create_app"]
