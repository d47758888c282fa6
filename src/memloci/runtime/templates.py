"""Role file templates (layer: runtime): the text ``memloci init --template …`` writes."""

from __future__ import annotations

import re

from memloci.errors import ValidationError
from memloci.runtime.role import NAME_PATTERN, Role

TEMPLATES = ("memory",)

_MEMORY = """\
# {name}: a memloci role file (memloci init --template memory).
# Every key may be written snake_case or camelCase; unknown keys are errors.
# Reference: "Role file" in the memloci README.

{name_line}# agent id and default namespace (^[a-z][a-z0-9-]*$)
description: An assistant with long-term memory
system_prompt: |
  You are a helpful assistant with long-term memory.
  Use recall() to search your memories before answering questions about the user.
  Use remember() to save durable facts and preferences the user tells you.
  Use learn_procedure() to record instructions you should always follow.
  Use list_memories() when the user asks what you know about them.

model:
  provider: openai           # openai (any OpenAI-compatible endpoint) | anthropic
  name: gpt-4o-mini
  # base_url: http://localhost:11434/v1   # e.g. Ollama, vLLM
  # api_key_env: OPENAI_API_KEY          # variable holding the API key
  temperature: 0.7
  max_tokens: 1024
  system_as_user: false      # true: send the system prompt as the first user message

autonomy:                    # memloci run / chat --autonomous
  max_steps: 10              # model calls a run may make before it is stopped

triggers: []                 # what `memloci run role.yaml` waits for, e.g.
  # - {{type: cron, every: 10m, prompt: "Summarise new tickets"}}
  # - {{type: webhook, port: 8080}}

memory:
  # store_path: memory.db    # default: $MEMLOCI_PATH, else ./memloci.db (relative to this file)
  store_backend: sqlite      # sqlite | postgres (store_path: postgresql://user:pass@host/db)
  max_sessions: 10           # conversation sessions kept per user and chat; oldest pruned
  max_resume_messages: 20    # messages loaded by --resume
  embeddings:
    provider: ""             # "" = bundled local model (offline) | openai | ollama | none
    model: ""                # provider default when empty
    base_url: ""             # an OpenAI-compatible endpoint
    api_key_env: ""          # variable holding the embeddings API key
  conversation:              # short-term: recent turns, saved after every turn
    enabled: true
    windowSize: 40           # messages in the prompt (default: 2 x max_resume_messages)
    summarize: false         # true: fold older turns into a running summary
  knowledge:                 # read-only RAG over knowledge collections
    sources: []              # e.g. [faq, docs]; naming a source turns knowledge on
    retrievalLimit: 5
    similarityThreshold: 0.7
  facts:                     # AI-managed facts (semantic memory)
    enabled: true
    maxFacts: 1000           # the same cap as semantic.max_memories
    namespace: {name}
  # semantic: {{enabled: true, max_memories: 1000}}  # the same two settings, other names
  episodic:
    enabled: true
    max_episodes: 500
    auto_capture: true       # record an episode after each autonomous run
  procedural:
    enabled: true
    max_procedures: 100      # injected as "Learned Procedures and Policies"
  consolidation:             # episodes -> facts
    enabled: true
    interval: after_session  # after_session | after_autonomous | manual
    max_episodes_per_run: 20
    model_override: null     # default: the agent's model
  shared_memory:             # share long-term memory with other agents
    enabled: false
    namespace: shared
    # store_path: team.db
"""


def memory_template(name: str = "assistant") -> str:
    """A commented ``role.yaml`` with every memory key at its default; it loads as is."""
    if not isinstance(name, str) or len(name) > 64 or not re.match(NAME_PATTERN, name):
        raise ValidationError(
            f"invalid agent name {name!r}",
            hint="use lower-case letters, digits and '-', starting with a letter",
        )
    text = _MEMORY.format(name=name, name_line=f"name: {name}".ljust(27))
    Role.from_yaml(text)  # a template that does not load is a bug
    return text
