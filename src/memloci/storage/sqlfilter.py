"""NodeFilter → SQL WHERE clause (layer: storage), shared by the SQL backends."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memloci.storage.access import live
from memloci.storage.base import NodeFilter


def ts(value: datetime | None) -> float | None:
    """Datetime → UTC epoch seconds (None stays None)."""
    return None if value is None else value.timestamp()


def filter_sql(flt: NodeFilter, *, alias: str = "n", ph: str = "?") -> tuple[str, list[Any]]:
    """Build ``(where_clause, params)`` for a filter. ``ph`` is the placeholder style."""
    a = alias
    clauses: list[str] = []
    params: list[Any] = []

    def isin(column: str, values: tuple[Any, ...]) -> None:
        clauses.append(f"{a}.{column} IN ({', '.join([ph] * len(values))})")
        params.extend(values)

    if not flt.namespaces:
        clauses.append("1 = 0")  # no namespace named: nothing is visible
    else:
        isin("namespace", tuple(flt.namespaces))
    if flt.user is not None:
        clauses.append(f"({a}.scope <> 'user' OR {a}.user_id = {ph})")
        params.append(flt.user)
    if flt.agent is not None:
        clauses.append(f"({a}.scope <> 'agent' OR {a}.agent_id IS NULL OR {a}.agent_id = {ph})")
        params.append(flt.agent)
    if flt.session is not None:
        clauses.append(f"({a}.scope <> 'session' OR {a}.session_id = {ph})")
        params.append(flt.session)
    elif flt.user is not None or flt.agent is not None:
        # a reader outside any session never sees session-scoped memories
        clauses.append(f"{a}.scope <> 'session'")
    if flt.owner_user is not None:
        clauses.append(f"{a}.user_id = {ph}")
        params.append(flt.owner_user)
    if flt.sessions:
        isin("session_id", flt.sessions)
    if flt.types:
        isin("type", tuple(t.value for t in flt.types))
    if flt.scopes:
        isin("scope", tuple(s.value for s in flt.scopes))
    if flt.categories:
        isin("category", flt.categories)
    if flt.ids is not None:
        if flt.ids:
            isin("id", flt.ids)
        else:
            clauses.append("1 = 0")
    if flt.after is not None:
        clauses.append(f"{a}.event_time >= {ph}")
        params.append(ts(flt.after))
    if flt.before is not None:
        clauses.append(f"{a}.event_time < {ph}")
        params.append(ts(flt.before))
    if flt.min_confidence is not None:
        clauses.append(f"{live('confidence', a)} >= {ph}")
        params.append(flt.min_confidence)
    if flt.subject is not None:
        clauses.append(f"lower({a}.subject) = lower({ph})")
        params.append(flt.subject)
    if flt.key_norm is not None:
        clauses.append(f"{a}.key_norm = {ph}")
        params.append(flt.key_norm)
    if not flt.include_invalid:
        if flt.as_of is None:
            clauses.append(f"{a}.valid_until IS NULL")
        else:
            at = ts(flt.as_of)
            clauses.append(
                f"{a}.valid_from <= {ph} AND ({a}.valid_until IS NULL OR {a}.valid_until > {ph})"
            )
            params.extend([at, at])
    return " AND ".join(clauses) or "1 = 1", params
