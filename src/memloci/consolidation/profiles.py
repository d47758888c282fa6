"""Entity profiles as vectors (layer: consolidation).

An entity's name is embedded to resolve mentions (:mod:`memloci.consolidation.entities`);
its *profile* — the summary a user wrote or maintenance drew from its facts — is embedded
on its own, so that a question about what something is ("which system handles
payments?") can find the entity whose profile says it, although the question names
nothing. The vector is made from ``"<name>: <summary>"`` and kept with a digest of that
text: a changed summary (or name) is embedded again, an unchanged one never is.

Profiles are embedded when a summary is written (the SDK, REST and MCP entity edits,
maintenance's LLM summaries, an import) and, for stores made before profiles had
vectors, by ``maintain``. An embedder that fails leaves the profile for the next run:
the write it follows is never undone for it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

import numpy as np

from memloci.errors import MemlociError
from memloci.models import Entity
from memloci.providers.base import Embedder
from memloci.storage.base import Store

log = logging.getLogger("memloci.profiles")

BATCH = 64  # profiles embedded in one call
PAGE = 500  # entities read at a time when looking for profiles without a vector


def profile_text(entity: Entity) -> str:
    """What is embedded: the name, then the summary."""
    return f"{entity.canonical_name}: {entity.summary or ''}".strip()


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def embed_profiles(
    store: Store,
    embedder: Embedder | None,
    namespace: str,
    entities: Sequence[Entity] | None = None,
) -> int:
    """Embed the profiles of ``entities`` (default: every entity of ``namespace``) that
    have a summary but no vector of this embedder's model made from it; the number
    embedded. Never raises for the embedder: a failure is logged and the profiles wait
    for the next call."""
    if embedder is None:
        return 0
    if entities is None:
        entities = _summarised(store, namespace)
    wanted = [e for e in entities if e.summary and e.namespace == namespace]
    if not wanted:
        return 0
    model = embedder.model_id
    known = store.jobs.profile_vectors(namespace, model)
    todo = [e for e in wanted if known.get(e.id, ("", b""))[0] != digest(profile_text(e))]
    done = 0
    for start in range(0, len(todo), BATCH):
        batch = todo[start : start + BATCH]
        texts = [profile_text(e) for e in batch]
        try:
            vectors = embedder.embed(texts)
        except MemlociError as exc:
            log.warning("entity profiles not embedded now (%s); maintain embeds them", exc)
            return done
        for entity, text, vec in zip(batch, texts, vectors, strict=True):
            blob = np.ascontiguousarray(np.asarray(vec, dtype=np.float32)).tobytes()
            store.jobs.save_profile_vector(namespace, entity.id, model, digest(text), blob)
            done += 1
    return done


def _summarised(store: Store, namespace: str) -> list[Entity]:
    out: list[Entity] = []
    offset = 0
    while True:
        page = store.entities.list_entities(namespace, limit=PAGE, offset=offset)
        out += [e for e in page if e.summary]
        offset += len(page)
        if len(page) < PAGE:
            return out


def matching_profiles(
    known: dict[str, tuple[str, bytes]],
    query: np.ndarray,
    *,
    min_cosine: float,
    limit: int,
) -> list[tuple[str, float]]:
    """``(entity id, cosine)`` of the profiles ``known`` (:meth:`Store.profile_vectors`)
    whose vector is at least ``min_cosine`` from ``query`` (unit vectors), best first,
    at most ``limit``."""
    dim = query.shape[-1]
    ids = [eid for eid, (_, blob) in known.items() if len(blob) == dim * 4]
    if not ids:
        return []
    matrix = np.stack([np.frombuffer(known[eid][1], dtype=np.float32) for eid in ids])
    cosines = matrix @ np.asarray(query, dtype=np.float32)
    order = np.argsort(-cosines, kind="stable")
    return [(ids[i], float(cosines[i])) for i in order[:limit] if cosines[i] >= min_cosine]
