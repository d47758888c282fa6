"""Maintenance (layer: consolidation): the nightly job, safe from several processes.

One run, for every namespace of the store:

1. **consolidate** the pending sessions (see :mod:`memloci.consolidation.consolidator`);
2. **decay** current facts, opinions and procedures with a rate > 0:
   ``c = base · exp(−rate · days_since_access^0.8)``, where ``base`` is the confidence
   at the last access or update (kept in ``decay_state``, so nightly runs follow one
   curve and do not compound); below ``decay_threshold`` a memory is soft-deleted.
   Episodes and protected memories (rate 0) never change;
3. **enrich** entities mentioned at least ``entity_enrichment_min_mentions`` times that
   have no summary (LLM);
4. infer **causal** links between consecutive episodes (LLM; ``causal_batch_size``
   pairs a run, continuing where the last run stopped);

then embed whatever is pending and record ``last_maintenance``. A named lock in the
store (owner + expiry, taken in a write transaction, renewed between steps) lets one
process do the work while the others report that it is already running; a lock left by
a crashed run expires. A run killed on this host (SIGKILL, OOM) is not waited for: its
owner names the host, the process id and this machine's process namespace, and a lock
whose process is gone from this host is taken over at once (:func:`dead_here`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import socket
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from memloci.config import Settings
from memloci.consolidation.consolidator import ConsolidationReport, Consolidator
from memloci.decay import curve, decayed
from memloci.models import Edge, EdgeType, MemoryNode, NodeType, short_id, utcnow
from memloci.storage import cancel
from memloci.storage.base import DecayUpdate, NodeFilter, Store
from memloci.storage.locks import entities_lock

if TYPE_CHECKING:
    from memloci.providers.llm import LLM

log = logging.getLogger("memloci.maintenance")

LOCK = "maintenance"
LOCK_TTL = timedelta(minutes=30)  # renewed between steps; a crashed run frees it by then
DECAY_PAGE = 500
ENRICH_LIMIT = 50  # entity summaries per namespace and run
DECAYING = (NodeType.SEMANTIC, NodeType.OPINION, NodeType.PROCEDURAL)


class MaintenanceReport(BaseModel):
    """What a maintenance run did. ``ran`` is False when another run held the lock
    (``holder`` says which; nothing was done)."""

    model_config = ConfigDict(defer_build=True)

    started: datetime
    finished: datetime | None = None
    ran: bool = True
    holder: str | None = None
    message: str = ""
    namespaces: list[str] = Field(default_factory=list)
    llm: str | None = None
    sessions_consolidated: int = 0
    sessions_failed: int = 0
    facts_created: int = 0
    facts_confirmed: int = 0
    facts_superseded: int = 0
    decayed: int = 0
    forgotten: int = 0
    entities_enriched: int = 0
    causal_edges: int = 0
    embedded: int = 0
    errors: list[str] = Field(default_factory=list)
    _created: dict[str, list[str]] = PrivateAttr(default_factory=dict)  # ids, by namespace

    def created_ids(self, namespace: str) -> list[str]:
        """The ids of the facts this run's consolidation created in ``namespace``."""
        return list(self._created.get(namespace, ()))

    def add(self, report: ConsolidationReport) -> None:
        self._created.setdefault(report.namespace, []).extend(report.created)
        self.sessions_consolidated += len(report.sessions)
        self.sessions_failed += len(report.failed)
        self.facts_created += len(report.created)
        self.facts_confirmed += report.confirmed
        self.facts_superseded += len(report.superseded)
        self.errors += [f"{report.namespace}/{s}: {e}" for s, e in report.failed.items()]


@functools.cache
def _here() -> str:
    """This machine's process namespace, as a short token: two containers may share a
    host name (and a store on a volume) while their process ids mean different
    processes. Empty where it cannot be read (not Linux): the host name alone counts."""
    parts = []
    with contextlib.suppress(OSError):
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text())
    with contextlib.suppress(OSError):
        parts.append(os.readlink("/proc/self/ns/pid"))
    if not parts:
        return ""
    return hashlib.blake2b("|".join(p.strip() for p in parts).encode(), digest_size=4).hexdigest()


def lock_owner() -> str:
    """A name for this run, unique across hosts, processes and calls:
    ``host:pid:run[:namespace]`` (see :func:`_here`)."""
    here = _here()
    return f"{socket.gethostname()}:{os.getpid()}:{short_id()}" + (f":{here}" if here else "")


def dead_here(owner: str) -> bool:
    """Whether ``owner`` (a :func:`lock_owner`) is a process of this host and process
    namespace that is no longer alive (``os.kill(pid, 0)``: no such process). Another
    host's, another namespace's, this process's own, a living one's, or a name of
    another form: False (the lock's expiry frees those). A process id already reused
    by another process reads as alive: the expiry frees that lock too."""
    host, _, rest = owner.partition(":")
    pid, _, rest = rest.partition(":")
    _run, _, token = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit() or token != _here():
        return False
    if int(pid) == os.getpid() or int(pid) <= 0:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive but another user's (EPERM), or not to be judged
        return False
    return False


class Maintenance:
    """One maintenance run over a store. ``consolidator`` may be None (no consolidation),
    ``llm`` None (no enrichment or causal inference), ``embed`` catches up embeddings."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        *,
        consolidator: Consolidator | None,
        llm: LLM | None,
        embed: Callable[[], int] | None = None,
    ) -> None:
        self.store, self.settings = store, settings
        self.consolidator, self.llm, self.embed = consolidator, llm, embed
        self.owner = lock_owner()

    def run(self, *, now: datetime | None = None) -> MaintenanceReport:
        """Do the work unless another run holds the lock. ``now`` is the time decay is
        computed for (tests pass a future one); the rest uses the clock."""
        started = utcnow()
        report = MaintenanceReport(
            started=started, llm=getattr(self.llm, "model_id", None) if self.llm else None
        )
        if not self.store.jobs.acquire_lock(
            LOCK, self.owner, now=started, ttl=LOCK_TTL, stale=dead_here
        ):
            held = self.store.jobs.lock_holder(LOCK, now=utcnow())
            report.ran, report.finished = False, utcnow()
            report.holder = held[0] if held else None
            until = f" until {held[1]:%Y-%m-%d %H:%M} UTC" if held else ""
            report.message = f"maintenance is already running ({report.holder or '?'}{until})"
            return report
        try:
            self._work(report, now or started)
        finally:
            with cancel.shielded():  # a run its caller cancelled frees the lock too
                self.store.jobs.release_lock(LOCK, self.owner)
        report.finished = utcnow()
        done = "done" if not report.errors else f"done with {len(report.errors)} errors"
        report.message = f"maintenance {done}"
        return report

    def renew(self) -> bool:
        """Extend the lock; False if it was lost (it expired and another run took it)."""
        return self.store.jobs.acquire_lock(LOCK, self.owner, now=utcnow(), ttl=LOCK_TTL)

    def _work(self, report: MaintenanceReport, now: datetime) -> None:
        report.namespaces = self.store.namespaces()
        steps: list[tuple[str, Callable[[str], None]]] = [
            ("consolidation", lambda ns: self._consolidate(report, ns)),
            ("decay", lambda ns: self._decay(report, ns, now)),
        ]
        if self.llm is not None:
            steps += [
                ("enrichment", lambda ns: self._enrich(report, ns)),
                ("causal inference", lambda ns: self._causal(report, ns)),
            ]
        for ns in report.namespaces:
            for name, step in steps:
                if not self.renew():
                    report.errors.append("the maintenance lock was lost; stopped early")
                    return
                self._guarded(report, f"{name} of {ns}", lambda: step(ns))  # noqa: B023
        if self.embed is not None:
            self._guarded(report, "embedding", lambda: self._embed(report))
        self._guarded(report, "cleanup", self.store.jobs.drop_orphans)
        self.store.set_meta("last_maintenance", report.started.isoformat())

    def _embed(self, report: MaintenanceReport) -> None:
        if self.embed is not None:
            report.embedded += self.embed()

    @staticmethod
    def _guarded(report: MaintenanceReport, what: str, fn: Callable[[], object]) -> None:
        try:
            fn()
        except Exception as exc:  # one failed step must not stop the others
            log.warning("maintenance: %s failed", what, exc_info=True)
            report.errors.append(f"{what}: {exc}")

    # ------------------------------------------------------------------ steps
    def _consolidate(self, report: MaintenanceReport, ns: str) -> None:
        if self.consolidator is None:
            return
        sessions = self.store.jobs.pending_sessions(ns)  # turns without a session too, per owner
        if sessions:
            report.add(self.consolidator.run(ns, sessions, keep_going=self.renew))

    def _decay(self, report: MaintenanceReport, ns: str, now: datetime) -> None:
        threshold = self.settings.decay_threshold
        for kind in DECAYING:
            after = 0
            while page := self.store.jobs.decay_candidates(ns, kind, after=after, limit=DECAY_PAGE):
                after = page[-1].cursor
                updates: list[DecayUpdate] = []
                forget: list[str] = []
                for cand in page:
                    node = cand.node
                    base, anchor = curve(node, cand.base, cand.anchor)
                    conf = decayed(base, node.decay_rate, anchor, now)
                    if conf < threshold:
                        forget.append(node.id)
                    elif abs(conf - node.confidence) > 1e-9 or cand.anchor != anchor:
                        updates.append(DecayUpdate(node.id, conf, base, anchor))
                if updates or forget:
                    self.store.jobs.apply_decay(ns, updates, forget, now=utcnow())
                report.decayed += len(updates)
                report.forgotten += len(forget)

    def _enrich(self, report: MaintenanceReport, ns: str) -> None:
        from memloci.consolidation.llm_tasks import summarize_entity

        assert self.llm is not None
        facts_only = NodeFilter(namespaces=(ns,), types=DECAYING)
        entities = self.store.jobs.entities_to_enrich(
            ns, min_mentions=self.settings.entity_enrichment_min_mentions, limit=ENRICH_LIMIT
        )
        for entity in entities:
            facts = self.store.entities.entity_nodes(facts_only, entity.id, limit=50)
            facts = facts or self.store.entities.entity_nodes(
                NodeFilter(namespaces=(ns,)), entity.id
            )
            if not facts:
                continue
            summary = summarize_entity(self.llm, entity, facts)[:2000]
            if not summary:
                continue
            with self.store.exclusive(entities_lock(ns)):  # no mention counted meanwhile lost
                fresh = self.store.entities.get_entity(ns, entity.id)
                if fresh is None or fresh.summary:
                    continue
                self.store.entities.update_entity(fresh.model_copy(update={"summary": summary}))
            report.entities_enriched += 1

    def _causal(self, report: MaintenanceReport, ns: str) -> None:
        from memloci.consolidation.llm_tasks import CAUSAL_DEFAULT_CONFIDENCE, infer_causal

        assert self.llm is not None
        size = self.settings.causal_batch_size
        cursor_key = f"causal_cursor:{ns}"
        after = int(self.store.get_meta(cursor_key) or 0)
        raw = self.store.jobs.temporal_pairs(ns, after=after, limit=size) if size else []
        if not raw:
            return
        found = self.store.memories.get_nodes(ns, list({i for _, a, b in raw for i in (a, b)}))
        nodes: dict[str, MemoryNode] = {n.id: n for n in found if n.valid_until is None}
        pairs = [(nodes[a], nodes[b]) for _, a, b in raw if a in nodes and b in nodes]
        links = infer_causal(self.llm, pairs) if pairs else []
        now = utcnow()
        edges = [
            Edge(
                id=short_id() + short_id(),
                namespace=ns,
                source_id=link.cause_id,
                target_id=link.effect_id,
                relation=EdgeType.CAUSAL,
                predicate="led_to",
                confidence=link.confidence if link.confidence else CAUSAL_DEFAULT_CONFIDENCE,
                valid_from=now,
                created_at=now,
                evidence=[link.explanation] if link.explanation else [],
            )
            for link in links
            if link.cause_id in nodes and link.effect_id in nodes
        ]
        with self.store.batch():
            if edges:
                self.store.memories.insert_edges(edges)
            self.store.set_meta(cursor_key, str(raw[-1][0]))
        report.causal_edges += len(edges)
