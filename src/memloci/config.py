"""Settings (layer: config): read from arguments and ``MEMLOCI_*`` env vars when built.

Nothing is read at import time. ``Settings()`` reads the environment;
``Settings(path="x.db")`` overrides it. Variable names are case-insensitive; dict and
list settings take JSON (``MEMLOCI_EMBEDDER_OPTIONS='{"threads": 1}'``); the rest take
the text pydantic converts (``MEMLOCI_REINFORCE_ON_SEARCH=false``). (A plain pydantic
model with this small loader: ``pydantic-settings`` cost ~0.1 s of every CLI start.)
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, get_origin

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memloci.errors import ValidationError
from memloci.models import check_namespace

ENV_PREFIX = "MEMLOCI_"
# another name some configuration files use for a setting -> memloci's name
REFERENCE_NAMES = {"causal_inference_batch_size": "causal_batch_size"}


class Settings(BaseModel):
    """Every knob memloci has. Environment: ``MEMLOCI_<NAME>`` (e.g. ``MEMLOCI_PATH``)."""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    def __init__(self, **values: Any) -> None:
        """Arguments win over ``MEMLOCI_*`` variables, which win over the defaults. The
        other names of a setting (:data:`REFERENCE_NAMES`) are taken too."""
        for theirs, ours in REFERENCE_NAMES.items():
            if theirs in values:
                if ours in values:
                    raise ValidationError(f"{theirs} and {ours} are one setting: give one")
                values[ours] = values.pop(theirs)
        super().__init__(**{**_from_environment(type(self)), **values})

    path: str = Field(
        "memloci.db",
        min_length=1,  # SQLite takes "" for a private temporary database
        description="SQLite file (':memory:' for a throwaway store) or postgresql:// URL",
    )
    namespace: str = Field("default", description="namespace used when a call names none")
    read_only: bool = Field(
        False,
        description="open the store read-only: reads work (a SQLite file in a folder or "
        "file you may not write too), every write is a ReadOnlyError and nothing is attempted",
    )
    embedder: str = Field(
        "local",
        description="embedder: local (bundled int8 bge-small-en; a MiniLM store keeps "
        "MiniLM) | bge-small | minilm-int8 | minilm-fp32 | openai | fake | none",
    )
    embedder_options: dict[str, Any] = Field(
        default_factory=dict, description="keyword options for the embedder"
    )
    embed_batch_size: int = Field(256, ge=1, le=4096, description="vectors per background batch")
    weight_fulltext: float = Field(
        0.9, ge=0, le=1, description="fusion weight of full-text search (0-1)"
    )
    weight_vector: float = Field(
        0.9, ge=0, le=1, description="fusion weight of vector search (0-1)"
    )
    weight_context: float = Field(
        0.9,
        ge=0,
        le=1,
        description="fusion weight of a conversation turn's meaning together with the turn "
        "it replies to, or the reply it got (hybrid; 0-1)",
    )
    weight_key: float = Field(0.9, ge=0, le=1, description="fusion weight of fuzzy key match (0-1)")
    candidates: int = Field(150, ge=5, le=1000, description="results each strategy contributes")
    max_memories: int | None = Field(
        None, ge=1, description="semantic+opinion cap per namespace (per user for a user's facts)"
    )
    max_episodes: int | None = Field(None, ge=1, description="episode cap per namespace")
    max_procedures: int | None = Field(None, ge=1, description="procedure cap per namespace")
    duplicate_threshold: float | None = Field(
        None,
        ge=0,
        le=1,
        description="cosine at which a new fact counts as a duplicate "
        "(default: the embedder's own, 0.96 for bge-small, 0.92 for MiniLM)",
    )
    decay_rate_default: float = Field(0.1, ge=0, description="default decay rate of new facts")
    context_budget: int = Field(1000, ge=50, description="default context token budget")
    context_stable_share: float = Field(
        0.15,
        ge=0,
        le=1,
        description="share of the context budget 'Your Memory' may take when there is a "
        "prompt (the standing procedures before it take up to half the budget); with "
        "none it may take the rest",
    )
    relevance_threshold: float = Field(
        0.7,
        ge=0,
        le=1,
        description="search score from which a hit answers the query: the context block "
        "leaves out what scores below it, recall and the tools mark it",
    )
    intent_similarity_threshold: float = Field(
        0.2,
        ge=0,
        le=1,
        description="centred cosine a query must reach to an intent's exemplars for the "
        "embedding intent classifier to decide (else the keyword rules do; 0-1)",
    )
    reinforce_on_search: bool = Field(True, description="count search hits as accesses")
    weight_graph: float = Field(
        0.8, ge=0, le=1, description="fusion weight of graph strategies (0-1)"
    )
    weight_session: float = Field(
        0.5,
        ge=0,
        le=1,
        description="how much being in the session (or day) of the best hits counts (hybrid; 0-1)",
    )
    reranker: str = Field(
        "none",
        description="reorder the best fused hits with a cross-encoder: none | minilm-ce "
        "(local; its model ships with memloci)",
    )
    reranker_options: dict[str, Any] = Field(
        default_factory=dict, description="keyword options for the reranker (threads, model_path)"
    )
    rerank_candidates: int = Field(
        20, ge=2, le=200, description="best fused hits the reranker reorders (at least k)"
    )
    rerank_weight: float = Field(
        0.5, ge=0, le=1, description="share of the reranker in a reranked hit's score (0-1)"
    )
    llm: str = Field(
        "none", description="LLM for consolidation/enrichment: none | openai | anthropic"
    )
    llm_options: dict[str, Any] = Field(
        default_factory=dict,
        description="LLM options: model, base_url, api_key_env, timeout, max_retries",
    )
    consolidate_on_session_switch: bool = Field(
        True, description="consolidate a user's previous session when a new one starts"
    )
    decay_threshold: float = Field(
        0.05, ge=0, le=1, description="maintenance soft-deletes facts whose confidence decays below"
    )
    entity_enrichment_min_mentions: int = Field(
        3, ge=1, description="mentions before maintenance writes an entity summary (LLM)"
    )
    causal_batch_size: int = Field(
        50, ge=0, description="episode pairs per maintenance run checked for causality (LLM)"
    )
    host: str = Field("127.0.0.1", description="address `memloci serve` listens on")
    port: int = Field(8765, ge=1, le=65535, description="port `memloci serve` listens on")
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="extra Host names the server answers (behind a proxy); '*' = any",
    )
    max_request_bytes: int = Field(
        10_000_000, ge=1024, description="largest request body the server accepts"
    )
    maintenance_time: str | None = Field(
        "03:00", description="daily maintenance time (UTC, HH:MM) in the server; empty = off"
    )

    @field_validator("maintenance_time")
    @classmethod
    def _hhmm(cls, value: str | None) -> str | None:
        if not value:
            return None
        hh, _, mm = value.partition(":")
        if not (hh.isdigit() and mm.isdigit() and int(hh) < 24 and int(mm) < 60):
            raise ValueError("maintenance_time must be HH:MM (24-hour, UTC)")
        return f"{int(hh):02d}:{int(mm):02d}"

    @field_validator("namespace")
    @classmethod
    def _ns(cls, value: str) -> str:
        return check_namespace(value)


def _from_environment(model: type[BaseModel]) -> dict[str, Any]:
    """The ``MEMLOCI_<FIELD>`` variables set now, by field name (JSON for dicts and
    lists; text that is not JSON is passed on, so validation names the field)."""
    found = {k.upper(): v for k, v in os.environ.items() if k.upper().startswith(ENV_PREFIX)}
    values: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        raw = found.get(ENV_PREFIX + name.upper())
        if raw is None:
            continue
        if get_origin(field.annotation) in (dict, list) or field.annotation in (dict, list):
            try:
                values[name] = json.loads(raw)
                continue
            except ValueError:
                pass
        values[name] = raw
    return values


# Where a store lives: one rule everywhere a store is chosen (``Memory(...)``, ``--db``,
# ``MEMLOCI_PATH``, a role file's ``store_path``): a location with a ``scheme://`` is a
# database URL (``postgresql://`` or ``postgres://``), anything else is a SQLite file (or
# ``:memory:``). SQLite-only handling (``~`` expansion, relative paths, parent folders)
# never touches a URL. Credentials never leave this process in text: :func:`redact_url`
# masks the password of every URL (and every ``password=…`` pair) in a string, and every
# error and log line that names a location goes through it.

POSTGRES_SCHEMES = ("postgresql", "postgres")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
# scheme://user:password@  — the password is anything up to the last '@' before the host
_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^:/?#@\s]*):[^@\s]*@")
# libpq key/value and URL query forms: password=secret, ?password=secret&…
_PASSWORD_KV = re.compile(r"(?P<key>\bpassword\s*=\s*)(?:'(?:[^'\\]|\\.)*'|[^\s&;]+)", re.I)


def url_scheme(location: str) -> str | None:
    """The scheme of a database URL (lower case), None for a file path."""
    match = _SCHEME.match(location.strip())
    return match.group(1).lower() if match else None


def is_database_url(location: str) -> bool:
    """True for ``scheme://…`` locations (database servers), False for SQLite files."""
    return url_scheme(location) is not None


def is_postgres_url(location: str) -> bool:
    scheme = url_scheme(location)
    return scheme is not None and scheme.split("+")[0] in POSTGRES_SCHEMES


def redact_url(text: str) -> str:
    """``text`` with every URL password (and ``password=…`` pair) replaced by ``***``.

    ``postgresql://user:pw@host/db`` → ``postgresql://user:***@host/db``. Safe on any
    string (an error message, a file path, a log line); text without secrets is
    returned unchanged.
    """
    text = _USERINFO.sub(lambda m: f"{m.group('head')}:***@", text)
    return _PASSWORD_KV.sub(lambda m: f"{m.group('key')}***", text)


def describe(location: str) -> str:
    """The location as it may be shown to a person: a redacted URL or the path."""
    return redact_url(location)
