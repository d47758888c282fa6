"""Consolidation and maintenance (layer: service): ``MemoryService.consolidation``.

It holds the shared :class:`~memloci.service.core.Core` (store, settings, embedder,
worker); the work itself lives in :mod:`memloci.consolidation`.

Triggers: ``consolidate`` (on demand), ``end_session``, a session switch seen by the hot
path (a user/agent's previous sessions are consolidated in a background thread) and
``maintain`` (the nightly job).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING

from memloci import validate as v
from memloci.consolidation.profiles import embed_profiles
from memloci.errors import MemlociError, ValidationError
from memloci.exiting import exiting, on_exit
from memloci.models import MemoryNode, NodeType, utcnow
from memloci.service.calls import in_steps, threaded
from memloci.service.core import Core, Service
from memloci.storage.base import PendingSession

if TYPE_CHECKING:  # loaded when consolidation or maintenance first runs, not by every open
    from memloci.consolidation.base import Extractor
    from memloci.consolidation.consolidator import ConsolidationReport, Consolidator
    from memloci.consolidation.maintenance import MaintenanceReport
    from memloci.providers.llm import LLM

log = logging.getLogger("memloci.consolidation")
_Owner = tuple[str, str | None, str | None]  # namespace, user, agent


class _Background:
    """One daemon thread consolidating the sessions a user/agent left, in order.

    Each session waits until no turn has been added for ``IDLE`` seconds and no search
    has run for ``QUERY_GAP`` seconds (at most ``MAX_DEFER``), so bulk loading, busy
    conversations and searches are not slowed by it: on CPython a busy background thread
    makes a search wait for the interpreter lock after each database or numpy call."""

    IDLE, QUERY_GAP, MAX_DEFER = 0.2, 0.05, 10.0

    def __init__(self, run: Callable[[str, str | None, str | None], object]) -> None:
        self._run = run
        self._jobs: queue.Queue[_Owner | None] = queue.Queue()
        self._queued: set[_Owner] = set()
        self._pending = 0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.last_turn = 0.0  # time.monotonic() of the latest turn (set by the hot path)
        self.last_query = 0.0  # when the latest search ended
        self._queries = 0  # searches running now
        # the interpreter exits without close(): stop at once, quietly (kept while this is)
        self._exit_hook = on_exit(self._stop_for_exit)

    def _stop_for_exit(self) -> None:
        """Shutdown began (the program ended without close()): drop the queued jobs and
        stop after the running one's current session, without waiting for it; their
        sessions stay pending in the store for the next run."""
        with self._cond:
            self._closed = True
            started = self._thread is not None
        if started:
            self._jobs.put(None)

    @contextlib.contextmanager
    def query(self) -> Iterator[None]:
        """Mark a search as running (the background waits for it to end)."""
        with self._cond:
            self._queries += 1
        try:
            yield
        finally:
            with self._cond:
                self._queries -= 1
                self.last_query = time.monotonic()

    def submit(self, owner: _Owner) -> None:
        with self._cond:
            if self._closed or owner in self._queued:  # queued, not started: it will do
                return
            self._queued.add(owner)
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="memloci-consolidation", daemon=True
                )
                self._thread.start()
        self._jobs.put(owner)

    def _loop(self) -> None:
        # yield to the hot path and to queries, like the embedding worker (Linux only)
        with contextlib.suppress(AttributeError, OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        while (owner := self._jobs.get()) is not None:
            self.wait_for_quiet()
            with self._cond:
                self._queued.discard(owner)
            try:
                # closing or exiting: queued sessions stay pending for the next run
                if not self.closed:
                    self._run(*owner)
            except Exception as exc:  # keep the thread alive; the nightly run retries
                if exiting():  # the interpreter is shutting down: its pools refuse work
                    log.debug("background consolidation stopped by interpreter exit: %s", exc)
                elif self._closed and isinstance(exc, MemlociError):  # the store closed
                    log.debug("background consolidation stopped by close: %s", exc)
                else:
                    log.warning("background consolidation failed", exc_info=True)
            finally:
                with self._cond:
                    self._pending -= 1
                    self._cond.notify_all()

    def wait_for_quiet(self) -> None:
        """Wait until turns and searches pause (at most ``MAX_DEFER`` seconds)."""
        deadline = time.monotonic() + self.MAX_DEFER
        while not self._closed and (now := time.monotonic()) < deadline:
            since_query = 0.0 if self._queries else now - self.last_query
            wait = max(self.IDLE - (now - self.last_turn), self.QUERY_GAP - since_query)
            if wait <= 0:
                return
            time.sleep(min(wait, deadline - now))

    def join(self, timeout: float | None = None) -> bool:
        """Wait until every job submitted so far is done; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout)

    @property
    def closed(self) -> bool:
        """Closed, or the interpreter is exiting (no new session is started)."""
        return self._closed or exiting()

    def close(self, timeout: float | None = 30.0) -> None:
        """Stop: the running job stops after its current session, queued jobs are
        dropped (their sessions stay pending in the store); waits up to ``timeout``."""
        with self._cond:
            self._closed, thread = True, self._thread
        if thread is not None:
            self._jobs.put(None)
            thread.join(timeout)


class Consolidation(Service):
    """``consolidate``, ``end_session``, ``maintain`` and the session-switch trigger."""

    extractor: Extractor | None = None  # set to use another extractor everywhere

    def __init__(self, core: Core) -> None:
        super().__init__(core)
        self._llm: LLM | None = None
        self._llm_made = False  # built (or assigned) already
        self._seen: dict[_Owner, str] = {}  # each owner's session last seen by the hot path
        self._seen_lock = threading.Lock()
        self._bg: _Background | None = None

    # ------------------------------------------------------------------ providers
    @property
    def llm(self) -> LLM | None:
        """The LLM for extraction and enrichment (``settings.llm``; None = rules only).
        Built on first use; assign to inject one."""
        if not self._llm_made:
            name = self.settings.llm or "none"
            if name != "none":  # else no HTTP client to load (httpx: ~0.3 s)
                from memloci.providers.llm import load_llm

                self._llm = load_llm(name, **self.settings.llm_options)
            self._llm_made = True
        return self._llm

    @llm.setter
    def llm(self, value: LLM | None) -> None:
        self._llm, self._llm_made = value, True

    def default_extractor(self) -> Extractor:
        """``extractor`` if set, else the LLM extractor with an LLM, else the rules."""
        if self.extractor is not None:
            return self.extractor
        llm = self.llm
        if llm is not None:
            from memloci.consolidation.llm_extractor import LLMExtractor

            return LLMExtractor(llm)
        from memloci.consolidation.rules import RuleExtractor

        return RuleExtractor()

    def _consolidator(self, extractor: Extractor | None = None) -> Consolidator:
        from memloci.consolidation.consolidator import Consolidator

        return Consolidator(
            self.store,
            self.settings,
            extractor or self.default_extractor(),
            embedder=self.embedder,
        )

    # ------------------------------------------------------------------ consolidation
    @in_steps
    def consolidate(
        self,
        session: str | None = None,
        *,
        namespace: str | None = None,
        user: str | None = None,
        extractor: Extractor | None = None,
        max_episodes: int | None = None,
        without_session: bool = False,
    ) -> ConsolidationReport:
        """Turn unconsolidated episodes into facts, opinions and procedures.

        One session, or every pending session (of ``user``, if given), oldest first;
        the turns an owner stored without a session count as one session of their own
        (``without_session=True``: only those). Each batch of episodes is stored in one
        transaction with its ``derived_from`` edges, entities and supersessions; a
        consolidated session is skipped, so running it twice creates nothing new. A
        session whose extraction fails stays pending and is listed in ``failed``.
        ``max_episodes`` caps the episodes read by this call (a role's
        ``consolidation.max_episodes_per_run``); the rest stay pending."""
        ns, sid, uid = self.core.ns(namespace), v.ident(session), v.ident(user, "user")
        cap = None if max_episodes is None else v.limit(max_episodes, "max_episodes", 100_000)
        if without_session and sid is not None:
            raise ValidationError("pass a session or without_session=True, not both")
        from memloci.consolidation.base import Extractor

        if extractor is not None and not isinstance(extractor, Extractor):
            raise ValidationError(
                "extractor must have a name and an extract(episodes, *, known) method"
            )
        sessions: list[str | PendingSession]
        if sid is not None:
            sessions = [sid]
        else:
            sessions = [
                p
                for p in self.store.jobs.pending_sessions(ns, user=uid)
                if p.session is None or not without_session
            ]
        return self._consolidate_sessions(ns, sessions, extractor, cap)

    def _consolidate_sessions(
        self,
        ns: str,
        sessions: list[str | PendingSession],
        extractor: Extractor | None = None,
        max_episodes: int | None = None,
        keep_going: Callable[[], bool] | None = None,
    ) -> ConsolidationReport:
        report = self._consolidator(extractor).run(
            ns, sessions, max_episodes=max_episodes, keep_going=keep_going
        )
        if report.created:
            self.core.prune_facts(ns, report.created)
            self.core.prune(ns, (NodeType.PROCEDURAL,), self.settings.max_procedures)
            if self.worker:
                self.worker.wake()
        return report

    @threaded
    def pending_sessions(
        self, *, namespace: str | None = None, user: str | None = None, limit: int = 1000
    ) -> list[PendingSession]:
        """Sessions with conversation turns not consolidated yet, oldest first; per
        owner, the turns stored without a session are one entry (``session`` None)."""
        ns, uid, lim = (
            self.core.ns(namespace),
            v.ident(user, "user"),
            v.limit(limit, "limit", 100_000),
        )
        return self.store.jobs.pending_sessions(ns, user=uid, limit=lim)

    @in_steps
    def end_session(self, session: str, *, namespace: str | None = None) -> ConsolidationReport:
        """The session is over: consolidate it now."""
        ns, sid = self.core.ns(namespace), v.ident(session)
        if sid is None:
            raise ValidationError("end_session needs a session id")
        return self._consolidate_sessions(ns, [sid])

    # ------------------------------------------------------------------ session switch
    def session_seen(self, node: MemoryNode) -> None:
        """Hot-path hook, before a turn is stored: a dict lookup unless the session is
        new to this process for its user/agent; then the session is recorded and the
        owner's other pending sessions go to the background thread."""
        bg = self._bg
        if bg is not None:
            bg.last_turn = time.monotonic()
        if node.session is None:
            return
        owner = (node.namespace, node.user, node.agent)
        seen = self._seen
        if seen.get(owner) == node.session:
            return
        with self._seen_lock:
            if seen.get(owner) == node.session:
                return
            seen[owner] = node.session
        self.store.jobs.register_session(
            node.namespace, node.session, user=node.user, agent=node.agent, now=utcnow()
        )
        if self.settings.consolidate_on_session_switch:
            self._background().submit(owner)

    def _background(self) -> _Background:
        bg = self._bg
        if bg is None:
            with self._seen_lock:
                if self._bg is None:
                    self._bg = _Background(self._consolidate_left)
                bg = self._bg
        assert bg is not None
        return bg

    def _consolidate_left(self, ns: str, user: str | None, agent: str | None) -> None:
        """Consolidate the pending sessions of this user and agent but their current one.
        The current one is read *after* the pending list: the hot path names a session
        before storing its first turn, so a turn listed here has its session named."""
        pending = self.store.jobs.pending_sessions(ns, user=user)
        with self._seen_lock:
            current = self._seen.get((ns, user, agent))
        # sessions only: turns stored without one wait for consolidate() or maintenance
        sessions: list[str | PendingSession] = [
            p
            for p in pending
            if p.session is not None
            and p.session != current
            and p.user == user
            and p.agent == agent
        ]
        if sessions:
            bg = self._bg

            def stopping() -> bool:
                return bg is not None and bg.closed

            def keep_going() -> bool:  # before each session: let turns and searches pass
                if bg is not None:
                    bg.wait_for_quiet()
                return not stopping()

            report = self._consolidate_sessions(ns, sessions, keep_going=keep_going)
            if report.failed and stopping():  # closed (or exiting) under it: expected
                log.debug("background consolidation stopped by close: %s", report.failed)
            elif report.failed:
                log.warning("background consolidation left sessions pending: %s", report.failed)

    def foreground(self) -> contextlib.AbstractContextManager[None]:
        """Around a search: background consolidation pauses until it is over."""
        bg = self._bg
        return bg.query() if bg is not None else contextlib.nullcontext()

    def wait_for_consolidation(self, timeout: float | None = None) -> bool:
        """Wait until background consolidation (after session switches) is done; False
        on timeout."""
        bg = self._bg
        return bg.join(timeout) if bg is not None else True

    def close(self, timeout: float = 30.0) -> None:
        bg = self._bg
        if bg is not None:
            bg.close(timeout)

    # ------------------------------------------------------------------ maintenance
    @in_steps
    def maintain(self, *, now: datetime | None = None) -> MaintenanceReport:
        """The nightly job: consolidate pending sessions, decay (and prune) facts, enrich
        entities and infer causal links (with an LLM), embed what is pending and record
        ``last_maintenance``. When another process or thread is already running it, this
        one does nothing and says so (``ran`` False). When the configured LLM cannot be
        built, the LLM steps and consolidation wait for the next run (sessions stay
        pending rather than being consolidated by the rules instead)."""
        now = v.when(now)
        try:
            llm, consolidator, problem = self.llm, self._consolidator(), None
        except MemlociError as exc:
            llm, consolidator, problem = None, None, f"llm {self.settings.llm!r}: {exc}"
        from memloci.consolidation.maintenance import Maintenance

        job = Maintenance(
            self.store,
            self.settings,
            consolidator=consolidator,
            llm=llm,
            embed=self._embed_all if self.worker or self.embedder else None,
        )
        report = job.run(now=now)
        if problem is not None and report.ran:
            report.errors.insert(0, problem)
        if report.ran:
            for ns in report.namespaces:
                self.core.prune_facts(ns, report.created_ids(ns))
                self.core.prune(ns, (NodeType.PROCEDURAL,), self.settings.max_procedures)
        return report

    def _embed_all(self) -> int:
        """Embed what is pending, and the entity profiles without a vector (written by
        enrichment, or before profiles had vectors)."""
        done = 0
        if self.worker is not None:
            while n := self.worker.run_once():
                done += n
        for ns in dict.fromkeys([self.settings.namespace, *self.store.namespaces()]):
            done += embed_profiles(self.store, self.embedder, ns)
        return done
