"""Query parsing (layer: retrieval): terms, FTS5 match strings, time phrases."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from memloci.errors import ValidationError
from memloci.models import normalize_key

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "also",
        "ever",
        "get",
        "got",
        "did",
        "does",
        "done",
        "let",
        "lets",
        "like",
        "may",
        "might",
        "must",
        "shall",
        "something",
        "anything",
        "thing",
        "things",
        "would",
        "could",
        "should",
        "whats",
        "what's",
        "i'm",
        "im",
        "it's",
        "its",
    ]
)
_WORD = re.compile(r"[^\W_][\w'’]*")


def terms(text: str) -> list[str]:
    """Lower-cased content words of a query, stopwords removed, order kept, no repeats."""
    out: list[str] = []
    for raw in _WORD.findall(text):
        word = raw.lower().replace("’", "'")
        word = word[:-2] if word.endswith("'s") else word.rstrip("'")
        if len(word) < 2 and not word.isdigit():
            continue
        if word in STOPWORDS or word in out:
            continue
        out.append(word)
    return out


ROLE_WORDS = frozenset({"user", "assistant"})
# "the user" / "the assistant('s)": group 1 the role, group 2 the possessive
ROLE_PHRASE = re.compile(r"\bthe\s+(user|assistant)\b(['’]s)?(?![\w'’])", re.IGNORECASE)


def fts_match(text: str, *, max_terms: int = 24) -> str:
    """An FTS5 MATCH expression: any of the content words (quoted, so always valid).

    Role words ("the user", "the assistant") name the memory's owner or a speaker
    label, not what a memory is about, so they are not searched for."""
    words = [w for w in terms(text) if w not in ROLE_WORDS][:max_terms]
    return " OR ".join(f'"{w}"' for w in words)


def key_form(text: str) -> str:
    """The fuzzy-key form of a query (spaces, ``_`` and ``-`` equivalent)."""
    return normalize_key(text)


_RELATIVE = {
    "today": timedelta(days=0),
    "yesterday": timedelta(days=1),
    "last_day": timedelta(days=1),
    "last_week": timedelta(days=7),
    "last_month": timedelta(days=30),
    "last_year": timedelta(days=365),
}


def parse_time(value: str | datetime | None, *, now: datetime | None = None) -> datetime | None:
    """``last_week`` / ``last_month`` / ``yesterday`` / ``today`` / ``Nd`` / ISO date → UTC time."""
    if value is None or isinstance(value, datetime):
        return as_utc(value) if isinstance(value, datetime) else None
    now = now or datetime.now(UTC)
    text = str(value).strip().lower().replace(" ", "_").replace("-", "_")
    if text in _RELATIVE:
        start = now - _RELATIVE[text]
        return (
            start.replace(hour=0, minute=0, second=0, microsecond=0)
            if text
            in (
                "today",
                "yesterday",
            )
            else start
        )
    match = re.fullmatch(r"(\d+)_?(d|days?|w|weeks?|h|hours?)", text)
    if match:
        n, unit = int(match.group(1)), match.group(2)[0]
        delta = {"d": timedelta(days=n), "w": timedelta(weeks=n), "h": timedelta(hours=n)}[unit]
        return now - delta
    try:
        return as_utc(datetime.fromisoformat(str(value).strip()))
    except ValueError:
        raise ValidationError(
            f"cannot read time {value!r}",
            hint="use last_week, last_month, yesterday, today, 7d, or an ISO date like 2024-05-01",
        ) from None


def as_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC; aware ones are converted."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# the first person and its third: "I" / "my" → "they" / "their", "I'm" → "they're"
_THIRD = {"i": "they", "me": "them", "my": "their", "mine": "theirs", "myself": "themself"}
FIRST_PERSON = re.compile(
    r"(?<![\w'’./-])(i|me|my|mine|myself)(?:(['’])(m|ve|d|ll))?(?![\w'’/-]|\.\w)", re.I
)  # not a letter of "i.e.", "I/O", "-i", "I-95"


def third_person(text: str) -> str:
    """``text`` with the first person singular as the third ("I moved to Lisbon" → "they
    moved to Lisbon", "my" → "their", "I'm" → "they're"): how memories and queries are
    embedded. People say "I" in a chat, and a question asks about them ("Where does the
    user live?" is embedded "Where does they live?", :func:`~memloci.retrieval.graph.
    meaning_query`): the same person is then the same word on both sides."""

    def swap(found: re.Match[str]) -> str:
        word = _THIRD[found.group(1).lower()]
        if found.group(3) is None or word != "they":
            return word + (found.group(2) or "") + (found.group(3) or "")
        return f"they{found.group(2)}{'re' if found.group(3).lower() == 'm' else found.group(3)}"

    return FIRST_PERSON.sub(swap, text)


# what :func:`document_text` embeds, recorded in a store with its first vectors
# (``document_form``): "2" since memories are embedded in the third person (2026-11-27);
# a store without the record holds form "1" and ``memloci reembed`` rebuilds it
DOCUMENT_FORM = "2"


def document_text(content: str, speaker: str | None, key: str | None, subject: str | None) -> str:
    """The text embedded for a memory: :func:`labelled`, its content in the third person
    (:func:`third_person`)."""
    return labelled(third_person(content), speaker, key, subject)


def labelled(content: str, speaker: str | None, key: str | None, subject: str | None) -> str:
    """A memory as a reader sees it: who said it / what it is about, then the content."""
    label = speaker or subject or (key.replace("_", " ") if key else None)
    return f"{label}: {content}" if label else content


_STATEMENT_END = re.compile(r"\.(?:\s|$)")


# what people send that says nothing of its own: a backchannel, a greeting, thanks
# fmt: off
BACKCHANNEL = frozenset([
    "lol", "lmao", "lmfao", "rofl", "haha", "hahaha", "hehe", "omg", "omfg", "ok", "okay",
    "kk", "yeah", "yea", "ya", "yah", "yep", "yup", "yes", "no", "nope", "nah", "hmm",
    "mhm", "aww", "aw", "oh", "ah", "uh", "um", "umm", "wow", "woah", "whoa", "ikr",
    "thanks", "thank", "thx", "ty", "np", "yay", "ugh", "hi", "hey", "hello", "bye", "gn",
    "gm", "xd", "xoxo", "indeed", "exactly", "totally", "definitely", "absolutely",
    "agreed", "same", "too", "sure", "right", "true", "welcome", "course",
])
# fmt: on
# the same stretched out: "hahahah", "loool", "okkk", "yesss", "awww", "hmmm", "ohhh"
_STRETCHED = re.compile(
    r"(?:(?:ha)+h?|(?:he)+h?|l+o+l+|o+k+|y+e+s+|a+w+|h+m+|o+h+|a+h+|u+g+h+|w+o+w+|y+a+y+)"
)


def says_nothing(text: str) -> bool:
    """Whether a memory says nothing of its own: every word is a backchannel, a greeting
    or thanks ("lol", "Thanks!", "Yeah, me too!", "hahaha", an emoji). A chat is full of
    them; their full-text rows hold the turns around them, so a query matching those
    turns would find them too and they would push what was said out of the results."""
    return all(w in BACKCHANNEL or _STRETCHED.fullmatch(w) for w in terms(text))


def asks_only(text: str) -> bool:
    """Whether a memory only asks ("Do you have any pets?", "Wow! How was it?"): it ends
    with a question mark and states nothing (no sentence of it ends with a full stop). In
    a conversation the answer is in the reply, not in the question."""
    body = text.strip()
    return body.endswith("?") and not _STATEMENT_END.search(body)
