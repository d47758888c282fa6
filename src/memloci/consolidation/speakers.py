"""Whose fact it is (layer: consolidation): a named speaker's statements are about them.

The rule extractor writes what a user says as "User …" ("I love camping" → "User loves
camping"). In a chat between two people — turns with no role, each with a ``speaker``
name — both are users, and "I love camping" said by Melanie must not become the other
one's fact, nor supersede it. :func:`named_speaker` finds that name;
:func:`said_by` rewrites a fact about them: the text names them, the subject is them and
a key is theirs (``melanie.opinion_camping``).
"""

from __future__ import annotations

import re

from memloci.consolidation.base import ExtractedFact
from memloci.models import MemoryNode, normalize_key

USER_LABELS = frozenset({"user", "human", "me"})  # speaker labels meaning "the user"
_USER_LEAD = re.compile(r"^User\b")  # the subject the patterns write ("User prefers …")
_THE_USER = re.compile(r"\bthe user\b", re.IGNORECASE)  # the object ("the user's boss")
_INSTRUCTION = re.compile(r"^User instruction:")


def named_speaker(node: MemoryNode) -> str | None:
    """The person a user turn is from, when a name says so: a turn with no role whose
    speaker is a name ("Melanie"), not a role word ("user")."""
    speaker = (node.speaker or "").strip()
    if node.source_role or not speaker or speaker.lower() in USER_LABELS:
        return None
    return speaker


def said_by(fact: ExtractedFact, who: str | None, sentence: str) -> ExtractedFact:
    """``fact`` about ``who`` instead of "User" (unchanged when ``who`` is None). "the
    user" written for "me" names them too, unless the speaker's ``sentence`` itself says
    "the user"."""
    if who is None:
        return fact
    text = _USER_LEAD.sub(who, _INSTRUCTION.sub(f"{who}'s instruction:", fact.content))
    if not _THE_USER.search(sentence):
        text = _THE_USER.sub(who, text)
    key = f"{normalize_key(who)}.{fact.key}" if fact.key else None
    subject = who if fact.subject in (None, "user") else fact.subject
    return fact.model_copy(update={"content": text, "key": key, "subject": subject})


__all__ = ["USER_LABELS", "named_speaker", "said_by"]
