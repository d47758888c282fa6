"""Shared helpers for the benchmarks (not part of the package)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo_dev.jsonl"


def data_path(arg: str | None) -> Path:
    path = Path(arg or os.environ.get("MEMLOCI_BENCH_DATA") or DEFAULT_DATA)
    if not path.exists():
        raise SystemExit(
            f"benchmark data not found at {path}; pass --data or set MEMLOCI_BENCH_DATA"
        )
    return path


def load_conversations(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


TIME_FORMATS = (
    "%I:%M %p on %d %B, %Y",  # LoCoMo: "1:56 pm on 8 May, 2023"
    "%I:%M %p on %d %b, %Y",
    "%I:%M%p on %d %B, %Y",
    "%d %B, %Y",
    "%d %B %Y",
    "%B %d, %Y",
    "%b %d, %Y",
    "%Y/%m/%d (%a) %H:%M",  # LongMemEval: "2023/05/20 (Sat) 02:21"
    "%Y/%m/%d %H:%M",
    "%d/%m/%Y %H:%M:%S",  # day first, as written outside the US ...
    "%d/%m/%Y %H:%M",
    "%d/%m/%Y",
    "%m/%d/%Y %H:%M:%S",  # ... month first when the day cannot be (29/12 vs 12/29)
    "%m/%d/%Y %H:%M",
    "%m/%d/%Y",
    "%d.%m.%Y %H:%M:%S",  # REALTALK: "29.12.2023, 00:51:12" (read without its comma)
    "%d.%m.%Y %H:%M",
    "%d.%m.%Y",
)
_UNREADABLE: set[str] = set()


def parse_time(text: Any) -> datetime | None:
    """A turn's time as an aware datetime: LoCoMo's "1:56 pm on 8 May, 2023", ISO 8601
    ("2023-05-08T13:56:00Z", "2023-05-08 13:56", "2023-05-08"), LongMemEval's
    "2023/05/20 (Sat) 02:21", REALTALK's "29.12.2023, 00:51:12" or a few other common
    forms (a date with slashes is read day first, month first when that fails). None
    when missing or unreadable (the memory then has no event time; each unreadable form
    is reported once on stderr, so a corpus in another format still runs)."""
    if not isinstance(text, str) or not text.strip():
        return None
    clean = re.sub(r"\s+", " ", text.strip())
    try:
        when = datetime.fromisoformat(clean.replace("Z", "+00:00"))
    except ValueError:
        when = None
    for fmt in TIME_FORMATS if when is None else ():
        for form in dict.fromkeys((clean, clean.replace(",", ""))):
            with contextlib.suppress(ValueError):
                when = datetime.strptime(form, fmt)
                break
        if when is not None:
            break
    if when is None:
        if clean not in _UNREADABLE:
            _UNREADABLE.add(clean)
            print(f"note: unreadable time {text!r}, stored without one", file=sys.stderr)
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def turn_time(conv: dict[str, Any], turn: dict[str, Any]) -> datetime | None:
    """The turn's own time, else its session's."""
    when = parse_time(turn.get("date_time"))
    if when is None and turn.get("session_id"):
        for session in conv.get("sessions") or ():
            if session.get("session_id") == turn["session_id"]:
                return parse_time(session.get("date_time"))
    return when


def ingest_turn(mem: Any, conv: dict[str, Any], turn: dict[str, Any], facts: bool) -> None:
    """Store one turn of ``conv`` as the benchmarks do (user = conversation id): a fact
    through ``remember(text, subject=speaker, event_time=date)``, a turn through
    ``add`` with its session, speaker and time; ``metadata.turn`` holds its id."""
    user = conv["conv_id"]
    when = turn_time(conv, turn)
    if facts:
        text = str(turn.get("text") or "").strip()
        if text:
            mem.remember(
                text, user=user, subject=turn.get("speaker") or None, event_time=when,
                metadata={"turn": turn["id"]},
            )  # fmt: skip
        return
    session = turn.get("session_id")
    mem.add(
        turn_text(turn),
        user=user,
        session=f"{user}/{session}" if session else None,
        speaker=turn.get("speaker") or None,
        event_time=when,
        metadata={"turn": turn["id"]},
    )


def settle(mem: Any) -> None:
    """Wait until a store written by the benchmarks has caught up: every memory embedded,
    the sessions left behind consolidated in the background (``flush()`` waits for the
    embedding only, and on PostgreSQL the last sessions' facts came later), and the facts
    drawn from them embedded too — so both backends are scored on the same store."""
    mem.flush()
    mem.service.consolidation.wait_for_consolidation()
    mem.flush()


def turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", "")).strip()
    caption = turn.get("image_caption")
    if caption:
        text = f"{text} [shares an image: {caption}]".strip()
    return text or "(empty turn)"


def as_messages(convs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversations with every turn cut into its sentences, one short message each
    (same id, speaker and time; a shared image becomes a message of its own): a stand-in
    for real chats, where people send several short messages instead of one long turn.
    A question's evidence (turn ids) is then held by any message of the turn."""
    out = []
    for conv in convs:
        turns = []
        for t in conv["turns"]:
            text = turn_text(t)
            pieces = [p for p in re.split(r"(?<=[.!?\]])\s+", text) if p.strip()] or [text]
            turns += [{**t, "text": piece, "image_caption": None} for piece in pieces]
        out.append({**conv, "turns": turns})
    return out


def speakers_of(conv: dict[str, Any]) -> list[str]:
    """The conversation's speakers: as listed, else in the order they first speak."""
    listed = conv.get("speakers") or [t.get("speaker") for t in conv["turns"]]
    return list(dict.fromkeys(s for s in listed if s))


def with_roles(convs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversations with their speakers labelled by role — the first speaker
    ``user``, the second ``assistant`` — instead of by name, while the questions still
    name them: as in a chat whose export labels people by role or handle and where they
    call each other by name ("Thanks, Mel!")."""
    out = []
    for conv in convs:
        roles = dict(zip(speakers_of(conv), ("user", "assistant"), strict=False))
        turns = [{**t, "speaker": roles.get(t["speaker"], t["speaker"])} for t in conv["turns"]]
        out.append({**conv, "turns": turns})
    return out


def asked_as(conv: dict[str, Any], called: dict[str, str]) -> dict[str, Any]:
    """``conv`` with each name of ``called`` in its questions replaced by what it maps to
    (whole words only)."""
    questions = []
    for q in conv.get("questions") or ():
        text = str(q.get("question", ""))
        for name, form in called.items():
            text = re.sub(rf"\b{re.escape(name)}\b", form, text)
        questions.append({**q, "question": text})
    return {**conv, "questions": questions}


def with_role_questions(convs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversations labelled by role (:func:`with_roles`) and asked about by role:
    each speaker's name in the questions becomes "the user" or "the assistant" ("What
    did the user paint?"), as an agent asks about the person it talks to."""
    return [
        asked_as(conv, dict(zip(speakers_of(conv), ("the user", "the assistant"), strict=False)))
        for conv in with_roles(convs)
    ]


SURNAMES = ("Okafor", "Lindqvist", "Haddad", "Moreau", "Tanaka", "Kowalski", "Nguyen", "Osei")


def with_full_names(convs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversations with each speaker labelled by a full name — their first name and
    a made-up surname ("Caroline Okafor") — while the questions use the first name only:
    as in a chat export that labels people by the name on their account."""
    out = []
    for n, conv in enumerate(convs):
        full = {
            s: f"{s} {SURNAMES[(2 * n + i) % len(SURNAMES)]}"
            for i, s in enumerate(speakers_of(conv))
        }
        turns = [{**t, "speaker": full.get(t["speaker"], t["speaker"])} for t in conv["turns"]]
        out.append({**conv, "turns": turns})
    return out


def with_handles(convs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversations with each speaker labelled by a handle that begins with their
    first name ("caroline17"), while the questions use the name: as in a chat export that
    labels people by user name."""
    out = []
    for n, conv in enumerate(convs):
        handle = {s: f"{s.lower()}{17 + 7 * n + i}" for i, s in enumerate(speakers_of(conv))}
        turns = [{**t, "speaker": handle.get(t["speaker"], t["speaker"])} for t in conv["turns"]]
        out.append({**conv, "turns": turns})
    return out


# what people send between the messages that say something; a few of them ("nice!",
# "so cute", "good night!") are words memloci does not take for a backchannel
FILLERS = (
    "lol", "haha", "hahaha", "omg", "yeah", "ok", "nice!", "\U0001f602", "wow", "yes!",
    "right?", "true", "hmm", "aww", "lmao", "ikr", "\U0001f44d", "same", "oh no", "yep",
    "so cute", "damn", "omg really?", "good night!",
)  # fmt: skip


def with_fillers(convs: list[dict[str, Any]], rate: float = 0.3) -> list[dict[str, Any]]:
    """The conversations with a filler message ("lol", "ok", an emoji: :data:`FILLERS`)
    after about ``rate`` of their messages, by either speaker, as real chats have them
    (seeded: the same every run). A filler is never evidence (its id is the message's
    with ``#f``): the split measures what such noise costs."""
    rng = random.Random(5)
    out = []
    for conv in convs:
        speakers = sorted({t["speaker"] for t in conv["turns"] if t.get("speaker")})
        turns = []
        for t in conv["turns"]:
            turns.append(t)
            if speakers and rng.random() < rate:
                filler = {"id": f"{t['id']}#f", "speaker": rng.choice(speakers)}
                turns.append({**t, **filler, "text": rng.choice(FILLERS), "image_caption": None})
        out.append({**conv, "turns": turns})
    return out


# how people shorten words in a chat (the bench's own list, written apart from
# memloci's: some of these, "gr8", "tn", "srsly", "bro", memloci does not spell out)
CHAT_SPEAK = {
    "you": "u", "your": "ur", "you're": "ur", "I'm": "im", "don't": "dont",
    "that's": "thats", "because": "cuz", "really": "rly", "birthday": "bday",
    "tomorrow": "tmrw", "tonight": "tn", "picture": "pic", "pictures": "pics",
    "photo": "pic", "photos": "pics", "favorite": "fav", "people": "ppl",
    "definitely": "def", "probably": "prob", "going to": "gonna", "want to": "wanna",
    "vacation": "vacay", "conversation": "convo", "roommate": "roomie", "video": "vid",
    "minutes": "mins", "though": "tho", "something": "smth", "about": "abt",
    "right now": "rn", "to be honest": "tbh", "I don't know": "idk", "by the way": "btw",
    "please": "pls", "thanks": "thx", "with": "w", "great": "gr8", "awesome": "awsm",
    "family": "fam", "brother": "bro", "sister": "sis", "basketball": "bball",
    "apartment": "apt", "appointment": "appt", "university": "uni", "professor": "prof",
    "information": "info", "message": "msg", "seriously": "srsly", "everyone": "every1",
}  # fmt: skip
_SHORT_FORM = {word.lower(): short for word, short in CHAT_SPEAK.items()}
_CHAT_WORDS = re.compile(
    r"(?<![\w'])("
    + "|".join(re.escape(w) for w in sorted(CHAT_SPEAK, key=len, reverse=True))
    + r")(?![\w'])",
    re.IGNORECASE,
)


def with_chat_speak(convs: list[dict[str, Any]], rate: float = 0.7) -> list[dict[str, Any]]:
    """The conversations typed as people type in a chat (seeded: the same every run):
    about ``rate`` of the words :data:`CHAT_SPEAK` lists shortened ("bday", "tmrw", "u"),
    and half of the messages in lower case without their final full stop. The questions
    stay as written: the split measures what the shorthand costs."""
    rng = random.Random(11)

    def shorten(found: re.Match[str]) -> str:
        word = found.group(1)
        short = _SHORT_FORM[word.lower()]
        return short if rng.random() < rate else word

    out = []
    for conv in convs:
        turns = []
        for t in conv["turns"]:
            text = _CHAT_WORDS.sub(shorten, t["text"])
            if rng.random() < 0.5:
                text = text.lower().removesuffix(".")
            turns.append({**t, "text": text})
        out.append({**conv, "turns": turns})
    return out


def short_name(name: str) -> str:
    """A shortened form of a first name, as a question may call someone: its first four
    letters when it has six or more ("Caroline" → "Caro", "Melanie" → "Mela"), its first
    three when it has five ("Maria" → "Mar"), else as it is ("Jon", "Nate")."""
    return name[:4] if len(name) >= 6 else name[:3] if len(name) == 5 else name


def with_short_names(convs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversations asked about by a shortened form of the speakers' names
    (:func:`short_name`) while the messages are labelled by the name itself: a store
    that knows "Caroline" asked about "Caro"."""
    return [asked_as(conv, {s: short_name(s) for s in speakers_of(conv)}) for conv in convs]


def with_lowercase_labels(convs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversations with each speaker labelled by their name typed in lower case
    ("caroline"), the questions still capitalising it: as chat exports label people by
    what they typed as their name."""
    out = []
    for conv in convs:
        lower = {s: s.lower() for s in speakers_of(conv)}
        turns = [{**t, "speaker": lower.get(t["speaker"], t["speaker"])} for t in conv["turns"]]
        out.append({**conv, "turns": turns})
    return out


_VOWEL_SWAP = {"a": "e", "e": "a", "i": "y", "o": "u", "u": "o"}


def misspelt(name: str, way: int = 0) -> str:
    """``name`` as a question may misspell it: a letter doubled (``way`` 0: "Caroline"
    → "Carroline") or its last vowel changed (``way`` 1: "Melanie" → "Melania"); a name
    of three letters or fewer as it is."""
    if len(name) <= 3:
        return name
    if way == 0:
        for i in range(1, len(name) - 1):
            c = name[i].lower()
            if c not in "aeiouy" and c not in (name[i - 1].lower(), name[i + 1].lower()):
                return name[: i + 1] + name[i:]
    for i in range(len(name) - 1, 0, -1):
        if name[i] in _VOWEL_SWAP:
            return name[:i] + _VOWEL_SWAP[name[i]] + name[i + 1 :]
    return name


def with_misspelt_names(convs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversations asked about with the speakers' names misspelt
    (:func:`misspelt`, the two ways taking turns by conversation): a store that knows
    "Caroline" asked about "Carroline", one that knows "Melanie" about "Melania"."""
    return [
        asked_as(conv, {s: misspelt(s, n % 2) for s in speakers_of(conv)})
        for n, conv in enumerate(convs)
    ]


def with_relabelling(convs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversations with each speaker labelled by their first name in the first half
    of the sessions and by a full name in the rest ("Caroline", later "Caroline
    Okafor"), as an export labels a person by what their account was called at the time."""
    out = []
    for conv in with_full_names(convs):
        sessions = list(dict.fromkeys(t.get("session_id") for t in conv["turns"]))
        early = set(sessions[: len(sessions) // 2])
        turns = [
            {**t, "speaker": t["speaker"].split()[0]} if t.get("session_id") in early else t
            for t in conv["turns"]
        ]
        out.append({**conv, "turns": turns})
    return out


def _stems(text: str) -> set[str]:
    """Crude stems of ``text``'s words of three letters or more (their first five)."""
    return {w[:5] for w in re.findall(r"[a-z0-9]{3,}", text.lower())} - _COMMON


_COMMON = {"the", "and", "for", "with", "that", "this", "from", "they", "their", "have"}


def with_message_evidence(convs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with ids of their own (``D1:3.2``: the turn's second message) and each
    question's evidence narrowed to the messages of its evidence turns that hold a word
    of its answer ("Edinburgh, Scotland would be great …", not "Plus, it's a beautiful
    city." of the same turn); when none does, every message of those turns. A real chat's
    evidence names the message that says it: here the message next to the answer no
    longer counts for it (``messages`` credits any message of an evidence turn)."""
    out = []
    for conv in convs:
        turns, ids = [], {}
        for t in conv["turns"]:
            n = len(ids.setdefault(t["id"], [])) + 1
            mid = f"{t['id']}.{n}"
            ids[t["id"]].append((mid, t["text"]))
            turns.append({**t, "id": mid})
        questions = []
        for q in conv["questions"]:
            held = [m for e in q.get("evidence") or () for m in ids.get(e, ())]
            answer = _stems(str(q.get("answer", "")))
            said = [mid for mid, text in held if answer & _stems(text)]
            questions.append({**q, "evidence": said or [mid for mid, _ in held]})
        out.append({**conv, "turns": turns, "questions": questions})
    return out


# the names questions call the speakers by in ``renamed_questions``: names no memory holds
STRANGER_NAMES = ("Robin", "Kim", "Sasha", "Noor")


def renamed_questions(convs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversations with their questions calling the speakers by names no memory
    holds ("Robin", "Kim" for Caroline and Melanie), as in real chats whose questions do
    not use the names the speakers are labelled by: entity lists and speaker labels stop
    helping, the rest of the ranking must carry."""
    out = []
    for conv in convs:
        speakers = conv.get("speakers") or list(
            dict.fromkeys(t["speaker"] for t in conv["turns"] if t.get("speaker"))
        )
        questions = []
        for q in conv["questions"]:
            text = q["question"]
            for name, alias in zip(speakers, STRANGER_NAMES, strict=False):
                text = re.sub(rf"\b{re.escape(name)}\b", alias, text)
            questions.append({**q, "question": text})
        out.append({**conv, "questions": questions})
    return out


def typo(word: str, kind: int) -> str:
    """``word`` as typed in a hurry, one of three ways by ``kind``: two letters in its
    middle swapped ("tournament" → "touranment"), one dropped ("fundraiser" →
    "fundriser"), or the first consonant from its middle on doubled ("recipe" →
    "recippe")."""
    mid = len(word) // 2
    if kind % 3 == 0 and word[mid - 1] != word[mid]:
        return word[: mid - 1] + word[mid] + word[mid - 1] + word[mid + 1 :]
    if kind % 3 == 2:
        for i in range(mid, len(word) - 1):
            if word[i] not in "aeiouy":
                return word[: i + 1] + word[i:]
    return word[:mid] + word[mid + 1 :]


def with_typos(convs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversations (as turns) asked with a typo in each question's longest word of
    five letters or more that is typed in lower case (never a name): "What did Caroline
    research?" → "What did Caroline resaerch?", the three ways of :func:`typo` taking
    turns, as people type a question in a hurry."""
    out = []
    for conv in convs:
        questions = []
        for n, q in enumerate(conv["questions"]):
            words = [w for w in re.findall(r"[a-z]{5,}", q["question"])]
            text = q["question"]
            if words:
                word = max(words, key=len)
                text = re.sub(rf"\b{word}\b", typo(word, n), text, count=1)
            questions.append({**q, "question": text})
        out.append({**conv, "questions": questions})
    return out


def chat_split(convs: list[dict[str, Any]], split: str) -> list[dict[str, Any]]:
    """The conversations as ``split`` stores them: ``turns`` as they are (``typos``: asked
    with a typo, :func:`with_typos`), else cut into short messages (:func:`as_messages`)
    and then as :data:`CHAT_SPLITS` says."""
    if split == "typos":
        return with_typos(convs)
    form = CHAT_SPLITS.get(split)
    return convs if form is None else form(as_messages(convs))


# the splits of short messages: ``messages`` as cut; ``roles`` labelled by role; ``roleq``
# those asked about as "the user" / "the assistant"; ``fullnames`` labelled by full name;
# ``handles`` by user name; ``fillers`` with a filler ("lol") after about 30 % of them;
# ``chatspeak`` typed in chat shorthand ("bday", "tmrw", "u"); ``shortnames`` asked about
# by a shortened form of the speakers' names ("Caro" for "Caroline"); ``lowerlabels``
# labelled by names in lower case ("caroline"); ``misspelt`` asked about by misspelt
# names ("Carroline", "Melania"); ``relabelled`` labelled by the first name, then by a
# full name ("Caroline", later "Caroline Okafor"); ``pinpoint`` scored by the message that
# holds the answer, not any message of its turn; ``renamed`` those asked about by names no
# memory holds ("Robin" for Caroline)
CHAT_SPLITS: dict[str, Callable[[list[dict[str, Any]]], list[dict[str, Any]]]] = {
    "messages": list,
    "roles": with_roles,
    "roleq": with_role_questions,
    "fullnames": with_full_names,
    "handles": with_handles,
    "fillers": with_fillers,
    "chatspeak": with_chat_speak,
    "shortnames": with_short_names,
    "lowerlabels": with_lowercase_labels,
    "misspelt": with_misspelt_names,
    "relabelled": with_relabelling,
    "pinpoint": with_message_evidence,
    "renamed": lambda convs: renamed_questions(with_message_evidence(convs)),
}


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = [
        "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) + " |"
        for r in rows
    ]
    return "\n".join([line, sep, *body])
