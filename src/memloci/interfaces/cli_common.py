"""Command-line plumbing (layer: interfaces): shared options, store opening, output, errors.

Every command opens the store through the SDK (:class:`memloci.Memory`); nothing here
touches storage. Human output goes to stdout as rich tables; progress, notices and
errors go to stderr, so ``--json`` leaves nothing but JSON on stdout.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from shlex import quote
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from memloci.errors import MemlociError, NotFoundError, ValidationError

if TYPE_CHECKING:  # loaded on use, so `memloci --help` starts fast
    from rich.progress import Progress

    from memloci.config import Settings
    from memloci.models import MemoryNode, SearchHit, StoreStats
    from memloci.runtime.role import Role
    from memloci.sdk import AsyncMemory, Memory

out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False)


class EmbedderName(StrEnum):
    """Embedders the command line can pick."""

    LOCAL = "local"
    MINILM_INT8 = "minilm-int8"
    MINILM_FP32 = "minilm-fp32"
    BGE_SMALL = "bge-small"
    FAKE = "fake"
    NONE = "none"
    OPENAI = "openai"


DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="PATH|URL",
        help="SQLite file or postgresql://user:password@host/db URL "
        "(default: $MEMLOCI_PATH, else ./memloci.db).",
        show_default=False,
    ),
]
ReadOnlyOpt = Annotated[
    bool,
    typer.Option(
        "--read-only",
        help="Open the store read-only (a store in a folder you may not write, a backup): "
        "nothing is written to it.",
    ),
]
NsOpt = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        "-n",
        help="Namespace: lower-case letters, digits and '-' (default: $MEMLOCI_NAMESPACE "
        "or 'default').",
        show_default=False,
    ),
]
EmbOpt = Annotated[
    EmbedderName | None,
    typer.Option(
        "--embedder",
        help="Embedding provider (default: $MEMLOCI_EMBEDDER, else local).",
        case_sensitive=False,
        show_default=False,
    ),
]
JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print machine-readable JSON to stdout, nothing else.")
]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
ForceOpt = Annotated[
    bool, typer.Option("--force", "-f", "--yes", "-y", help="Do not ask for confirmation.")
]
UserOpt = Annotated[str | None, typer.Option("--user", "-u", help="User id.")]
IdArg = Annotated[str, typer.Argument(metavar="ID", help="Memory id (8 letters/digits).")]
AgentOpt = Annotated[
    str | None,
    typer.Option(
        "--agent", help="The agent, when the role file lists several.", show_default=False
    ),
]
RoleArg = Annotated[
    Path | None,
    typer.Argument(
        metavar="[ROLE]",
        help="A role file (role.yaml): use its memory.store_path and namespace, as --db and "
        "-n would (both still override it).",
        show_default=False,
    ),
]
# the ROLE and --agent of the commands that run an agent (chat, run)
RunRoleArg = Annotated[
    Path, typer.Argument(metavar="ROLE", help="The role file (role.yaml).", show_default=False)
]
RunAgentOpt = Annotated[
    str | None,
    typer.Option(
        "--agent", help="The agent to run, when the role file lists several.", show_default=False
    ),
]


@dataclass(frozen=True)
class StoreOptions:
    """What the store options a command shares with others said (see
    :func:`store_options`): ``--db``, ``--namespace``, ``--embedder``, ``--json`` and, on
    the commands that only read, ``--read-only``; an option the command lacks is left
    at its default."""

    db: str | None = None
    namespace: str | None = None
    embedder: EmbedderName | None = None
    as_json: bool = False
    read_only: bool = False

    def open(
        self,
        *,
        must_exist: bool = False,
        reembed: bool = False,
        role: Role | None = None,
        settings: Settings | None = None,
    ) -> Memory:
        """The store these options name, through :func:`open_memory`."""
        return open_memory(
            self.db,
            self.namespace,
            self.embedder,
            must_exist=must_exist,
            reembed=reembed,
            role=role,
            settings=settings,
            read_only=self.read_only,
        )


# the shared store options, in the order a command's help lists them
_STORE_PARAMS: dict[str, tuple[Any, Any]] = {
    "db": (DbOpt, None),
    "read_only": (ReadOnlyOpt, False),
    "namespace": (NsOpt, None),
    "embedder": (EmbOpt, None),
    "as_json": (JsonOpt, False),
}


def store_options(
    *,
    read_only: bool = False,
    namespace: bool = True,
    embedder: bool = True,
    as_json: bool = True,
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command the shared store options after its own: ``--db`` always, and
    ``--read-only``, ``--namespace``, ``--embedder``, ``--json`` as the flags say. Typer
    sees them as if the command declared each one; the command gets what they said as
    one keyword argument ``store: StoreOptions``."""
    wanted = {
        "db": True,
        "read_only": read_only,
        "namespace": namespace,
        "embedder": embedder,
        "as_json": as_json,
    }
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=hint, default=default)
        for name, (hint, default) in _STORE_PARAMS.items()
        if wanted[name]
    ]

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        own = [
            p
            for p in inspect.signature(command, eval_str=True).parameters.values()
            if p.name != "store"
        ]
        signature = inspect.Signature([*own, *shared], return_annotation=None)

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> None:
            given = signature.bind(*args, **kwargs)
            given.apply_defaults()
            values = given.arguments
            store = StoreOptions(**{p.name: values.pop(p.name) for p in shared})
            command(**values, store=store)

        run.__signature__ = signature  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
        return run

    return decorate


def role_of(role_file: Path | None, agent: str | None) -> Role | None:
    """The role a command's ``ROLE`` argument names (``--agent`` picks one agent of a file
    that lists several); None without a role file. A store given there is refused with
    the ``--db`` it needs."""
    if role_file is None:
        if agent is not None:
            raise ValidationError("--agent picks an agent of a role file; give the role file first")
        return None
    if sqlite_file(role_file):
        raise ValidationError(
            f"{role_file} is a SQLite database (a memloci store), not a role file",
            hint=f"name a store with --db {quote(str(role_file))}",
        )
    from memloci.runtime.role import load_role

    return load_role(role_file, agent=agent)


def sqlite_file(path: Path) -> bool:
    """Whether ``path`` is a SQLite database file (its 16-byte header; a pipe or a device
    is not opened)."""
    try:
        if not path.is_file():
            return False
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:  # missing, a folder, unreadable: not one
        return False


def examples(*lines: str) -> str:
    """An epilog listing example invocations, one a line in ``--help`` (help is rendered
    as markdown: a glob's ``*`` or a name's ``_`` is shown as typed)."""
    return "\n\n".join(("Examples:", *(f"  $ {_literal(line)}" for line in lines)))


def _literal(line: str) -> str:
    return "".join(f"\\{c}" if c in "\\`*_[]<>#" else c for c in line)


# ---------------------------------------------------------------------- safe text
# control characters (C0 but newline and tab, DEL, C1) and the bidirectional marks and
# overrides: what can clear the screen, retitle the window or reorder what is shown
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL_IN_LINES = re.compile(f"[{_CONTROLS}]")
_CONTROL = re.compile(f"[\t\n{_CONTROLS}]")


def plain(text: str, *, lines: bool = False) -> str:
    """Stored text made safe to print on a terminal: each control character (ESC, which
    starts the sequences that clear the screen or retitle the window, BEL, CR, the C1
    set, bidirectional overrides) becomes a visible ``\\x1b`` / ``\\u202e`` escape;
    ``lines`` keeps newlines and tabs (multi-line text)."""
    return (_CONTROL_IN_LINES if lines else _CONTROL).sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def cell(text: str, style: str = "") -> Text:
    """Stored text for a table cell or a line: printed as it is (no console markup:
    ``[bold]`` in a memory stays ``[bold]``), control characters escaped (:func:`plain`)."""
    return Text(plain(text, lines=True), style=style)


class Table(RichTable):
    """A rich table whose text cells and title are :func:`cell` s: stored text in it
    prints literally, whatever markup or control characters it holds."""

    def __init__(self, *headers: Any, title: Any = None, **kwargs: Any) -> None:
        if isinstance(title, str):
            title = cell(title, "table.title")
        super().__init__(*headers, title=title, **kwargs)

    def add_row(self, *renderables: Any, style: Any = None, end_section: bool = False) -> None:
        cells = [cell(r) if isinstance(r, str) else r for r in renderables]
        super().add_row(*cells, style=style, end_section=end_section)


# ---------------------------------------------------------------------- errors
def report_error(message: str, hint: str | None = None) -> None:
    err.print(Text("error: ", style="bold red") + cell(message, "red"), soft_wrap=True)
    if hint:
        err.print(Text("hint: ", style="bold yellow") + cell(hint), soft_wrap=True)


def parse_json(text: str, option: str, example: str) -> Any:
    """Parse a JSON option value or raise a :class:`ValidationError` naming the option."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(
            f"{option} is not valid JSON: {exc.msg} (at character {exc.pos})",
            hint=f"give JSON, quoted for the shell, e.g. {option} {example}",
        ) from None


def memories(n: int) -> str:
    return "1 memory" if n == 1 else f"{n} memories"


def interactive() -> bool:
    """True when a person can answer a prompt (stdin is a terminal)."""
    return sys.stdin.isatty()


def confirm_or_refuse(question: str, refusal: str, *, flag: str = "--yes") -> None:
    """Ask on a terminal; refuse (exit 2) when nobody can answer, naming the command's
    ``flag`` that confirms. Exits 1 on "no"."""
    if not interactive():
        raise ValidationError(refusal, hint=f"pass {flag} to confirm non-interactively")
    if not typer.confirm(question, default=False, err=True):
        err.print("Cancelled; nothing changed.")
        raise typer.Exit(1)


# ---------------------------------------------------------------------- opening the store
def settings_for(db: str | None, namespace: str | None, embedder: EmbedderName | None) -> Settings:
    """Settings from the command line, falling back to ``MEMLOCI_*`` variables."""
    overrides: dict[str, Any] = {}
    if db is not None:
        overrides["path"] = db
    if namespace is not None:
        overrides["namespace"] = namespace
    if embedder is not None:
        overrides["embedder"] = embedder.value
    return _settings(
        overrides, "check the command-line options and MEMLOCI_* environment variables"
    )


def _settings(overrides: dict[str, Any], hint: str) -> Settings:
    """``Settings(**overrides)``; an invalid one is a ``ValidationError`` naming the
    first bad setting, with ``hint`` saying where to look."""
    import pydantic

    from memloci.config import Settings

    try:
        return Settings(**overrides)
    except pydantic.ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"]) or "settings"
        raise ValidationError(f"invalid setting {where}: {problem['msg']}", hint=hint) from None


def role_settings(
    role: Role,
    db: str | None = None,
    namespace: str | None = None,
    embedder: EmbedderName | None = None,
    *,
    with_model: bool = False,
) -> Settings:
    """Settings from a role file (store path, namespace, embedder, caps, model), with the
    command line on top. ``with_model`` sets the role's model as the consolidation LLM
    even when the role's automatic consolidation is off. A role ``store_path`` whose
    folder does not exist gets it created, so a new agent's first run
    works."""
    overrides: dict[str, Any] = role.to_settings()
    if with_model and "llm" not in overrides and (llm := role.consolidation_llm()):
        overrides["llm"], overrides["llm_options"] = llm
    for key, value in (("path", db), ("namespace", namespace)):
        if value is not None:
            overrides[key] = value
    if embedder is not None:
        overrides["embedder"], overrides["embedder_options"] = embedder.value, {}
    settings = _settings(
        overrides, "check the role file, the command-line options and MEMLOCI_* variables"
    )
    if db is None and role.store_path is not None and _local(role.store_path):
        folder = Path(role.store_path).parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValidationError(
                f"cannot create the folder {folder} of memory.store_path: {exc.strerror or exc}",
                hint="check memory.store_path in the role file",
            ) from None
    return settings


def agent_memory(role: Role, settings: Settings, *, db: str | None = None) -> AsyncMemory:
    """The store an agent of ``role`` talks through. A role without a ``memory:`` block
    has no memory (memory is opt-in): it gets an empty in-process store that is never
    written (the agent leaves it alone), so no store file is created or opened; a
    ``--db`` given anyway is reported as unused."""
    from memloci.sdk import AsyncMemory

    if role.memory is not None:
        return AsyncMemory(settings=settings, embedder=settings.embedder)
    if db is not None:
        err.print(
            f"memloci: agent {role.name!r} has no memory (its role file has no memory: "
            "block); --db is not used",
            style="yellow",
            soft_wrap=True,
        )
    return AsyncMemory(":memory:", embedder=None, namespace=settings.namespace)


def _local(path: str) -> bool:
    from memloci.config import is_database_url

    return not is_database_url(path) and path != ":memory:"


_EARLY: list[Any] = []  # the embedder prewarm() started (keeps its shared session alive)


def prewarm(embedder: EmbedderName | None) -> None:
    """Start loading the bundled model now, before the settings and the SDK are imported,
    when it is certainly the model the command will open: no ``--embedder`` other than
    ``local`` and no ``MEMLOCI_EMBEDDER*`` variable. :func:`open_memory` then finds the
    session loaded or loading (one session per model file and process)."""
    if embedder not in (None, EmbedderName.LOCAL) or _EARLY:
        return
    if any(name.upper().startswith("MEMLOCI_EMBEDDER") for name in os.environ):
        return
    try:
        from memloci.providers.bge import BgeSmallEmbedder

        early = BgeSmallEmbedder()  # a store made with MiniLM loads that instead, later
    except MemlociError:  # the model is missing: open_memory reports it
        return
    from memloci.providers.base import warm_up

    _EARLY.append(early)
    warm_up(early)


def option_in(args: Sequence[str], name: str) -> tuple[bool, str | None]:
    """``(known, value)`` of option ``name`` (e.g. ``--db``) in a command line before click
    parses it (None when absent); ``known`` is False when it cannot tell (a missing
    value, ``--help``)."""
    if "--help" in args:
        return False, None
    for at, arg in enumerate(args):
        if arg == "--":
            break
        if arg == name or arg.startswith(name + "="):
            if "=" in arg:
                return True, arg.partition("=")[2]
            following = args[at + 1 : at + 2]
            return (True, following[0]) if following else (False, None)
    return True, None


def embedder_in(args: Sequence[str]) -> tuple[bool, EmbedderName | None]:
    """``(known, name)``: the ``--embedder`` a command line names, before click parses it
    (None when absent); ``known`` is False when it cannot tell (an unknown or missing
    value, ``--help``)."""
    known, value = option_in(args, "--embedder")
    if not known or value is None:
        return known, None
    try:
        return True, EmbedderName(value.lower())
    except ValueError:
        return False, None


def store_missing(args: Sequence[str]) -> bool:
    """Whether the store a command line names (``--db``, else ``MEMLOCI_PATH``, else
    ``memloci.db``) is a local file that does not exist (so a command that needs it fails
    before any model is needed)."""
    known, db = option_in(args, "--db")
    if not known:
        return True
    if db is None:
        env = {k.upper(): v for k, v in os.environ.items()}
        db = env.get("MEMLOCI_PATH", "memloci.db")
    if "://" in db or db == ":memory:":
        return False
    return not Path(db).expanduser().exists()


def open_memory(
    db: str | None,
    namespace: str | None,
    embedder: EmbedderName | None,
    *,
    must_exist: bool = False,
    reembed: bool = False,
    role: Role | Path | None = None,
    settings: Settings | None = None,
    read_only: bool = False,
) -> Memory:
    """Open the store through the SDK; ``must_exist`` refuses to create a new file.
    With ``role`` (a role file or a loaded role), its store and namespace are the
    defaults that ``db`` and ``namespace`` override; ``settings`` are used as given.
    ``read_only`` opens it for reads only (as ``MEMLOCI_READ_ONLY=1`` does)."""
    if isinstance(role, Path):
        from memloci.runtime.role import load_role

        role = load_role(role)
    if settings is None and role is not None:
        settings = role_settings(role, db, namespace, embedder)
    elif settings is None:
        settings = settings_for(db, namespace, embedder)
    if read_only:
        settings = settings.model_copy(update={"read_only": True})
    local = _local(settings.path)
    if must_exist and local and not Path(settings.path).exists():
        raise NotFoundError(
            f"no memory store at {settings.path}",
            hint="check the role's memory.store_path, --db or MEMLOCI_PATH, or create one "
            "with `memloci memory add`, `memloci chat ROLE` or `memloci demo --db PATH`"
            if role is not None
            else "check --db / MEMLOCI_PATH, or create one with `memloci memory add` "
            "or `memloci demo --db PATH`",
        )
    embedder_obj = None
    if settings.embedder not in ("none", ""):
        from memloci.providers.base import load_embedder, warm_up

        # built before the SDK is imported: the model loads on another thread meanwhile
        embedder_obj = load_embedder(settings.embedder, **settings.embedder_options)
        warm_up(embedder_obj)
    from memloci.sdk import Memory

    return Memory(settings=settings, embedder=embedder_obj, reembed=reembed)


# ---------------------------------------------------------------------- output
def emit_json(data: Any) -> None:
    """JSON to stdout (the only thing printed with ``--json``): UTF-8 text, or, where
    stdout has a legacy encoding (a Windows redirect: cp1252), ``\\u`` escapes for
    everything but ASCII — the same JSON, every character kept."""
    typer.echo(json.dumps(data, indent=2, ensure_ascii=not utf8(sys.stdout)))


def utf8(stream: Any) -> bool:
    """Whether a text stream encodes every character (UTF-8, -16 or -32)."""
    return str(getattr(stream, "encoding", None) or "").lower().replace("_", "-").startswith("utf")


def say(message: str, style: str | None = None) -> None:
    """A line (or lines) for people on stdout: printed literally, control characters
    escaped (:func:`cell`)."""
    out.print(cell(message, style or ""), soft_wrap=True)


def note(message: str) -> None:
    """A notice on stderr (keeps stdout clean)."""
    err.print(cell(message, "dim"), soft_wrap=True)


def snippet(text: str, width: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def who(node: MemoryNode) -> str:
    """Speaker for conversation turns, category for facts and procedures."""
    from memloci.models import NodeType

    if node.type is NodeType.EPISODIC:
        return node.speaker or node.category
    return node.category


def hits_table(hits: Sequence[SearchHit], title: str | None = None) -> Table:
    """Search hits; on narrow terminals the "why" goes under the content."""
    wide = out.width >= 120
    table = Table(title=title, title_justify="left", expand=False)
    table.add_column("id", style="cyan", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("speaker/category", overflow="fold")
    table.add_column("content" if wide else "content / why", min_width=20, ratio=3)
    if wide:
        table.add_column("why", style="dim", ratio=1)
    for hit in hits:
        node = hit.memory
        cells: list[str | Text] = [node.id, f"{hit.score:.4f}", node.type.value, who(node)]
        if wide:
            cells += [snippet(node.content), hit.why]
        else:
            cells.append(cell(snippet(node.content)) + cell("\n" + hit.why, "dim"))
        table.add_row(*cells)
    return table


def nodes_table(nodes: Sequence[MemoryNode]) -> Table:
    """Memories as a table; forgotten or replaced ones are dimmed and marked."""
    wide = out.width >= 100
    table = Table(expand=False)
    table.add_column("id", style="cyan", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("speaker/category", overflow="fold")
    if wide:
        table.add_column("user", overflow="fold")
    table.add_column("when", no_wrap=True)
    table.add_column("content", min_width=20, ratio=1)
    for node in nodes:
        current = node.valid_until is None
        text = snippet(node.content, 120) if current else "(forgotten) " + snippet(node.content)
        cells = [node.id, node.type.value, who(node)]
        if wide:
            cells.append(node.user or "")
        cells += [f"{node.event_time:%Y-%m-%d}", text]
        table.add_row(*cells, style=None if current else "dim")
    return table


def fields_table(data: dict[str, Any]) -> Table:
    table = Table(show_header=False, expand=False)
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value")
    for name, value in data.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        table.add_row(name, cell(shown))
    return table


def stats_table(stats: StoreStats) -> Table:
    table = Table(show_header=False, expand=False, title="memloci store", title_justify="left")
    table.add_column("what", style="bold", no_wrap=True)
    table.add_column("value")
    for kind in sorted(set(stats.nodes_by_type) | set(stats.current_by_type)):
        now, total = stats.current_by_type.get(kind, 0), stats.nodes_by_type.get(kind, 0)
        table.add_row(f"{kind} memories", f"{now} current ({total} in total)")
    if not stats.nodes_by_type:
        table.add_row("memories", "0")
    edges = ", ".join(f"{k}: {n}" for k, n in sorted(stats.edges_by_type.items())) or "0"
    table.add_row("edges", edges)
    table.add_row("entities", str(stats.entities))
    table.add_row("users", str(stats.users))
    table.add_row("pending embeddings", str(stats.pending_embeddings))
    table.add_row("sessions to consolidate", str(stats.pending_sessions))
    table.add_row("size", f"{stats.size_bytes / 1_048_576:.1f} MiB ({stats.size_bytes} bytes)")
    model = stats.embedding_model or "none"
    table.add_row("embedding model", f"{model} ({stats.dimension}-d)" if stats.dimension else model)
    table.add_row("namespaces", ", ".join(stats.namespaces) or "-")
    last = stats.last_maintenance
    table.add_row("last maintenance", last.isoformat(timespec="seconds") if last else "never")
    return table


# ---------------------------------------------------------------------- progress
def progress_bar(*, quiet: bool = False) -> Progress:
    """A progress bar on stderr (hidden when ``quiet``, e.g. with ``--json``, and when
    stderr is not a terminal: a log or a pipe gets no bar drawn once at the end)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=quiet or not err.is_terminal,
    )


@contextmanager
def progress_when_known(
    description: str, *, quiet: bool = False
) -> Iterator[Callable[[int, int], None]]:
    """A ``progress(done, total)`` callback for a long step: its bar (:func:`progress_bar`)
    is drawn only once there is something to do, and taken down when the step ends."""
    bar = progress_bar(quiet=quiet)
    task = bar.add_task(description, total=None)

    def tick(done: int, total: int) -> None:
        if total and not bar.live.is_started:  # shown once there is something to do
            bar.start()
        bar.update(task, completed=done, total=total)

    try:
        yield tick
    finally:
        if bar.live.is_started:
            bar.stop()


def counter(progress: Progress, task: Any, total: int | None) -> Callable[[int], None]:
    """A ``progress(n)`` callback that advances ``task`` without passing ``total``."""
    done = [0]

    def tick(n: int) -> None:
        done[0] += n
        progress.update(task, completed=min(done[0], total) if total else done[0])

    return tick


def embed_all(memory: Memory, description: str, *, quiet: bool = False) -> int:
    """Embed every pending memory (all namespaces) with a progress bar.

    The SDK's background worker embeds too, so the bar may jump; returns how many
    memories are still pending afterwards (0 unless the embedder failed or is ``none``).
    """
    namespaces = memory.stats().namespaces
    if not namespaces:
        return 0
    total = memory.stats(namespaces).pending_embeddings
    if total and memory.settings.embedder not in ("none", ""):
        with progress_bar(quiet=quiet) as bar:
            task = bar.add_task(description, total=total)
            memory.embed_pending(counter(bar, task, total))
            memory.flush(120)  # the background worker may still hold a batch
            bar.update(task, completed=total)
    return memory.stats(namespaces).pending_embeddings
