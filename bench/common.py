"""Shared helpers for the benchmarks (not part of the package)."""

from __future__ import annotations

import json
import os
import re
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


def parse_locomo_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → aware UTC datetime."""
    clean = re.sub(r"\s+", " ", text.strip())
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(clean, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"unreadable LoCoMo time {text!r}")


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


def with_roles(convs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversations with their speakers labelled by role — the first speaker
    ``user``, the second ``assistant`` — instead of by name, while the questions still
    name them: as in a chat whose export labels people by role or handle and where they
    call each other by name ("Thanks, Mel!")."""
    out = []
    for conv in convs:
        roles = dict(zip(conv["speakers"], ("user", "assistant"), strict=False))
        turns = [{**t, "speaker": roles.get(t["speaker"], t["speaker"])} for t in conv["turns"]]
        out.append({**conv, "turns": turns})
    return out


SURNAMES = ("Okafor", "Lindqvist", "Haddad", "Moreau", "Tanaka", "Kowalski", "Nguyen", "Osei")


def with_full_names(convs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversations with each speaker labelled by a full name — their first name and
    a made-up surname ("Caroline Okafor") — while the questions use the first name only:
    as in a chat export that labels people by the name on their account."""
    out = []
    for n, conv in enumerate(convs):
        full = {
            s: f"{s} {SURNAMES[(2 * n + i) % len(SURNAMES)]}"
            for i, s in enumerate(conv["speakers"])
        }
        turns = [{**t, "speaker": full.get(t["speaker"], t["speaker"])} for t in conv["turns"]]
        out.append({**conv, "turns": turns})
    return out


CHAT_SPLITS = ("messages", "roles", "fullnames")


def chat_split(convs: list[dict[str, Any]], split: str) -> list[dict[str, Any]]:
    """The conversations as ``split`` stores them: ``turns`` as they are; ``messages``
    cut into short messages (:func:`as_messages`); ``roles`` those messages labelled by
    role (:func:`with_roles`); ``fullnames`` labelled by full name
    (:func:`with_full_names`)."""
    if split not in CHAT_SPLITS:
        return convs
    convs = as_messages(convs)
    if split == "roles":
        return with_roles(convs)
    return with_full_names(convs) if split == "fullnames" else convs


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = [
        "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) + " |"
        for r in rows
    ]
    return "\n".join([line, sep, *body])
