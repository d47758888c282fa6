"""Unkeyed contradictions (layer: consolidation): a new fact that says the same subject's
same property holds an incompatible value, so it supersedes the old one.

Keyed facts supersede by their key (:mod:`memloci.consolidation.slots`); most facts have
none ("The build server is fast", later "The build server is slow"). This module reads
two fact texts and answers whether the second contradicts the first — conservatively: a
false supersession loses what the user said, a missed one leaves two facts side by side
(the old one still dated), so only plain sentences of four shapes count, and anything
else (a qualifier, a hedge, a pronoun subject, another tense) is left alone:

* **a state**: "<subject> is [very] <adjective>" with adjectives of one scale on opposite
  sides ("fast" / "slow", "open" / "closed", "married" / "single"), or the same one
  negated ("is fast" / "is not fast"). "fast at night", "fast and cheap", "not slow"
  (compatible with "fast"), "was slow" next to "is fast" are not read;
* **a place**: "<subject> is located / based / headquartered / hosted in <place>",
  "<subject> lives in <place>": another place of a short plain name, unless one may hold
  the other ("Berlin" / "Germany": a country, a continent or a US state next to anything
  but another of its kind; "New York" / "New York City");
* **a value of a single-valued property**: "<owner's> <name / age / deadline / password /
  manager / …> is <value>", or "favorite <thing>", where the value is a name, a number or
  an address (a capital letter, a digit or an ``@``), or a colour / status / size word;
* **a number**: the same sentence but for one number, date or amount after its verb, in
  the present tense of a state verb ("has 16 GB" / "has 32 GB", "takes 10 minutes" /
  "takes 25 minutes"), with no day or time it was said for ("ran 5 km today").
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from memloci.models import MemoryNode
from memloci.retrieval.query import fts_match
from memloci.storage.base import NodeFilter, Store

CANDIDATES = 50  # the owner's current facts sharing a word with a new one that are read


# ---------------------------------------------------------------------- words
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _phrases(text: str) -> frozenset[str]:
    return frozenset(p.strip() for p in text.split("|"))


# Each scale: (one side, the other side). Two adjectives contradict when they sit on
# opposite sides of one scale.
SCALES: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (_words(a), _words(b))
    for a, b in (
        ("fast quick speedy snappy", "slow sluggish"),
        ("hot warm", "cold cool chilly"),
        ("open", "closed shut"),
        ("on", "off"),
        ("online up", "offline down"),
        ("enabled active activated", "disabled inactive deactivated"),
        ("public", "private"),
        ("empty", "full"),
        ("expensive pricey costly", "cheap inexpensive affordable"),
        ("big large huge", "small tiny little"),
        ("married", "single unmarried divorced"),
        ("alive", "dead"),
        ("healthy", "sick ill unwell"),
        ("clean", "dirty"),
        ("stable", "unstable flaky"),
        ("reliable", "unreliable flaky"),
        ("quiet silent", "loud noisy"),
        ("easy", "hard difficult"),
        ("safe secure", "dangerous unsafe insecure"),
        ("new", "old"),
        ("young", "old elderly"),
        ("working functional", "broken"),
        ("correct right accurate", "wrong incorrect inaccurate"),
        ("true", "false"),
        ("valid", "invalid"),
        ("available", "unavailable"),
        ("happy glad", "sad unhappy"),
        ("tall", "short"),
        ("long", "short"),
        ("wide", "narrow"),
        ("rich wealthy", "poor"),
        ("heavy", "light lightweight"),
        ("bright", "dark dim"),
        ("locked", "unlocked"),
        ("visible", "hidden invisible"),
        ("complete completed done finished", "incomplete unfinished"),
        ("present", "absent"),
        ("strict", "lenient"),
        ("allowed permitted", "forbidden banned prohibited"),
        ("required mandatory", "optional"),
        ("employed", "unemployed"),
        ("awake", "asleep"),
        ("wet", "dry"),
        ("good great excellent", "bad terrible awful"),
        ("interesting fun", "boring dull"),
        ("friendly kind nice", "rude unfriendly"),
        ("high", "low"),
        ("loose", "tight"),
        ("thick", "thin"),
        ("full-time", "part-time"),
        ("remote", "on-site onsite"),
    )
)
# degree words and the like between the verb and the adjective, or after it
_MODIFIERS = _words(
    "very really quite so too extremely pretty super incredibly fairly rather now currently "
    "still always usually completely totally fully"
)
_AFTER = ("now", "currently", "nowadays", "these days", "again", "anymore", "any more")
# a subject that leans on what was said before: what it means is not known here
_PRONOUNS = _words(
    "it he she they this that these those there here we you everything something nothing "
    "everyone someone somebody anyone anybody nobody what which who one"
)
# a fact that is not a plain statement
_HEDGES = re.compile(
    r"\b(?:maybe|might|may be|perhaps|probably|possibly|think|thinks|guess|seems?|sometimes"
    r"|if|unless|when|whenever|while|although|though|but|except|usually|often|rarely"
    r"|not sure|i wonder)\b|[?;()\[\]]"
)
_TIMES = re.compile(
    r"\b(?:today|yesterday|tomorrow|tonight|ago|last|next|this (?:morning|afternoon|evening"
    r"|week|month|year|weekend)|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    r"|mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|weekends?|every)\b"
)
_MONTHS = _words(
    "january february march april may june july august september october november december"
)
_NUMBER_WORDS_IN_ORDER = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
_NUMBER_WORDS = _words(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty hundred"
)
_NUMBER = re.compile(
    r"^[$€£¥]?\d+(?:[.,:]\d+)*(?:%|k|m|bn|gb|mb|tb|kb|ghz|mhz|am|pm|h|ms|s|st|nd|rd|th|x)?$"
)
# present-tense verbs of a lasting state: a number after one is the state's value
_STATE_VERBS = _words(
    "is are am has have costs cost takes take weighs weigh holds hold uses use needs need "
    "requires require lasts last earns earn pays pay charges charge contains contain "
    "supports support allows allow owns own"
)
# properties that hold one value at a time (the head noun of "<owner's> <property>")
_SINGLE_VALUED = _words(
    "name surname nickname age birthday birthdate deadline password passcode pin address "
    "email phone number capital price cost budget salary rent fee version status timezone "
    "manager boss owner wife husband spouse color colour size height weight score rank title "
    "role limit quota zip postcode"
)
_PLAIN_VALUE_HEADS = _words("color colour status size")  # lower-case values too
# words a short value never has: it is a phrase with a qualifier, a list, a clause
_NOT_IN_VALUE = _words(
    "and or but also too as like during on at in for with since until till from when while "
    "by near except of mostly partly sometimes not no never than about around"
)
_PLACE_VERB = re.compile(
    r"^(?P<subject>.+?) (?:(?:is|are) (?:located|based|headquartered|hosted|situated|housed)"
    r" (?:in|at|on)|(?:lives|live|resides|reside) in) (?P<value>.+)$"
)
_COPULA = re.compile(r"^(?P<subject>.+?) (?P<verb>is|are|am|was|were) (?P<rest>.+)$")
_NEGATION = re.compile(r"^(?:not|no longer|never) ")

# places that may hold other places: a value next to one of another kind is left alone
_CONTINENTS = _phrases(
    "europe|asia|africa|america|oceania|antarctica|north america|south america|latin america"
)
_COUNTRY_NAMES = (
    "afghanistan albania algeria andorra angola argentina armenia australia austria "
    "azerbaijan bahamas bahrain bangladesh belarus belgium belize benin bhutan bolivia "
    "bosnia botswana brazil brunei bulgaria burundi cambodia cameroon canada chad chile "
    "china colombia congo croatia cuba cyprus czechia denmark djibouti dominica ecuador "
    "egypt eritrea estonia eswatini ethiopia fiji finland france gabon gambia georgia "
    "germany ghana greece grenada guatemala guinea guyana haiti honduras hungary iceland "
    "india indonesia iran iraq ireland israel italy jamaica japan jordan kazakhstan kenya "
    "kiribati kosovo kuwait kyrgyzstan laos latvia lebanon lesotho liberia libya "
    "liechtenstein lithuania luxembourg madagascar malawi malaysia maldives mali malta "
    "mauritania mauritius mexico micronesia moldova monaco mongolia montenegro morocco "
    "mozambique myanmar namibia nauru nepal netherlands holland nicaragua niger nigeria "
    "norway oman pakistan palau palestine panama paraguay peru philippines poland portugal "
    "qatar romania russia rwanda samoa senegal serbia seychelles singapore slovakia "
    "slovenia somalia spain sudan suriname sweden switzerland syria taiwan tajikistan "
    "tanzania thailand togo tonga tunisia turkey turkmenistan tuvalu uganda ukraine "
    "uruguay usa us uk america england scotland wales uzbekistan vanuatu venezuela vietnam "
    "yemen zambia zimbabwe"
)
_COUNTRIES = _words(_COUNTRY_NAMES) | _phrases(
    "united states|united kingdom|great britain|south africa|south korea|north korea|"
    "new zealand|saudi arabia|sri lanka|costa rica|el salvador|the netherlands|"
    "the united states|the uk|the us|czech republic|dominican republic|ivory coast|"
    "united arab emirates"
)
_US_STATES = _phrases(
    "alabama|alaska|arizona|arkansas|california|colorado|connecticut|delaware|florida|"
    "hawaii|idaho|illinois|indiana|iowa|kansas|kentucky|louisiana|maine|maryland|"
    "massachusetts|michigan|minnesota|mississippi|missouri|montana|nebraska|nevada|"
    "new hampshire|new jersey|new mexico|north carolina|north dakota|ohio|oklahoma|oregon|"
    "pennsylvania|rhode island|south carolina|south dakota|tennessee|texas|utah|vermont|"
    "virginia|washington|west virginia|wisconsin|wyoming|bavaria|catalonia|ontario|quebec"
)
_REGION_KINDS = (_CONTINENTS, _COUNTRIES, _US_STATES)


@dataclass(frozen=True)
class Claim:
    """What a plain fact says: ``subject``'s ``prop`` is ``value`` (``negated``: is not)."""

    shape: str  # "state" | "place" | "value"
    subject: str
    tense: str  # "present" | "past"
    value: str
    negated: bool = False
    prop: str = ""


# ---------------------------------------------------------------------- reading
def _normal(text: str) -> str:
    """Lower case, plain apostrophes, no closing punctuation, contractions spelt out."""
    t = text.strip().replace("’", "'").rstrip(".!").strip().casefold()
    t = re.sub(r"\b(is|are|was|were)n't\b", r"\1 not", t)
    t = re.sub(r"\bi'm\b", "i am", t)
    return re.sub(r"\s+", " ", t)


def _subject(words: str) -> str | None:
    """The subject, its leading "the" dropped ("I" is the user); None for a pronoun, a
    long phrase or one with a clause in it."""
    tokens = words.split()
    if tokens and tokens[0] == "the":
        tokens = tokens[1:]
    if not tokens or len(tokens) > 6 or tokens[0] in _PRONOUNS:
        return None
    if any(t in {"who", "which", "that", "because", ","} or t.endswith(",") for t in tokens):
        return None
    subject = " ".join(tokens)
    return "user" if subject in {"i", "user", "the user"} else subject


def _strip_after(rest: str) -> str:
    for tail in _AFTER:
        if rest.endswith(" " + tail):
            return rest[: -len(tail) - 1]
    return rest


def _short_value(value: str) -> str | None:
    """A short plain value (at most 4 words, no qualifier or list), its "the" dropped."""
    tokens = value.split()
    if tokens and tokens[0] in {"the", "a", "an"}:
        tokens = tokens[1:]
    if not tokens or len(tokens) > 4 or any(t in _NOT_IN_VALUE or "," in t for t in tokens):
        return None
    return " ".join(tokens)


def _head(subject: str) -> str:
    """The property a subject names: the noun before "of" ("capital of France"), else its
    last word ("Ana's deadline")."""
    tokens = subject.split()
    if "of" in tokens:
        return tokens[tokens.index("of") - 1] if tokens.index("of") else ""
    return tokens[-1] if tokens else ""


def _place(text: str) -> Claim | None:
    found = _PLACE_VERB.match(text)
    if not found:
        return None
    subject = _subject(found["subject"])
    value = _short_value(_strip_after(found["value"]))
    if subject is None or value is None:
        return None
    return Claim("place", subject, "present", value)


def _state_or_value(text: str, original: str) -> Claim | None:
    found = _COPULA.match(text)
    if not found:
        return None
    subject = _subject(found["subject"])
    if subject is None:
        return None
    tense = "past" if found["verb"] in {"was", "were"} else "present"
    rest = _strip_after(found["rest"])
    negated = bool(_NEGATION.match(rest))
    if negated:
        rest = _NEGATION.sub("", rest, count=1)
    tokens = rest.split()
    while tokens and tokens[0] in _MODIFIERS:
        tokens = tokens[1:]
    value = None if negated else _value(subject, rest, original)
    if value is not None:
        return Claim("value", subject, tense, value, prop=_head(subject))
    if len(tokens) == 1 and tokens[0] not in {"a", "an", "the"}:
        return Claim("state", subject, tense, tokens[0], negated)
    return None


def _value(subject: str, rest: str, original: str) -> str | None:
    """The value of a single-valued property ("Ana's manager" is "Bob"), or None."""
    head = _head(subject)
    favourite = bool(re.search(r"\bfavou?rite\b", subject))
    if head not in _SINGLE_VALUED and not favourite:
        return None
    value = _short_value(rest)
    if value is None:
        return None
    # the value as written: a name, a number or an address, unless the property takes
    # plain words ("blue", "green"); "Ana's manager is nice" describes, it names no one
    at = original.casefold().rfind(value)
    named = at >= 0 and bool(re.search(r"[A-Z0-9@]", original[at : at + len(value)]))
    return value if named or favourite or head in _PLAIN_VALUE_HEADS else None


def read(text: str) -> Claim | None:
    """The claim of a plain fact (module docstring), or None."""
    t = _normal(text)
    if _HEDGES.search(t) or _TIMES.search(t):
        return None
    return _place(t) or _state_or_value(t, text.strip())


# ---------------------------------------------------------------------- comparing
def _opposite(a: str, b: str) -> bool:
    return any((a in x and b in y) or (a in y and b in x) for x, y in SCALES)


def _region_kind(place: str) -> int | None:
    name = place.removeprefix("the ")
    for kind, names in enumerate(_REGION_KINDS):
        if name in names:
            return kind
    return None


def _may_hold(a: str, b: str) -> bool:
    """Whether one place may be inside the other: one's words hold the other's ("New
    York" / "New York City"), or a region next to a place of another kind."""
    wa, wb = a.split(), b.split()
    if any(wa[i : i + len(wb)] == wb for i in range(len(wa))) or any(
        wb[i : i + len(wa)] == wa for i in range(len(wb))
    ):
        return True
    ka, kb = _region_kind(a), _region_kind(b)
    return (ka is not None or kb is not None) and ka != kb


def _contains(a: str, b: str) -> bool:
    wa, wb = set(a.split()), set(b.split())
    return wa <= wb or wb <= wa


def _claims(old: Claim, new: Claim) -> str | None:
    if (old.shape, old.subject, old.tense) != (new.shape, new.subject, new.tense):
        return None
    if old.shape == "state":
        if old.value == new.value:
            if old.negated == new.negated:
                return None
            was, now = ("not " if c.negated else "" for c in (old, new))
            return f"{was}{old.value} → {now}{new.value}"
        if not old.negated and not new.negated and _opposite(old.value, new.value):
            return f"{old.value} → {new.value}"
        return None
    if old.value == new.value:
        return None
    if old.shape == "place":
        return None if _may_hold(old.value, new.value) else f"{old.value} → {new.value}"
    if old.prop != new.prop or _contains(old.value, new.value):
        return None
    return f"{old.value} → {new.value}"


def _is_number(token: str) -> bool:
    return bool(_NUMBER.match(token)) or token in _NUMBER_WORDS


_COUNTED = {w: i for i, w in enumerate(_NUMBER_WORDS_IN_ORDER.split())}
_SPLIT_NUMBER = re.compile(r"^[$€£¥]?(?P<digits>\d+(?:[.,:]\d+)*)(?P<unit>[a-z%]*)$")


def _same_number(a: str, b: str) -> bool:
    """Whether two number tokens say the same amount ("3.5" / "3.50", "$1,200" / "$1200",
    "2" / "two")."""

    def value(token: str) -> tuple[float, str] | None:
        if token in _COUNTED:
            return float(_COUNTED[token]), ""
        found = _SPLIT_NUMBER.match(token)
        if not found:
            return None
        digits = found["digits"]
        if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", digits):
            digits = digits.replace(",", "")
        try:
            return float(digits), found["unit"]
        except ValueError:  # "3:00", "1.2.3": compare as written
            return None

    va, vb = value(a), value(b)
    return va is not None and va == vb


def _numbers(old: str, new: str) -> str | None:
    """The same sentence but for one number (or month, after "is") after a present-tense
    state verb: "has 16 GB" → "has 32 GB"."""
    a, b = _normal(old), _normal(new)
    if _HEDGES.search(a) or _HEDGES.search(b) or _TIMES.search(a) or _TIMES.search(b):
        return None
    ta, tb = a.split(), b.split()
    if len(ta) != len(tb):
        return None
    diff = [i for i, (x, y) in enumerate(zip(ta, tb, strict=True)) if x != y]
    if len(diff) != 1:
        return None
    at = diff[0]
    verbs = [i for i, t in enumerate(ta) if t in _STATE_VERBS]
    if not verbs or verbs[0] >= at or _subject(" ".join(ta[: verbs[0]])) is None:
        return None
    x, y = ta[at], tb[at]
    months = x in _MONTHS and y in _MONTHS and ta[verbs[0]] in {"is", "are"}
    if not (months or (_is_number(x) and _is_number(y))) or _same_number(x, y):
        return None
    return f"{x} → {y}"


def contradiction(old: str, new: str) -> str | None:
    """How ``new`` contradicts ``old`` ("fast → slow"), when it says the same subject's
    same property holds an incompatible value; None when it does not, or when either is
    not a plain statement this module reads (module docstring)."""
    if _normal(old) == _normal(new):
        return None
    a, b = read(old), read(new)
    if a is not None and b is not None:
        found = _claims(a, b)
        if found is not None:
            return found
    return _numbers(old, new)


def contradicted(
    store: Store, owner: NodeFilter, text: str, *, skip: Collection[str] = ()
) -> tuple[MemoryNode, str] | None:
    """The current fact of ``owner`` (see :func:`~memloci.consolidation.dedupe.fact_owner`)
    that ``text`` contradicts, newest first, and how; None if none does. Read: the
    :data:`CANDIDATES` best full-text matches of its words and the owner's
    :data:`CANDIDATES` newest facts (a subject with no word to search: "I am single"). A
    fact with a key is left to its key; ``skip`` are ids already replaced."""
    if read(text) is None and not re.search(r"\d|" + "|".join(sorted(_MONTHS)), text.casefold()):
        return None  # neither a claim nor a number: nothing to compare (no search)
    match = fts_match(text, other_forms=False)
    ids = [i for i, _ in store.search.fulltext(owner, match, CANDIDATES)] if match else []
    found = {n.id: n for n in store.memories.get_nodes(owner.namespaces, ids)}
    for node in store.memories.list_nodes(owner, limit=CANDIDATES, order="-created"):
        found.setdefault(node.id, node)
    nodes = [n for n in found.values() if n.key is None and n.is_current and n.id not in skip]
    for node in sorted(nodes, key=lambda n: n.event_time, reverse=True):
        how = contradiction(node.content, text)
        if how is not None:
            return node, how
    return None
