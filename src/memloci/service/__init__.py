"""The service layer: :class:`MemoryService`, the one API every interface calls.

``memory_service`` composes the mixins (``admin``, ``consolidation``, ``context``,
``knowledge``, ``records``, ``runtime``) over ``core.ServiceCore``.
"""

from memloci.service.memory_service import MemoryService

__all__ = ["MemoryService"]
