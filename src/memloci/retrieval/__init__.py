"""Retrieval (layer: retrieval): query parsing, strategies, fusion, the search pipeline."""
