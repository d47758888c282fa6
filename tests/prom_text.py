"""A strict reader of the Prometheus text exposition format (version 0.0.4), for tests:
it refuses what a Prometheus server would, and what the format's rules forbid — a
sample before its family's ``# TYPE``, a family declared twice, a series given twice, a
bad name, label or value, a counter not named ``_total``, a histogram whose buckets are
not cumulative, lack ``le="+Inf"`` or disagree with its ``_count``."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')
VALUE = re.compile(r"[+-]?(?:Inf|NaN|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)")
KINDS = {"counter", "gauge", "histogram", "summary", "untyped"}
SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count", "")}

Labels = tuple[tuple[str, str], ...]


@dataclass
class Family:
    name: str
    kind: str
    help: str = ""
    samples: dict[tuple[str, Labels], float] = field(default_factory=dict)

    def value(self, suffix: str = "", **labels: str) -> float:
        """The sample ``name+suffix`` with exactly these labels (0 when absent)."""
        return self.samples.get((self.name + suffix, tuple(sorted(labels.items()))), 0.0)

    def series(self, suffix: str = "") -> list[dict[str, str]]:
        return [dict(lab) for (n, lab) in self.samples if n == self.name + suffix]


class ExpositionError(AssertionError):
    pass


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m[1], m[1]), value)


def _labels(text: str, line: str) -> Labels:
    found: dict[str, str] = {}
    rest = text
    while rest:
        m = LABEL.match(rest)
        if m is None:
            raise ExpositionError(f"bad label set in {line!r}")
        if m[1] in found:
            raise ExpositionError(f"label {m[1]} twice in {line!r}")
        found[m[1]] = _unescape(m[2])
        rest = rest[m.end() :]
        if rest.startswith(","):
            rest = rest[1:]
        elif rest:
            raise ExpositionError(f"bad label separator in {line!r}")
    return tuple(sorted(found.items()))


def _family_of(sample: str, families: dict[str, Family]) -> Family:
    if sample in families and families[sample].kind not in ("histogram", "summary"):
        return families[sample]
    for fam in families.values():
        for suffix in SUFFIXES.get(fam.kind, ()):
            if suffix and sample == fam.name + suffix:
                return fam
    raise ExpositionError(f"sample {sample} has no # TYPE before it")


def parse(text: str) -> dict[str, Family]:
    """Every metric family of an exposition, checked (see the module docstring)."""
    if text and not text.endswith("\n"):
        raise ExpositionError("the exposition does not end with a line feed")
    families: dict[str, Family] = {}
    helps: dict[str, str] = {}
    for line in text.split("\n")[:-1]:
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] == "HELP":
                if parts[2] in helps or not NAME.fullmatch(parts[2]):
                    raise ExpositionError(f"bad or repeated HELP: {line!r}")
                helps[parts[2]] = parts[3] if len(parts) > 3 else ""
            elif len(parts) >= 3 and parts[1] == "TYPE":
                name, kind = parts[2], parts[3] if len(parts) > 3 else ""
                if name in families or kind not in KINDS or not NAME.fullmatch(name):
                    raise ExpositionError(f"bad or repeated TYPE: {line!r}")
                if kind == "counter" and not name.endswith("_total"):
                    raise ExpositionError(f"counter {name} is not named *_total")
                families[name] = Family(name, kind, helps.get(name, ""))
            continue
        m = re.fullmatch(r"([^{ ]+)(?:\{(.*)\})? (\S+)(?: (-?\d+))?", line)
        if m is None or not NAME.fullmatch(m[1]) or not VALUE.fullmatch(m[3]):
            raise ExpositionError(f"bad sample line {line!r}")
        fam = _family_of(m[1], families)
        key = (m[1], _labels(m[2] or "", line))
        if key in fam.samples:
            raise ExpositionError(f"series given twice: {line!r}")
        fam.samples[key] = float(m[3].replace("Inf", "inf"))
    for fam in families.values():
        if fam.kind == "histogram":
            _check_histogram(fam)
        if fam.kind == "counter" and any(v < 0 for v in fam.samples.values()):
            raise ExpositionError(f"counter {fam.name} is negative")
    return families


def _check_histogram(fam: Family) -> None:
    groups: dict[Labels, list[tuple[float, float]]] = {}
    for (name, labels), value in fam.samples.items():
        if name == fam.name + "_bucket":
            le = dict(labels).get("le")
            if le is None:
                raise ExpositionError(f"{fam.name} bucket without le")
            rest = tuple(p for p in labels if p[0] != "le")
            groups.setdefault(rest, []).append((float(le.replace("Inf", "inf")), value))
    for rest, buckets in groups.items():
        buckets.sort()
        counts = [c for _, c in buckets]
        if counts != sorted(counts):
            raise ExpositionError(f"{fam.name}{dict(rest)} buckets are not cumulative")
        if buckets[-1][0] != math.inf:
            raise ExpositionError(f'{fam.name}{dict(rest)} has no le="+Inf" bucket')
        count = fam.samples.get((fam.name + "_count", rest))
        if count != buckets[-1][1] or (fam.name + "_sum", rest) not in fam.samples:
            raise ExpositionError(f"{fam.name}{dict(rest)}: _count / _sum disagree or miss")
