"""Entity resolution (layer: consolidation): a mention → an existing entity, or a new one.

A mention matches, in this order:

1. a canonical name or alias, case-insensitively, ignoring punctuation
   (``"sarah"``, ``"Sarah"``, ``"Sarah."``);
2. a *compatible* name of the same kind: the same first name, and each further word
   equal, an initial of the other (``"Sarah K."`` ~ ``"Sarah King"``) or missing
   (``"Sarah"`` ~ ``"Sarah K."``). A candidate whose other names conflict (``"Sarah L."``
   is not ``"Sarah K."``) is out, and when several entities stay compatible the mention
   is ambiguous and matches none of them;
3. with an embedder, the entity whose name means the same (cosine ≥ ``threshold``,
   same type).

Otherwise a new entity is created. A match gains the mention as an alias, its mention
count and ``last_seen``; a ``concept`` learns a more specific type.

The resolver works inside the caller's store transaction: entities it created or
changed in this run are kept in memory, since reads may not see uncommitted rows.
Embed names with :meth:`EntityResolver.prepare` *before* the transaction.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime

import numpy as np

from memloci import validate as v
from memloci.errors import ValidationError
from memloci.models import Entity, EntityType, short_id
from memloci.providers.base import Embedder, Vector
from memloci.storage.base import Store

NAME_THRESHOLD = 0.85  # cosine at which two names of the same type are one entity
FILL_BATCH = 256  # entities without a vector of the current model embedded per run
CANDIDATES = 200  # entities looked at per name word
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")


def name_words(name: str) -> list[str]:
    """Lower-case words of a name, punctuation dropped: ``"Sarah K."`` → ``["sarah", "k"]``."""
    return [w.casefold() for w in _WORD.findall(name)]


def name_key(name: str) -> str:
    """The punctuation- and case-insensitive form of a name."""
    return " ".join(name_words(name))


def _word_ok(a: str, b: str) -> bool:
    if a == b:
        return True
    return (len(a) == 1 and b.startswith(a)) or (len(b) == 1 and a.startswith(b))


def compatible(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether two names (as words) can be the same person or thing: the first words are
    equal and every further word pair is equal or an initial (missing words are fine)."""
    if not a or not b or a[0] != b[0]:
        return False
    return all(_word_ok(x, y) for x, y in zip(a[1:], b[1:], strict=False))


def _names(entity: Entity) -> list[list[str]]:
    return [w for w in (name_words(n) for n in (entity.canonical_name, *entity.aliases)) if w]


def types_fit(kind: EntityType | None, entity: Entity) -> bool:
    """Whether a mention of type ``kind`` can be ``entity``: the same type, either is a
    ``concept``, or the mention has no type."""
    return kind is None or EntityType.CONCEPT in (kind, entity.type) or kind is entity.type


def fits(words: Sequence[str], entity: Entity) -> bool:
    """A mention fits an entity when it is compatible with one of its names and conflicts
    with none of those that share its first word."""
    names = _names(entity)
    same_first = [n for n in names if n[0] == words[0]]
    return bool(same_first) and all(compatible(words, n) for n in same_first)


class EntityResolver:
    """Resolves mentions in one namespace; create one per consolidation run."""

    def __init__(
        self,
        store: Store,
        namespace: str,
        *,
        now: datetime,
        embedder: Embedder | None = None,
        threshold: float = NAME_THRESHOLD,
    ) -> None:
        self.store, self.namespace, self.now = store, namespace, now
        self.embedder, self.threshold = embedder, threshold
        self.created: list[str] = []
        self._touched: dict[str, Entity] = {}  # entities written in this run, by id
        self._vectors: dict[str, Vector] = {}  # name key -> vector of the mention
        self._known: dict[str, Vector] | None = None  # entity id -> stored name vector

    # ------------------------------------------------------------------ outside the tx
    def prepare(self, names: Iterable[str]) -> None:
        """Embed the names about to be resolved (call before the write transaction)."""
        if self.embedder is None:
            return
        todo = list(dict.fromkeys(n for n in names if name_key(n) not in self._vectors))
        if todo:
            for name, vec in zip(todo, self.embedder.embed(todo), strict=True):
                self._vectors[name_key(name)] = np.asarray(vec, dtype=np.float32)
        if self._known is None:
            raw = self.store.jobs.entity_vectors(self.namespace, self.embedder.model_id)
            dim = self.embedder.dimension
            self._known = {
                eid: np.frombuffer(blob, dtype=np.float32)
                for eid, blob in raw.items()
                if len(blob) == dim * 4
            }
            self._fill(self._known)

    def _fill(self, known: dict[str, Vector]) -> None:
        """Embed the names of entities that have no vector of the current model (made
        before ``memloci reembed`` switched models, or while no embedder ran), up to
        :data:`FILL_BATCH` a run, so matching by meaning covers them again."""
        assert self.embedder is not None
        if self.store.entities.count_entities(self.namespace) <= len(known):
            return
        missing: list[Entity] = []
        offset = 0
        while len(missing) < FILL_BATCH:
            page = self.store.entities.list_entities(self.namespace, limit=500, offset=offset)
            missing += [e for e in page if e.id not in known]
            offset += len(page)
            if len(page) < 500:
                break
        missing = missing[:FILL_BATCH]
        if not missing:
            return
        model = self.embedder.model_id
        vectors = self.embedder.embed([e.canonical_name for e in missing])
        for entity, vec in zip(missing, vectors, strict=True):
            vec = np.asarray(vec, dtype=np.float32)
            blob = np.ascontiguousarray(vec).tobytes()
            self.store.jobs.save_entity_vector(self.namespace, entity.id, model, blob)
            known[entity.id] = vec

    # ------------------------------------------------------------------ inside the tx
    def resolve(
        self,
        name: str,
        type: EntityType | None = None,
        aliases: Sequence[str] = (),
        *,
        mentions: int = 1,
    ) -> Entity:
        """The entity ``name`` refers to, created or updated (aliases, mention count)."""
        name = v.name(name)
        words = name_words(name)
        if not words:
            raise ValidationError(f"entity name {name!r} has no letters or digits")
        found = self.match(name, type)
        if found is None:
            return self._create(name, type, aliases, mentions)
        extra = [n for n in (name, *aliases) if name_key(n) != name_key(found.canonical_name)]
        generic = found.type is EntityType.CONCEPT
        entity = found.model_copy(
            update={
                "aliases": merge_aliases(found, extra),
                "type": type if type is not None and generic else found.type,
                "mention_count": found.mention_count + mentions,
                "last_seen": max(found.last_seen, self.now),
            }
        )
        self._touched[entity.id] = self.store.entities.update_entity(entity)
        return self._touched[entity.id]

    def match(self, name: str, type: EntityType | None = None) -> Entity | None:
        """The existing entity ``name`` refers to, or None (nothing is written)."""
        words = name_words(name)
        if not words:
            return None
        key = " ".join(words)
        for entity in self._touched.values():  # this run first: reads miss its writes
            if any(" ".join(n) == key for n in _names(entity)):
                return entity
        for variant in dict.fromkeys((name, key)):
            stored = self.store.entities.find_entity(self.namespace, variant)
            if stored is not None:
                return self._touched.get(stored.id, stored)
        fitting = [e for e in self._candidates(words) if types_fit(type, e) and fits(words, e)]
        if len(fitting) == 1:
            return fitting[0]
        if len(fitting) > 1:
            return None  # ambiguous: "Sarah" with "Sarah K." and "Sarah L." known
        return self._by_meaning(key, type)

    def _candidates(self, words: Sequence[str]) -> list[Entity]:
        found: dict[str, Entity] = {}
        for word in {w for w in words if len(w) > 1}:
            for e in self.store.entities.list_entities(
                self.namespace, query=word, limit=CANDIDATES
            ):
                found[e.id] = e
        found.update(self._touched)
        return list(found.values())

    def _by_meaning(self, key: str, type: EntityType | None) -> Entity | None:
        vec = self._vectors.get(key)
        if vec is None or not self._known:
            return None
        ids = list(self._known)
        sims = np.stack([self._known[i] for i in ids]) @ vec
        for i in np.argsort(-sims):
            if float(sims[i]) < self.threshold:
                break
            entity = self._touched.get(ids[i]) or self.store.entities.get_entity(
                self.namespace, ids[i]
            )
            if entity is not None and (type is None or entity.type is type):
                return entity
        return None

    def _create(
        self, name: str, type: EntityType | None, aliases: Sequence[str], mentions: int
    ) -> Entity:
        entity = Entity(
            id=short_id(),
            namespace=self.namespace,
            canonical_name=name,
            type=type or EntityType.CONCEPT,
            aliases=v.aliases(aliases, name),
            first_seen=self.now,
            last_seen=self.now,
            mention_count=max(1, mentions),
        )
        entity = self.store.entities.insert_entity(entity)
        self._touched[entity.id] = entity
        self.created.append(entity.id)
        vec = self._vectors.get(name_key(name))
        if vec is not None and self.embedder is not None:
            blob = np.ascontiguousarray(vec, dtype=np.float32).tobytes()
            self.store.jobs.save_entity_vector(
                self.namespace, entity.id, self.embedder.model_id, blob
            )
            if self._known is not None:
                self._known[entity.id] = vec
        return entity


def merge_aliases(entity: Entity, extra: Sequence[str]) -> list[str]:
    """``entity``'s aliases followed by those of ``extra`` that are none of its names
    (by :func:`name_key`), up to 100."""
    seen = {name_key(n) for n in (entity.canonical_name, *entity.aliases)}
    out = list(entity.aliases)
    for alias in extra:
        if name_key(alias) not in seen and len(out) < 100:
            seen.add(name_key(alias))
            out.append(alias)
    return out
