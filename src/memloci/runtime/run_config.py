"""Runs without a person (layer: runtime): the role file's ``autonomy:`` and ``triggers:``.

::

    autonomy:
      max_steps: 10            # model calls per autonomous run before it is stopped
    triggers:
      - {type: cron, every: 10m, prompt: "Check the deploy queue"}
      - {type: cron, schedule: "0 9 * * mon-fri", prompt: "Morning summary"}
      - {type: webhook, port: 8080}   # POST a task to http://127.0.0.1:8080/
      - {type: file_watch, path: "inbox/*.md", poll: 2s, prompt: "Triage the new notes"}

``every`` is a number followed by ``s``, ``m``, ``h`` or ``d`` (``90s``, ``10m``,
``1.5h``); ``schedule`` is a five-field cron expression (:mod:`memloci.runtime.cron`;
``every`` takes one too); ``memloci run role.yaml`` starts the triggers, ``memloci run role.yaml -p
"task"`` runs one autonomous task. Kept apart from ``role.py`` so the runners can
import it without importing the agent.
"""

from __future__ import annotations

import re
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from memloci.errors import ValidationError
from memloci.runtime.cron import CronError, CronSchedule, looks_like_cron

EVERY_PATTERN = r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$"
INTERVAL_WORDS = "a number and a unit: 30s, 10m, 1.5h or 1d"
UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
DEFAULT_MAX_STEPS = 10
MAX_STEPS = 1000
DEFAULT_TASK = "Run your scheduled task and call finish_task with a summary when done."


class Block(BaseModel):
    """A block of the role file: strict, closed, either-case keys (a typo is an error,
    never silently ignored)."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        alias_generator=to_camel,
        populate_by_name=True,
        protected_namespaces=(),
        frozen=True,
    )


class AutonomyConfig(Block):
    """``autonomy:`` — ``max_steps`` bounds one autonomous run (model calls);
    ``max_iterations`` is accepted as the same setting."""

    max_steps: int | None = Field(None, ge=1, le=MAX_STEPS)
    max_iterations: int | None = Field(None, ge=1, le=MAX_STEPS)

    @model_validator(mode="after")
    def _one(self) -> Self:
        a, b = self.max_steps, self.max_iterations
        if a is not None and b is not None and a != b:
            raise ValueError(f"max_steps ({a}) and max_iterations ({b}) set the same thing")
        return self

    @property
    def steps(self) -> int:
        return self.max_steps or self.max_iterations or DEFAULT_MAX_STEPS


class TriggerConfig(Block):
    """One trigger: ``cron`` runs ``prompt`` every ``every`` (an interval) or at the
    minutes of ``schedule`` (a cron expression such as ``*/5 * * * *``; ``every`` takes
    one too); ``webhook`` listens on
    127.0.0.1:``port`` and runs the posted payload as the task; ``file_watch`` runs
    ``prompt`` (with the changed files) when a file at ``path`` (a file, a folder or a
    glob such as ``inbox/**/*.md``) is created, changed or deleted, found by polling
    modification times every ``poll`` (default 1s)."""

    type: Literal["cron", "webhook", "file_watch"]
    every: str | None = Field(None, min_length=1, max_length=200)
    schedule: str | None = Field(None, min_length=1, max_length=200)
    prompt: str | None = Field(None, min_length=1, max_length=20_000)
    port: int | None = Field(None, ge=0, le=65535)
    path: str | None = Field(None, min_length=1, max_length=4096)
    poll: str | None = Field(None, min_length=1, max_length=200)

    @model_validator(mode="after")
    def _complete(self) -> Self:
        if self.type == "file_watch":
            if self.path is None or not self.path.strip():
                raise ValueError("a file_watch trigger needs path: (a file, folder or glob)")
            if "\x00" in self.path:
                raise ValueError("path holds a NUL character")
            if self.every is not None or self.port is not None or self.schedule is not None:
                raise ValueError(
                    "a file_watch trigger takes path: and poll:, not every:, schedule: or port:"
                )
            if self.poll is not None and not 0 < parse_every_or_zero(self.poll) <= 3600:
                raise ValueError(
                    f"poll {self.poll!r} must be over 0 and at most 1h: {INTERVAL_WORDS}"
                )
        elif self.path is not None or self.poll is not None:
            raise ValueError(f"path: and poll: are for file_watch triggers, not {self.type}")
        if self.schedule is not None and self.type != "cron":
            raise ValueError(f"schedule: is for cron triggers, not {self.type}")
        if self.type == "cron" and (self.every is None) == (self.schedule is None):
            raise ValueError(
                "a cron trigger needs every: (e.g. every: 10m) or schedule: "
                "(a cron expression, e.g. schedule: '*/5 * * * *'), one of them"
            )
        problem = every_problem(self.every) if self.every is not None else None
        if problem is not None:
            raise ValueError(problem)
        if self.schedule is not None:
            try:
                CronSchedule.parse(self.schedule)
            except CronError as exc:
                raise ValueError(f"schedule: {exc}") from None
        if self.type == "webhook" and self.port is None:
            raise ValueError("a webhook trigger needs port: (e.g. port: 8080)")
        return self

    @property
    def cron(self) -> CronSchedule | None:
        """A cron trigger's cron expression (``schedule``, or ``every`` written as one)."""
        text = self.schedule or self.every
        if self.type != "cron" or text is None or not looks_like_cron(text):
            return None
        return CronSchedule.parse(text)

    @property
    def seconds(self) -> float:
        """A cron trigger's interval, a file_watch trigger's polling interval."""
        if self.type == "file_watch":
            return parse_every(self.poll or "1s")
        return parse_every(self.every or "")

    @property
    def when(self) -> str:
        """How the trigger's schedule reads: ``every 10m`` or ``at */5 * * * *``."""
        if self.cron is not None:
            return f"at {self.cron.text}"
        return f"every {self.every}"


def every_problem(text: str) -> str | None:
    """What is wrong with ``every`` (an interval or a cron expression), in words; None
    when it is right."""
    if looks_like_cron(text):
        try:
            CronSchedule.parse(text)
        except CronError as exc:
            return f"every: {exc}"
        return None
    if re.match(EVERY_PATTERN, text) is None:
        return (
            f"every {text!r} is neither an interval ({INTERVAL_WORDS}) nor a cron "
            "expression (5 fields: minute hour day-of-month month day-of-week, e.g. "
            "'*/5 * * * *')"
        )
    if parse_every_or_zero(text) <= 0:  # "0m" has the form but never comes round
        return f"every {text!r} never comes round; e.g. 10m"
    return None


def parse_every_or_zero(text: str) -> float:
    match = re.match(EVERY_PATTERN, text or "")
    return float(match.group(1)) * UNITS[match.group(2)] if match else 0.0


def parse_every(text: str) -> float:
    """Seconds in ``"90s"``, ``"10m"``, ``"1.5h"``, ``"1d"``; ValidationError otherwise."""
    match = re.match(EVERY_PATTERN, text or "")
    seconds = float(match.group(1)) * UNITS[match.group(2)] if match else 0.0
    if seconds <= 0:
        raise ValidationError(f"invalid interval {text!r}", hint=INTERVAL_WORDS)
    return seconds


__all__ = ["AutonomyConfig", "Block", "TriggerConfig", "every_problem", "parse_every"]
