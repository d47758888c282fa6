"""Subcommands loaded on first use (layer: interfaces), so ``memloci --help`` and a
one-shot command import only what they run.

The root group lists every command from :data:`LAZY` (name, module, short help) without
importing it; a command's module is imported when it is invoked or its own help is
asked for. ``tests/interfaces/test_cli_lazy.py`` checks that the root help is the same
as with every command loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any

import typer
from typer.core import TyperCommand

from memloci.interfaces.cli_common import examples
from memloci.interfaces.cli_groups import GuardedGroup


@dataclass(frozen=True)
class Lazy:
    """A command: ``attr`` of ``module`` (a Typer app, or a function to wrap), the help
    line the root help shows (the docstring's first paragraph, line breaks included), and
    the epilog (a module attribute name, or examples)."""

    module: str
    attr: str
    help: str
    epilog: str | tuple[str, ...] | None = None


_CLI = "memloci.interfaces."
LAZY: dict[str, Lazy] = {
    "memory": Lazy(
        "memloci.interfaces.cli_lazy",
        "memory_app",
        "Add, search, inspect, change and move memories.",
    ),
    "keys": Lazy(
        _CLI + "cli_server",
        "keys_app",
        "API keys for the server: each maps to the namespaces it may read or write.",
    ),
    "knowledge": Lazy(
        _CLI + "cli_knowledge",
        "knowledge_app",
        "The knowledge tier: read-only documents (text, markdown, reST) searched by meaning.",
    ),
    "users": Lazy(
        _CLI + "cli_users", "users_app", "People the memory knows: forget one completely."
    ),
    "serve": Lazy(
        _CLI + "cli_server",
        "serve",
        "Run the server: REST API (/api, docs at /docs), web UI (/memories) and MCP (/mcp).",
        ("memloci serve --demo", "memloci serve --db team.db --port 9000", "memloci serve --help"),
    ),
    "mcp": Lazy(
        _CLI + "cli_server",
        "mcp",
        "Run the MCP server on stdio (for Claude Desktop, Cursor, … — see the README).",
        ("memloci mcp --db memloci.db --user sam",),
    ),
    "maintain": Lazy(
        _CLI + "cli_maintain",
        "maintain",
        "Run the nightly maintenance now: consolidate, decay, enrich, infer causes, embed.",
        "MAINTAIN_EXAMPLES",
    ),
    "init": Lazy(
        _CLI + "cli_runtime",
        "init",
        "Write a commented role file (role.yaml) for an agent with memory.",
        "INIT_EXAMPLES",
    ),
    "chat": Lazy(
        _CLI + "cli_chat",
        "chat",
        "Talk to an agent with memory (a REPL, or one run with -p).",
        "CHAT_EXAMPLES",
    ),
    "run": Lazy(
        _CLI + "cli_run",
        "run",
        "Run an agent without a person: one task (-p), or on triggers.",
        "RUN_EXAMPLES",
    ),
    "migrate": Lazy(
        _CLI + "cli_migrate",
        "migrate",
        "Copy one store into another (SQLite or PostgreSQL), then verify the counts.",
        "MIGRATE_EXAMPLES",
    ),
    "doctor": Lazy(
        _CLI + "cli_doctor",
        "doctor",
        "Check a store for damage and repair it (--repair).",
        "DOCTOR_EXAMPLES",
    ),
}


def memory_app() -> typer.Typer:
    """``memloci memory``, with ``consolidate`` (defined beside ``maintain``) added."""
    from memloci.interfaces.cli_maintain import CONSOLIDATE_EXAMPLES, consolidate
    from memloci.interfaces.cli_memory import memory_app as app

    if not any(c.name == "consolidate" for c in app.registered_commands):
        app.command("consolidate", epilog=CONSOLIDATE_EXAMPLES)(consolidate)
    return app


def load(name: str) -> Any:
    """The click command for ``name`` (imports its module)."""
    spec = LAZY[name]
    module = import_module(spec.module)
    obj: Any = getattr(module, spec.attr)
    if spec.attr == "memory_app" and callable(obj) and not isinstance(obj, typer.Typer):
        obj = obj()
    if isinstance(obj, typer.Typer):
        command: Any = typer.main.get_group(obj)
    else:
        epilog = spec.epilog
        text = getattr(module, epilog) if isinstance(epilog, str) else examples(*epilog or ())
        holder = typer.Typer(add_completion=False, rich_markup_mode="markdown")
        holder.command(name, epilog=text or None)(obj)
        command = typer.main.get_command(holder)
    command.name = name
    return command


class LazyGroup(GuardedGroup):
    """The root group: lists :data:`LAZY` without importing; loads a command to run it.
    (``Any`` for typer's vendored click types.)"""

    def list_commands(self, ctx: Any) -> list[str]:
        groups = [n for n, spec in LAZY.items() if spec.attr.endswith("_app")]
        plain = [n for n in LAZY if n not in groups]
        eager = [n for n in super().list_commands(ctx) if n not in LAZY]
        return [*plain, *eager, *groups]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in self.commands or cmd_name not in LAZY:
            return super().get_command(ctx, cmd_name)
        # listing for the root help: a stand-in with the command's help line
        return TyperCommand(cmd_name, help=LAZY[cmd_name].help)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] in LAZY and args[0] not in self.commands:
            self.commands[args[0]] = load(args[0])
        return super().resolve_command(ctx, args)


__all__ = ["LAZY", "Lazy", "LazyGroup", "load", "memory_app"]
