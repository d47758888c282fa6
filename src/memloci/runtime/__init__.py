"""The agent runtime (layer: runtime, over the service): what an agent runner such as
``memloci chat role.yaml`` needs around the model call.

* :mod:`~memloci.runtime.role` — the role file (``role.yaml``) → :class:`Role`;
* :mod:`~memloci.runtime.conversation` — :class:`ConversationMemory`: short-term,
  checkpointed, resumable conversation threads;
* :mod:`~memloci.runtime.identify` — :func:`identify_user`: trigger payload → memory
  user + :class:`UserContext`;
* :mod:`~memloci.runtime.templates` — :func:`memory_template` for ``memloci init``;
* :mod:`~memloci.runtime.agent` — the agent loop of ``memloci chat``;
  :mod:`~memloci.runtime.autonomous` — autonomous runs ending with ``finish_task``;
  :mod:`~memloci.runtime.triggers` — the schedule / webhook runner of ``memloci run``
  (the role's ``autonomy:`` and ``triggers:`` are :mod:`~memloci.runtime.run_config`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memloci._lazy import lazy_exports

if TYPE_CHECKING:
    from memloci.runtime.conversation import (
        ConversationMemory,
        ConversationWindow,
        SyncConversation,
        llm_summarizer,
        new_session_id,
        thread_id,
    )
    from memloci.runtime.identify import Identity, UserContext, extract_identity, identify_user
    from memloci.runtime.role import MemoryConfig, ModelConfig, Role, load_role
    from memloci.runtime.templates import TEMPLATES, memory_template

# Each name loads its module on first use (PEP 562): ``memloci.runtime.role`` alone does
# not pull in the conversation store, the SDK's validation or the identify models.
_LAZY = {
    **dict.fromkeys(
        (
            "ConversationMemory",
            "ConversationWindow",
            "SyncConversation",
            "llm_summarizer",
            "new_session_id",
            "thread_id",
        ),
        "memloci.runtime.conversation",
    ),
    **dict.fromkeys(
        ("Identity", "UserContext", "extract_identity", "identify_user"), "memloci.runtime.identify"
    ),
    **dict.fromkeys(("MemoryConfig", "ModelConfig", "Role", "load_role"), "memloci.runtime.role"),
    **dict.fromkeys(("TEMPLATES", "memory_template"), "memloci.runtime.templates"),
}


__getattr__, __dir__ = lazy_exports("memloci.runtime", _LAZY, globals())


__all__ = [
    "TEMPLATES",
    "ConversationMemory",
    "ConversationWindow",
    "Identity",
    "MemoryConfig",
    "ModelConfig",
    "Role",
    "SyncConversation",
    "UserContext",
    "extract_identity",
    "identify_user",
    "llm_summarizer",
    "load_role",
    "memory_template",
    "new_session_id",
    "thread_id",
]
