"""The OpenAPI document, made to match the server (layer: interfaces).

FastAPI lists ``422`` for every operation with input; this server never sends 422 (bad
input is 400) and can send 401, 403, 404, 409, 413, 415 and 421. Each operation here
documents the error responses it can give, all with the one error schema, and every
id, namespace and user/agent/session parameter carries its pattern and length limit
(the service enforces them; the document only describes them).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from memloci.interfaces.rest.schemas import TIME_DOC, TIME_SCHEMA
from memloci.kinds import FactType
from memloci.models import (
    ID_RE,
    NAMESPACE_RE,
    NODE_ORDERS,
    TURN_MAX,
    EntityType,
    NodeType,
    Scope,
)
from memloci.retrieval.pipeline import RECIPES
from memloci.validate import QUERY_MAX

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "description": "machine-readable, e.g. not_found"},
                "message": {"type": "string"},
                "hint": {"type": "string", "description": "what to do about it"},
                "details": {"type": "object"},
            },
        }
    },
}
ERRORS = {
    "400": "Invalid input (a field, parameter or id); nothing was written",
    "401": "An API key is required, or the key is unknown or revoked",
    "403": "The key may not use this namespace or endpoint, or a cross-site write",
    "404": "No such memory, user, thread, entity or key in the namespace",
    "409": "Conflicts with what is stored (e.g. a memory about the same subject)",
    "413": "The request body is larger than the server accepts",
    "415": "The request body is not declared as JSON (or JSON Lines for import)",
    "421": "The Host header does not name this server (DNS-rebinding protection)",
    "503": "Not ready yet: the store does not answer or the embedding model is loading",
    "507": "The disk (or the database's size limit) is full; nothing was written",
}
SECURITY = {  # required once the store has (or had) a key, or off loopback
    "bearer": {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer mlk_…"},
    "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
}
WRITES = frozenset({"post", "put", "patch", "delete"})
BODIES = frozenset({"post", "put", "patch"})
ID_PATTERN = ID_RE.pattern
# What ``str.strip()`` removes, spelled out: ``\s`` differs between regex engines
# (ECMA's takes U+FEFF, some generators leave out U+001C–U+001F), the server's does not.
SPACE = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
IDENT_PATTERN = f"^[^\\x00-\\x1f]*[^{SPACE}\\x00-\\x1f][^\\x00-\\x1f]*$"  # printable, not blank
PARAMS: dict[str, dict[str, Any]] = {
    "namespace": {"pattern": NAMESPACE_RE.pattern, "maxLength": 64},
    "user": {"pattern": IDENT_PATTERN, "minLength": 1, "maxLength": 200},
    "agent": {"pattern": IDENT_PATTERN, "minLength": 1, "maxLength": 200},
    "session": {"pattern": IDENT_PATTERN, "minLength": 1, "maxLength": 200},
    "owner": {"pattern": IDENT_PATTERN, "minLength": 1, "maxLength": 200},
    "in_session": {"pattern": IDENT_PATTERN, "minLength": 1, "maxLength": 200},
    "user_id": {"pattern": IDENT_PATTERN, "minLength": 1, "maxLength": 200},
    "thread_id": {"pattern": IDENT_PATTERN, "minLength": 1, "maxLength": 200},
    "memory_id": {"pattern": ID_PATTERN, "minLength": 8, "maxLength": 8},
    "entity_id": {"pattern": ID_PATTERN, "minLength": 8, "maxLength": 8},
    "key_id": {"pattern": ID_PATTERN, "minLength": 8, "maxLength": 8},
}
OFFSET_MAX = 1_000_000_000  # the service's bound on offsets


def text(lo: int, hi: int) -> dict[str, Any]:
    """Text the service strips, then wants ``lo``–``hi`` characters of, without NUL."""
    inner = f"[^\\x00]{{{max(lo - 2, 0)},{hi - 2}}}"
    edge = f"[^{SPACE}\\x00]"
    body = f"{edge}(?:{inner}{edge})?" if lo <= 1 else f"{edge}{inner}{edge}"
    return {"type": "string", "pattern": f"^[{SPACE}]*{body}[{SPACE}]*$"}


def _enum(kind: type[Enum]) -> dict[str, Any]:
    return {"type": "string", "enum": [m.value for m in kind]}


IDENT = {"type": "string", "pattern": IDENT_PATTERN, "minLength": 1, "maxLength": 200}
ID = {"type": "string", "pattern": ID_PATTERN, "minLength": 8, "maxLength": 8}


def _one_or_more(item: dict[str, Any]) -> dict[str, Any]:
    """A body field that takes one value or a non-empty list of them."""
    return {"anyOf": [item, {"type": "array", "items": item, "minItems": 1}]}


# a user's channel identifiers: channel name → the id on that channel
IDENTIFIERS = {"type": "object", "propertyNames": text(1, 50), "additionalProperties": IDENT}
NAMESPACE = {"type": "string", "pattern": NAMESPACE_RE.pattern, "maxLength": 64}
# body fields the service checks, per request model (the document mirrors the checks)
FIELDS: dict[str, dict[str, dict[str, Any]]] = {
    "FactCreate": {
        "content": text(5, 500),
        "type": {"type": "string", "enum": ["semantic", "opinion"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "scope": _enum(Scope),
        "fact_type": _enum(FactType),
        "subject": text(1, 200),
    },
    "ProcedureCreate": {"content": text(5, 500), "scope": _enum(Scope)},
    "EpisodeCreate": {"content": text(1, TURN_MAX)},
    "CreateMemoryRequest": {"content": text(5, 500), "subject": text(1, 200)},
    "UpdateMemoryRequest": {"content": text(5, 500)},
    "Correction": {"content": text(5, 500)},
    "NodeUpdate": {"content": text(1, TURN_MAX)},
    "SearchRequest": {
        "query": text(1, QUERY_MAX),
        "after": TIME_SCHEMA,
        "before": TIME_SCHEMA,
        "k": {"type": "integer", "minimum": 1, "maximum": 200},
        "recipe": {"type": "string", "enum": list(RECIPES)},
        "namespaces": {"type": "array", "items": NAMESPACE, "minItems": 1},
        "type": _one_or_more(_enum(NodeType)),
        "scope": _one_or_more(_enum(Scope)),
        "min_confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "owner": IDENT,
        "in_session": IDENT,
    },
    "BatchDelete": {"ids": {"type": "array", "items": ID, "minItems": 1}},
    "LinksBody": {"memory_ids": {"type": "array", "items": ID, "minItems": 1}},
    "UserUpdate": {"display_name": text(1, 200), "identifiers": IDENTIFIERS},
    "UserCreate": {"id": IDENT, "display_name": text(1, 200), "identifiers": IDENTIFIERS},
    "IdsBody": {"ids": {"type": "array", "items": IDENT}},
    "EntityIds": {"ids": {"type": "array", "items": ID}},
    "MergeBody": {"into": IDENT},
    "EntityCreate": {
        "name": text(1, 200),
        "type": _enum(EntityType),
        "summary": text(1, 2000),
        "aliases": {"type": "array", "items": text(1, 200)},
    },
    "EntityUpdate": {
        "name": text(1, 200),
        "type": _enum(EntityType),
        "summary": text(1, 2000),
        "aliases": {"type": "array", "items": text(1, 200)},
    },
    "KeyCreate": {
        "name": text(1, 100),
        "namespaces": {
            "type": "array",
            "minItems": 1,
            "items": {"type": "string", "pattern": f"{NAMESPACE_RE.pattern}|^\\*$"},
        },
    },
    "ContextRequest": {"budget": {"type": "integer", "minimum": 1, "maximum": 100_000}},
    "TurnsCreate": {"messages": {"type": "array", "minItems": 1}},
    "MessagesBody": {"messages": {"type": "array", "minItems": 1}},
}
COMMON_FIELDS = {"user": IDENT, "agent": IDENT, "session": IDENT}
IMPORT_BODY = {
    "required": True,
    "description": "JSON Lines as /export writes them (all lines land, or none)",
    "content": {
        media: {"schema": {"type": "string"}}
        for media in ("application/x-ndjson", "application/jsonl", "application/json")
    },
}


OPS_ERRORS = {"/metrics": ["401", "421"], "/readyz": ["421", "503"]}  # see rest.ops


def _errors_for(path: str, method: str, op: dict[str, Any]) -> list[str]:
    if not path.startswith("/api/"):
        return OPS_ERRORS.get(path, ["421"])
    codes = ["400", "401", "403", "421"]
    if "{" in path or method in WRITES:
        codes.append("404")
    if method in WRITES:
        codes += ["409", "507"]
    if method in BODIES:
        codes += ["413", "415"]
    return sorted(codes)


def _query_rules(path: str, name: str) -> dict[str, Any] | None:
    """Limits of the query parameters the service checks (by name; entity views cap
    ``limit`` at 200, listings at 10,000)."""
    if name == "limit":
        hi = 200 if path.startswith("/api/v1/entities/{") else 10_000
        return {"minimum": 1, "maximum": hi}
    if name == "k":
        return {"minimum": 1, "maximum": 200}
    if name == "offset":
        return {"minimum": 0, "maximum": OFFSET_MAX}
    if name == "min_confidence":
        return {"minimum": 0, "maximum": 1}
    if name == "q":
        return text(1, QUERY_MAX if path == "/api/v1/search" else 200)
    if name == "type" and path.startswith("/api/v1/entities"):
        return _enum(EntityType)
    if name == "order":  # the memory listings' sort orders
        return {"type": "string", "enum": list(NODE_ORDERS)}
    return PARAMS.get(name)


def _kind_types(path: str) -> list[str]:
    """The memory types a listing accepts in ``type``."""
    for kind, types in (
        ("facts", ["semantic", "opinion"]),
        ("episodes", ["episodic"]),
        ("procedures", ["procedural"]),
    ):
        if path.startswith(f"/api/v1/{kind}/"):
            return types
    return [m.value for m in NodeType]


def _describe_params(path: str, op: dict[str, Any]) -> None:
    for param in op.get("parameters", []):
        if param["name"] in ("after", "before"):  # what time_bound reads, exactly
            param["schema"] = {**TIME_SCHEMA, "description": TIME_DOC}
            continue
        extra = _query_rules(path, param["name"])
        schema = param.get("schema", {})
        arrays = [a for a in schema.get("anyOf", []) if a.get("type") == "array"]
        if param["name"] in ("scope", "type") and arrays:
            kinds = _kind_types(path) if param["name"] == "type" else [m.value for m in Scope]
            for alt in arrays:
                alt["items"] = {"type": "string", "enum": kinds}
                alt["minItems"] = 1
            continue
        if extra is None:
            continue
        if "anyOf" in schema:  # optional: str | None
            for alt in schema["anyOf"]:
                if alt.get("type") in ("string", "integer", "number"):
                    alt.update(extra)
        elif schema.get("type") in ("string", "integer", "number"):
            schema.update(extra)


# any JSON memloci stores (metadata, preferences, attributes, a fact's value): no text
# with a NUL (PostgreSQL's JSONB cannot hold it), integers within 64 bits
NO_NUL = {"type": "string", "pattern": "^[^\\x00]*$"}
JSON_REF = {"$ref": "#/components/schemas/JsonValue"}
JSON_VALUE = {
    "anyOf": [
        NO_NUL,
        {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "array", "items": JSON_REF},
        {"type": "object", "propertyNames": NO_NUL, "additionalProperties": JSON_REF},
    ]
}
JSON_OBJECTS = ("metadata", "preferences", "attributes")


def _json_fields(schema: dict[str, Any]) -> None:
    """The stored-JSON fields of a body say what the service checks (see JSON_VALUE)."""
    for field, prop in schema.get("properties", {}).items():
        if field == "value":
            described = {k: prop[k] for k in ("description",) if k in prop}
            schema["properties"][field] = {**JSON_REF, **described}
        if field not in JSON_OBJECTS:
            continue
        for alt in prop.get("anyOf", [prop]):
            if alt.get("type") == "object":
                alt["propertyNames"] = NO_NUL
                alt["additionalProperties"] = JSON_REF


def _describe_fields(schemas: dict[str, Any]) -> None:
    for model, schema in schemas.items():
        if schema.get("additionalProperties") is False:  # a request body (extra forbidden)
            _json_fields(schema)
        rules = {**COMMON_FIELDS, **FIELDS.get(model, {})} if model in FIELDS else {}
        if model == "ChatCommand":
            rules = dict(COMMON_FIELDS)
        for field, prop in schema.get("properties", {}).items():
            rule = rules.get(field)
            if rule is None:
                continue
            alts = prop.get("anyOf")
            if alts and "anyOf" in rule:  # the rule states the alternatives (and null)
                nulls = [a for a in alts if a.get("type") == "null"]
                prop["anyOf"] = [*rule["anyOf"], *nulls]
            elif alts:  # optional: keep null, constrain the rest
                prop["anyOf"] = [a if a.get("type") == "null" else {**a, **rule} for a in alts]
            else:
                prop.update(rule)


def document(app: FastAPI) -> dict[str, Any]:
    """The app's OpenAPI document with the real error responses (built once)."""
    if app.openapi_schema:
        return app.openapi_schema
    spec = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes
    )
    schemas = spec.setdefault("components", {}).setdefault("schemas", {})
    schemas["Error"] = ERROR_SCHEMA
    schemas["JsonValue"] = JSON_VALUE
    spec["components"]["securitySchemes"] = SECURITY
    _describe_fields(schemas)
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    error_ref = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path, ops in spec.get("paths", {}).items():
        for method, op in ops.items():
            responses = op.setdefault("responses", {})
            responses.pop("422", None)
            for code in _errors_for(path, method, op):
                responses[code] = {"description": ERRORS[code], "content": error_ref}
            _describe_params(path, op)
            if path.startswith("/api/"):
                op["security"] = [{"bearer": []}, {"apiKey": []}]
            if path == "/api/v1/import" and method == "post":
                op["requestBody"] = IMPORT_BODY
    app.openapi_schema = spec
    return spec


def install(app: FastAPI) -> None:
    app.openapi = lambda: document(app)  # type: ignore[method-assign]
