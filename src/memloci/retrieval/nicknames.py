"""People called by another form of their name (layer: retrieval): "Mel" for a speaker
labelled "Melanie", "Melanie" for one labelled "Mel", "Mike" for "Michael".

A chat labels people by what their account says, and those who ask about it call them
what they are called: a question about "Mel" names no entity of a store whose speaker is
"Melanie", so without this it got no entity list, no speaker preference, and the name
pulled the query's meaning toward greetings ("Hey Mel!"). :func:`nicknamed` finds, for a
capitalised word the query uses as a person and no entity is named by, the one person
entity whose name (or given name, or alias) is that word shortened or lengthened — one
begins the other, the shorter of at least :data:`MIN_FORM` letters — or a common
English short form of it (:data:`SHORT_FORMS`); failing those, the one whose name it
spells otherwise (:func:`spelt_alike`: "Muhammad" for "Muhhamed"). Two people who could
be meant ("Jo" for Joanna and Joseph; "Chris" for Christina and Christopher) mean
nobody.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memloci.models import Entity, EntityType
from memloci.retrieval.mentions import is_name_word
from memloci.retrieval.query import BEFORE_PERSON
from memloci.storage.base import NodeFilter, Store
from memloci.storage.names import given_name, name_norm, unaccented
from memloci.words import STOPWORDS, terms, uncased

MIN_FORM = 3  # letters of the shorter form ("Mel", "Jon"): "Al" or "Jo" could be anyone
CANDIDATES = 20  # person entities read per word (most mentioned first)

# common English short forms whose letters do not simply begin the full name
# fmt: off
SHORT_FORMS: dict[str, tuple[str, ...]] = {
    "mike": ("michael",), "bob": ("robert",), "rob": ("robert",), "bobby": ("robert",),
    "bill": ("william",), "will": ("william",), "billy": ("william",),
    "liam": ("william",), "jim": ("james",), "jimmy": ("james",), "jamie": ("james",),
    "dick": ("richard",), "rick": ("richard",), "ricky": ("richard",),
    "ted": ("edward", "theodore"), "ned": ("edward",), "eddie": ("edward",),
    "tony": ("anthony",), "jack": ("john",), "johnny": ("john",), "hank": ("henry",),
    "harry": ("henry", "harold"), "chuck": ("charles",), "charlie": ("charles",),
    "peggy": ("margaret",), "maggie": ("margaret",), "meg": ("margaret",),
    "liz": ("elizabeth",), "beth": ("elizabeth",), "betty": ("elizabeth",),
    "lizzie": ("elizabeth",), "libby": ("elizabeth",), "kate": ("katherine", "catherine"),
    "katie": ("katherine", "catherine"), "kathy": ("katherine", "catherine"),
    "cathy": ("catherine",), "sasha": ("alexandra", "alexander"),
    "alex": ("alexandra", "alexander"), "sandy": ("sandra", "alexandra"),
    "sally": ("sarah",), "sadie": ("sarah",), "polly": ("mary",), "molly": ("mary",),
    "jenny": ("jennifer",), "jen": ("jennifer",), "becky": ("rebecca",),
    "becca": ("rebecca",), "patty": ("patricia",), "trish": ("patricia",),
    "dave": ("david",), "steve": ("steven", "stephen"), "nate": ("nathan", "nathaniel"),
    "matt": ("matthew",), "chris": ("christopher", "christina", "christine"),
    "nick": ("nicholas",), "sam": ("samuel", "samantha"), "ben": ("benjamin",),
    "dan": ("daniel",), "danny": ("daniel",), "joe": ("joseph",), "joey": ("joseph",),
    "greg": ("gregory",), "andy": ("andrew",), "drew": ("andrew",), "tom": ("thomas",),
    "tommy": ("thomas",), "fred": ("frederick",), "gabe": ("gabriel",),
    "abby": ("abigail",), "vicky": ("victoria",), "tori": ("victoria",),
    "ellie": ("eleanor", "elena"), "nell": ("eleanor", "helen"), "susie": ("susan",),
    "sue": ("susan",), "debbie": ("deborah",), "deb": ("deborah",), "cindy": ("cynthia",),
    # three letters that begin the full name: found from the short form by their letters,
    # listed so that a question using the full name finds a person labelled by the short
    "mel": ("melanie", "melissa", "melvin"), "jon": ("jonathan",), "tim": ("timothy",),
    "pam": ("pamela",), "kim": ("kimberly",), "max": ("maxwell", "maximilian"),
    "zac": ("zachary",), "zak": ("zachary",), "val": ("valerie", "valentina"),
    "viv": ("vivian", "vivienne"), "jess": ("jessica",),
}
# fmt: on
_LONGER: dict[str, tuple[str, ...]] = {}  # the other way: "michael" → ("mike",)
for _short, _fulls in SHORT_FORMS.items():
    for _full in _fulls:
        _LONGER[_full] = (*_LONGER.get(_full, ()), _short)
_WORD = re.compile(r"(?<![\w'’])([A-Z][a-z]+)(?:['’]s)?(?![\w'’])")
# in lower case, the words after which a word is someone: "what did mel say", "mel and
# caro" ("is" and "was" come before other words too: "what is art")
_SUBJECT_AFTER = BEFORE_PERSON - {"is", "was", "are", "were"}
_LOWER = re.compile(r"(?<![\w'’])([a-z]+)(['’]s)?(?![\w'’])")


def nicknamed(
    store: Store, flt: NodeFilter, query: str, named: Sequence[tuple[str, Entity]]
) -> list[tuple[str, Entity]]:
    """``(word, entity)`` for the capitalised words of ``query`` (not its first word)
    that name no entity in ``named`` and are another form of exactly one person entity's
    name: "Mel" for "Melanie", "Caro" for "Caroline Okafor", "Mike" for "Michael"; and
    "Melanie" for "Mel" when no memory the caller sees holds the word (a word the
    memories use — "Melbourne" — is what they say, not a longer name for Mel)."""
    known = {w for name, _ in named for w in terms(name)}
    out: list[tuple[str, Entity]] = []
    for word in _name_words(query):
        folded = unaccented(word.casefold())  # "josé" and "jose" alike
        if folded in known or len(folded) < MIN_FORM or any(w == word for w, _ in out):
            continue
        meant: dict[str, Entity] = {}
        longer: set[str] = set()  # the entities the word is a longer form of
        for entity in store.graph.people_named(flt.namespaces, _probes(folded), CANDIDATES):
            forms = [n for n in _forms(entity) if other_form(folded, n)]
            if forms:
                meant[entity.id] = entity
            if forms and all(folded.startswith(n) for n in forms):
                longer.add(entity.id)
        meant = {i: e for i, e in meant.items() if store.graph.entity_fulltext(flt, [i], "", 1)}
        if not meant:  # "Muhammad" for "Muhhamed", "Carolina" for "Caroline"
            for entity in store.graph.people_named(flt.namespaces, [folded[:1]], CANDIDATES):
                if any(spelt_alike(folded, n) for n in _forms(entity)):
                    meant[entity.id] = entity
                    longer.add(entity.id)
            meant = {i: e for i, e in meant.items() if store.graph.entity_fulltext(flt, [i], "", 1)}
        if len(meant) != 1:
            continue
        (entity,) = meant.values()
        if entity.id in longer and store.search.fulltext(flt, f'"{folded}"', 1):
            continue
        out.append((word, entity))
    return out


def with_surnames(
    store: Store, flt: NodeFilter, query: str, named: Sequence[tuple[str, Entity]]
) -> list[tuple[str, Entity]]:
    """``named`` with a person's name extended by the capitalised word right after it in
    ``query`` when no memory the caller sees holds that word: "What did Caroline Okafor
    paint?" about a speaker labelled "Caroline" names her by "Caroline Okafor", so the
    surname is neither searched for nor embedded (a word no memory holds made the words
    of the query count for less, and pulled its meaning)."""
    out = []
    for name, entity in named:
        after = re.search(
            rf"(?<![\w'’])(?i:{re.escape(name)})\s+([A-Z][a-z]+(?:-[A-Z][a-z]+)?)(?:['’]s)?"
            r"(?![\w'’])",
            query,
        )
        word = after.group(1) if after else None
        if (
            entity.type is EntityType.PERSON
            and word is not None
            and is_name_word(word)
            and not store.search.fulltext(flt, f'"{word.lower()}"', 1)
        ):
            name = f"{name} {word}"
        out.append((name, entity))
    return out


def _name_words(query: str) -> list[str]:
    """The words of ``query`` that may be a name: capitalised, not the first word and
    not a common word; in a query typed all in lower case, a word where a name would be
    ("what did mel paint", "caro's dog", "mel and jon") that is no stopword."""
    if not uncased(query):
        return [
            f.group(1) for f in _WORD.finditer(query) if f.start() > 0 and is_name_word(f.group(1))
        ]
    out = []
    for found in _LOWER.finditer(query):
        before = query[: found.start()].split()
        person = found.group(2) or (before and before[-1] in _SUBJECT_AFTER)
        word = found.group(1)
        if person and word not in STOPWORDS and is_name_word(word.capitalize()):
            out.append(word)
    return out


def other_form(word: str, name: str) -> bool:
    """Whether ``word`` (what a query says, case-folded) is another form of the one-word
    ``name`` (an entity's): a common short or full form of it (:data:`SHORT_FORMS`), or
    its beginning of at least :data:`MIN_FORM` letters ("mel" for "melanie"), or longer
    than it when it has at least ``MIN_FORM + 1`` ("caroline" for "caro"; not "robin"
    for "rob"), or its pet form ("tommy" for "tom", "katie" for "kat")."""
    if word == name or not name.isalpha():
        return False
    if name in SHORT_FORMS.get(word, ()) or word in SHORT_FORMS.get(name, ()):
        return True
    if name.startswith(word):
        return len(word) >= MIN_FORM
    if not word.startswith(name):
        return False
    # longer: a name of four letters or more, or its pet form ("Tommy", "Katie", "Billy")
    rest = word[len(name) :]
    return len(name) > MIN_FORM or rest in {"y", "ie", "ey", f"{name[-1]}y", f"{name[-1]}ie"}


def spelt_alike(word: str, name: str) -> bool:
    """Whether ``word`` (case-folded) is ``name`` spelt another way: both of at least
    ``MIN_FORM + 1`` letters, the same first letter, and — doubled letters read once —
    one letter added, dropped, changed or two swapped ("muhammad" / "muhhamed",
    "carolina" / "caroline", "jhon" / "john"); two in names of seven letters or more. A
    name of three letters only by a silent "h" or a last "y" for "i" ("john" / "jon",
    "emmy" / "emi")."""
    if word == name or min(len(word), len(name)) < MIN_FORM or word[0] != name[0]:
        return False
    a, b = _single(word), _single(name)
    if min(len(word), len(name)) == MIN_FORM:
        return _sound(a) == _sound(b)
    return _edits(a, b, 2 if min(len(a), len(b)) >= 7 else 1)


def _sound(word: str) -> str:
    """``word`` without its "h"s, a last "y" or "ie" read as "i" ("emmy" → "emi")."""
    return re.sub(r"(?:y|ie)$", "i", word.replace("h", ""))


def _single(word: str) -> str:
    """``word`` with each run of one letter written once ("muhhamed" → "muhamed")."""
    return re.sub(r"(.)\1+", r"\1", word)


def _edits(a: str, b: str, most: int) -> bool:
    """Whether ``a`` becomes ``b`` by at most ``most`` letters added, dropped, changed or
    two neighbours swapped (the optimal string alignment distance)."""
    if abs(len(a) - len(b)) > most:
        return False
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], prev2[j - 2] + 1)
        prev2, prev = prev, row
    return prev[-1] <= most


def _probes(word: str) -> list[str]:
    """The beginnings of the names to look people up by: the word's first
    ``MIN_FORM + 1`` letters (every name it begins, and every name of four letters or
    more it may be a longer form of, begins with them), the name it may be a pet form of
    ("tom" for "tommy"), and its common short or full forms."""
    pet = [word[: -len(end)] for end in ("y", "ie", "ey", "my", "ny", "by") if word.endswith(end)]
    stems = [p for p in pet if len(p) >= MIN_FORM]
    return [word[: MIN_FORM + 1], *stems, *SHORT_FORMS.get(word, ()), *_LONGER.get(word, ())]


def _forms(entity: Entity) -> list[str]:
    """An entity's one-word names: each name or alias of one word, and the given name of
    each full name ("Caroline Okafor" → "caroline")."""
    out = []
    for name in (entity.canonical_name, *entity.aliases):
        norm = name_norm(name)
        form = norm if " " not in norm else given_name(name)
        form = form and unaccented(form)
        if form:
            out.append(form)
    return out


__all__ = ["SHORT_FORMS", "nicknamed", "other_form", "spelt_alike", "with_surnames"]
