"""Runs without a person (layer: runtime): the role file's ``autonomy:`` and ``triggers:``.

::

    autonomy:
      max_steps: 10            # model calls per autonomous run before it is stopped
    triggers:
      - {type: cron, every: 10m, prompt: "Check the deploy queue"}
      - {type: webhook, port: 8080}   # POST a task to http://127.0.0.1:8080/
      - {type: file_watch, path: "inbox/*.md", poll: 2s, prompt: "Triage the new notes"}

``every`` is a number followed by ``s``, ``m``, ``h`` or ``d`` (``90s``, ``10m``,
``1.5h``); ``memloci run role.yaml`` starts the triggers, ``memloci run role.yaml -p
"task"`` runs one autonomous task. Kept apart from ``role.py`` so the runners can
import it without importing the agent.
"""

from __future__ import annotations

import re
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from memloci.errors import ValidationError

EVERY_PATTERN = r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$"
UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
DEFAULT_MAX_STEPS = 10
MAX_STEPS = 1000
DEFAULT_TASK = "Run your scheduled task and call finish_task with a summary when done."


class _Block(BaseModel):
    """Strict, closed, either-case keys (as every block of the role file)."""

    model_config = ConfigDict(
        extra="forbid", strict=True, alias_generator=to_camel, populate_by_name=True,
        frozen=True,
    )  # fmt: skip


class AutonomyConfig(_Block):
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


class TriggerConfig(_Block):
    """One trigger: ``cron`` runs ``prompt`` every ``every``; ``webhook`` listens on
    127.0.0.1:``port`` and runs the posted payload as the task; ``file_watch`` runs
    ``prompt`` (with the changed files) when a file at ``path`` (a file, a folder or a
    glob such as ``inbox/**/*.md``) is created, changed or deleted, found by polling
    modification times every ``poll`` (default 1s)."""

    type: Literal["cron", "webhook", "file_watch"]
    every: str | None = Field(None, pattern=EVERY_PATTERN)
    prompt: str | None = Field(None, min_length=1, max_length=20_000)
    port: int | None = Field(None, ge=0, le=65535)
    path: str | None = Field(None, min_length=1, max_length=4096)
    poll: str | None = Field(None, pattern=EVERY_PATTERN)

    @model_validator(mode="after")
    def _complete(self) -> Self:
        if self.type == "file_watch":
            if self.path is None or not self.path.strip():
                raise ValueError("a file_watch trigger needs path: (a file, folder or glob)")
            if "\x00" in self.path:
                raise ValueError("path holds a NUL character")
            if self.every is not None or self.port is not None:
                raise ValueError("a file_watch trigger takes path: and poll:, not every: or port:")
            if self.poll is not None and not 0 < parse_every_or_zero(self.poll) <= 3600:
                raise ValueError(f"poll {self.poll!r} must be over 0 and at most 1h; e.g. 2s")
        elif self.path is not None or self.poll is not None:
            raise ValueError(f"path: and poll: are for file_watch triggers, not {self.type}")
        if self.type == "cron" and self.every is None:
            raise ValueError("a cron trigger needs every: (e.g. every: 10m)")
        if self.every is not None:
            try:
                parse_every(self.every)  # "0m" matches the pattern but never comes round
            except ValidationError:
                raise ValueError(f"every {self.every!r} never comes round; e.g. 10m") from None
        if self.type == "webhook" and self.port is None:
            raise ValueError("a webhook trigger needs port: (e.g. port: 8080)")
        return self

    @property
    def seconds(self) -> float:
        """A cron trigger's interval, a file_watch trigger's polling interval."""
        if self.type == "file_watch":
            return parse_every(self.poll or "1s")
        return parse_every(self.every or "")


def parse_every_or_zero(text: str) -> float:
    match = re.match(EVERY_PATTERN, text or "")
    return float(match.group(1)) * UNITS[match.group(2)] if match else 0.0


def parse_every(text: str) -> float:
    """Seconds in ``"90s"``, ``"10m"``, ``"1.5h"``, ``"1d"``; ValidationError otherwise."""
    match = re.match(EVERY_PATTERN, text or "")
    seconds = float(match.group(1)) * UNITS[match.group(2)] if match else 0.0
    if seconds <= 0:
        raise ValidationError(
            f"invalid interval {text!r}", hint="a number and a unit: 30s, 10m, 1h or 1d"
        )
    return seconds


__all__ = ["AutonomyConfig", "TriggerConfig", "parse_every"]
