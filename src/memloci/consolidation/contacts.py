"""Contact details a user states (layer: consolidation), for the rules extractor.

"My phone number is 555-0100", "I got a new number: 555-0199", "you can reach me at
ana@example.com", "my work email changed to ana@acme.com": each is a single-valued fact
under a key (``phone_number``, ``email``, ``work_phone_number``, ``work_email``), so a new
number replaces the old one instead of standing beside it. The number or address is kept
exactly as typed. A sentence that only mentions a number or an address without saying it is the
user's ("call 555-0100 for pizza") gives nothing.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_I = re.IGNORECASE
_PHONE = r"(?P<value>\+?\(?\d[\d ().-]{4,}\d)(?![\w@])"
_EMAIL = r"(?P<value>[\w.+-]+@[\w-]+(?:\.[\w-]+)+)"
_OWN = r"(?P<work>work\s+|office\s+|business\s+)?"
_NEW = r"(?:(?:new|current|personal|private|mobile|cell|home)\s+)*"
_IS = r"\s+(?:is(?:\s+now)?|has changed to|changed to|is changing to|will be)\s*:?\s+"
_PHONE_WORD = r"(?:phone|mobile|cell|cellphone|telephone)(?:\s+(?:number|no\.?|#))?"
_EMAIL_WORD = r"(?:e-?mail|e-?mail address)"
_NEW_ONE = r"^i(?:'ve| have)?\s+(?:got|have|got myself)\s+a\s+new\s+"
_SAY = r"[:,]?\s+(?:(?:it'?s|it is|which is)\s+)?"
_REACH = r"^(?:you can\s+|please\s+)?(?:reach|contact|call|text|email|e-mail)\s+me\s+(?:at|on)\s+"

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"^my\s+{_NEW}{_OWN}{_NEW}{_PHONE_WORD}{_IS}{_PHONE}$", _I), "phone"),
    (re.compile(rf"^my\s+{_NEW}{_OWN}{_NEW}number{_IS}{_PHONE}$", _I), "phone"),
    (re.compile(rf"{_NEW_ONE}{_OWN}(?:{_PHONE_WORD}|number){_SAY}{_PHONE}$", _I), "phone"),
    (re.compile(rf"{_REACH}{_PHONE}$", _I), "phone"),
    (re.compile(rf"^my\s+{_NEW}{_OWN}{_NEW}{_EMAIL_WORD}{_IS}{_EMAIL}$", _I), "email"),
    (re.compile(rf"{_NEW_ONE}{_OWN}{_EMAIL_WORD}{_SAY}{_EMAIL}$", _I), "email"),
    (re.compile(rf"{_REACH}{_EMAIL}$", _I), "email"),
]
_NAMES = {"phone": ("phone number", "phone_number"), "email": ("email address", "email")}


class Contact(NamedTuple):
    """A stated contact detail: the fact's sentence (the value as typed) and its key."""

    content: str
    key: str


def contact(text: str) -> Contact | None:
    """The user's phone number or email address stated in ``text`` (one clause, filler
    and final punctuation already stripped), or None."""
    for pattern, kind in _PATTERNS:
        match = pattern.match(text.strip())
        if match is None:
            continue
        value = match["value"].strip()
        if kind == "phone" and sum(ch.isdigit() for ch in value) < 6:
            continue  # "my number is 42": not a phone number
        noun, key = _NAMES[kind]
        if match.groupdict().get("work"):
            noun, key = f"work {noun}", f"work_{key}"
        return Contact(f"User's {noun} is {value}", key)
    return None
