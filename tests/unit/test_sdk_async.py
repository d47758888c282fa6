"""AsyncMemory inside asyncio applications (audit fixes): a call whose task is cancelled
(``wait_for``, a ``TaskGroup``, a client that went away) gets ``CancelledError`` at once
and leaves no write behind, unless its write had committed — then it returns its result;
an abandoned ``flush()`` holds no thread; the store work of async calls runs off the
loop thread; many concurrent writers of one fact store it once."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from memloci import AsyncMemory, Memory
from memloci.errors import ProviderError
from memloci.providers.fake import FakeEmbedder
from pgtest import both_backends


class HeldCommit:
    """The next write transaction of an async call (run in the loop's executor) waits
    just before it commits — its work done — until :meth:`release`."""

    def __init__(self, store: Any) -> None:
        self.entered = threading.Event()
        self._release = threading.Event()
        self._armed = True
        self._tx = store.db.tx
        store.db.tx = self._held

    @contextlib.contextmanager
    def _held(self) -> Iterator[Any]:
        with self._tx() as conn:
            yield conn
            if self._armed and threading.current_thread().name.startswith("asyncio"):
                self._armed = False
                self.entered.set()
                self._release.wait(30)

    def release(self) -> None:
        self._release.set()

    async def reached(self) -> None:
        while not self.entered.is_set():  # never a thread: the executor may be busy
            await asyncio.sleep(0.005)


def snapshot(mem: AsyncMemory, namespace: str = "default") -> list[str]:
    """Every record of the namespace (the export without its dated header)."""
    return list(mem.service.admin.export_lines(namespace))[1:]


async def cancel_at_commit(mem: AsyncMemory, call: Awaitable[Any]) -> None:
    held = HeldCommit(mem.service.store)
    task = asyncio.ensure_future(call)
    await held.reached()
    task.cancel()
    await asyncio.sleep(0)  # the task sees its cancellation while its thread still waits
    assert task.done() and task.cancelled()
    held.release()


Op = Callable[[AsyncMemory, dict[str, str]], Awaitable[Any]]

OPS: dict[str, Op] = {
    "add": lambda m, ids: m.add("I moved to Porto last spring", user="u1", session="s9"),
    "add_many": lambda m, ids: m.add(
        [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}], user="u1"
    ),
    "remember": lambda m, ids: m.remember("User collects vinyl records", user="u1"),
    "remember_key": lambda m, ids: m.remember("User's timezone is UTC+1", user="u1", key="tz"),
    "update": lambda m, ids: m.update(ids["fact"], "User prefers oolong tea"),
    "correct": lambda m, ids: m.correct(ids["fact"], "User prefers white tea"),
    "confirm": lambda m, ids: m.confirm(ids["fact"]),
    "forget": lambda m, ids: m.forget(ids["fact"]),
    "purge": lambda m, ids: m.purge(ids["fact"]),
    "learn_procedure": lambda m, ids: m.learn_procedure("Always answer in French", user="u1"),
    "record_episode": lambda m, ids: m.record_episode("Booked a flight", user="u1"),
    "forget_user": lambda m, ids: m.forget_user("u1"),
    "clear": lambda m, ids: m.clear(),
    "import_file": lambda m, ids: m.import_file(ids["export"]),
    "consolidate": lambda m, ids: m.consolidate(),
}


@both_backends
@pytest.mark.parametrize("op", list(OPS))
def test_a_call_cancelled_before_its_commit_writes_nothing(
    tmp_path: Path, db_path: str, op: str
) -> None:
    async def main() -> None:
        other = AsyncMemory(str(tmp_path / "other.db"), embedder=None)
        await other.remember("User plays the cello on Sundays", user="u7")
        export = str(tmp_path / "other.jsonl")
        await other.export(export)
        await other.close()

        mem = AsyncMemory(db_path, embedder=None)
        await mem.add("Remember that I prefer window seats", user="u1", session="s1")
        fact = (await mem.remember("User prefers green tea", user="u1", key="tea")).memory
        await mem.remember("User's timezone is UTC", user="u1", key="tz")
        before = snapshot(mem)

        await cancel_at_commit(mem, OPS[op](mem, {"fact": fact.id, "export": export}))

        after = await mem.remember("User owns a red bicycle", user="u1")  # waits for the
        assert after.action == "created"  # abandoned transaction to roll back
        await mem.purge(after.memory.id)
        assert snapshot(mem) == before
        assert await asyncio.wait_for(mem.flush(), 30)
        await asyncio.wait_for(mem.close(), 30)

    asyncio.run(main())


def test_a_timed_out_remember_writes_nothing_and_the_store_stays_usable(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        mem = AsyncMemory(str(tmp_path / "t.db"), embedder=FakeEmbedder())
        held = HeldCommit(mem.service.store)
        with pytest.raises(TimeoutError):  # the write is held until after the timeout
            await asyncio.wait_for(mem.remember("User likes hiking", user="u1"), 0.05)
        held.release()
        await mem.remember("User likes climbing", user="u1")
        assert [n.content for n in await mem.list(user="u1")] == ["User likes climbing"]
        assert await asyncio.wait_for(mem.flush(), 30)
        await asyncio.wait_for(mem.close(), 30)

    asyncio.run(main())


def test_a_call_cancelled_after_its_commit_returns_its_result(tmp_path: Path) -> None:
    async def main() -> None:
        mem = AsyncMemory(str(tmp_path / "r.db"), embedder=FakeEmbedder())
        service = mem.service
        committed, release = threading.Event(), threading.Event()
        core = service.memories.core
        prune = core.prune

        def slow_prune(*args: Any, **kwargs: Any) -> None:  # runs after the fact's commit
            committed.set()
            release.wait(30)
            prune(*args, **kwargs)

        core.prune = slow_prune  # type: ignore[method-assign]
        task = asyncio.ensure_future(mem.remember("User likes hiking", user="u1"))
        while not committed.is_set():
            await asyncio.sleep(0.005)
        task.cancel()
        await asyncio.sleep(0)
        release.set()
        result = await task  # the fact is stored: the call says so
        assert result.action == "created"
        assert [n.id for n in await mem.list(user="u1")] == [result.memory.id]
        await mem.close()

    asyncio.run(main())


def test_a_correct_cancelled_after_its_commit_returns_the_new_fact(tmp_path: Path) -> None:
    async def main() -> None:
        mem = AsyncMemory(str(tmp_path / "k.db"), embedder=None)
        old = (await mem.remember("User prefers green tea", user="u1")).memory
        store: Any = mem.service.store
        get_node = store.memories.get_node
        reading, release = threading.Event(), threading.Event()

        def slow_get(ns: str, mid: str) -> Any:
            if mid != old.id and not reading.is_set():  # the new fact, read back
                reading.set()
                release.wait(30)
            return get_node(ns, mid)

        store.memories.get_node = slow_get
        task = asyncio.ensure_future(mem.correct(old.id, "User prefers white tea"))
        while not reading.is_set():
            await asyncio.sleep(0.005)
        task.cancel()
        await asyncio.sleep(0)
        release.set()
        result = await task
        assert result.action == "corrected" and result.memory.content == "User prefers white tea"
        await mem.close()

    asyncio.run(main())


async def until(event: threading.Event) -> None:
    for _ in range(6000):  # 30 s: a hang fails the test instead
        if event.is_set():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("never happened")


def test_a_cancelled_consolidation_stops_at_once_keeping_the_sessions_it_finished(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        mem = AsyncMemory(
            str(tmp_path / "s.db"), embedder=None, consolidate_on_session_switch=False
        )
        await mem.add("Remember that I prefer window seats", user="u1", session="s1")
        await mem.add("Remember that I am allergic to peanuts", user="u1", session="s2")
        store: Any = mem.service.store
        claim, second, release = store.jobs.claim_episodes, threading.Event(), threading.Event()
        calls = []

        def slow_claim(*args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            if len(calls) == 2:  # the second session, inside its transaction
                second.set()
                release.wait(30)
            return claim(*args, **kwargs)

        store.jobs.claim_episodes = slow_claim
        task = asyncio.ensure_future(mem.consolidate(user="u1"))
        await until(second)
        task.cancel()
        await asyncio.sleep(0)
        assert task.done() and task.cancelled()  # not when the whole job is done
        release.set()
        await mem.add("Just a turn", user="u1", session="s3")  # after the rollback
        pending = [p.session for p in await mem.service.consolidation.pending_sessions(user="u1")]
        assert pending == ["s2", "s3"]
        facts = [n.content for n in await mem.list(user="u1") if n.type != "episodic"]
        assert facts == ["User prefers window seats"]
        await mem.close()

    asyncio.run(main())


def test_a_cancelled_maintenance_frees_its_lock(tmp_path: Path) -> None:
    async def main() -> None:
        mem = AsyncMemory(
            str(tmp_path / "n.db"), embedder=None, consolidate_on_session_switch=False
        )
        await mem.add("Remember that I prefer window seats", user="u1", session="s1")
        store: Any = mem.service.store
        pending, release_lock = store.jobs.pending_sessions, store.jobs.release_lock
        working, go_on, freed = threading.Event(), threading.Event(), threading.Event()

        def slow_pending(*args: Any, **kwargs: Any) -> Any:
            mine = threading.current_thread().name.startswith("asyncio")  # not consolidation's
            if mine and not working.is_set():  # the run holds its lock now
                working.set()
                go_on.wait(30)
            return pending(*args, **kwargs)

        def noted_release(*args: Any, **kwargs: Any) -> Any:
            try:
                return release_lock(*args, **kwargs)
            finally:
                freed.set()

        store.jobs.pending_sessions, store.jobs.release_lock = slow_pending, noted_release
        task = asyncio.ensure_future(mem.maintain())
        await until(working)
        task.cancel()
        await asyncio.sleep(0)
        assert task.done() and task.cancelled()
        go_on.set()
        await until(freed)
        report = await mem.maintain()
        assert report.ran, report.message
        await mem.close()

    asyncio.run(main())


class DownEmbedder(FakeEmbedder):
    def embed(self, texts: Any) -> Any:
        raise ProviderError("the embedder is down")

    def embed_query(self, text: str) -> Any:
        raise ProviderError("the embedder is down")


def test_a_flush_its_caller_gave_up_on_holds_no_thread(tmp_path: Path) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(max_workers=1))
        mem = AsyncMemory(str(tmp_path / "f.db"), embedder=DownEmbedder())
        await mem.add("a turn that cannot be embedded now", user="u1")
        worker = mem.service.worker
        assert worker is not None
        flush, waiting = worker.flush, threading.Event()

        def noted(timeout: float | None = None) -> bool:
            waiting.set()
            return flush(timeout)

        worker.flush = noted  # type: ignore[method-assign]
        task = asyncio.ensure_future(mem.flush())  # never done while the embedder is down
        while not waiting.is_set():
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        try:
            assert await asyncio.wait_for(mem.count(), 20) == 1  # the one thread is free
            assert not await mem.flush(0.05)
        finally:
            worker.close(0.1)  # releases a thread still waiting in flush(), if any
        await asyncio.wait_for(mem.close(), 20)

    asyncio.run(main())


def test_store_and_model_work_of_async_calls_runs_off_the_loop_thread(tmp_path: Path) -> None:
    on_loop: list[str] = []

    def watch(obj: Any, names: list[str]) -> None:
        for name in names:
            method = getattr(obj, name)

            def wrapped(*args: Any, _m: Any = method, _n: str = name, **kwargs: Any) -> Any:
                if threading.current_thread() is threading.main_thread():
                    on_loop.append(_n)
                return _m(*args, **kwargs)

            setattr(obj, name, wrapped)

    async def main() -> None:
        mem = AsyncMemory(str(tmp_path / "l.db"), embedder=FakeEmbedder())
        watch(mem.service.store.db, ["tx", "reading"])
        watch(mem.service.embedder, ["embed", "embed_query"])
        await mem.add("I met Bob in Lisbon", user="u1", session="s1")
        fact = (await mem.remember("User prefers green tea", user="u1")).memory
        await mem.update(fact.id, "User prefers oolong tea")
        await mem.search("tea", user="u1")
        await mem.context("tea", user="u1")
        await mem.tools(user="u1").call("recall", {"query": "tea"})
        await mem.consolidate()
        await mem.flush(10)
        await mem.close()

    asyncio.run(main())
    assert on_loop == []


def test_hundreds_of_concurrent_remembers_of_one_fact_store_it_once(tmp_path: Path) -> None:
    async def main() -> None:
        mem = AsyncMemory(str(tmp_path / "m.db"), embedder=FakeEmbedder())
        async with asyncio.TaskGroup() as tg:
            same = [tg.create_task(mem.remember("User prefers green tea", user="u1"))
                    for _ in range(200)]  # fmt: skip
            keyed = [tg.create_task(mem.remember(f"Timezone is zone {i}", user="u2", key="tz"))
                     for i in range(100)]  # fmt: skip
        assert sorted(t.result().action for t in same).count("created") == 1
        assert [t.result().action for t in keyed].count("created") == 1
        assert await mem.count(user="u1") == 1
        assert await mem.count(user="u2", include_forgotten=True) == 1
        await mem.close()

    asyncio.run(main())


def test_one_async_memory_across_event_loops_and_the_sync_one_inside_a_loop(
    tmp_path: Path,
) -> None:
    mem = asyncio.run(_open(str(tmp_path / "e.db")))  # that loop is closed now
    asyncio.run(mem.remember("User likes jazz", user="u1"))

    def other_loop() -> None:
        asyncio.run(mem.remember("User likes blues", user="u1"))

    thread = threading.Thread(target=other_loop)
    thread.start()
    thread.join(30)
    assert asyncio.run(mem.count(user="u1")) == 2
    asyncio.run(mem.close())

    async def sync_inside() -> int:  # blocks this loop while it runs, and works
        with Memory(str(tmp_path / "s.db"), embedder=FakeEmbedder()) as sync:
            sync.remember("User likes folk", user="u1")
            sync.flush(10)
            return len(sync.search("folk", user="u1"))

    assert asyncio.run(asyncio.wait_for(sync_inside(), 60)) == 1


async def _open(path: str) -> AsyncMemory:
    return AsyncMemory(path, embedder=FakeEmbedder())


def test_a_service_method_is_written_once_and_runs_either_side(tmp_path: Path) -> None:
    """``@threaded``: awaiting a service method runs it off the loop thread, ``.now`` in
    the caller's; both validate the same way, and the class keeps the plain signature."""
    from memloci.errors import ValidationError
    from memloci.service.memories import Memories

    async def main() -> None:
        mem = AsyncMemory(str(tmp_path / "t.db"), embedder=FakeEmbedder())
        memories = mem.service.memories
        seen: list[threading.Thread] = []
        store_get = memories.store.memories.get_node

        def spy(*args: Any, **kwargs: Any) -> Any:
            seen.append(threading.current_thread())
            return store_get(*args, **kwargs)

        memories.store.memories.get_node = spy  # type: ignore[method-assign]
        fact = (await memories.remember("User likes tea", user="u1")).memory
        assert (await memories.get(fact.id)).content == "User likes tea"
        assert memories.get.now(fact.id).id == fact.id
        assert seen[-2] is not threading.current_thread()  # awaited: a worker thread
        assert seen[-1] is threading.current_thread()  # .now: this thread
        with pytest.raises(ValidationError):
            await memories.get("")
        with pytest.raises(ValidationError):
            memories.get.now("")
        assert "memory_id" in Memories.get.fn.__code__.co_varnames
        await mem.aclose()

    asyncio.run(main())
