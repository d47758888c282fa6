"""Conversation memory: checkpoints every turn, window, resume rules, a system prompt
that is never stored (so never duplicated), pruning to ``max_sessions``, running
summaries, and saving that never raises into the agent loop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterator, Sequence
from typing import Any, TypeVar

import pytest

from memloci import Memory
from memloci.config import Settings
from memloci.errors import NotFoundError, ValidationError
from memloci.models import ThreadMessage, utcnow
from memloci.providers.fake import FakeEmbedder
from memloci.runtime import ConversationMemory, llm_summarizer, thread_id
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


def conv(service: MemoryService, **kw: Any) -> ConversationMemory:
    kw.setdefault("user", "telegram:1")
    kw.setdefault("chat", "c1")
    kw.setdefault("agent", "bot")
    return ConversationMemory(service, **kw)


def talk(c: ConversationMemory, *turns: str) -> None:
    async def go() -> None:
        for i, text in enumerate(turns):
            assert await c.record("user" if i % 2 == 0 else "assistant", text)

    run(go())


def stored(service: MemoryService, c: ConversationMemory) -> list[ThreadMessage]:
    return run(service.records.get_thread(c.thread_id)).messages


def contents(messages: Sequence[ThreadMessage]) -> list[str]:
    return [m.content for m in messages]


# ---------------------------------------------------------------------- thread ids
def test_thread_id_is_user_chat_agent() -> None:
    assert thread_id("telegram:1", "c1", "bot") == "telegram:1|c1|bot"
    assert thread_id("u") == "u||"
    assert thread_id("a|b", "c") != thread_id("a", "b|c")
    assert thread_id("a|b", "c") == "a%7Cb|c|"
    assert thread_id("50%", "#1") == "50%25|%231|"


def test_long_thread_ids_are_shortened_stably() -> None:
    long_user = "u" * 200
    tid = thread_id(long_user, "c", "bot")
    assert len(tid) <= 200 and tid.startswith("u" * 150 + "#")
    assert tid == thread_id(long_user, "c", "bot") != thread_id(long_user, "d", "bot")


def test_bad_arguments_raise_at_construction(service: MemoryService) -> None:
    with pytest.raises(ValidationError):
        ConversationMemory(service, user="")
    with pytest.raises(ValidationError):
        conv(service, window=0)
    with pytest.raises(ValidationError):
        conv(service, summarize="not callable")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        conv(service, namespace="Bad NS")


# ---------------------------------------------------------------------- checkpoints
def test_every_turn_is_checkpointed_with_its_session(service: MemoryService) -> None:
    c = conv(service)
    session = run(c.start())
    for i, text in enumerate(["hi", "hello", "how are you?"]):
        assert run(c.record("user" if i % 2 == 0 else "assistant", text))
        assert contents(stored(service, c)) == ["hi", "hello", "how are you?"][: i + 1]
    thread = run(service.records.get_thread(c.thread_id))
    assert (thread.user, thread.agent) == ("telegram:1", "bot")
    assert {m.metadata["session"] for m in thread.messages} == {session}


def test_record_starts_a_session_when_none_was_started(service: MemoryService) -> None:
    c = conv(service)
    assert c.session is None
    talk(c, "hi")
    assert c.session is not None and len(c.session) == 12


def test_tool_messages_and_metadata_are_kept(service: MemoryService) -> None:
    c = conv(service)
    run(c.record("user", "weather?"))
    run(c.record("assistant", "", metadata={"tool_calls": [{"id": "t1"}]}))
    run(c.record("tool", "sunny", metadata={"tool_call_id": "t1"}))
    msgs = stored(service, c)
    assert [m.role for m in msgs] == ["user", "assistant", "tool"]
    assert msgs[2].metadata["tool_call_id"] == "t1"


def test_unknown_role_is_a_programming_error(service: MemoryService) -> None:
    with pytest.raises(ValidationError, match="role 'robot'"):
        run(conv(service).record("robot", "beep"))


def test_huge_messages_are_stored_truncated(service: MemoryService) -> None:
    c = conv(service)
    big = "x" * 30_000
    assert run(c.record("user", big))
    assert len(stored(service, c)[0].content) <= 20_000
    assert c.window().messages[0].content == big


# ---------------------------------------------------------------------- system prompt
def test_system_prompt_is_never_stored_or_duplicated(service: MemoryService) -> None:
    c = conv(service, system_prompt="You are kind.")
    run(c.start())
    for i in range(3):  # a runner that naively re-sends the system prompt every turn
        run(c.record("system", "You are kind."))
        talk(c, f"question {i}", f"answer {i}")
    assert all(m.role in ("user", "assistant") for m in stored(service, c))
    window = c.window()
    assert window.system_prompt == "You are kind." and window.system_id
    chat = window.chat(system=True)
    assert [m["role"] for m in chat].count("system") == 1 and chat[0]["role"] == "system"
    resumed = conv(service, system_prompt="You are kind.")
    run(resumed.start(resume=True))
    assert resumed.system_id == c.system_id
    assert [m["role"] for m in resumed.window().chat(system=True)].count("system") == 1


def test_a_changed_system_prompt_applies_on_resume(service: MemoryService) -> None:
    c = conv(service, system_prompt="old prompt")
    talk(c, "hi", "hello")
    new = conv(service, system_prompt="new prompt")
    run(new.start(resume=True))
    assert new.window().system_prompt == "new prompt"
    assert new.system_id != c.system_id
    assert "old prompt" not in str(stored(service, new))


def test_system_text_puts_stable_parts_first() -> None:
    from memloci.runtime import ConversationWindow

    w = ConversationWindow(messages=(), summary="We discussed tea.", system_prompt="Be kind.")
    assert w.system("## Your Memory\n- likes tea") == (
        "Be kind.\n\n## Your Memory\n- likes tea\n\n"
        "## Summary of the earlier conversation\n\nWe discussed tea."
    )
    assert ConversationWindow(messages=()).system() == ""


# ---------------------------------------------------------------------- window
def test_window_keeps_the_last_messages_starting_with_a_user(service: MemoryService) -> None:
    c = conv(service, window=4)
    talk(c, *[f"m{i}" for i in range(10)])
    assert contents(c.window().messages) == ["m6", "m7", "m8", "m9"]
    run(c.record("user", "m10"))  # the last 4 would start on an assistant message
    assert contents(c.window().messages) == ["m8", "m9", "m10"]
    assert len(stored(service, c)) == 11  # the store keeps everything


def test_window_may_grow_to_start_on_a_user_message(service: MemoryService) -> None:
    c = conv(service, window=3)

    async def go() -> None:
        await c.record("user", "do the thing")
        for i in range(4):
            await c.record("assistant", f"call {i}")
            await c.record("tool", f"result {i}")

    run(go())
    msgs = c.window().messages
    assert msgs[0].content == "do the thing" and len(msgs) == 9


# ---------------------------------------------------------------------- sessions
def test_resume_continues_the_latest_session(service: MemoryService) -> None:
    first = conv(service)
    run(first.start())
    talk(first, "old q", "old a")
    second = conv(service)
    session = run(second.start())
    talk(second, "new q", "new a")
    again = conv(service)
    assert run(again.start(resume=True)) == session and again.resumed
    assert contents(again.window().messages) == ["new q", "new a"]
    talk(again, "more")
    assert contents(stored(service, again))[-3:] == ["new q", "new a", "more"]


def test_resume_loads_at_most_max_resume_messages_never_starting_on_assistant(
    service: MemoryService,
) -> None:
    c = conv(service)
    talk(c, *[f"m{i}" for i in range(9)])  # m0 user … m8 user
    run(c.record("assistant", "m9"))
    again = conv(service, max_resume_messages=5)  # m5..m9 → m5 is an assistant turn
    run(again.start(resume=True))
    assert contents(again.window().messages) == ["m6", "m7", "m8", "m9"]


def test_resume_skips_leading_tool_messages(service: MemoryService) -> None:
    c = conv(service)

    async def go() -> None:
        await c.record("user", "q")
        await c.record("assistant", "calling")
        await c.record("tool", "result")
        await c.record("assistant", "done")
        await c.record("user", "thanks")

    run(go())
    again = conv(service, max_resume_messages=3)  # tool, assistant, user → user only
    run(again.start(resume=True))
    assert contents(again.window().messages) == ["thanks"]


def test_resume_with_nothing_saved_starts_fresh(service: MemoryService) -> None:
    c = conv(service)
    assert run(c.start(resume=True)) and not c.resumed
    assert c.window().messages == ()


def test_a_new_session_starts_empty(service: MemoryService) -> None:
    c = conv(service)
    talk(c, "hi", "hello")
    fresh = conv(service)
    run(fresh.start())
    assert fresh.window().messages == ()


def test_threads_are_per_user_chat_and_agent(service: MemoryService) -> None:
    talk(conv(service), "for bot in c1")
    for other in (conv(service, chat="c2"), conv(service, agent="other"), conv(service, user="u2")):
        run(other.start(resume=True))
        assert other.window().messages == ()


def test_old_sessions_are_pruned_to_max_sessions(service: MemoryService) -> None:
    for i in range(4):
        c = conv(service, max_sessions=2)
        run(c.start())
        talk(c, f"session {i}")
    assert contents(stored(service, c)) == ["session 2", "session 3"]
    run(c.end())
    assert contents(stored(service, c)) == ["session 2", "session 3"]
    one = conv(service, max_sessions=1)
    run(one.start())  # keeps no old session: the thread goes
    with pytest.raises(NotFoundError):
        run(service.records.get_thread(one.thread_id))


def test_end_prunes_after_max_sessions_shrinks(service: MemoryService) -> None:
    for i in range(3):
        c = conv(service)
        run(c.start())
        talk(c, f"session {i}")
    last = conv(service, max_sessions=1)
    run(last.start(resume=True))
    run(last.end())
    assert contents(stored(service, last)) == ["session 2"]


# ---------------------------------------------------------------------- summaries
def test_older_turns_fold_into_a_running_summary(service: MemoryService) -> None:
    calls: list[tuple[str | None, list[str]]] = []

    def summarize(previous: str | None, messages: Sequence[ThreadMessage]) -> str:
        calls.append((previous, contents(messages)))
        return f"summary {len(calls)}"

    c = conv(service, window=8, summarize=summarize)
    talk(c, *[f"m{i}" for i in range(9)])
    # folded down to 3/4 of the window, moved on to start with a user message
    assert calls == [(None, ["m0", "m1", "m2", "m3"])]
    assert c.summary == "summary 1" and contents(c.window().messages)[0] == "m4"
    talk(c, "n0", "n1", "n2", "n3")
    assert calls[1:] == [("summary 1", ["m4", "m5", "m6", "m7"])]
    assert c.window().summary == "summary 2"
    assert run(service.records.get_thread(c.thread_id)).summary == "summary 2"
    again = conv(service)
    run(again.start(resume=True))
    assert again.summary == "summary 2"
    fresh = conv(service)
    run(fresh.start())
    assert fresh.summary is None and run(service.records.get_thread(c.thread_id)).summary is None


def test_async_summarizers_work_too(service: MemoryService) -> None:
    async def summarize(previous: str | None, messages: Sequence[ThreadMessage]) -> str:
        return "async summary"

    c = conv(service, window=4, summarize=summarize)
    talk(c, *[f"m{i}" for i in range(6)])
    assert c.summary == "async summary"


def test_a_failing_summarizer_never_raises(
    service: MemoryService, capsys: pytest.CaptureFixture[str]
) -> None:
    def summarize(previous: str | None, messages: Sequence[ThreadMessage]) -> str:
        raise RuntimeError("LLM down")

    c = conv(service, window=4, summarize=summarize)
    talk(c, *[f"m{i}" for i in range(7)])
    assert c.summary is None and len(c.window().messages) <= 4
    assert "could not summarise older turns (RuntimeError: LLM down)" in capsys.readouterr().err


def test_llm_summarizer_asks_the_model() -> None:
    seen: dict[str, Any] = {}

    class Echo:
        model_id = "echo"

        def complete(self, messages: list[dict[str, Any]], **kw: Any) -> str:
            seen.update(kw, prompt=messages[0]["content"])
            return " the summary "

    now = ThreadMessage(role="user", content="I like tea", created_at=utcnow())
    assert llm_summarizer(Echo())("before", [now]) == "the summary"
    assert "Summary so far:\nbefore" in seen["prompt"] and "user: I like tea" in seen["prompt"]
    assert seen["system"] and seen["temperature"] == 0.0


# ---------------------------------------------------------------------- never raises
def test_saving_never_raises_when_the_store_fails(
    db_path: str, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    svc = build_service(Settings(path=db_path), embedder=FakeEmbedder())
    c = conv(svc)
    run(c.start())
    talk(c, "saved")
    svc.close()  # the store is gone: every write fails from now on
    with caplog.at_level(logging.WARNING, logger="memloci.runtime"):
        assert run(c.record("assistant", "not saved")) is False
        assert run(c.record("user", "still going")) is False
        run(c.end())
        session = run(conv(svc).start(resume=True))
    assert session and c.failures >= 2
    assert contents(c.window().messages) == ["saved", "not saved", "still going"]
    err = capsys.readouterr().err
    assert err.count("memloci: could not save the conversation") == 1  # once per error
    assert "continuing" in err
    assert any("could not save the conversation" in r.getMessage() for r in caplog.records)


def test_a_foreign_thread_owner_does_not_raise(service: MemoryService) -> None:
    c = conv(service)
    run(
        service.records.append_messages(
            c.thread_id, [{"role": "user", "content": "x"}], user="someone"
        )
    )
    assert run(c.record("user", "mine")) is False and c.failures == 1


# ---------------------------------------------------------------------- sync SDK
def test_sync_memory_conversation(make_memory: Any) -> None:
    m: Memory = make_memory()
    c = m.conversation(user="u1", agent="bot", window=6, system_prompt="Be brief.")
    session = c.start()
    assert c.record("user", "hello") and c.record("assistant", "hi there")
    assert c.session == session and c.thread_id == "u1||bot" and c.failures == 0
    c.system_prompt = "Be briefer."
    assert c.window().system() == "Be briefer."
    c.end()
    again = m.conversation(user="u1", agent="bot")
    again.start(resume=True)
    assert again.resumed and contents(again.window().messages) == ["hello", "hi there"]
