"""What a restatement must keep (layer: consolidation): the details two near-identical
facts have to share to be one fact.

Two texts close in meaning are the same fact only when (:func:`same_details`):

- their **numbers** agree in order, each with its sign, decimals and unit (the word after
  it, or letters stuck to it): "-5 degrees" is not "5 degrees", "3.5 mg" not "3.05 mg",
  "5 km" not "5 miles", "2024-05-01" not "2024-01-05"; number words count ("two cats" is
  "2 cats"), and so do calendar words (months, weekdays);
- their **names** agree in order ("Ana owes Bob" is not "Bob owes Ana"); a name is a
  capitalised word that does not just open a sentence ("User's", "The"), and a word
  written in lower case in one text is a name when the other capitalises it ("sarah's");
- their **literal tokens** agree exactly, case kept: tokens with digits and letters
  ("Pa55word", "UTC+2"), a capital after a lower-case letter ("sk-ABC", "iPhone"), an
  ``@`` or a dot between letters (addresses, domains), a trailing sign ("O+"); other
  words fold their case ("GREEN" is "green");
- their **negations** agree in number, and their **comparison words** (least, most,
  over, under, before, after, from, to…) and **degree words** (very, slightly,
  sometimes, always…; not mere emphasis: "really", "a lot") in order;
- their **tense** agrees: "User was a nurse" is not "User is a nurse", "lived in
  Lisbon" not "lives in Lisbon";
- the content words they share come in the same order ("tea over coffee" is not "coffee
  over tea"), while words only one of them uses are free ("favourite colour" restates
  "favorite color").

:func:`same_text` is the exact-text check: case and whitespace folded, except in
literal tokens ("Pa55word" is not "pa55word").
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from memloci.storage.rows import content_hash

# a number (its sign when no digit stands before it, so "2024-05-01" has none and
# "UTC+2" has one) with any letters stuck to it, or a word (apostrophes inside)
_SCAN = re.compile(
    r"(?P<num>(?:(?<![\d.,])[+-])?\d+(?:[.,]\d+)*)(?P<suffix>[^\W\d_]+)?"
    r"|(?P<word>[^\W\d_]+(?:'[^\W\d_]+)*)"
)
_NEGATIONS = {
    "not",
    "no",
    "never",
    "without",
    "nobody",
    "nothing",
    "none",
    "neither",
    "nor",
    "nowhere",
    "cannot",
    "cant",
    "dont",
    "doesnt",
    "didnt",
    "isnt",
    "arent",
    "wasnt",
    "werent",
    "wont",
    "wouldnt",
    "shouldnt",
    "couldnt",
    "hasnt",
    "havent",
    "hadnt",
    "mustnt",
    "neednt",
    "aint",
}
# comparison, direction and quantity: the same words in another order say another thing
_RELATION_WORDS = (
    "least most more less fewer over under above below before after earlier later than "
    "from to into onto out off up down only exactly all every each some any many few "
    "several max maximum min minimum"
)
# degree, frequency and hedging: "likes very spicy food" is not "likes spicy food"
# (mere emphasis is free: "really loves hiking" restates "loves hiking")
_DEGREE_WORDS = (
    "very extremely quite rather somewhat slightly barely hardly highly little bit mostly "
    "mainly partly usually always sometimes often rarely seldom occasionally almost nearly "
    "especially particularly probably maybe perhaps"
)
_RELATIONS = set(_RELATION_WORDS.split(" ")) | set(_DEGREE_WORDS.split(" "))
# the tense of "to be" / "to have": "User was a nurse" is not "User is a nurse"
_PAST_AUX = {"was": "be", "were": "be", "had": "have"}
_PRESENT_AUX = {"is": "be", "are": "be", "am": "be", "has": "have", "have": "have"}
_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen"
_TEENS = "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
_NUMBER_WORDS: dict[str, float] = {w: i for i, w in enumerate(f"{_ONES} {_TEENS}".split(" "))}
_NUMBER_WORDS.update(
    {
        "thirty": 30,
        "forty": 40,
        "fifty": 50,
        "sixty": 60,
        "seventy": 70,
        "eighty": 80,
        "ninety": 90,
        "hundred": 100,
        "thousand": 1000,
        "million": 10**6,
        "billion": 10**9,
        "first": 1,
        "second": 2,
        "third": 3,
        "fourth": 4,
        "fifth": 5,
        "sixth": 6,
        "seventh": 7,
        "eighth": 8,
        "ninth": 9,
        "tenth": 10,
        "once": 1,
        "twice": 2,
        "half": 0.5,
        "dozen": 12,
    }
)
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
# words that carry no detail of their own: never a unit, never a content word
_FUNCTION = _STARTERS | {
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "am",
    "has",
    "have",
    "had",
    "do",
    "does",
    "did",
    "will",
    "would",
    "shall",
    "should",
    "can",
    "could",
    "might",
    "must",
    "not",
    "about",
    "around",
    "per",
    "than",
    "and",
    "or",
    "nor",
    "s",
}
_EDGE = "\"'“”‘’([{<"
_TRAIL = "\"'“”‘’)]}>.,;:!?"


@dataclass(frozen=True)
class _Reading:
    numbers: tuple[str, ...]  # "-5 degree", "2 cat", "3.5 mg", "monday"
    capitals: tuple[str, ...]  # folded capitalised words that do not open a sentence
    words: tuple[str, ...]  # every word, folded, possessive "'s" dropped
    literals: tuple[str, ...]  # exact, case kept
    relations: tuple[str, ...]
    negations: int


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).replace("’", "'")
    return re.sub(r"n't\b", " not", text, flags=re.IGNORECASE)


def _number(sign: str, body: str) -> str:
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", body):
        body = body.replace(",", "")  # 1,200 → 1200
    if re.fullmatch(r"\d+(?:\.\d+)?", body):
        try:
            value = Decimal(body).normalize()
        except InvalidOperation:  # pragma: no cover - the pattern is a decimal
            value = Decimal(0)
        body = format(value, "f")
    return f"{sign}{body}"


def _unit(word: str) -> str:
    word = word.casefold()
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def _mixed_case(chunk: str) -> bool:
    """A capital after a lower-case letter ("iPhone", "sk-ABC"); not "GREEN" or "NASA"."""
    lower = False
    for ch in chunk:
        if ch.isupper() and lower:
            return True
        lower = lower or ch.islower()
    return False


def _literal(chunk: str) -> bool:
    return bool(
        "@" in chunk
        or (re.search(r"\d", chunk) and re.search(r"[^\W\d_]", chunk))
        or re.search(r"[^\W\d_].*[+-]$|\+", chunk)
        or _mixed_case(chunk)
        or re.search(r"[^\W\d_][./:][^\W\d_]", chunk)
    )


def _read(text: str) -> _Reading:
    folded = _fold(text)
    literals = tuple(
        chunk
        for raw in folded.split()
        if (chunk := raw.lstrip(_EDGE).rstrip(_TRAIL)) and _literal(chunk)
    )
    tokens = list(_SCAN.finditer(folded))
    numbers: list[str] = []
    capitals: list[str] = []
    words: list[str] = []
    relations: list[str] = []
    negations = 0
    sentence_start = True

    def unit_after(i: int) -> str:
        nxt = tokens[i + 1].group("word") if i + 1 < len(tokens) else None
        if nxt is None or folded[tokens[i].end() : tokens[i + 1].start()].strip():
            return ""  # no word right after it (punctuation between them)
        low = nxt.casefold().replace("'", "")
        skip = low in _FUNCTION or low in _RELATIONS or low in _NEGATIONS
        return "" if skip or low in _CALENDAR or low in _NUMBER_WORDS else _unit(nxt)

    for i, match in enumerate(tokens):
        if match.group("num") is not None:
            unit = match.group("suffix")
            unit = _unit(unit) if unit else unit_after(i)
            raw = match.group("num")
            sign = raw[0] if raw[0] in "+-" else ""
            numbers.append(f"{_number(sign, raw.lstrip('+-'))} {unit}".strip())
        else:
            token = match.group("word")
            base = re.sub(r"'s$", "", token.casefold())
            low = token.casefold().replace("'", "")
            if low in _NUMBER_WORDS:
                numbers.append(f"{_number('', str(_NUMBER_WORDS[low]))} {unit_after(i)}".strip())
            elif low in _CALENDAR:
                numbers.append(low)
            if low in _NEGATIONS:
                negations += 1
            if low in _RELATIONS:
                relations.append(low)
            opener = sentence_start and (base in _STARTERS or token.casefold() in _STARTERS)
            plain = low in _CALENDAR or low in _NUMBER_WORDS
            if token[:1].isupper() and not opener and not plain:
                capitals.append(base)
            words.append(base)
        tail = folded[match.end() : match.end() + 2]
        sentence_start = bool(re.match(r"\s*[.!?:;]", tail))
    return _Reading(
        tuple(numbers), tuple(capitals), tuple(words), literals, tuple(relations), negations
    )


def details(text: str) -> tuple[frozenset[str], frozenset[str], Counter[str]]:
    """The details of one text as sets: numbers (digits anywhere in a token — "3i",
    "12th", "2024-05-01" — number words, calendar words; without their units), names
    (capitalised words, except a common word opening a sentence, "User's" included) and
    negations (counted). :func:`same_details` compares two texts more closely."""
    reading = _read(text)
    numbers = frozenset(n.split(" ")[0].lstrip("+-") for n in reading.numbers)
    negations: Counter[str] = Counter({"not": reading.negations} if reading.negations else {})
    return numbers, frozenset(reading.capitals), negations


def _first(items: tuple[str, ...] | list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _tenses(words: tuple[str, ...], *, flip: bool = False) -> set[tuple[str, bool]]:
    """The auxiliaries' tenses: ``("be", True)`` for "was"; ``flip`` swaps past and present
    (so one text's past meets the other's present in a set intersection)."""
    out = {(verb, not flip) for w in words if (verb := _PAST_AUX.get(w))}
    return out | {(verb, flip) for w in words if (verb := _PRESENT_AUX.get(w))}


def _stems(word: str) -> set[str]:
    """The stems a word may be an inflection of ("lived": "liv", "live")."""
    out = {word}
    for ending in ("ed", "es", "d", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            out.add(word[: -len(ending)])
    return out


def _inflected(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether a word only one text uses is the other's word in another tense: "lives"
    and "lived", "works" and "worked" (a past form against a present one)."""
    only_a, only_b = set(a) - set(b), set(b) - set(a)
    return any(
        wa.endswith("ed") != wb.endswith("ed") and _stems(wa) & _stems(wb)
        for wa in only_a
        for wb in only_b
    )


def same_details(a: str, b: str) -> bool:
    """Whether two near-identical texts state the same fact: the same numbers (in order,
    with sign, decimals and unit), names (in order), literal tokens (case kept),
    negations, comparison words, and their shared content words in the same order (see
    the module docstring). A difference in any of them makes them different facts,
    however close in meaning."""
    ra, rb = _read(a), _read(b)
    if (ra.numbers, ra.literals, ra.relations, ra.negations) != (
        rb.numbers,
        rb.literals,
        rb.relations,
        rb.negations,
    ):
        return False
    if _tenses(ra.words) & _tenses(rb.words, flip=True) or _inflected(ra.words, rb.words):
        return False  # one says it is so, the other that it was
    names = set(ra.capitals) | set(rb.capitals)  # "sarah's" is Sarah when the other says so
    if _first([w for w in ra.words if w in names]) != _first([w for w in rb.words if w in names]):
        return False
    skip = names | _FUNCTION | _RELATIONS | _NEGATIONS | _CALENDAR | _NUMBER_WORDS.keys()
    content_a = [w for w in _first(ra.words) if w not in skip]
    content_b = [w for w in _first(rb.words) if w not in skip]
    shared = set(content_a) & set(content_b)
    return [w for w in content_a if w in shared] == [w for w in content_b if w in shared]


def same_text(a: str, b: str) -> bool:
    """The exact-text check: the same words once case and whitespace are folded (the
    stored ``content_hash``), and the same literal tokens with their case
    ("Pa55word" is not "pa55word")."""
    return content_hash(a) == content_hash(b) and _read(a).literals == _read(b).literals
