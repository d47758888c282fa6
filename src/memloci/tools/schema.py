"""Tool argument schemas (layer: tools): pydantic JSON schema → what the LLM APIs accept.

:func:`clean_schema` turns a model's schema into a self-contained object schema:
``type: object`` at the top, ``additionalProperties: false``, ``$ref`` / ``$defs``
inlined (enums in place), no ``title`` noise, optional ``X | None`` fields shown as
plain ``X``. With ``strict=True`` it targets OpenAI's strict function calling: every
property required, optional ones nullable, and the keywords strict mode refuses
(lengths, bounds, patterns, defaults) dropped — the dispatcher still enforces them.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from pydantic import BaseModel

JsonSchema = dict[str, Any]
_NOISE = {"title", "$defs", "definitions"}
_STRICT_UNSUPPORTED = {
    "default",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
}


def clean_schema(model: type[BaseModel], *, strict: bool = False) -> JsonSchema:
    """The tool-API form of ``model``'s JSON schema (see the module docstring)."""
    raw = model.model_json_schema()
    defs: dict[str, JsonSchema] = raw.get("$defs", {})
    props: dict[str, JsonSchema] = {}
    for name, prop in raw.get("properties", {}).items():
        schema, nullable = _node(prop, defs, strict)
        if strict and (nullable or name not in raw.get("required", ())):
            schema = _nullable(schema)
        props[name] = schema
    required = list(props) if strict else [n for n in raw.get("required", ()) if n in props]
    out: JsonSchema = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    elif strict:
        out["required"] = []
    out["additionalProperties"] = False
    return out


def _node(node: JsonSchema, defs: dict[str, JsonSchema], strict: bool) -> tuple[JsonSchema, bool]:
    """``(cleaned copy, was X | None)`` of one sub-schema."""
    node = dict(node)
    if "$ref" in node:
        target = copy.deepcopy(defs[node.pop("$ref").rsplit("/", 1)[-1]])
        if "description" in node:
            target.pop("description", None)
        node = {**target, **node}
    nullable = False
    if "anyOf" in node:
        branches = [b for b in node["anyOf"] if b != {"type": "null"}]
        nullable = len(branches) < len(node["anyOf"])
        if len(branches) == 1:
            rest = {k: v for k, v in node.items() if k != "anyOf"}
            inner, _ = _node(branches[0], defs, strict)
            node = {**inner, **rest}
        else:
            node["anyOf"] = [_node(b, defs, strict)[0] for b in node["anyOf"]]
    if node.get("default", 0) is None:
        del node["default"]
    for key in _NOISE:
        node.pop(key, None)
    if strict:
        node = _strict_description(node)
        for key in _STRICT_UNSUPPORTED:
            node.pop(key, None)
    if "items" in node:
        node["items"] = _node(node["items"], defs, strict)[0]
    if "properties" in node:
        node["properties"] = {k: _node(v, defs, strict)[0] for k, v in node["properties"].items()}
        node.setdefault("additionalProperties", False)
    return node, nullable


def _strict_description(node: JsonSchema) -> JsonSchema:
    """Strict mode drops bounds and defaults; keep the important ones in the description."""
    notes = []
    if "minLength" in node and "maxLength" in node and node["minLength"] > 1:
        notes.append(f"{node['minLength']}-{node['maxLength']} characters")
    if "default" in node:
        notes.append(f"default {json.dumps(node['default'])}")
    if "description" in node:  # a note the description already gives is not repeated
        notes = [n for n in notes if n not in node["description"]]
    if notes and "description" in node:
        node["description"] = f"{node['description']} ({'; '.join(notes)})"
    return node


def _nullable(schema: JsonSchema) -> JsonSchema:
    schema = dict(schema)
    kind = schema.get("type")
    if isinstance(kind, str):
        schema["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        schema["type"] = [*kind, "null"]
    elif kind is None:
        return {"anyOf": [schema, {"type": "null"}]}
    if "enum" in schema and None not in schema["enum"]:
        schema["enum"] = [*schema["enum"], None]
    return schema
