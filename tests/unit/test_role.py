"""The role file: every key the reference designs show loads (in both naming styles and
all three document shapes); every unknown or invalid key is rejected by its path."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from memloci import Settings
from memloci.errors import NotFoundError, ValidationError
from memloci.runtime import Role, load_role, memory_template
from memloci.runtime.role import MemoryConfig

ROOT = Path(__file__).resolve().parents[2]

# reference 003: memory tiers of one agent in an agents list (verbatim)
AGENTS_003 = """
agents:
- name: support-agent
  role: support
  systemPrompt: Be helpful and remember the customer's preferences.
  memory:
    conversation:
      enabled: true
      windowSize: 10
      summarize: true
    knowledge:
      enabled: true
      sources: [faq, docs]
      retrievalLimit: 5
      similarityThreshold: 0.7
    facts:
      enabled: true
      maxFacts: 100
      namespace: support
"""

# reference 004: the full memory configuration in a manifest (verbatim keys and defaults)
MANIFEST_004 = """
apiVersion: initrunner/v1
kind: Agent
metadata:
  name: assistant
  description: Agent with rich memory
spec:
  role: |
    You are a helpful assistant with long-term memory.
  model:
    provider: openai
    name: gpt-5-mini
  memory:
    max_sessions: 10
    max_memories: 1000
    max_resume_messages: 20
    store_backend: sqlite-vec
    store_path: null
    embeddings:
      provider: ""
      model: ""
      base_url: ""
      api_key_env: ""
    episodic:
      enabled: true
      max_episodes: 500
      auto_capture: true
    semantic:
      enabled: true
      max_memories: 1000
    procedural:
      enabled: true
      max_procedures: 100
    consolidation:
      enabled: true
      interval: after_session
      max_episodes_per_run: 20
      model_override: null
"""

FLAT = """
name: helper
description: A helper
role: helper
system_prompt: Be brief.
model:
  provider: anthropic
  name: claude-haiku-4-5
  base_url: https://api.anthropic.com
  api_key_env: ANTHROPIC_API_KEY
  temperature: 0.2
  max_tokens: 2048
memory:
  store_path: data/helper.db
  shared_memory: {enabled: false, namespace: team, store_path: team.db, max_memories: 50}
"""


def role(text: str, **kw: Any) -> Role:
    return Role.from_yaml(text, **kw)


def problem(text: str) -> str:
    with pytest.raises(ValidationError) as info:
        role(text)
    assert info.value.hint
    return info.value.message


# ---------------------------------------------------------------------- accepted
def test_reference_003_agents_list_loads() -> None:
    r = role(AGENTS_003)
    assert (r.name, r.role, r.namespace) == ("support-agent", "support", "support")
    assert r.system_prompt.startswith("Be helpful")
    mem = r.memory
    assert mem is not None
    assert mem.conversation.summarize and mem.window_size == 10
    assert mem.knowledge.active and mem.knowledge.sources == ["faq", "docs"]
    assert (mem.knowledge.retrieval_limit, mem.knowledge.similarity_threshold) == (5, 0.7)
    assert mem.semantic_enabled and mem.max_facts == 100


def test_reference_004_manifest_loads_with_its_defaults() -> None:
    r = role(MANIFEST_004)
    assert (r.name, r.description) == ("assistant", "Agent with rich memory")
    assert r.system_prompt.startswith("You are a helpful assistant")
    assert r.model is not None and (r.model.provider, r.model.name) == ("openai", "gpt-5-mini")
    assert r.memory is not None
    mem = r.memory
    assert (mem.max_sessions, mem.max_resume_messages, mem.max_facts) == (10, 20, 1000)
    assert (mem.episodic.max_episodes, mem.procedural.max_procedures) == (500, 100)
    assert mem.consolidation.interval == "after_session"
    assert mem.consolidation.max_episodes_per_run == 20
    assert mem.window_size == 40  # 2 x max_resume_messages


def test_reference_004_minimal_memory_section() -> None:
    mem = role("memory:\n  max_memories: 300\n").memory
    assert mem is not None and mem.semantic_enabled and mem.max_facts == 300
    assert mem.episodic.enabled and mem.procedural.enabled and mem.conversation.enabled


@pytest.mark.parametrize(
    ("memory", "cap", "note"),
    [
        ("{max_memories: 300}", 300, "synced to 300"),
        ("{max_memories: 300, semantic: {max_memories: 1000}}", 300, "synced to 300"),
        ("{max_memories: 300, facts: {maxFacts: 1000}}", 300, "synced to 300"),
        ("{max_memories: 300, semantic: {max_memories: 500}}", 500, "ignored: using 500"),
        ("{max_memories: 1000, semantic: {max_memories: 500}}", 500, "ignored: using 500"),
    ],
)
def test_deprecated_max_memories_is_synced_as_reference_004(
    memory: str, cap: int, note: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The deprecated top-level ``max_memories`` is synced into ``semantic.max_memories``
    when that is unset or at its default, else the explicit cap wins; either way a
    deprecation note says which, and neither is an error."""
    with caplog.at_level(logging.WARNING, logger="memloci.runtime"):
        r = role(f"memory: {memory}\n")
    assert r.memory is not None and r.memory.max_facts == cap
    assert r.to_settings()["max_memories"] == cap
    (record,) = [x for x in caplog.records if "max_memories is deprecated" in x.getMessage()]
    assert record.getMessage().endswith(f"use semantic.max_memories ({note})")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="memloci.runtime"):
        role("memory: {semantic: {max_memories: 500}}\n")
    assert not caplog.records  # no note without the deprecated key


def test_flat_form_and_every_model_key() -> None:
    r = role(FLAT)
    assert r.model is not None
    assert (r.model.temperature, r.model.max_tokens) == (0.2, 2048)
    assert r.model.api_key_env == "ANTHROPIC_API_KEY"
    assert r.memory is not None and not r.memory.shared_memory.enabled


def test_both_naming_styles_mean_the_same() -> None:
    snake = role("system_prompt: hi\nmemory:\n  conversation: {window_size: 7}\n"
                 "  knowledge: {sources: [a], retrieval_limit: 2}\n")  # fmt: skip
    camel = role("systemPrompt: hi\nmemory:\n  conversation: {windowSize: 7}\n"
                 "  knowledge: {sources: [a], retrievalLimit: 2}\n")  # fmt: skip
    assert snake == camel
    assert (
        role("memory: {maxResumeMessages: 5}").memory
        == role("memory: {max_resume_messages: 5}").memory
    )


def test_no_memory_section_means_no_memory() -> None:
    r = role("name: plain\nsystem_prompt: hi")
    assert r.memory is None
    assert r.to_settings() == {"namespace": "plain"}
    assert r.conversation_options() == {"window": 40, "max_sessions": 10, "max_resume_messages": 20}


def test_template_loads_and_names_the_agent() -> None:
    text = memory_template("support")
    r = role(text)
    assert r.name == "support" and r.namespace == "support" and r.memory is not None
    assert memory_template() == memory_template("assistant")
    with pytest.raises(ValidationError, match="invalid agent name"):
        memory_template("Bad Name")


# ---------------------------------------------------------------------- settings
def test_to_settings_builds_valid_settings(tmp_path: Path) -> None:
    file = tmp_path / "agents" / "role.yaml"
    file.parent.mkdir()
    file.write_text(FLAT, encoding="utf-8")
    r = load_role(file)
    out = r.to_settings()
    assert out["path"] == str(tmp_path / "agents" / "data" / "helper.db")
    assert out["namespace"] == "helper" and out["embedder"] == "local"
    assert (out["max_memories"], out["max_episodes"], out["max_procedures"]) == (1000, 500, 100)
    assert out["llm"] == "anthropic"
    assert out["llm_options"] == {
        "model": "claude-haiku-4-5",
        "base_url": "https://api.anthropic.com",
        "api_key_env": "ANTHROPIC_API_KEY",
    }
    assert Settings(**out).namespace == "helper"


def test_shared_memory_points_agents_at_one_store_and_namespace(tmp_path: Path) -> None:
    text = FLAT.replace("enabled: false", "enabled: true")
    r = role(text, base_dir=tmp_path)
    out = r.to_settings()
    assert out["namespace"] == "team" and r.namespace == "team"
    assert out["path"] == str(tmp_path / "team.db")
    assert out["max_memories"] == 50


@pytest.mark.parametrize(
    ("embeddings", "expected"),
    [
        ({}, {"embedder": "local", "embedder_options": {}}),
        ({"provider": "none"}, {"embedder": "none", "embedder_options": {}}),
        ({"provider": "openai", "model": "text-embedding-3-large", "api_key_env": "KEY"},
         {"embedder": "openai",
          "embedder_options": {"model": "text-embedding-3-large", "api_key_env": "KEY"}}),
        ({"base_url": "http://localhost:8000/v1"},
         {"embedder": "openai", "embedder_options": {"base_url": "http://localhost:8000/v1"}}),
        ({"provider": "ollama"},
         {"embedder": "openai", "embedder_options": {
             "model": "nomic-embed-text", "base_url": "http://localhost:11434/v1"}}),
        ({"provider": "anthropic"}, {"embedder": "openai", "embedder_options": {}}),
        ({"provider": "google"}, {"embedder": "google", "embedder_options": {}}),
        ({"provider": "google", "model": "google:text-embedding-004", "api_key_env": "GK"},
         {"embedder": "google",
          "embedder_options": {"model": "text-embedding-004", "api_key_env": "GK"}}),
        ({"model": "google:text-embedding-004"},
         {"embedder": "google", "embedder_options": {"model": "text-embedding-004"}}),
        ({"model": "openai:text-embedding-3-small"},
         {"embedder": "openai", "embedder_options": {"model": "text-embedding-3-small"}}),
    ],
)  # fmt: skip
def test_embeddings_become_embedder_settings(
    embeddings: dict[str, str], expected: dict[str, Any]
) -> None:
    r = Role.from_mapping({"memory": {"embeddings": embeddings}})
    out = r.to_settings()
    assert {k: out[k] for k in expected} == expected
    Settings(**out)  # and the settings take them


@pytest.mark.parametrize("chat", ["openai", "anthropic"])
def test_an_embedding_model_without_provider_follows_the_chat_model(chat: str) -> None:
    """Reference 004: ``embeddings.model`` is used; an empty provider derives from
    ``model.provider`` (anthropic has no embeddings: OpenAI's endpoint)."""
    r = Role.from_mapping(
        {
            "model": {"provider": chat, "name": "m"},
            "memory": {"embeddings": {"model": "text-embedding-3-large"}},
        }
    )
    out = r.to_settings()
    assert out["embedder"] == "openai"
    assert out["embedder_options"] == {"model": "text-embedding-3-large"}


def test_an_embedding_model_with_no_provider_to_ask_is_refused() -> None:
    with pytest.raises(ValidationError) as info:
        Role.from_mapping({"memory": {"embeddings": {"model": "text-embedding-3-large"}}})
    text = str(info.value)
    assert "memory.embeddings.model 'text-embedding-3-large' has no provider" in text
    assert "bundled local embedder" in text
    with pytest.raises(ValidationError, match="names provider 'google' but provider is"):
        Role.from_mapping({"memory": {"embeddings": {"provider": "openai", "model": "google:x"}}})


@pytest.mark.parametrize(
    ("consolidation", "switch", "llm"),
    [
        ({}, True, ("openai", {"model": "gpt-4o-mini"})),
        ({"interval": "manual"}, False, ("openai", {"model": "gpt-4o-mini"})),
        ({"enabled": False}, False, None),
        ({"model_override": "gpt-4o"}, True, ("openai", {"model": "gpt-4o"})),
        ({"model_override": "anthropic:claude-haiku-4-5"}, True,
         ("anthropic", {"model": "claude-haiku-4-5"})),
        ({"model_override": "llama3.1:8b"}, True, ("openai", {"model": "llama3.1:8b"})),
    ],
)  # fmt: skip
def test_consolidation_settings(consolidation: dict[str, Any], switch: bool, llm: Any) -> None:
    data = {
        "model": {"provider": "openai", "name": "gpt-4o-mini"},
        "memory": {"consolidation": consolidation},
    }
    out = Role.from_mapping(data).to_settings()
    assert out["consolidate_on_session_switch"] is switch
    assert ((out["llm"], out["llm_options"]) if "llm" in out else None) == llm


def test_facts_and_semantic_keys_are_one_setting() -> None:
    mem = role("memory: {facts: {maxFacts: 20}, semantic: {max_memories: 20}}").memory
    assert mem is not None and mem.max_facts == 20
    off = role("memory: {facts: {enabled: false}}").memory
    assert off is not None and not off.semantic_enabled
    assert MemoryConfig().max_facts == 1000


# ---------------------------------------------------------------------- rejected
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("memory: {facts: {maxFacts: 0}}", "role.yaml: memory.facts.maxFacts: must be ≥ 1"),
        ("memory: {conversation: {windowSizee: 3}}",
         "unknown key 'memory.conversation.windowSizee' (did you mean windowSize?)"),
        ("memory: {conversation: {window_size: 3, windowSize: 4}}",
         "key 'memory.conversation.window_size' is given twice (also as windowSize)"),
        ("memory: {facts: {namespace: Support_Team}}",
         "memory.facts.namespace: 'Support_Team' must be lower-case letters"),
        ("memory: {consolidation: {interval: weekly}}",
         "memory.consolidation.interval: must be one of 'after_session', 'after_autonomous' "
         "or 'manual', not 'weekly'"),
        ("memory: {knowledge: {similarityThreshold: 1.5}}",
         "memory.knowledge.similarityThreshold: must be ≤ 1"),
        ("memory: {knowledge: {retrievalLimit: 0}}",
         "memory.knowledge.retrievalLimit: must be ≥ 1"),
        ("memory: {knowledge: {enabled: true}}",
         "memory.knowledge: knowledge is enabled but sources"),
        ("memory: {knowledge: {sources: faq}}", "memory.knowledge.sources: must be a list"),
        ("memory: {episodic: {max_episodes: -1}}", "memory.episodic.max_episodes: must be ≥ 1"),
        ("memory: {episodic: {auto_capture: 'yes'}}",
         "memory.episodic.auto_capture: must be true or false"),
        ("memory: {procedural: {max_procedures: ten}}",
         "memory.procedural.max_procedures: must be a whole number"),
        ("memory: {semantic: {max_memory: 3}}",
         "unknown key 'memory.semantic.max_memory' (did you mean max_memories?)"),
        ("memory: {consolidation: {max_episodes_per_run: 0}}",
         "memory.consolidation.max_episodes_per_run: must be ≥ 1"),
        ("memory: {max_sessions: 0}", "memory.max_sessions: must be ≥ 1"),
        ("triggers: [{type: cron, every: 0m, prompt: hi}]",
         "role.yaml: triggers[0]: every '0m' never comes round"),
        ("memory: {max_resume_messages: 0}", "memory.max_resume_messages: must be ≥ 1"),
        ("memory: {store_backend: mysql}", "memory.store_backend: must be one of"),
        ("memory: {embeddings: {provider: cohere}}",
         "memory.embeddings.provider: must be one of"),
        ("memory: {embeddings: {provider: local, model: x}}", "provider 'local' takes no model"),
        ("memory: {embeddings: {base_url: ftp://x}}",
         "memory.embeddings.base_url: 'ftp://x' must be an http(s) URL"),
        ("memory: {embeddings: {api_key_env: 'MY KEY'}}",
         "memory.embeddings.api_key_env: 'MY KEY' must be an environment variable name"),
        ("memory: {shared_memory: {namespace: '-x'}}", "memory.shared_memory.namespace"),
        ("memory: {facts: {maxFacts: 10}, semantic: {max_memories: 20}}",
         "memory: facts.maxFacts (10) and semantic.max_memories (20) set the same thing"),
        ("memory: {facts: {enabled: true}, semantic: {enabled: false}}",
         "memory: facts.enabled (True) and semantic.enabled (False) set the same thing"),
        ("memory: {tiers: {}}", "unknown key 'memory.tiers'"),
        ("memory: [1, 2]", "memory: must be a mapping of keys"),
        ("model: {provider: google, name: gemini}", "model.provider: must be one of 'openai' or"),
        ("model: {provider: openai}", "model.name: is required"),
        ("model: {provider: openai, name: x, temperature: 3}", "model.temperature: must be ≤ 2"),
        ("model: {provider: openai, name: x, max_tokens: 0}", "model.max_tokens: must be ≥ 1"),
        ("model: {provider: openai, name: x, modle: y}", "unknown key 'model.modle'"),
        ("name: My Agent", "name: 'My Agent' must be lower-case letters"),
        ("system_promt: hi", "unknown key 'system_promt' (did you mean system_prompt?)"),
        ("tools: []", "unknown key 'tools'"),
        ("apiVersion: v1\nkind: Agent\nmetadata: {name: a}\nspec: {memory: {max_sessions: 0}}",
         "spec.memory.max_sessions: must be ≥ 1"),
        ("apiVersion: v1\nkind: Agent\nmetadata: {name: a}\nspec: {tools: []}",
         "unknown key 'spec.tools'"),
        ("apiVersion: v1\nkind: Team\nmetadata: {name: a}\nspec: {}",
         "kind: must be one of 'Agent'"),
        ("apiVersion: v1\nkind: Agent\nspec: {}", "metadata: is required"),
        ("agents:\n- name: a\n  memory: {facts: {maxFact: 1}}",
         "unknown key 'agents[0].memory.facts.maxFact' (did you mean maxFacts?)"),
        ("agents: []", "agents: "),
        ("", "role.yaml: the role file is empty"),
        ("- a\n- b", "the role file is a list, not a mapping"),
        ("name: a\nname: b", "line 2, column 1: key 'name' appears twice"),
        ("name: [a", "role.yaml: line"),
    ],
)  # fmt: skip
def test_invalid_keys_are_rejected_by_name(text: str, expected: str) -> None:
    assert expected in problem(text)


def test_every_problem_is_listed() -> None:
    message = problem("memory: {max_sessions: 0, conversation: {windowSizee: 1}}")
    assert "memory.max_sessions" in message and "windowSizee" in message


def test_agents_list_needs_a_choice() -> None:
    text = "agents:\n- name: a\n- name: b\n"
    with pytest.raises(ValidationError, match=r"describes 2 agents \(a, b\)"):
        role(text)
    assert role(text, agent="b").name == "b"
    with pytest.raises(ValidationError, match="has no agent 'c'"):
        role(text, agent="c")
    with pytest.raises(ValidationError, match="two agents are named 'a'"):
        role("agents:\n- name: a\n- name: a\n", agent="a")


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no role file"):
        load_role(tmp_path / "role.yaml")


def test_errors_name_the_file(tmp_path: Path) -> None:
    file = tmp_path / "support.yaml"
    file.write_text("memory: {facts: {maxFacts: 0}}", encoding="utf-8")
    with pytest.raises(ValidationError, match=r"^support\.yaml: memory\.facts\.maxFacts"):
        load_role(file)


# ---------------------------------------------------------------------- docs
def _keys(model: type[Any], prefix: str = "") -> set[str]:
    from memloci.runtime.role import _submodel

    out = set()
    for name, info in model.model_fields.items():
        out.add(name)
        sub = _submodel(info.annotation)
        if sub is not None:
            out |= _keys(sub)
    return out


def test_every_role_key_is_in_the_agents_page() -> None:
    text = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    section = text[text.index("## Role file") :]
    from pydantic.alias_generators import to_camel

    missing = [
        k
        for k in sorted(_keys(Role))
        if not re.search(rf"(?<=[`.])({k}|{to_camel(k)})(?=[`.,])", section)
    ]
    assert missing == []


def test_the_template_shows_every_memory_key() -> None:
    data = yaml.safe_load(memory_template())
    shown = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                shown.add(re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower())
                walk(value)

    walk(data["memory"])
    expected = _keys(MemoryConfig) - {"max_memories", "store_backend", "store_path", "semantic"}
    assert expected - shown == set()
