"""Which turn a conversation turn replies to (layer: storage), for both SQL backends.

A turn replies to the nearest earlier turn of its chain (the ``temporal`` edges: its
session's turns of the same owner, or a session-less chat's) said by someone else: the
question before an answer, the message a reaction is about. One person's burst of
messages ("I went to the shelter." "Got a pup!") replies to what came before the
burst. A turn without a speaker, or one that says nothing of its own ("lol",
"Thanks!": :func:`~memloci.words.says_nothing`), replies to nobody and is passed over
(:func:`voice`); nor does a turn reply to anyone when its chain holds no one else's turn
within ``reach`` turns before it (the first turn of a chat, a run of one person's
notes).

The turns asked about come with the turns after them that answer them: the next turn,
and while someone else speaks, the rest of their reply ("How's the pup?" → "Awesome!",
"Sounds great.", "The little one is doing great"), at most ``reach`` turns on.

Each backend supplies two queries (:class:`Steps`): the speakers of given turns, and
one step along the chain from given turns. The walk back from a turn stops at the first
turn by someone else, so a chat of alternating turns costs one step back (and two
forward: the reply, then the asker's next turn, where the walk stops).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memloci.words import says_nothing


def voice(speaker: str | None, content: str) -> str | None:
    """Who says a turn, as replies count it: its speaker, None when it has none or says
    nothing of its own."""
    return None if speaker is None or says_nothing(content) else speaker


class Steps(Protocol):
    """One read transaction's view of a namespace's turn chains, filter applied."""

    def speakers(self, ids: Sequence[str]) -> dict[str, str | None]:
        """The :func:`voice` of each of ``ids`` the filter admits."""
        ...

    def step(self, ids: Sequence[str], *, forward: bool) -> list[tuple[str, str, str | None]]:
        """``(turn, the turn after it (forward) or before it, that turn's voice)`` for
        each of ``ids`` that has one the filter admits (current edges)."""
        ...


def replies(steps: Steps, ids: Sequence[str], reach: int) -> dict[str, str | None]:
    """Each of ``ids``, and the turns after each through the reply to it (the next
    turn, then while someone else speaks, at most ``reach``), that someone says
    (:func:`voice`) → the turn it replies to, None when it replies to nobody (module
    docstring)."""
    speaker = steps.speakers(list(dict.fromkeys(ids)))
    origin = {t: said for t, said in speaker.items() if said}  # whose turn a walk is from
    before: dict[str, str] = {}
    later: list[str] = []  # the turns after each of ``ids``, through the reply to it
    ahead = {t: who for t, who in origin.items() if who}  # turn → whose turn it walks from
    for step in range(reach):
        onward: dict[str, str] = {}
        for turn, nxt, said in steps.step(list(ahead), forward=True):
            if nxt in before or turn not in ahead:
                continue
            before[nxt] = turn
            speaker.setdefault(nxt, said)
            if step == 0 or said != ahead[turn]:  # the next turn, then the other's reply
                later.append(nxt)
            if said != ahead[turn]:
                onward[nxt] = ahead[turn]
        ahead = onward
        if not ahead:
            break
    # walk back from each turn while the turns are its own speaker's
    frontier = list(origin)
    for _ in range(reach):
        found: list[str] = []
        for turn, earlier, said in steps.step(frontier, forward=False):
            if before.setdefault(turn, earlier) != earlier:
                continue
            if earlier not in speaker:
                speaker[earlier] = said
                if said in (None, origin[turn]):  # the same person's burst, or nobody's
                    origin[earlier] = origin[turn]
                    found.append(earlier)
        frontier = found
        if not frontier:
            break
    out: dict[str, str | None] = {}
    for turn in [*ids, *later]:
        who = speaker.get(turn)
        if turn in out or not who:
            continue
        out[turn] = None
        back = before.get(turn)
        for _ in range(reach):
            if back is None:
                break
            if speaker.get(back) not in (None, who):
                out[turn] = back
                break
            back = before.get(back)
    return out
