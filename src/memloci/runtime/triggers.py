"""A minimal trigger runner (layer: runtime): run an agent's task on a schedule and/or
when a webhook is called, until stopped (``memloci run``'s daemon mode).

::

    runner = TriggerRunner(execute, [TriggerConfig(type="cron", every="10m", prompt="…")],
                           max_runs=None)
    await runner.serve()      # until SIGINT / SIGTERM / stop() / max_runs

``execute(task, trigger)`` runs one task (``memloci run`` gives an autonomous run that
records one episode with ``trigger`` as its metadata, then prunes old sessions). Runs
happen one at a time, in the order they were triggered:

* **cron** (``every: 10m``): the first run starts one interval after the runner, the
  next one interval after the previous run ended (runs never overlap or pile up);
  metadata ``{"trigger_type": "cron", "every": "10m"}``. With a cron expression
  (``schedule: "*/5 * * * *"``, :mod:`memloci.runtime.cron`) a run starts at each
  matching minute of local time (a minute that comes round during a run is skipped);
  metadata ``{"trigger_type": "cron", "schedule": "*/5 * * * *"}``.
* **webhook** (``port: 8080``): an HTTP server on 127.0.0.1 only. ``POST /`` with a JSON
  body ``{"task": "…"}`` (``prompt`` is accepted too; any other JSON object is given
  to the agent as the task, as JSON text) or a plain-text body queues one run and
  answers ``202 {"queued": true}``; metadata ``{"trigger_type": "webhook", "path": …}``.
  Other methods answer 405, an empty body 400, a body over 64 kB or a task over
  20,000 characters 413. A port already in use is a ConflictError at start.

* **file_watch** (``path: inbox/*.md``, ``poll: 2s``): every ``poll`` (default 1s) the
  modification times and sizes of the files at ``path`` (a file, a folder's files at
  any depth, or a glob; ``**`` spans folders) are compared with the last look; when a
  file was created, changed or deleted, one run starts with ``prompt`` and the list of
  changed files; metadata ``{"trigger_type": "file_watch", "path": …, "changed": […]}``.
  Changes made during a run start the next one; the first look only takes stock.
  Polling needs no extra dependency and works on every file system.

A failing run is reported and the runner goes on. SIGINT and SIGTERM stop it after the
run in progress (queued runs are dropped).
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import json
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memloci.errors import ConflictError
from memloci.models import TURN_MAX
from memloci.runtime.run_config import DEFAULT_TASK, TriggerConfig

logger = logging.getLogger("memloci.runtime")

BODY_MAX = 64 * 1024
HEAD_MAX = 16 * 1024
WATCH_MAX = 10_000  # files a file_watch trigger looks at
CHANGED_SHOWN = 50  # changed files named in a run's task and metadata
CHANGED_CHARS = 8_000  # and their names' length together
WATCH_TASK = "Files you watch changed. Look at them and call finish_task with a summary."
Execute = Callable[[str, Mapping[str, Any]], Awaitable[Any]]


@dataclass
class _Job:
    task: str
    trigger: dict[str, Any]
    done: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class TriggerRunner:
    """Runs ``execute`` for each trigger firing; see the module docstring. ``on_ready``
    gets a line per trigger once listening (e.g. the webhook's URL); ``warn`` gets the
    reports of failed runs."""

    def __init__(
        self,
        execute: Execute,
        triggers: list[TriggerConfig],
        *,
        max_runs: int | None = None,
        on_ready: Callable[[str], None] | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.execute, self.triggers, self.max_runs = execute, list(triggers), max_runs
        self.on_ready = on_ready or (lambda line: None)
        self.warn = warn or (lambda line: logger.warning("%s", line))
        self.runs = 0
        self.failed = 0
        self.ports: list[int] = []
        self._stop: asyncio.Event | None = None
        self._queue: asyncio.Queue[_Job] | None = None
        self._current: asyncio.Task[None] | None = None

    def stop(self) -> None:
        """Stop after the run in progress."""
        if self._stop is not None:
            self._stop.set()

    async def serve(self, *, signals: bool = True) -> int:
        """Run until stopped (``signals``: SIGINT / SIGTERM stop it); returns the number of
        runs executed."""
        loop = asyncio.get_running_loop()
        self._stop, self._queue = asyncio.Event(), asyncio.Queue()
        handled: list[signal.Signals] = []
        if signals:
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.add_signal_handler(sig, self.stop)
                    handled.append(sig)
        servers: list[asyncio.Server] = []
        tasks: list[asyncio.Task[None]] = []
        try:
            for trig in self.triggers:
                if trig.type == "webhook":
                    try:
                        server = await asyncio.start_server(self._http, "127.0.0.1", trig.port or 0)
                    except OSError as exc:
                        raise ConflictError(
                            f"cannot listen on 127.0.0.1:{trig.port}: {exc.strerror or exc}",
                            hint="choose another port (0 picks a free one)",
                        ) from None
                    port = int(server.sockets[0].getsockname()[1])
                    servers.append(server)
                    self.ports.append(port)
                    self.on_ready(f"webhook: POST a task to http://127.0.0.1:{port}/")
                elif trig.type == "file_watch":
                    seen = await asyncio.to_thread(scan, trig.path or "")  # the first look
                    tasks.append(asyncio.create_task(self._watch(trig, seen)))
                    every = f"polled every {trig.seconds:g}s"
                    self.on_ready(f"file_watch: {trig.path} ({every}): {trig.prompt or WATCH_TASK}")
                else:
                    tasks.append(asyncio.create_task(self._cron(trig)))
                    self.on_ready(f"cron: {trig.when}: {trig.prompt or DEFAULT_TASK}")
            worker = asyncio.create_task(self._work())
            await self._stop.wait()
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
            if self._current is not None:  # let the run in progress end
                await asyncio.gather(self._current, return_exceptions=True)
        finally:
            for task in tasks:
                task.cancel()
            for server in servers:
                server.close()
                await server.wait_closed()
            await asyncio.gather(*tasks, return_exceptions=True)
            for sig in handled:
                loop.remove_signal_handler(sig)
        return self.runs

    async def _work(self) -> None:
        assert self._queue is not None and self._stop is not None
        while not self._stop.is_set():
            job = await self._queue.get()
            self._current = asyncio.create_task(self._run(job))
            try:
                await asyncio.shield(self._current)
            finally:
                if not job.done.done():
                    job.done.set_result(None)
            if self.max_runs is not None and self.runs >= self.max_runs:
                self._stop.set()

    async def _run(self, job: _Job) -> None:
        self.runs += 1
        try:
            await self.execute(job.task, job.trigger)
        except Exception as exc:  # a run never stops the runner
            self.failed += 1
            self.warn(f"memloci: the {job.trigger.get('trigger_type')} run failed: {exc}")

    async def _cron(self, trig: TriggerConfig) -> None:
        assert self._queue is not None
        schedule = trig.cron
        meta: dict[str, Any] = {"trigger_type": "cron"}
        meta.update({"every": trig.every} if schedule is None else {"schedule": schedule.text})
        last = datetime.now()
        while True:
            if schedule is None:
                await asyncio.sleep(trig.seconds)
            else:  # never the same minute twice, even when the clock wakes us early
                now = datetime.now()
                due = schedule.next_after(max(now, last))
                await asyncio.sleep(max(0.0, (due - now).total_seconds()))
                last = due
            job = _Job(trig.prompt or DEFAULT_TASK, dict(meta))
            await self._queue.put(job)
            await job.done  # the next interval starts when this run has ended

    async def _watch(self, trig: TriggerConfig, seen: dict[str, tuple[int, int]]) -> None:
        assert self._queue is not None
        pattern = trig.path or ""
        while True:
            await asyncio.sleep(trig.seconds)
            now = await asyncio.to_thread(scan, pattern)
            changed = sorted(p for p in seen.keys() | now.keys() if seen.get(p) != now.get(p))
            seen = now
            if not changed:
                continue
            shown: list[str] = []
            size = 0
            for name in changed[:CHANGED_SHOWN]:  # metadata stays far below its 64 kB
                size += len(name)
                if shown and size > CHANGED_CHARS:
                    break
                shown.append(name)
            more = f" and {len(changed) - len(shown)} more" if len(changed) > len(shown) else ""
            task = f"{trig.prompt or WATCH_TASK}\n\nChanged files: {', '.join(shown)}{more}"
            meta = {"trigger_type": "file_watch", "path": pattern, "changed": shown}
            job = _Job(task, meta)
            await self._queue.put(job)
            await job.done  # changes made meanwhile start the next run

    # ------------------------------------------------------------------ the webhook
    async def _http(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, body = await self._request(reader, writer)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            status, body = 400, {"error": "malformed HTTP request"}
        except ConnectionError:
            return
        data = json.dumps(body).encode()
        reason = {
            202: "Accepted",
            400: "Bad Request",
            405: "Method Not Allowed",
            413: "Content Too Large",
            503: "Service Unavailable",
        }[status]
        head = (
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
        )
        with contextlib.suppress(ConnectionError):
            writer.write(head.encode() + data)
            await writer.drain()
            writer.close()
            await writer.wait_closed()

    async def _request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> tuple[int, dict[str, Any]]:
        raw = await reader.readuntil(b"\r\n\r\n")
        if len(raw) > HEAD_MAX:
            return 400, {"error": "request head too large"}
        lines = raw.decode("latin-1").split("\r\n")
        method, path, *_ = lines[0].split(" ")
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        if method != "POST":
            return 405, {"error": 'POST a task (JSON {"task": …} or plain text)'}
        length = int(headers.get("content-length", "0"))
        if length > BODY_MAX:
            return 413, {"error": f"the body is over {BODY_MAX} bytes"}
        text = (await reader.readexactly(length)).decode("utf-8", "replace") if length else ""
        task = _task(text, headers.get("content-type", ""))
        if not task:
            return 400, {"error": 'empty task: POST {"task": "…"} or plain text'}
        if len(task) > TURN_MAX:
            return 413, {"error": f"the task is over {TURN_MAX} characters"}
        assert self._queue is not None and self._stop is not None
        if self._stop.is_set():
            return 503, {"error": "the runner is stopping"}
        port = writer.get_extra_info("sockname")[1]
        await self._queue.put(_Job(task, {"trigger_type": "webhook", "path": path, "port": port}))
        return 202, {"queued": True, "position": self._queue.qsize()}


def scan(pattern: str) -> dict[str, tuple[int, int]]:
    """``{file: (mtime_ns, size)}`` of the files at ``pattern``: a file, a folder (its
    files at any depth) or a glob; at most :data:`WATCH_MAX` files."""
    if glob.has_magic(pattern):
        found = glob.iglob(pattern, recursive=True)
    elif os.path.isdir(pattern):
        found = (os.path.join(d, f) for d, _, files in os.walk(pattern) for f in files)
    else:
        found = iter([pattern])
    out: dict[str, tuple[int, int]] = {}
    for path in found:
        try:
            st = os.stat(path)
        except OSError:  # gone, or not readable: not there
            continue
        if os.path.isfile(path):
            out[path] = (st.st_mtime_ns, st.st_size)
            if len(out) >= WATCH_MAX:
                break
    return out


def _task(text: str, content_type: str) -> str:
    """The task in a webhook body: ``task`` / ``prompt`` of a JSON object, else the JSON
    itself, else the text."""
    text = text.strip()
    if not text:
        return ""
    if "json" in content_type or text[:1] in "{[":
        try:
            data = json.loads(text)
        except ValueError:
            return text
        if isinstance(data, dict):
            for key in ("task", "prompt"):
                if isinstance(data.get(key), str) and data[key].strip():
                    return str(data[key]).strip()
        return json.dumps(data, ensure_ascii=False)
    return text


__all__ = ["TriggerRunner", "scan"]
