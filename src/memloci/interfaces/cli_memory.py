"""``memloci memory …`` commands (layer: interfaces): write, search, inspect, transfer.

Each command opens the store through the SDK, does one thing and prints a table, a
one-line result or (with ``--json``) JSON. Errors are translated by the root group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from memloci.errors import NotFoundError, ValidationError
from memloci.interfaces.cli_common import (
    AgentOpt,
    ForceOpt,
    IdArg,
    RoleArg,
    StoreOptions,
    Table,
    UserOpt,
    YesOpt,
    confirm_or_refuse,
    embedder_in,
    emit_json,
    examples,
    fields_table,
    hits_table,
    memories,
    nodes_table,
    note,
    out,
    parse_json,
    plain,
    prewarm,
    role_of,
    role_settings,
    say,
    settings_for,
    stats_table,
    store_missing,
    store_options,
)
from memloci.interfaces.cli_groups import QuickHelpGroup
from memloci.interfaces.cli_transfer import EXPORT_EXAMPLES, IMPORT_EXAMPLES, export, import_
from memloci.kinds import FactType, NodeType, Scope

if TYPE_CHECKING:
    from collections.abc import Callable

    from memloci.models import WriteResult
    from memloci.sdk import Memory


class MemoryGroup(QuickHelpGroup):
    """``memloci memory``: for ``search``, the bundled model starts loading (see
    :func:`~memloci.interfaces.cli_common.prewarm`) before typer parses the command's
    options — building their coercions is itself a good part of a one-shot start-up.
    (``Any`` for typer's vendored click types.)"""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name, command, rest = super().resolve_command(ctx, args)
        if name == "search":
            known, chosen = embedder_in(rest)
            if known and not store_missing(rest):  # a missing store fails at once
                prewarm(chosen)
        return name, command, rest


memory_app = typer.Typer(
    rich_markup_mode="markdown",
    name="memory",
    cls=MemoryGroup,
    help="Add, search, inspect, change and move memories.",
    no_args_is_help=True,
    epilog=examples(
        "memloci memory add 'I moved to Lisbon last year' --user sam",
        "memloci memory search 'where does sam live' --user sam",
    ),
)

TypeOpt = Annotated[
    NodeType | None, typer.Option("--type", "-t", help="Only this memory type.", show_default=False)
]
CategoryOpt = Annotated[str | None, typer.Option("--category", "-c", help="Only this category.")]
TextArg = Annotated[str, typer.Argument(metavar="TEXT", help="The text to store.")]


def _change(
    store: StoreOptions, change: Callable[[Memory], WriteResult], *, must_exist: bool = True
) -> None:
    """Open the store, make one change through the SDK and print what it did."""
    with store.open(must_exist=must_exist) as m:
        result = change(m)
    _result(result, store.as_json)


def _result(result: WriteResult, as_json: bool) -> None:
    if as_json:
        emit_json(result.model_dump(mode="json"))
        return
    say(f"{result.action}: {result.message}", "bold green" if result.action == "created" else None)


# ---------------------------------------------------------------------- writes
@memory_app.command(
    "add",
    epilog=examples(
        "memloci memory add 'I just adopted a cat called Miso' --user sam --session s1",
        "memloci memory add 'Noted!' --speaker assistant --session s1 --event-time 2024-05-01",
        """memloci memory add 'Flight is at 9' --metadata '{"source": "email"}'""",
    ),
)
@store_options()
def add(
    text: TextArg,
    user: UserOpt = None,
    session: Annotated[str | None, typer.Option(help="Session id (turns are linked).")] = None,
    speaker: Annotated[str | None, typer.Option(help="Who said it, e.g. Sam.")] = None,
    agent: Annotated[str | None, typer.Option(help="Agent id.")] = None,
    event_time: Annotated[
        str | None, typer.Option(metavar="ISO", help="When it was said (ISO date/time).")
    ] = None,
    metadata: Annotated[str | None, typer.Option(metavar="JSON", help="A JSON object.")] = None,
    *,
    store: StoreOptions,
) -> None:
    """Add a conversation turn (an episodic memory)."""
    meta = None
    if metadata is not None:
        meta = parse_json(metadata, "--metadata", """'{"source": "email"}'""")
    with store.open() as m:
        node = m.add(
            text,
            user=user,
            session=session,
            speaker=speaker,
            agent=agent,
            event_time=cast(Any, event_time),
            metadata=meta,
        )
    from memloci.models import MemoryNode

    assert isinstance(node, MemoryNode)
    if store.as_json:
        emit_json(node.model_dump(mode="json"))
    else:
        say(f"Added [{node.id}] to {node.namespace}.", "bold green")


@memory_app.command(
    "remember",
    epilog=examples(
        "memloci memory remember 'Sam lives in Lisbon' --key home_city --value '\"Lisbon\"'",
        "memloci memory remember 'Sam is vegetarian' --category preference --user sam",
        "memloci memory remember 'The API limit is 100/min' --scope global --confidence 0.8",
    ),
)
@store_options()
def remember(
    text: TextArg,
    key: Annotated[str | None, typer.Option(help="A lookup key, e.g. home_city.")] = None,
    value: Annotated[str | None, typer.Option(metavar="JSON", help="Structured value.")] = None,
    category: Annotated[str | None, typer.Option(help="e.g. person, preference.")] = None,
    subject: Annotated[str | None, typer.Option(help="What the fact is about.")] = None,
    fact_type: Annotated[FactType | None, typer.Option(show_default=False)] = None,
    scope: Annotated[Scope | None, typer.Option(show_default=False)] = None,
    confidence: Annotated[float, typer.Option(help="How sure it is, 0–1.")] = 1.0,
    user: UserOpt = None,
    *,
    store: StoreOptions,
) -> None:
    """Store a fact; a duplicate confirms the existing one, a known key updates it."""
    if not 0.0 <= confidence <= 1.0:  # NaN too (click's range check let it through)
        raise ValidationError(
            f"--confidence must be a number between 0 and 1, not {confidence}",
            hint="e.g. --confidence 0.8",
        )
    options: dict[str, Any] = {
        "key": key,
        "category": category,
        "subject": subject,
        "fact_type": fact_type,
        "scope": scope,
        "confidence": confidence,
        "user": user,
    }
    if value is not None:
        options["value"] = parse_json(value, "--value", """'"Lisbon"'""")
    _change(store, lambda m: m.remember(text, **options), must_exist=False)


@memory_app.command(
    "update", epilog=examples("memloci memory update a1B2c3D4 'Sam lives in Porto now'")
)
@store_options()
def update(memory_id: IdArg, text: TextArg, *, store: StoreOptions) -> None:
    """Change a memory in place: same id, a new version in its history."""
    _change(store, lambda m: m.update(memory_id, text))


@memory_app.command(
    "correct", epilog=examples("memloci memory correct a1B2c3D4 'Sam moved to Porto in 2025'")
)
@store_options()
def correct(memory_id: IdArg, text: TextArg, *, store: StoreOptions) -> None:
    """Replace a fact by a new one that supersedes it (the old one stops being current)."""
    _change(store, lambda m: m.correct(memory_id, text))


@memory_app.command("confirm", epilog=examples("memloci memory confirm a1B2c3D4"))
@store_options()
def confirm(memory_id: IdArg, *, store: StoreOptions) -> None:
    """Mark a fact as certain and protect it from decay."""
    _change(store, lambda m: m.confirm(memory_id))


@memory_app.command(
    "record-use",
    epilog=examples(
        "memloci memory record-use a1B2c3D4 --success --duration-ms 1200",
        "memloci memory record-use a1B2c3D4 --failure",
    ),
)
@store_options()
def record_use(
    memory_id: IdArg,
    success: Annotated[
        bool | None,
        typer.Option(
            "--success/--failure",
            help="How applying it went (default: not known).",
            show_default=False,
        ),
    ] = None,
    duration_ms: Annotated[
        float | None,
        typer.Option(
            "--duration-ms", min=0, help="How long it took, in milliseconds.", show_default=False
        ),
    ] = None,
    *,
    store: StoreOptions,
) -> None:
    """Count one use of a learned procedure (its times used, success rate, duration)."""
    from memloci.tools.render import procedure_record

    with store.open(must_exist=True) as m:
        node = m.record_procedure_use(memory_id, success=success, duration_ms=duration_ms)
    if store.as_json:
        emit_json(node.model_dump(mode="json"))
        return
    say(f"recorded: a use of [{node.id}]: {procedure_record(node)}.")


@memory_app.command(
    "delete",
    epilog=examples(
        "memloci memory delete a1B2c3D4", "memloci memory delete a1B2c3D4 --purge --yes"
    ),
)
@store_options()
def delete(
    memory_id: IdArg,
    purge: Annotated[
        bool, typer.Option("--purge", help="Hard delete: the memory, its history and edges.")
    ] = False,
    yes: YesOpt = False,
    *,
    store: StoreOptions,
) -> None:
    """Forget a memory (soft delete, history kept); --purge erases it for good."""
    with store.open(must_exist=True) as m:
        if not purge:
            _result(m.forget(memory_id), store.as_json)
            return
        node = m.get(memory_id)
        if not yes:
            confirm_or_refuse(
                f"Permanently delete [{node.id}] {node.content[:60]!r} and its history?",
                f"refusing to purge {node.id} without confirmation",
            )
        m.purge(node.id)
    if store.as_json:
        emit_json({"action": "purged", "id": node.id})
    else:
        say(f"purged: [{node.id}] and its history, edges and vector are gone.")


@memory_app.command(
    "clear",
    epilog=examples(
        "memloci memory clear role.yaml",
        "memloci memory clear role.yaml --force",
        "memloci memory clear role.yaml --sessions-only",
        "memloci memory clear role.yaml --memories-only",
        "memloci memory clear role.yaml --type semantic",
        "memloci memory clear --user sam --yes -n demo",
    ),
)
@store_options()
def clear(
    role_file: RoleArg = None,
    user: Annotated[str | None, typer.Option("--user", "-u", help="Only this user's.")] = None,
    type_: Annotated[
        NodeType | None,
        typer.Option("--type", "-t", help="Only memories of this type.", show_default=False),
    ] = None,
    sessions_only: Annotated[
        bool, typer.Option("--sessions-only", help="Only the sessions (conversation threads).")
    ] = False,
    memories_only: Annotated[
        bool, typer.Option("--memories-only", help="Only the long-term memories.")
    ] = False,
    yes: ForceOpt = False,
    agent_name: AgentOpt = None,
    *,
    store: StoreOptions,
) -> None:
    """Erase the memories and sessions of the namespace (or of one user); asks first."""
    if sessions_only and (memories_only or type_ is not None):
        raise ValidationError(
            "--sessions-only clears no memories; it goes with neither --memories-only nor --type",
            hint="give one of --sessions-only, --memories-only or --type",
        )
    role = role_of(role_file, agent_name)
    agent = role.name if role is not None else None  # a role clears its own agent's sessions
    try:
        opened = store.open(must_exist=True, role=role)
    except NotFoundError:  # nothing to clear: the reference CLI's answer, not an error
        if store.as_json:  # the same fields as when the store is there
            ns = (
                role_settings(role, store.db, store.namespace)
                if role
                else settings_for(store.db, store.namespace, None)
            ).namespace
            emit_json(
                {
                    "action": "cleared",
                    "found": False,
                    "namespace": ns,
                    "user": user,
                    "deleted": 0,
                    "sessions_deleted": 0,
                }
            )
        else:
            say("No memory store found.")
        return
    with opened as m:
        ns, whose = m.settings.namespace, f" of user {user!r}" if user else ""
        do_memories, do_sessions = not sessions_only, not memories_only and type_ is None
        total = m.count(owner=user, type=type_, include_forgotten=True) if do_memories else 0
        threads = (
            m._call(m.service.records.count_threads(namespace=ns, user=user, agent=agent))
            if do_sessions
            else 0
        )
        what = _what(total if do_memories else None, threads if do_sessions else None, type_)
        if (total or threads) and not yes:
            confirm_or_refuse(
                f"Erase {what}{whose} in namespace {ns!r}? This cannot be undone.",
                f"refusing to erase {what}{whose} without --yes",
                flag="--yes (or --force)",
            )
        deleted = m.clear(owner=user, type=type_) if total else 0
        sessions = _clear_threads(m, ns, user, agent) if threads else 0
    if store.as_json:
        emit_json(
            {
                "action": "cleared",
                "found": True,
                "namespace": ns,
                "user": user,
                "deleted": deleted,
                "sessions_deleted": sessions,
            }
        )
    else:
        done = _what(deleted if do_memories else None, sessions if do_sessions else None, type_)
        say(f"Erased {done}{whose} from namespace {ns!r}.")


def _what(memory_count: int | None, session_count: int | None, type_: NodeType | None) -> str:
    parts = []
    if memory_count is not None:
        kind = f"{type_.value} " if type_ is not None else ""
        parts.append(memories(memory_count).replace(" memor", f" {kind}memor", 1))
    if session_count is not None and (session_count or memory_count is None):
        parts.append("1 session" if session_count == 1 else f"{session_count} sessions")
    return " and ".join(parts)


def _clear_threads(m: Memory, ns: str, user: str | None, agent: str | None) -> int:
    """Delete the conversation threads (sessions) of the namespace, page by page."""
    deleted = 0
    while page := m._call(
        m.service.records.list_threads(namespace=ns, user=user, agent=agent, limit=1000)
    ):
        n = m._call(m.service.records.delete_threads([t.id for t in page], namespace=ns))
        deleted += n
        if n == 0:
            break
    return deleted


# ---------------------------------------------------------------------- reads
@memory_app.command(
    "search",
    epilog=examples(
        "memloci memory search 'what pet does sam have' --user sam",
        "memloci memory search lisbon --type semantic -k 3 --json",
        "memloci memory search 'trip' --after 2024-04-01 --recipe fulltext",
    ),
)
@store_options(read_only=True)
def search(
    query: Annotated[
        str, typer.Argument(metavar="QUERY", help="What to look for (words or a question).")
    ],
    k: Annotated[int, typer.Option("-k", "--top-k", help="How many results.")] = 10,
    user: UserOpt = None,
    type_: TypeOpt = None,
    category: CategoryOpt = None,
    after: Annotated[str | None, typer.Option(help="ISO date, 7d, last_week, …")] = None,
    before: Annotated[str | None, typer.Option(help="ISO date, 7d, last_week, …")] = None,
    min_confidence: Annotated[float | None, typer.Option(help="0–1.")] = None,
    recipe: Annotated[
        str,
        typer.Option(
            help="hybrid (with graph strategies), core (hybrid without them), fulltext or vector."
        ),
    ] = "hybrid",
    *,
    store: StoreOptions,
) -> None:
    """Hybrid search (full text + meaning + keys), best first."""
    with store.open(must_exist=True) as m:
        hits = m.search(
            query,
            k=k,
            user=user,
            type=type_,
            category=category,
            after=after,
            before=before,
            min_confidence=min_confidence,
            recipe=recipe,
        )
    if store.as_json:
        emit_json([h.model_dump(mode="json") for h in hits])
    elif hits:
        out.print(hits_table(hits))
    else:
        note("No matching memories.")


@memory_app.command(
    "context",
    epilog=examples(
        "memloci memory context 'Can you plan a Saturday for me?' --user sam",
        "memloci memory context --user sam --budget 500",
        "memloci memory context 'deploy the API' --json",
    ),
)
@store_options(read_only=True)
def context(
    prompt: Annotated[
        str | None,
        typer.Argument(
            metavar="[PROMPT]",
            help="The message the block is for (left out: the cacheable part only).",
        ),
    ] = None,
    user: UserOpt = None,
    budget: Annotated[
        int | None,
        typer.Option(help="Tokens the block may use (default: the store's context_budget)."),
    ] = None,
    *,
    store: StoreOptions,
) -> None:
    """The memory block an agent puts in its prompt, within a token budget."""
    from memloci.context import estimate_tokens

    with store.open(must_exist=True) as m:
        block = m.context(prompt, user=user, budget=budget)
    if store.as_json:
        emit_json({"context": block, "tokens": estimate_tokens(block)})
    elif block:
        typer.echo(plain(block, lines=True))
    else:
        note("No memories to put in the context.")


@memory_app.command(
    "list",
    epilog=examples(
        "memloci memory list role.yaml",
        "memloci memory list role.yaml --type episodic",
        "memloci memory list role.yaml --category deployment --limit 50",
        "memloci memory list --user sam --type semantic",
        "memloci memory list --limit 50 --offset 50 --include-forgotten",
    ),
)
@store_options(read_only=True)
def list_(
    role_file: RoleArg = None,
    user: UserOpt = None,
    type_: TypeOpt = None,
    category: CategoryOpt = None,
    limit: Annotated[int, typer.Option(help="Page size.")] = 20,
    offset: Annotated[int, typer.Option(help="Skip this many.")] = 0,
    include_forgotten: Annotated[
        bool, typer.Option("--include-forgotten", help="Also forgotten and replaced ones.")
    ] = False,
    agent: AgentOpt = None,
    *,
    store: StoreOptions,
) -> None:
    """List memories, oldest first."""
    role = role_of(role_file, agent)
    with store.open(must_exist=True, role=role) as m:
        nodes = m.list(
            user=user,
            type=type_,
            category=category,
            limit=limit,
            offset=offset,
            include_forgotten=include_forgotten,
        )
    if store.as_json:
        emit_json([n.model_dump(mode="json") for n in nodes])
    elif nodes:
        out.print(nodes_table(nodes))
        if len(nodes) == limit:
            note(f"More may follow: add --offset {offset + limit}.")
    else:
        note("No memories.")


@memory_app.command("show", epilog=examples("memloci memory show a1B2c3D4 --json"))
@store_options(read_only=True)
def show(memory_id: IdArg, *, store: StoreOptions) -> None:
    """Show every field of one memory."""
    with store.open(must_exist=True) as m:
        node = m.get(memory_id)
    if store.as_json:
        emit_json(node.model_dump(mode="json"))
    else:
        out.print(fields_table(node.model_dump(mode="json")))


@memory_app.command("history", epilog=examples("memloci memory history a1B2c3D4"))
@store_options(read_only=True)
def history(memory_id: IdArg, *, store: StoreOptions) -> None:
    """Show every version of a memory, oldest first."""
    with store.open(must_exist=True) as m:
        m.get(memory_id)  # unknown id → NotFoundError with a hint
        versions = m.history(memory_id)
    if store.as_json:
        emit_json([v.model_dump(mode="json") for v in versions])
        return
    table = Table(title=f"history of {memory_id}", title_justify="left")
    for column in ("version", "created", "session", "content", "value"):
        table.add_column(column, no_wrap=column in ("version", "created"))
    for v in versions:
        value = "" if v.value is None else str(v.value)
        table.add_row(
            str(v.version),
            f"{v.created_at:%Y-%m-%d %H:%M}",
            v.source_session or "",
            v.content,
            value,
        )
    out.print(table)


@memory_app.command("stats", epilog=examples("memloci memory stats", "memloci memory stats --json"))
@store_options(read_only=True)
def stats(*, store: StoreOptions) -> None:
    """Counts by type, edges, pending embeddings, size and embedding model."""
    with store.open(must_exist=True) as m:
        result = m.stats()
    if store.as_json:
        emit_json(result.model_dump(mode="json"))
    else:
        out.print(stats_table(result))


# ---------------------------------------------------------------------- transfer
memory_app.command("export", epilog=EXPORT_EXAMPLES)(export)
memory_app.command("import", epilog=IMPORT_EXAMPLES)(import_)
