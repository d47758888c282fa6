"""The ``/memory`` chat command (layer: interfaces): answered from the service, no LLM.

Any chat front end (REST, a Telegram-like bot, the ``memloci chat`` REPL) can pass
every incoming message through :func:`answer_memory_command`: it returns ``None``
when the text is not a ``/memory`` command, otherwise the reply to send::

    /memory                     list the facts and opinions the user can see
    /memory list [category]     the same, one category only
    /memory search <query>      the top 5 matches, with their ids
    /memory delete <id>         soft-delete one memory (also: /memory forget <id>)
    /memory help                the list above

Parsing never raises: a sub-command it does not understand becomes a command whose
answer is a short usage message. Every read goes through a :class:`NodeFilter` built
from the caller's ``namespace`` / ``user`` / ``agent``, so a user can neither see nor
delete another user's user-scoped memories. Without ``user`` the whole namespace is
visible (single-user setups).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import StrEnum

from memloci.errors import NotFoundError, ValidationError
from memloci.kinds import FACT_TYPES
from memloci.models import ID_RE, MemoryNode, NodeFilter, sanitize_category
from memloci.service import MemoryService
from memloci.tools.handlers import change_refused

LIST_LIMIT = 50  # memories shown by /memory before "…and N more"
SEARCH_LIMIT = 5  # hits shown by /memory search
CONTENT_WIDTH = 200  # longer contents are clipped in listings

USAGE = "Usage: /memory [list [category] | search <query> | delete <id> | help]"
HELP = "\n".join(
    (
        "📝 /memory commands:",
        "/memory — list what I remember",
        "/memory list <category> — only one category (e.g. person, preference)",
        "/memory search <query> — find memories and their ids",
        "/memory delete <id> — forget a memory (also /memory forget <id>)",
        "/memory help — this message",
    )
)
DELETE_HINT = "Use /memory delete <id> to remove a memory."

# "/memory", optionally addressed to a bot ("/memory@my_bot"), then whitespace or the end.
_COMMAND = re.compile(r"/memory(?:@\w+)?(?=\s|$)(?P<rest>.*)", re.IGNORECASE | re.DOTALL)
_SPACE = re.compile(r"\s+")


class MemoryAction(StrEnum):
    """What a ``/memory`` command asks for; ``USAGE`` means it was not understood."""

    LIST = "list"
    SEARCH = "search"
    DELETE = "delete"
    HELP = "help"
    USAGE = "usage"


@dataclass(frozen=True, slots=True)
class MemoryCommand:
    """A parsed ``/memory`` command.

    ``argument`` is the category (``LIST``, sanitised; ``None`` = all), the memory id
    (``DELETE``) or the query (``SEARCH``). ``problem`` says why a ``USAGE`` command
    was not understood.
    """

    action: MemoryAction
    argument: str | None = None
    problem: str | None = None


def _usage(problem: str) -> MemoryCommand:
    return MemoryCommand(MemoryAction.USAGE, problem=problem)


def parse_memory_command(text: str) -> MemoryCommand | None:
    """The ``/memory`` command in ``text``, or ``None`` when it is not one.

    Only a message that *starts* with ``/memory`` (after whitespace) is a command;
    sub-commands are case-insensitive and extra whitespace is ignored. Never raises.
    """
    if not isinstance(text, str):
        return None
    match = _COMMAND.fullmatch(text.strip())
    if match is None:
        return None
    parts = match["rest"].split(None, 1)
    if not parts:
        return MemoryCommand(MemoryAction.LIST)
    sub = parts[0].lower()
    arg = parts[1].strip() if len(parts) > 1 else ""
    if sub == "list":
        if not arg:
            return MemoryCommand(MemoryAction.LIST)
        try:
            return MemoryCommand(MemoryAction.LIST, sanitize_category(arg))
        except ValidationError as exc:
            return _usage(exc.message)
    if sub in ("delete", "forget"):
        ids = arg.split()
        if len(ids) != 1:
            return _usage(f"Usage: /memory {sub} <id>")
        return MemoryCommand(MemoryAction.DELETE, ids[0].strip("[]"))
    if sub == "search":
        if not arg:
            return _usage("Usage: /memory search <query>")
        return MemoryCommand(MemoryAction.SEARCH, arg)
    if sub == "help":
        return MemoryCommand(MemoryAction.HELP)
    return _usage(f"Unknown /memory command {parts[0]!r}.")


def _title(category: str) -> str:
    return category.replace("_", " ").title()


def _line(node: MemoryNode) -> str:
    content = _SPACE.sub(" ", node.content).strip()
    if len(content) > CONTENT_WIDTH:
        content = content[: CONTENT_WIDTH - 1].rstrip() + "…"
    return f"• [{node.id}] {content}"


def format_memory_list(
    nodes: list[MemoryNode], *, total: int | None = None, category: str | None = None
) -> str:
    """The ``/memory`` listing: grouped by title-cased category in the given order.

    ``total`` is how many memories matched (``…and N more`` when above ``len(nodes)``);
    ``category`` only changes the empty message.
    """
    if not nodes:
        if category:
            return f"📝 No memories in {_title(category)}."
        return "📝 No memories yet. Tell me something worth remembering!"
    blocks: list[str] = ["📝 Your memories:"]
    group: list[str] = []
    current: str | None = None
    for node in nodes:
        if node.category != current:
            if group:
                blocks.append("\n".join(group))
            current, group = node.category, [f"**{_title(node.category)}**"]
        group.append(_line(node))
    blocks.append("\n".join(group))
    more = (total or 0) - len(nodes)
    if more > 0:
        blocks.append(f"…and {more} more.")
    blocks.append(DELETE_HINT)
    return "\n\n".join(blocks)


async def run_memory_command(
    command: MemoryCommand,
    service: MemoryService,
    *,
    namespace: str | None = None,
    user: str | None = None,
    agent: str | None = None,
    limit: int = LIST_LIMIT,
) -> str:
    """Answer a parsed ``/memory`` command for this caller (``user`` is who asks).

    Only current facts and opinions visible to the caller are listed, searched or
    deleted. Invalid input (a too-long query, …) is answered with its message rather
    than raised; storage and provider errors propagate to the front end.
    """
    action = command.action
    if action is MemoryAction.HELP:
        return HELP
    if action is MemoryAction.USAGE:
        return f"{command.problem}\n{USAGE}" if command.problem else USAGE
    try:
        flt = service.filter(namespace=namespace, user=user, agent=agent, type=FACT_TYPES)
        if action is MemoryAction.LIST:
            if command.argument:
                flt = replace(flt, categories=(command.argument,))
            nodes = await service.memories.list_nodes(flt, limit=limit, order="category")
            total = await service.memories.count(flt) if len(nodes) >= limit else len(nodes)
            return format_memory_list(nodes, total=total, category=command.argument)
        if action is MemoryAction.DELETE:
            return await _delete(service, flt, command.argument or "", user=user, agent=agent)
        return await _search(service, flt, command.argument or "")
    except ValidationError as exc:
        return f"⚠️ {exc}"


async def _delete(
    service: MemoryService,
    flt: NodeFilter,
    memory_id: str,
    *,
    user: str | None,
    agent: str | None,
) -> str:
    missing = f"No memory with id {memory_id}."
    if not ID_RE.match(memory_id):
        return missing
    # a filtered read, not a bare get: the id must be visible to this caller
    found = await service.memories.list_nodes(replace(flt, ids=(memory_id,)), limit=1)
    if not found:
        return missing
    node = found[0]
    refused = change_refused(node, user=user, agent=agent)  # the agent tools' rule
    if refused is not None:
        return f"⚠️ {refused}"
    try:
        result = await service.edits.forget(node.id, namespace=node.namespace)
    except NotFoundError:  # purged in the meantime
        return missing
    if result.action != "forgotten":  # forgotten in the meantime
        return missing
    return f"Deleted: '{node.content}'"


async def _search(service: MemoryService, flt: NodeFilter, query: str) -> str:
    hits = await service.memories.search(query, flt, k=SEARCH_LIMIT)
    if not hits:
        return f"🔎 No memories match '{query}'."
    lines = [f"🔎 Memories matching '{query}':", *(_line(h.memory) for h in hits)]
    return "\n".join(lines) + "\n\n" + DELETE_HINT


async def answer_memory_command(
    text: str,
    service: MemoryService,
    *,
    namespace: str | None = None,
    user: str | None = None,
    agent: str | None = None,
    limit: int = LIST_LIMIT,
) -> str | None:
    """The reply to ``text`` if it is a ``/memory`` command, else ``None``.

    Front ends call this on every message and hand the rest to the agent.
    """
    command = parse_memory_command(text)
    if command is None:
        return None
    return await run_memory_command(
        command, service, namespace=namespace, user=user, agent=agent, limit=limit
    )


__all__ = [
    "HELP",
    "USAGE",
    "MemoryAction",
    "MemoryCommand",
    "answer_memory_command",
    "format_memory_list",
    "parse_memory_command",
    "run_memory_command",
]
