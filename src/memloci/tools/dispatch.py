"""The tool dispatcher (layer: tools): one ``call`` for every agent loop; it never raises.

Arguments are validated with the tool's pydantic model before anything runs; any
problem — unknown tool, malformed JSON, a bad argument, an unknown id, a storage
failure — comes back as a message starting with ``Error:`` that the model can read
and act on. Unexpected exceptions are logged with their traceback.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from pydantic import ValidationError as PydanticValidationError
from pydantic_core import ErrorDetails

from memloci import validate as v
from memloci.errors import MemlociError
from memloci.models import NodeType
from memloci.service import MemoryService
from memloci.tools.defs import TOOLS, ToolDef
from memloci.tools.handlers import Bound

logger = logging.getLogger("memloci.tools")


class ToolBinding(TypedDict, total=False):
    """Who the tools run for (see :class:`Tools`): fixed by the host application, never
    by the model."""

    namespace: str | None
    user: str | None
    agent: str | None
    session: str | None
    types: Sequence[NodeType | str] | None


class Tools:
    """Run agent tools for one caller: ``await tools.call("recall", {"query": "boss"})``.

    ``namespace``, ``user``, ``agent`` and ``session`` (and ``types``: the memory tiers
    the caller may use, default all) are fixed here by the host application and applied
    to every call; the model cannot change them through
    arguments (the tools have no such arguments). ``namespace`` defaults to the
    service's. Invalid identities raise :class:`~memloci.errors.ValidationError` here,
    at construction — :meth:`call` itself never raises.
    """

    def __init__(
        self,
        service: MemoryService,
        *,
        namespace: str | None = None,
        user: str | None = None,
        agent: str | None = None,
        session: str | None = None,
        types: Sequence[NodeType | str] | None = None,
    ) -> None:
        self.service = service
        self.bound = Bound(
            service,
            v.namespace(namespace or service.settings.namespace),
            user=v.ident(user, "user"),
            agent=v.ident(agent, "agent"),
            session=v.ident(session),
            types=tuple(v.enum(NodeType, t, "type") for t in types) if types is not None else None,
        )

    @property
    def names(self) -> list[str]:
        """Every tool name :meth:`call` accepts."""
        return list(TOOLS)

    async def call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> str:
        """Run tool ``name`` with ``arguments`` (a mapping or a JSON object string).

        Returns the result text, or a message starting with ``Error:``; never raises
        (task cancellation still propagates).
        """
        tool = TOOLS.get(name) if isinstance(name, str) else None
        if tool is None:
            return f"Error: unknown tool {name!r}. Available tools: {', '.join(TOOLS)}."
        try:
            raw = _parse(arguments)
            args = tool.args.model_validate(raw)
        except _BadArguments as exc:
            return f"Error: {tool.name}: {exc}"
        except PydanticValidationError as exc:
            return f"Error: invalid arguments for {tool.name}: {_explain(tool, exc)}"
        except Exception as exc:
            return _unexpected(tool, exc)
        try:
            return await tool.handler(self.bound, args)
        except MemlociError as exc:
            logger.info("tool %s refused: %s", tool.name, exc)
            hint = f" Hint: {_sentence(exc.hint)}" if exc.hint else ""
            return f"Error: {_sentence(exc.message)}{hint}"
        except Exception as exc:
            return _unexpected(tool, exc)


def _unexpected(tool: ToolDef[Any], exc: Exception) -> str:
    """A bug or an outage: logged with its traceback; the model gets no internals."""
    logger.error("tool %s failed", tool.name, exc_info=exc)
    return (
        f"Error: {tool.name} failed unexpectedly ({type(exc).__name__}); nothing more is "
        "known. Try again later or continue without it."
    )


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


class _BadArguments(Exception):
    pass


def _parse(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """A mapping, a JSON object string (as the OpenAI API sends it), or nothing."""
    if arguments is None:
        return {}
    if isinstance(arguments, str | bytes):
        if not arguments.strip():
            return {}
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            raise _BadArguments(f"arguments are not valid JSON ({exc})") from None
        except RecursionError:
            raise _BadArguments("arguments are not valid JSON (nested too deeply)") from None
    if not isinstance(arguments, Mapping):
        raise _BadArguments(
            f"arguments must be a JSON object of named arguments, not {type(arguments).__name__}"
        )
    return dict(arguments)


def _explain(tool: ToolDef[Any], exc: PydanticValidationError) -> str:
    """One clause per problem, each naming its argument; unknown arguments listed once."""
    errors = exc.errors(include_url=False)
    unknown = [str(e["loc"][-1]) for e in errors if e["type"] == "extra_forbidden" and e["loc"]]
    clauses = [_problem(e) for e in errors if e["type"] != "extra_forbidden"]
    if unknown:
        takes = ", ".join(tool.args.model_fields) or "no arguments"
        noun = "argument" if len(unknown) == 1 else "arguments"
        clauses.append(f"unknown {noun} {', '.join(unknown)} (this tool takes: {takes})")
    return "; ".join(clauses) + "."


def _problem(e: ErrorDetails) -> str:
    field = ".".join(str(p) for p in e["loc"]) or "arguments"
    ctx: dict[str, Any] = dict(e.get("ctx") or {})
    kind, got = e["type"], e.get("input")
    if kind == "missing":
        return f"{field} is required"
    if kind == "string_too_short":
        return f"{field} must have at least {ctx.get('min_length')} characters"
    if kind == "string_too_long" and isinstance(got, str):
        return f"{field} must have at most {ctx.get('max_length')} characters, not {len(got)}"
    if kind == "string_pattern_mismatch" and field == "memory_id":
        return f"memory_id must be an 8-character id like a1B2c3D4, not {got!r}"
    if kind == "value_error" and field == "arguments":  # a rule across arguments
        return str(ctx.get("error") or e["msg"])
    msg = e["msg"]
    return f"{field}: {msg[0].lower()}{msg[1:]}" if msg else field
