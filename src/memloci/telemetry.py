"""Operation metrics and traces (below every layer: imports nothing of memloci's).

A small metrics registry that writes the Prometheus text exposition format (version
0.0.4): counters, gauges and histograms with labels, safe across threads. The service
times its hot operations with :func:`observed` — ``search``, ``add`` and ``context``,
whichever interface called them (REST, MCP, the SDKs) — into :data:`OPERATIONS`, and,
when ``opentelemetry-api`` is installed, wraps each in a span (``memloci.search`` …) of
the process's tracer provider: a no-op until an SDK is configured (the ``otel`` extra;
``opentelemetry-instrument memloci serve``, or a provider set up in code).
"""

from __future__ import annotations

import bisect
import functools
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
ENV_PROVIDER = "OTEL_PYTHON_TRACER_PROVIDER"
Labels = tuple[str, ...]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    return str(int(value)) if float(value).is_integer() and abs(value) < 2**53 else repr(value)


def _labels(names: Sequence[str], values: Sequence[str], extra: str = "") -> str:
    pairs = [f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=True)]
    if extra:
        pairs.append(extra)
    return "{" + ",".join(pairs) + "}" if pairs else ""


class Metric:
    """One metric family: a name, a help text, its label names and a value per label set."""

    kind = "untyped"

    def __init__(self, name: str, help: str, labels: Sequence[str] = ()) -> None:
        self.name, self.help, self.label_names = name, help, tuple(labels)
        self._lock = threading.Lock()

    def _key(self, labels: Mapping[str, str]) -> Labels:
        try:
            key = tuple([str(labels[n]) for n in self.label_names])
        except KeyError:
            key = ()
        if len(key) != len(labels) or len(key) != len(self.label_names):
            raise ValueError(f"{self.name} takes labels {self.label_names}, not {sorted(labels)}")
        return key

    def lines(self) -> Iterator[str]:
        yield f"# HELP {self.name} {self.help.replace(chr(92), chr(92) * 2)}"
        yield f"# TYPE {self.name} {self.kind}"
        yield from self._samples()

    def _samples(self) -> Iterator[str]:
        raise NotImplementedError


class Counter(Metric):
    """A count that only goes up (its name ends in ``_total``)."""

    kind = "counter"

    def __init__(self, name: str, help: str, labels: Sequence[str] = ()) -> None:
        super().__init__(name, help, labels)
        self._values: dict[Labels, float] = {}

    def inc(self, amount: float = 1.0, /, **labels: str) -> None:
        key = self._key(labels)
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, **labels: str) -> float:
        return self._values.get(self._key(labels), 0.0)

    def _samples(self) -> Iterator[str]:
        with self._lock:
            items = sorted(self._values.items())
        for key, value in items:
            yield f"{self.name}{_labels(self.label_names, key)} {_number(value)}"


class Gauge(Counter):
    """A value that goes up and down (set at each scrape, or kept up to date)."""

    kind = "gauge"

    def set(self, value: float, /, **labels: str) -> None:
        key = self._key(labels)
        with self._lock:
            self._values[key] = value


class Histogram(Metric):
    """Observations counted into buckets (``le``: cumulative, as written), with their sum
    and count."""

    kind = "histogram"

    def __init__(
        self,
        name: str,
        help: str,
        labels: Sequence[str] = (),
        buckets: Sequence[float] = LATENCY_BUCKETS,
    ) -> None:
        super().__init__(name, help, labels)
        self.buckets = tuple(sorted(buckets))
        self._values: dict[Labels, _Observed] = {}

    def observe(self, value: float, /, **labels: str) -> None:
        key = self._key(labels)
        slot = bisect.bisect_left(self.buckets, value)  # the first bound >= value, or past all
        with self._lock:
            seen = self._values.get(key)
            if seen is None:
                seen = self._values[key] = _Observed([0] * (len(self.buckets) + 1))
            seen.buckets[slot] += 1
            seen.count += 1
            seen.sum += value

    def count(self, **labels: str) -> int:
        seen = self._values.get(self._key(labels))
        return 0 if seen is None else seen.count

    def _samples(self) -> Iterator[str]:
        with self._lock:
            items = [(k, replace(v, buckets=list(v.buckets))) for k, v in self._values.items()]
        names = self.label_names
        for key, seen in sorted(items, key=lambda item: item[0]):
            below = 0
            for bound, n in zip((*self.buckets, math.inf), seen.buckets, strict=True):
                below += n
                le = f'le="{_number(bound)}"'
                yield f"{self.name}_bucket{_labels(names, key, le)} {below}"
            yield f"{self.name}_sum{_labels(names, key)} {_number(seen.sum)}"
            yield f"{self.name}_count{_labels(names, key)} {seen.count}"


@dataclass
class _Observed:
    buckets: list[int]  # observations in each bucket (above the bound before), +Inf last
    count: int = 0
    sum: float = 0.0


def render(metrics: Iterable[Metric]) -> str:
    """The text exposition format of these metric families (a blank-free, LF-ended text)."""
    return "".join(line + "\n" for metric in metrics for line in metric.lines())


OPERATIONS = Histogram(
    "memloci_operation_duration_seconds",
    "Time of the service's search, add and context calls, whichever interface made them",
    ("operation", "outcome"),
)


def process_metrics() -> list[Metric]:
    """The standard ``process_*`` figures of this process (Linux reads ``/proc``; elsewhere
    what the standard library can tell) and ``python_info``."""
    cpu = Counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds")
    times = os.times()
    cpu.inc(times.user + times.system)
    start = Gauge("process_start_time_seconds", "Start time of the process since unix epoch")
    start.set(_started())
    found: list[Metric] = [cpu, start]
    rss = _resident_bytes()
    if rss is not None:
        memory = Gauge("process_resident_memory_bytes", "Resident memory size in bytes")
        memory.set(rss)
        found.append(memory)
    if os.path.isdir("/proc/self/fd"):
        fds = Gauge("process_open_fds", "Number of open file descriptors")
        fds.set(len(os.listdir("/proc/self/fd")))
        found.append(fds)
    threads = Gauge("process_threads", "Number of threads of the Python interpreter")
    threads.set(threading.active_count())
    info = Gauge("python_info", "Python platform information", ("implementation", "version"))
    info.set(1, implementation=sys.implementation.name, version=sys.version.split()[0])
    return [*found, threads, info]


_IMPORTED = time.time()


def _started() -> float:
    """When the process started: from ``/proc`` on Linux, else when this module loaded."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            ticks = int(f.read().rpartition(")")[2].split()[19])
        with open("/proc/stat", encoding="ascii") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return _IMPORTED


def _resident_bytes() -> int | None:
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


# ---------------------------------------------------------------------- traces
_trace: Any = None  # the opentelemetry.trace module, False when it is not installed
_tracers: dict[int, Any] = {}  # id(provider) -> its memloci tracer
_ENV_NAMED = ENV_PROVIDER in os.environ


def tracer() -> Any:
    """The ``memloci`` tracer, or None while no OpenTelemetry SDK is set up (no API
    installed, or no tracer provider set): then a call makes no span at all. Reads the
    API's global provider directly: ``get_tracer_provider()`` reads the environment on
    every call until one is set, which would cost each search more than the span."""
    global _trace
    if _trace is None:
        try:
            from opentelemetry import trace
        except ImportError:
            _trace = False
        else:
            _trace = trace
    if _trace is False:
        return None
    provider = getattr(_trace, "_TRACER_PROVIDER", None)
    if provider is None and _ENV_NAMED:  # a provider named by the environment
        provider = _trace.get_tracer_provider()
    if provider is None or isinstance(
        provider, _trace.ProxyTracerProvider | _trace.NoOpTracerProvider
    ):
        return None
    found = _tracers.get(id(provider))
    if found is None:
        found = _tracers[id(provider)] = provider.get_tracer("memloci")
    return found


def _attributes(operation: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """What a span of ``operation`` says: the namespaces of its filter, when it has one."""
    found: dict[str, Any] = {"memloci.operation": operation}
    for value in (*args, *kwargs.values()):
        namespaces = getattr(value, "namespaces", None)
        if isinstance(namespaces, tuple | list) and namespaces:
            found["memloci.namespaces"] = [str(n) for n in namespaces]
            break
    return found


_within: ContextVar[str | None] = ContextVar("memloci_operation", default=None)


def observed(operation: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Time each call of the decorated (blocking) method into :data:`OPERATIONS` under
    ``operation``, with ``outcome`` ``ok`` or ``error``, inside a span ``memloci.<operation>``.
    A call made inside another observed one (the search a context makes) is a child span,
    and counts as part of the outer operation only."""

    def wrap(fn: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> T:
            outer = _within.get()
            token = _within.set(operation)
            outcome = "error"
            start = time.perf_counter()
            try:
                found = tracer()
                if found is None:
                    result = fn(*args, **kwargs)
                else:
                    attributes = _attributes(operation, args[1:], kwargs)
                    with found.start_as_current_span(f"memloci.{operation}", attributes=attributes):
                        result = fn(*args, **kwargs)
                outcome = "ok"
                return result
            finally:
                _within.reset(token)
                if outer is None:
                    elapsed = time.perf_counter() - start
                    OPERATIONS.observe(elapsed, operation=operation, outcome=outcome)

        return run

    return wrap


__all__ = [
    "CONTENT_TYPE",
    "OPERATIONS",
    "Counter",
    "Gauge",
    "Histogram",
    "Metric",
    "observed",
    "process_metrics",
    "render",
    "tracer",
]
