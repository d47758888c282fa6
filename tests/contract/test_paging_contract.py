"""The Store contract for keyset (cursor) paging: ``page_nodes``, ``page_threads``,
``page_entities`` and ``page_users`` return one page with the total of the same read
and an opaque ``next_cursor``; a page read from a cursor continues strictly after the
last row of the one before, so rows written or deleted meanwhile never make another row
be skipped or seen twice (any backend, through the protocol only)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memloci.errors import ValidationError
from memloci.models import (
    NODE_ORDERS,
    Entity,
    EntityFilter,
    MemoryNode,
    MemoryUser,
    NodeType,
    PageRequest,
    Scope,
    Thread,
    ThreadFilter,
    ThreadMessage,
    UserFilter,
    short_id,
)
from memloci.storage.base import NodeFilter, Store

T0 = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def node(i: int, when: datetime, **fields: Any) -> MemoryNode:
    data: dict[str, Any] = {
        "id": short_id(), "namespace": "default", "type": NodeType.SEMANTIC,
        "content": f"memory number {i}", "scope": Scope.GLOBAL, "event_time": when,
        "created_at": when, "updated_at": when, "valid_from": when,
        "category": ("person", "project", "context")[i % 3], "confidence": (i % 4) / 4 + 0.1,
    }  # fmt: skip
    data.update(fields)
    return MemoryNode(**data)


def thread(tid: str, when: datetime) -> Thread:
    msg = ThreadMessage(role="user", content=f"hello from {tid}", created_at=when)
    return Thread(id=tid, namespace="default", messages=[msg], created_at=when, updated_at=when)


ALL = NodeFilter(namespaces=("default",))


def seed_nodes(store: Store, n: int) -> list[str]:
    """``n`` facts; every third pair shares its creation time (the tiebreak matters)."""
    nodes = [node(i, at(i - i % 2)) for i in range(n)]
    store.memories.insert_nodes(nodes)
    return [x.id for x in nodes]


def walk_nodes(store: Store, order: str, limit: int, between: Any = None) -> list[str]:
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page = store.pages.page_nodes(ALL, PageRequest(limit=limit, cursor=cursor), order=order)
        assert len(page.items) <= limit
        assert page.total >= len(page.items)
        seen += [n.id for n in page.items]
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor
        if between is not None:
            between(seen)


@pytest.mark.parametrize("order", NODE_ORDERS)
def test_cursor_pages_list_what_offset_pages_list_when_nothing_changes(
    store: Store, order: str
) -> None:
    seed_nodes(store, 23)
    by_offset = [n.id for n in store.memories.list_nodes(ALL, limit=100, order=order)]
    assert walk_nodes(store, order, 5) == by_offset
    first = store.pages.page_nodes(ALL, PageRequest(limit=5, offset=5), order=order)
    assert [n.id for n in first.items] == by_offset[5:10] and first.total == 23


def test_last_page_has_no_cursor_and_an_empty_list_has_none(store: Store) -> None:
    empty = store.pages.page_nodes(ALL, PageRequest(limit=10))
    assert (empty.items, empty.total, empty.next_cursor) == ([], 0, None)
    seed_nodes(store, 4)
    exact = store.pages.page_nodes(ALL, PageRequest(limit=4), order="-created")
    assert len(exact.items) == 4 and exact.total == 4 and exact.next_cursor is None


def test_rows_written_while_paging_newest_first_never_shift_the_pages(store: Store) -> None:
    original = seed_nodes(store, 30)
    later = iter(range(100, 200))

    def write(seen: list[str]) -> None:
        # new memories arrive at the top, and a memory already listed is removed
        store.memories.insert_nodes([node(next(later), at(1000 + len(seen) + k)) for k in range(4)])
        store.memories.purge_node("default", seen[-1])

    seen = walk_nodes(store, "-created", 7, write)
    assert len(seen) == len(set(seen)), "a row was listed twice"
    assert set(original) <= set(seen), "a row was skipped"
    assert (
        store.pages.page_nodes(ALL, PageRequest(limit=1)).total
        == store.memories.count_nodes(ALL)
        == 30 + 4 * 4 - 4
    )


def test_rows_written_while_paging_by_category_never_shift_the_pages(store: Store) -> None:
    original = seed_nodes(store, 30)
    later = iter(range(100, 200))

    def write(seen: list[str]) -> None:
        store.memories.insert_nodes([node(next(later), at(-500 - len(seen) - k)) for k in range(3)])

    seen = walk_nodes(store, "category", 6, write)
    assert len(seen) == len(set(seen)) and set(original) <= set(seen)


def test_a_bad_cursor_is_a_validation_error(store: Store) -> None:
    seed_nodes(store, 6)
    cursor = store.pages.page_nodes(ALL, PageRequest(limit=2), order="-created").next_cursor
    assert cursor is not None
    for bad in ("nonsense!", "", "e30", cursor[:-3], cursor + "x"):
        with pytest.raises(ValidationError, match="cursor"):
            store.pages.page_nodes(ALL, PageRequest(limit=2, cursor=bad), order="-created")
    with pytest.raises(ValidationError, match="cursor"):  # made for another order
        store.pages.page_nodes(ALL, PageRequest(limit=2, cursor=cursor), order="created")
    with pytest.raises(ValidationError, match="cursor"):  # made for another list
        store.pages.page_threads(ThreadFilter("default"), PageRequest(limit=2, cursor=cursor))


def test_threads_page_by_last_update_and_a_thread_updated_meanwhile_moves_alone(
    store: Store,
) -> None:
    ids = [f"t{i:02d}" for i in range(20)]
    for i, tid in enumerate(ids):
        store.people.upsert_thread(thread(tid, at(i)))
    seen: list[str] = []
    cursor: str | None = None
    touched: list[str] = []
    step = 0
    while True:
        page = store.pages.page_threads(
            ThreadFilter("default"), PageRequest(limit=4, cursor=cursor)
        )
        assert page.total >= len(page.items) and all(t.message_count == 1 for t in page.items)
        seen += [t.id for t in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
        step += 1
        store.people.upsert_thread(thread(f"new{step}", at(100 + step)))  # a new thread, at the top
        unseen = [t for t in ids if t not in seen and t not in touched]
        if unseen:  # a thread not listed yet gets a message: it moves to the top
            touched.append(unseen[-1])
            store.people.upsert_thread(thread(unseen[-1], at(200 + step)))
    assert len(seen) == len(set(seen))
    assert {t for t in ids if t not in touched} <= set(seen)


def test_entities_page_by_mentions_without_skips_or_repeats(store: Store) -> None:
    made = [
        store.entities.insert_entity(
            Entity(id=short_id(), namespace="default", canonical_name=f"Name {i % 7} {i}",
                   mention_count=i % 5, first_seen=T0, last_seen=T0)
        ).id
        for i in range(25)
    ]  # fmt: skip
    by_offset = [e.id for e in store.entities.list_entities("default", limit=100)]
    seen: list[str] = []
    cursor: str | None = None
    k = 0
    while True:
        page = store.pages.page_entities(
            EntityFilter("default"), PageRequest(limit=4, cursor=cursor)
        )
        assert page.total >= len(page.items)
        seen += [e.id for e in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
        k += 1
        store.entities.insert_entity(  # a new entity, mentioned more than any: at the top
            Entity(id=short_id(), namespace="default", canonical_name=f"Late {k}",
                   mention_count=99, first_seen=T0, last_seen=T0)
        )  # fmt: skip
    assert len(seen) == len(set(seen)) and set(made) <= set(seen)
    assert [e for e in seen if e in made] == by_offset


def test_users_page_by_creation(store: Store) -> None:
    for i in range(9):
        store.people.upsert_user(MemoryUser(id=f"u{i}", namespace="default", created_at=at(i)))
    first = store.pages.page_users(UserFilter("default"), PageRequest(limit=4))
    assert [u.id for u in first.items] == ["u0", "u1", "u2", "u3"] and first.total == 9
    store.people.delete_users("default", ["u0", "u1"])  # offset 4 would now skip u4 and u5
    second = store.pages.page_users(
        UserFilter("default"), PageRequest(limit=4, cursor=first.next_cursor)
    )
    assert [u.id for u in second.items] == ["u4", "u5", "u6", "u7"] and second.total == 7


def test_page_filters_like_list_and_counts_the_filter(store: Store) -> None:
    seed_nodes(store, 12)
    only = NodeFilter(namespaces=("default",), categories=("person",))
    page = store.pages.page_nodes(only, PageRequest(limit=2), order="-created")
    assert page.total == store.memories.count_nodes(only) == 4
    assert all(n.category == "person" for n in page.items)
