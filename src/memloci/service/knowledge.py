"""The knowledge tier of MemoryService (layer: service): read-only RAG documents.

Files are chunked by :mod:`memloci.service.documents`, embedded with the service's embedder and
stored beside the memories, in the same namespaces. Re-adding an unchanged file (same
content hash, same embedding model) does nothing; a changed one has its chunks replaced
in one transaction (each file is its own transaction). ``MemoryService.knowledge``.

Scores are higher-is-better. With an embedder, a hit's score is the cosine similarity of
query and chunk (only chunks embedded by that same model are searched; ``memloci
reembed`` embeds them again after switching models, :meth:`reembed_knowledge`).
Without one, full text finds chunks and the score is the better of ``b / (1 + b)``
with ``b = -bm25`` and the share of the query's words the chunk holds (0–1, not
comparable with cosine; BM25 alone gives nothing to a word in half of a small
collection's chunks). Either way a chunk holding the whole query word for word (case
and spacing aside; a query of :data:`VERBATIM_MIN` letters and digits or more) scores
1.0 and comes first (``match == "fulltext"``), whatever embedded it. Hits below
``threshold`` are dropped.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memloci import validate as v
from memloci.errors import NotFoundError, ProviderError, ValidationError
from memloci.models import ID_RE, KnowledgeChunk, KnowledgeHit, KnowledgeSource, utcnow
from memloci.providers.base import Embedder
from memloci.retrieval.query import fts_match
from memloci.service import documents as kb
from memloci.service.calls import in_steps, threaded
from memloci.service.core import Service
from memloci.service.documents import KnowledgeFile, KnowledgeReport, PathLike
from memloci.storage.base import Store
from memloci.words import terms

KnowledgeProgress = Callable[[int, int], None]  # (chunks done, chunks in total)
SEARCH_MAX = 100

log = logging.getLogger("memloci.knowledge")


class Knowledge(Service):
    """``add_knowledge``, ``search_knowledge``, ``list_knowledge_sources``, ``remove_knowledge``."""

    # ------------------------------------------------------------------ add
    @in_steps
    def add_knowledge(
        self,
        paths: PathLike | Sequence[PathLike],
        *,
        namespace: str | None = None,
        collection: str = "default",
        glob: str | Sequence[str] | None = None,
        progress: KnowledgeProgress | None = None,
    ) -> KnowledgeReport:
        """Add files and folders (walked for ``glob``, default ``*.md``, ``*.txt``,
        ``*.rst``) to the knowledge tier, chunked and embedded.

        A missing path raises :class:`NotFoundError` before anything is written; binary,
        PDF and non-UTF-8 files are skipped with a reason in the report. ``progress`` is
        called as ``progress(chunks_done, chunks_total)``.
        """
        ns = self.core.ns(namespace)
        coll, globs = kb.check_collection(collection), kb.check_globs(glob)
        return self._add_files(paths, ns, coll, globs, progress)

    def _add_files(
        self,
        paths: PathLike | Sequence[PathLike],
        namespace: str,
        collection: str,
        globs: Sequence[str],
        progress: KnowledgeProgress | None = None,
    ) -> KnowledgeReport:
        """:meth:`add_knowledge` once its arguments are validated."""
        model = self.embedder.model_id if self.embedder is not None else None
        files: list[KnowledgeFile] = []
        todo: list[tuple[int, kb.Document, KnowledgeSource | None]] = []
        found = kb.collect_files(paths, globs)
        files += self._drop_deleted(namespace, paths, found)
        stale: list[str] = []  # sources of files that can no longer be added
        for path in found:
            doc = kb.read_document(path)
            sid = kb.source_id(str(path))
            old = self.store.knowledge.knowledge_source(namespace, sid)
            if old is not None and old.collection != collection:
                files.append(_elsewhere(path, old))
                continue
            if isinstance(doc, str):
                if old is not None and not doc.startswith(kb.UNREADABLE):
                    stale.append(sid)
                    reason = f"{doc}; what it held before was removed"
                    files.append(
                        KnowledgeFile(
                            path=str(path), action="removed", source_id=sid, reason=reason
                        )
                    )
                    continue
                files.append(KnowledgeFile(path=str(path), action="skipped", reason=doc))
                continue
            if old is not None and _unchanged(old, doc, collection, model):
                files.append(
                    KnowledgeFile(
                        path=str(path), action="unchanged", source_id=sid, chunks=old.chunk_count
                    )
                )
                continue
            files.append(KnowledgeFile(path=str(path), action="added", source_id=sid))
            todo.append((len(files) - 1, doc, old))
        if stale:
            self.store.knowledge.delete_knowledge(namespace, stale)
        chunked = [(at, doc, old, *kb.chunk_document(doc)) for at, doc, old in todo]
        total, done = sum(len(pieces) for *_, pieces in chunked), 0
        if progress is not None:
            progress(0, total)
        for at, doc, old, title, pieces in chunked:
            if not pieces and old is None:
                files[at] = files[at].model_copy(
                    update={"action": "skipped", "source_id": None, "reason": "no text in it"}
                )
                continue
            vectors = self._embed_pieces(title, pieces, done, total, progress)
            done += len(pieces)
            if vectors is None and progress is not None:
                progress(done, total)
            self._store_source(namespace, collection, doc, old, title, pieces, vectors)
            files[at] = files[at].model_copy(
                update={"action": "updated" if old else "added", "chunks": len(pieces)}
            )
        return KnowledgeReport.of(namespace, collection, model, files)

    def _drop_deleted(
        self, namespace: str, paths: PathLike | Sequence[PathLike], found: list[Path]
    ) -> list[KnowledgeFile]:
        """A folder added again loses the sources of its files deleted since (a re-sync
        of a docs folder keeps no answer from a page that is gone)."""
        items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
        folders = [Path(os.fspath(p)).expanduser().resolve() for p in items]
        under = [os.path.join(str(f), "") for f in folders if f.is_dir()]
        kept = {str(p) for p in found}
        gone = (
            [
                src
                for src in self.store.knowledge.knowledge_sources(namespace)
                if src.path.startswith(tuple(under))
                and src.path not in kept
                and not os.path.exists(src.path)
            ]
            if under
            else []
        )
        if gone:
            self.store.knowledge.delete_knowledge(namespace, [src.id for src in gone])
        return [
            KnowledgeFile(path=src.path, action="removed", source_id=src.id, reason=kb.GONE)
            for src in gone
        ]

    def _embed_pieces(
        self,
        title: str,
        pieces: Sequence[kb.Piece],
        done: int,
        total: int,
        progress: KnowledgeProgress | None,
    ) -> npt.NDArray[np.float32] | None:
        if self.embedder is None or not pieces:
            return None
        batch = self.settings.embed_batch_size
        return _embed(self.embedder, title, pieces, batch, done, total, progress)

    # ------------------------------------------------------------------ re-embed
    @in_steps
    def reembed_knowledge(self, *, progress: KnowledgeProgress | None = None) -> int:
        """Embed the knowledge chunks (of every namespace) that the service's embedder did
        not embed: stored without vectors, or with another model's (``memloci reembed``
        runs it after switching models). Returns how many chunks were embedded."""
        if self.embedder is None:
            return 0
        nss = self.store.record_namespaces()
        return embed_sources(
            self.store,
            self.embedder,
            nss,
            batch=self.settings.embed_batch_size,
            progress=progress,
        )

    def _store_source(
        self,
        namespace: str,
        collection: str,
        doc: kb.Document,
        old: KnowledgeSource | None,
        title: str,
        pieces: Sequence[kb.Piece],
        vectors: npt.NDArray[np.float32] | None,
    ) -> None:
        now, sid = utcnow(), kb.source_id(str(doc.path))
        model = self.embedder.model_id if vectors is not None and self.embedder else None
        source = KnowledgeSource(
            id=sid,
            namespace=namespace,
            collection=collection,
            path=str(doc.path),
            title=title,
            content_hash=doc.content_hash,
            mtime=doc.mtime,
            size_bytes=doc.size,
            chunk_count=len(pieces),
            embedding_model=model,
            added_at=old.added_at if old else now,
            updated_at=now,
        )
        chunks = [
            KnowledgeChunk(
                id=f"{sid}-{i}",
                namespace=namespace,
                source_id=sid,
                collection=collection,
                ordinal=i,
                text=p.text,
                heading=p.heading,
                start_char=p.start,
                end_char=p.end,
                embedding_model=source.embedding_model,
            )
            for i, p in enumerate(pieces)
        ]
        self.store.knowledge.replace_knowledge(source, chunks, vectors)

    # ------------------------------------------------------------------ search
    @threaded
    def search_knowledge(
        self,
        query: str,
        *,
        namespace: str | Sequence[str] | None = None,
        collections: Sequence[str] | None = None,
        limit: int = 5,
        threshold: float = 0.3,
    ) -> list[KnowledgeHit]:
        """The ``limit`` best chunks for ``query`` scoring at least ``threshold`` (0–1),
        best first; ``collections`` restricts to named knowledge bases. See the module
        docstring for what the score means. ``search_knowledge.now(...)`` runs it in the
        caller's thread (the sync SDK and chat)."""
        text = v.query(query)
        lim = v.limit(limit, "limit", SEARCH_MAX)
        floor = v.unit(threshold, "threshold")
        nss = self._namespaces(namespace)
        colls = None
        if collections is not None:
            if isinstance(collections, str):
                collections = [collections]
            colls = [kb.check_collection(c) for c in collections]
        query_vec = None
        if self.embedder is not None:
            try:
                query_vec = self.embedder.embed_query(text)
            except ProviderError as exc:  # the embedder is down: search by full text
                log.warning("knowledge search by full text: the embedder failed (%s)", exc)
        if self.embedder is not None and query_vec is not None:
            hits = self.store.knowledge.knowledge_vector_search(
                nss, query_vec, model=self.embedder.model_id, limit=lim, collections=colls
            )
        else:
            raw = self.store.knowledge.knowledge_fulltext(
                nss, fts_match(text), limit=lim, collections=colls
            )
            wanted = terms(text)
            hits = [
                h.model_copy(update={"score": max(_squash(h.score), _coverage(wanted, h.text))})
                for h in raw
            ]
            hits.sort(key=lambda h: -h.score)  # stable: full text's order among equals
        hits = _with_verbatim(hits, self._verbatim(text, nss, lim, colls))[:lim]
        # 4 decimals, as memory search hits: a score is read, not computed with
        return [h.model_copy(update={"score": round(h.score, 4)}) for h in hits if h.score >= floor]

    def _verbatim(
        self, query: str, nss: Sequence[str], limit: int, colls: Sequence[str] | None
    ) -> list[KnowledgeHit]:
        """The chunks that hold the whole query word for word (case and spacing aside),
        scored 1.0: found by a full-text phrase search, then checked. A chunk that says
        exactly what was asked for must not lose to chunks that are only about it."""
        pattern = verbatim_pattern(query)
        if pattern is None:
            return []
        phrase = '"' + query.replace('"', '""') + '"'
        found = self.store.knowledge.knowledge_fulltext(
            nss, phrase, limit=min(4 * limit, SEARCH_MAX * 4), collections=colls
        )
        held = [h for h in found if pattern.search(_plain(f"{h.heading}\n{h.text}"))]
        return [h.model_copy(update={"score": 1.0, "match": "fulltext"}) for h in held[:limit]]

    def _namespaces(self, namespace: str | Sequence[str] | None) -> list[str]:
        if namespace is None or isinstance(namespace, str):
            return [self.core.ns(namespace)]
        nss = list(dict.fromkeys(v.namespace(n) for n in namespace))
        if not nss:
            raise ValidationError("namespace list is empty", hint="name at least one namespace")
        return nss

    # ------------------------------------------------------------------ sources
    @threaded
    def list_knowledge_sources(
        self, *, namespace: str | None = None, collection: str | None = None
    ) -> list[KnowledgeSource]:
        """The files in the knowledge tier, by collection and path."""
        ns = self.core.ns(namespace)
        coll = kb.check_collection(collection) if collection is not None else None
        return self.store.knowledge.knowledge_sources(ns, collection=coll)

    @threaded
    def remove_knowledge(
        self, source: str, *, namespace: str | None = None
    ) -> list[KnowledgeSource]:
        """Remove a source by id or path (a folder path removes every source under it);
        returns what was removed. Raises :class:`NotFoundError` when nothing matches."""
        ns = self.core.ns(namespace)
        if not isinstance(source, str) or not source.strip():
            raise ValidationError("give a knowledge source id or path")
        ref = source.strip()

        found = self.store.knowledge.knowledge_source(ns, ref) if ID_RE.match(ref) else None
        if found is not None:
            gone = [found]
        else:
            full = str(Path(ref).expanduser().resolve())
            folder = os.path.join(full, "")
            gone = [
                s
                for s in self.store.knowledge.knowledge_sources(ns)
                if s.path in (ref, full) or s.path.startswith(folder)
            ]
        if not gone:
            raise NotFoundError(
                f"no knowledge source {ref!r} in namespace {ns!r}",
                hint="`memloci knowledge list` shows the sources, their ids and paths",
            )
        self.store.knowledge.delete_knowledge(ns, [s.id for s in gone])
        return gone


def embed_sources(
    store: Store,
    embedder: Embedder,
    namespaces: Sequence[str],
    *,
    batch: int,
    progress: KnowledgeProgress | None = None,
) -> int:
    """Embed, source by source (a transaction each), the knowledge chunks of
    ``namespaces`` that ``embedder`` did not embed (no vectors, or another model's): a
    knowledge search with an embedder finds only chunks of its model. Returns how many."""
    model = embedder.model_id
    stale = [
        src
        for ns in namespaces
        for src in store.knowledge.knowledge_sources(ns)
        if src.embedding_model != model and src.chunk_count
    ]
    total, done = sum(src.chunk_count for src in stale), 0
    if progress is not None and stale:
        progress(0, total)
    for src in stale:
        chunks = store.knowledge.knowledge_chunks(src.namespace, src.id)
        pieces = [kb.Piece(c.text, c.heading, c.start_char, c.end_char) for c in chunks]
        vectors = (
            _embed(embedder, src.title, pieces, batch, done, total, progress) if chunks else None
        )
        done += len(chunks)
        store.knowledge.replace_knowledge(
            src.model_copy(update={"embedding_model": model if chunks else None}),
            [c.model_copy(update={"embedding_model": model}) for c in chunks],
            vectors,
        )
    return done


def _embed(
    embedder: Embedder,
    title: str,
    pieces: Sequence[kb.Piece],
    batch: int,
    done: int,
    total: int,
    progress: KnowledgeProgress | None,
) -> npt.NDArray[np.float32]:
    texts = [kb.embedding_text(title, p) for p in pieces]
    size = max(1, batch)
    parts = []
    for i in range(0, len(texts), size):
        parts.append(np.asarray(embedder.embed(texts[i : i + size]), dtype=np.float32))
        if progress is not None:
            progress(done + min(i + size, len(texts)), total)
    return np.concatenate(parts)


def _elsewhere(path: Path, old: KnowledgeSource) -> KnowledgeFile:
    """A file already in another collection of the namespace is left there (a file is in
    one collection; adding it elsewhere must not take it from the first)."""
    reason = (
        f"already in collection {old.collection!r}: a file is in one collection of a "
        f"namespace (`memloci knowledge remove {old.id}` first to move it)"
    )
    return KnowledgeFile(path=str(path), action="skipped", source_id=old.id, reason=reason)


def _unchanged(old: KnowledgeSource, doc: kb.Document, collection: str, model: str | None) -> bool:
    """Same bytes, same collection, and vectors from the current embedder (when any)."""
    same = old.content_hash == doc.content_hash and old.collection == collection
    return same and (model is None or old.embedding_model == model or old.chunk_count == 0)


VERBATIM_MIN = 8  # letters and digits a query needs before it counts as a phrase
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def _plain(text: str) -> str:
    return text.translate(_QUOTES)


def verbatim_pattern(query: str) -> re.Pattern[str] | None:
    """A pattern finding ``query`` word for word in a text (any case, any run of spaces
    or line breaks between its words, not inside a longer word), or None for a query
    shorter than :data:`VERBATIM_MIN` letters and digits ("thanks" is no phrase)."""
    text = _plain(query).strip()
    if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'":  # "a quoted phrase"
        text = text[1:-1].strip()
    if sum(ch.isalnum() for ch in text) < VERBATIM_MIN:
        return None
    body = r"\s+".join(re.escape(part) for part in text.split())
    head = r"(?<!\w)" if re.match(r"\w", text) else ""
    tail = r"(?!\w)" if re.search(r"\w$", text) else ""
    return re.compile(head + body + tail, re.IGNORECASE)


def _with_verbatim(hits: list[KnowledgeHit], verbatim: list[KnowledgeHit]) -> list[KnowledgeHit]:
    """``verbatim`` hits first (those the search found too by its own order, then the
    rest by full text's), then the other hits, best first."""
    if not verbatim:
        return hits
    rank = {(h.namespace, h.chunk_id): i for i, h in enumerate(hits)}
    first = sorted(verbatim, key=lambda h: rank.get((h.namespace, h.chunk_id), len(hits)))
    held = {(h.namespace, h.chunk_id) for h in first}  # one path: one chunk id per namespace
    return [*first, *(h for h in hits if (h.namespace, h.chunk_id) not in held)]


def _squash(bm25: float) -> float:
    b = max(bm25, 0.0)
    return b / (1.0 + b)


def _coverage(wanted: list[str], text: str) -> float:
    """The share of the query's words ``text`` holds (a word's first five letters suffice:
    "refunds" finds "refund"). BM25 gives a word in half of a small collection's chunks
    no weight at all, so in a collection of two files a chunk that says every word of the
    query would score 0 by BM25 alone."""
    if not wanted:
        return 0.0
    have = terms(text)

    def holds(word: str) -> bool:
        return any(h == word or (min(len(h), len(word)) > 4 and h[:5] == word[:5]) for h in have)

    return sum(holds(w) for w in wanted) / len(wanted)
