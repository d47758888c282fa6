"""REST list paging over real HTTP while agents write: ``next_cursor`` pages never skip
or repeat a row, a bad cursor is a 400, and a page's ``items`` and ``total`` come from
one read (``total`` never contradicts the page)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from rest_server import client


def walk(http: httpx.Client, path: str, limit: int, between: Callable[[], None]) -> list[str]:
    """Every page of ``path`` through ``next_cursor``, calling ``between`` after each."""
    seen: list[str] = []
    params: dict[str, Any] = {"limit": limit}
    while True:
        r = http.get(path, params=params)
        assert r.status_code == 200, r.text
        body = r.json()
        rows = body.get("items", body.get("memories"))
        assert body["total"] >= len(rows)
        seen += [row["id"] for row in rows]
        if body["next_cursor"] is None:
            return seen
        params = {"limit": limit, "cursor": body["next_cursor"]}
        between()


@pytest.fixture
def writer(server: str) -> Iterator[Callable[[Callable[[httpx.Client], None]], None]]:
    """Start a thread that calls ``work(client)`` over and over until the test ends."""
    stop = threading.Event()
    threads: list[threading.Thread] = []
    errors: list[BaseException] = []

    def start(work: Callable[[httpx.Client], None]) -> None:
        def loop() -> None:
            with client(server) as own:
                try:
                    while not stop.is_set():
                        work(own)
                except BaseException as exc:  # reported by the test, not lost in the thread
                    errors.append(exc)

        t = threading.Thread(target=loop, daemon=True)
        threads.append(t)
        t.start()

    yield start
    stop.set()
    for t in threads:
        t.join(30)
    assert not errors, errors


def test_facts_paged_newest_first_while_new_facts_arrive(http: httpx.Client) -> None:
    seeded = [
        http.post("/api/v1/facts/", json={"content": f"seeded fact number {i}"}).json()["memory"]
        for i in range(40)
    ]
    count = iter(range(10_000))

    def arrive() -> None:  # between two pages an agent stores three new facts
        for _ in range(3):
            http.post("/api/v1/facts/", json={"content": f"a new fact {next(count)}"})

    seen = walk(http, "/api/v1/facts/", 6, arrive)
    assert len(seen) == len(set(seen)), "a fact was listed twice"
    assert {m["id"] for m in seeded} <= set(seen), "a fact was skipped"


def test_episodes_paged_while_another_thread_records_turns(
    http: httpx.Client, writer: Callable[[Callable[[httpx.Client], None]], None]
) -> None:
    seeded = http.post(
        "/api/v1/turns/",
        json={"messages": [{"role": "user", "content": f"turn {i}"} for i in range(60)],
              "user": "sam", "session": "s1"},
    ).json()  # fmt: skip
    turn = iter(range(100_000))

    def record(own: httpx.Client) -> None:
        said = [{"role": "user", "content": f"live turn {next(turn)}"}]
        r = own.post("/api/v1/turns/", json={"messages": said, "user": "ann"})
        assert r.status_code == 201, r.text

    writer(record)
    for order in ("-created", "created"):
        seen: list[str] = []
        params: dict[str, Any] = {"limit": 7, "order": order}
        while True:
            body = http.get("/api/v1/episodes/", params=params).json()
            seen += [n["id"] for n in body["items"]]
            if body["next_cursor"] is None:
                break
            params = {"limit": 7, "order": order, "cursor": body["next_cursor"]}
        assert len(seen) == len(set(seen)), f"{order}: a turn was listed twice"
        assert {n["id"] for n in seeded} <= set(seen), f"{order}: a turn was skipped"


def test_versioned_memory_list_pages_by_cursor(http: httpx.Client) -> None:
    ids = [
        http.post("/api/memory/", json={"content": f"the project note {i}", "category": c}).json()[
            "id"
        ]
        for i, c in enumerate(["project", "person", "context"] * 5)
    ]
    k = iter(range(1000))

    def arrive() -> None:
        http.post("/api/memory/", json={"content": f"an early context {next(k)}",
                                        "category": "context"})  # fmt: skip

    seen = walk(http, "/api/memory/", 4, arrive)
    assert len(seen) == len(set(seen)) and set(ids) <= set(seen)


def test_threads_and_entities_page_by_cursor_while_written(http: httpx.Client) -> None:
    made = []
    for i in range(15):
        http.post(f"/api/v1/checkpoints/chat-{i}/messages",
                  json={"messages": [{"role": "user", "content": f"hello {i}"}]})  # fmt: skip
        made.append(http.post("/api/v1/entities/", json={"name": f"Project {i}"}).json()["id"])
    n = iter(range(1000))

    def arrive() -> None:
        i = next(n)
        http.post(f"/api/v1/checkpoints/late-{i}/messages",
                  json={"messages": [{"role": "user", "content": "a new chat"}]})  # fmt: skip
        http.post("/api/v1/entities/", json={"name": f"Late {i}"})

    threads = walk(http, "/api/v1/checkpoints/", 4, arrive)
    assert len(threads) == len(set(threads))
    assert {f"chat-{i}" for i in range(15)} <= set(threads)
    entities = walk(http, "/api/v1/entities/", 4, arrive)
    assert len(entities) == len(set(entities)) and set(made) <= set(entities)


def test_a_bad_cursor_is_a_400_naming_the_cursor(http: httpx.Client) -> None:
    for i in range(3):
        http.post("/api/v1/facts/", json={"content": f"one fact of three {i}"})
    cursor = http.get("/api/v1/facts/", params={"limit": 1}).json()["next_cursor"]
    assert isinstance(cursor, str)
    for path, params in (
        ("/api/v1/facts/", {"cursor": "not-a-cursor"}),
        ("/api/v1/facts/", {"cursor": cursor, "order": "created"}),  # another order's
        ("/api/v1/facts/", {"cursor": cursor, "offset": 2}),  # both ways at once
        ("/api/v1/checkpoints/", {"cursor": cursor}),  # another list's
        ("/api/v1/entities/", {"cursor": "x" * 5000}),
        ("/api/memory/", {"cursor": cursor}),
    ):
        r = http.get(path, params=params)
        assert r.status_code == 400, (path, params, r.text)
        error = r.json()["error"]
        assert error["code"] == "invalid_input" and "cursor" in error["message"], error
        assert error.get("hint")


def test_offset_paging_still_works_and_offers_a_cursor(http: httpx.Client) -> None:
    for i in range(5):
        http.post("/api/v1/facts/", json={"content": f"an offset fact {i}"})
    body = http.get("/api/v1/facts/", params={"limit": 2, "offset": 2, "order": "created"}).json()
    assert [m["content"] for m in body["items"]] == ["an offset fact 2", "an offset fact 3"]
    assert (body["total"], body["limit"], body["offset"]) == (5, 2, 2)
    rest = http.get("/api/v1/facts/", params={"limit": 2, "order": "created",
                                             "cursor": body["next_cursor"]}).json()  # fmt: skip
    assert [m["content"] for m in rest["items"]] == ["an offset fact 4"]
    assert rest["next_cursor"] is None


def test_items_and_total_never_contradict_while_facts_come_and_go(
    http: httpx.Client, writer: Callable[[Callable[[httpx.Client], None]], None]
) -> None:
    http.post("/api/v1/facts/", json={"content": "the one fact that stays"})
    k = iter(range(100_000))

    def churn(own: httpx.Client) -> None:  # a fact appears, then goes (hard delete)
        r = own.post("/api/v1/facts/", json={"content": f"a passing fact {next(k)}"})
        own.delete(f"/api/v1/facts/{r.json()['memory']['id']}", params={"hard": "true"})

    writer(churn)
    for _ in range(150):
        body = http.get("/api/v1/facts/", params={"limit": 1, "offset": 1}).json()
        # one read: the second row is listed exactly when the total says there is one
        assert len(body["items"]) == min(1, body["total"] - 1), body
