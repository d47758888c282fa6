"""The bundled demo (layer: interfaces): ``memloci demo`` and ``memloci serve --demo``.

``memloci/data/demo.jsonl`` holds three conversations between Sam and an assistant and,
for each, what a good extractor takes from it: facts (each quoting the turn it came
from) and the entities they mention. Loading it runs the real consolidation with a
scripted extractor (:class:`DemoExtractor`), so every fact is ``derived_from`` its
turn and the entities are linked to the facts and turns that mention them; then the
later records change what was learnt the way an agent would: ``update`` (a new version
of the same fact), ``correct`` (a new fact that supersedes the old one), procedures (a
standing instruction and one with a trigger), a memory user known on two channels
(``merge_users``) and a checkpointed conversation thread. Nothing is extracted twice,
so the store holds no near-duplicates.

Records, one JSON object a line, applied in file order (``kind`` says which):
``meta``, ``user``, ``merge_users``, ``turn``, ``entity``, ``fact``, ``update``,
``correct``, ``procedure``, ``thread``. A session is consolidated when the first
record after its turns, entities and facts comes (before the next session starts).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from memloci.consolidation.base import ExtractedEntity, ExtractedFact, Extraction, finalize
from memloci.errors import ConflictError, ValidationError

if TYPE_CHECKING:
    from memloci.models import MemoryNode
    from memloci.sdk import Memory

DEMO_USER = "sam"
DEMO_SEARCHES = (
    "Where does Sam live?",
    "What is the name of Sam's dog?",
    "Sam's side project",
    "who is Sam's manager",
)
DEMO_PROMPT = "Can you plan a Saturday for me?"


def demo_home() -> Path:
    """The folder of ``memloci demo``'s one store (``demo.db``, replaced on each run):
    ``$MEMLOCI_CACHE_DIR``, else ``$XDG_CACHE_HOME/memloci``, else ``~/.cache/memloci``;
    without a home directory, ``memloci-demo-<uid>`` in the temporary folder."""
    raw = os.environ.get("MEMLOCI_CACHE_DIR", "").strip()
    if raw and raw.lower() not in ("0", "off", "false", "no", "none"):
        return Path(raw).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    if base:
        return Path(base).expanduser() / "memloci"
    try:
        return Path.home() / ".cache" / "memloci"
    except (RuntimeError, KeyError, OSError):  # a bare service user
        uid = os.getuid() if hasattr(os, "getuid") else os.getpid()
        return Path(tempfile.gettempdir()) / f"memloci-demo-{uid}"


@contextlib.contextmanager
def fresh_demo_store() -> Iterator[Path]:
    """The demo's store path, emptied (the previous run's file and its ``-wal`` /
    ``-shm`` removed) and held by a lock for the run: a second ``memloci demo`` at the
    same time is a ConflictError, never two runs in one file."""
    home = demo_home()
    home.mkdir(parents=True, exist_ok=True)
    db = home / "demo.db"
    with (home / "demo.lock").open("a+") as lock:
        try:
            import fcntl
        except ImportError:  # Windows: no advisory lock, one user's demo at a time
            fcntl = None  # type: ignore[assignment]
        if fcntl is not None:
            try:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ConflictError(
                    f"another memloci demo is running on {db}",
                    hint="wait for it, or give this one its own store: --db demo.db",
                ) from None
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        yield db


def demo_records() -> Iterator[dict[str, Any]]:
    """The bundled sample (``memloci/data/demo.jsonl``), one dict per record."""
    source = resources.files("memloci").joinpath("data", "demo.jsonl")
    for line in source.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield cast(dict[str, Any], json.loads(line))


@dataclass
class DemoLoad:
    """What :func:`load_demo` stored."""

    turns: int = 0
    sessions: int = 0
    facts: int = 0
    entities: int = 0
    procedures: int = 0
    updates: int = 0
    corrections: int = 0
    users: int = 0
    threads: int = 0


class DemoExtractor:
    """A scripted extractor: the demo's facts of one session, with their sources.

    Each fact's ``from`` text names the turn it came from (its ``source_ids``); a fact
    whose quote matches no turn comes from all the user's turns of the batch."""

    name = "demo"

    def __init__(self, facts: Sequence[dict[str, Any]], entities: Sequence[dict[str, Any]]):
        self.facts = list(facts)
        self.entities = [
            ExtractedEntity(name=e["name"], type=e["type"], aliases=e.get("aliases", []))
            for e in entities
        ]

    def extract(
        self, episodes: Sequence[MemoryNode], *, known: Sequence[MemoryNode] = ()
    ) -> Extraction:
        users = [e for e in episodes if (e.source_role or "") == "user"] or list(episodes)
        out: list[ExtractedFact] = []
        for rec in self.facts:
            quote = rec.get("from", "")
            sources = [e.id for e in users if quote and quote in e.content] or [e.id for e in users]
            fields = {k: v for k, v in rec.items() if k not in ("kind", "session", "from")}
            out.append(ExtractedFact(confidence=0.9, source_ids=sources, **fields))
        return finalize(out, self.entities)


@dataclass
class _Loader:
    m: Memory
    user: str
    done: DemoLoad = field(default_factory=DemoLoad)
    speaker: str = "Sam"
    session: str | None = None
    facts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    entities: dict[str, dict[str, Any]] = field(default_factory=dict)
    entity_ids: dict[str, str] = field(default_factory=dict)

    def flush(self) -> None:
        """Consolidate the session whose turns were just added, with its facts."""
        if self.session is None:
            return
        session, self.session = self.session, None
        extractor = DemoExtractor(self.facts.pop(session, []), list(self.entities.values()))
        report = self.m.service.consolidation.consolidate.now(
            session, namespace=self.m.settings.namespace, extractor=extractor
        )
        if report.failed:
            raise ValidationError(f"the demo session {session!r} did not consolidate")
        self.done.facts += len(report.created)
        for name, rec in self.entities.items():
            if name in self.entity_ids:
                continue
            found = self.m.service.records.find_entity(name)
            entity = self.m._call(found)
            if entity is not None:  # mentioned by this session: give it its summary
                self.entity_ids[name] = entity.id
                self.m._call(
                    self.m.service.records.save_entity(
                        name, entity_id=entity.id, summary=rec.get("summary")
                    )
                )
                self.done.entities += 1

    def link(self, memory_id: str, names: Sequence[str]) -> None:
        ids = [self.entity_ids[n] for n in names if n in self.entity_ids]
        if ids:
            self.m._call(self.m.service.records.link_entities(memory_id, ids))

    def current(self, key: str) -> MemoryNode:
        node = self.m.lookup(key, user=self.user)
        if node is None:
            raise ValidationError(f"the demo has no fact under key {key!r} to change")
        return node

    def apply(self, rec: dict[str, Any]) -> None:
        kind = rec.pop("kind")
        if kind not in ("entity", "fact") and rec.get("session") != self.session:
            self.flush()  # the session's turns, entities and facts are all in
        m, svc = self.m, self.m.service
        if kind == "meta":
            self.speaker = rec.get("speaker", self.speaker)
        elif kind == "turn":
            role = rec["role"]
            m.add(
                rec["content"],
                user=self.user,
                session=rec["session"],
                role=role,
                speaker=self.speaker if role == "user" else "Assistant",
                event_time=cast(Any, rec["time"]),
            )
            if rec["session"] != self.session:
                self.done.sessions += 1
            self.session = rec["session"]
            self.done.turns += 1
        elif kind == "entity":
            self.entities[rec["name"]] = rec
        elif kind == "fact":
            self.facts.setdefault(rec["session"], []).append(rec)
        elif kind == "update":
            node = m.update(self.current(rec["key"]).id, rec["content"]).memory
            self.link(node.id, rec.get("entities", []))
            self.done.updates += 1
        elif kind == "correct":
            node = m.correct(self.current(rec["key"]).id, rec["content"]).memory
            self.link(node.id, rec.get("entities", []))
            self.done.corrections += 1
        elif kind == "procedure":
            m.learn_procedure(rec.pop("content"), user=self.user, **rec)
            self.done.procedures += 1
        elif kind == "user":
            m._call(svc.records.save_user(rec.pop("id"), **rec))
            self.done.users += 1
        elif kind == "merge_users":
            m._call(svc.records.merge_users(rec["source"], rec["target"]))
        elif kind == "thread":
            turns = m.list(user=self.user, type="episodic", limit=1000)
            messages = [
                {"role": t.source_role, "content": t.content}
                for t in turns
                if t.session == rec["session"]
            ]
            m._call(
                svc.records.append_messages(
                    rec["id"],
                    messages,
                    user=rec.get("user"),
                    agent=rec.get("agent"),
                )
            )
            self.done.threads += 1
        else:
            raise ValidationError(f"unknown demo record kind {kind!r}")


def load_demo(m: Memory, user: str = DEMO_USER) -> DemoLoad:
    """Load the bundled demo into ``m`` for ``user`` (see the module doc)."""
    loader = _Loader(m, user)
    for rec in demo_records():
        loader.apply(rec)
    loader.flush()
    return loader.done
