"""``intent_similarity_threshold``: a setting (0–1, from arguments or ``MEMLOCI_*``)
that the embedding intent classifier of a memory's search uses."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memloci import Memory
from memloci.config import Settings
from memloci.retrieval.intent import THRESHOLD, Intent

MakeMemory = Callable[..., Memory]


def test_the_setting_is_validated_and_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings().intent_similarity_threshold == THRESHOLD
    assert Settings(intent_similarity_threshold=0.45).intent_similarity_threshold == 0.45
    for bad in (-0.1, 1.5, "high"):
        with pytest.raises(Exception, match="intent_similarity_threshold"):
            Settings(intent_similarity_threshold=bad)
    monkeypatch.setenv("MEMLOCI_INTENT_SIMILARITY_THRESHOLD", "0.3")
    assert Settings().intent_similarity_threshold == 0.3


@pytest.mark.slow
def test_the_search_classifier_uses_it(make_memory: MakeMemory) -> None:
    question = "When did we move to Berlin?"
    default = make_memory(embedder="local").service.retriever
    assert default.plan(question).intent is Intent.WHEN
    assert default.plan(question).source == "exemplars"
    strict = make_memory(embedder="local", intent_similarity_threshold=1.0).service.retriever
    assert (strict.plan(question).intent, strict.plan(question).source) == (Intent.WHEN, "rules")
    lenient = make_memory(embedder="local", intent_similarity_threshold=0.0).service.retriever
    # nothing to reach: a plain statement is decided by the exemplars too
    assert lenient.plan("I like tea").source == "exemplars"
