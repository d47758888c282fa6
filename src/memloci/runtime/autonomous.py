"""Autonomous runs (layer: runtime): the agent works on a task until it calls
``finish_task(summary)``, bounded by the role's ``autonomy.max_steps``.

::

    agent = Agent(service, role, model, user="ops")
    result = await run_autonomous(agent, "Check the deploy queue")   # starts the session
    await agent.finish(autonomous=True)      # episode, session pruning, consolidation

Each step is one model call, offered the agent's memory tools plus ``finish_task``
(offered only here). A reply in plain text is answered with a request to continue; a
``finish_task`` call ends the run with its summary. When the step limit is reached the
run stops with a message saying so. The task and the outcome are saved in the
conversation; :meth:`Agent.finish` then records one episode of category
``autonomous_run`` whose content is the summary (metadata ``trigger_type`` when a
trigger started the run), prunes old sessions and consolidates when
``consolidation.interval`` is ``after_autonomous`` or ``after_session``.

Each learned procedure the run applied — its trigger matched the task, or the summary
cites its ``[id:…]`` — gets one use recorded (:meth:`Agent.record_procedures`): success
when ``finish_task`` ended the run, failure when the step limit did, and the run's
duration; one the model reported with ``record_procedure_use`` is not counted twice.

Never raises: memory failures are reported through the agent's ``warn``, a failing
model ends the run with ``result.error`` set (the episode records the failure).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memloci import validate as v
from memloci.errors import MemlociError
from memloci.models import TURN_MAX
from memloci.runtime.agent import CATEGORY, Agent, ToolRun, capture_episode
from memloci.runtime.run_config import MAX_STEPS

FINISH_TASK = "finish_task"
FINISH_SPEC: dict[str, Any] = {
    "name": FINISH_TASK,
    "description": (
        "Call this when the task is complete (or cannot be completed), with a short "
        "summary of what you did and the outcome. It ends the run."
    ),
    "parameters": {
        "type": "object",
        "properties": {"summary": {"type": "string", "description": "What was done."}},
        "required": ["summary"],
    },
}
CONTINUE = (
    "Continue working on the task. When it is done, call finish_task with a short "
    "summary of what you did."
)
STEP_LIMIT = (
    "(Stopped: the step limit of {n} model calls was reached before finish_task was "
    "called. Raise autonomy.max_steps in the role file, or give a smaller task.)"
)


@dataclass(frozen=True)
class RunResult:
    """One autonomous run: ``finished`` when the agent called ``finish_task``;
    ``summary`` is its summary, else the stop message (or the model's error)."""

    task: str
    summary: str
    finished: bool
    steps: int
    tools: tuple[ToolRun, ...] = ()
    error: str | None = None


async def run_autonomous(
    agent: Agent,
    task: str,
    *,
    max_steps: int | None = None,
    trigger: Mapping[str, Any] | None = None,
) -> RunResult:
    """Run ``task`` until ``finish_task`` or ``max_steps`` model calls (default: the
    role's ``autonomy.max_steps``); ``trigger`` (e.g. ``{"trigger_type": "cron"}``) goes
    into the run's episode. Starts the agent's session if needed; never raises."""
    task = v.turn(task)
    clock = time.monotonic()
    steps_max = v.limit(max_steps or agent.role.autonomy.steps, "max_steps", MAX_STEPS)
    agent.trigger = dict(trigger) if trigger else None
    if agent.conversation is None:
        await agent.start()
    assert agent.conversation is not None
    window = agent.conversation.window()
    system = window.system(await agent._context(task))
    messages: list[dict[str, Any]] = [
        {"role": m.role, "content": m.content}
        for m in window.messages
        if m.role in ("user", "assistant")
    ]
    messages.append({"role": "user", "content": task})
    cfg = agent.role.model
    chat = functools.partial(
        agent.model.chat,
        system=system or None,
        tools=[*agent._specs, FINISH_SPEC],
        max_tokens=cfg.max_tokens if cfg else 1024,
        temperature=cfg.temperature if cfg else 0.7,
    )
    runs: list[ToolRun] = []
    summary, finished, error, steps = "", False, None, 0
    while steps < steps_max and not finished:
        steps += 1
        try:
            turn = await asyncio.to_thread(chat, messages)
        except Exception as exc:  # the model failed: end the run, say why
            error = exc.message if isinstance(exc, MemlociError) else f"{type(exc).__name__}"
            summary = f"(The run failed: {error})"
            break
        if not turn.tool_calls:
            messages.append({"role": "assistant", "content": turn.text})
            messages.append({"role": "user", "content": CONTINUE})
            continue
        messages.append(
            {"role": "assistant", "content": turn.text, "tool_calls": list(turn.tool_calls)}
        )
        for call in turn.tool_calls:
            if call.name == FINISH_TASK:
                said = call.input().get("summary")
                summary = str(said).strip() if said else (turn.text.strip() or "(done)")
                finished, result = True, "Task finished."
                messages.append(_tool_message(call.id, call.name, result, ok=True))
                continue
            run = await agent._run_tool(call)
            runs.append(run)
            messages.append(_tool_message(call.id, call.name, run.result, ok=run.ok))
    if not finished and error is None:
        summary = STEP_LIMIT.format(n=steps_max)
        agent.warn(f"memloci: {summary}")
    summary = summary[:TURN_MAX]
    agent.outcome = {"success": finished, "final_output": summary[:2000], "steps": steps}
    if error is not None:
        agent.outcome["error"] = error
    await agent.conversation.record("user", task)
    await agent.conversation.record("assistant", summary)
    agent.record_turn(task, summary, tuple(runs))
    if error is None:  # a run the model failed carried no procedure to an outcome
        ms = round((time.monotonic() - clock) * 1000, 1)
        await agent.record_procedures(task, summary, tuple(runs), success=finished, duration_ms=ms)
    return RunResult(task, summary, finished, steps, tuple(runs), error)


def _tool_message(call_id: str, name: str, result: str, *, ok: bool) -> dict[str, Any]:
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "name": name,
        "content": result,
        "is_error": not ok,
    }


__all__ = [
    "CATEGORY",
    "FINISH_SPEC",
    "FINISH_TASK",
    "RunResult",
    "capture_episode",
    "run_autonomous",
]
