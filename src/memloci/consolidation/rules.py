"""The rule-based extractor (layer: consolidation): explicit statements only.

The default when no LLM is configured; offline and deterministic, precision over
recall. It reads user turns only, a sentence at a time, and recognises explicit asks
("remember that…", "don't forget…"), standing instructions to the agent, stored as
procedures ("from now on, reply in English", "always cc my manager", "when I say ship
it, run the tests first"; only an imperative for the agent is one, so "always happy to
help" and "never been there" are not: ``consolidation.instructions``), preferences ("I
prefer/like/hate…", "I'd rather…"), relations ("Alec is my boss", "my sister Anna"),
work ("I work at…", "I'm a nurse at…"), names ("my name is…", "call me…") and places ("I
live in…", "I moved to…"). Questions, hypotheticals, hedges, negations and transient
remarks are skipped, and a candidate the user declines in the next turn ("no, don't
remember that") is dropped (between named speakers, only one's own: a person's "no"
never drops what the other said). A fact that leans on what was said before it — a
bare pronoun for its subject ("Remember that they loved it") — is not stored; "we" and
"our" are the user's ("User and others are going to Rome", "User's anniversary is …").

Every cue of a sentence counts: "I work at Globex and I live in Lisbon" gives both
facts (clauses joined by "and" / "but" / "plus" before "I" or "my" are read apart).
Contradictions do not stay side by side: a preference is keyed by its object
(``opinion_python``), so "I hate Python" supersedes an earlier "I love Python"; a
correction ("Actually I work at Globex now, not TechCorp") states the new fact and is
tagged ``correction`` when it has no key, so it supersedes the fact it corrects.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError as PydanticValidationError

from memloci.consolidation.base import ExtractedEntity, ExtractedFact, Extraction, finalize
from memloci.consolidation.contacts import contact
from memloci.consolidation.instructions import QUOTED, Instruction, standing_instruction
from memloci.consolidation.slots import language_key, opinion_key
from memloci.consolidation.speakers import named_speaker, said_by
from memloci.models import EntityType, FactType, MemoryNode, NodeType, SourceType

_I = re.IGNORECASE


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _rx(*parts: str) -> re.Pattern[str]:
    return re.compile("".join(parts), re.IGNORECASE)


_MONTHS = "january february march april may june july august september october november december"
_DAYS = "monday tuesday wednesday thursday friday saturday sunday today tomorrow tonight"
_NOT_NAMES = _words(
    f"{_MONTHS} {_DAYS} i i'm i'd i've i'll he she it they we you this that these those there "
    "here who what which when where why how the a an my your his her our their its mine me "
    "him them us everyone someone somebody anyone anybody nobody nothing something ok okay "
    "yes no hi hello hey thanks please sorry also but and or so if user always never remember"
)
_ASSISTANT_ROLES = _words("assistant ai bot agent model system tool function developer")

# relation word -> (entity type, category, single-valued?)
_PERSON_ONE = "boss manager supervisor wife husband spouse partner girlfriend "
_PERSON_ONE += "boyfriend fiancé fiancée fiance fiancee mom mum mother dad father landlord "
_PERSON_ONE += "landlady doctor dentist therapist"
_PERSON_MANY = "friend colleague coworker co-worker teammate sister brother son "
_PERSON_MANY += "daughter cousin aunt uncle grandmother grandfather grandma grandpa niece nephew "
_PERSON_MANY += "neighbor neighbour roommate flatmate mentor teacher coach client assistant "
_PERSON_MANY += "lawyer accountant kid child stepmother stepfather stepson stepdaughter"
_RELATIONS: dict[str, tuple[EntityType, str, bool]] = {
    **{r: (EntityType.PERSON, "person", True) for r in _words(_PERSON_ONE)},
    **{r: (EntityType.PERSON, "person", False) for r in _words(_PERSON_MANY)},
    **{r: (EntityType.CONCEPT, "general", False) for r in _words("dog cat puppy kitten pet horse")},
    **{r: (EntityType.ORGANIZATION, "context", True) for r in ("company", "employer", "startup")},
    "project": (EntityType.PROJECT, "project", False),
    "line manager": (EntityType.PERSON, "person", True),
    "best friend": (EntityType.PERSON, "person", False),
}
_REL = "|".join(sorted((re.escape(r) for r in _RELATIONS), key=len, reverse=True))
_REL_MOD = r"(?:(?:new|current|best|old|older|younger|little|big|direct|lovely)\s+)*"

_ABBREV = _rx(r"\b(?:dr|mr|mrs|ms|prof|st|jr|sr|vs|etc|e\.g|i\.e|a\.m|p\.m)\.$")
_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+|;\s+")
_LEAD_FILLER = _rx(
    r"^(?:(?:oh|ok|okay|so|well|also|and|but|btw|by the way|fyi|just so you know|for the "
    r"record|hey|actually|anyway|plus)\b[\s,:;-]*)+",
)
_TAIL_FILLER = _rx(
    r"(?:[\s,]+(?:by the way|btw|fyi|actually|though|too|as well|lol|haha))+[\s.!]*$|[\s.!?]+$",
)
_QUESTION = _rx(
    r"^(?:what|who|whom|whose|where|when|why|how|which|do|does|did|can|could|would|will|"
    r"should|shall|is|are|am|was|were|have|has|may)\b",
)
_OPENER = _rx(
    r"^(?:if|suppose|supposing|imagine|assuming|let'?s say|in case|unless|what if|when|"
    r"whenever|once)\b",
)
_HEDGE = _rx(
    r"\b(?:maybe|perhaps|might|probably|possibly|hypothetically|not sure|i guess|i wonder|"
    r"what if|i think|i thought|would be nice|kind of|sort of)\b",
)
_TRANSIENT = _rx(
    r"\b(?:today|tonight|right now|at the moment|for now|this (?:morning|afternoon|evening|"
    r"time|task|project|meeting|session|conversation|chat))\b|\bjust for\b",
)
_NEGATION = _rx(r"\b(?:not|no longer|never|used to|anymore|any more|former|ex)\b|n't\b")
_EXPLICIT = _rx(
    r"^(?:(?:can|could|would|will) you (?:please )?|please |(?:i want|i'd like|i need) you to )?"
    r"(?:(?:remember|don'?t forget|do not forget|keep in mind|bear in mind|memori[sz]e)"
    r"(?:\s+that\b|\s*:)?|(?:make a |take )?note(?:\s+that\b|\s*:))[\s,]+(?P<rest>.+)$",
)
_NOT_A_FACT = _rx(r"^(?:to|when|what|who|where|why|how|me|us|it|this|that)\b")
_DECLINE = _rx(
    r"(?<!\bi )(?:don'?t|do not|no need to|not worth|please don'?t)\s+(?:remember|store|save|"
    r"record|memori[sz]e|note|keep)(?:ing)?\s+(?:that|this|it)\b|(?<!n't )(?<!not )\bforget "
    r"(?:about )?(?:that|this|it)\b|\bnever ?mind\b|\bscratch that\b",
)
_NO = _rx(r"^(?:no|nope|nah|not really|no thanks|no thank you|please don'?t)\b")
_TEMPORARY = _rx(r"\bjust (?:for|this)\b|\bonly for\b|\bfor now\b|\btemporar|\bone[- ]off")
_YES = _rx(r"^(?:yes|yeah|yep|yup|sure|please do|ok|okay|go ahead|definitely|absolutely)\b")
_ASKS = _rx(r"\b(?:remember|save|store|note|memori[sz]e|keep .{0,12} in mind)\b")

_CALL_ME = r"^(?:please |you can |everyone |people )?(?:call me|i go by)\s+(?P<rest>.+)$"
_NAME_CUES = [
    (_rx(r"^my name(?:'s|\s+is)\s+(?P<rest>.+)$"), "User's name is {}", "name"),
    (_rx(r"^i(?:'m| am) called\s+(?P<rest>.+)$"), "User's name is {}", "name"),
    (_rx(_CALL_ME), "User wants to be called {}", "preferred_name"),
]
_REL_IS_MY = _rx(rf"^(?P<name>.+?)\s+is\s+my\s+{_REL_MOD}(?P<rel>{_REL})\b(?P<tail>.*)$")
_MY_REL_IS = _rx(
    rf"^my\s+{_REL_MOD}(?P<rel>{_REL})(?:'s name)?\s+is\s+(?:called\s+|named\s+)?(?P<rest>.+)$"
)
_MY_REL_NAME = _rx(rf"\bmy\s+{_REL_MOD}(?P<rel>{_REL}),?\s+(?P<rest>[^\W\d_].*)$")
_NOW = r"(?:\s+(?:currently|now|still|just|recently))?"
_ROLE = r"(?P<role>(?:a|an|the)\s+[a-z][a-z -]{1,40}?)"
_ORG, _PLACE = EntityType.ORGANIZATION, EntityType.PLACE
# facts about the user: (pattern, head, key, type of the name "rest" must start with)
_ANCHORED = [
    (_rx(p), head, key, kind)
    for p, head, key, kind in (
        (
            rf"^i{_NOW}\s+(?:work|am working|'m working)\s+(?P<prep>at|for)\s+",
            "User works {prep}",
            "employer",
            _ORG,
        ),
        (
            rf"^i(?:'m| am)\s+{_ROLE}\s+(?P<prep>at|for)\s+",
            "User is {role} {prep}",
            "employer",
            _ORG,
        ),
        (r"^i\s+work\s+as\s+(?=an?\s)", "User works as", "job_title", None),
        (r"^i\s+work\s+on\s+(?=.*\b(?-i:[A-Z]))", "User works on", None, None),
        (
            rf"^i{_NOW}\s+(?:live|reside|am living|'m living)\s+in\s+",
            "User lives in",
            "home_location",
            _PLACE,
        ),
        (rf"^i(?:'ve| have)?{_NOW}\s+moved\s+to\s+", "User moved to", "home_location", _PLACE),
        (r"^i(?:'m| am)\s+(?:based|located)\s+in\s+", "User is based in", "home_location", _PLACE),
        (r"^i(?:'m| am)\s+(?:originally\s+)?from\s+", "User is from", "hometown", _PLACE),
    )
]
# a fact about the user that has ended ("I no longer live in Lisbon"): stored as such, under
# the key it ends (the consolidator supersedes the key's holder only if it names the same)
_MORE = r"(?P<more>\s+any\s?more)?"
_ENDED = [
    (_rx(p), head, key, kind)
    for p, head, key, kind in (
        (
            rf"^i\s+(?P<neg>no longer|don't|do not)\s+(?:live|reside)\s+in\s+(?P<rest>.+?){_MORE}$",
            "User no longer lives in",
            "home_location",
            _PLACE,
        ),
        (
            rf"^i\s+(?P<neg>no longer|don't|do not)\s+work\s+(?P<prep>at|for)\s+"
            rf"(?P<rest>.+?){_MORE}$",
            "User no longer works {prep}",
            "employer",
            _ORG,
        ),
        (
            r"^i(?:'ve| have)?\s+(?P<neg>moved)\s+(?:away\s+)?(?:from|out of)\s+(?P<rest>.+)$",
            "User no longer lives in",
            "home_location",
            _PLACE,
        ),
        (
            r"^i(?:'ve| have)?\s+"
            r"(?P<neg>quit|stopped working (?:at|for)|left my job (?:at|with))\s+(?P<rest>.+)$",
            "User no longer works at",
            "employer",
            _ORG,
        ),
    )
]
_PREFERENCE = _rx(
    r"^i\s+(?:(?:really|much|generally|usually|definitely|strongly|absolutely|also)\s+)*"
    r"(?P<verb>prefer|like|love|enjoy|adore|hate|dislike|detest|loathe|can't stand|cannot stand|"
    r"don't like|do not like|don't enjoy|do not enjoy|don't love|do not love|"
    r"no longer (?:like|love|enjoy|prefer)|would rather|would prefer)\s+(?P<obj>.+)$",
)
_VERB3 = {
    "can't stand": "can't stand",
    "cannot stand": "can't stand",
    "don't like": "dislikes",
    "do not like": "dislikes",
    "don't enjoy": "doesn't enjoy",
    "do not enjoy": "doesn't enjoy",
    "don't love": "doesn't love",
    "do not love": "doesn't love",
    "would rather": "would rather",
    "would prefer": "would prefer",
}
# "… any more": an opinion that has ended ("I don't like Python anymore")
_ANY_MORE = _rx(r"\s*,?\s+any\s?more[.!]*$")
_ENDED_OPINION = {
    "dislikes": "no longer likes",
    "doesn't enjoy": "no longer enjoys",
    "doesn't love": "no longer loves",
}
_DEICTIC = _rx(r"^(?:it|this|that|these|those|them|you|your|him|her|the idea|what|how)\b")
_FAVOURITE = _rx(
    r"^my\s+(?:all-time\s+)?favou?rite\s+(?P<what>[a-z][a-z -]{1,30}?)\s+is\s+(?P<obj>.+)$"
)
_PERSON_CUES = _words("with tell ask email call text meet met remind invite")
_PRONOUNS = [
    (r"\bi'm\b", "they're"),
    (r"\bi am\b", "they are"),
    (r"\bi've\b", "they've"),
    (r"\bi'll\b", "they'll"),
    (r"\bi'd\b", "they'd"),
    (r"\bi was\b", "they were"),
    (r"\bi\b", "they"),
    (r"\bmyself\b", "themselves"),
    (r"\bmine\b", "theirs"),
    (r"\bmy\b", "their"),
    (r"\bme\b", "the user"),
]
_LEAD_I = [
    (r"^i(?:'m| am)\b", "User is"),
    (r"^i(?:'ve| have)\b", "User has"),
    (r"^i'll\b", "User will"),
    (r"^i'd\b", "User would"),
    (r"^i was\b", "User was"),
    (r"^i (?:don't|do not)\b", "User doesn't"),
    (r"^i do\b", "User does"),
    (r"^my\b", "User's"),
    # "we" is the user and others (a plural: the verb stays), "our" is the user's too
    (r"^we(?:'re| are)\b", "User and others are"),
    (r"^we(?:'ve| have)\b", "User and others have"),
    (r"^we'll\b", "User and others will"),
    (r"^we'd\b", "User and others would"),
    (r"^we\b", "User and others"),
    (r"^our\b", "User's"),
]
# a fact that leans on what was said before it, with nothing here to say what: a bare
# pronoun for its subject ("They loved it", "You don't have to …", "Her birthday is …"),
# or a pronoun for all it is about ("Anna loved it")
_BARE_SUBJECT = _rx(
    r"^(?:it|its|it's|they|they're|they've|they'll|they'd|them|their|theirs|he|he's|he'd|"
    r"he'll|him|his|she|she's|she'd|she'll|her|hers|you|you're|you've|you'll|you'd|your|"
    r"yours|this|that|that's|these|those)\b"
)
_BARE_OBJECT = _rx(r"^\S+(?:\s+\S+){0,2}\s+(?:it|this|that|them|him|her)$")
_KEEP_VERB = _words(
    "can could will would shall should may might must can't cannot won't wouldn't shouldn't "
    "couldn't didn't haven't hadn't wasn't used was were had did went got made took left saw "
    "came said met grew began became bought brought built caught felt found gave heard kept "
    "knew lost paid ran sent sold spent stood told thought understood won wrote"
)
_ADVERB = _words("always never often usually also just still only sometimes rarely")
_TAIL_OK = _rx(r"^(?:at|from|in|on|since|for|of)\s")
_CLAUSES = _rx(r"\s*,?\s+(?:and|but|plus|while)\s+(?=(?:i|i'm|i've|i'd|my)\s)")
_NOT_TAIL = _rx(
    r"\s*[,;]?\s+(?:and\s+)?(?:not|no longer|rather than|instead of)\s+"
    r"(?:at\s+|in\s+|for\s+|with\s+)?(?P<old>[^,;]+?)(?:\s+any\s?more)?$"
)
_NOW_TAIL = _rx(r"\s+(?:now|these days|nowadays)$")


@dataclass
class _Found:
    fact: ExtractedFact
    entities: list[ExtractedEntity] = field(default_factory=list)
    dropped: bool = False


class RuleExtractor:
    """Extracts explicit statements from user turns with patterns (see the module doc)."""

    name = "rules"

    def extract(
        self, episodes: Sequence[MemoryNode], *, known: Sequence[MemoryNode] = ()
    ) -> Extraction:
        """Facts and entities stated explicitly in ``episodes``, those ``known`` already
        too: a restatement is returned so the consolidator confirms the fact it repeats."""
        found: list[_Found] = []
        # each speaker's candidates of their previous turn: in a chat between two people
        # one person's "no, don't remember that" declines only what they said
        previous: dict[str | None, list[_Found]] = {}
        asked = False  # the assistant asked about remembering since that turn
        for node in sorted(episodes, key=lambda n: n.event_time):
            if node.type is not NodeType.EPISODIC:
                continue
            if not _is_user(node):
                asked = asked or ("?" in node.content and bool(_ASKS.search(node.content)))
                continue
            current: list[_Found] = []
            who = named_speaker(node)
            before = previous.get(who, [])
            for i, sentence in enumerate(_sentences(node.content)):
                if _DECLINE.search(sentence) or (
                    i == 0 and _NO.match(sentence) and (asked or _TEMPORARY.search(sentence))
                ):
                    for item in current or before:
                        item.dropped = True
                    continue
                if i == 0 and asked and _YES.match(sentence):
                    for item in before:
                        item.fact.confidence = max(item.fact.confidence, 0.95)
                for item in _analyse(
                    sentence, node.id, among_people=who is not None, agent=node.agent
                ):
                    item.fact = said_by(item.fact, who, sentence)
                    current.append(item)
            found.extend(current)
            previous[who], asked = current, False
        kept = [f for f in found if not f.dropped]
        return finalize([f.fact for f in kept], [e for f in kept for e in f.entities])


def _is_user(node: MemoryNode) -> bool:
    if node.source_type is SourceType.TOOL_RESULT:
        return False
    if node.source_role:
        return node.source_role.lower() in ("user", "human")
    speaker = (node.speaker or "").lower()  # no role: a named speaker, or nobody
    return speaker not in _ASSISTANT_ROLES and not (node.agent and speaker == node.agent.lower())


def _norm(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(".")


def _sentences(text: str) -> list[str]:
    out: list[str] = []
    for piece in _SPLIT.split(text):
        piece = piece.strip()
        if out and _ABBREV.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        elif piece:
            out.append(piece)
    return out


def _analyse(
    sentence: str, source: str, *, among_people: bool = False, agent: str | None = None
) -> list[_Found]:
    """Candidates in one sentence of a user turn; ``among_people``: said by a named
    speaker (a chat between people, where "you" may be the other person)."""
    question = sentence.rstrip().endswith("?")
    text = _TAIL_FILLER.sub("", _LEAD_FILLER.sub("", sentence.strip(" \"'“”"))).strip()
    if len(text) < 5:
        return []
    # a standing instruction to the agent (``consolidation.instructions``) is a procedure
    order = standing_instruction(sentence, among_people=among_people, agent=agent)
    if order is not None:
        return _procedure(order, text, source, 0.9)
    explicit = _EXPLICIT.match(text)
    if explicit:  # an explicit ask: questions ("can you remember…?") and dates are fine
        rest = explicit["rest"].strip()
        if _HEDGE.search(rest) or len(rest) < 5:
            return []
        # "remember that if I ask for a summary, keep it short"
        order = standing_instruction(rest, among_people=among_people, agent=agent)
        if order is not None:
            return _procedure(order, rest, source, 0.95)
        if _NOT_A_FACT.match(rest):
            return []
        found = _statement(rest, source)
        if not found or _left_out(rest, found):  # "my sister Ana lives in Porto": more
            found += _generic(rest, source)  # than "Ana is the user's sister" was asked
        for item in found:
            item.fact.confidence = 0.95
        return found
    if question or _QUESTION.match(text) or _OPENER.match(text) or _HEDGE.search(text):
        return []
    return [] if _TRANSIENT.search(text) else _statement(text, source)


def _statement(text: str, source: str) -> list[_Found]:
    """The first cue of each clause of ``text`` ("…, and I live in …" is a clause of its
    own), plus any "my <relation> <Name>" in it."""
    clauses = [c for c in _CLAUSES.split(text) if c]
    found: list[_Found] = []
    for clause in clauses:
        found += _clause(clause, source)
    return _with_relations(text, source, found)


def _clause(text: str, source: str) -> list[_Found]:
    """The first cue that matches one clause; "…, not X" marks a correction."""
    correction = False
    tail = _NOT_TAIL.search(text)
    if tail and tail.start() > 0 and _leading_name(tail["old"]):
        text, correction = text[: tail.start()], True
    text = _NOW_TAIL.sub("", text)
    cues = (_person_name, _contact, _relation, _ended, _anchored, _preference)
    found = next(([f] for f in (cue(text, source) for cue in cues) if f), [])
    for item in found:
        if correction and item.fact.key is None:
            item.fact.fact_type = FactType.CORRECTION
    return found


def _with_relations(text: str, source: str, found: list[_Found]) -> list[_Found]:
    for match in _MY_REL_NAME.finditer(text):
        name = _leading_name(match["rest"])
        if name and not _NEGATION.search(text[: match.start()]):
            item = _relation_fact(name, match["rel"], "", source, 0.75)
            if item and all(_norm(f.fact.content) != _norm(item.fact.content) for f in found):
                found.append(item)
    return found


def _found(
    content: str, source: str, confidence: float, entities: list[ExtractedEntity], **fields: object
) -> _Found | None:
    if fields.get("type") != "procedural" and _dangling(content):
        return None
    data = {"content": content, "confidence": confidence, "source_ids": [source], **fields}
    try:
        fact = ExtractedFact.model_validate({**data, "entities": [e.name for e in entities]})
    except PydanticValidationError:  # e.g. longer than 500 characters
        return None
    return _Found(fact, entities)


def _about_user(
    content: str, source: str, confidence: float, entities: list[ExtractedEntity], key: str | None
) -> _Found | None:
    """A fact about the user themself (name, contact, work, home) under ``key``."""
    return _found(
        content,
        source,
        confidence,
        entities,
        category="context",
        key=key,
        subject="user",
        fact_type=FactType.SELF_KNOWLEDGE,
    )


def _dangling(content: str) -> bool:
    """Whether a fact's ``content`` leans on something it does not say (see
    ``_BARE_SUBJECT``): stored alone, "They loved it" says nothing."""
    text = content.replace("’", "'").strip().rstrip(".!")
    return bool(_BARE_SUBJECT.match(text) or _BARE_OBJECT.match(text))


def _procedure(order: Instruction, text: str, source: str, confidence: float) -> list[_Found]:
    """The standing instruction ``order`` (said in ``text``) as a procedure, plus any
    "my <relation> <Name>" in it ("always cc my boss Alec": Alec is the user's boss);
    nothing for one that holds only for now ("… for now", "… today") or is hedged
    ("… maybe", "I think …")."""
    if _HEDGE.search(order.action) or _TRANSIENT.search(order.action):
        return []
    # in the third person, but not what it quotes ("when I say 'brief me', …")
    quoted = [m.span() for m in QUOTED.finditer(order.text)]
    bounds = [0, *(b for span in quoted for b in span), len(order.text)]
    parts = [order.text[a:b] for a, b in itertools.pairwise(bounds)]
    rest = "".join(p if n % 2 else _third_person(p, strip=False) for n, p in enumerate(parts))
    first = rest.split(" ", 1)[0]
    if first[1:] == first[1:].lower():  # "Always …" → "always …"; "CC Maria …" stays
        rest = rest[:1].lower() + rest[1:]
    item = _found(
        f"User instruction: {rest}",
        source,
        confidence,
        _mentions(order.text),
        type="procedural",
        category="preference",
        fact_type=FactType.USER_PREFERENCE,
        key=language_key(rest),  # one language to answer in: "… in Spanish" replaces "… in French"
    )
    return _with_relations(text, source, [item] if item else [])


def _person_name(text: str, source: str) -> _Found | None:
    for pattern, template, key in _NAME_CUES:
        match = pattern.match(text)
        name = _leading_name(match["rest"]) if match else None
        if name:
            entity = ExtractedEntity(name=name, type=EntityType.PERSON)
            return _about_user(template.format(name), source, 0.9, [entity], key=key)
    return None


def _contact(text: str, source: str) -> _Found | None:
    """The user's phone number or email address (``consolidation.contacts``)."""
    found = contact(text)
    return found and _about_user(found.content, source, 0.9, [], key=found.key)


def _relation(text: str, source: str) -> _Found | None:
    match = _REL_IS_MY.match(text)
    if match and _leading_name(match["name"]) == match["name"]:
        return _relation_fact(match["name"], match["rel"], match["tail"], source, 0.85)
    match = _MY_REL_IS.match(text)
    name = _leading_name(match["rest"]) if match else None
    if match and name and match["rest"].startswith(name):
        return _relation_fact(name, match["rel"], match["rest"][len(name) :], source, 0.85)
    return None


def _relation_fact(name: str, rel: str, tail: str, source: str, conf: float) -> _Found | None:
    rel = rel.lower()
    kind, category, single = _RELATIONS[rel]
    tail = tail.split(",")[0].strip()
    tail = _third_person(tail) if _TAIL_OK.match(tail) else ""  # "… at TechCorp", not chatter
    entities = [ExtractedEntity(name=name, type=kind), *_mentions(tail)]
    return _found(
        f"{name} is the user's {rel}{' ' + tail if tail else ''}",
        source,
        conf,
        entities,
        category=category,
        subject=name,
        key=rel.replace(" ", "_") if single else None,
        fact_type=FactType.RELATIONSHIP,
    )


def _anchored(text: str, source: str) -> _Found | None:
    """Work and home: "I work at Acme", "I'm a nurse at …", "I live in Berlin", …"""
    for pattern, head, key, kind in _ANCHORED:
        match = pattern.match(text)
        rest = text[match.end() :] if match else ""
        name = _leading_name(rest) if kind else None
        if not match or (kind and not name) or _NEGATION.search(text):
            continue
        groups = {k: v.lower() for k, v in match.groupdict().items() if v}
        entities = [ExtractedEntity(name=name, type=kind)] if name and kind else []
        return _about_user(
            f"{head.format(**groups)} {_third_person(rest)}",
            source,
            0.85 if kind else 0.8,
            [*entities, *_mentions(rest)],
            key=key,
        )
    return None


def _ended(text: str, source: str) -> _Found | None:
    """A fact that has ended: "I no longer live in Lisbon", "I don't work at Acme any
    more", "I moved away from Porto", "I quit Globex". A bare "I don't work at Acme" (no
    sign that it was ever so) stays unstored."""
    for pattern, head, key, kind in _ENDED:
        match = pattern.match(text)
        if not match or (match["neg"].lower() in ("don't", "do not") and not match["more"]):
            continue
        name = _leading_name(match["rest"])
        if not name:
            continue
        groups = {k: v.lower() for k, v in match.groupdict().items() if v and k == "prep"}
        return _about_user(
            f"{head.format(**groups)} {name}",
            source,
            0.85,
            [ExtractedEntity(name=name, type=kind)],
            key=key,
        )
    return None


def _preference(text: str, source: str) -> _Found | None:
    text = re.sub(r"^i'd (rather|prefer)\b", r"i would \1", text, flags=_I)
    match = _PREFERENCE.match(text)
    if match and not _DEICTIC.match(match["obj"]) and len(match["obj"]) >= 2:
        verb = " ".join(match["verb"].lower().split())
        verb = _VERB3.get(verb, verb + "s")
        obj = match["obj"]
        if _ANY_MORE.search(obj):  # "I don't like Python anymore": no longer so
            obj = _ANY_MORE.sub("", obj)
            verb = _ENDED_OPINION.get(verb, verb)
        key = opinion_key(obj, choice=verb.startswith(("pref", "would")))
        return _found(
            f"User {verb} {_third_person(obj)}",
            source,
            0.8,
            _mentions(obj),
            type="opinion",
            category="preference",
            fact_type=FactType.USER_PREFERENCE,
            subject="user",
            key=key,
        )
    match = _FAVOURITE.match(text)
    if match and not _NEGATION.search(text):
        what = match["what"].lower()
        return _found(
            f"User's favourite {what} is {_third_person(match['obj'])}",
            source,
            0.8,
            _mentions(match["obj"]),
            type="opinion",
            category="preference",
            key=f"favourite_{re.sub(r'[^a-z0-9]+', '_', what)}",
            fact_type=FactType.USER_PREFERENCE,
        )
    return None


def _left_out(rest: str, found: list[_Found]) -> bool:
    """Whether a word of an explicit ask (four letters or more) is in none of the facts
    found in it: the cues took part of what the user asked to keep."""
    kept = " ".join(f.fact.content.casefold() for f in found)
    words = re.findall(r"[^\W\d_]{4,}", rest.casefold())
    return any(w not in kept for w in words if w not in _ASK_WORDS)


_ASK_WORDS = {"that", "this", "these", "those", "remember", "please", "also", "about"}
_ASK_WORDS |= {"called", "named"}  # "my dog is called Rex": "Rex is the user's dog" says it


def _generic(rest: str, source: str) -> list[_Found]:
    """An explicitly requested memory no specific cue covers, as the user put it (an
    instruction in it was read before: ``_analyse``)."""
    text = _third_person(rest, subject=True)
    found = _found(text[:1].upper() + text[1:], source, 0.95, _mentions(rest))
    return [found] if found else []


def _leading_name(text: str) -> str | None:
    """The capitalised name ``text`` starts with (up to four words), if any."""
    words: list[str] = []
    for raw in text.split()[:6]:
        token = raw.rstrip(",;:!?)\"'")
        bare = re.sub(r"(?:'s|’s)$", "", token)
        is_name = bare[:1].isupper() and bare.casefold() not in _NOT_NAMES and len(bare) > 1
        joins = bool(words) and token.lower() in ("of", "de", "van", "von", "&") and len(words) < 3
        if not (is_name or joins):
            break
        words.append(token)
        if token != raw or len(words) >= 4:
            break
    while words and not words[-1][:1].isupper():
        words.pop()
    if words:
        words[-1] = re.sub(r"(?:'s|’s)$", "", words[-1])
    return " ".join(words) or None


def _mentions(text: str) -> list[ExtractedEntity]:
    """Capitalised names in ``text``, typed by the word before them."""
    out: list[ExtractedEntity] = []
    words = text.split()
    i = 0
    while i < len(words):
        name = _leading_name(" ".join(words[i : i + 6])) if words[i][:1].isupper() else None
        if not name:
            i += 1
            continue
        cue = words[i - 1].lower().strip(",") if i else ""
        kind = EntityType.PERSON if cue in _PERSON_CUES else EntityType.CONCEPT
        kind = EntityType.ORGANIZATION if cue == "at" else kind
        out.append(ExtractedEntity(name=name, type=kind))
        i += len(name.split())
    return out


def _third_person(clause: str, *, subject: bool = False, strip: bool = True) -> str:
    """``clause`` in the third person: my → their, me → the user; with ``subject`` a
    leading "I …"/"My …" becomes "User …"/"User's …" ("I prefer" → "User prefers");
    ``strip``: without spaces and a final "." or "!" around it (not for a piece of a
    sentence)."""
    clause = clause.strip().rstrip(".!") if strip else clause
    lead = ""
    if subject:
        for pattern, replacement in _LEAD_I:
            match = re.match(pattern, clause, _I)
            if match:
                lead, clause = replacement, clause[match.end() :]
                break
        else:
            words = clause.split(" ")
            if len(words) > 1 and words[0].lower() == "i":
                j = 1
                while j < len(words) - 1 and (
                    words[j].lower() in _ADVERB or words[j].endswith("ly")
                ):
                    j += 1
                verb = words[j]
                if verb.lower() not in _KEEP_VERB and not verb.lower().endswith("ed"):
                    verb = _s(verb)
                lead = " ".join(["User", *words[1:j], verb])
                clause = "".join(f" {w}" for w in words[j + 1 :])
    for pattern, replacement in _PRONOUNS:
        clause = re.sub(pattern, replacement, clause, flags=_I)
    return f"{lead}{clause}"


def _s(verb: str) -> str:
    """Third-person singular of a present-tense verb."""
    if verb.lower() == "have":
        return "has"
    if verb.lower().endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(verb) > 1 and verb[-1] == "y" and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


__all__ = ["RuleExtractor"]
