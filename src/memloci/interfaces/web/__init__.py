"""The web UI at ``/memories`` (layer: interfaces): static pages that call the REST API."""

from pathlib import Path

STATIC_DIR = Path(__file__).resolve().parent / "static"

__all__ = ["STATIC_DIR"]
