"""The aliases an entity keeps when memories that link it are hard-deleted (layer:
storage), for both SQL backends.

An entity's aliases come from the words of the memories that mention it ("Ana met
Anita" gives "Ana Silva" the alias "Anita"). When memories are deleted for good —
``purge``, ``clear``, pruning, and forgetting a person — an alias that only their words
used goes with them, from the entity and from its lookup names: forgetting a person
leaves none of their words behind in an entity another user's memories keep. An alias
no memory's words ever used (given through the API, or by an LLM extractor) stays.
So does the canonical name, unless only the removed memories' words used it and the
memories left use one of its aliases: that alias becomes the name ("Ana Souza", said
only by the forgotten user, gives way to "Ana", which the others say), and the name's
vector goes (it is embedded again from the new name).

Call :func:`aliases_used` before the links of the removed memories are deleted and
:func:`drop_unused_aliases` after, in the same transaction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from memloci.storage.names import lookup_names

_CHUNK = 400  # ids per IN list


def names_in_use(names: Sequence[str], texts: Iterable[str]) -> list[str]:
    """Those of ``names`` some text uses as a whole word or phrase (case folded), in
    their order; ``texts`` is read only until every name is found."""
    todo = {n: re.compile(rf"(?<!\w){re.escape(n.casefold())}(?!\w)") for n in names}
    found: set[str] = set()
    for text in texts:
        folded = text.casefold()
        found.update(n for n, pattern in todo.items() if pattern.search(folded))
        for n in found:
            todo.pop(n, None)
        if not todo:
            break
    return [n for n in names if n in found]


def _json(ph: str) -> tuple[str, str]:
    """How an aliases column is read and written: as text on PostgreSQL's jsonb."""
    return ("::text", "::jsonb") if ph == "%s" else ("", "")


def aliases_used(c: Any, namespace: str, ids: Sequence[str], ph: str = "?") -> dict[str, set[str]]:
    """Before memories ``ids`` lose their entity links: per entity they link that has
    aliases, those the memories' words use."""
    read, _ = _json(ph)
    out: dict[str, set[str]] = {}
    for i in range(0, len(ids), _CHUNK):
        chunk = list(ids[i : i + _CHUNK])
        marks = ", ".join([ph] * len(chunk))
        rows = c.execute(
            f"SELECT e.id, e.canonical_name, e.aliases{read}, n.content FROM node_entities ne"
            " JOIN entities e ON e.id = ne.entity_id JOIN nodes n ON n.id = ne.node_id"
            f" WHERE e.namespace = {ph} AND e.aliases{read} <> '[]'"
            f" AND ne.node_id IN ({marks})",
            [namespace, *chunk],
        ).fetchall()
        for entity_id, canonical, aliases, content in rows:
            used = names_in_use([canonical, *json.loads(aliases)], [content])
            if used:
                out.setdefault(entity_id, set()).update(used)
    return out


def drop_unused_aliases(c: Any, namespace: str, used: dict[str, set[str]], ph: str = "?") -> None:
    """After the links are deleted: each entity of ``used`` still linked drops those of
    its ``used`` aliases no memory linking it uses any more, and their lookup names."""
    read, write = _json(ph)
    for entity_id, names in used.items():
        row = c.execute(
            f"SELECT canonical_name, aliases{read} FROM entities WHERE namespace = {ph}"
            f" AND id = {ph}",
            (namespace, entity_id),
        ).fetchone()
        if row is None:
            continue
        cursor = c.execute(
            "SELECT n.content FROM node_entities ne JOIN nodes n ON n.id = ne.node_id"
            f" WHERE ne.entity_id = {ph}",
            (entity_id,),
        )
        first = cursor.fetchmany(_CHUNK)
        if not first:
            continue  # no memory links it: the caller deletes it
        canonical, aliases = row[0], json.loads(row[1])
        # the canonical name too: when only the removed words used it, an alias the
        # memories left use replaces it (so every alias is looked for then)
        wanted = sorted(names | set(aliases) if canonical in names else names)
        # read in batches, only until every name is found (an entity may have many links)
        in_use = set(names_in_use(wanted, _texts(cursor, first)))
        cursor.close()
        gone = names - in_use
        if canonical in gone:
            heir = next((a for a in aliases if a in in_use), None)
            gone.discard(canonical)
            if heir is not None:
                gone.add(canonical)
                canonical = heir
                c.execute(f"DELETE FROM entity_vectors WHERE entity_id = {ph}", (entity_id,))
                c.execute(
                    f"DELETE FROM entity_profile_vectors WHERE entity_id = {ph}", (entity_id,)
                )
        if not gone:
            continue
        aliases = [a for a in aliases if a not in gone and a != canonical]
        c.execute(
            f"UPDATE entities SET canonical_name = {ph}, aliases = {ph}{write}"
            f" WHERE namespace = {ph} AND id = {ph}",
            (canonical, json.dumps(aliases), namespace, entity_id),
        )
        c.execute(f"DELETE FROM entity_names WHERE entity_id = {ph}", (entity_id,))
        for name in lookup_names([canonical, *aliases]):
            c.execute(
                "INSERT INTO entity_names (namespace, name_norm, entity_id)"
                f" VALUES ({ph}, {ph}, {ph}) ON CONFLICT DO NOTHING",
                (namespace, name, entity_id),
            )


def _texts(cursor: Any, first: list[Any]) -> Iterator[str]:
    """The first column of ``first`` and of the cursor's further rows, batch by batch."""
    batch = first
    while batch:
        yield from (row[0] for row in batch)
        batch = cursor.fetchmany(_CHUNK)
