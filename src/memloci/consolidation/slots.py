"""The slots of facts the rule extractor keys (layer: consolidation): one value per slot,
so a later statement of the same slot supersedes the earlier one.

* an opinion of one thing ("I love Python", later "I hate Python"): ``opinion_python``;
  a choice between two, in a fixed order ("tea over coffee" and "coffee over tea" are
  one slot): ``opinion_coffee_vs_tea``;
* the language to answer in ("always answer in French", later "… in Spanish"):
  ``reply_language``.
"""

from __future__ import annotations

import re

_CHOICE = re.compile(r"\s+(?:over|to|rather than|instead of|than)\s+", re.IGNORECASE)
_ARTICLE = re.compile(r"^(?:the|a|an|some|all|any)\s+", re.IGNORECASE)
_LANGUAGE_WORDS = (
    "english french spanish portuguese german italian dutch swedish norwegian danish "
    "finnish polish czech greek turkish russian ukrainian arabic hebrew hindi bengali urdu "
    "chinese mandarin cantonese japanese korean vietnamese thai indonesian malay tagalog "
    "swahili romanian hungarian catalan basque galician irish welsh persian farsi"
)
_LANGUAGES = set(_LANGUAGE_WORDS.split(" "))
_IN_LANGUAGE = re.compile(
    r"\b(?:answer|reply|respond|write|speak|talk|chat|communicate)\b[^.!?]*?\bin\s+"
    r"(?P<language>[a-z]+)\b",
    re.IGNORECASE,
)


def language_key(instruction: str) -> str | None:
    """``reply_language`` for an instruction naming a language to answer in ("always
    answer in French"); None otherwise ("answer in bullet points")."""
    said = _IN_LANGUAGE.search(instruction)
    return "reply_language" if said and said["language"].lower() in _LANGUAGES else None


def opinion_key(obj: str, *, choice: bool = False) -> str | None:
    """The slot of the user's opinion of ``obj``: "Python" → ``opinion_python``; one
    opinion per object, so a later "I hate Python" supersedes "I love Python". A choice
    ("I prefer tea over coffee") is keyed by both options in a fixed order, so "I prefer
    coffee over tea" supersedes it."""
    options = _CHOICE.split(obj, maxsplit=1) if choice else [obj]
    slugs = []
    for option in options:
        words = re.sub(r"[^a-z0-9]+", " ", _ARTICLE.sub("", option.casefold())).split()[:6]
        slugs.append("_".join(words))
    slugs = sorted(s for s in slugs if s) if len(slugs) > 1 else slugs
    return "opinion_" + "_vs_".join(slugs) if slugs and slugs[0] else None
