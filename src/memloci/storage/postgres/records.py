"""PostgreSQL records (layer: storage): memory users, threads, entities and API keys.

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
from memloci.storage.postgres.base import PostgresBase
from memloci.storage.rows import (
    NODE_COLUMNS,
    USER_ACTIVITY,
    dt,
    node_from_row,
    owner_tokens,
    user_from_row,
)
from memloci.storage.sqlfilter import filter_sql, ts

# node columns as the shared row conversion reads them (JSON as text, like SQLite)
NODE_COLS = ", ".join(
    f"n.{c}::text" if c in ("value", "metadata", "details") else f"n.{c}" for c in NODE_COLUMNS
)
_USER_COLS = (
    "u.namespace, u.id, u.display_name, u.identifiers::text, u.preferences::text, "
    + USER_ACTIVITY
    + ", u.merged_into, u.created_at"
)
_THREAD_COLS = "namespace, id, user_id, agent_id, {messages}, summary, created_at, updated_at"
ENTITY_COLS = (
    "e.id, e.namespace, e.canonical_name, e.type, e.aliases::text, e.summary, e.first_seen,"
    " e.last_seen, e.mention_count, e.attributes::text"
)
_KEY_COLS = "id, name, namespaces::text, can_write, admin, created_at, revoked_at, last_used_at"


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class PostgresRecords(PostgresBase):
    """Users, threads, entities (with node links) and API keys on PostgreSQL."""

    # ------------------------------------------------------------------ users
    def upsert_user(self, user: MemoryUser) -> MemoryUser:
        with self._tx() as c:
            c.execute(
                "INSERT INTO memory_users (namespace, id, display_name, identifiers,"
                " preferences, conversation_count, last_seen, merged_into, created_at)"
                " VALUES (%s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s, %s)"
                " ON CONFLICT (namespace, id) DO UPDATE SET display_name = excluded.display_name,"
                " identifiers = excluded.identifiers, preferences = excluded.preferences,"
                " conversation_count = excluded.conversation_count,"
                " last_seen = excluded.last_seen, merged_into = excluded.merged_into,"
                " created_at = excluded.created_at",
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
                "DELETE FROM user_identifiers WHERE namespace = %s AND user_id = %s",
                (user.namespace, user.id),
            )
            c.cursor().executemany(
                "INSERT INTO user_identifiers (namespace, channel, identifier, user_id)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                [(user.namespace, ch, str(ref), user.id) for ch, ref in user.identifiers.items()],
            )
        return user

    def get_user(self, namespace: str, user_id: str) -> MemoryUser | None:
        with self._reading() as c:
            row = c.execute(
                f"SELECT {_USER_COLS} FROM memory_users u WHERE u.namespace = %s AND u.id = %s",
                (namespace, user_id),
            ).fetchone()
        return None if row is None else user_from_row(row)

    @staticmethod
    def _user_where(namespace: str, query: str | None) -> tuple[str, list[Any]]:
        if not query:
            return "u.namespace = %s", [namespace]
        pattern = _like(query)
        return (
            "u.namespace = %s AND (u.id ILIKE %s OR u.display_name ILIKE %s)",
            [namespace, pattern, pattern],
        )

    def list_users(
        self, namespace: str, limit: int = 100, offset: int = 0, *, query: str | None = None
    ) -> list[MemoryUser]:
        where, params = self._user_where(namespace, query)
        with self._reading() as c:
            rows = c.execute(
                f"SELECT {_USER_COLS} FROM memory_users u WHERE {where}"
                " ORDER BY u.created_at, u.id LIMIT %s OFFSET %s",
                [*params, limit, offset],
            ).fetchall()
        return [user_from_row(r) for r in rows]

    def count_users(self, namespace: str, *, query: str | None = None) -> int:
        where, params = self._user_where(namespace, query)
        with self._reading() as c:
            row = c.execute(f"SELECT count(*) FROM memory_users u WHERE {where}", params)
            return int(row.fetchone()[0])

    def find_user(self, namespace: str, channel: str, identifier: str) -> MemoryUser | None:
        with self._reading() as c:
            row = c.execute(
                f"SELECT {_USER_COLS} FROM user_identifiers i JOIN memory_users u"
                " ON u.namespace = i.namespace AND u.id = i.user_id"
                " WHERE i.namespace = %s AND i.channel = %s AND i.identifier = %s"
                " ORDER BY u.merged_into IS NOT NULL, u.created_at, u.id LIMIT 1",
                (namespace, channel, identifier),
            ).fetchone()
        return None if row is None else user_from_row(row)

    def delete_users(self, namespace: str, ids: Sequence[str]) -> int:
        with self._tx() as c:
            c.execute(
                "DELETE FROM user_identifiers WHERE namespace = %s AND user_id = ANY(%s)",
                (namespace, list(ids)),
            )
            return int(
                c.execute(
                    "DELETE FROM memory_users WHERE namespace = %s AND id = ANY(%s)",
                    (namespace, list(ids)),
                ).rowcount
            )

    def reassign_user(self, namespace: str, source_id: str, target_id: str) -> int:
        """Move memories and threads of one user to another; returns how many memories."""
        with self._tx() as c:
            moved = c.execute(
                "UPDATE nodes SET user_id = %s,"
                " owner_tokens = CASE WHEN scope = 'user' THEN %s ELSE owner_tokens END"
                " WHERE namespace = %s AND user_id = %s",
                (target_id, owner_tokens(namespace, target_id), namespace, source_id),
            ).rowcount
            c.execute(
                "UPDATE threads SET user_id = %s WHERE namespace = %s AND user_id = %s",
                (target_id, namespace, source_id),
            )
        return int(moved)

    # ------------------------------------------------------------------ threads
    def upsert_thread(self, thread: Thread) -> Thread:
        messages = [m.model_dump(mode="json") for m in thread.messages]
        with self._tx() as c:
            c.execute(
                "INSERT INTO threads (namespace, id, user_id, agent_id, messages, summary,"
                " created_at, updated_at) VALUES (%s, %s, %s, %s, %s::jsonb, %s, %s, %s)"
                " ON CONFLICT (namespace, id) DO UPDATE SET user_id = excluded.user_id,"
                " agent_id = excluded.agent_id, messages = excluded.messages,"
                " summary = excluded.summary, created_at = excluded.created_at,"
                " updated_at = excluded.updated_at",
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
                f"SELECT {_THREAD_COLS.format(messages='messages::text')} FROM threads"
                " WHERE namespace = %s AND id = %s",
                (namespace, thread_id),
            ).fetchone()
        return None if row is None else _thread_from_row(row)

    @staticmethod
    def _thread_where(namespace: str, user: str | None, agent: str | None) -> tuple[str, list[Any]]:
        where, params = ["namespace = %s"], [namespace]
        for column, value in (("user_id", user), ("agent_id", agent)):
            if value is not None:
                where.append(f"{column} = %s")
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
        cols = _THREAD_COLS.format(messages="jsonb_array_length(messages)")
        with self._reading() as c:
            rows = c.execute(
                f"SELECT {cols} FROM threads WHERE {where}"
                " ORDER BY updated_at DESC, id LIMIT %s OFFSET %s",
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
        with self._tx() as c:
            return int(
                c.execute(
                    "DELETE FROM threads WHERE namespace = %s AND id = ANY(%s)",
                    (namespace, list(ids)),
                ).rowcount
            )

    # ------------------------------------------------------------------ entities
    @staticmethod
    def _entity_row(entity: Entity) -> list[Any]:
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

    @staticmethod
    def _index_names(c: Any, entity: Entity) -> None:
        c.execute("DELETE FROM entity_names WHERE entity_id = %s", (entity.id,))
        names = lookup_names([entity.canonical_name, *entity.aliases])
        c.cursor().executemany(
            "INSERT INTO entity_names (namespace, name_norm, entity_id) VALUES (%s, %s, %s)"
            " ON CONFLICT DO NOTHING",
            [(entity.namespace, n, entity.id) for n in names],
        )

    def insert_entity(self, entity: Entity) -> Entity:
        """Store a new entity; its id is replaced if another entity already has it."""
        with self._tx() as c:
            for _ in range(8):
                done = c.execute(
                    "INSERT INTO entities (namespace, canonical_name, type, aliases, summary,"
                    " first_seen, last_seen, mention_count, attributes, id)"
                    " VALUES (%s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s::jsonb, %s)"
                    " ON CONFLICT (id) DO NOTHING RETURNING id",
                    self._entity_row(entity),
                ).fetchone()
                if done is not None:
                    break
                entity = entity.model_copy(update={"id": short_id()})
            else:  # pragma: no cover - 62^8 ids
                raise ConflictError("could not allocate a unique entity id")
            self._index_names(c, entity)
        return entity

    def update_entity(self, entity: Entity) -> Entity:
        with self._tx() as c:
            cur = c.execute(
                "UPDATE entities SET namespace = %s, canonical_name = %s, type = %s,"
                " aliases = %s::jsonb, summary = %s, first_seen = %s, last_seen = %s,"
                " mention_count = %s, attributes = %s::jsonb WHERE id = %s AND namespace = %s",
                [*self._entity_row(entity), entity.namespace],
            )
            if cur.rowcount != 1:
                raise NotFoundError(f"no entity {entity.id!r} in namespace {entity.namespace!r}")
            self._index_names(c, entity)
        return entity

    def _entities(self, sql: str, params: Sequence[Any]) -> list[Entity]:
        with self._reading() as c:
            rows = c.execute(sql, list(params)).fetchall()
        return [entity_from_row(r) for r in rows]

    def get_entity(self, namespace: str, entity_id: str) -> Entity | None:
        found = self._entities(
            f"SELECT {ENTITY_COLS} FROM entities e WHERE e.id = %s AND e.namespace = %s",
            [entity_id, namespace],
        )
        return found[0] if found else None

    def find_entity(self, namespace: str, name: str) -> Entity | None:
        """By canonical name or alias, case-insensitive; a canonical match wins, then the
        most mentioned entity."""
        norm = name_norm(name)
        found = self._entities(
            f"SELECT {ENTITY_COLS} FROM entity_names x JOIN entities e ON e.id = x.entity_id"
            " WHERE x.namespace = %s AND x.name_norm IN (%s, %s)"
            " ORDER BY e.mention_count DESC, e.id",
            [namespace, norm, unaccented(norm)],
        )
        found.sort(key=lambda e: name_norm(e.canonical_name) != norm)
        return found[0] if found else None

    @staticmethod
    def _entity_where(namespace: str, type: str | None, query: str | None) -> tuple[str, list[Any]]:
        where, params = ["e.namespace = %s"], [namespace]
        if type is not None:
            where.append("e.type = %s")
            params.append(type)
        if query:
            where.append(
                "EXISTS (SELECT 1 FROM entity_names x WHERE x.entity_id = e.id"
                " AND x.name_norm LIKE %s)"
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
            f"SELECT {ENTITY_COLS} FROM entities e WHERE {where}"
            " ORDER BY e.mention_count DESC, lower(e.canonical_name), e.id LIMIT %s OFFSET %s",
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
        with self._tx() as c:
            mine = [
                r[0]
                for r in c.execute(
                    "SELECT id FROM entities WHERE namespace = %s AND id = ANY(%s)",
                    (namespace, list(ids)),
                )
            ]
            if not mine:
                return 0
            c.execute("DELETE FROM node_entities WHERE entity_id = ANY(%s)", (mine,))
            c.execute("DELETE FROM entity_names WHERE entity_id = ANY(%s)", (mine,))
            return int(c.execute("DELETE FROM entities WHERE id = ANY(%s)", (mine,)).rowcount)

    def link_entities(self, namespace: str, node_id: str, entity_ids: Sequence[str]) -> int:
        """Link a memory to entities of its namespace; returns how many links are new."""
        ids = list(dict.fromkeys(entity_ids))
        with self._tx() as c:
            found = c.execute(
                "SELECT 1 FROM nodes WHERE namespace = %s AND id = %s", (namespace, node_id)
            ).fetchone()
            if found is None:
                raise NotFoundError(f"no memory {node_id!r} in namespace {namespace!r}")
            known = {
                r[0]
                for r in c.execute(
                    "SELECT id FROM entities WHERE namespace = %s AND id = ANY(%s)",
                    (namespace, ids),
                )
            }
            missing = [i for i in ids if i not in known]
            if missing:
                raise NotFoundError(f"no entity {missing[0]!r} in namespace {namespace!r}")
            if not ids:
                return 0
            return int(
                c.execute(
                    "INSERT INTO node_entities (node_id, entity_id)"
                    " SELECT %s, unnest(%s::text[]) ON CONFLICT DO NOTHING",
                    (node_id, ids),
                ).rowcount
            )

    def node_entities(self, namespace: str, node_ids: Sequence[str]) -> dict[str, list[Entity]]:
        """The entities each memory mentions (most mentioned first)."""
        out: dict[str, list[Entity]] = {i: [] for i in node_ids}
        if not node_ids:
            return out
        with self._reading() as c:
            for row in c.execute(
                f"SELECT ne.node_id, {ENTITY_COLS} FROM node_entities ne"
                " JOIN entities e ON e.id = ne.entity_id"
                " WHERE ne.node_id = ANY(%s) AND e.namespace = %s"
                " ORDER BY e.mention_count DESC, lower(e.canonical_name), e.id",
                (list(node_ids), namespace),
            ).fetchall():
                out[row[0]].append(entity_from_row(row[1:]))
        return out

    def linked_nodes(
        self, flt: NodeFilter, node_ids: Sequence[str], entity_ids: Sequence[str]
    ) -> dict[str, set[str]]:
        if not node_ids or not entity_ids:
            return {}
        where, params = filter_sql(flt, ph="%s")
        with self._reading() as c:
            rows = c.execute(
                "SELECT ne.node_id, ne.entity_id FROM node_entities ne"
                " JOIN nodes n ON n.id = ne.node_id"
                f" WHERE ne.node_id = ANY(%s) AND ne.entity_id = ANY(%s) AND {where}",
                [list(node_ids), list(entity_ids), *params],
            ).fetchall()
        found: dict[str, set[str]] = {}
        for node_id, entity_id in rows:
            found.setdefault(node_id, set()).add(entity_id)
        return found

    def entity_nodes(self, flt: NodeFilter, entity_id: str, *, limit: int = 20) -> list[MemoryNode]:
        """Memories (visible through ``flt``) linked to an entity, newest first, among
        its last :data:`~memloci.storage.base.NEWEST_LINKED` links (by when the memory
        was stored); types with few memories (facts) are read whole, as on SQLite."""
        where, params = filter_sql(flt, ph="%s")
        with self._reading() as c:
            if flt.types:  # few memories of these types (facts): read them, exact
                types = [t.value for t in flt.types]
                few = (
                    c.execute(
                        "SELECT count(*) FROM (SELECT 1 FROM nodes n WHERE n.namespace = ANY(%s)"
                        " AND n.type = ANY(%s) LIMIT %s) typed",
                        [list(flt.namespaces), types, NEWEST_LINKED + 1],
                    ).fetchone()[0]
                    <= NEWEST_LINKED
                )
                if few:
                    rows = c.execute(
                        f"SELECT {NODE_COLS} FROM nodes n WHERE {where} AND EXISTS"
                        " (SELECT 1 FROM node_entities ne WHERE ne.node_id = n.id"
                        " AND ne.entity_id = %s) ORDER BY n.created_at DESC, n.seq DESC"
                        " LIMIT %s",
                        [*params, entity_id, limit],
                    ).fetchall()
                    return [node_from_row(r) for r in rows]
            rows = c.execute(
                f"SELECT {NODE_COLS} FROM (SELECT ne.node_id FROM node_entities ne"
                " JOIN nodes m ON m.id = ne.node_id WHERE ne.entity_id = %s"
                " ORDER BY m.seq DESC LIMIT %s) last JOIN nodes n ON n.id = last.node_id"
                f" WHERE {where} ORDER BY n.created_at DESC, n.seq DESC LIMIT %s",
                [entity_id, NEWEST_LINKED, *params, limit],
            ).fetchall()
        return [node_from_row(r) for r in rows]

    def entity_links_seen(
        self, flt: NodeFilter, entity_id: str, *, limit: int = 200
    ) -> list[tuple[str, bool]]:
        where, params = filter_sql(flt, ph="%s")
        with self._reading() as c:
            rows = c.execute(
                f"SELECT n.id, ({where}) FROM (SELECT ne.node_id FROM node_entities ne"
                " JOIN nodes m ON m.id = ne.node_id WHERE ne.entity_id = %s"
                " ORDER BY m.seq DESC LIMIT %s) last JOIN nodes n ON n.id = last.node_id"
                " WHERE n.namespace = ANY(%s) ORDER BY n.created_at DESC, n.seq DESC",
                [*params, entity_id, limit, list(flt.namespaces)],
            ).fetchall()
        return [(str(i), bool(seen)) for i, seen in rows]

    def related_entities(
        self, flt: NodeFilter, entity_id: str, *, limit: int = 20
    ) -> list[tuple[Entity, int]]:
        """Entities linked to the same memories (visible through ``flt``), by how many."""
        where, params = filter_sql(flt, ph="%s")
        with self._reading() as c:
            rows = c.execute(
                f"SELECT {ENTITY_COLS}, count(*) AS shared FROM node_entities me"
                " JOIN nodes n ON n.id = me.node_id"
                " JOIN node_entities other ON other.node_id = me.node_id"
                " AND other.entity_id <> me.entity_id"
                " JOIN entities e ON e.id = other.entity_id AND e.namespace = n.namespace"
                f" WHERE me.entity_id = %s AND {where} GROUP BY e.id"
                " ORDER BY shared DESC, e.mention_count DESC, e.id LIMIT %s",
                [entity_id, *params, limit],
            ).fetchall()
        return [(entity_from_row(r[:-1]), int(r[-1])) for r in rows]

    # ------------------------------------------------------------------ API keys
    def insert_key(self, key: ApiKey, key_hash: str) -> None:
        with self._tx() as c:
            done = c.execute(
                f"INSERT INTO api_keys ({_KEY_COLS.replace('::text', '')}, key_hash)"
                " VALUES (%s, %s, %s::jsonb, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (id) DO NOTHING RETURNING id",
                (
                    key.id,
                    key.name,
                    json.dumps(key.namespaces),
                    key.can_write,
                    key.admin,
                    ts(key.created_at),
                    ts(key.revoked_at),
                    ts(key.last_used_at),
                    key_hash,
                ),
            ).fetchone()
        if done is None:
            raise ConflictError(f"an API key with id {key.id!r} exists")

    def get_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key and the stored sha256 hex of its secret."""
        with self._reading() as c:
            row = c.execute(
                f"SELECT {_KEY_COLS}, key_hash FROM api_keys WHERE id = %s", (key_id,)
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
            row = c.execute(
                "UPDATE api_keys SET revoked_at = coalesce(revoked_at, %s) WHERE id = %s"
                f" RETURNING {_KEY_COLS}",
                (ts(now), key_id),
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no API key {key_id!r}", hint="list keys to see their ids")
        return _key_from_row(row)

    def touch_key(self, key_id: str, *, now: datetime) -> None:
        with self._tx() as c:
            c.execute("UPDATE api_keys SET last_used_at = %s WHERE id = %s", (ts(now), key_id))

    def has_keys(self) -> bool:
        """Whether any key is active (not revoked)."""
        with self._reading() as c:
            row = c.execute("SELECT 1 FROM api_keys WHERE revoked_at IS NULL LIMIT 1").fetchone()
        return row is not None


def entity_from_row(row: Any) -> Entity:
    eid, ns, name, etype, aliases, summary, first, last, mentions, attributes = row
    return Entity(
        id=eid, namespace=ns, canonical_name=name, type=etype, aliases=json.loads(aliases),
        summary=summary, first_seen=dt(first), last_seen=dt(last), mention_count=mentions,
        attributes=json.loads(attributes or "{}"),
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
