"""``memloci doctor`` (layer: interfaces): find, and with ``--repair`` fix, the damage
readers skip: vectors of the wrong size, JSON that is not readable, a damaged full-text
index; and report damaged pages (SQLite's ``quick_check``), which need a backup."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer

from memloci.errors import DAMAGED_HINT, StorageError
from memloci.interfaces.cli_common import (
    DbOpt,
    EmbedderName,
    EmbOpt,
    JsonOpt,
    Table,
    embed_all,
    emit_json,
    note,
    open_memory,
    out,
    say,
)
from memloci.models import Health

DOCTOR_EXAMPLES = (
    "Examples:\n\n"
    "  $ memloci doctor --db memloci.db\n\n"
    "  $ memloci doctor --db memloci.db --repair\n\n"
    "  $ memloci doctor --db memloci.db --repair --embedder openai --json"
)

RepairOpt = Annotated[
    bool,
    typer.Option(
        "--repair",
        help="Fix what is found, in one transaction: re-embed damaged vectors, reset "
        "unreadable JSON to its empty value, rebuild a damaged full-text index.",
    ),
]


def _table(health: Health) -> Table:
    table = Table(title=f"store health ({health.backend})", title_justify="left")
    table.add_column("check")
    table.add_column("found", justify="right")
    table.add_column("state")
    fixed = "repaired" if health.repaired else "damaged: --repair fixes it"
    rows = [
        ("file pages (quick_check)", health.integrity, "damaged: restore a backup"),
        ("full-text indexes", health.fulltext, fixed),
        ("memory vectors", health.vectors, fixed),
        ("entity vectors", health.entity_vectors, fixed),
        ("JSON columns", health.json, fixed),
    ]
    for name, found, bad in rows:
        table.add_row(name, str(len(found)), bad if found else "ok")
    return table


def doctor(
    db: DbOpt = None,
    repair: RepairOpt = False,
    embedder: EmbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check a store for damage and repair it (--repair).

    Finds what searches and lists skip (and warn about once): vectors of the wrong
    size, metadata and other JSON that is not readable, a damaged full-text index; and
    damaged pages of the file (SQLite's quick_check). --repair fixes the rows in one
    transaction: damaged vectors are dropped and embedded again (with --embedder, or the
    configured one), unreadable JSON is reset to {} (or [] or null) with a note per row,
    the full-text index is rebuilt from the memories. Damaged pages are only reported:
    restore a backup. Exits 0 when the store is sound (after a repair), 8 otherwise."""
    name = embedder if repair else EmbedderName.NONE  # only a repair embeds anything
    with open_memory(db, None, name, must_exist=True) as m:
        health = m.service.store.doctor(repair=repair)
        if repair and health.vectors:
            left = embed_all(m, "Embedding again", quiet=as_json)
            if left:
                health.notes.append(
                    f"{left} memories wait to be embedded (`memloci reembed` embeds them)"
                )
    if as_json:
        emit_json({**dataclasses.asdict(health), "sound": health.sound})
    else:
        out.print(_table(health))
        for line in (
            *health.notes,
            *(f"unreadable: {what}" for what in health.json if not health.repaired),
        ):
            note(line)
        if health.sound:
            say("the store is sound" + (" (repaired)" if health.damaged else ""), "bold")
    if health.sound:
        return
    if health.integrity:
        raise StorageError(
            f"the store file has damaged pages: {health.integrity[0]}", hint=DAMAGED_HINT
        )
    raise StorageError(
        "the store has damaged rows (searches skip them)",
        hint="run `memloci doctor --repair` (add --embedder to re-embed with the store's model)",
    )
