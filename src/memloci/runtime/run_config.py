"""Runs without a person (layer: runtime): the role file's ``autonomy:`` and ``triggers:``.

::

    autonomy:
      max_steps: 10            # model calls per autonomous run before it is stopped
    triggers:
      - {type: cron, every: 10m, prompt: "Check the deploy queue"}
      - {type: webhook, port: 8080}   # POST a task to http://127.0.0.1:8080/

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
    127.0.0.1:``port`` and runs the posted payload as the task."""

    type: Literal["cron", "webhook"]
    every: str | None = Field(None, pattern=EVERY_PATTERN)
    prompt: str | None = Field(None, min_length=1, max_length=20_000)
    port: int | None = Field(None, ge=0, le=65535)

    @model_validator(mode="after")
    def _complete(self) -> Self:
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
        return parse_every(self.every or "")


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
