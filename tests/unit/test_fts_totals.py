"""The SQLite full-text index counts the rows it holds, not its history
(storage/sqlite/fts_totals.py): FTS5 never lowers its row count when a row of a
contentless-delete index is deleted or rewritten, and memloci rewrites a turn's row as
the turns after it arrive."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memloci import Memory
from memloci.providers.fake import FakeEmbedder
from memloci.storage.sqlite import fts_totals
from memloci.storage.sqlite.fts_totals import due, read_varints, varint

MakeMemory = Callable[..., Memory]


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 16_383, 16_384, 2**35 + 7, 2**56 - 1])
def test_varints_round_trip(value: int) -> None:
    assert read_varints(varint(value)) == [value]
    assert read_varints(varint(value) + varint(5)) == [value, 5]


def test_varint_bounds() -> None:
    with pytest.raises(ValueError):
        varint(-1)
    assert due(10) == 16 and due(400) == 100 and due(100_000) == 256


def counts(m: Memory) -> tuple[int, int, int]:
    """(FTS5's row count, rows the index holds, memories)."""
    with m.service.store.db.reading() as c:  # type: ignore[attr-defined]
        block = c.execute("SELECT block FROM nodes_fts_data WHERE id = 1").fetchone()[0]
        held = c.execute("SELECT count(*) FROM nodes_fts_docsize").fetchone()[0]
        memories = c.execute("SELECT count(*) FROM nodes").fetchone()[0]
    return read_varints(bytes(block))[0], held, memories


def chat(m: Memory, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        m.add(f"message {i} about topic {i % 7}", user="u1", session=f"s{i // 20}",
              speaker="AB"[i % 2])  # fmt: skip
    m.flush()


def test_the_row_count_follows_the_rows_held(make_memory: MakeMemory, monkeypatch: Any) -> None:
    m = make_memory(embedder=FakeEmbedder())
    store: Any = m.service.store
    # without the refresh, rewritten rows stay counted
    monkeypatch.setattr(fts_totals, "due", lambda rows: 10**9)
    store.db._totals_due = 10**9
    chat(m, 200)
    counted, held, memories = counts(m)
    assert held == memories == 200 and counted > 1.5 * held
    # the refresh sets it to the rows held, and the index stays sound
    store.db._refresh_fts_totals()
    assert counts(m)[0] == 200
    with store.db.tx() as c:
        c.execute("INSERT INTO nodes_fts(nodes_fts, rank) VALUES('integrity-check', 0)")
    assert m.search("topic 3", user="u1", k=3)
    # purged memories leave the count too
    for hit in m.list(user="u1", limit=50):
        m.purge(hit.id)
    store.db._refresh_fts_totals()
    counted, held, _ = counts(m)
    assert held == 150 and counted == 150


def test_writes_keep_the_count_near_the_rows_held(make_memory: MakeMemory) -> None:
    m = make_memory(embedder=FakeEmbedder())
    chat(m, 600)
    counted, held, _ = counts(m)
    # refreshed every so many commits: off by at most the rows rewritten since the last
    # one (a turn's insert rewrites the few rows before it; unrefreshed, 600 turns were
    # counted ~3,100 times)
    assert held == 600 and held <= counted <= held + 6 * due(held)
