"""``memloci chat`` (layer: interfaces): talk to an agent with memory, from a role file.

An interactive REPL, or one autonomous run with ``-p PROMPT``. The loop itself is
:class:`memloci.runtime.agent.Agent`; this module reads the role, picks the chat model,
opens the store through the SDK and handles the terminal. Answers go to stdout; the
banner, tool activity and notices go to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from memloci.config import Settings
from memloci.consolidation.consolidator import ConsolidationReport
from memloci.errors import MemlociError, ProviderError, ValidationError
from memloci.interfaces.chat_commands import answer_memory_command, parse_memory_command
from memloci.interfaces.cli_common import (
    RunAgentOpt,
    RunRoleArg,
    agent_memory,
    cell,
    err,
    examples,
    interactive,
    note,
    out,
    plain,
    report_error,
    role_settings,
)
from memloci.providers.chat import load_chat_model
from memloci.runtime.agent import (
    Agent,
    CommandHandler,
    ModelSpec,
    Reply,
    ToolRun,
    memory_command_handler,
    no_memory_error,
)
from memloci.runtime.agent import model_spec as resolve_model
from memloci.runtime.autonomous import run_autonomous
from memloci.runtime.role import Role, load_role

CHAT_EXAMPLES = examples(
    "memloci chat role.yaml",
    "memloci chat role.yaml --resume --user sam",
    "memloci chat role.yaml -p 'Summarise what you know about me'",
    "memloci chat role.yaml --autonomous -p 'Check the deploy queue'",
    "memloci chat agents.yaml --agent support --db team.db",
)
EXIT_WORDS = frozenset({"exit", "quit", "/exit", "/quit", "/bye"})
HELP = """\
Type a message and press Enter. Commands, answered without the model:
  /memory                   what I remember about you (/memory help for more)
  /memory delete <id>       forget one memory
  /help                     this message
  exit, quit or Ctrl-D      end the session (consolidation runs when the role says so)"""


def _default_user() -> str:
    try:
        return getpass.getuser() or "user"
    except Exception:  # no login name (some containers)
        return "user"


def chat(
    role_file: RunRoleArg,
    prompt: Annotated[
        str | None,
        typer.Option(
            "--prompt",
            "-p",
            help="Run once with this message (an autonomous run), print the answer, exit.",
            show_default=False,
        ),
    ] = None,
    autonomous: Annotated[
        bool,
        typer.Option(
            "--autonomous",
            "-a",
            help="With -p: work on the task until finish_task (at most autonomy.max_steps "
            "model calls), as `memloci run role.yaml -p` does.",
        ),
    ] = False,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the latest session of this user and agent.")
    ] = False,
    user: Annotated[
        str | None,
        typer.Option(
            "--user", "-u", help="Who is talking (default: your login name).", show_default=False
        ),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            metavar="PATH|URL",
            help="Store file or postgresql:// URL (default: the role's memory.store_path, "
            "else $MEMLOCI_PATH, "
            "else ./memloci.db).",
            show_default=False,
        ),
    ] = None,
    agent: RunAgentOpt = None,
) -> None:
    """Talk to an agent with memory (a REPL, or one run with -p)."""
    if autonomous and prompt is None:
        raise ValidationError(
            "--autonomous needs a task", hint="memloci chat role.yaml --autonomous -p 'the task'"
        )
    role = load_role(role_file, agent=agent)
    if resume and role.memory is None:
        raise no_memory_error(role.name, "--resume has no saved conversation to continue")
    settings = _settings(role, db)
    spec = resolve_model(role, settings, source=role_file.name)
    model = load_chat_model(spec.provider, **spec.options)
    with asyncio.Runner() as runner:
        memory = agent_memory(role, settings, db=db)
        try:
            bot = Agent(
                memory.service,
                role,
                model,
                user=user or _default_user(),
                commands=_commands(role),
                on_tool=_show_tool,
                warn=lambda line: err.print(cell(line, "yellow"), soft_wrap=True),
            )
            session = runner.run(bot.start(resume=resume))
            retry = _retry_command(role_file, db, agent)
            if prompt is not None and autonomous:
                _autonomous(runner, bot, prompt, retry)
            elif prompt is not None:
                _one_shot(runner, bot, prompt, retry)
            else:
                _repl(runner, bot, spec, session, retry)
        finally:
            runner.run(memory.aclose())
            model.close()


def _settings(role: Role, db: str | None) -> Settings:
    """The role's settings (its store folder is created when missing), ``--db`` on top."""
    return role_settings(role, db)


def _commands(role: Role) -> CommandHandler:
    """``/memory`` commands: answered from the store, or, for an agent without memory,
    with a line saying it has none."""
    if role.memory is not None:
        return memory_command_handler(answer_memory_command)

    async def none(text: str, bot: Agent) -> str | None:
        if parse_memory_command(text) is None:
            return None
        return f"Agent {bot.role.name!r} has no memory: its role file has no memory: block."

    return none


# ---------------------------------------------------------------------- one run
def _retry_command(role_file: Path, db: str | None, agent: str | None) -> str:
    """The command that consolidates this role's pending sessions, as the user can type it."""
    words = ["memloci", "memory", "consolidate", str(role_file)]
    if db is not None:
        words += ["--db", db]
    if agent is not None:
        words += ["--agent", agent]
    return shlex.join(words)


def _one_shot(runner: asyncio.Runner, bot: Agent, prompt: str, retry: str) -> None:
    """Answer ``prompt`` on stdout, then record the run's episode and consolidate."""
    try:
        reply = runner.run(bot.ask(prompt))
    except (MemlociError, KeyboardInterrupt):
        runner.run(bot.finish(autonomous=True, consolidate=False))
        raise
    typer.echo(plain(reply.text, lines=True))
    _show_consolidation(runner.run(bot.finish(autonomous=True)), retry)


def _autonomous(runner: asyncio.Runner, bot: Agent, prompt: str, retry: str) -> None:
    """Work on ``prompt`` until ``finish_task``; its summary on stdout (exit 10 when the
    step limit stopped the run, 7 when the model failed), then the episode, session
    pruning and consolidation."""
    result = runner.run(run_autonomous(bot, prompt))
    _show_consolidation(runner.run(bot.finish(autonomous=True)), retry)
    if not result.finished:
        err.print(cell(result.summary, "yellow"), soft_wrap=True)
        raise typer.Exit(ProviderError.exit_code if result.error else 10)
    typer.echo(plain(result.summary, lines=True))


# ---------------------------------------------------------------------- the REPL
def _repl(runner: asyncio.Runner, bot: Agent, spec: ModelSpec, session: str, retry: str) -> None:
    """Read, answer, repeat; ``exit`` / ``quit`` / Ctrl-D / Ctrl-C end the session."""
    kept = len(bot.conversation.window().messages) if bot.conversation else 0
    how = f"resumed session {session} ({kept} messages)" if kept else f"session {session}"
    if not bot.has_memory:
        how += "; no memory (the role file has no memory: block): nothing is kept"
    note(
        f"memloci chat: agent {bot.role.name!r} ({spec.label}), user {bot.user!r}, {how}.\n"
        "Type /help for commands; exit or Ctrl-D ends the session."
    )
    tty = interactive()
    if tty:
        with contextlib.suppress(ImportError):
            import readline  # noqa: F401  (line editing and history for input())
    while True:
        try:
            line = out.input("[bold cyan]you>[/] ") if tty else input()
        except (EOFError, KeyboardInterrupt):
            if tty:
                out.print()  # end the prompt's line
            break
        text = line.strip()
        if not text:
            continue
        if text.lower() in EXIT_WORDS:
            break
        if text.lower() in ("/help", "/?"):
            out.print(Text(HELP), soft_wrap=True)
            continue
        try:
            reply = runner.run(bot.ask(text))
        except KeyboardInterrupt:
            note("(interrupted; nothing of this turn was recorded)")
            continue
        except MemlociError as exc:
            report_error(exc.message, exc.hint)
            continue
        _show_reply(reply)
    note("Ending the session…")
    _show_consolidation(runner.run(bot.finish()), retry)


def _show_reply(reply: Reply) -> None:
    if interactive() and not reply.local:
        out.print(Text("assistant> ", "bold green") + cell(reply.text), soft_wrap=True)
    else:
        out.print(cell(reply.text), soft_wrap=True)


def _show_tool(run: ToolRun) -> None:
    """One dim line on stderr per tool call."""
    first = (run.result.splitlines() or [""])[0]
    first = first if len(first) <= 160 else first[:159] + "…"
    style = "dim" if run.ok else "yellow"
    err.print(cell(f"  [{run.name}] {first}", style), soft_wrap=True)


def _show_consolidation(report: ConsolidationReport | None, retry: str) -> None:
    if report is None:
        return
    if report.sessions:
        made = len(report.created)
        note(
            f"Consolidated {len(report.sessions)} session(s): {made} new "
            f"{'memory' if made == 1 else 'memories'}."
        )
    if report.failed:
        first = next(iter(report.failed.values()))
        err.print(
            cell(
                f"memloci: consolidation left {len(report.failed)} session(s) pending ({first}); "
                f"`{retry}` retries",
                style="yellow",
            ),
            soft_wrap=True,
        )


__all__ = ["CHAT_EXAMPLES", "chat"]
