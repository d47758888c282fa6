"""Storage (layer: storage): the Store protocol and its backends."""

from memloci.storage.base import NodeFilter, Store

__all__ = ["NodeFilter", "Store"]
