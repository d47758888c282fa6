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
