"""Reference 000's memory users: the display name is first + last name before a
Telegram handle, and the cached preferences follow the user's ``user_preference``
facts (remembered, updated, forgotten) each time ``identify_user`` loads the user."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest

from memloci.config import Settings
from memloci.providers.fake import FakeEmbedder
from memloci.runtime import extract_identity, identify_user
from memloci.service import MemoryService
from memloci.service.compose import build_service

T = TypeVar("T")
TELEGRAM = {
    "telegram": {
        "message": {
            "from": {"id": 42, "first_name": "Sam", "last_name": "Lee", "username": "samlee99"}
        }
    }
}


@pytest.fixture
def service(db_path: str) -> Iterator[MemoryService]:
    svc = build_service(Settings(path=db_path, embedder="fake"), embedder=FakeEmbedder())
    yield svc
    svc.close()


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def test_first_and_last_name_come_before_the_handle(service: MemoryService) -> None:
    assert extract_identity(TELEGRAM).display_name == "Sam Lee"
    flat = {"channel": "slack", "id": "U1", "username": "sam", "first_name": "Sam"}
    assert extract_identity(flat).display_name == "Sam"
    handle_only = {"channel": "slack", "id": "U2", "username": "sam"}
    assert extract_identity(handle_only).display_name == "sam"
    ctx = run(identify_user(service, TELEGRAM))
    assert ctx.user.display_name == "Sam Lee"


def test_cached_preferences_follow_user_preference_facts(service: MemoryService) -> None:
    uid = run(identify_user(service, TELEGRAM)).user.id
    run(service.records.save_user(uid, preferences={"language": "pt"}))  # set by hand: kept
    style = run(
        service.memories.remember(
            "Sam likes concise answers", user=uid, fact_type="user_preference",
            key="answer_style", value="concise",
        )
    ).memory  # fmt: skip
    run(service.memories.remember("Sam prefers dark mode", user=uid, fact_type="user_preference"))
    run(service.memories.remember("Sam lives in Lisbon", user=uid))  # not a preference

    ctx = run(identify_user(service, TELEGRAM))
    assert ctx.preferences == {
        "language": "pt", "answer_style": "concise", "noted": ["Sam prefers dark mode"],
    }  # fmt: skip
    cached = run(service.records.get_user(uid))  # denormalised onto the user record
    assert cached.preferences["answer_style"] == "concise"
    assert "answer_style: concise" in ctx.as_prompt()

    run(
        service.edits.update(
            style.id, "Sam likes detailed answers", value="detailed", set_value=True
        )
    )
    assert run(identify_user(service, TELEGRAM)).preferences["answer_style"] == "detailed"
    run(service.edits.forget(style.id))
    after = run(identify_user(service, TELEGRAM)).preferences
    assert after == {"language": "pt", "noted": ["Sam prefers dark mode"]}
