"""The shipped intent exemplars (``data/intent_exemplars.json``): current, equal to a
fresh fit with each bundled model, used without embedding anything, and ignored when
they do not match the model or the exemplars."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from memloci.providers.base import load_embedder
from memloci.providers.bge import BgeSmallEmbedder
from memloci.providers.minilm import MODEL_ID
from memloci.retrieval import intent
from memloci.retrieval.intent import (
    LANGUAGES,
    PRESET,
    Intent,
    exemplars_digest,
    fit_exemplars,
    load_preset,
)


class _NoEmbedding:
    """The bundled model's id, but embedding fails: proves nothing was embedded."""

    model_id = MODEL_ID
    dimension = 384

    def embed(self, texts: object) -> np.ndarray:
        raise AssertionError("the exemplars were embedded")

    def embed_query(self, text: str) -> np.ndarray:
        raise AssertionError("the query was embedded")


def test_the_shipped_preset_is_current() -> None:
    data = json.loads(PRESET.read_text(encoding="utf-8"))
    assert set(data["models"]) == {MODEL_ID, BgeSmallEmbedder.MODEL_ID}
    assert data["exemplars"] == exemplars_digest(), "run scripts/intent_exemplars.py"
    for model in data["models"]:
        fitted = load_preset(model)
        assert fitted is not None and set(fitted) == set(LANGUAGES) == {"en", "ru"}
        for mean, directions in fitted.values():
            assert mean.dtype == np.float32 and mean.shape == (384,)
            assert directions.shape == (len(Intent), 384)
            np.testing.assert_allclose(np.linalg.norm(directions, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["local", "minilm-int8"])
def test_the_preset_equals_a_fresh_fit_with_each_bundled_model(name: str) -> None:
    embedder = load_embedder(name)
    preset = load_preset(embedder.model_id)
    assert preset is not None
    fresh = fit_exemplars(embedder)
    assert set(fresh) == set(preset)
    for lang, (mean, directions) in fresh.items():
        np.testing.assert_allclose(preset[lang][0], mean, atol=1e-5)
        np.testing.assert_allclose(preset[lang][1], directions, atol=1e-5)


def test_the_preset_is_used_without_embedding() -> None:
    cache = intent._Exemplars()
    before = threading.active_count()
    fitted = cache.get(_NoEmbedding())  # type: ignore[arg-type]
    assert fitted is not None and threading.active_count() == before  # no fitting thread
    classifier = intent.EmbeddingIntentClassifier(_NoEmbedding())  # type: ignore[arg-type]
    mean, directions = fitted["en"]
    when = mean + 0.5 * directions[list(Intent).index(Intent.WHEN)]
    assert classifier.classify("anything", when) == (Intent.WHEN, "exemplars")
    mean, directions = fitted["ru"]  # a Cyrillic query is measured against the Russian set
    why = mean + 0.5 * directions[list(Intent).index(Intent.WHY)]
    assert classifier.classify("что-нибудь", why) == (Intent.WHY, "exemplars")


def test_a_preset_for_another_model_or_other_exemplars_is_ignored(tmp_path: Path) -> None:
    data = json.loads(PRESET.read_text(encoding="utf-8"))
    file = tmp_path / "preset.json"
    file.write_text(json.dumps(data), encoding="utf-8")
    assert load_preset(MODEL_ID, file) is not None
    assert load_preset("openai:text-embedding-3-small", file) is None
    file.write_text(json.dumps({**data, "exemplars": "0" * 64}), encoding="utf-8")
    assert load_preset(MODEL_ID, file) is None  # exemplars changed since it was written
    fit = data["models"][MODEL_ID]
    ru = {**fit["ru"], "directions": fit["ru"]["directions"][:2]}
    short = {**data, "models": {MODEL_ID: {**fit, "ru": ru}}}
    file.write_text(json.dumps(short), encoding="utf-8")
    assert load_preset(MODEL_ID, file) is None  # wrong shape
    english_only = {**data, "models": {MODEL_ID: {"en": fit["en"]}}}
    file.write_text(json.dumps(english_only), encoding="utf-8")
    assert load_preset(MODEL_ID, file) is None  # a language missing
    file.write_text("{not json", encoding="utf-8")
    assert load_preset(MODEL_ID, file) is None
    assert load_preset(MODEL_ID, tmp_path / "missing.json") is None
