"""Proper-name mentions (layer: retrieval): conservative, rule-based, English.

The background worker links each new conversation turn to the entities it is about
(the entity neighbourhood strategy in :mod:`memloci.retrieval.graph` walks those links):

* its **speaker**, when the label is a proper name ("Caroline", not "user") — a turn
  is about the person saying it ("I started pottery last week");
* **capitalised names inside a sentence** ("a trip to Rome", "Whispering Falls",
  "Lord of the Rings", "LGBTQ"), never a sentence's first word (any word is capitalised
  there), never a word that is also a common word (stopwords, months, weekdays,
  interjections), and never a name used to **address** someone ("Thanks, Melanie!",
  "Hey Jon,"): a greeting says nothing about what the turn is about.

No model, no network; precision over recall, since a wrong entity only adds noise.
"""

from __future__ import annotations

import re

from memloci.storage.names import TITLES
from memloci.words import STOPWORDS

_MONTHS = (
    "january february march april may june july august september october november december"
    " jan feb mar apr jun jul aug sep sept oct nov dec"
)
_DAYS = "monday tuesday wednesday thursday friday saturday sunday"
_COMMON = frozenset(
    (
        f"{_MONTHS} {_DAYS} hey hi hello hiya bye goodbye thanks thank thx wow yeah yes yep"
        " yup nope no ok okay oh ooh ah aw aww haha hah lol omg congrats congratulations"
        " sorry please sure cool great awesome nice dear hmm um uh well gosh god mom dad"
        " mum mommy daddy sir madam mr mrs ms dr st mt mon tue tues wed thu thur thurs fri sat"
        " sun btw lol omg tbh imo fyi asap diy"
    ).split()
)
_CONNECTORS = frozenset({"of", "the", "de", "du", "la", "le", "von", "van", "da", "del"})
_ROLES = frozenset({"user", "assistant", "system", "tool", "human", "ai", "bot", "agent"})
_TITLES = frozenset({"dr", "mr", "mrs", "ms", "st", "mt", "prof"})
# "thanks mel!": a lower-case word between a greeting and punctuation (or the end)
_LOWER_ADDRESS = re.compile(
    r"(?i:\b(?:hey|hi|hello|hiya|heya|thanks|thank you|thx|ty|bye|love you|miss you"
    r"|congrats|good night|night|morning|good morning|sorry)),?\s+([a-z][a-z-]+)"
    r"(?=\s*(?:[,!?.;:)]|$))",
    re.MULTILINE,
)
# what people call a friend or a group, not a name ("thanks guys", "hey girl")
_CALL_WORDS = (
    "guys guy all everyone everybody there man men dude dudes bro bros girl girls gal babe"
    " baby love luv hun hon honey sweetie sweetheart darling buddy bud pal mate mates"
    " friend friends fam team folks yall sis bestie boss mama papa you u ya yourself"
    " again too so much lots both anyway tho though"
)
_CALLS = frozenset(_CALL_WORDS.split())
# verbs a note or an agent's fact may begin with, when it leaves out who ("Likes jazz")
_LEAD_VERB_WORDS = (
    "likes loves prefers hates wants needs enjoys owns uses works lives plays reads writes"
    " speaks drives runs eats drinks has was is does did went got made saw met bought took"
    " had came gave found left felt kept told thought began ran wrote read drove ate drank"
    " spoke sold sent built learned learnt taught brought caught won lost became grew"
    " heard wore swam flew"
)
_LEAD_VERBS = frozenset(_LEAD_VERB_WORDS.split())
_ADVERBS = frozenset(
    ["also", "just", "still", "often", "always", "never", "now", "then", "once", "already"]
)
_BE_HAVE = frozenset(["is", "was", "has", "had", "does", "did"])
_GREETING = re.compile(
    r"(?:^|[,.!?;:]\s*|\b(?:hey|hi|hello|hiya|thanks|thank you|wow|yeah|yes|yep|oh|congrats"
    r"|bye|sorry|sure|dear|ok|okay|no|haha|aw|aww|great|awesome|cool|nice|good(?: job)?"
    r"|go|love you|miss you|see you|night|morning)\s+)$",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+|\s+[-–—]\s+")
_POSSESSIVE = re.compile(r"['’]s$")
_TITLE_DOT = re.compile(r"\b(Dr|Mr|Mrs|Ms|St|Mt|Prof)\.(?=\s+[A-Z])")
_TOKEN = re.compile(r"[A-Za-z][\w'’&.-]*[\w]|[A-Za-z]")
MAX_WORDS = 4
# what decorates a name in a contact list or chat export: emoji and symbols, a note in
# brackets ("Fahim (work)"), a leading "@"
_DECORATION = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|[^\w\s.'’-]|(?<!\w)[.'’-]+|[’'-]+(?!\w)")


def speaker_name(speaker: str | None) -> str | None:
    """The speaker label as a person's name, or None for roles and non-names. A label
    typed all in lower case ("elise", "fahim khan") is that name capitalised when each
    word of it could be a name ("Elise"; not "me", "mom" or "user"); what a contact name
    is decorated with is left out ("Emi 🌸", "~elise~", "Fahim (work)", "@mel")."""
    if not speaker:
        return None
    name = " ".join(_DECORATION.sub(" ", speaker).split())
    words = name.split()
    if not 1 <= len(words) <= MAX_WORDS or name.casefold() in _ROLES:
        return None
    if name.islower() and all(_name_part(w) for w in words):
        words = [_capitalised(w) for w in words]
        return " ".join(words) if all(is_name_word(w) for w in words) else None
    if not all(w[:1].isupper() and _name_part(w) for w in words):
        return None
    return name


def _capitalised(word: str) -> str:
    """``word`` with the first letter of each of its hyphened parts capitalised
    ("mary-jane" → "Mary-Jane")."""
    return "-".join(part[:1].upper() + part[1:] for part in word.split("-"))


def _name_part(word: str) -> bool:
    """A word of a name as a speaker label writes it: letters, or an initial ("H.")."""
    return word.replace("-", "").replace("'", "").isalpha() or (
        len(word) == 2 and word[0].isalpha() and word[1] == "."
    )


def mentions(text: str) -> list[str]:
    """Proper names mentioned (not addressed) in ``text``, first occurrence order."""
    return _names(text, addressed=False)


def leading_name(text: str) -> tuple[str, bool] | None:
    """The name a memory that says nobody's name as its speaker or subject begins with,
    as a fact an agent writes does ("Caroline attended a support group", "Caroline's
    sister …"): capitalised name words that the next word, in lower case, goes on from
    (not "Definitely, …" nor "Thanks!"), and whether it is surely a name, so that an
    entity may be made of it: when it owns something ("Caroline's") or does something
    ("Caroline attended", "Tim recently finished") — not "Birthday is May 3" or "Goal
    is …", which only a known entity of that name may take. None otherwise."""
    tokens = [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text[:200])]
    if len(tokens) < 2 or not is_name_word(tokens[0][0]) or tokens[0][1] != 0:
        return None
    first = _POSSESSIVE.sub("", tokens[0][0]).casefold()
    if first in _ROLES or first in _LEAD_VERBS or first in TITLES or _past_or_doing(first):
        return None  # a note that begins with what was done: "Played tennis", "Likes jazz"
    j = _run_end(text, tokens, 0)
    if j >= len(tokens):
        return None
    gap, word = text[tokens[j - 1][2] : tokens[j][1]], tokens[j][0]
    if gap.strip() or not word[:1].islower():
        return None
    owns = _POSSESSIVE.search(tokens[j - 1][0]) is not None
    name = _POSSESSIVE.sub("", " ".join(t[0] for t in tokens[:j]).rstrip("."))
    return name, owns or _does(word.casefold())


def _past_or_doing(word: str) -> bool:
    return len(word) >= 5 and word.endswith(("ed", "ing"))


def _does(word: str) -> bool:
    """A word after a name that says the name does something: a verb in the past or the
    third person, or an adverb before one ("recently", "also")."""
    if word in _LEAD_VERBS or word in _ADVERBS:
        return word not in _BE_HAVE  # "Birthday is May 3": no telling

    return len(word) >= 4 and (
        word.endswith(("ed", "ly"))
        or (word.endswith("s") and not word.endswith(("ss", "us", "is")))
    )


def addressed(text: str) -> list[str]:
    """Names ``text`` speaks to ("Thanks, Mel!", "Hey Jon, how are you?", "Yep,
    Caroline."), first occurrence order. Never a sentence's first word: "Definitely, …"
    and "Plus, …" are shaped like "Gina, …". In a chat written in lower case, a word
    right after a greeting and before punctuation or the end is a name too ("thanks
    mel!", "hey sam, …"), unless it is a common word or what people call a group or a
    friend ("thanks guys", "hey girl")."""
    found = _names(text, addressed=True)
    for match in _LOWER_ADDRESS.finditer(text):
        word = match.group(1)
        if word not in STOPWORDS and word not in _COMMON and word not in _CALLS:
            name = word.capitalize()
            if name not in found:
                found.append(name)
    return found


def _names(text: str, *, addressed: bool) -> list[str]:
    out: list[str] = []
    text = _TITLE_DOT.sub(r"\1 ", text)  # "Dr. Seuss" is one name, not two sentences
    for sentence in _SENTENCE.split(text):
        tokens = [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(sentence)]
        i = 1  # never the sentence's first word
        while i < len(tokens):
            if not is_name_word(tokens[i][0]):
                i += 1
                continue
            j = _run_end(sentence, tokens, i)
            start, end = tokens[i][1], tokens[j - 1][2]
            name = _POSSESSIVE.sub("", " ".join(t[0] for t in tokens[i:j]).rstrip("."))
            if _addressed(sentence, start, end) is addressed and name not in out:
                out.append(name)
            i = j
    return out


def _run_end(sentence: str, tokens: list[tuple[str, int, int]], i: int) -> int:
    """End (exclusive) of the name starting at token ``i``: name words separated by
    spaces only, with up to two connectors between them ("Lord of the Rings")."""
    j = i + 1
    while j < len(tokens):
        k = j
        while k < len(tokens) and k - j < 2 and tokens[k][0].lower() in _CONNECTORS:
            k += 1
        if k >= len(tokens) or k + 1 - i > MAX_WORDS or not is_name_word(tokens[k][0]):
            break
        if not all(_adjacent(sentence, tokens[m], tokens[m + 1]) for m in range(j - 1, k)):
            break
        j = k + 1
    return j


def is_name_word(word: str) -> bool:
    """A word that may be (part of) a proper name: capitalised, not a common word."""
    bare = _POSSESSIVE.sub("", word.rstrip("."))
    if "'" in bare or "’" in bare:
        return False  # contractions: I've, I'll, Don't
    if len(bare) < 2 or not bare[0].isupper() or bare.lower() in STOPWORDS:
        return False
    if bare.lower() in _COMMON and bare.lower() not in _TITLES:
        return False
    if bare.isupper():
        return 2 <= len(bare) <= 6 and bare.isalpha()  # acronyms: UK, LGBTQ, NASA
    return bare[1:].islower() or bare[1:].replace("-", "").isalpha()


def _adjacent(sentence: str, left: tuple[str, int, int], right: tuple[str, int, int]) -> bool:
    """Two tokens separated by spaces only (not a comma or other punctuation)."""
    return sentence[left[2] : right[1]].strip() == "" or (
        left[0].lower().rstrip(".") in _TITLES and sentence[left[2] : right[1]].strip() == "."
    )


def _addressed(sentence: str, start: int, end: int) -> bool:
    """A name in direct address: after a greeting or punctuation, before ``, ! ? .`` or
    the end ("Thanks, Mel!", "Hey Jon, how are you?", "…, Caroline.")."""
    after = sentence[end:].lstrip()
    if after[:1] not in ("", ",", "!", "?", ".", ";", ":", ")"):
        return False
    return _GREETING.search(sentence[:start]) is not None
