"""Query parsing (layer: retrieval): terms, FTS5 match strings, time phrases."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memloci.models import normalize_key
from memloci.retrieval.forms import forms
from memloci.retrieval.mentions import speaker_name
from memloci.words import terms

ROLE_WORDS = frozenset({"user", "assistant"})
# "the user" / "the assistant('s)": group 1 the role, group 2 the possessive
ROLE_PHRASE = re.compile(r"\bthe\s+(user|assistant)\b(['’]s)?(?![\w'’])", re.IGNORECASE)


def fts_match(text: str, *, max_terms: int = 24, other_forms: bool = True) -> str:
    """An FTS5 MATCH expression: any of the content words (quoted, so always valid),
    each with its other forms that stemming does not join (:func:`forms`: "win" is
    searched as ``("win" OR "won")``) unless ``other_forms`` is false.

    Role words ("the user", "the assistant") name the memory's owner or a speaker
    label, not what a memory is about, so they are not searched for."""
    words = [w for w in terms(text) if w not in ROLE_WORDS][:max_terms]
    return " OR ".join(_any_form(w) if other_forms else f'"{w}"' for w in words)


def _any_form(word: str) -> str:
    others = forms(word)
    return f'("{word}" OR ' + " OR ".join(f'"{w}"' for w in others) + ")" if others else f'"{word}"'


def key_form(text: str) -> str:
    """The fuzzy-key form of a query (spaces, ``_`` and ``-`` equivalent)."""
    return normalize_key(text)


# the first person and its third: "I" / "my" → "they" / "their", "I'm" → "they're"
_THIRD = {"i": "they", "me": "them", "my": "their", "mine": "theirs", "myself": "themself"}
# words after which a name is someone: "did Robin", "Robin and Kim"
BEFORE_PERSON = frozenset(
    {"did", "does", "do", "is", "was", "has", "had", "would", "will", "can", "could"}
    | {"might", "should", "were", "are", "and", "with", "for", "between"}
)
FIRST_PERSON = re.compile(
    r"(?<![\w'’./-])(i|me|my|mine|myself)(?:(['’])(m|ve|d|ll))?(?![\w'’/-]|\.\w)", re.I
)  # not a letter of "i.e.", "I/O", "-i", "I-95"


# a name right after these words is not who does what a query asks: "recommend to Jon",
# "with Melanie", "Nate and Joanna", "tell Gina"
_NOT_SUBJECT_AFTER = frozenset(
    {"to", "with", "for", "about", "from", "of", "at", "by", "on", "toward", "towards"}
    | {"like", "than", "unlike", "into", "between", "among", "against", "without", "and"}
    | {"or", "&", "both", "tell", "told", "tells", "ask", "asked", "asks", "give", "gave"}
    | {"gives", "show", "showed", "shows", "send", "sent", "sends", "offer", "offered"}
    | {"offers", "teach", "taught", "remind", "reminded", "thank", "thanked", "invite"}
    | {"invited", "help", "helped", "helps", "meet", "met", "meets", "visit", "visited"}
    | {"call", "called", "calls", "encourage", "encouraged", "advise", "advised", "let"}
)
_ACCORDING = re.compile(r"\baccording\s+to\s*$", re.IGNORECASE)
# "What advice did Caroline get from Melanie?": Melanie gave it, and said it
_RECEIVED = re.compile(
    r"\b(?:receive[sd]?|receiving|get|gets|got|gotten|getting|hear[sd]?|hearing|learn(?:s|ed|t)?"
    r"|learning)\b.*\bfrom\s*$",
    re.IGNORECASE,
)


def subjects(query: str, names: Sequence[str]) -> list[str]:
    """Of ``names`` (as ``query`` writes them), those it names as who does or says what
    it asks — "What did Jon say about Gina's store?" → Jon; "What book did Tim recommend
    to John?" → Tim: not an owner ("Gina's"), not after a preposition or a verb it is the
    object of ("to John", "tell Gina"), not joined to another ("Nate and Joanna" both
    are, so neither is alone). "According to Gina, …" and "What did Jon get / hear /
    learn from Gina?" name Gina alone: she said it."""
    out: list[str] = []
    for name in dict.fromkeys(names):
        for found in re.finditer(rf"(?<![\w'’])(?i:{re.escape(name)})(?![\w])", query):
            before, after = query[: found.start()], query[found.end() :]
            if _ACCORDING.search(before) or _RECEIVED.search(before):
                return [name]
            last = re.findall(r"[\w&]+", before[-24:])
            if (last and last[-1].lower() in _NOT_SUBJECT_AFTER) or re.match(
                r"(['’]s?(?!\w)|\s+(and|or|&)\b)", after, re.IGNORECASE
            ):
                continue
            out.append(name)
            break
    return out


# "im" and "ive", as a chat types "I'm" and "I've" (not "IM", nor the name "Ive")
_TYPED_FIRST = re.compile(r"(?<![\w'’])(im|Im|ive)(?![\w'’])")


def third_person(text: str) -> str:
    """``text`` with the first person singular as the third ("I moved to Lisbon" → "they
    moved to Lisbon", "my" → "their", "I'm" → "they're", "im" typed without its
    apostrophe too): how memories and queries are embedded. People say "I" in a chat,
    and a question asks about them ("Where does the user live?" is embedded "Where does
    they live?", :func:`~memloci.retrieval.graph.meaning_query`): the same person is then
    the same word on both sides."""

    def swap(found: re.Match[str]) -> str:
        word = _THIRD[found.group(1).lower()]
        if found.group(3) is None or word != "they":
            return word + (found.group(2) or "") + (found.group(3) or "")
        return f"they{found.group(2)}{'re' if found.group(3).lower() == 'm' else found.group(3)}"

    text = _TYPED_FIRST.sub(lambda m: "they're" if m.group(1).lower() == "im" else "they've", text)
    return FIRST_PERSON.sub(swap, text)


# what :func:`document_text` embeds, recorded in a store with its first vectors
# (``document_form``): "2" since memories are embedded in the third person (2026-11-27),
# "3" since "im" / "ive" are too (the same day); a store without the record holds form
# "1"; ``memloci reembed`` rebuilds an older one
DOCUMENT_FORM = "3"


def document_text(content: str, speaker: str | None, key: str | None, subject: str | None) -> str:
    """The text embedded for a memory: :func:`labelled`, its content in the third person
    (:func:`third_person`)."""
    return labelled(third_person(content), speaker, key, subject)


def labelled(content: str, speaker: str | None, key: str | None, subject: str | None) -> str:
    """A memory as a reader sees it: who said it (their name when the label is one, "Emi"
    for "Emi 🌸") / what it is about, then the content."""
    label = speaker and (speaker_name(speaker) or speaker)
    label = label or subject or (key.replace("_", " ") if key else None)
    return f"{label}: {content}" if label else content


_STATEMENT_END = re.compile(r"\.(?:\s|$)")


# how a question begins: "how was …", "did you …" (not "can't wait", "won't")
_ASKS_START = re.compile(
    r"(?:what|where|when|who|whom|whose|why|how|which|do|does|did|is|are|was|were|have|has"
    r"|can|could|would|will|should)\b(?!['’])",
    re.IGNORECASE,
)
_UNMARKED_MAX = 12  # words of an unpunctuated message that may still be a question


def asks_only(text: str, *, said: bool = False) -> bool:
    """Whether a memory only asks ("Do you have any pets?", "Wow! How was it?"): it ends
    with a question mark and states nothing (no sentence of it ends with a full stop); or,
    for a chat message (``said``), as chats are typed: it has no punctuation at all,
    begins as a question does and is short ("how was the trip", "did u go"). A note such
    as "Is vegetarian" is no question. In a conversation the answer is in the reply, not
    in the question."""
    body = text.strip()
    if body.endswith("?"):
        return not _STATEMENT_END.search(body)
    unmarked = not any(c in ".!?" for c in body) and len(body.split()) <= _UNMARKED_MAX
    return said and unmarked and _ASKS_START.match(body) is not None
