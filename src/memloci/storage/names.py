"""Finding the entities a text names, for both SQL backends (layer: storage).

:meth:`Store.entities_in_text` looks every run of up to four words of a query up in
``entity_names`` (:func:`grams`), and every capitalised word as a person's **given
name** (:func:`given_probes`): a speaker labelled "Caroline Okafor" is who a question
about "Caroline" means. Chats often label people by their full name ("Fahim Khan") while
people, and the questions asked about them, use the first. A given name is only looked
up, never written: mentions and facts still resolve to entities by their whole name or
alias (``Store.find_entity``), so "Caroline" said by one user never becomes a link to
another user's "Caroline Okafor".
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from memloci.models import Entity
from memloci.words import uncased

MAX_PROBES = 8  # capitalised words of one query looked up as given names
_OUTER = ".,;:!?\"'()[]{}<>*"
_ALNUM = re.compile(r"[^\W_]+")
_POSSESSIVE = re.compile(r"['’]s\b")
# words that come before a name without being one ("Dr Lee", "Aunt May")
TITLES = frozenset(
    {
        "mr",
        "mrs",
        "ms",
        "miss",
        "mx",
        "dr",
        "doc",
        "prof",
        "professor",
        "sir",
        "dame",
        "lord",
        "lady",
        "madam",
        "st",
        "saint",
        "rev",
        "father",
        "mother",
        "sister",
        "brother",
        "uncle",
        "aunt",
        "auntie",
        "grandma",
        "grandpa",
        "granny",
        "coach",
        "captain",
        "capt",
        "officer",
        "judge",
        "president",
        "senator",
        "mayor",
        "king",
        "queen",
        "prince",
        "princess",
        "the",
    }
)


# short words of every sentence that a one-word label may also be ("A", "May", "Will")
FUNCTION_WORDS = frozenset(
    {
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "as",
        "is",
        "it",
        "be",
        "do",
        "so",
        "no",
        "not",
        "my",
        "me",
        "we",
        "us",
        "he",
        "she",
        "him",
        "her",
        "his",
        "they",
        "them",
        "you",
        "your",
        "our",
        "may",
        "will",
        "can",
        "was",
        "are",
        "has",
        "had",
        "what",
        "who",
        "how",
        "why",
        "when",
        "where",
        "which",
        "this",
        "that",
        "there",
        "here",
        "all",
        "any",
        "some",
        "did",
    }
)
# words that begin a label, not a name ("Speaker A", "Guest 3", "User B.")
LABEL_WORDS = frozenset(
    {
        "speaker",
        "user",
        "guest",
        "person",
        "participant",
        "member",
        "customer",
        "client",
        "agent",
        "bot",
        "assistant",
        "player",
        "team",
        "group",
        "student",
        "patient",
        "caller",
        "host",
        "moderator",
        "admin",
        "anonymous",
        "unknown",
        "contact",
    }
)


def name_norm(name: str) -> str:
    """The lookup form of an entity name: whitespace folded, case-folded."""
    return " ".join(name.split()).casefold()


def unaccented(text: str) -> str:
    """``text`` without its accents ("josé" → "jose", "zoë" → "zoe", "müller" →
    "muller"): names are often typed without them."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def lookup_names(names: Iterable[str]) -> list[str]:
    """The lookup forms an entity of these names (canonical name and aliases) is found
    by: each one's :func:`name_norm`, and that without accents ("José" is found by
    "Jose")."""
    forms = {name_norm(n) for n in names}
    return sorted(forms | {unaccented(f) for f in forms})


def grams(text: str, max_words: int) -> dict[str, tuple[int, int]]:
    """Lookup forms of every run of up to ``max_words`` words → its word span: as typed
    (outer punctuation stripped), with all punctuation dropped ("Dr. Seuss", "dr seuss")
    and, for two words or more, run together ("Tech Corp" finds "TechCorp")."""
    words = _POSSESSIVE.sub("", text).split()
    out: dict[str, tuple[int, int]] = {}
    for size in range(min(max_words, len(words)), 0, -1):
        for i in range(len(words) - size + 1):
            raw = " ".join(words[i : i + size]).strip(_OUTER)
            if size == 1 and not _may_name(raw, first=i == 0):
                continue
            words_only = _ALNUM.findall(raw)
            # as typed, without punctuation, and run together ("Tech Corp" → TechCorp)
            joined = "".join(words_only) if size > 1 else ""
            for form in (raw, " ".join(words_only), joined):
                if form:
                    out.setdefault(name_norm(form), (i, i + size))
                    out.setdefault(unaccented(name_norm(form)), (i, i + size))
    return out


def _may_name(word: str, *, first: bool) -> bool:
    """Whether one word of a query may name an entity. A function word or a single
    letter ("a", "I", "may", "will") names one only when written with a capital, and not
    as the query's first word: a chat whose speakers are labelled "A" and "B" is not
    about A whenever a question says "a"."""
    folded = word.casefold()
    if len(folded) > 1 and folded not in FUNCTION_WORDS:
        return True
    return not first and word[:1].isupper()


def given_name(name: str) -> str | None:
    """The given name of a person's full name ("Caroline Okafor" → "caroline", "Melanie
    H." → "melanie"), in lookup form: the first of two or more words, when it and the
    last are words of letters, the last maybe an initial ("Speaker A", "User 42" and "Dr
    Lee" have none)."""
    words = name_norm(name).split()
    if len(words) < 2:
        return None
    first, last = words[0], words[-1].replace("-", "").replace("'", "")
    initial = len(last.rstrip(".")) == 1 and last[0].isalpha()
    if not (first.isalpha() and (last.isalpha() or initial)) or len(first) < 2:
        return None
    return None if first in TITLES or first in LABEL_WORDS else first


def given_probes(text: str) -> dict[str, tuple[int, int]]:
    """The words of ``text`` that may be someone's given name → their word span (as
    :func:`grams` counts): capitalised words of letters, not titles; in a text typed all
    in lower case, where case says nothing, its words of letters that are not function
    words ("what did caroline paint?" probes "caroline" and "paint"). The stores look up
    the first :data:`MAX_PROBES`."""
    cased = not uncased(text)
    out: dict[str, tuple[int, int]] = {}
    for i, word in enumerate(_POSSESSIVE.sub("", text).split()):
        raw = word.strip(_OUTER)
        if len(raw) < 2 or not raw.isalpha() or raw.casefold() in TITLES:
            continue
        if raw[0].isupper() or (not cased and raw not in FUNCTION_WORDS):
            out.setdefault(name_norm(raw), (i, i + 1))
            out.setdefault(unaccented(name_norm(raw)), (i, i + 1))
    return out


def prefix_bounds(probes: Sequence[str]) -> list[tuple[str, str]]:
    """For each given name, the range of lookup names that start with it as a word:
    ``"caroline "`` ≤ name < ``"caroline!"`` (``!`` sorts right after a space)."""
    return [(f"{p} ", f"{p}!") for p in probes]


def beginnings(prefixes: Sequence[str]) -> list[tuple[str, str]]:
    """For each prefix (once; empty ones left out), the range of lookup names that begin
    with it: ``prefix`` ≤ name < ``prefix`` with its last character the next one ("mel" ≤
    name < "mem")."""
    return [(p, p[:-1] + chr(ord(p[-1]) + 1)) for p in dict.fromkeys(prefixes) if p]


def given_rows(rows: Sequence[Any], probes: dict[str, tuple[int, int]]) -> list[Any]:
    """Rows ``(name, *entity columns)`` found by :func:`prefix_bounds` whose name is a
    person's full name with a probed given name, renamed to that given name."""
    out = []
    for row in rows:
        given = given_name(row[0])
        if given in probes:
            out.append((given, *row[1:]))
    return out


def pick_named(
    rows: Sequence[Any], spans: dict[str, tuple[int, int]], entity_of: Any
) -> list[tuple[str, Entity]]:
    """``(matched name, entity)`` from rows ``(name, *entity columns)`` (most mentioned
    first), longest names first; words already inside a longer match are not matched
    again (another entity of exactly that name still is); each entity once, by the form
    the text has ("josé" before the "jose" it is also found by)."""
    typed = {name: n for n, name in enumerate(spans)}  # as typed first (:func:`grams`)
    ordered = sorted(
        rows, key=lambda r: (spans[r[0]][0] - spans[r[0]][1], spans[r[0]][0], typed[r[0]])
    )
    taken: set[int] = set()
    seen_spans: set[tuple[int, int]] = set()
    seen: set[str] = set()
    out: list[tuple[str, Entity]] = []
    for row in ordered:
        span = spans[row[0]]
        entity: Entity = entity_of(row[1:])
        words = set(range(*span))
        if entity.id in seen or (span not in seen_spans and words & taken):
            continue
        taken |= words
        seen_spans.add(span)
        seen.add(entity.id)
        out.append((row[0], entity))
    return out
