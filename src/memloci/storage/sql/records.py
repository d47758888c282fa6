"""Memory users, threads, entities and API keys (layer: storage), on either SQL backend.

Lookup tables kept here, next to the rows they copy: ``user_identifiers`` (channel ids
of users) and ``entity_names`` (case-folded names and aliases of entities). The reads
of an entity's links whose plans each backend tunes (``linked_nodes``,
``entity_nodes``, ``entity_links_seen``) and the insert of links stay with the backend.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar

from memloci.errors import ConflictError, NotFoundError
from memloci.models import ApiKey, Entity, MemoryNode, MemoryUser, Thread, short_id
from memloci.storage.base import NEWEST_LINKED, NodeFilter
from memloci.storage.names import lookup_names, name_norm, unaccented
from memloci.storage.rows import dt, node_from_row, owner_tokens, stored_json, user_from_row
from memloci.storage.sql.core import DB, SQLDatabase, SQLSlice, require_node
from memloci.storage.sql.dialect import Dialect
from memloci.storage.sqlfilter import filter_sql, ts

_USER_COLUMNS = (
    "namespace",
    "id",
    "display_name",
    "identifiers",
    "preferences",
    "conversation_count",
    "last_seen",
    "merged_into",
    "created_at",
)
_THREAD_COLUMNS = (
    "namespace",
    "id",
    "user_id",
    "agent_id",
    "messages",
    "summary",
    "created_at",
    "updated_at",
)
_KEYS = ("namespace", "id")
_KEY_COLUMNS = (
    "id, name, namespaces, can_write, admin, created_at, revoked_at, last_used_at, key_hash"
)


def like(text: str) -> str:
    """A ``LIKE`` pattern (``\\`` escapes) matching ``text`` anywhere."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def count(db: SQLDatabase, sql: str, params: Sequence[Any]) -> int:
    """The one number a ``SELECT count(*)`` reads."""
    return int(db.select_one(sql, list(params))[0])


def user_where(d: Dialect, namespace: str, query: str | None) -> tuple[str, list[Any]]:
    """The users of ``namespace`` whose id or name holds ``query`` (all: None)."""
    if not query:
        return "u.namespace = ?", [namespace]
    match = d.ilike
    return (
        f"u.namespace = ? AND (u.id {match} OR u.display_name {match})",
        [namespace, like(query), like(query)],
    )


def thread_where(namespace: str, user: str | None, agent: str | None) -> tuple[str, list[Any]]:
    where, params = ["namespace = ?"], [namespace]
    for column, value in (("user_id", user), ("agent_id", agent)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    return " AND ".join(where), params


def entity_where(
    d: Dialect, namespace: str, type: str | None, query: str | None
) -> tuple[str, list[Any]]:
    where, params = ["e.namespace = ?"], [namespace]
    if type is not None:
        where.append("e.type = ?")
        params.append(type)
    if query:
        where.append(
            "EXISTS (SELECT 1 FROM entity_names x WHERE x.entity_id = e.id"
            f" AND x.name_norm {d.like})"
        )
        params.append(like(name_norm(query)))
    return " AND ".join(where), params


class SQLPeople(SQLSlice[DB]):
    """Memory users, conversation threads and API keys."""

    # ------------------------------------------------------------------ users
    def upsert_user(self, user: MemoryUser) -> MemoryUser:
        d = self.db.dialect
        with self.db.tx() as c:
            c.execute(
                d.q(
                    d.upsert(
                        "memory_users", _USER_COLUMNS, _KEYS, json=["identifiers", "preferences"]
                    )
                ),
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
                d.q("DELETE FROM user_identifiers WHERE namespace = ? AND user_id = ?"),
                (user.namespace, user.id),
            )
            d.many(
                c,
                d.insert_ignore(
                    "user_identifiers", ("namespace", "channel", "identifier", "user_id")
                ),
                [(user.namespace, ch, str(ref), user.id) for ch, ref in user.identifiers.items()],
            )
        return user

    def get_user(self, namespace: str, user_id: str) -> MemoryUser | None:
        row = self.db.select_one(
            f"SELECT {self.db.cols.user} FROM memory_users u WHERE u.namespace = ? AND u.id = ?",
            (namespace, user_id),
        )
        return None if row is None else user_from_row(row)

    def list_users(
        self, namespace: str, limit: int = 100, offset: int = 0, *, query: str | None = None
    ) -> list[MemoryUser]:
        where, params = user_where(self.db.dialect, namespace, query)
        rows = self.db.select(
            f"SELECT {self.db.cols.user} FROM memory_users u WHERE {where}"
            " ORDER BY u.created_at, u.id LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        return [user_from_row(r) for r in rows]

    def count_users(self, namespace: str, *, query: str | None = None) -> int:
        where, params = user_where(self.db.dialect, namespace, query)
        return count(self.db, f"SELECT count(*) FROM memory_users u WHERE {where}", params)

    def find_user(self, namespace: str, channel: str, identifier: str) -> MemoryUser | None:
        row = self.db.select_one(
            f"SELECT {self.db.cols.user} FROM user_identifiers i JOIN memory_users u"
            " ON u.namespace = i.namespace AND u.id = i.user_id"
            " WHERE i.namespace = ? AND i.channel = ? AND i.identifier = ?"
            " ORDER BY u.merged_into IS NOT NULL, u.created_at, u.id LIMIT 1",
            (namespace, channel, identifier),
        )
        return None if row is None else user_from_row(row)

    def delete_users(self, namespace: str, ids: Sequence[str]) -> int:
        d = self.db.dialect
        with self.db.tx() as c:
            d.delete_in(c, "user_identifiers", "user_id", namespace, ids)
            return d.delete_in(c, "memory_users", "id", namespace, ids)

    def _moving_owner(self, c: Any, namespace: str, user_id: str) -> None:
        """A hook: the memories of ``user_id`` are about to change owner."""

    def reassign_user(self, namespace: str, source_id: str, target_id: str) -> int:
        """Move memories and threads of one user to another; returns how many memories."""
        q = self.db.dialect.q
        with self.db.tx() as c:
            self._moving_owner(c, namespace, source_id)
            moved = c.execute(
                q(
                    "UPDATE nodes SET user_id = ?,"
                    " owner_tokens = CASE WHEN scope = 'user' THEN ? ELSE owner_tokens END"
                    " WHERE namespace = ? AND user_id = ?"
                ),
                (target_id, owner_tokens(namespace, target_id), namespace, source_id),
            ).rowcount
            c.execute(
                q("UPDATE threads SET user_id = ? WHERE namespace = ? AND user_id = ?"),
                (target_id, namespace, source_id),
            )
        return int(moved)

    # ------------------------------------------------------------------ threads
    def upsert_thread(self, thread: Thread) -> Thread:
        d = self.db.dialect
        messages = [m.model_dump(mode="json") for m in thread.messages]
        with self.db.tx() as c:
            c.execute(
                d.q(d.upsert("threads", _THREAD_COLUMNS, _KEYS, json=["messages"])),
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
        cols = self.db.cols.thread.format(messages=self.db.dialect.json("messages"))
        with self.db.reading() as c:
            row = c.execute(
                self.db.dialect.q(f"SELECT {cols} FROM threads WHERE namespace = ? AND id = ?"),
                (namespace, thread_id),
            ).fetchone()
        return None if row is None else thread_from_row(row)

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
        where, params = thread_where(namespace, user, agent)
        cols = self.db.cols.thread.format(messages=f"{self.db.dialect.json_array_length}(messages)")
        rows = self.db.select(
            f"SELECT {cols} FROM threads WHERE {where}"
            " ORDER BY updated_at DESC, id LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        return [thread_from_row(r) for r in rows]

    def count_threads(
        self, namespace: str, *, user: str | None = None, agent: str | None = None
    ) -> int:
        where, params = thread_where(namespace, user, agent)
        return count(self.db, f"SELECT count(*) FROM threads WHERE {where}", params)

    def delete_threads(self, namespace: str, ids: Sequence[str]) -> int:
        with self.db.tx() as c:
            return self.db.dialect.delete_in(c, "threads", "id", namespace, ids)

    # ------------------------------------------------------------------ API keys
    def insert_key(self, key: ApiKey, key_hash: str) -> None:
        d = self.db.dialect
        with self.db.tx() as c:
            done = c.execute(
                d.q(
                    f"INSERT INTO api_keys ({_KEY_COLUMNS})"
                    f" VALUES (?, ?, {d.jsonb}, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (id) DO NOTHING RETURNING id"
                ),
                (
                    key.id,
                    key.name,
                    json.dumps(key.namespaces),
                    d.flag(key.can_write),
                    d.flag(key.admin),
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
        with self.db.reading() as c:
            row = c.execute(
                self.db.dialect.q(
                    f"SELECT {self.db.cols.key}, key_hash FROM api_keys WHERE id = ?"
                ),
                (key_id,),
            ).fetchone()
        return None if row is None else (key_from_row(row[:-1]), str(row[-1]))

    def list_keys(self, *, include_revoked: bool = False) -> list[ApiKey]:
        where = "" if include_revoked else " WHERE revoked_at IS NULL"
        rows = self.db.select(
            f"SELECT {self.db.cols.key} FROM api_keys{where} ORDER BY created_at, id",
            (),
        )
        return [key_from_row(r) for r in rows]

    def revoke_key(self, key_id: str, *, now: datetime) -> ApiKey:
        """Revoke a key (revoking twice keeps the first time)."""
        with self.db.tx() as c:
            row = c.execute(
                self.db.dialect.q(
                    "UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?"
                    f" RETURNING {self.db.cols.key}"
                ),
                (ts(now), key_id),
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no API key {key_id!r}", hint="list keys to see their ids")
        return key_from_row(row)

    def touch_key(self, key_id: str, *, now: datetime) -> None:
        with self.db.tx() as c:
            c.execute(
                self.db.dialect.q("UPDATE api_keys SET last_used_at = ? WHERE id = ?"),
                (ts(now), key_id),
            )

    def has_keys(self) -> bool:
        """Whether any key is active (not revoked)."""
        with self.db.reading() as c:
            row = c.execute(
                self.db.dialect.q("SELECT 1 FROM api_keys WHERE revoked_at IS NULL LIMIT 1"), ()
            ).fetchone()
        return row is not None


class SQLEntities(SQLSlice[DB]):
    """Entities and their links to memories."""

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

    def _index_names(self, c: Any, entity: Entity) -> None:
        d = self.db.dialect
        c.execute(d.q("DELETE FROM entity_names WHERE entity_id = ?"), (entity.id,))
        names = lookup_names([entity.canonical_name, *entity.aliases])
        d.many(
            c,
            d.insert_ignore("entity_names", ("namespace", "name_norm", "entity_id")),
            [(entity.namespace, n, entity.id) for n in names],
        )

    def insert_entity(self, entity: Entity) -> Entity:
        """Store a new entity; its id is replaced if another entity already has it."""
        j = self.db.dialect.jsonb
        sql = self.db.dialect.q(
            "INSERT INTO entities (namespace, canonical_name, type, aliases, summary,"
            " first_seen, last_seen, mention_count, attributes, id)"
            f" VALUES (?, ?, ?, {j}, ?, ?, ?, ?, {j}, ?)"
            " ON CONFLICT (id) DO NOTHING RETURNING id"
        )
        with self.db.tx() as c:
            for _ in range(8):
                if c.execute(sql, self._entity_row(entity)).fetchone() is not None:
                    break
                entity = entity.model_copy(update={"id": short_id()})
            else:  # pragma: no cover - 62^8 ids
                raise ConflictError("could not allocate a unique entity id")
            self._index_names(c, entity)
        return entity

    def update_entity(self, entity: Entity) -> Entity:
        j = self.db.dialect.jsonb
        with self.db.tx() as c:
            cur = c.execute(
                self.db.dialect.q(
                    "UPDATE entities SET namespace = ?, canonical_name = ?, type = ?,"
                    f" aliases = {j}, summary = ?, first_seen = ?, last_seen = ?,"
                    f" mention_count = ?, attributes = {j} WHERE id = ? AND namespace = ?"
                ),
                [*self._entity_row(entity), entity.namespace],
            )
            if cur.rowcount != 1:
                raise NotFoundError(f"no entity {entity.id!r} in namespace {entity.namespace!r}")
            self._index_names(c, entity)
        return entity

    def _entities(self, sql: str, params: Sequence[Any]) -> list[Entity]:
        with self.db.reading() as c:
            rows = c.execute(self.db.dialect.q(sql), list(params)).fetchall()
        return [entity_from_row(r) for r in rows]

    def get_entity(self, namespace: str, entity_id: str) -> Entity | None:
        found = self._entities(
            f"SELECT {self.db.cols.entity} FROM entities e WHERE e.id = ? AND e.namespace = ?",
            [entity_id, namespace],
        )
        return found[0] if found else None

    def find_entity(self, namespace: str, name: str) -> Entity | None:
        """By canonical name or alias, case-insensitive; a canonical match wins, then the
        most mentioned entity."""
        norm = name_norm(name)
        found = self._entities(
            f"SELECT {self.db.cols.entity} FROM entity_names x JOIN entities e"
            " ON e.id = x.entity_id WHERE x.namespace = ? AND x.name_norm IN (?, ?)"
            " ORDER BY e.mention_count DESC, e.id",
            [namespace, norm, unaccented(norm)],
        )
        found.sort(key=lambda e: name_norm(e.canonical_name) != norm)
        return found[0] if found else None

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
        where, params = entity_where(self.db.dialect, namespace, type, query)
        return self._entities(
            f"SELECT {self.db.cols.entity} FROM entities e WHERE {where}"
            f" ORDER BY e.mention_count DESC, {self.db.dialect.nocase('e.canonical_name')}, e.id"
            " LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )

    def count_entities(
        self, namespace: str, *, type: str | None = None, query: str | None = None
    ) -> int:
        where, params = entity_where(self.db.dialect, namespace, type, query)
        return count(self.db, f"SELECT count(*) FROM entities e WHERE {where}", params)

    def delete_entities(self, namespace: str, ids: Sequence[str]) -> int:
        d, total = self.db.dialect, 0
        with self.db.tx() as c:
            for chunk in d.chunks(ids):
                test, args = d.any("id", chunk)
                mine = [
                    r[0]
                    for r in c.execute(
                        d.q(f"SELECT id FROM entities WHERE namespace = ? AND {test}"),
                        [namespace, *args],
                    ).fetchall()
                ]
                if not mine:
                    continue
                for table, column in (
                    ("node_entities", "entity_id"),
                    ("entity_names", "entity_id"),
                ):
                    test, args = d.any(column, mine)
                    c.execute(d.q(f"DELETE FROM {table} WHERE {test}"), args)
                test, args = d.any("id", mine)
                total += c.execute(d.q(f"DELETE FROM entities WHERE {test}"), args).rowcount
        return int(total)

    def _link_rows(self, c: Any, node_id: str, entity_ids: list[str]) -> int:
        """Insert the links of ``node_id`` not there yet; how many were new."""
        raise NotImplementedError

    def link_entities(self, namespace: str, node_id: str, entity_ids: Sequence[str]) -> int:
        """Link a memory to entities of its namespace; returns how many links are new."""
        d = self.db.dialect
        ids = list(dict.fromkeys(entity_ids))
        with self.db.tx() as c:
            require_node(c, d, namespace, node_id)
            if not ids:
                return 0
            test, args = d.any("id", ids)
            known = {
                r[0]
                for r in c.execute(
                    d.q(f"SELECT id FROM entities WHERE namespace = ? AND {test}"),
                    [namespace, *args],
                ).fetchall()
            }
            missing = [i for i in ids if i not in known]
            if missing:
                raise NotFoundError(f"no entity {missing[0]!r} in namespace {namespace!r}")
            return self._link_rows(c, node_id, ids)

    def node_entities(self, namespace: str, node_ids: Sequence[str]) -> dict[str, list[Entity]]:
        """The entities each memory mentions (most mentioned first)."""
        d = self.db.dialect
        out: dict[str, list[Entity]] = {i: [] for i in node_ids}
        with self.db.reading() as c:
            for chunk in d.chunks(node_ids):
                test, args = d.any("ne.node_id", chunk)
                for row in c.execute(
                    d.q(
                        f"SELECT ne.node_id, {self.db.cols.entity} FROM node_entities ne"
                        f" JOIN entities e ON e.id = ne.entity_id WHERE {test}"
                        " AND e.namespace = ? ORDER BY e.mention_count DESC,"
                        f" {d.nocase('e.canonical_name')}, e.id"
                    ),
                    [*args, namespace],
                ).fetchall():
                    out[row[0]].append(entity_from_row(row[1:]))
        return out

    # the newest links of an entity (parameters: the entity, how many), joined to their
    # memories ``n``: each backend's fastest plan
    newest_links: ClassVar[str]

    def linked_nodes(
        self, flt: NodeFilter, node_ids: Sequence[str], entity_ids: Sequence[str]
    ) -> dict[str, set[str]]:
        d = self.db.dialect
        if not node_ids or not entity_ids:
            return {}
        where, params = filter_sql(flt)
        found: dict[str, set[str]] = {}
        with self.db.reading() as c:
            for chunk in d.chunks(node_ids):
                nodes, node_params = d.any("ne.node_id", chunk)
                # by the memories' keys: an entity may have thousands of links
                linked, linked_params = d.any(d.unindexed("ne.entity_id"), entity_ids)
                rows = c.execute(
                    d.q(
                        "SELECT ne.node_id, ne.entity_id FROM node_entities ne"
                        f" {d.join_first} nodes n ON n.id = ne.node_id"  # the listed memories first
                        f" WHERE {nodes} AND {linked} AND {where}"
                    ),
                    [*node_params, *linked_params, *params],
                ).fetchall()
                for node_id, entity_id in rows:
                    found.setdefault(node_id, set()).add(entity_id)
        return found

    def entity_nodes(self, flt: NodeFilter, entity_id: str, *, limit: int = 20) -> list[MemoryNode]:
        """Memories (visible through ``flt``) linked to an entity, newest first, among
        its last :data:`~memloci.storage.base.NEWEST_LINKED` links (bounded work for a
        speaker linked to every turn they said: the context block asks on every call).
        When ``flt`` names types that have few memories (the facts of a conversation
        store), those are read instead, each checked for the link: exact and cheaper."""
        d = self.db.dialect
        where, params = filter_sql(flt)
        newest = f"n.created_at DESC, n.{d.rowid} DESC"
        with self.db.reading() as c:
            if flt.types:
                in_ns, ns_params = d.any("n.namespace", flt.namespaces)
                typed, type_params = d.any("n.type", [t.value for t in flt.types])
                few = (
                    c.execute(
                        d.q(
                            "SELECT count(*) FROM (SELECT 1 FROM nodes n"
                            f"{d.indexed_by('nodes_ns_type')} WHERE {in_ns} AND {typed}"
                            " LIMIT ?) typed"
                        ),
                        [*ns_params, *type_params, NEWEST_LINKED + 1],
                    ).fetchone()[0]
                    <= NEWEST_LINKED
                )
                if few:
                    rows = c.execute(
                        d.q(
                            f"SELECT {self.db.cols.node} FROM nodes n WHERE {where} AND EXISTS"
                            " (SELECT 1 FROM node_entities ne WHERE ne.node_id = n.id"
                            f" AND ne.entity_id = ?) ORDER BY {newest} LIMIT ?"
                        ),
                        [*params, entity_id, limit],
                    ).fetchall()
                    return [node_from_row(r) for r in rows]
            rows = c.execute(
                d.q(
                    f"SELECT {self.db.cols.node} FROM {self.newest_links}"
                    f" WHERE {where} ORDER BY {newest} LIMIT ?"
                ),
                [entity_id, NEWEST_LINKED, *params, limit],
            ).fetchall()
        return [node_from_row(r) for r in rows]

    def entity_links_seen(
        self, flt: NodeFilter, entity_id: str, *, limit: int = 200
    ) -> list[tuple[str, bool]]:
        d = self.db.dialect
        where, params = filter_sql(flt)
        in_ns, ns_params = d.any("n.namespace", flt.namespaces)
        rows = self.db.select(
            f"SELECT n.id, CASE WHEN {where} THEN 1 ELSE 0 END FROM {self.newest_links}"
            f" WHERE {in_ns} ORDER BY n.created_at DESC, n.{d.rowid} DESC",
            [*params, entity_id, limit, *ns_params],
        )
        return [(str(i), bool(seen)) for i, seen in rows]

    def related_entities(
        self, flt: NodeFilter, entity_id: str, *, limit: int = 20
    ) -> list[tuple[Entity, int]]:
        """Entities linked to the same memories (visible through ``flt``), by how many."""
        where, params = filter_sql(flt)
        return [
            (entity, int(shared))
            for entity, shared in self._entity_counts(
                f"SELECT {self.db.cols.entity}, count(*) AS shared FROM node_entities me"
                " JOIN nodes n ON n.id = me.node_id"
                " JOIN node_entities other ON other.node_id = me.node_id"
                " AND other.entity_id <> me.entity_id"
                " JOIN entities e ON e.id = other.entity_id AND e.namespace = n.namespace"
                f" WHERE me.entity_id = ? AND {where} GROUP BY e.id"
                " ORDER BY shared DESC, e.mention_count DESC, e.id LIMIT ?",
                [entity_id, *params, limit],
            )
        ]

    def _entity_counts(self, sql: str, params: Sequence[Any]) -> list[tuple[Entity, Any]]:
        with self.db.reading() as c:
            rows = c.execute(self.db.dialect.q(sql), list(params)).fetchall()
        return [(entity_from_row(r[:-1]), r[-1]) for r in rows]


def entity_from_row(row: Any) -> Entity:
    eid, ns, name, etype, aliases, summary, first, last, mentions, attributes = row
    return Entity(
        id=eid,
        namespace=ns,
        canonical_name=name,
        type=etype,
        aliases=stored_json("aliases", aliases, f"entity {eid}", []),
        summary=summary,
        first_seen=dt(first),
        last_seen=dt(last),
        mention_count=mentions,
        attributes=stored_json("attributes", attributes, f"entity {eid}", {}),
    )


def thread_from_row(row: Any) -> Thread:
    """A thread; the fifth column holds the messages (JSON) or, in listings, their count."""
    ns, tid, user, agent, messages, summary, created, updated = row
    listed = isinstance(messages, int)
    return Thread(
        namespace=ns,
        id=tid,
        user=user,
        agent=agent,
        messages=[] if listed else json.loads(messages),
        message_count=messages if listed else 0,
        summary=summary,
        created_at=dt(created),
        updated_at=dt(updated),
    )


def key_from_row(row: Any) -> ApiKey:
    kid, name, namespaces, can_write, admin, created, revoked, used = row
    return ApiKey(
        id=kid,
        name=name,
        namespaces=json.loads(namespaces),
        can_write=bool(can_write),
        admin=bool(admin),
        created_at=dt(created),
        revoked_at=dt(revoked),
        last_used_at=dt(used),
    )
