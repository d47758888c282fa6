"""Learned procedures (layer: context): when a procedure applies, and its track record.

A procedure without trigger conditions is a standing instruction: it is always part
of the prompt. One with triggers (``{"goal_contains": ["weather"]}``)
applies to a goal only when the goal mentions one of the words; a goal is whatever the
agent is asked to do (the user's message, a task). Each use can be recorded with its
outcome and duration: ``times_used``, ``success_rate`` and ``avg_duration_ms`` are
running figures over the recorded uses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memloci.models import MemoryNode, ProcedureDetails

_WORD = re.compile(r"\w+")


def has_triggers(node: MemoryNode) -> bool:
    """Whether the procedure applies only to some goals."""
    return bool(node.procedure is not None and _words(node.procedure.triggers))


def _words(triggers: dict[str, object]) -> list[str]:
    found = triggers.get("goal_contains") or []
    if isinstance(found, str):
        found = [found]
    return [w for w in found if isinstance(w, str) and w.strip()] if isinstance(found, list) else []


def applies(node: MemoryNode, goal: str) -> bool:
    """Whether a triggered procedure applies to ``goal``: one of its ``goal_contains``
    phrases occurs in it (case-insensitive, on word boundaries; "deploy" matches
    "deploying", not "redeploy")."""
    if node.procedure is None:
        return False
    text = " ".join(_WORD.findall(goal.lower()))
    for phrase in _words(node.procedure.triggers):
        words = " ".join(_WORD.findall(phrase.lower()))
        if words and re.search(rf"(?<!\w){re.escape(words)}", text):
            return True
    return False


def matching(procedures: Iterable[MemoryNode], goal: str) -> list[MemoryNode]:
    """The triggered procedures among ``procedures`` that apply to ``goal``, in order."""
    return [p for p in procedures if has_triggers(p) and applies(p, goal)]


def record_use(
    details: ProcedureDetails, *, success: bool | None = None, duration_ms: float | None = None
) -> ProcedureDetails:
    """The track record after one more use: ``times_used`` + 1; the success rate and the
    average duration are running means in which every use weighs the same."""
    n = details.times_used
    rate, avg = details.success_rate, details.avg_duration_ms
    if success is not None:
        rate = float(success) if rate is None or n == 0 else (rate * n + float(success)) / (n + 1)
    if duration_ms is not None:
        avg = duration_ms if avg is None or n == 0 else (avg * n + duration_ms) / (n + 1)
    return details.model_copy(
        update={"times_used": n + 1, "success_rate": rate, "avg_duration_ms": avg}
    )
