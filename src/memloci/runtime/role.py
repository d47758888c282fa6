"""The role file (layer: runtime): ``role.yaml`` → a validated :class:`Role`.

A role describes one agent: its name, system prompt, chat model and memory tiers. Three
document shapes are accepted, so role files written in the other common layouts load
as-is:

* the **flat** form (what ``memloci init --template memory`` writes)::

      name: assistant
      system_prompt: You are a helpful assistant.
      model: {provider: openai, name: gpt-4o-mini}
      memory: {conversation: {windowSize: 20}, facts: {maxFacts: 200}}

* the **manifest** form: ``apiVersion`` / ``kind: Agent`` / ``metadata: {name,
  description}`` / ``spec: {role, model, memory}`` (``spec.role`` is the system prompt);
* the **agents list**: ``agents: [{name, role, systemPrompt, memory}, …]`` (``role`` is a
  short label there); :func:`load_role` picks one agent by name.

Every key may be written in snake_case or camelCase (``window_size`` / ``windowSize``);
any other key is rejected by name, with a suggestion when it looks like a typo. Problems
raise :class:`~memloci.errors.ValidationError` naming the file and the key's path, e.g.
``role.yaml: memory.facts.maxFacts: must be ≥ 1``.
"""

from __future__ import annotations

import difflib
import glob
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Self, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, Field, PrivateAttr, model_validator
from pydantic import ValidationError as PydanticValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails

from memloci.config import is_database_url
from memloci.errors import NotFoundError, ValidationError
from memloci.runtime.run_config import AutonomyConfig, Block, TriggerConfig

NAME_PATTERN = r"^[a-z][a-z0-9-]*$"
ENV_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
URL_PATTERN = r"^https?://\S+$"
LLM_PROVIDERS = ("openai", "anthropic")
EMBEDDING_PROVIDERS = ("", "local", "openai", "anthropic", "google", "ollama", "fake", "none")
MODEL_PREFIXES = ("openai", "anthropic", "google", "ollama")  # google:text-embedding-004
logger = logging.getLogger("memloci.runtime")
OLLAMA_URL = "http://localhost:11434/v1"
DEFAULT_MAX_FACTS = 1000
HINT = "see 'Role file' in the README, or run `memloci init --template memory` for an example"


# ---------------------------------------------------------------------- blocks
class ModelConfig(Block):
    """The chat model: ``provider`` is ``openai`` (any OpenAI-compatible endpoint) or
    ``anthropic``."""

    provider: Literal["openai", "anthropic"]
    name: str = Field(min_length=1, max_length=200)
    base_url: str | None = Field(None, pattern=URL_PATTERN)
    api_key_env: str | None = Field(None, pattern=ENV_PATTERN)
    temperature: float = Field(0.7, ge=0, le=2)
    max_tokens: int = Field(1024, ge=1, le=1_000_000)
    #: Send the system prompt as the first user message (servers that ignore the system role).
    system_as_user: bool = False


class EmbeddingsConfig(Block):
    """Which embedder builds the vectors. Empty provider: the bundled local model, an
    OpenAI-compatible endpoint when ``base_url`` is set, or — when ``model`` is set —
    the chat model's provider. ``anthropic`` has no embeddings of its own: it maps to
    OpenAI's default (so a role with an Anthropic chat model still gets vectors);
    ``google`` is the Gemini API (``text-embedding-004``). ``model`` may carry its
    provider (``google:text-embedding-004``)."""

    provider: Literal["", "local", "openai", "anthropic", "google", "ollama", "fake", "none"] = ""
    model: str = Field("", max_length=200)
    base_url: str = Field("", pattern=r"^$|" + URL_PATTERN)
    api_key_env: str = Field("", pattern=r"^$|" + ENV_PATTERN)

    def resolved(self, chat_provider: str | None = None) -> tuple[str, str]:
        """``(provider, model)``: a ``provider:`` prefix of ``model`` taken, an empty
        provider derived (``base_url`` → openai; ``model`` → ``chat_provider``)."""
        provider: str = self.provider
        model = self.model
        prefix, sep, rest = model.partition(":")
        if sep and prefix in MODEL_PREFIXES and provider in ("", prefix):
            provider, model = prefix, rest
        if not provider:
            if self.base_url:
                provider = "openai"
            elif model:
                provider = chat_provider or ""
            else:
                provider = "local"
        return provider, model

    def to_settings(self, chat_provider: str | None = None) -> dict[str, Any]:
        """``embedder`` and ``embedder_options`` for :class:`~memloci.config.Settings`
        (``chat_provider``: the role's ``model.provider``, followed by an empty provider
        when ``model`` is set)."""
        provider, model = self.resolved(chat_provider)
        if provider in ("local", "fake", "none"):
            return {"embedder": provider, "embedder_options": {}}
        options: dict[str, Any] = {}
        if provider == "ollama":
            options = {"model": "nomic-embed-text", "base_url": OLLAMA_URL}
        options.update({k: v for k, v in (("model", model), ("base_url", self.base_url)) if v})
        if self.api_key_env:
            options["api_key_env"] = self.api_key_env
        embedder = "google" if provider == "google" else "openai"  # anthropic: OpenAI's
        return {"embedder": embedder, "embedder_options": options}

    @model_validator(mode="after")
    def _model_fits(self) -> Self:
        prefix, sep, _ = self.model.partition(":")
        if sep and prefix in MODEL_PREFIXES and self.provider not in ("", prefix):
            raise ValueError(
                f"model {self.model!r} names provider {prefix!r} but provider is "
                f"{self.provider!r}; keep one"
            )
        provider, model = self.resolved("openai")
        if model and provider in ("local", "fake", "none"):
            raise ValueError(
                f"provider {self.provider!r} takes no model; leave model empty "
                "(the local embedder has one bundled model)"
            )
        return self


class ConversationTier(Block):
    """Short-term memory: the recent turns of the session, checkpointed every turn."""

    enabled: bool = True
    window_size: int | None = Field(None, ge=1, le=10_000)
    summarize: bool = False


class KnowledgeTier(Block):
    """Read-only RAG: similarity search over named knowledge collections."""

    enabled: bool | None = None
    sources: list[str] = Field(default_factory=list, max_length=100)
    retrieval_limit: int = Field(5, ge=1, le=100)
    similarity_threshold: float = Field(0.7, ge=0, le=1)

    @model_validator(mode="after")
    def _sources(self) -> Self:
        if any(not s.strip() or len(s) > 100 for s in self.sources):
            raise ValueError("sources must be names of 1–100 characters")
        if len(set(self.sources)) != len(self.sources):
            raise ValueError("sources lists a source twice")
        if self.enabled and not self.sources:
            raise ValueError("knowledge is enabled but sources is empty; name a source")
        return self

    @property
    def active(self) -> bool:
        """On when enabled (default: when any source is named)."""
        return bool(self.sources) if self.enabled is None else self.enabled


class FactsTier(Block):
    """AI-managed facts (semantic memory) and the namespace that isolates them."""

    enabled: bool | None = None
    max_facts: int | None = Field(None, ge=1)
    namespace: str | None = Field(None, pattern=NAME_PATTERN, max_length=64)


class SemanticConfig(Block):
    enabled: bool | None = None
    max_memories: int | None = Field(None, ge=1)


class EpisodicConfig(Block):
    enabled: bool = True
    max_episodes: int = Field(500, ge=1)
    auto_capture: bool = True


class ProceduralConfig(Block):
    enabled: bool = True
    max_procedures: int = Field(100, ge=1)


class ConsolidationConfig(Block):
    enabled: bool = True
    interval: Literal["after_session", "after_autonomous", "manual"] = "after_session"
    max_episodes_per_run: int = Field(20, ge=1, le=10_000)
    model_override: str | None = Field(None, min_length=1, max_length=200)


class SharedMemory(Block):
    """Several agents sharing one long-term memory: same store, same namespace."""

    enabled: bool = False
    store_path: str | None = Field(None, min_length=1)
    namespace: str = Field("shared", pattern=NAME_PATTERN, max_length=64)
    max_memories: int | None = Field(None, ge=1)


class MemoryConfig(Block):
    """The ``memory:`` section. Present means memory is on; each tier can opt out."""

    max_sessions: int = Field(10, ge=1, le=100_000)
    max_resume_messages: int = Field(20, ge=1, le=10_000)
    max_memories: int | None = Field(None, ge=1)  # deprecated: semantic.max_memories
    store_backend: Literal["sqlite", "sqlite-vec", "postgres"] = "sqlite"
    store_path: str | None = Field(None, min_length=1)
    embeddings: EmbeddingsConfig = EmbeddingsConfig()
    conversation: ConversationTier = ConversationTier()
    knowledge: KnowledgeTier = KnowledgeTier()
    facts: FactsTier = FactsTier()
    semantic: SemanticConfig = SemanticConfig()
    episodic: EpisodicConfig = EpisodicConfig()
    procedural: ProceduralConfig = ProceduralConfig()
    consolidation: ConsolidationConfig = ConsolidationConfig()
    shared_memory: SharedMemory = SharedMemory()

    @model_validator(mode="after")
    def _one_value_each(self) -> Self:
        _agree("facts.enabled", self.facts.enabled, "semantic.enabled", self.semantic.enabled)
        cap = self.semantic.max_memories
        _agree("facts.maxFacts", self.facts.max_facts, "semantic.max_memories", cap)
        if self.max_memories is not None:  # the old name of the cap: still read, with a note
            used = "synced to" if self.max_facts == self.max_memories else "ignored: using"
            note = "memloci: memory.max_memories is deprecated; use semantic.max_memories (%s %d)"
            logger.warning(note, used, self.max_facts)
        paths = [p for p in (self.store_path, self.shared_memory.store_path) if p]
        if self.store_backend == "postgres" and not any(is_database_url(p) for p in paths):
            raise ValueError("store_backend postgres needs store_path: postgresql://…")
        if self.store_backend != "postgres" and any(is_database_url(p) for p in paths):
            raise ValueError("a postgresql:// store_path needs store_backend: postgres")
        return self

    @property
    def semantic_enabled(self) -> bool:
        """Facts / semantic memory (``remember``): on unless switched off."""
        for flag in (self.facts.enabled, self.semantic.enabled):
            if flag is not None:
                return flag
        return True

    @property
    def max_facts(self) -> int:
        """The cap on facts: ``facts.maxFacts`` = ``semantic.max_memories`` (default 1000).
        The deprecated ``max_memories`` (older role files) is synced into it when the cap is
        not set or is set to the default; a cap set to another value wins."""
        cap = self.facts.max_facts or self.semantic.max_memories
        if self.max_memories is not None and cap in (None, DEFAULT_MAX_FACTS):
            return self.max_memories
        return cap or DEFAULT_MAX_FACTS

    @property
    def window_size(self) -> int:
        """Messages kept in the prompt (default: twice ``max_resume_messages``)."""
        return self.conversation.window_size or 2 * self.max_resume_messages


def _agree(key_a: str, a: object, key_b: str, b: object) -> None:
    if a is not None and b is not None and a != b:
        raise ValueError(f"{key_a} ({a}) and {key_b} ({b}) set the same thing; keep one")


# ---------------------------------------------------------------------- the role
class Role(Block):
    """One agent: ``name`` (its id and default namespace), ``system_prompt``, ``model``
    and ``memory`` (None: the agent has no memory)."""

    name: str = Field("assistant", pattern=NAME_PATTERN, max_length=64)
    description: str | None = Field(None, max_length=2000)
    role: str | None = Field(None, max_length=200)  # a short label (agents-list files)
    system_prompt: str = Field("", max_length=100_000)
    model: ModelConfig | None = None
    memory: MemoryConfig | None = None
    autonomy: AutonomyConfig = AutonomyConfig()  # runs without a person: run_config.py
    triggers: list[TriggerConfig] = Field(default_factory=list, max_length=20)
    _base_dir: Path | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _embedding_model_has_a_provider(self) -> Self:
        emb = self.memory.embeddings if self.memory else None
        if emb is not None and self.model is None and not emb.resolved()[0]:
            raise ValueError(
                f"memory.embeddings.model {emb.model!r} has no provider to ask for it: set "
                "memory.embeddings.provider (openai, google, ollama, anthropic), a base_url, "
                "or a model: block whose provider it follows (the bundled local embedder, "
                "used without a provider, has one model of its own)"
            )
        return self

    @property
    def namespace(self) -> str:
        """Where the agent's long-term memories live: the shared namespace when shared
        memory is on, else ``memory.facts.namespace``, else the agent's name."""
        mem = self.memory
        if mem is None:
            return self.name
        if mem.shared_memory.enabled:
            return mem.shared_memory.namespace
        return mem.facts.namespace or self.name

    @property
    def store_path(self) -> str | None:
        """The store file (``~`` expanded, relative paths from the role file's folder) or
        database URL (``postgresql://…``, unchanged);
        None = memloci's default (``$MEMLOCI_PATH``, else ``./memloci.db``)."""
        mem = self.memory
        if mem is None:
            return None
        shared = mem.shared_memory
        raw = shared.store_path if shared.enabled and shared.store_path else mem.store_path
        if raw is None or raw == ":memory:" or is_database_url(raw):
            return raw  # URLs (postgresql://…) are taken as they are
        path = Path(os.path.expanduser(raw))
        if not path.is_absolute() and self._base_dir is not None:
            path = self._base_dir / path
        return str(path)

    @property
    def resolved_triggers(self) -> list[TriggerConfig]:
        """``triggers`` with a file_watch ``path`` (``~`` expanded) taken from the role
        file's folder when relative, as ``store_path`` is."""
        out = []
        for trig in self.triggers:
            if trig.type == "file_watch" and trig.path:
                path = Path(os.path.expanduser(trig.path))
                if not path.is_absolute() and self._base_dir is not None:
                    base = str(self._base_dir)  # a glob's folder is not a pattern
                    path = Path(glob.escape(base) if glob.has_magic(trig.path) else base) / path
                trig = trig.model_copy(update={"path": str(path)})
            out.append(trig)
        return out

    def to_settings(self) -> dict[str, Any]:
        """Overrides for :class:`~memloci.config.Settings` (``Memory(**role.to_settings())``):
        store path, namespace, embedder, caps, and the consolidation LLM."""
        out: dict[str, Any] = {"namespace": self.namespace}
        mem = self.memory
        if mem is None:
            return out
        if self.store_path is not None:
            out["path"] = self.store_path
        out.update(mem.embeddings.to_settings(self.model.provider if self.model else None))
        shared_cap = mem.shared_memory.max_memories if mem.shared_memory.enabled else None
        out["max_memories"] = shared_cap or mem.max_facts
        out["max_episodes"] = mem.episodic.max_episodes
        out["max_procedures"] = mem.procedural.max_procedures
        cons = mem.consolidation
        out["consolidate_on_session_switch"] = cons.enabled and cons.interval != "manual"
        if cons.enabled and (llm := self.consolidation_llm()) is not None:
            out["llm"], out["llm_options"] = llm
        return out

    def episodes_per_run(self, autonomous: bool) -> int | None:
        """Episodes the end of a session consolidates (``max_episodes_per_run``); None
        when ``consolidation.interval`` says not now (or memory or consolidation is off)."""
        mem = self.memory
        if mem is None or not mem.consolidation.enabled:
            return None
        interval = mem.consolidation.interval
        now = interval == "after_session" or (interval == "after_autonomous" and autonomous)
        return mem.consolidation.max_episodes_per_run if now else None

    def consolidation_llm(self) -> tuple[str, dict[str, Any]] | None:
        """``(llm, llm_options)`` of the model that consolidates this agent's episodes:
        ``consolidation.model_override`` if set, else ``model``; None without a model."""
        if self.model is None:
            return None
        override = self.memory.consolidation.model_override if self.memory else None
        return self._consolidation_llm(override)

    def _consolidation_llm(self, override: str | None) -> tuple[str, dict[str, Any]]:
        assert self.model is not None
        provider: str = self.model.provider
        name = self.model.name
        if override:
            prefix, sep, rest = override.partition(":")
            if sep and prefix in LLM_PROVIDERS and rest:
                provider, name = prefix, rest
            else:
                name = override
        options: dict[str, Any] = {"model": name}
        if provider == self.model.provider:
            for key in ("base_url", "api_key_env"):
                if (value := getattr(self.model, key)) is not None:
                    options[key] = value
        return provider, options

    def conversation_options(self) -> dict[str, int]:
        """Keyword arguments for :class:`~memloci.runtime.ConversationMemory`:
        ``window``, ``max_sessions``, ``max_resume_messages``."""
        mem = self.memory or MemoryConfig()
        return {
            "window": mem.window_size,
            "max_sessions": mem.max_sessions,
            "max_resume_messages": mem.max_resume_messages,
        }

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_mapping(
        cls,
        data: Any,
        *,
        source: str = "role.yaml",
        agent: str | None = None,
        base_dir: str | Path | None = None,
    ) -> Role:
        """Validate a parsed document (any of the three shapes); ``agent`` picks one
        agent of an agents list. Raises :class:`ValidationError` naming each bad key."""
        if not isinstance(data, Mapping):
            kind = "empty" if data is None else f"a {type(data).__name__}, not a mapping"
            raise ValidationError(f"{source}: the role file is {kind}", hint=HINT)
        shape: type[BaseModel]
        if "agents" in data:
            shape = _AgentsFile
        elif {"apiVersion", "api_version", "kind", "metadata", "spec"} & set(data):
            shape = _Manifest
        else:
            shape = Role
        try:
            doc = shape.model_validate(dict(data))
        except PydanticValidationError as exc:
            problems = [_problem(shape, e) for e in exc.errors(include_url=False)]
            raise ValidationError(
                f"{source}: {'; '.join(problems[:10])}", hint=HINT, problems=problems
            ) from None
        role = _pick(doc, agent, source)
        role._base_dir = Path(base_dir) if base_dir is not None else None
        return role

    @classmethod
    def from_yaml(
        cls,
        text: str,
        *,
        source: str = "role.yaml",
        agent: str | None = None,
        base_dir: str | Path | None = None,
    ) -> Role:
        """Parse YAML text (duplicate keys are an error) and validate it."""
        try:
            data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
        except yaml.MarkedYAMLError as exc:
            where = ""
            if exc.problem_mark is not None:
                mark = exc.problem_mark
                where = f"line {mark.line + 1}, column {mark.column + 1}: "
            raise ValidationError(
                f"{source}: {where}{exc.problem or exc}", hint="check the YAML syntax"
            ) from None
        except yaml.YAMLError as exc:
            raise ValidationError(f"{source}: {exc}", hint="check the YAML syntax") from None
        return cls.from_mapping(data, source=source, agent=agent, base_dir=base_dir)


def load_role(path: str | Path, *, agent: str | None = None) -> Role:
    """Read and validate a role file; relative store paths resolve from its folder."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotFoundError(
            f"no role file at {file}", hint="create one with `memloci init --template memory`"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"cannot read {file}: {exc}") from None
    return Role.from_yaml(text, source=file.name, agent=agent, base_dir=file.parent)


# ---------------------------------------------------------------------- other shapes
class _Metadata(Block):
    name: str = Field(pattern=NAME_PATTERN, max_length=64)
    description: str | None = Field(None, max_length=2000)


class _Spec(Block):
    role: str = Field("", max_length=100_000)  # the system prompt
    model: ModelConfig | None = None
    memory: MemoryConfig | None = None
    autonomy: AutonomyConfig = AutonomyConfig()
    triggers: list[TriggerConfig] = Field(default_factory=list, max_length=20)


class _Manifest(Block):
    api_version: str = Field(min_length=1, max_length=100)
    kind: Literal["Agent"]
    metadata: _Metadata
    spec: _Spec


class _AgentsFile(Block):
    agents: list[Role] = Field(min_length=1, max_length=1000)


def _pick(doc: BaseModel, agent: str | None, source: str) -> Role:
    if isinstance(doc, _Manifest):
        roles = [
            Role(
                name=doc.metadata.name,
                description=doc.metadata.description,
                system_prompt=doc.spec.role,
                model=doc.spec.model,
                memory=doc.spec.memory,
                autonomy=doc.spec.autonomy,
                triggers=doc.spec.triggers,
            )
        ]
    elif isinstance(doc, _AgentsFile):
        roles = list(doc.agents)
        seen = [r.name for r in roles]
        if len(set(seen)) != len(seen):
            twice = sorted({n for n in seen if seen.count(n) > 1})
            raise ValidationError(f"{source}: agents: two agents are named {twice[0]!r}")
    else:
        assert isinstance(doc, Role)
        roles = [doc]
    if agent is None:
        if len(roles) > 1:
            names = ", ".join(r.name for r in roles)
            raise ValidationError(
                f"{source} describes {len(roles)} agents ({names})", hint="choose one by name"
            )
        return roles[0]
    for role in roles:
        if role.name == agent:
            return role
    names = ", ".join(r.name for r in roles)
    raise ValidationError(f"{source} has no agent {agent!r}", hint=f"agents: {names}")


# ---------------------------------------------------------------------- errors
def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out


def _submodel(annotation: Any) -> type[BaseModel] | None:
    """The model inside ``X``, ``X | None`` or ``list[X]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (Union, list, type(int | None)):
        for arg in get_args(annotation):
            found = _submodel(arg)
            if found is not None:
                return found
    return None


def _spellings(model: type[BaseModel]) -> dict[str, str]:
    """Every accepted key of ``model`` → the field's snake_case name."""
    out: dict[str, str] = {}
    for name, info in model.model_fields.items():
        out[name] = name
        out[info.alias or to_camel(name)] = name
    return out


def _model_at(root: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = root
    for part in loc:
        if model is None or isinstance(part, int):
            continue
        field = _spellings(model).get(part)
        model = _submodel(model.model_fields[field].annotation) if field else None
    return model


def _problem(root: type[BaseModel], e: ErrorDetails) -> str:
    loc, kind = tuple(e["loc"]), e["type"]
    path, ctx, got = _path(loc) or "top level", dict(e.get("ctx") or {}), e.get("input")
    if kind == "extra_forbidden":
        key, parent = str(loc[-1]), _model_at(root, loc[:-1])
        keys = _spellings(parent) if parent is not None else {}
        if key in keys:
            other = [k for k, f in keys.items() if f == keys[key] and k != key]
            return f"key '{path}' is given twice (also as {other[0]}); keep one"
        close = difflib.get_close_matches(key, list(keys), n=1, cutoff=0.6)
        guess = f" (did you mean {close[0]}?)" if close else ""
        return f"unknown key '{path}'{guess}"
    if kind == "missing":
        return f"{path}: is required"
    bounds = {
        "greater_than_equal": ("≥", "ge"),
        "greater_than": (">", "gt"),
        "less_than_equal": ("≤", "le"),
        "less_than": ("<", "lt"),
    }
    if kind in bounds:
        sign, name = bounds[kind]
        return f"{path}: must be {sign} {ctx.get(name)}, not {got!r}"
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", "")).removeprefix("^$|")
        meaning = {
            NAME_PATTERN: "lower-case letters, digits and '-', starting with a letter",
            ENV_PATTERN: "an environment variable name",
        }.get(pattern, "an http(s) URL" if "https?" in pattern else "in the right form")
        return f"{path}: {got!r} must be {meaning} ({pattern})"
    if kind == "literal_error":
        return f"{path}: must be one of {ctx.get('expected')}, not {got!r}"
    types = {
        "int_type": "a whole number",
        "float_type": "a number",
        "bool_type": "true or false",
        "string_type": "text",
        "list_type": "a list",
        "model_type": "a mapping of keys",
        "dict_type": "a mapping of keys",
    }
    if kind in types:
        return f"{path}: must be {types[kind]}, not {got!r}"
    if kind in ("string_too_short", "too_short") and not got:
        return f"{path}: must not be empty"
    msg = e["msg"].removeprefix("Value error, ")
    return f"{path}: {msg[:1].lower()}{msg[1:]}"


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping."""


def _no_duplicates(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, str | int) and key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} appears twice", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)
