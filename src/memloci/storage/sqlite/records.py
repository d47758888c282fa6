"""SQLite records (layer: storage): memory users, threads, entities and API keys.

Lookup tables kept here, next to the rows they copy: ``user_identifiers`` (channel ids
of users) and ``entity_names`` (case-folded names and aliases of entities).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memloci.errors import ConflictError, NotFoundError
from memloci.models import ApiKey, Entity, MemoryNode, MemoryUser, Thread, short_id
from memloci.storage.base import NEWEST_LINKED, NodeFilter
from memloci.storage.names import lookup_names, name_norm, unaccented
from memloci.storage.rows import (
    NODE_COLUMNS,
    USER_ACTIVITY,
    dt,
    node_from_row,
    owner_tokens,
    stored_json,
    user_from_row,
)
from memloci.storage.sqlfilter import filter_sql, ts
from memloci.storage.sqlite.base import IntegrityError, SQLiteBase, chunks, qs

_USER_COLS = (
    "u.namespace, u.id, u.display_name, u.identifiers, u.preferences, "
    + USER_ACTIVITY
    + ", u.merged_into, u.created_at"
)
_THREAD_COLS = "namespace, id, user_id, agent_id, {messages}, summary, created_at, updated_at"
_ENTITY_COLS = (
    "e.id, e.namespace, e.canonical_name, e.type, e.aliases, e.summary, e.first_seen,"
    " e.last_seen, e.mention_count, e.attributes"
)
_KEY_COLS = "id, name, namespaces, can_write, admin, created_at, revoked_at, last_used_at"
_NODE_COLS = ", ".join("n." + c for c in NODE_COLUMNS)


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class SQLiteRecords(SQLiteBase):
    """Users, threads, entities (with node links) and API keys on SQLite."""

    # ------------------------------------------------------------------ users
    def upsert_user(self, user: MemoryUser) -> MemoryUser:
        with self._tx() as c:
            c.execute(
                "INSERT OR REPLACE INTO memory_users (namespace, id, display_name, identifiers,"
                " preferences, conversation_count, last_seen, merged_into, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    user.namespace,
                    user.id,
                    user.display_name,
                    json.dumps(user.identifiers),
                    json.dumps(user.preferences),
                    user.conversation_count,
                    ts(user.last_seen),
                    user.merged_into,
                    ts(user.created_at),
                ),
            )
            c.execute(
                "DELETE FROM user_identifiers WHERE namespace = ? AND user_id = ?",
                (user.namespace, user.id),
            )
            c.executemany(
                "INSERT OR IGNORE INTO user_identifiers (namespace, channel, identifier, user_id)"
                " VALUES (?, ?, ?, ?)",
                [(user.namespace, ch, ref, user.id) for ch, ref in user.identifiers.items()],
            )
        return user

    def get_user(self, namespace: str, user_id: str) -> MemoryUser | None:
        with self._reading() as c:
            row = c.execute(
                f"SELECT {_USER_COLS} FROM memory_users u WHERE u.namespace = ? AND u.id = ?",
                (namespace, user_id),
            ).fetchone()
        return None if row is None else user_from_row(row)

    @staticmethod
    def _user_where(namespace: str, query: str | None) -> tuple[str, list[Any]]:
        if not query:
            return "u.namespace = ?", [namespace]
        pattern = _like(query)
        return (
            "u.namespace = ? AND (u.id LIKE ? ESCAPE '\\' OR u.display_name LIKE ? ESCAPE '\\')",
            [namespace, pattern, pattern],
        )

    def list_users(
        self, namespace: str, limit: int = 100, offset: int = 0, *, query: str | None = None
    ) -> list[MemoryUser]:
        where, params = self._user_where(namespace, query)
        with self._reading() as c:
            rows = c.execute(
                f"SELECT {_USER_COLS} FROM memory_users u WHERE {where}"
                " ORDER BY u.created_at, u.id LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
        return [user_from_row(r) for r in rows]

    def count_users(self, namespace: str, *, query: str | None = None) -> int:
        where, params = self._user_where(namespace, query)
        with self._reading() as c:
            return int(
                c.execute(f"SELECT count(*) FROM memory_users u WHERE {where}", params).fetchone()[
                    0
                ]
            )

    def find_user(self, namespace: str, channel: str, identifier: str) -> MemoryUser | None:
        with self._reading() as c:
            row = c.execute(
                f"SELECT {_USER_COLS} FROM user_identifiers i JOIN memory_users u"
                " ON u.namespace = i.namespace AND u.id = i.user_id"
                " WHERE i.namespace = ? AND i.channel = ? AND i.identifier = ?"
                " ORDER BY u.merged_into IS NOT NULL, u.created_at, u.id LIMIT 1",
                (namespace, channel, identifier),
            ).fetchone()
        return None if row is None else user_from_row(row)

    def delete_users(self, namespace: str, ids: Sequence[str]) -> int:
        total = 0
        with self._tx() as c:
            for chunk in chunks(list(ids), 400):
                args = [namespace, *chunk]
                c.execute(
                    "DELETE FROM user_identifiers WHERE namespace = ?"
                    f" AND user_id IN ({qs(chunk)})",
                    args,
                )
                total += c.execute(
                    f"DELETE FROM memory_users WHERE namespace = ? AND id IN ({qs(chunk)})", args
                ).rowcount
        return total

    def reassign_user(self, namespace: str, source_id: str, target_id: str) -> int:
        """Move memories and threads of one user to another; returns how many memories."""
        with self._tx() as c:
            if self._dim is not None:
                # the vector cache keeps each row's owner: re-queue the moved vectors so the
                # next search refreshes them in place (same rowid, a newer sequence number)
                seq = self._bump(c, "vec_seq") * 1_000_000 + 1
                c.execute(
                    "UPDATE nodes SET embedded = ? WHERE namespace = ? AND user_id = ?"
                    " AND scope = 'user' AND embedded > 0",
                    (seq, namespace, source_id),
                )
            moved = c.execute(
                "UPDATE nodes SET user_id = ?,"
                " owner_tokens = CASE WHEN scope = 'user' THEN ? ELSE owner_tokens END"
                " WHERE namespace = ? AND user_id = ?",
                (target_id, owner_tokens(namespace, target_id), namespace, source_id),
            ).rowcount
            c.execute(
                "UPDATE threads SET user_id = ? WHERE namespace = ? AND user_id = ?",
                (target_id, namespace, source_id),
            )
        return int(moved)

    # ------------------------------------------------------------------ threads
    def upsert_thread(self, thread: Thread) -> Thread:
        messages = [m.model_dump(mode="json") for m in thread.messages]
        with self._tx() as c:
            c.execute(
                "INSERT OR REPLACE INTO threads (namespace, id, user_id, agent_id, messages,"
                " summary, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    thread.namespace,
                    thread.id,
                    thread.user,
                    thread.agent,
                    json.dumps(messages),
                    thread.summary,
                    ts(thread.created_at),
                    ts(thread.updated_at),
                ),
            )
        return thread

    def get_thread(self, namespace: str, thread_id: str) -> Thread | None:
        with self._reading() as c:
            row = c.execute(
                f"SELECT {_THREAD_COLS.format(messages='messages')} FROM threads"
                " WHERE namespace = ? AND id = ?",
                (namespace, thread_id),
            ).fetchone()
        return None if row is None else _thread_from_row(row)

    @staticmethod
    def _thread_where(namespace: str, user: str | None, agent: str | None) -> tuple[str, list[Any]]:
        where, params = ["namespace = ?"], [namespace]
        for column, value in (("user_id", user), ("agent_id", agent)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        return " AND ".join(where), params

    def list_threads(
        self,
        namespace: str,
        *,
        user: str | None = None,
        agent: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Thread]:
        """Newest updated first, without messages (``message_count`` says how many)."""
        where, params = self._thread_where(namespace, user, agent)
        cols = _THREAD_COLS.format(messages="json_array_length(messages)")
        with self._reading() as c:
            rows = c.execute(
                f"SELECT {cols} FROM threads WHERE {where}"
                " ORDER BY updated_at DESC, id LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
        return [_thread_from_row(r) for r in rows]

    def count_threads(
        self, namespace: str, *, user: str | None = None, agent: str | None = None
    ) -> int:
        where, params = self._thread_where(namespace, user, agent)
        with self._reading() as c:
            return int(
                c.execute(f"SELECT count(*) FROM threads WHERE {where}", params).fetchone()[0]
            )

    def delete_threads(self, namespace: str, ids: Sequence[str]) -> int:
        total = 0
        with self._tx() as c:
            for chunk in chunks(list(ids), 400):
                total += c.execute(
                    f"DELETE FROM threads WHERE namespace = ? AND id IN ({qs(chunk)})",
                    [namespace, *chunk],
                ).rowcount
        return total

    # ------------------------------------------------------------------ entities
    def _entity_row(self, entity: Entity) -> list[Any]:
        return [
            entity.namespace,
            entity.canonical_name,
            entity.type.value,
            json.dumps(entity.aliases),
            entity.summary,
            ts(entity.first_seen),
            ts(entity.last_seen),
            entity.mention_count,
            json.dumps(entity.attributes, sort_keys=True),
            entity.id,
        ]

    def _index_names(self, c: Any, entity: Entity) -> None:
        c.execute("DELETE FROM entity_names WHERE entity_id = ?", (entity.id,))
        names = lookup_names([entity.canonical_name, *entity.aliases])
        c.executemany(
            "INSERT INTO entity_names (namespace, name_norm, entity_id) VALUES (?, ?, ?)",
            [(entity.namespace, n, entity.id) for n in names],
        )

    def insert_entity(self, entity: Entity) -> Entity:
        """Store a new entity; its id is replaced if another entity already has it."""
        with self._tx() as c:
            for _ in range(8):
                try:
                    c.execute(
                        "INSERT INTO entities (namespace, canonical_name, type, aliases, summary,"
                        " first_seen, last_seen, mention_count, attributes, id)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        self._entity_row(entity),
                    )
                    break
                except IntegrityError:
                    entity = entity.model_copy(update={"id": short_id()})
            else:  # pragma: no cover - 62^8 ids
                raise ConflictError("could not allocate a unique entity id")
            self._index_names(c, entity)
        return entity

    def update_entity(self, entity: Entity) -> Entity:
        with self._tx() as c:
            cur = c.execute(
                "UPDATE entities SET namespace = ?, canonical_name = ?, type = ?, aliases = ?,"
                " summary = ?, first_seen = ?, last_seen = ?, mention_count = ?, attributes = ?"
                " WHERE id = ? AND namespace = ?",
                [*self._entity_row(entity), entity.namespace],
            )
            if cur.rowcount != 1:
                raise NotFoundError(f"no entity {entity.id!r} in namespace {entity.namespace!r}")
            self._index_names(c, entity)
        return entity

    def _entities(self, sql: str, params: Sequence[Any]) -> list[Entity]:
        with self._reading() as c:
            rows = c.execute(sql, list(params)).fetchall()
        return [_entity_from_row(r) for r in rows]

    def get_entity(self, namespace: str, entity_id: str) -> Entity | None:
        found = self._entities(
            f"SELECT {_ENTITY_COLS} FROM entities e WHERE e.id = ? AND e.namespace = ?",
            [entity_id, namespace],
        )
        return found[0] if found else None

    def find_entity(self, namespace: str, name: str) -> Entity | None:
        """By canonical name or alias, case-insensitive; a canonical match wins, then the
        most mentioned entity."""
        norm = name_norm(name)
        found = self._entities(
            f"SELECT {_ENTITY_COLS} FROM entity_names x JOIN entities e ON e.id = x.entity_id"
            " WHERE x.namespace = ? AND x.name_norm IN (?, ?)"
            " ORDER BY e.mention_count DESC, e.id",
            [namespace, norm, unaccented(norm)],
        )
        found.sort(key=lambda e: name_norm(e.canonical_name) != norm)
        return found[0] if found else None

    @staticmethod
    def _entity_where(namespace: str, type: str | None, query: str | None) -> tuple[str, list[Any]]:
        where, params = ["e.namespace = ?"], [namespace]
        if type is not None:
            where.append("e.type = ?")
            params.append(type)
        if query:
            where.append(
                "EXISTS (SELECT 1 FROM entity_names x WHERE x.entity_id = e.id"
                " AND x.name_norm LIKE ? ESCAPE '\\')"
            )
            params.append(_like(name_norm(query)))
        return " AND ".join(where), params

    def list_entities(
        self,
        namespace: str,
        *,
        type: str | None = None,
        query: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Entity]:
        """Most mentioned first; ``query`` matches names and aliases (case-insensitive)."""
        where, params = self._entity_where(namespace, type, query)
        return self._entities(
            f"SELECT {_ENTITY_COLS} FROM entities e WHERE {where}"
            " ORDER BY e.mention_count DESC, e.canonical_name COLLATE NOCASE, e.id"
            " LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )

    def count_entities(
        self, namespace: str, *, type: str | None = None, query: str | None = None
    ) -> int:
        where, params = self._entity_where(namespace, type, query)
        with self._reading() as c:
            return int(
                c.execute(f"SELECT count(*) FROM entities e WHERE {where}", params).fetchone()[0]
            )

    def delete_entities(self, namespace: str, ids: Sequence[str]) -> int:
        total = 0
        with self._tx() as c:
            for chunk in chunks(list(ids), 400):
                mine = [
                    r[0]
                    for r in c.execute(
                        f"SELECT id FROM entities WHERE namespace = ? AND id IN ({qs(chunk)})",
                        [namespace, *chunk],
                    )
                ]
                if not mine:
                    continue
                q = qs(mine)
                c.execute(f"DELETE FROM node_entities WHERE entity_id IN ({q})", mine)
                c.execute(f"DELETE FROM entity_names WHERE entity_id IN ({q})", mine)
                total += c.execute(f"DELETE FROM entities WHERE id IN ({q})", mine).rowcount
        return total

    def link_entities(self, namespace: str, node_id: str, entity_ids: Sequence[str]) -> int:
        """Link a memory to entities of its namespace; returns how many links are new."""
        ids = list(dict.fromkeys(entity_ids))
        with self._tx() as c:
            if (
                c.execute(
                    "SELECT 1 FROM nodes WHERE +namespace = ? AND id = ?", (namespace, node_id)
                ).fetchone()
                is None
            ):
                raise NotFoundError(f"no memory {node_id!r} in namespace {namespace!r}")
            known = {
                r[0]
                for r in c.execute(
                    f"SELECT id FROM entities WHERE namespace = ? AND id IN ({qs(ids)})",
                    [namespace, *ids],
                )
            }
            missing = [i for i in ids if i not in known]
            if missing:
                raise NotFoundError(f"no entity {missing[0]!r} in namespace {namespace!r}")
            return int(
                c.executemany(
                    "INSERT OR IGNORE INTO node_entities (node_id, entity_id) VALUES (?, ?)",
                    [(node_id, i) for i in ids],
                ).rowcount
            )

    def node_entities(self, namespace: str, node_ids: Sequence[str]) -> dict[str, list[Entity]]:
        """The entities each memory mentions (most mentioned first)."""
        out: dict[str, list[Entity]] = {i: [] for i in node_ids}
        with self._reading() as c:
            for chunk in chunks(list(node_ids), 400):
                for row in c.execute(
                    f"SELECT ne.node_id, {_ENTITY_COLS} FROM node_entities ne"
                    " JOIN entities e ON e.id = ne.entity_id"
                    f" WHERE ne.node_id IN ({qs(chunk)}) AND e.namespace = ?"
                    " ORDER BY e.mention_count DESC, e.canonical_name COLLATE NOCASE, e.id",
                    [*chunk, namespace],
                ):
                    out[row[0]].append(_entity_from_row(row[1:]))
        return out

    def linked_nodes(
        self, flt: NodeFilter, node_ids: Sequence[str], entity_ids: Sequence[str]
    ) -> dict[str, set[str]]:
        if not node_ids or not entity_ids:
            return {}
        where, params = filter_sql(flt)
        found: dict[str, set[str]] = {}
        with self._reading() as c:
            for chunk in chunks(list(node_ids), 400):
                for node_id, entity_id in c.execute(
                    "SELECT ne.node_id, ne.entity_id FROM node_entities ne"
                    " CROSS JOIN nodes n ON n.id = ne.node_id"  # the listed memories first
                    # by the memories' keys: an entity may have thousands of links
                    f" WHERE ne.node_id IN ({qs(chunk)}) AND +ne.entity_id IN"
                    f" ({qs(list(entity_ids))}) AND {where}",
                    [*chunk, *entity_ids, *params],
                ):
                    found.setdefault(node_id, set()).add(entity_id)
        return found

    def entity_nodes(self, flt: NodeFilter, entity_id: str, *, limit: int = 20) -> list[MemoryNode]:
        """Memories (visible through ``flt``) linked to an entity, newest first, among
        its last :data:`~memloci.storage.base.NEWEST_LINKED` links (bounded work for a
        speaker linked to every turn they said: the context block asks on every call).
        When ``flt`` names types that have few memories (the facts of a conversation
        store), those are read instead, each checked for the link: exact and cheaper."""
        where, params = filter_sql(flt)
        with self._reading() as c:
            if flt.types:
                types = [t.value for t in flt.types]
                few = (
                    c.execute(
                        "SELECT count(*) FROM (SELECT 1 FROM nodes n INDEXED BY nodes_ns_type"
                        f" WHERE n.namespace IN ({qs(flt.namespaces)}) AND n.type IN ({qs(types)})"
                        " LIMIT ?)",
                        [*flt.namespaces, *types, NEWEST_LINKED + 1],
                    ).fetchone()[0]
                    <= NEWEST_LINKED
                )
                if few:
                    rows = c.execute(
                        f"SELECT {_NODE_COLS} FROM nodes n WHERE {where} AND EXISTS"
                        " (SELECT 1 FROM node_entities ne WHERE ne.node_id = n.id"
                        " AND ne.entity_id = ?) ORDER BY n.created_at DESC, n.rowid DESC"
                        " LIMIT ?",
                        [*params, entity_id, limit],
                    ).fetchall()
                    return [node_from_row(r) for r in rows]
            rows = c.execute(
                f"SELECT {_NODE_COLS} FROM (SELECT node_id FROM node_entities"
                " WHERE entity_id = ? ORDER BY rowid DESC LIMIT ?) ne"
                f" CROSS JOIN nodes n ON n.id = ne.node_id WHERE {where}"
                " ORDER BY n.created_at DESC, n.rowid DESC LIMIT ?",
                [entity_id, NEWEST_LINKED, *params, limit],
            ).fetchall()
        return [node_from_row(r) for r in rows]

    def entity_links_seen(
        self, flt: NodeFilter, entity_id: str, *, limit: int = 200
    ) -> list[tuple[str, bool]]:
        where, params = filter_sql(flt)
        with self._reading() as c:
            rows = c.execute(
                f"SELECT n.id, CASE WHEN {where} THEN 1 ELSE 0 END FROM (SELECT node_id"
                " FROM node_entities WHERE entity_id = ? ORDER BY rowid DESC LIMIT ?) ne"
                f" CROSS JOIN nodes n ON n.id = ne.node_id WHERE n.namespace IN"
                f" ({qs(flt.namespaces)}) ORDER BY n.created_at DESC, n.rowid DESC",
                [*params, entity_id, limit, *flt.namespaces],
            ).fetchall()
        return [(str(i), bool(seen)) for i, seen in rows]

    def related_entities(
        self, flt: NodeFilter, entity_id: str, *, limit: int = 20
    ) -> list[tuple[Entity, int]]:
        """Entities linked to the same memories (visible through ``flt``), by how many."""
        where, params = filter_sql(flt)
        with self._reading() as c:
            rows = c.execute(
                f"SELECT {_ENTITY_COLS}, count(*) AS shared FROM node_entities me"
                " JOIN nodes n ON n.id = me.node_id"
                " JOIN node_entities other ON other.node_id = me.node_id"
                " AND other.entity_id <> me.entity_id"
                " JOIN entities e ON e.id = other.entity_id AND e.namespace = n.namespace"
                f" WHERE me.entity_id = ? AND {where} GROUP BY e.id"
                " ORDER BY shared DESC, e.mention_count DESC, e.id LIMIT ?",
                [entity_id, *params, limit],
            ).fetchall()
        return [(_entity_from_row(r[:-1]), int(r[-1])) for r in rows]

    # ------------------------------------------------------------------ API keys
    def insert_key(self, key: ApiKey, key_hash: str) -> None:
        try:
            with self._tx() as c:
                c.execute(
                    f"INSERT INTO api_keys ({_KEY_COLS}, key_hash)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        key.id,
                        key.name,
                        json.dumps(key.namespaces),
                        int(key.can_write),
                        int(key.admin),
                        ts(key.created_at),
                        ts(key.revoked_at),
                        ts(key.last_used_at),
                        key_hash,
                    ),
                )
        except IntegrityError as exc:
            raise ConflictError(f"an API key with id {key.id!r} exists") from exc

    def get_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key and the stored sha256 hex of its secret."""
        with self._reading() as c:
            row = c.execute(
                f"SELECT {_KEY_COLS}, key_hash FROM api_keys WHERE id = ?", (key_id,)
            ).fetchone()
        return None if row is None else (_key_from_row(row[:-1]), str(row[-1]))

    def list_keys(self, *, include_revoked: bool = False) -> list[ApiKey]:
        where = "" if include_revoked else " WHERE revoked_at IS NULL"
        with self._reading() as c:
            rows = c.execute(
                f"SELECT {_KEY_COLS} FROM api_keys{where} ORDER BY created_at, id"
            ).fetchall()
        return [_key_from_row(r) for r in rows]

    def revoke_key(self, key_id: str, *, now: datetime) -> ApiKey:
        """Revoke a key (revoking twice keeps the first time)."""
        with self._tx() as c:
            cur = c.execute(
                "UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?",
                (ts(now), key_id),
            )
            if cur.rowcount != 1:
                raise NotFoundError(f"no API key {key_id!r}", hint="list keys to see their ids")
        found = self.get_key(key_id)
        assert found is not None
        return found[0]

    def touch_key(self, key_id: str, *, now: datetime) -> None:
        with self._tx() as c:
            c.execute("UPDATE api_keys SET last_used_at = ? WHERE id = ?", (ts(now), key_id))

    def has_keys(self) -> bool:
        """Whether any key is active (not revoked)."""
        with self._reading() as c:
            return (
                c.execute("SELECT 1 FROM api_keys WHERE revoked_at IS NULL").fetchone() is not None
            )


def _entity_from_row(row: Any) -> Entity:
    eid, ns, name, etype, aliases, summary, first, last, mentions, attributes = row
    return Entity(
        id=eid, namespace=ns, canonical_name=name, type=etype,
        aliases=stored_json("aliases", aliases, f"entity {eid}", []),
        summary=summary, first_seen=dt(first), last_seen=dt(last), mention_count=mentions,
        attributes=stored_json("attributes", attributes, f"entity {eid}", {}),
    )  # fmt: skip


def _thread_from_row(row: Any) -> Thread:
    """A thread; the fifth column holds the messages (JSON) or, in listings, their count."""
    ns, tid, user, agent, messages, summary, created, updated = row
    listed = isinstance(messages, int)
    return Thread(
        namespace=ns, id=tid, user=user, agent=agent,
        messages=[] if listed else json.loads(messages),
        message_count=messages if listed else 0,
        summary=summary, created_at=dt(created), updated_at=dt(updated),
    )  # fmt: skip


def _key_from_row(row: Any) -> ApiKey:
    kid, name, namespaces, can_write, admin, created, revoked, used = row
    return ApiKey(
        id=kid, name=name, namespaces=json.loads(namespaces), can_write=bool(can_write),
        admin=bool(admin), created_at=dt(created), revoked_at=dt(revoked), last_used_at=dt(used),
    )  # fmt: skip
