"""The service layer: :class:`MemoryService`, the one API every interface calls.

``memory_service`` builds the services (``memories``, ``edits``, ``records``, ``keys``,
``paging``, ``context``, ``consolidation``, ``knowledge``, ``admin``, ``privacy``) over
one ``core.Core``; ``transfer`` holds export and import, ``worker`` the background
embedding, ``documents`` the knowledge files, ``compose`` the composition from settings.
"""

from memloci.service.memory_service import MemoryService

__all__ = ["MemoryService"]
