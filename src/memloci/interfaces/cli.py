"""Command line (layer: interfaces): the ``memloci`` command, built with typer + rich.

``memloci memory …`` lives in :mod:`memloci.interfaces.cli_memory`; shared options,
output and error handling in :mod:`memloci.interfaces.cli_common`. This module holds
the root app, ``reembed`` and ``demo``. Run it as ``memloci`` or
``python -m memloci.interfaces.cli``.
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
import threading
from typing import TYPE_CHECKING, Annotated

import typer

from memloci import __version__
from memloci.errors import ConflictError, EmbeddingModelError, ValidationError
from memloci.interfaces.cli_common import (
    EmbedderName,
    EmbOpt,
    NsOpt,
    StoreOptions,
    YesOpt,
    cell,
    confirm_or_refuse,
    embed_all,
    err,
    examples,
    hits_table,
    memories,
    note,
    open_memory,
    out,
    progress_when_known,
    say,
    store_options,
    utf8,
)
from memloci.interfaces.cli_lazy import LazyGroup

if TYPE_CHECKING:  # loaded on use
    from memloci.sdk import Memory

app = typer.Typer(
    # help paragraphs are markdown: a docstring wrapped at 88 columns reflows to the
    # terminal instead of breaking mid-sentence (rich mode keeps single line breaks)
    rich_markup_mode="markdown",
    name="memloci",
    cls=LazyGroup,  # the other commands (memloci/interfaces/cli_lazy.py) load on use
    help="memloci: long-term memory for LLM agents (embedded SQLite, hybrid recall).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,  # --install-completion, --show-completion (bash, zsh, fish, pwsh)
    epilog=examples(
        "memloci demo",
        "memloci memory add 'I moved to Lisbon last year' --user sam",
        "memloci memory search 'where does sam live' --user sam",
        "memloci serve --demo",
        "memloci memory --help",
    ),
)


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
@store_options(as_json=False)
def reembed(yes: YesOpt = False, *, store: StoreOptions) -> None:
    """Embed what is pending, or rebuild every vector after switching models.

    A store whose vectors were embedded in an older form is offered a rebuild too."""
    from memloci.service.worker import outdated_form

    if store.embedder is EmbedderName.NONE:
        raise ValidationError(
            "reembed needs an embedder", hint="pass --embedder local, openai or fake"
        )
    try:
        memory = store.open(must_exist=True)
    except EmbeddingModelError as exc:
        if not yes:
            confirm_or_refuse(
                f"{exc.message}. Drop those vectors and rebuild them all?",
                "refusing to drop the store's vectors without confirmation",
            )
        memory = store.open(must_exist=True, reembed=True)
    if _kept_minilm(memory):
        memory.close()
        if not yes:
            confirm_or_refuse(
                "This store's vectors come from MiniLM (the bundled default before "
                "2026-11-26). Rebuild them all with bge-small-en, the default now?",
                "refusing to rebuild the store's vectors without confirmation; "
                "--embedder minilm-int8 keeps MiniLM",
            )
        memory = store.open(must_exist=True, reembed=True)
    elif outdated_form(memory.service.store):
        memory.close()
        if not yes:
            confirm_or_refuse(
                "This store's vectors were embedded in an older form than memories are "
                'embedded now (the third person: "I moved" as "they moved", "im" as '
                '"they\'re"; 2026-11-27), so its older memories rank a little lower by '
                "meaning. Rebuild every vector?",
                "refusing to rebuild the store's vectors (embedded in an older third-person "
                "form) without confirmation",
            )
        memory = store.open(must_exist=True, reembed=True)
    with memory as m:
        pending = embed_all(m, "Embedding")
        chunks = _reembed_knowledge(m)
        stats = m.stats(m.stats().namespaces or None)
    total = sum(stats.nodes_by_type.values())
    model = stats.embedding_model or "no embedder"
    say(f"{memories(total - pending)} embedded with {model}; {pending} pending.")
    if chunks:
        say(f"{chunks} knowledge chunk{'s' if chunks != 1 else ''} embedded with {model}.")


def _reembed_knowledge(memory: Memory) -> int:
    """Embed the knowledge chunks that are not from the memory's embedder (another
    model's vectors, or none), with a progress bar; returns how many."""
    service = memory.service
    if service.embedder is None:
        return 0
    with progress_when_known("Embedding knowledge") as tick:
        return service.knowledge.reembed_knowledge.now(progress=tick)


def _kept_minilm(memory: Memory) -> bool:
    """Whether ``local`` (from ``--embedder`` or ``MEMLOCI_EMBEDDER``) kept a store on the
    bundled MiniLM (made before bge-small became the default; see
    :func:`memloci.service.compose.build_service`)."""
    from memloci.providers.minilm import MODEL_ID

    settings, embedder = memory.settings, memory.service.embedder
    return (
        settings.embedder == "local"
        and "model_path" not in settings.embedder_options
        and embedder is not None
        and embedder.model_id == MODEL_ID
    )


# ---------------------------------------------------------------------- demo
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
            "--db",
            metavar="PATH",
            help="Store to load the demo into (default: the one demo store, replaced on each "
            "run: ~/.cache/memloci/demo.db).",
        ),
    ] = None,
    namespace: NsOpt = None,
    embedder: EmbOpt = None,
) -> None:
    """Load a sample conversation, then show searches and a context block (offline)."""
    from memloci.interfaces.demo import fresh_demo_store

    if db is not None:
        _demo(db, namespace, embedder)
        return
    with fresh_demo_store() as store:
        _demo(str(store), namespace, embedder)


def _demo(db: str, namespace: str | None, embedder: EmbedderName | None) -> None:
    from memloci.interfaces.demo import DEMO_PROMPT, DEMO_SEARCHES, DEMO_USER, load_demo

    with open_memory(db, namespace, embedder) as m:
        ns = m.settings.namespace
        if m.list(limit=1, include_forgotten=True):
            raise ConflictError(
                f"namespace {ns!r} of {db} already holds memories",
                hint="run the demo on a new file (omit --db) or another namespace (-n demo)",
            )
        with err.status("Loading the demo conversation…"):
            done = load_demo(m)
        note(
            f"Loaded {done.turns} turns from {done.sessions} sessions; consolidated them into "
            f"{done.facts} facts and {done.entities} linked entities, then {done.updates} "
            f"update, {done.corrections} correction, {done.procedures} procedures, "
            f"{done.users} users (merged into one) and {done.threads} checkpointed thread."
        )
        embed_all(m, "Embedding (bundled local model)")
        say(f"\nmemloci demo: {db} (namespace {ns!r}, embedder {m.settings.embedder})\n", "bold")
        for query in DEMO_SEARCHES:
            hits = m.search(query, user=DEMO_USER, k=3)
            out.print(hits_table(hits, title=f"memloci memory search {query!r} -k 3"))
        flt = m.service.filter(namespace=ns, user=DEMO_USER)
        stable, dynamic = m.service.context.context_parts.now(DEMO_PROMPT, flt, budget=900)
    from rich.panel import Panel

    say(f"\nThe context block for the prompt {DEMO_PROMPT!r} (memloci memory context):", "bold")
    out.print(Panel(cell(stable), title="cacheable: the same for every prompt", expand=False))
    out.print(Panel(cell(dynamic), title=f"brought up by {DEMO_PROMPT!r}", expand=False))
    flags = _flags(db, ns, m.settings.embedder)
    say("\nTry next:", "bold")
    for line in (
        f"memloci memory search 'weekend trip with the dog' --user sam {flags}",
        f"memloci memory list --type semantic {flags}",
        f"memloci memory context 'Can you plan a Saturday for me?' --user sam {flags}",
        f"memloci memory remember 'Sam is learning Portuguese' --user sam {flags}",
        f"memloci memory stats {flags}",
        f"memloci serve {flags}   (the web UI: every tab filled)",
        "memloci --help",
    ):
        say(f"  {line}")


def _foreign_threads() -> list[threading.Thread]:
    """Live non-daemon threads other than the main one and memloci's own workers (the
    query-embedding pool's threads, named ``memloci-…``, stay alive idle after a search
    and have nothing left to finish once the command has returned)."""
    main_thread = threading.main_thread()
    return [
        t
        for t in threading.enumerate()
        if t.is_alive()
        and not t.daemon
        and t is not main_thread
        and not t.name.startswith("memloci-")
    ]


def main() -> None:
    """Entry point of the ``memloci`` command.

    A finished command leaves through ``os._exit`` once its output is flushed: tearing
    the interpreter down (the loaded model's session, numpy, every module) took ~0.2 s
    of each one-shot command and does nothing a finished command needs — its stores are
    closed by then (SQLite's WAL would recover them anyway). When a thread that is not
    a daemon is still running, the ordinary exit waits for it as usual.

    Two defaults for the process, each kept when the variable is already set:
    ``OPENBLAS_NUM_THREADS=1`` — numpy's OpenBLAS otherwise starts a thread per core at
    import that spins ~0.1 s of CPU beside the model loading, and memloci runs every
    product on one BLAS thread anyway (:mod:`memloci.blas`); and
    ``PYDANTIC_DISABLE_PLUGINS=1`` (set it empty to load plugins) — looking for them
    reads every installed package's metadata, ~50-80 ms of each start, and no memloci
    command uses one."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")
    for stream in (sys.stdout, sys.stderr):  # a legacy encoding: escape what it lacks
        if not utf8(stream) and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        app(prog_name="memloci")
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if code is not None and not isinstance(code, int):  # sys.exit("message"): as Python
        print(code, file=sys.stderr)
        code = 1
    status = code or 0
    if _foreign_threads():
        sys.exit(status)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):  # the reader left (`| head`), or stdout closed
        status = status or 1
    logging.shutdown()
    os._exit(status)


if __name__ == "__main__":
    main()
