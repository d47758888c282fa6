"""``memloci memory export`` and ``memloci memory import`` (layer: interfaces).

Export writes a JSON array of the memories (readable by other tools) or the full JSON
Lines backup;
import loads a backup. Registered on ``memloci memory`` by
:mod:`memloci.interfaces.cli_memory`.
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import asdict
from enum import StrEnum
from pathlib import Path
from shlex import quote
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memloci.errors import ValidationError
from memloci.interfaces.cli_common import (
    AgentOpt,
    StoreOptions,
    counter,
    embed_all,
    emit_json,
    err,
    examples,
    note,
    progress_bar,
    role_of,
    say,
    sqlite_file,
    store_options,
)

if TYPE_CHECKING:
    from memloci.models import MemoryNode
    from memloci.sdk import Memory


class ExportFormat(StrEnum):
    """``json``: an array of the memories; ``jsonl``: the full, importable backup."""

    JSON = "json"
    JSONL = "jsonl"


EXPORT_EXAMPLES = examples(
    "memloci memory export role.yaml",
    "memloci memory export role.yaml -o my-export.json",
    "memloci memory export role.yaml -o backup.jsonl --format jsonl",
    "memloci memory export backup.jsonl -n demo",
)


@store_options(read_only=True)
def export(
    target: Annotated[
        Path | None,
        typer.Argument(
            metavar="[ROLE|FILE]",
            help="A role file (role.yaml: its store and namespace); any other path is the "
            "file to write (JSON Lines when it ends in .jsonl).",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="File to write (default: memories.json)."
        ),
    ] = None,
    fmt: Annotated[
        ExportFormat | None,
        typer.Option(
            "--format",
            help="json: an array of the current memories (id, content, category, created_at, "
            "memory_type, metadata, …); jsonl: every record of the namespace (versions, edges, "
            "entities, threads, knowledge, vectors, …), for `memloci memory import` (default: "
            "jsonl for a .jsonl file, else json).",
            show_default=False,
        ),
    ] = None,
    agent: AgentOpt = None,
    *,
    store: StoreOptions,
) -> None:
    """Write the namespace's memories to a JSON file (or a JSON Lines backup)."""
    role_file: Path | None = None
    if target is not None and target.suffix.lower() in (".yaml", ".yml"):
        role_file = target
    elif target is not None:
        if output is not None:
            raise ValidationError(
                f"{target} is not a role file (.yaml), and -o names the file to write",
                hint="give the role file first, e.g. memloci memory export role.yaml -o out.json",
            )
        output = target
    file = output if output is not None else Path("memories.json")
    if sqlite_file(file):  # `export team.db` meaning "export that store"
        raise ValidationError(
            f"{file} is a SQLite database (a memloci store?), not an export: refusing to "
            "overwrite it",
            hint=f"to export that store, name it with --db: memloci memory export --db "
            f"{quote(str(file))} -o memories.json",
        )
    kind = fmt or (ExportFormat.JSONL if file.suffix.lower() == ".jsonl" else ExportFormat.JSON)
    role = role_of(role_file, agent)
    with store.open(must_exist=True, role=role) as m:
        ns = m.settings.namespace
        with nullcontext() if store.as_json else err.status(f"Exporting {ns}…"):
            try:
                if kind is ExportFormat.JSONL:
                    count = m.export(str(file))
                else:
                    count = _export_array(m, file)
            except BrokenPipeError:
                raise  # the reader left (`| head`): ends quietly, as every command does
            except OSError as exc:
                raise ValidationError(
                    f"cannot write {file}: {exc.strerror or exc}", hint="check the path"
                ) from None
    unit = "lines" if kind is ExportFormat.JSONL else "memories"
    if store.as_json:
        emit_json({"file": str(file), "namespace": ns, "format": kind.value, unit: count})
    else:
        say(f"Exported namespace {ns!r} to {file} ({count} {unit}).")


def _export_array(m: Memory, file: Path) -> int:
    """The plain export: a JSON array of the current memories, oldest first. Written
    as the JSON Lines backup is (:func:`memloci.service.transfer.write_lines`): to a file beside
    ``file``, then renamed, so a failure leaves no half file; into a pipe or a device
    (``-o /dev/stdout``) directly."""
    from memloci.service.transfer import write_lines

    records: list[dict[str, Any]] = []
    while page := m.list(limit=10_000, offset=len(records)):
        records += [_exported(n) for n in page]
    write_lines(str(file), [json.dumps(records, indent=2, ensure_ascii=False)])
    return len(records)


def _exported(node: MemoryNode) -> dict[str, Any]:
    data = node.model_dump(mode="json")
    return {
        "id": node.id,
        "content": node.content,
        "category": node.category,
        "created_at": data["created_at"],
        "memory_type": node.type.value,
        "metadata": node.metadata or None,
        # memloci's own fields, after the common ones above
        "user": node.user,
        "agent": node.agent,
        "session": node.session,
        "scope": node.scope.value,
        "subject": node.subject,
        "key": node.key,
        "value": node.value,
        "confidence": node.confidence,
        "version": node.version,
        "updated_at": data["updated_at"],
        "event_time": data["event_time"],
        "speaker": node.speaker,
        "fact_type": data["fact_type"],
        "procedure": data["procedure"],  # a procedure's triggers: when it applies
    }


IMPORT_EXAMPLES = examples(
    "memloci memory import backup.jsonl",
    "memloci memory import x.jsonl -n demo",
    "memloci memory import my-export.json --db memory.db -n support",
)


@store_options()
def import_(
    file: Annotated[
        str,
        typer.Argument(
            metavar="FILE",
            help="A `memloci memory export` file: JSON Lines (the full backup) or the JSON "
            "array of memories (embedded after the import).",
        ),
    ],
    *,
    store: StoreOptions,
) -> None:
    """Load an export into the namespace (all-or-nothing), then embed what needs it."""
    if Path(file).is_dir():
        raise ValidationError(
            f"{file} is a directory, not a file",
            hint="give the path of a `memloci memory export` file inside it",
        )
    if not Path(file).is_file():
        raise ValidationError(
            f"no such file: {file}", hint="give the path of a `memloci memory export` file"
        )
    if sqlite_file(Path(file)):
        raise ValidationError(
            f"{file} is a SQLite database (a memloci store), not an export",
            hint=f"copy a whole store with `memloci migrate --from {quote(file)} --to STORE`, "
            "or export a namespace of it with `memloci memory export --db`",
        )
    with store.open() as m:
        with progress_bar(quiet=store.as_json) as bar:
            task = bar.add_task("Importing", total=None)
            try:
                report = m.import_file(file, progress=counter(bar, task, None))
            except (OSError, UnicodeDecodeError) as exc:
                raise ValidationError(f"cannot read {file}: {exc}") from None
            bar.update(task, total=report.nodes + report.skipped)
        pending = embed_all(m, "Embedding", quiet=store.as_json)
    embedded = max(0, report.needs_embedding - pending)
    data = {**asdict(report), "embedded": embedded}
    del data["names_to_embed"]  # entity ids, embedded by the import itself
    if store.as_json:
        emit_json(data)
        return
    say(
        f"Imported {report.nodes} memories ({report.skipped} already present), "
        f"{report.versions} versions, {report.edges} edges, {report.users} users, "
        f"{report.entities} entities ({report.entities_merged} merged into known ones, "
        f"{report.links} links), {report.threads} threads, "
        f"{report.sessions} sessions, {report.knowledge_sources} knowledge sources; "
        f"reused {report.vectors_reused} vectors, embedded {embedded}."
    )
    for problem in report.errors:
        note(f"warning: {problem}")
