"""``memloci memory consolidate`` and ``memloci maintain`` (layer: interfaces).

Both go through the service (``Memory.service``): consolidation turns pending sessions
into facts, maintenance runs the nightly job now. Registered by :mod:`memloci.interfaces.cli`.
"""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memloci.errors import ValidationError
from memloci.interfaces.cli_common import (
    AgentOpt,
    RoleArg,
    StoreOptions,
    Table,
    UserOpt,
    emit_json,
    err,
    examples,
    note,
    out,
    progress_bar,
    report_error,
    role_of,
    role_settings,
    say,
    store_options,
)

if TYPE_CHECKING:
    from memloci.config import Settings
    from memloci.consolidation.consolidator import ConsolidationReport
    from memloci.consolidation.maintenance import MaintenanceReport
    from memloci.runtime.role import Role

CONSOLIDATE_EXAMPLES = examples(
    "memloci memory consolidate role.yaml",
    "memloci memory consolidate",
    "memloci memory consolidate --session s1",
    "memloci memory consolidate --user sam --json",
    "memloci memory consolidate role.yaml --rules",
)
MAINTAIN_EXAMPLES = examples("memloci maintain", "memloci maintain --db team.db --json")


@store_options()
def consolidate(
    role_file: RoleArg = None,
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="Only this session.")
    ] = None,
    user: UserOpt = None,
    rules: Annotated[
        bool,
        typer.Option(
            "--rules",
            help="Use the offline rule extractor even when a model is set (the default "
            "without a role file and without MEMLOCI_LLM).",
        ),
    ] = False,
    agent: AgentOpt = None,
    *,
    store: StoreOptions,
) -> None:
    """Turn pending conversation sessions into facts, opinions and procedures.

    The turns a user stored without a session count as one session of their own.

    With a role file: its store and namespace, its model as the extractor (the one
    `memloci chat` uses, or consolidation.model_override) and at most
    consolidation.max_episodes_per_run episodes, oldest first."""
    role = role_of(role_file, agent)
    cap: int | None = None
    settings: Settings | None = None
    if role is not None:
        settings = role_settings(role, store.db, store.namespace, store.embedder, with_model=True)
        _use_role_model(role, settings, role_file, rules)
        cap = role.memory.consolidation.max_episodes_per_run if role.memory else None
    with store.open(must_exist=True, role=role, settings=settings) as m:
        service, ns = m.service, m.settings.namespace
        from memloci.consolidation.rules import RuleExtractor

        extractor = RuleExtractor() if rules else None
        # (session, user, label): a session, or the turns a user stored without one
        sessions: list[tuple[str | None, str | None, str]] = []
        if session is not None:
            sessions = [(session, None, session)]
        else:
            pending = m._call(service.consolidation.pending_sessions(namespace=ns, user=user))
            loose = {p.user: p.label for p in pending if p.session is None}
            if None in loose:  # turns of no user: one run takes every owner's
                loose = {user: "(no session)"}
            sessions = [(p.session, None, p.session) for p in pending if p.session is not None]
            sessions += [(None, uid, label) for uid, label in loose.items()]
        from memloci.consolidation.consolidator import ConsolidationReport

        total = ConsolidationReport(namespace=ns)
        rows: list[tuple[str, ConsolidationReport]] = []
        with progress_bar(quiet=store.as_json or len(sessions) < 2) as bar:
            task = bar.add_task("Consolidating", total=len(sessions))
            for sid, uid, label in sessions:
                left = None if cap is None else cap - total.episodes
                if left is not None and left <= 0:
                    break
                report = m._call(
                    service.consolidation.consolidate(
                        sid,
                        namespace=ns,
                        user=uid,
                        extractor=extractor,
                        max_episodes=left,
                        without_session=sid is None,
                    )
                )
                total.extractor = report.extractor
                total.merge(report)
                rows.append((label, report))
                bar.advance(task)
    waiting = len(sessions) - len(rows) + len(total.partial)
    if store.as_json:
        emit_json(total.model_dump(mode="json"))
    elif not sessions:
        note("Nothing to consolidate: no session has pending conversation turns.")
    else:
        out.print(_sessions_table(rows, total.extractor))
        say(
            f"Consolidated {len(total.sessions)} of {len(sessions)} sessions: "
            f"{len(total.created)} new memories, {total.confirmed} confirmed, "
            f"{len(total.superseded)} replaced, {total.entities_created} new entities."
        )
    if waiting and not store.as_json:
        note(
            f"Reached max_episodes_per_run ({cap} episodes): {waiting} session(s) stay "
            "pending; run it again for the next ones."
        )
    for sid, problem in total.failed.items():
        report_error(f"session {sid!r} stays pending: {problem}")
    if total.failed:
        raise typer.Exit(1)


def _use_role_model(role: Role, settings: Settings, role_file: Path | None, rules: bool) -> None:
    """Refuse, leaving every episode pending, when the role names no model (and neither
    does MEMLOCI_LLM) unless ``--rules`` asks for the offline extractor; check the
    model's API key the way `memloci chat` does."""
    if rules:
        return
    if settings.llm in ("", "none"):
        raise ValidationError(
            f"no model is set: {role_file} has no model: block and MEMLOCI_LLM is not set, "
            "so nothing was extracted and every episode stays pending",
            hint="add a model: block to the role file (as for `memloci chat`), or pass "
            "--rules to extract with the offline rule extractor",
        )
    if role.model is not None:
        from memloci.runtime.agent import model_spec  # the chat stack, only when used

        model_spec(role, settings, source=role_file.name if role_file else "role.yaml")


def _sessions_table(rows: list[tuple[str, ConsolidationReport]], extractor: str) -> Table:
    table = Table(title=f"consolidation ({extractor or 'rules'} extractor)", title_justify="left")
    for column in ("session", "episodes", "new", "confirmed", "replaced", "entities", "status"):
        table.add_column(column, no_wrap=column != "session", overflow="fold")
    for sid, r in rows:
        status = (
            "failed"
            if r.failed
            else "partly done"
            if r.partial
            else "done"
            if r.sessions
            else "nothing pending"
        )
        table.add_row(
            sid,
            str(r.episodes),
            str(len(r.created)),
            str(r.confirmed),
            str(len(r.superseded)),
            str(r.entities_linked),
            status,
        )
    return table


@store_options(namespace=False)
def maintain(*, store: StoreOptions) -> None:
    """Run the nightly maintenance now: consolidate, decay, enrich, infer causes, embed."""
    memory = store.open(must_exist=True)
    with memory as m, nullcontext() if store.as_json else err.status("Running maintenance…"):
        report = m._call(m.service.consolidation.maintain())
    if store.as_json:
        emit_json(report.model_dump(mode="json"))
    elif not report.ran:
        say(f"Skipped: {report.message}; nothing was done.")
    else:
        out.print(maintenance_table(report))
    for problem in report.errors:
        report_error(problem)
    if report.errors:
        raise typer.Exit(1)


def maintenance_table(report: MaintenanceReport) -> Table:
    """A maintenance report as a two-column table."""
    seconds = (report.finished - report.started).total_seconds() if report.finished else 0.0
    table = Table(show_header=False, title="memloci maintain", title_justify="left")
    table.add_column("step", style="bold", no_wrap=True)
    table.add_column("result")
    no_llm = "skipped (no LLM configured)"
    rows = [
        ("namespaces", ", ".join(report.namespaces) or "-"),
        (
            "consolidation",
            f"{report.sessions_consolidated} sessions ({report.sessions_failed} failed): "
            f"{report.facts_created} new, {report.facts_confirmed} confirmed, "
            f"{report.facts_superseded} replaced",
        ),
        ("decay", f"{report.decayed} weakened, {report.forgotten} forgotten"),
        ("entity summaries", str(report.entities_enriched) if report.llm else no_llm),
        ("causal links", str(report.causal_edges) if report.llm else no_llm),
        ("embedded", str(report.embedded)),
        ("took", f"{seconds:.1f} s"),
    ]
    for step, result in rows:
        table.add_row(step, result)
    return table
