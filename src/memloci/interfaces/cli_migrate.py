"""``memloci migrate`` (layer: interfaces): copy a whole store to another backend."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

import typer

from memloci.interfaces.cli_common import JsonOpt, Table, emit_json, err, out, progress_bar, say
from memloci.migrate import KINDS
from memloci.migrate import migrate as run_migration

MIGRATE_EXAMPLES = (
    "Examples:\n\n"
    "  $ memloci migrate --from memloci.db --to postgresql://memloci@db.internal/memloci\n\n"
    "  $ memloci migrate --from postgresql://memloci@db.internal/memloci --to backup.db\n\n"
    "  $ memloci migrate --from old.db --to new.db --force"
)


def migrate(
    source: Annotated[
        str,
        typer.Option(
            "--from",
            metavar="PATH|URL",
            help="The store to copy: SQLite file or postgresql:// URL.",
        ),
    ],
    target: Annotated[
        str,
        typer.Option(
            "--to", metavar="PATH|URL", help="Where to copy it: SQLite file or postgresql:// URL."
        ),
    ],
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            "--into-non-empty",
            help="Copy into a store that already holds records (ids it holds are skipped; "
            "re-running an interrupted migration this way completes it).",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Copy one store into another (SQLite or PostgreSQL), then verify the counts.

    Everything is copied: memories, vectors, versions, edges, entities, users, threads,
    sessions, knowledge and API keys. The target must be empty unless --force.
    Passwords in URLs are never printed."""
    with progress_bar(quiet=as_json) as bar:
        task = bar.add_task("reading the source", total=None)

        def sized(counts: dict[str, int]) -> None:
            bar.update(task, total=sum(counts.values()), description="copying")

        def tick(kind: str, n: int) -> None:
            bar.update(task, advance=n, description=f"copying {kind.replace('_', ' ')}")

        report = run_migration(source, target, force=force, progress=tick, before_copy=sized)
        bar.update(task, description="verified")
    if as_json:
        emit_json(asdict(report))
        return
    table = Table(title=f"{report.source} → {report.target}", title_justify="left")
    for name in ("records", "source", "target", "copied", "skipped"):
        table.add_column(name, justify="left" if name == "records" else "right")
    for kind in KINDS:
        row: list[Any] = [kind.replace("_", " ")]
        row += [report.source_counts[kind], report.target_counts[kind]]
        row += [report.copied.get(kind, 0), report.skipped.get(kind, 0)]
        table.add_row(*(str(x) for x in row))
    out.print(table)
    namespaces = ", ".join(report.namespaces) or "none"
    say(f"migrated {len(report.namespaces)} namespaces ({namespaces}); counts verified", "bold")
    if report.skipped:
        err.print("records the target already held were skipped", style="dim")
