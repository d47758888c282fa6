"""``identify_user``: channel + id from trigger payloads of several shapes → the memory
user (found, followed through merges, or created) with their context; contact stats."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from datetime import timedelta
from typing import Any, TypeVar

import pytest

from memloci.config import Settings
from memloci.errors import NotFoundError, ValidationError
from memloci.models import utcnow
from memloci.providers.fake import FakeEmbedder
from memloci.runtime import Identity, extract_identity, identify_user
from memloci.service import MemoryService
from memloci.service.compose import build_service

T = TypeVar("T")


@pytest.fixture
def service(db_path: str) -> Iterator[MemoryService]:
    svc = build_service(Settings(path=db_path), embedder=FakeEmbedder())
    yield svc
    svc.close()


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


TG_UPDATE = {
    "update_id": 1,
    "message": {
        "message_id": 7,
        "from": {"id": 12345, "is_bot": False, "first_name": "Sam", "last_name": "Lee"},
        "chat": {"id": -99, "type": "group"},
        "text": "hi",
    },
}


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"channel": "telegram", "user_id": 12345, "display_name": "Sam"},
         Identity("telegram", "12345", "Sam")),
        ({"channel": "Slack", "id": "U123", "username": "sam"}, Identity("slack", "U123", "sam")),
        ({"channel": "web", "identifier": " abc ", "text": "hi"}, Identity("web", "abc", None)),
        ({"channel": "sms", "from": {"id": "+351 900"}, "name": "Sam"},
         Identity("sms", "+351 900", "Sam")),
        ({"email": "Sam@Example.com", "name": "Sam"}, Identity("email", "sam@example.com", "Sam")),
        (TG_UPDATE, Identity("telegram", "12345", "Sam Lee")),
        ({"telegram": {"from": {"id": 12345, "username": "samlee"}}},
         Identity("telegram", "12345", "samlee")),
        ({"telegram": TG_UPDATE}, Identity("telegram", "12345", "Sam Lee")),
        ({"slack": {"user": "U9", "text": "hey"}, "chat": {"id": 5}},
         Identity("slack", "U9", None)),
        ({"discord": {"author": {"id": "42", "name": "sam#1"}}},
         Identity("discord", "42", "sam#1")),
        ({"whatsapp": {"user_id": "+351"}}, Identity("whatsapp", "+351", None)),
        ({"email": {"from": "A@B.io"}}, Identity("email", "a@b.io", None)),
    ],
)  # fmt: skip
def test_payload_shapes(payload: dict[str, Any], expected: Identity) -> None:
    assert extract_identity(payload) == expected


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({}, "no user found in the trigger payload"),
        ({"text": "hi", "chat": {"id": 5}}, "no user found"),
        ({"channel": "telegram"}, "payload names channel 'telegram' but no user id"),
        ({"channel": "", "user_id": 1}, "invalid channel ''"),
        ({"channel": "telegram", "user_id": True}, "no user id"),
        ({"channel": "telegram", "user_id": "bad\nid"}, "invalid user id"),
        ({"email": "not-an-address"}, "invalid email address"),
        ({"telegram": {"from": {"id": 1}}, "slack": {"user": "U1"}}, "several channels"),
        ([("channel", "x")], "a trigger payload must be an object, not list"),
    ],
)
def test_bad_payloads_say_what_is_accepted(payload: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message) as info:
        extract_identity(payload)
    assert info.value.hint


def test_a_new_user_is_created_with_the_channel_id(service: MemoryService) -> None:
    ctx = run(identify_user(service, {"channel": "telegram", "user_id": 12345, "name": "Sam"}))
    assert ctx.created and ctx.new_conversation
    assert ctx.user.id == "telegram:12345" and ctx.user.display_name == "Sam"
    assert ctx.user.identifiers == {"telegram": "12345"}
    assert ctx.user.conversation_count == 1 and ctx.user.last_seen is not None
    assert (ctx.channel, ctx.identifier) == ("telegram", "12345")
    again = run(identify_user(service, TG_UPDATE))
    assert not again.created and again.user.id == "telegram:12345"
    assert run(service.records.count_users()) == 1


def test_a_merged_user_resolves_to_the_target(service: MemoryService) -> None:
    run(service.records.save_user("sam", display_name="Sam", identifiers={"email": "sam@x.io"}))
    tg = run(identify_user(service, {"telegram": {"from": {"id": 777}}})).user
    run(service.records.merge_users(tg.id, "sam"))
    ctx = run(identify_user(service, {"channel": "telegram", "user_id": 777}))
    assert ctx.user.id == "sam" and not ctx.created
    assert run(identify_user(service, {"email": "SAM@x.io"})).user.id == "sam"


def test_context_has_user_facts_episodes_and_preferences(service: MemoryService) -> None:
    uid = "telegram:5"
    run(
        service.records.save_user(uid, identifiers={"telegram": "5"}, preferences={"tone": "brief"})
    )
    mine = run(service.memories.remember("Sam keeps bees on the roof", user=uid)).memory
    run(service.memories.remember("Alex collects stamps", user="telegram:6"))
    run(service.memories.remember("The office closes at six", scope="global"))
    episode = run(service.memories.record_episode("Helped Sam plan a trip", user=uid)).memory
    run(service.memories.add("a plain conversation turn", user=uid, session="s1"))
    ctx = run(identify_user(service, {"channel": "telegram", "user_id": 5, "name": "Sam"}))
    assert [f.id for f in ctx.facts] == [mine.id]
    assert [e.id for e in ctx.episodes] == [episode.id]
    assert ctx.preferences == {"tone": "brief"}
    assert ctx.user.display_name == "Sam"  # filled in: the user had none
    text = ctx.as_prompt()
    assert "You are talking with Sam (id telegram:5)" in text and "tone: brief" in text
    assert "Sam keeps bees on the roof" in text and "Helped Sam plan a trip" in text
    assert "stamps" not in text and "office" not in text


def test_known_display_name_is_kept(service: MemoryService) -> None:
    run(
        service.records.save_user(
            "telegram:5", display_name="Samuel", identifiers={"telegram": "5"}
        )
    )
    ctx = run(identify_user(service, {"channel": "telegram", "user_id": 5, "name": "sam"}))
    assert ctx.user.display_name == "Samuel"


def test_conversations_are_counted_after_a_silence(service: MemoryService) -> None:
    payload = {"channel": "web", "user_id": "v1"}
    first = run(identify_user(service, payload)).user
    assert first.conversation_count == 1
    soon = run(identify_user(service, payload))
    assert not soon.new_conversation and soon.user.conversation_count == 1
    assert soon.user.last_seen is not None and soon.user.last_seen >= first.last_seen  # type: ignore[operator]
    forced = run(identify_user(service, payload, new_conversation=True))
    assert forced.user.conversation_count == 2
    long_ago = utcnow() - timedelta(hours=2)
    run(service.records.save_user("web:v2", identifiers={"web": "v2"}))
    run(service.records.touch_user("web:v2", when=long_ago))
    later = run(identify_user(service, {"channel": "web", "user_id": "v2"}))
    assert later.new_conversation and later.user.conversation_count == 1
    never = run(identify_user(service, {"channel": "web", "user_id": "v2"}, new_conversation=False))
    assert never.user.conversation_count == 1


def test_identify_uses_the_namespace(service: MemoryService) -> None:
    ctx = run(identify_user(service, {"email": "a@b.io"}, namespace="tenant-a"))
    assert ctx.user.namespace == "tenant-a"
    assert run(service.records.find_user("email", "a@b.io")) is None


def test_touch_user_needs_a_known_user(service: MemoryService) -> None:
    with pytest.raises(NotFoundError):
        run(service.records.touch_user("nobody"))
    user = run(service.records.save_user("u1"))
    later = run(service.records.touch_user("u1", new_conversation=True))
    earlier = run(service.records.touch_user("u1", when=utcnow() - timedelta(days=1)))
    assert user.last_seen is None and later.conversation_count == 1
    assert earlier.last_seen == later.last_seen  # never moves backwards


def test_sdk_identify_user(make_memory: Any) -> None:
    m = make_memory()
    ctx = m.identify_user({"channel": "telegram", "user_id": 1})
    assert ctx.user.id == "telegram:1" and ctx.created
