"""Consolidation with ``llm="openai"`` / ``llm="anthropic"`` against a local server
playing a model that misbehaves the way real ones do: replies cut off at max_tokens,
refusals, and far more facts than a conversation holds. The real clients, extractor and
store run; only the provider's HTTP endpoint is played."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from consolidation_helpers import counts, turns
from unruly_llm import Turn, UnrulyServer, prompt_of, unruly

from memloci import Memory

PROTOCOLS = ["openai", "anthropic"]
LINE = re.compile(r"^\[(\w{8})\] \S+ \w+: (.*)$", re.MULTILINE)


@pytest.fixture(params=PROTOCOLS)
def model(request: pytest.FixtureRequest) -> Iterator[UnrulyServer]:
    with unruly(request.param) as server:
        yield server


@pytest.fixture
def mem(make_memory: Any, model: UnrulyServer) -> Memory:
    options = {"base_url": model.base_url, "max_retries": 1, "timeout": 10}
    m: Memory = make_memory(
        llm=model.protocol, llm_options=options, consolidate_on_session_switch=False
    )
    m.service.consolidation.llm.retry_backoff = 0.0  # type: ignore[union-attr]
    return m


def _cut_off(server: UnrulyServer, facts: list[dict[str, Any]]) -> Turn:
    """What a model says when max_tokens stops it halfway through its JSON."""
    if server.protocol == "anthropic":  # the tool input holds what was parsed so far
        return Turn({"facts": facts[:1]}, stop="max_tokens")
    text = json.dumps({"facts": facts, "entities": []})
    return Turn(text[: len(text) // 2], stop="length")


def _facts_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    """One fact per conversation line shown, citing it."""
    found = LINE.findall(prompt_of(body))
    return [{"content": f"User said: {text}", "source_ids": [i]} for i, text in found]


def test_a_reply_cut_off_at_max_tokens_stores_nothing_and_says_so(
    mem: Memory, model: UnrulyServer
) -> None:
    eps = turns(mem, "s1", "I moved to Porto last month")
    before = counts(mem)
    model.answer = lambda body: _cut_off(model, _facts_of(body) * 3)
    report = mem.consolidate("s1")
    assert report.sessions == [] and "cut off" in report.failed["s1"].split("(hint")[0]
    assert counts(mem) == before  # no half of the facts stored, the session still pending
    assert mem.get(eps[0].id).consolidated_at is None
    assert len(model.requests) == 1  # not sent back for "repair": it would be cut off again


def test_a_batch_whose_reply_is_cut_off_is_extracted_in_smaller_parts(
    mem: Memory, model: UnrulyServer
) -> None:
    texts = ["I moved to Porto last month", "My boss is Alec", "I prefer tea to coffee"]
    turns(mem, "s1", *texts)

    def answer(body: dict[str, Any]) -> Turn:
        facts = _facts_of(body)
        return _cut_off(model, facts) if len(facts) > 1 else Turn({"facts": facts})

    model.answer = answer
    report = mem.consolidate("s1")
    assert report.sessions == ["s1"] and not report.failed
    stored = sorted(n.content for n in mem.list(type="semantic", limit=10))
    assert stored == sorted(f"User said: {t}" for t in texts)


def test_a_refusal_is_a_clear_error_and_changes_nothing(mem: Memory, model: UnrulyServer) -> None:
    turns(mem, "s1", "I moved to Porto last month")
    before = counts(mem)
    if model.protocol == "openai":
        model.script(Turn(refusal="I can't help with that."))
    else:
        model.script(Turn("", stop="refusal"))
    report = mem.consolidate("s1")
    assert "refused" in report.failed["s1"].split("(hint")[0] and counts(mem) == before
    assert len(model.requests) == 1


def test_thousands_of_facts_in_one_reply_are_capped(
    mem: Memory, model: UnrulyServer, caplog: pytest.LogCaptureFixture
) -> None:
    turns(mem, "s1", "I moved to Porto last month", "My boss is Alec")
    flood = [{"content": f"User fact number {i} is noted"} for i in range(3000)]
    names = [{"name": f"Thing {i}"} for i in range(3000)]
    model.script(Turn({"facts": flood, "entities": names}))
    with caplog.at_level(logging.WARNING, logger="memloci"):
        report = mem.consolidate("s1")
    assert report.sessions == ["s1"]
    extractor = mem.service.consolidation.default_extractor()
    assert 0 < len(report.created) <= extractor.max_facts  # type: ignore[attr-defined]
    assert any("3000 facts" in r.getMessage() for r in caplog.records)


def test_causal_inference_cut_off_is_asked_in_smaller_parts(
    mem: Memory, model: UnrulyServer
) -> None:
    turns(mem, "s1", "My flight was cancelled", "So I booked a train", "The train was late")

    def answer(body: dict[str, Any]) -> Turn:
        prompt = prompt_of(body)
        if "Pair 1:" not in prompt:  # extraction
            return Turn({"facts": [], "entities": []})
        pairs = re.findall(r"Pair \d+:\n  \[(\w{8})\][^\n]*\n  \[(\w{8})\]", prompt)
        links = [{"cause_id": a, "effect_id": b, "explanation": "it led to it"} for a, b in pairs]
        if len(pairs) > 1:  # too many explanations for max_tokens
            if model.protocol == "anthropic":
                return Turn({"links": links[:1]}, stop="max_tokens")
            return Turn(json.dumps({"links": links})[:60], stop="length")
        return Turn({"links": links})

    model.answer = answer
    report = mem.maintain()
    assert not report.errors, report.errors
    assert report.causal_edges == 2


def test_a_summary_cut_off_while_the_model_thinks_is_not_stored(
    make_memory: Any, model: UnrulyServer
) -> None:
    options = {"base_url": model.base_url, "max_retries": 0, "timeout": 10}
    m: Memory = make_memory(
        llm=model.protocol, llm_options=options, consolidate_on_session_switch=False,
        entity_enrichment_min_mentions=1,
    )  # fmt: skip
    m.add("Sarah is my sister", user="sam", session="s1", role="user")

    def answer(body: dict[str, Any]) -> Turn:
        prompt = prompt_of(body)
        if prompt.startswith("Entity:"):  # a reasoning model that spent max_tokens thinking
            stop = "length" if model.protocol == "openai" else "max_tokens"
            return Turn("<think>\nOkay, the user wants a profile of Sarah. Let me", stop=stop)
        if "Pair 1:" in prompt:
            return Turn({"links": []})
        found = LINE.findall(prompt)
        facts = [{"content": t, "source_ids": [i], "entities": ["Sarah"]} for i, t in found]
        return Turn({"facts": facts, "entities": [{"name": "Sarah", "type": "person"}]})

    model.answer = answer
    report = m.maintain()
    assert report.entities_enriched == 0 and any("enrichment" in e for e in report.errors)
    [sarah] = m._call(m.service.records.list_entities())
    assert sarah.summary is None  # asked again next run, never "<think> Okay, the user…"
