"""Command line (layer: interfaces): the ``memloci`` command, built with typer + rich.

``memloci memory …`` lives in :mod:`memloci.interfaces.cli_memory`; shared options,
output and error handling in :mod:`memloci.interfaces.cli_common`. This module holds
the root app, ``reembed`` and ``demo``. Run it as ``memloci`` or
``python -m memloci.interfaces.cli``.
"""

from __future__ import annotations

import json
import shlex
import tempfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from memloci import __version__
from memloci.errors import ConflictError, EmbeddingModelError, ValidationError
from memloci.interfaces.cli_common import (
    DbOpt,
    EmbedderName,
    EmbOpt,
    NsOpt,
    YesOpt,
    confirm_or_refuse,
    embed_all,
    err,
    examples,
    hits_table,
    memories,
    note,
    open_memory,
    out,
    say,
)
from memloci.interfaces.cli_lazy import LazyGroup

if TYPE_CHECKING:
    from memloci.sdk import Memory

app = typer.Typer(
    name="memloci",
    cls=LazyGroup,  # the other commands (memloci/interfaces/cli_lazy.py) load on use
    help="memloci: long-term memory for LLM agents (embedded SQLite, hybrid recall).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    epilog=examples(
        "memloci demo",
        "memloci memory add 'I moved to Lisbon last year' --user sam",
        "memloci memory search 'where does sam live' --user sam",
        "memloci serve --demo",
        "memloci memory --help",
    ),
)
DEMO_USER = "sam"
DEMO_SEARCHES = (
    "Where does Sam live?",
    "What is the name of Sam's dog?",
    "Sam's side project",
    "coffee order",
)
DEMO_PROMPT = "Can you plan a Saturday for me?"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"memloci {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """memloci: long-term memory for LLM agents (embedded SQLite, hybrid recall)."""


# ---------------------------------------------------------------------- reembed
@app.command(
    "reembed",
    epilog=examples(
        "memloci reembed",
        "memloci reembed --embedder openai --yes",
        "memloci reembed --db agent.db --embedder local --yes",
    ),
)
def reembed(
    yes: YesOpt = False,
    db: DbOpt = None,
    namespace: NsOpt = None,
    embedder: EmbOpt = None,
) -> None:
    """Embed everything pending; after switching models, rebuild every vector."""
    if embedder is EmbedderName.NONE:
        raise ValidationError(
            "reembed needs an embedder", hint="pass --embedder local, openai or fake"
        )
    try:
        memory = open_memory(db, namespace, embedder, must_exist=True)
    except EmbeddingModelError as exc:
        if not yes:
            confirm_or_refuse(
                f"{exc.message}. Drop those vectors and rebuild them all?",
                "refusing to drop the store's vectors without confirmation",
            )
        memory = open_memory(db, namespace, embedder, must_exist=True, reembed=True)
    with memory as m:
        pending = embed_all(m, "Embedding")
        stats = m.stats(m.stats().namespaces or None)
    total = sum(stats.nodes_by_type.values())
    model = stats.embedding_model or "no embedder"
    say(f"{memories(total - pending)} embedded with {model}; {pending} pending.")


# ---------------------------------------------------------------------- demo
def demo_records() -> Iterator[dict[str, Any]]:
    """The bundled sample conversation (``memloci/data/demo.jsonl``)."""
    source = resources.files("memloci").joinpath("data", "demo.jsonl")
    for line in source.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield cast(dict[str, Any], json.loads(line))


def load_demo(m: Memory, user: str = DEMO_USER) -> tuple[int, int, int]:
    """Add the demo's turns and facts; returns (turns, sessions, facts)."""
    turns, sessions, facts, speaker = 0, set(), 0, "Sam"
    for rec in demo_records():
        kind = rec.pop("kind")
        if kind == "meta":
            speaker = rec.get("speaker", speaker)
        elif kind == "turn":
            role = rec["role"]
            m.add(
                rec["content"], user=user, session=rec["session"], role=role,
                speaker=speaker if role == "user" else "Assistant",
                event_time=cast(Any, rec["time"]),
            )  # fmt: skip
            turns += 1
            sessions.add(rec["session"])
        elif kind == "fact":
            m.remember(rec.pop("content"), user=user, **rec)
            facts += 1
    return turns, len(sessions), facts


def _flags(db: str, namespace: str, embedder: str) -> str:
    flags = f"--db {shlex.quote(db)}"
    if namespace != "default":
        flags += f" -n {namespace}"
    if embedder != "local":
        flags += f" --embedder {embedder}"
    return flags


@app.command(
    "demo",
    epilog=examples("memloci demo", "memloci demo --db demo.db", "memloci demo --embedder none"),
)
def demo(
    db: Annotated[
        str | None,
        typer.Option(
            "--db", metavar="PATH", help="Store to load the demo into (default: a new temp file)."
        ),
    ] = None,
    namespace: NsOpt = None,
    embedder: EmbOpt = None,
) -> None:
    """Load a sample conversation, then show searches and a context block (offline)."""
    if db is None:
        db = str(Path(tempfile.mkdtemp(prefix="memloci-demo-")) / "demo.db")
    with open_memory(db, namespace, embedder) as m:
        ns = m.settings.namespace
        if m.list(limit=1, include_forgotten=True):
            raise ConflictError(
                f"namespace {ns!r} of {db} already holds memories",
                hint="run the demo on a new file (omit --db) or another namespace (-n demo)",
            )
        with err.status("Loading the demo conversation…"):
            turns, sessions, facts = load_demo(m)
            m.service.wait_for_consolidation(60)  # session switches consolidate earlier ones
        note(f"Loaded {turns} turns from {sessions} sessions and {facts} facts about Sam.")
        embed_all(m, "Embedding (bundled local model)")
        say(f"\nmemloci demo: {db} (namespace {ns!r}, embedder {m.settings.embedder})\n", "bold")
        for query in DEMO_SEARCHES:
            hits = m.search(query, user=DEMO_USER, k=3)
            out.print(hits_table(hits, title=f"memloci memory search {query!r} -k 3"))
        block = m.context(DEMO_PROMPT, user=DEMO_USER, budget=800)
    from rich.panel import Panel
    from rich.text import Text

    out.print(Panel(Text(block), title=f"context for the prompt {DEMO_PROMPT!r}", expand=False))
    flags = _flags(db, ns, m.settings.embedder)
    say("\nTry next:", "bold")
    for line in (
        f"memloci memory search 'weekend trip with the dog' --user sam {flags}",
        f"memloci memory list --type semantic {flags}",
        f"memloci memory remember 'Sam is learning Portuguese' --user sam {flags}",
        f"memloci memory stats {flags}",
        "memloci --help",
    ):
        say(f"  {line}")


def main() -> None:
    """Entry point of the ``memloci`` command."""
    app(prog_name="memloci")


if __name__ == "__main__":
    main()
