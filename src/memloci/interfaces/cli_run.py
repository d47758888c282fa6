"""``memloci run`` (layer: interfaces): an agent working without a person.

``memloci run role.yaml -p "task"`` is one autonomous run: the agent works until it
calls ``finish_task(summary)`` or reaches ``autonomy.max_steps``, the summary is printed
and recorded as an episode of category ``autonomous_run``. With a schedule
(``--every 10m`` or the role's ``triggers:``) and/or a webhook (``--webhook PORT``) it
keeps running, one autonomous run per trigger execution (episode metadata
``trigger_type`` ``cron`` / ``webhook``), until Ctrl-C, SIGTERM or ``--max-runs``.
The loop is :mod:`memloci.runtime.autonomous`, the triggers
:mod:`memloci.runtime.triggers`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Annotated, Any

import typer

from memloci.errors import ProviderError, ValidationError
from memloci.interfaces.cli_common import (
    RunAgentOpt,
    RunRoleArg,
    agent_memory,
    cell,
    err,
    examples,
    note,
    plain,
    role_settings,
)
from memloci.providers.chat import ChatModel, load_chat_model
from memloci.runtime.agent import Agent
from memloci.runtime.agent import model_spec as resolve_model
from memloci.runtime.autonomous import RunResult, run_autonomous
from memloci.runtime.role import Role, load_role
from memloci.runtime.run_config import MAX_STEPS, TriggerConfig, every_problem
from memloci.runtime.triggers import TriggerRunner

RUN_EXAMPLES = examples(
    "memloci run role.yaml -p 'Check the deploy queue and report'",
    "memloci run role.yaml --every 10m -p 'Summarise new tickets'",
    "memloci run role.yaml --webhook 8080",
    "memloci run role.yaml          # the triggers listed in the role file",
)
STOPPED_EXIT = 10  # one run reached its step limit without finish_task


def run(
    role_file: RunRoleArg,
    prompt: Annotated[
        str | None,
        typer.Option(
            "--prompt",
            "-p",
            help="The task (of one run, or of each scheduled run).",
            show_default=False,
        ),
    ] = None,
    every: Annotated[
        str | None,
        typer.Option(
            "--every",
            metavar="INTERVAL",
            show_default=False,
            help="Run the task on a schedule: 30s, 10m, 1h, 1d, or a cron "
            "expression such as '*/5 * * * *'.",
        ),
    ] = None,
    webhook: Annotated[
        int | None,
        typer.Option(
            "--webhook",
            metavar="PORT",
            min=0,
            max=65535,
            show_default=False,
            help="Listen on 127.0.0.1:PORT; each POST runs its payload as the task.",
        ),
    ] = None,
    max_runs: Annotated[
        int | None,
        typer.Option(
            "--max-runs", min=1, show_default=False, help="Stop after this many trigger executions."
        ),
    ] = None,
    max_steps: Annotated[
        int | None,
        typer.Option(
            "--max-steps",
            min=1,
            max=MAX_STEPS,
            show_default=False,
            help="Model calls per run (default: the role's autonomy.max_steps, else 10).",
        ),
    ] = None,
    user: Annotated[
        str, typer.Option("--user", "-u", help="The memory user the runs act for.")
    ] = "autonomous",
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            metavar="PATH|URL",
            show_default=False,
            help="Store file or postgresql:// URL (default: the role's store_path).",
        ),
    ] = None,
    agent: RunAgentOpt = None,
) -> None:
    """Run an agent without a person: one task (-p), or on triggers.

    Triggers: a schedule (--every), a webhook (--webhook), or the role file's triggers:."""
    role = load_role(role_file, agent=agent)
    triggers = _triggers(role, prompt, every, webhook)
    if not triggers and prompt is None:
        raise ValidationError(
            f"{role_file.name} has no triggers and no task was given",
            hint="give a task with -p 'task', a schedule with --every 10m, a webhook with "
            "--webhook 8080, or list triggers: in the role file",
        )
    settings = role_settings(role, db)
    spec = resolve_model(role, settings, source=role_file.name)
    model = load_chat_model(spec.provider, **spec.options)
    try:
        code = asyncio.run(
            _main(role, model, settings, user, triggers, prompt, max_steps, max_runs, db)
        )
    finally:
        model.close()
    if code:
        raise typer.Exit(code)


def _triggers(
    role: Role, prompt: str | None, every: str | None, webhook: int | None
) -> list[TriggerConfig]:
    """The command line's triggers, else the role's (with ``-p`` as the cron task)."""
    if every is not None or webhook is not None:
        out = []
        if every is not None:
            problem = every_problem(every)
            if problem is not None:
                hint = "e.g. --every 10m or --every '*/5 * * * *'"
                raise ValidationError(f"--{problem}", hint=hint)
            out.append(TriggerConfig(type="cron", every=every, prompt=prompt))
        if webhook is not None:
            out.append(TriggerConfig(type="webhook", port=webhook))
        return out
    if prompt is not None:
        return []  # one run
    return role.resolved_triggers


async def _main(
    role: Role,
    model: ChatModel,
    settings: Any,
    user: str,
    triggers: list[TriggerConfig],
    prompt: str | None,
    max_steps: int | None,
    max_runs: int | None,
    db: str | None = None,
) -> int:
    memory = agent_memory(role, settings, db=db)
    try:
        bot = Agent(
            memory.service,
            role,
            model,
            user=user,
            channel="autonomous",
            warn=lambda line: err.print(cell(line, "yellow"), soft_wrap=True),
        )

        async def execute(task: str, trigger: Mapping[str, Any] | None) -> RunResult:
            await bot.start()
            try:
                result = await run_autonomous(bot, task, max_steps=max_steps, trigger=trigger)
            finally:
                await bot.finish(autonomous=True)
            label = f"[{trigger['trigger_type']}] " if trigger else ""
            if result.finished:
                typer.echo(plain(f"{label}{result.summary}", lines=True))
            else:
                err.print(cell(f"{label}{result.summary}", "yellow"), soft_wrap=True)
            return result

        if not triggers:
            assert prompt is not None
            result = await execute(prompt, None)
            if result.finished:
                return 0
            return ProviderError.exit_code if result.error else STOPPED_EXIT
        runner = TriggerRunner(
            execute,
            triggers,
            max_runs=max_runs,
            on_ready=note,
            warn=lambda line: err.print(cell(line, "yellow")),
        )
        done = await runner.serve()
        note(f"memloci run: stopped after {done} run(s)")
        return 0
    finally:
        await memory.aclose()


__all__ = ["RUN_EXAMPLES", "run"]
