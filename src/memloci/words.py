"""Words (layer: base, imports nothing of memloci): the content words of a text
(:func:`terms`, stopwords removed) and the messages that say nothing of their own
(:func:`says_nothing`). Retrieval ranks with them; storage uses them to leave such a
message out of the neighbour windows of a full-text row (:mod:`memloci.storage.windows`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

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
    return list(dict.fromkeys(_content_words(text)))


def _content_words(text: str) -> Iterator[str]:
    """:func:`terms` one at a time, repeats included (so a caller may stop early)."""
    for found in _WORD.finditer(text):
        word = found.group().lower().replace("’", "'")
        word = word[:-2] if word.endswith("'s") else word.rstrip("'")
        if (len(word) >= 2 or word.isdigit()) and word not in STOPWORDS:
            yield word


# what people send that says nothing of its own: a backchannel, a greeting, thanks
# fmt: off
BACKCHANNEL = frozenset([
    "lol", "lmao", "lmfao", "rofl", "haha", "hahaha", "hehe", "omg", "omfg", "ok", "okay",
    "kk", "yeah", "yea", "ya", "yah", "yep", "yup", "yes", "no", "nope", "nah", "hmm",
    "mhm", "aww", "aw", "oh", "ah", "uh", "um", "umm", "wow", "woah", "whoa", "ikr",
    "thanks", "thank", "thx", "ty", "np", "yay", "ugh", "hi", "hey", "hello", "bye", "gn",
    "gm", "xd", "xoxo", "indeed", "exactly", "totally", "definitely", "absolutely",
    "agreed", "same", "too", "sure", "right", "true", "welcome", "course", "brb", "ttyl",
    "gtg", "g2g", "cya",
])
# fmt: on
# the same stretched out: "hahahah", "loool", "okkk", "yesss", "awww", "hmmm", "ohhh"
_STRETCHED = re.compile(
    r"(?:(?:ha)+h?|(?:he)+h?|l+o+l+|o+k+|y+e+s+|a+w+|h+m+|o+h+|a+h+|u+g+h+|w+o+w+|y+a+y+)"
)


# what a chat export puts where a message was: "<Media omitted>", "image omitted",
# "<attached: 00000012-PHOTO.jpg>", "This message was deleted", "Missed voice call"
_PLACEHOLDER = re.compile(
    r"<?(?:media|image|photo|video|audio|voice message|sticker|gif|document|contact card)s?"
    r" omitted>?|<attached: [^<>\n]*>|\[(?:photo|image|video|audio|voice message|sticker|gif)\]"
    r"|(?:this message was|you) deleted(?: this message)?|message deleted"
    r"|missed (?:voice|video|group voice|group video) call",
    re.IGNORECASE,
)


def says_nothing(text: str) -> bool:
    """Whether a memory says nothing of its own: every word is a backchannel, a greeting
    or thanks ("lol", "Thanks!", "Yeah, me too!", "hahaha", an emoji), or it is what a
    chat export puts where a message was ("<Media omitted>", "This message was
    deleted"). A chat is full of them; their full-text rows hold the turns around them,
    so a query matching those turns would find them too and they would push what was
    said out of the results."""
    if _PLACEHOLDER.fullmatch(text.strip()):
        return True
    return all(w in BACKCHANNEL or _STRETCHED.fullmatch(w) for w in _content_words(text))


# praise that reacts to what was said: "Cool!", "That's awesome!", "Sounds great!"
# fmt: off
PRAISE = frozenset([
    "great", "nice", "cool", "awesome", "amazing", "wonderful", "fantastic", "lovely",
    "sweet", "neat", "incredible", "impressive", "brilliant", "excellent", "perfect",
    "congrats", "congratulations", "glad", "sounds", "looks", "really", "so", "very",
    "job", "well", "done", "work", "keep", "up", "hear", "fun",
])
# what closes a chat: "See you!", "Have a great weekend!", "Talk soon", "Good night"
CLOSING = frozenset([
    "see", "talk", "soon", "later", "tomorrow", "take", "care", "have", "day", "night",
    "weekend", "evening", "morning", "chatting", "chat", "catching", "catch", "good",
    "goodbye", "next", "time", "rest", "speak", "touch",
])
# fmt: on
_REPORT = re.compile(r"\s*(?:it|it's|it’s|it\s+has)\b", re.IGNORECASE)


def only_reacts(text: str) -> bool:
    """Whether a memory only reacts to what was said: it says nothing of its own
    (:func:`says_nothing`), only praises ("Cool!", "Wow, that's awesome!", "Sounds
    great!", "Keep it up!", "Congrats!") or only closes the chat ("See you!", "Have a
    great weekend!", "Talk soon"). Not a report of how something went ("It was great!"
    answers "How was the trip?")."""
    if says_nothing(text):
        return True
    if _REPORT.match(text):
        return False
    words = list(_content_words(text))
    return bool(words) and all(
        w in BACKCHANNEL or w in PRAISE or w in CLOSING or _STRETCHED.fullmatch(w) for w in words
    )


_ASKS_REACTION = re.compile(
    r"\b(?:think|thinks|thought|feel|feels|felt|react|reacts|reacted|reaction|respond"
    r"|responds|responded|response|reply|replies|replied|say|says|said|opinion)\b",
    re.IGNORECASE,
)


def asks_reaction(query: str) -> bool:
    """Whether ``query`` asks how someone took something ("What did Ben think of the
    news?", "How did Mel react?", "What did Jon say about it?"): then praise answers it
    (:func:`only_reacts` is no reason to rank a memory lower)."""
    return _ASKS_REACTION.search(query) is not None


def uncased(text: str) -> bool:
    """Whether ``text`` was typed all in lower case ("what did caroline paint?"): then its
    case says nothing, and a word in lower case may still be a name."""
    return not any(c.isupper() for c in text)
