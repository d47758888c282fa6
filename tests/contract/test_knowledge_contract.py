"""The Store contract for the knowledge tier: sources, chunks, vector and full-text
search, through the protocol only (any backend). Namespaces never mix."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt
import pytest

from memloci.errors import EmbeddingModelError, StorageError
from memloci.models import KnowledgeChunk, KnowledgeHit, KnowledgeSource
from memloci.storage.base import Store

from .conftest import EMBED_DIM, EMBED_MODEL, StoreFactory

T0 = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


def unit(*hot: int) -> npt.NDArray[np.float32]:
    """A unit vector with weight on the given axes."""
    vec = np.zeros(EMBED_DIM, np.float32)
    for axis in hot:
        vec[axis] += 1.0
    return vec / np.linalg.norm(vec)


def source(sid: str, ns: str = "default", n: int = 2, **fields: object) -> KnowledgeSource:
    data: dict[str, object] = {
        "id": sid, "namespace": ns, "path": f"/docs/{sid}.md", "title": f"Title {sid}",
        "content_hash": "h1", "mtime": T0, "size_bytes": 100, "chunk_count": n,
        "embedding_model": EMBED_MODEL, "added_at": T0, "updated_at": T0,
    }  # fmt: skip
    data.update(fields)
    return KnowledgeSource.model_validate(data)


def chunks(src: KnowledgeSource, texts: list[str]) -> list[KnowledgeChunk]:
    return [
        KnowledgeChunk(
            id=f"{src.id}-{i}",
            namespace=src.namespace,
            source_id=src.id,
            collection=src.collection,
            ordinal=i,
            text=text,
            heading=f"Title {src.id} > S{i}",
            start_char=i * 100,
            end_char=i * 100 + len(text),
            embedding_model=src.embedding_model,
        )
        for i, text in enumerate(texts)
    ]


def put(
    store: Store,
    src: KnowledgeSource,
    texts: list[str],
    vectors: list[npt.NDArray[np.float32]] | None = None,
) -> None:
    vecs = None if vectors is None else np.stack(vectors)
    store.knowledge.replace_knowledge(src, chunks(src, texts), vecs)


def ids(hits: Sequence[KnowledgeHit]) -> list[str]:
    return [h.chunk_id for h in hits]


# ---------------------------------------------------------------------- sources and chunks
def test_replace_then_read_back(store: Store) -> None:
    src = source("AAAAAAAA")
    put(store, src, ["alpha text", "beta text"], [unit(0), unit(1)])
    got = store.knowledge.knowledge_source("default", "AAAAAAAA")
    assert got is not None and got.path == "/docs/AAAAAAAA.md" and got.chunk_count == 2
    assert got.title == "Title AAAAAAAA" and got.embedding_model == EMBED_MODEL
    assert got.added_at == T0 and got.mtime == T0
    rows = store.knowledge.knowledge_chunks("default", "AAAAAAAA")
    assert [(c.ordinal, c.text) for c in rows] == [(0, "alpha text"), (1, "beta text")]
    assert rows[1].heading == "Title AAAAAAAA > S1" and rows[1].start_char == 100
    assert store.knowledge.knowledge_sources("default") == [got]
    assert store.knowledge.knowledge_source("default", "BBBBBBBB") is None


def test_replace_swaps_every_chunk_and_its_index(store: Store) -> None:
    src = source("AAAAAAAA")
    put(store, src, ["zebra crossing", "yak shaving", "xylophone lesson"], [unit(0)] * 3)
    assert ids(store.knowledge.knowledge_fulltext(["default"], '"zebra"', limit=5)) == [
        "AAAAAAAA-0"
    ]
    newer = source("AAAAAAAA", content_hash="h2", chunk_count=1)
    put(store, newer, ["walrus tusks"], [unit(5)])
    assert [c.text for c in store.knowledge.knowledge_chunks("default", "AAAAAAAA")] == [
        "walrus tusks"
    ]
    assert store.knowledge.knowledge_fulltext(["default"], '"zebra"', limit=5) == []
    assert ids(store.knowledge.knowledge_fulltext(["default"], '"walrus"', limit=5)) == [
        "AAAAAAAA-0"
    ]
    hits = store.knowledge.knowledge_vector_search(["default"], unit(0), model=EMBED_MODEL, limit=5)
    assert ids(hits) == ["AAAAAAAA-0"] and hits[0].text == "walrus tusks"
    assert hits[0].score == pytest.approx(0.0, abs=1e-6)
    got = store.knowledge.knowledge_source("default", "AAAAAAAA")
    assert got is not None and got.content_hash == "h2" and got.chunk_count == 1


def test_a_failed_replace_keeps_the_old_chunks(store: Store) -> None:
    src = source("AAAAAAAA")
    put(store, src, ["original text"], [unit(0)])
    bad = chunks(source("AAAAAAAA", content_hash="h2"), ["one", "two"])
    bad[1] = bad[1].model_copy(update={"id": bad[0].id})  # duplicate chunk id
    with pytest.raises(StorageError):
        store.knowledge.replace_knowledge(source("AAAAAAAA", content_hash="h2"), bad, None)
    assert [c.text for c in store.knowledge.knowledge_chunks("default", "AAAAAAAA")] == [
        "original text"
    ]
    got = store.knowledge.knowledge_source("default", "AAAAAAAA")
    assert got is not None and got.content_hash == "h1"


def test_wrong_vector_count_is_refused(store: Store) -> None:
    src = source("AAAAAAAA")
    with pytest.raises(EmbeddingModelError):
        store.knowledge.replace_knowledge(src, chunks(src, ["a", "b"]), np.stack([unit(0)]))
    assert store.knowledge.knowledge_source("default", "AAAAAAAA") is None


def test_delete_removes_sources_and_chunks(store: Store) -> None:
    put(store, source("AAAAAAAA"), ["keep me"], [unit(0)])
    put(store, source("BBBBBBBB"), ["drop me"], [unit(1)])
    assert store.knowledge.delete_knowledge("default", ["BBBBBBBB", "BBBBBBBB", "CCCCCCCC"]) == 1
    assert [s.id for s in store.knowledge.knowledge_sources("default")] == ["AAAAAAAA"]
    assert store.knowledge.knowledge_chunks("default", "BBBBBBBB") == []
    assert store.knowledge.knowledge_fulltext(["default"], '"drop"', limit=5) == []
    hits = store.knowledge.knowledge_vector_search(["default"], unit(1), model=EMBED_MODEL, limit=5)
    assert ids(hits) == ["AAAAAAAA-0"]
    assert store.knowledge.delete_knowledge("default", []) == 0


def test_collections_filter_listing_and_search(store: Store) -> None:
    put(store, source("AAAAAAAA", collection="faq"), ["refund policy"], [unit(0)])
    put(store, source("BBBBBBBB", collection="docs"), ["refund api"], [unit(0, 1)])
    assert [s.id for s in store.knowledge.knowledge_sources("default", collection="faq")] == [
        "AAAAAAAA"
    ]
    every = store.knowledge.knowledge_vector_search(
        ["default"], unit(0), model=EMBED_MODEL, limit=5
    )
    assert ids(every) == ["AAAAAAAA-0", "BBBBBBBB-0"]
    assert every[0].collection == "faq"
    docs = store.knowledge.knowledge_vector_search(
        ["default"], unit(0), model=EMBED_MODEL, limit=5, collections=["docs"]
    )
    assert ids(docs) == ["BBBBBBBB-0"]
    faq = store.knowledge.knowledge_fulltext(["default"], '"refund"', limit=5, collections=["faq"])
    assert ids(faq) == ["AAAAAAAA-0"]
    assert (
        store.knowledge.knowledge_fulltext(["default"], '"refund"', limit=5, collections=[]) == []
    )


# ---------------------------------------------------------------------- search
def test_vector_search_ranks_by_cosine_with_limit(store: Store) -> None:
    put(store, source("AAAAAAAA", n=3), ["x", "y", "z"], [unit(0), unit(0, 1), unit(2)])
    hits = store.knowledge.knowledge_vector_search(["default"], unit(0), model=EMBED_MODEL, limit=2)
    assert ids(hits) == ["AAAAAAAA-0", "AAAAAAAA-1"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[1].score == pytest.approx(2**-0.5, abs=1e-5)
    assert hits[0].match == "vector" and hits[0].path == "/docs/AAAAAAAA.md"
    assert hits[0].title == "Title AAAAAAAA" and hits[0].heading == "Title AAAAAAAA > S0"


def test_vector_search_only_uses_the_given_model(store: Store) -> None:
    put(store, source("AAAAAAAA"), ["mine"], [unit(0)])
    put(store, source("BBBBBBBB", embedding_model="other:16"), ["theirs"], [unit(0)])
    put(store, source("CCCCCCCC", embedding_model=None), ["no vector"])
    hits = store.knowledge.knowledge_vector_search(["default"], unit(0), model=EMBED_MODEL, limit=5)
    assert ids(hits) == ["AAAAAAAA-0"]
    other = store.knowledge.knowledge_vector_search(["default"], unit(0), model="other:16", limit=5)
    assert ids(other) == ["BBBBBBBB-0"]
    assert ids(store.knowledge.knowledge_fulltext(["default"], '"vector"', limit=5)) == [
        "CCCCCCCC-0"
    ]


def test_fulltext_scores_are_higher_is_better(store: Store) -> None:
    put(store, source("AAAAAAAA", n=3), [
        "the kettle boils water", "kettle kettle kettle descaling guide", "nothing here",
    ])  # fmt: skip
    hits = store.knowledge.knowledge_fulltext(["default"], '"kettle" OR "descaling"', limit=5)
    assert ids(hits) == ["AAAAAAAA-1", "AAAAAAAA-0"]
    assert hits[0].score > hits[1].score > 0 and hits[0].match == "fulltext"
    assert store.knowledge.knowledge_fulltext(["default"], "   ", limit=5) == []


def test_fulltext_folds_accents(store: Store) -> None:
    put(store, source("AAAAAAAA", n=2), ["Crème brûlée recipe", "creme brulee notes"])
    for match in ('"creme"', '"crème"', '"brûlée"'):
        hits = store.knowledge.knowledge_fulltext(["default"], match, limit=5)
        assert ids(hits) and set(ids(hits)) == {"AAAAAAAA-0", "AAAAAAAA-1"}, match


def test_search_sees_writes_from_another_connection(store_factory: StoreFactory) -> None:
    first, second = store_factory.open(), store_factory.open()
    put(first, source("AAAAAAAA"), ["one"], [unit(0)])
    assert ids(
        first.knowledge.knowledge_vector_search(["default"], unit(1), model=EMBED_MODEL, limit=5)
    )
    put(second, source("AAAAAAAA", content_hash="h2"), ["two"], [unit(1)])
    hits = first.knowledge.knowledge_vector_search(["default"], unit(1), model=EMBED_MODEL, limit=5)
    assert hits[0].text == "two" and hits[0].score == pytest.approx(1.0, abs=1e-5)


# ---------------------------------------------------------------------- namespaces
def test_namespaces_never_mix(store: Store) -> None:
    put(store, source("AAAAAAAA", ns="alpha"), ["secret alpha plan"], [unit(0)])
    put(store, source("AAAAAAAA", ns="beta"), ["secret beta plan"], [unit(0)])
    assert [s.namespace for s in store.knowledge.knowledge_sources("alpha")] == ["alpha"]
    assert store.knowledge.knowledge_sources("gamma") == []
    vec = store.knowledge.knowledge_vector_search(["alpha"], unit(0), model=EMBED_MODEL, limit=5)
    assert [h.text for h in vec] == ["secret alpha plan"]
    fts = store.knowledge.knowledge_fulltext(["beta"], '"secret"', limit=5)
    assert [(h.namespace, h.text) for h in fts] == [("beta", "secret beta plan")]
    both = store.knowledge.knowledge_vector_search(
        ["alpha", "beta"], unit(0), model=EMBED_MODEL, limit=5
    )
    assert sorted(h.namespace for h in both) == ["alpha", "beta"]
    assert store.knowledge.delete_knowledge("alpha", ["AAAAAAAA"]) == 1
    assert store.knowledge.knowledge_source("alpha", "AAAAAAAA") is None
    assert [c.text for c in store.knowledge.knowledge_chunks("beta", "AAAAAAAA")] == [
        "secret beta plan"
    ]
    assert (
        store.knowledge.knowledge_vector_search(["alpha"], unit(0), model=EMBED_MODEL, limit=5)
        == []
    )
