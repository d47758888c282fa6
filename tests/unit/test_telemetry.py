"""The metrics registry writes what a strict reader of the Prometheus text format
accepts (escaped label values, cumulative buckets), and the service's search, add and
context calls become OpenTelemetry spans when an SDK is installed (``memloci[otel]``):
the search a context makes is a child of the context's span."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memloci import Memory
from memloci.telemetry import Counter, Gauge, Histogram, render
from prom_text import parse


def test_the_registry_writes_the_text_format() -> None:
    hits = Counter("t_hits_total", "Hits \\ with a backslash", ("route",))
    hits.inc(route='/a"b\\c\nd')
    hits.inc(2, route='/a"b\\c\nd')
    level = Gauge("t_level", "A level")
    level.set(-1.5)
    took = Histogram("t_seconds", "Durations", ("op",), buckets=(0.1, 1.0))
    for value in (0.05, 0.5, 5.0):
        took.observe(value, op="x")
    found = parse(render([hits, level, took]))
    assert found["t_hits_total"].value(route='/a"b\\c\nd') == 3
    assert found["t_level"].value() == -1.5
    assert [found["t_seconds"].value("_bucket", op="x", le=le) for le in ("0.1", "1", "+Inf")] == [
        1,
        2,
        3,
    ]
    assert found["t_seconds"].value("_sum", op="x") == pytest.approx(5.55)
    with pytest.raises(ValueError, match="takes labels"):
        hits.inc(path="/a")


@pytest.fixture(scope="module")
def spans() -> Iterator[Any]:
    sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="the otel extra is not installed")
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    yield exporter
    provider.shutdown()


def test_search_add_and_context_are_spans(spans: Any, mem: Memory) -> None:
    spans.clear()
    mem.add("I moved to Lisbon last spring", user="sam")
    mem.search("Lisbon", user="sam")
    mem.context("where do I live?", user="sam")
    with pytest.raises(Exception, match="query"):
        mem.search("  ", user="sam")
    done = spans.get_finished_spans()
    names = [s.name for s in done]
    assert names[:2] == ["memloci.add", "memloci.search"], names
    context = next(s for s in done if s.name == "memloci.context")
    inner = [
        s for s in done if s.parent is not None and s.parent.span_id == context.context.span_id
    ]
    assert [s.name for s in inner] == ["memloci.search"]  # the search the context made
    assert context.attributes["memloci.namespaces"] == ("default",)
    failed = done[-1]
    assert failed.name == "memloci.search" and not failed.status.is_ok
    assert any(e.name == "exception" for e in failed.events)
