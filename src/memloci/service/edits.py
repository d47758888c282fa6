"""Changing a stored memory (layer: service): ``update``, ``correct``, ``confirm`` and
``forget``, and what a confirmed restatement brings to the fact it repeats.

``MemoryService.edits``. A change of text is embedded in the write path, as
``remember`` embeds a new fact: the new text's vector is stored with it, under the same
dedupe lock (``store.exclusive(fact_lock(namespace))``), so a ``remember`` right after
an edit compares against the new text, not against a fact with no vector until the
background worker catches up. Every change checks, under that lock, that the memory is
still current: another process may have forgotten or replaced it since the caller
looked.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from memloci import validate as v
from memloci.consolidation.dedupe import fact_lock, fact_owner, same_text
from memloci.errors import ConflictError, NotFoundError, ProviderError, ValidationError
from memloci.kinds import FACT_TYPES
from memloci.models import (
    MemoryNode,
    NodeType,
    SourceType,
    WriteResult,
    short_id,
    utcnow,
)
from memloci.providers.base import Vector
from memloci.retrieval.query import document_text
from memloci.service.calls import threaded
from memloci.service.core import Service
from memloci.storage.base import NodePatch, PendingEmbedding
from memloci.storage.rows import content_hash

log = logging.getLogger("memloci.service")


def value_still_holds(value: Any, text: str) -> bool:
    """Whether a fact's ``value`` still goes with its new ``text``: a word, phrase or
    number the text still holds (case folded; "red" is gone from "User's favourite
    colour is blue"). A value the text cannot show (true/false, a list, an object)
    stays."""
    if value is None:
        return False
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return True
    if isinstance(value, str):
        said = value.strip()
    else:
        said = str(int(value)) if float(value).is_integer() else repr(value)
    edges = rf"(?<![\w.]){re.escape(said.casefold())}(?!\w|\.\d)"
    return bool(said) and re.search(edges, text.casefold()) is not None


class Edits(Service):
    """``update`` (in place, a new version) and ``correct`` (a new fact that supersedes)."""

    @threaded
    def update(
        self,
        memory_id: str,
        content: str | None = None,
        *,
        namespace: str | None = None,
        value: Any = None,
        set_value: bool = False,
        category: str | None = None,
        subject: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        session: str | None = None,
        confirmed: bool = False,
    ) -> WriteResult:
        """Change a memory in place: same id, a new version in its history. ``confirmed``:
        the change also counts as a confirmation (``times_confirmed`` + 1), as when
        ``remember`` overwrites a key. New text is embedded before this returns (when
        the embedder is reachable)."""
        ns, mid = self.core.ns(namespace), v.memory_id(memory_id)
        old = self.current(ns, mid, "it can no longer change")
        text = None
        if content is not None:
            text = v.turn(content) if old.type is NodeType.EPISODIC else v.fact(content)
        if set_value:
            v.json_value(value)
        elif text is not None and old.value is not None and not value_still_holds(old.value, text):
            value, set_value = None, True  # the new text no longer says it
        patch = NodePatch(
            content=text,
            value=value,
            set_value=set_value,
            category=v.category(category) if category is not None else None,
            subject=v.label(subject, "subject", 200),
            metadata=v.metadata(metadata) if metadata is not None else None,
            times_confirmed_delta=1 if confirmed else 0,
        )
        return self.rewrite(old, patch, session=v.ident(session))

    def current(self, ns: str, mid: str, refused: str) -> MemoryNode:
        """Memory ``mid``, still current; else a ValidationError saying what ended it
        and ``refused`` (what the caller cannot do now)."""
        node = self.core.node(ns, mid)
        if node.valid_until is not None:
            raise ValidationError(f"{self.ended_now(ns, mid)}; {refused}")
        return node

    def rewrite(
        self,
        old: MemoryNode,
        patch: NodePatch,
        *,
        session: str | None,
        embedded: tuple[str, Vector] | None = None,
    ) -> WriteResult:
        """Write the checked ``patch`` to memory ``old`` (read current by
        :meth:`current`) as :meth:`update` does, in the caller's thread; ``embedded``:
        the new text's document and vector when the caller embedded it already
        (``remember`` overwriting a key)."""
        ns, mid, text = old.namespace, old.id, patch.content
        vector = None
        if text is not None and text != old.content:
            doc = document_text(text, old.speaker, old.key, patch.subject or old.subject)
            vector = embedded[1] if embedded and embedded[0] == doc else self._embed_doc(doc)

        def write() -> MemoryNode:
            with self.store.exclusive(fact_lock(ns)):
                self._still_current(ns, mid, "it can no longer change")
                if text is not None and text != old.content:
                    self._not_a_copy(old, text)
                new = self.store.memories.update_node(ns, mid, patch, session=session)
                self.save_vector(new, vector)
                return new

        new = write()
        if self.worker:
            self.worker.wake()
        msg = f"Updated [{mid}] to version {new.version}"
        if text is not None and text != old.content:
            msg += f": {old.content!r} → {new.content!r}"
        return WriteResult(action="updated", memory=new, message=msg + ".")

    def _not_a_copy(self, old: MemoryNode, text: str) -> None:
        """Under the fact lock: refuse an edit that would make fact ``old`` say word for
        word what another current fact of the same owner says (one fact, stored twice)."""
        if old.type is NodeType.EPISODIC:
            return
        types = FACT_TYPES if old.type in FACT_TYPES else (old.type,)
        owner = fact_owner(
            old.namespace, types, old.scope, user=old.user, agent=old.agent, session=old.session
        )
        for other in self.store.memories.find_by_hash(owner, content_hash(text)):
            if other.id != old.id and same_text(other.content, text):
                raise ConflictError(
                    f"[{other.id}] already says {other.content!r}; [{old.id}] was not changed",
                    hint=f"forget [{old.id}] instead, or confirm [{other.id}]",
                )

    @threaded
    def correct(
        self, memory_id: str, content: str, *, namespace: str | None = None, value: Any = None
    ) -> WriteResult:
        """Replace a fact with a new one that ``supersedes`` it; the old one stops being
        valid. The new text is embedded before this returns (when the embedder is
        reachable)."""
        ns, mid = self.core.ns(namespace), v.memory_id(memory_id)
        text = v.fact(content)
        v.json_value(value)
        old = self.core.node(ns, mid)
        if old.valid_until is not None:
            raise ValidationError(f"memory {mid} is no longer current; correct the current one")
        now = utcnow()
        if value is None and value_still_holds(old.value, text):
            value = old.value  # else the new text no longer says it
        new = old.model_copy(
            update={
                "id": short_id(),
                "content": text,
                "value": value,
                "created_at": now,
                "updated_at": now,
                "valid_from": now,
                "event_time": now,
                "version": 1,
                "confidence": 1.0,
                "times_confirmed": 0,
                "times_contradicted": 0,
                "access_count": 0,
                "last_accessed": None,
                "source_type": SourceType.USER,
                "embedded": False,
            }
        )
        vector = self._embed_doc(document_text(text, new.speaker, new.key, new.subject))

        def write() -> MemoryNode:
            with self.store.exclusive(fact_lock(ns)):
                self._still_current(ns, mid, "correct the current one")
                self._not_a_copy(old, text)
                at = utcnow()  # after any change that held the lock before this one
                times = ("created_at", "updated_at", "valid_from", "event_time")
                self.store.memories.supersede(
                    ns, mid, new.model_copy(update=dict.fromkeys(times, at)), now=at
                )
                self.save_vector(new, vector)
            # read back in this thread: once committed, the call ends with its result
            return self.store.memories.get_node(ns, new.id) or new

        stored = write()
        if self.worker:
            self.worker.wake()
        return WriteResult(
            action="corrected",
            memory=stored,
            message=f"Corrected: [{new.id}] supersedes [{mid}] ({old.content!r} → {text!r}).",
        )

    @threaded
    def confirm(self, memory_id: str, *, namespace: str | None = None) -> WriteResult:
        """Mark a fact as certain and protected from decay."""
        ns, mid = self.core.ns(namespace), v.memory_id(memory_id)
        self.current(ns, mid, "it cannot be confirmed")

        def patch() -> NodePatch:
            return NodePatch(confidence=1.0, decay_rate=0.0, times_confirmed_delta=1)

        node = self.change_current(ns, mid, patch, "it cannot be confirmed")
        return WriteResult(action="confirmed", memory=node, message=f"Confirmed [{mid}].")

    @threaded
    def forget(self, memory_id: str, *, namespace: str | None = None) -> WriteResult:
        """Soft delete: the memory stops being current; its history stays."""
        ns, mid = self.core.ns(namespace), v.memory_id(memory_id)
        old = self.core.node(ns, mid)
        if old.valid_until is not None:
            message = f"{self.ended_now(ns, mid, brackets=True)}."
            return WriteResult(action="unchanged", memory=old, message=message)
        try:  # under the fact lock: an edit racing it lands before it or is refused
            node = self.change_current(
                ns, mid, lambda: NodePatch(valid_until=utcnow()), "forgotten"
            )
        except ValidationError:  # forgotten or replaced meanwhile
            old = self.core.node(ns, mid)
            message = f"{self.ended_now(ns, mid, brackets=True)}."
            return WriteResult(action="unchanged", memory=old, message=message)
        return WriteResult(action="forgotten", memory=node, message=f"Forgot [{mid}].")

    def change_current(
        self, ns: str, mid: str, patch: Callable[[], NodePatch], refused: str
    ) -> MemoryNode:
        """``patch()`` (made once the lock is held: its times come after any change made
        before) applied to memory ``mid`` if it is current when the fact lock is held
        (``refused`` ends the error otherwise): a check made before the lock is only a
        hint, since another process may forget or replace the memory in between."""
        with self.store.exclusive(fact_lock(ns)):
            self._still_current(ns, mid, refused)
            return self.store.memories.update_node(ns, mid, patch())

    def _still_current(self, ns: str, mid: str, refused: str) -> None:
        """Under the fact lock: the memory exists and is current, or an error says why."""
        node = self.store.memories.get_node(ns, mid)
        if node is None:
            raise NotFoundError(f"no memory {mid!r} in namespace {ns!r}")
        if node.valid_until is not None:
            raise ValidationError(f"{self.ended_now(ns, mid)}; {refused}")

    def _ended(self, ns: str, mid: str, *, brackets: bool = False) -> str:
        return self.ended_now(ns, mid, brackets)

    def ended_now(self, ns: str, mid: str, brackets: bool = False) -> str:
        """How a memory that is no longer current ended: "memory X was replaced by [Y]"
        (the newest memory that supersedes it, so an agent changes that one instead) or
        "memory X was forgotten"."""
        edges = self.store.memories.edges(ns, mid, "supersedes")
        newer = [e.source_id for e in edges if e.target_id == mid]
        nodes = sorted(self.store.memories.get_nodes(ns, newer), key=lambda n: n.created_at)
        name = f"[{mid}]" if brackets else f"memory {mid}"
        if nodes:
            return f"{name} was replaced by [{nodes[-1].id}]"
        return f"{name} was forgotten"

    def _embed_doc(self, doc: str) -> Vector | None:
        """The vector of a memory's new document (:func:`document_text`), or None (no
        embedder, or it is down: the worker embeds it later)."""
        if self.embedder is None:
            return None
        try:
            vectors = self.embedder.embed([doc])
        except ProviderError as exc:
            log.warning("edit: not embedded now (%s); the worker embeds it later", exc)
            return None
        return np.asarray(vectors[0], dtype=np.float32)

    def save_vector(self, node: MemoryNode, vector: Vector | None) -> None:
        """Store ``vector`` as ``node``'s (skipped if its text changed meanwhile)."""
        if vector is None:
            return
        item = PendingEmbedding(
            node.id,
            content_hash(node.content),
            node.content,
            node.speaker,
            node.key,
            node.subject,
        )
        self.store.search.save_embeddings([item], vector[None, :])
