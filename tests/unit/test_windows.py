"""The neighbour windows' recurrence (``memloci.storage.windows``) on an in-memory chain:
a window's size, how far a change is carried, the order rows are written in."""

from __future__ import annotations

from pathlib import Path

from memloci import Memory
from memloci.storage.windows import (
    MAX_STEPS,
    MAX_TURNS,
    SEP,
    WINDOW,
    behind_sql,
    carry,
    restart,
    said,
    window,
)


class ListChain:
    """Turns ``0..n-1`` in order, each ``[said, context, next_context]``."""

    def __init__(self, texts: list[str]) -> None:
        self.rows = [[t, "", ""] for t in texts]
        self.writes: list[tuple[int, str]] = []
        for i in range(1, len(texts)):  # as if inserted one by one
            self.rows[i][1] = window(self.rows[i - 1][0], self.rows[i - 1][1])
            carry(self, str(i), "next_context")
        self.writes.clear()

    def neighbour(self, node_id: str, column: str) -> str | None:
        i = int(node_id) + (1 if column == "context" else -1)
        return str(i) if 0 <= i < len(self.rows) else None

    def row(self, node_id: str) -> tuple[str, str, str] | None:
        r = self.rows[int(node_id)]
        return (r[0], r[1], r[2])

    def write(self, node_id: str, column: str, value: str) -> None:
        self.rows[int(node_id)][1 if column == "context" else 2] = value
        self.writes.append((int(node_id), column))


def test_said_and_window() -> None:
    assert said("Ana", "I moved") == "Ana: I moved" and said(None, "I moved") == "I moved"
    assert said("Ana", "lol") == "" and said("Ana", "Thanks! \U0001f602") == ""
    assert window("", f"one{SEP}two") == f"one{SEP}two"  # a filler is passed over
    assert len(said("Ana", "x" * 2000)) == 600
    assert window("a" * WINDOW, "b\nc") == "a" * WINDOW  # long: the nearest turn only
    assert window("short", f"one{SEP}two{SEP}three") == f"short{SEP}one{SEP}two{SEP}three"
    pieces = window("x" * (WINDOW - 1), "y\nz").split(SEP)
    assert pieces == ["x" * (WINDOW - 1), "y"]  # further turns join while they all fit
    assert window("x" * 90, "y" * 80) == "x" * 90  # an ordinary turn: its neighbour only


def test_windows_of_a_chain_of_short_messages() -> None:
    chain = ListChain([f"m{i} " + "w" * 30 for i in range(14)])
    # each row holds the nearest turns on both sides, up to the window
    context = chain.rows[5][1].split(SEP)
    assert [p[:2] for p in context] == ["m4", "m3", "m2", "m1", "m0"][: len(context)]
    assert 1 < len(context) < 6 and sum(map(len, context[:-1])) < WINDOW
    ahead = chain.rows[5][2].split(SEP)
    assert ahead[0].startswith("m6") and len(ahead) == len(context)


def test_an_edit_is_carried_until_every_window_is_as_if_built_afresh() -> None:
    texts = [f"m{i} " + "w" * (10 + 7 * (i % 4)) for i in range(14)]
    chain = ListChain(texts)
    chain.rows[6][0] = texts[6] = "EDITED"
    assert carry(chain, "6", "context") > 0 and carry(chain, "6", "next_context") > 0
    assert chain.rows == ListChain(texts).rows
    assert not any("m6 " in r[1] + r[2] for r in chain.rows)


def test_rows_are_written_oldest_first_either_way() -> None:
    chain = ListChain([f"m{i} " + "w" * 20 for i in range(12)])
    chain.rows[8][0] = "CHANGED"
    carry(chain, "8", "next_context")  # the turns before 8, walked newest first
    written = [i for i, _ in chain.writes]
    assert written == sorted(written) and written[-1] == 7


def test_a_removed_neighbour_restarts_the_window_beyond_it() -> None:
    chain = ListChain([f"m{i} " + "w" * 30 for i in range(8)])
    chain.rows[3][0] = "GONE"  # stands for a removed turn's words held elsewhere
    carry(chain, "3", "context")
    # turn 4 lost its neighbour 3: it starts afresh, and so do the ones after it
    chain.neighbour = lambda node_id, column: (  # type: ignore[method-assign]
        None
        if (node_id, column) == ("4", "next_context")
        else ListChain.neighbour(chain, node_id, column)
    )
    assert restart(chain, "4", "context") >= 2
    assert chain.rows[4][1] == "" and not any("GONE" in r[1] for r in chain.rows[4:])


def test_a_change_is_carried_at_most_max_steps() -> None:
    chain = ListChain(["x"] * (MAX_STEPS + 5))  # tiny turns: every window reaches far
    chain.rows[0][0] = "y"
    assert carry(chain, "0", "context") <= MAX_STEPS


def test_a_window_of_tiny_messages_holds_max_turns_so_every_change_reaches_it() -> None:
    texts = [f"ok{i}" for i in range(30)]
    chain = ListChain(texts)
    assert max(len(r[1].split(SEP)) for r in chain.rows) == MAX_TURNS
    assert MAX_STEPS > MAX_TURNS
    chain.rows[15][0] = texts[15] = "GONE"
    carry(chain, "15", "context")
    carry(chain, "15", "next_context")
    assert chain.rows == ListChain(texts).rows
    assert not any("ok15" in r[1] + r[2] for r in chain.rows)
    assert said("Ana", "one\ntwo") == "Ana: one two"  # a turn is one piece of a window


def test_a_turns_predecessors_are_read_through_the_edge_index(tmp_path: Path) -> None:
    """Adding a turn reads the turns before it in one recursive query; each step must be
    one look-up of ``edges_target`` (namespace, target, relation). Joined the other way
    round, SQLite scanned the namespace's edges at every step: an add at 50k turns took
    80 ms instead of 0.5."""
    with Memory(tmp_path / "m.db", embedder="none") as m:
        m.add([{"role": "user", "content": f"turn {i}"} for i in range(4)], session="s")
        store = m.service.store
        with store.db.reading() as c:  # type: ignore[attr-defined]
            plan = [
                r[3]
                for r in c.execute(
                    "EXPLAIN QUERY PLAN " + behind_sql("?"), ("x", "default", 7, "default")
                )
            ]
    steps = [p for p in plan if p.startswith("SEARCH e ")]
    assert steps and all("target_id=?" in p for p in steps), plan
    assert not any(p.startswith("SCAN e") for p in plan), plan
