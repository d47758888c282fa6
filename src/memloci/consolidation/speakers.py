"""Who is speaking (layer: consolidation): a named speaker's statements are about them,
and a speaker whose label is not a name is known by what the others call them.

The rule extractor writes what a user says as "User …" ("I love camping" → "User loves
camping"). In a chat between two people — turns with no role, each with a ``speaker``
name — both are users, and "I love camping" said by Melanie must not become the other
one's fact, nor supersede it. :func:`named_speaker` finds that name;
:func:`said_by` rewrites a fact about them: the text names them, the subject is them and
a key is theirs (``melanie.opinion_camping``).

A chat's speakers are often labelled by role or handle ("user", "assistant",
"Speaker 1") while the people in it call each other by name ("Thanks, Mel!"), and
questions ask about Melanie, not about the assistant. :class:`SpeakerNames` infers
those names for the background worker, which links a speaker's turns to them as it
links a named speaker's (see :func:`speaker_names`).
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence

from memloci.consolidation.base import ExtractedFact
from memloci.models import MemoryNode, NodeType, normalize_key
from memloci.retrieval.mentions import addressed, speaker_name
from memloci.storage.base import NodeFilter, Store
from memloci.storage.names import given_name

USER_LABELS = frozenset({"user", "human", "me"})  # speaker labels meaning "the user"
_USER_LEAD = re.compile(r"^User\b")  # the subject the patterns write ("User prefers …")
_THE_USER = re.compile(r"\bthe user\b", re.IGNORECASE)  # the object ("the user's boss")
_INSTRUCTION = re.compile(r"^User instruction:")


def named_speaker(node: MemoryNode) -> str | None:
    """The person a user turn is from, when a name says so: a turn with no role whose
    speaker is a name ("Melanie"), not a role word ("user"); as a name, when the label
    writes one otherwise ("Elise" for "elise", "Emi" for "Emi 🌸")."""
    speaker = (node.speaker or "").strip()
    if node.source_role or not speaker or speaker.lower() in USER_LABELS:
        return None
    return speaker_name(speaker) or speaker


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


MIN_CALLED = 3  # times a speaker must be called by a name before it is theirs
MIN_SHARE = 0.6  # ... and that share of all the names they are called by
WINDOW = 500  # a user's newest turns read to infer their chat's speakers' names
REMEMBERED = 60.0  # seconds an inferred name is reused before it is inferred afresh


def speaker_names(turns: Iterable[tuple[str, Hashable, str]]) -> dict[str, str]:
    """Speaker label → the name the others call them by, from ``turns``: ``(speaker
    label, conversation, text)`` in the order they were said, where the conversation is
    the session (or the day) the turn belongs to. In a conversation between two
    speakers, a name one of them addresses ("Hey Melanie!", "Yep, Caroline.") is the
    other's; in a group, it is the name of whoever spoke last before, someone other than
    the speaker (the message answered). A speaker gets a name called at least
    :data:`MIN_CALLED` times that is at least :data:`MIN_SHARE` of all they are called
    by (in a group, a call meant for someone else than the last speaker is counted for
    the last speaker all the same, so a name called at random wins no share). A short
    name that begins a longer one they are also called by counts for the longer ("Mel"
    for "Melanie"). Two speakers called by the same name get none."""
    rows = list(turns)
    present: dict[Hashable, set[str]] = {}
    for label, conversation, _ in rows:
        present.setdefault(conversation, set()).add(label)
    called: dict[str, Counter[str]] = {}
    last: dict[Hashable, list[str]] = {}  # each conversation's speakers, latest last
    for label, conversation, text in rows:
        labels = present[conversation]
        spoke = last.setdefault(conversation, [])
        if len(labels) == 2:
            (other,) = labels - {label}
        else:  # a group: the one answered, who spoke last before, not this speaker
            other = next((s for s in reversed(spoke) if s != label), "")
        spoke.append(label)
        if not other:
            continue
        for name in addressed(text):
            called.setdefault(other, Counter())[name] += 1
    found: dict[str, str] = {}
    for label, names in called.items():
        merged: Counter[str] = Counter()
        for name, n in names.items():
            longer = [o for o in names if o != name and o.startswith(name)]
            merged[max(longer, key=lambda o: (names[o], o)) if longer else name] += n
        (name, n), *_ = sorted(merged.items(), key=lambda c: (-c[1], c[0]))
        if n >= MIN_CALLED and n >= MIN_SHARE * sum(merged.values()):
            found[label] = name
    taken = Counter(found.values())
    return {label: name for label, name in found.items() if taken[name] == 1}


class SpeakerNames:
    """The names of speakers whose labels are not names, per namespace and user (see
    :func:`speaker_names`), for :func:`memloci.service.worker.link_mentions`. Remembered for
    :data:`REMEMBERED` seconds; a user whose speakers have no name yet is looked at
    again only when new turns address someone."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[tuple[str, str | None], tuple[float, dict[str, str]]] = {}

    def of(self, store: Store, turns: Sequence[MemoryNode]) -> dict[str, str]:
        """Turn id → the name its speaker is called by, for ``turns`` (new conversation
        turns) and for the older turns of a speaker named just now (so every turn of
        theirs gets linked once, not only the new ones). A name the label already says
        ("Melanie", or "Mel" for the label "Melanie") is left out: that speaker is linked
        by their label."""
        spoken = [t for t in turns if t.type is NodeType.EPISODIC and t.speaker]
        out: dict[str, str] = {}
        for who in dict.fromkeys((t.namespace, t.user) for t in spoken):
            mine = [t for t in spoken if (t.namespace, t.user) == who]
            labels = {t.speaker for t in mine}
            now = time.monotonic()
            with self._lock:
                at, names = self._known.get(who, (0.0, {}))
            fresh = now - at < REMEMBERED
            calls = {n for t in mine for n in addressed(t.content)}
            # a call of a name no label has yet may name a speaker of an earlier batch
            # (in a group, the one answered need not speak in this batch)
            unknown = {c for c in calls if not any(v.startswith(c) for v in names.values())}
            if not fresh or (calls and not labels <= names.keys()) or unknown:
                window = _recent_turns(store, *who)
                inferred = speaker_names(
                    (t.speaker or "", t.session or t.event_time.date(), t.content)
                    for t in reversed(window)  # oldest first: who answers whom
                    if t.speaker
                )
                for label, name in inferred.items():
                    if names.get(label) == name or says(label, name):
                        continue
                    # named just now (or since this process started): their older turns
                    # too, unless the oldest of them here is linked already
                    oldest = next(t for t in reversed(window) if t.speaker == label)
                    if not _linked(store, oldest, name):
                        out |= {t.id: name for t in _turns_of(store, *who, label)}
                names = inferred
                with self._lock:
                    self._known[who] = (now, names)
            out |= {
                t.id: names[t.speaker]
                for t in mine
                if t.speaker in names and not says(t.speaker, names[t.speaker])
            }
        return out


def says(label: str, name: str) -> bool:
    """Whether a speaker label already says ``name``, so that a search for the name finds
    the label: the same name, the name and more of it (a nickname: "Mel" for "Melanie"),
    or a full name whose given name it is ("Melanie Hart", "Melanie H."). A handle that
    only begins with the name ("melanie18", "mel_k") does not say it."""
    folded, called = label.casefold(), name.casefold()
    rest = folded[len(called) :] if folded.startswith(called) else None
    return rest is not None and (not rest or rest[0].isalpha() or given_name(label) == called)


def _recent_turns(store: Store, namespace: str, user: str | None) -> list[MemoryNode]:
    flt = NodeFilter(namespaces=(namespace,), owner_user=user, types=(NodeType.EPISODIC,))
    found = store.memories.list_nodes(flt, limit=WINDOW, order="-created")
    return [t for t in found if t.user == user]


def _linked(store: Store, turn: MemoryNode, name: str) -> bool:
    entity = store.entities.find_entity(turn.namespace, name)
    if entity is None:
        return False
    linked = store.entities.node_entities(turn.namespace, [turn.id]).get(turn.id, [])
    return any(e.id == entity.id for e in linked)


def _turns_of(store: Store, namespace: str, user: str | None, label: str) -> list[MemoryNode]:
    """Every current turn of ``user`` said by ``label`` (read a page at a time)."""
    flt = NodeFilter(namespaces=(namespace,), owner_user=user, types=(NodeType.EPISODIC,))
    out: list[MemoryNode] = []
    offset = 0
    while True:
        page = store.memories.list_nodes(flt, limit=1000, offset=offset, order="created")
        out += [t for t in page if t.user == user and t.speaker == label]
        if len(page) < 1000:
            return out
        offset += len(page)


__all__ = [
    "USER_LABELS",
    "SpeakerNames",
    "named_speaker",
    "said_by",
    "speaker_names",
]
