"""Providers (layer: providers): embedders, LLMs, rerankers behind protocols."""
