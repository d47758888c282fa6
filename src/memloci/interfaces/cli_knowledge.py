"""``memloci knowledge …`` commands (layer: interfaces): the read-only RAG tier.

``add`` chunks and embeds text / markdown / reST files (a progress bar on stderr),
``search`` shows the best chunks above a similarity threshold, ``list`` and ``remove``
manage the sources. Everything goes through the SDK and its service.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memloci.interfaces.cli_common import (
    StoreOptions,
    Table,
    cell,
    emit_json,
    err,
    examples,
    note,
    out,
    progress_when_known,
    say,
    snippet,
    store_options,
)
from memloci.models import KnowledgeHit, KnowledgeSource
from memloci.service.documents import DEFAULT_GLOBS, GONE, KnowledgeReport

if TYPE_CHECKING:
    from memloci.sdk import Memory

knowledge_app = typer.Typer(
    rich_markup_mode="markdown",
    name="knowledge",
    help="The knowledge tier: read-only documents (text, markdown, reST) searched by meaning.",
    no_args_is_help=True,
    epilog=examples(
        "memloci knowledge add docs/",
        "memloci knowledge search 'how do I install it on linux'",
        "memloci knowledge list",
    ),
)

CollectionOpt = Annotated[
    str,
    typer.Option(
        "--collection", "-c", help="Knowledge base to add to (a role's knowledge sources)."
    ),
]


def shown(path: str) -> str:
    """A path relative to the working folder when it lies inside it."""
    try:
        return os.path.relpath(path) if Path(path).is_relative_to(Path.cwd()) else path
    except ValueError:  # another drive (Windows)
        return path


# ---------------------------------------------------------------------- add
@knowledge_app.command(
    "add",
    epilog=examples(
        "memloci knowledge add docs/",
        "memloci knowledge add README.md notes.txt --collection faq",
        "memloci knowledge add wiki/ --glob '*.md' --glob '*.markdown' --json",
    ),
)
@store_options()
def add(
    paths: Annotated[
        list[Path],
        typer.Argument(metavar="PATH", help="Files, or folders to walk.", show_default=False),
    ],
    glob: Annotated[
        list[str] | None,
        typer.Option(
            "--glob",
            "-g",
            help=f"File pattern for folders, repeatable (default: {', '.join(DEFAULT_GLOBS)}).",
            show_default=False,
        ),
    ] = None,
    collection: CollectionOpt = "default",
    *,
    store: StoreOptions,
) -> None:
    """Chunk, embed and store documents; unchanged files are skipped, changed ones replaced."""
    with (
        progress_when_known("Embedding chunks", quiet=store.as_json) as tick,
        store.open() as m,
    ):
        report = m.add_knowledge(
            [str(p) for p in paths], collection=collection, glob=glob or None, progress=tick
        )
    if store.as_json:
        emit_json(report.model_dump(mode="json"))
        return
    if report.added or report.updated:
        out.print(_files_table(report))
    for f in report.files:
        if f.action in ("skipped", "removed"):
            note(f"{f.action} {shown(f.path)}: {f.reason}")
    if all(f.action == "removed" and f.reason == GONE for f in report.files):
        note(f"No files matched {', '.join(glob or DEFAULT_GLOBS)}; nothing was added.")
    gone = f", {report.removed} removed" if report.removed else ""
    say(
        f"{report.added} added, {report.updated} updated, {report.unchanged} unchanged, "
        f"{report.skipped} skipped{gone}; {report.chunks} chunks written to collection "
        f"{report.collection!r} ({report.embedding_model or 'no embedder: full text only'})."
    )


def _files_table(report: KnowledgeReport) -> Table:
    table = Table(title=f"memloci knowledge add ({report.namespace})", title_justify="left")
    table.add_column("file", overflow="fold")
    table.add_column("action", no_wrap=True)
    table.add_column("chunks", justify="right", no_wrap=True)
    table.add_column("id", style="cyan", no_wrap=True)
    for f in report.files:
        if f.action in ("added", "updated"):
            table.add_row(shown(f.path), f.action, str(f.chunks), f.source_id or "")
    return table


# ---------------------------------------------------------------------- search
@knowledge_app.command(
    "search",
    epilog=examples(
        "memloci knowledge search 'how do I install it on linux'",
        "memloci knowledge search 'refund policy' -k 3 --threshold 0.5",
        "memloci knowledge search 'api keys' --collection docs --json",
    ),
)
@store_options(read_only=True)
def search(
    query: Annotated[str, typer.Argument(metavar="QUERY", help="What to look for.")],
    k: Annotated[int, typer.Option("-k", "--top-k", help="How many chunks at most.")] = 5,
    threshold: Annotated[
        float,
        typer.Option(
            "--threshold", "-t", help="Minimum score 0–1 (cosine similarity with an embedder)."
        ),
    ] = 0.3,
    collection: Annotated[
        list[str] | None,
        typer.Option(
            "--collection",
            "-c",
            help="Only these knowledge bases (repeatable).",
            show_default=False,
        ),
    ] = None,
    *,
    store: StoreOptions,
) -> None:
    """The knowledge chunks closest to a query, best first (those above the threshold)."""
    with store.open(must_exist=True) as m:
        hits = m.search_knowledge(query, collections=collection, limit=k, threshold=threshold)
        ns = m.settings.namespace
        held = set() if hits or store.as_json else _collections(m, ns)
    if store.as_json:
        emit_json([h.model_dump(mode="json") for h in hits])
    elif not hits:
        note(_why_nothing(threshold, ns, collection or [], held))
    else:
        out.print(hits_table(hits, title=f"memloci knowledge search {query!r}"))


def _collections(m: Memory, namespace: str) -> set[str]:
    sources = m._call(m.service.knowledge.list_knowledge_sources(namespace=namespace))
    return {s.collection for s in sources}


def _why_nothing(threshold: float, ns: str, asked: list[str], held: set[str]) -> str:
    """Why a search found nothing: no knowledge at all, a collection that is not there
    (a typo is no threshold to lower), or scores below the threshold."""
    if not held:
        return f"No knowledge in namespace {ns!r} yet: add some with `memloci knowledge add PATH`."
    missing = [c for c in asked if c not in held]
    if missing:
        names = ", ".join(repr(c) for c in missing)
        have = ", ".join(sorted(held))
        return f"There is no collection {names} in namespace {ns!r} (its collections: {have})."
    return f"No knowledge chunk scored {threshold} or more; try a lower --threshold."


def hits_table(hits: list[KnowledgeHit], title: str | None = None) -> Table:
    """Knowledge hits: score, where they come from, and the text."""
    table = Table(title=title, title_justify="left", expand=False)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("source / heading", overflow="fold", ratio=1)
    table.add_column("text", min_width=20, ratio=3)
    for h in hits:
        where = cell(shown(h.path)) + cell(f"\n{h.heading}" if h.heading else "", "dim")
        table.add_row(f"{h.score:.3f}", where, snippet(h.text, 240))
    return table


# ---------------------------------------------------------------------- list / remove
@knowledge_app.command(
    "list",
    epilog=examples("memloci knowledge list", "memloci knowledge list --collection faq --json"),
)
@store_options(read_only=True)
def list_(
    collection: Annotated[
        str | None,
        typer.Option("--collection", "-c", help="Only this knowledge base.", show_default=False),
    ] = None,
    *,
    store: StoreOptions,
) -> None:
    """The documents in the knowledge tier, with their ids and chunk counts."""
    with store.open(must_exist=True) as m:
        ns = m.settings.namespace
        sources = m._call(
            m.service.knowledge.list_knowledge_sources(namespace=ns, collection=collection)
        )
    if store.as_json:
        emit_json([s.model_dump(mode="json") for s in sources])
    elif not sources:
        note("No knowledge yet: add some with `memloci knowledge add PATH`.")
    else:
        out.print(sources_table(sources))


def sources_table(sources: list[KnowledgeSource]) -> Table:
    """The sources; the embedding model and the title only on a wide terminal, so the id
    (what ``remove`` takes) and the path stay whole at 80 columns (``--json`` has all)."""
    wide = out.width >= 120
    table = Table(expand=False)
    table.add_column("id", style="cyan", no_wrap=True, min_width=8)
    table.add_column("collection", overflow="fold")
    table.add_column("chunks", justify="right", no_wrap=True)
    if wide:
        table.add_column("model", no_wrap=True)
    table.add_column("updated", no_wrap=True)
    table.add_column("path", overflow="fold", min_width=20)
    if wide:
        table.add_column("title", overflow="fold")
    for s in sources:
        model = [s.embedding_model or "-"] if wide else []
        cells = [
            s.id,
            s.collection,
            str(s.chunk_count),
            *model,
            f"{s.updated_at:%Y-%m-%d}",
            shown(s.path),
        ]
        table.add_row(*cells, *([s.title] if wide else []))
    return table


@knowledge_app.command(
    "remove",
    epilog=examples(
        "memloci knowledge remove a1B2c3D4",
        "memloci knowledge remove docs/old-guide.md",
        "memloci knowledge remove docs/ --json",
    ),
)
@store_options()
def remove(
    source: Annotated[
        str, typer.Argument(metavar="SOURCE", help="Source id, file path, or folder path.")
    ],
    *,
    store: StoreOptions,
) -> None:
    """Remove documents (and their chunks) from the knowledge tier."""
    with store.open(must_exist=True) as m:
        ns = m.settings.namespace
        gone = m._call(m.service.knowledge.remove_knowledge(source, namespace=ns))
    if store.as_json:
        emit_json({"action": "removed", "sources": [s.model_dump(mode="json") for s in gone]})
        return
    for s in gone:
        err.print(cell(f"removed [{s.id}] {shown(s.path)}", "dim"))
    chunks = sum(s.chunk_count for s in gone)
    say(f"removed: {len(gone)} source(s) and their {chunks} chunks.")
