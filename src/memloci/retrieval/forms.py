"""Forms of a word that stemming does not join (layer: retrieval).

The full-text index stems words (Porter on SQLite, Snowball on PostgreSQL): "wins",
"winning" and "win" are one token. An irregular verb's past is not: "What did John's
team win?" is answered by "We even won a trophy!", "What did Mel buy?" by "I bought
…", "Where did Jon go?" by "I went to …". A question asks with "did" and the base form,
a chat tells in the past, so the words that would match never do. :func:`forms` gives a
word's other forms, and the full-text search looks for any of them.

The list holds common irregular verbs (base, past, past participle), irregular plurals
and words spelt two ways ("favorite" / "favourite", "traveled" / "travelled",
"organize" / "organise": a question typed in one spelling finds a chat typed in the
other); forms that are more often another word ("a bit", "a rose", "the ground", "LED
lights") join nothing; "do" / "did" / "done" are left to the stopwords.
"""

from __future__ import annotations

# fmt: off
_GROUPS = (
    "arise arose arisen", "awake awoke awoken", "become became", "begin began begun",
    "bend bent", "bite bit bitten", "bleed bled", "blow blew blown", "break broke broken",
    "breed bred", "bring brought", "build built", "burn burnt", "buy bought",
    "catch caught", "choose chose chosen", "cling clung", "come came", "creep crept",
    "deal dealt", "dig dug", "draw drew drawn", "dream dreamt",
    "drink drank drunk", "drive drove driven", "eat ate eaten", "fall fell fallen",
    "feed fed", "feel felt", "fight fought", "find found", "flee fled", "fly flew flown",
    "forbid forbade forbidden", "forget forgot forgotten", "forgive forgave forgiven",
    "freeze froze frozen", "get got gotten", "give gave given", "go went gone",
    "grind ground", "grow grew grown", "hang hung", "hear heard", "hide hid hidden",
    "hold held", "keep kept", "kneel knelt", "know knew known", "lead led", "leave left",
    "lend lent", "lose lost", "make made", "mean meant", "meet met", "pay paid",
    "prove proven", "ride rode ridden", "ring rang rung", "rise rose risen", "run ran",
    "say said", "see saw seen", "seek sought", "sell sold", "send sent", "shake shook shaken",
    "shine shone", "shoot shot", "show shown", "shrink shrank shrunk", "sing sang sung",
    "sink sank sunk", "sit sat", "sleep slept", "slide slid", "speak spoke spoken",
    "spend spent", "spin spun", "stand stood", "steal stole stolen", "stick stuck",
    "sting stung", "strike struck", "swear swore sworn", "sweep swept", "swim swam swum",
    "swing swung", "take took taken", "teach taught", "tear tore torn", "tell told",
    "think thought", "throw threw thrown", "understand understood", "wake woke woken",
    "wear wore worn", "weep wept", "win won", "write wrote written",
    "child children", "man men", "woman women", "person people", "foot feet",
    "tooth teeth", "mouse mice", "goose geese",
    # American and British spellings
    "favorite favourite", "favorites favourites", "color colour", "colors colours",
    "colorful colourful", "neighbor neighbour", "neighbors neighbours",
    "neighborhood neighbourhood", "flavor flavour", "flavors flavours", "humor humour",
    "honor honour", "behavior behaviour", "center centre", "theater theatre",
    "traveling travelling", "traveled travelled", "traveler traveller",
    "travelers travellers", "organize organise", "organized organised",
    "organizing organising", "organization organisation", "realize realise",
    "realized realised", "apologize apologise", "recognize recognise",
    "recognized recognised", "gray grey", "mom mum", "moms mums", "jewelry jewellery",
    "pajamas pyjamas", "cozy cosy", "canceled cancelled", "practicing practising",
    "defense defence", "catalog catalogue", "program programme", "donut doughnut",
    "donuts doughnuts", "math maths", "mold mould", "savor savour", "harbor harbour",
    "labor labour", "rumor rumour", "fiber fibre", "liter litre", "aluminum aluminium",
    "skeptical sceptical", "plow plough", "aging ageing", "judgment judgement",
)
# fmt: on
# a form shared by two groups, or more often another word, joins nothing
_AMBIGUOUS = frozenset({"ground", "rose", "bit", "lead", "led", "sat"})
_FORMS: dict[str, tuple[str, ...]] = {}
for _group in _GROUPS:
    _words = tuple(_group.split())
    for _word in _words:
        if _word not in _AMBIGUOUS:
            _FORMS[_word] = tuple(w for w in _words if w != _word)


def forms(word: str) -> tuple[str, ...]:
    """The other forms of ``word`` (lower case) that stemming does not join to it:
    ``forms("win")`` → ``("won",)``, ``forms("bought")`` → ``("buy",)``,
    ``forms("children")`` → ``("child",)``; ``()`` for any other word."""
    return _FORMS.get(word, ())


__all__ = ["forms"]
