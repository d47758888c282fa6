"""Duplicate and same-key detection for new facts (layer: consolidation).

One rule for every write path: ``remember`` and consolidation both ask
:func:`match_fact` whether a new fact is already known — the same key in the same
owner scope, the same text (case and whitespace folded), or a near-identical meaning
(cosine ≥ the duplicate threshold *and* :func:`same_details`: the same numbers, dates,
names and negations) — and only differ in what they do about it. Both run the check
and the write inside one ``store.exclusive(fact_lock(namespace))`` transaction, so
concurrent writers (threads, processes, servers) never store the same fact twice.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from memloci.models import MemoryNode, NodeType, Scope, normalize_key
from memloci.providers.base import Vector, calibration_of
from memloci.storage.base import NodeFilter, Store
from memloci.storage.rows import content_hash


class MatchKind(StrEnum):
    SAME = "same"  # same key, same content and value
    KEY = "key"  # same key, other content or value
    DUPLICATE = "duplicate"  # same text
    NEAR = "near"  # near-identical meaning


@dataclass(frozen=True)
class FactMatch:
    """What :func:`match_fact` found (``node`` None: nothing) and the new fact's vector,
    if it had to be computed."""

    kind: MatchKind | None = None
    node: MemoryNode | None = None
    why: str = ""
    vector: Vector | None = None


def fact_owner(
    namespace: str, types: tuple[NodeType, ...], scope: Scope, *, user: str | None,
    agent: str | None, session: str | None,
) -> NodeFilter:  # fmt: skip
    """The facts a new fact in ``scope`` competes with: same type family and scope, the
    same owning user (user scope) or session (session scope)."""
    return NodeFilter(
        namespaces=(namespace,), types=types, scopes=(scope,),
        owner_user=user if scope is Scope.USER else None,
        sessions=(session,) if scope is Scope.SESSION and session else None,
        agent=agent, session=session,
    )  # fmt: skip


def fact_lock(namespace: str) -> str:
    """The ``store.exclusive`` key that serialises fact dedupe in a namespace."""
    return f"facts:{namespace}"


# ---------------------------------------------------------------------- same details
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_DIGITS = re.compile(r"\d+")
_NEGATIONS = {
    "not", "no", "never", "without", "nobody", "nothing", "none", "neither", "nor",
    "nowhere", "cannot", "cant", "dont", "doesnt", "didnt", "isnt", "arent", "wasnt",
    "werent", "wont", "wouldnt", "shouldnt", "couldnt", "hasnt", "havent", "hadnt",
    "mustnt", "neednt", "aint",
}  # fmt: skip
_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen"
_TEENS = "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
_NUMBER_WORDS: dict[str, float] = {w: i for i, w in enumerate(f"{_ONES} {_TEENS}".split(" "))}
_NUMBER_WORDS.update(
    {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
     "ninety": 90, "hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9,
     "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
     "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "once": 1, "twice": 2,
     "half": 0.5, "dozen": 12}
)  # fmt: skip
_CALENDAR_WORDS = (
    "january february march april may june july august september october november "
    "december monday tuesday wednesday thursday friday saturday sunday today tomorrow "
    "yesterday"
)
_CALENDAR = set(_CALENDAR_WORDS.split(" "))
# capitalised only because they open a sentence (or are "I"): not names
_STARTER_WORDS = (
    "a an the this that these those i i'm i've i'd i'll my our your his her its their he "
    "she it we you they user users assistant someone everyone there here in on at for "
    "from to of by with as if when while after before during since until also and but "
    "or so then now all every each some any most many both one it's they're we're "
    "what which who whom whose where why how please note"
)
_STARTERS = set(_STARTER_WORDS.split(" "))


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).replace("’", "'")
    return re.sub(r"n't\b", " not", text, flags=re.IGNORECASE)


def details(text: str) -> tuple[frozenset[str], frozenset[str], Counter[str]]:
    """What a paraphrase must keep: numbers (digits anywhere in a token — "3i",
    "12th", "2024-05-01" — number words, calendar words), names (capitalised tokens,
    except a common word opening a sentence) and negations (counted)."""
    folded = _fold(text)
    numbers: set[str] = {d.lstrip("0") or "0" for d in _DIGITS.findall(folded)}
    names: set[str] = set()
    negations: Counter[str] = Counter()
    sentence_start = True
    for match in _TOKEN.finditer(folded):
        token = match.group()
        low = token.casefold().replace("'", "")
        if low in _NUMBER_WORDS:
            numbers.add(str(_NUMBER_WORDS[low]))
        elif low in _CALENDAR:
            numbers.add(low)
        if low in _NEGATIONS:
            negations["not"] += 1
        opener = sentence_start and token.casefold() in _STARTERS
        if token[:1].isupper() and not opener and low not in _CALENDAR | _NUMBER_WORDS.keys():
            names.add(re.sub(r"'s$", "", token.casefold()))
        tail = folded[match.end() : match.end() + 2]
        sentence_start = bool(re.match(r"\s*[.!?:;]", tail))
    return frozenset(numbers), frozenset(names), negations


def same_details(a: str, b: str) -> bool:
    """Whether two near-identical texts agree on every number, date, name and negation;
    a difference in any of them makes them different facts, however close in meaning."""
    return details(a) == details(b)


def match_fact(
    store: Store,
    owner: NodeFilter,
    text: str,
    *,
    key: str | None = None,
    value: Any = None,
    embed: Callable[[], Vector] | None = None,
    threshold: float = 1.0,
) -> FactMatch:
    """The current fact a new one duplicates or shares its key with, checked cheapest
    first: key, exact text, then (only if ``embed`` is given) meaning."""
    digest = content_hash(text)
    if key is not None:
        same_key = store.list_nodes(replace(owner, key_norm=normalize_key(key)), limit=1)
        if same_key:
            old = same_key[0]
            if content_hash(old.content) == digest and old.value == value:
                return FactMatch(MatchKind.SAME, old, "already known")
            return FactMatch(MatchKind.KEY, old, f"holds key {key!r}")
    dupes = store.find_by_hash(owner, digest)
    if dupes:
        return FactMatch(MatchKind.DUPLICATE, dupes[0], "already known")
    if embed is None:
        return FactMatch()
    vector = embed()
    near = [(i, sim) for i, sim in store.vector_search(owner, vector, 5) if sim >= threshold]
    found = {n.id: n for n in store.get_nodes(owner.namespaces, [i for i, _ in near])}
    for node_id, sim in near:  # best first; only the same statement counts
        node = found.get(node_id)
        if node is not None and same_details(node.content, text):
            why = f"near-duplicate (similarity {sim:.2f})"
            return FactMatch(MatchKind.NEAR, node, why, vector)
    return FactMatch(vector=vector)


def duplicate_threshold(configured: float | None, embedder: object | None) -> float:
    """The cosine at which a new fact restates a stored one: the configured
    ``duplicate_threshold``, else the embedder's calibrated one (0.92 for MiniLM)."""
    return configured if configured is not None else calibration_of(embedder).duplicate
