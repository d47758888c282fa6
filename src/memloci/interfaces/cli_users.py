"""``memloci users …`` commands (layer: interfaces): people the memory knows.

``forget`` removes everything memloci holds about one person in a namespace (memories,
history, vectors, edges, entities only they mention, threads, identifiers, session
state) in one transaction, then scrubs the database so none of their text stays on disk.
"""

from __future__ import annotations

from typing import Annotated

import typer

from memloci.interfaces.cli_common import (
    EmbedderName,
    StoreOptions,
    Table,
    YesOpt,
    confirm_or_refuse,
    emit_json,
    examples,
    memories,
    note,
    open_memory,
    out,
    say,
    store_options,
)
from memloci.service.privacy import ForgetReport

users_app = typer.Typer(
    rich_markup_mode="markdown",
    name="users",
    help="People the memory knows: forget one completely.",
    no_args_is_help=True,
    epilog=examples("memloci users forget sam --yes", "memloci users forget telegram:42 -n team"),
)

UserArg = Annotated[str, typer.Argument(metavar="USER", help="The user id, e.g. sam.")]


def report_table(report: ForgetReport) -> Table:
    table = Table(title=f"forgotten: {report.user!r} in namespace {report.namespace!r}")
    table.add_column("removed")
    table.add_column("count", justify="right")
    counts = report.model_dump(exclude={"namespace", "user", "scrubbed", "scrub_reason"})
    for kind, count in counts.items():
        table.add_row(kind.replace("_", " "), str(count))
    return table


@users_app.command(
    "forget",
    epilog=examples(
        "memloci users forget sam",
        "memloci users forget sam --yes --json",
        "memloci users forget telegram:42 --db team.db -n support --yes",
    ),
)
@store_options(embedder=False)
def forget(user: UserArg, yes: YesOpt = False, *, store: StoreOptions) -> None:
    """Forget a person completely; asks first (or --yes).

    Every memory, version, vector, edge, thread, identifier and entity only they
    mention goes in one transaction; then the file is scrubbed of their text."""
    with open_memory(store.db, store.namespace, EmbedderName.NONE, must_exist=True) as m:
        ns = m.settings.namespace
        if not yes:
            total = m.count(owner=user, include_forgotten=True, namespace=ns)
            confirm_or_refuse(
                f"Forget user {user!r} in namespace {ns!r} ({memories(total)}, their threads, "
                "identifiers and entities only they mention)? This cannot be undone.",
                f"refusing to forget user {user!r} without --yes",
            )
        report = m.forget_user(user)
    if store.as_json:
        emit_json(report.model_dump(mode="json"))
        return
    if report.memories or report.users or report.threads:
        out.print(report_table(report))
        say(f"Forgot user {user!r}: {memories(report.memories)} and everything linked.")
    else:
        note(f"Nothing stored for user {user!r} in namespace {ns!r}.")
    if not report.scrubbed:
        note(f"Not scrubbed yet: {report.scrub_reason}. Run the command again to finish.")
