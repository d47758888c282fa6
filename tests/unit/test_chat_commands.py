"""The ``/memory`` chat command: parsing, listing, deleting, searching, help."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from memloci import Memory
from memloci.interfaces.chat_commands import (
    HELP,
    USAGE,
    MemoryAction,
    MemoryCommand,
    answer_memory_command,
    format_memory_list,
    parse_memory_command,
    run_memory_command,
)

MakeMemory = Callable[..., Memory]
LIST, DELETE, SEARCH = MemoryAction.LIST, MemoryAction.DELETE, MemoryAction.SEARCH


def ask(mem: Memory, text: str, **ctx: Any) -> str | None:
    return asyncio.run(answer_memory_command(text, mem.service, **ctx))


def answer(mem: Memory, text: str, **ctx: Any) -> str:
    reply = ask(mem, text, **ctx)
    assert reply is not None
    return reply


def current_ids(mem: Memory, **filters: Any) -> set[str]:
    return {n.id for n in mem.list(**filters)}


# ---------------------------------------------------------------------- parsing
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/memory", MemoryCommand(LIST)),
        ("  /memory  ", MemoryCommand(LIST)),
        ("/MEMORY", MemoryCommand(LIST)),
        ("/memory@memloci_bot", MemoryCommand(LIST)),
        ("/memory list", MemoryCommand(LIST)),
        ("/memory   LIST", MemoryCommand(LIST)),
        ("/memory list Person", MemoryCommand(LIST, "person")),
        ("/memory list  work project ", MemoryCommand(LIST, "work_project")),
        ("/memory delete a1b2c3d4", MemoryCommand(DELETE, "a1b2c3d4")),
        ("/memory\tDelete   A1b2C3d4  ", MemoryCommand(DELETE, "A1b2C3d4")),
        ("/memory delete [a1b2c3d4]", MemoryCommand(DELETE, "a1b2c3d4")),
        ("/memory forget a1b2c3d4", MemoryCommand(DELETE, "a1b2c3d4")),
        ("/memory@memloci_bot delete a1b2c3d4", MemoryCommand(DELETE, "a1b2c3d4")),
        ("/memory search  Sarah's team ", MemoryCommand(SEARCH, "Sarah's team")),
        ("/memory help", MemoryCommand(MemoryAction.HELP)),
        ("/memory HELP", MemoryCommand(MemoryAction.HELP)),
    ],
)
def test_parse_commands(text: str, expected: MemoryCommand) -> None:
    assert parse_memory_command(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "hello", "hello /memory", "/memoryx", "/memory_list", "/memories", "memory", "/mem"],
)
def test_parse_ignores_other_messages(text: str) -> None:
    assert parse_memory_command(text) is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("/memory delete", "Usage: /memory delete <id>"),
        ("/memory forget  ", "Usage: /memory forget <id>"),
        ("/memory delete a1b2c3d4 e5f6g7h8", "Usage: /memory delete <id>"),
        ("/memory search", "Usage: /memory search <query>"),
        ("/memory frobnicate now", "Unknown /memory command 'frobnicate'."),
        ("/memory list " + "x" * 60, "category is longer than 50 characters"),
    ],
)
def test_parse_bad_sub_commands_give_usage(text: str, problem: str) -> None:
    command = parse_memory_command(text)
    assert command == MemoryCommand(MemoryAction.USAGE, problem=problem)
    # usage is answered without touching the service
    reply = asyncio.run(run_memory_command(command, None))  # type: ignore[arg-type]
    assert reply == f"{problem}\n{USAGE}"


def test_non_commands_are_passed_through(mem: Memory) -> None:
    assert ask(mem, "what do you remember about Sarah?") is None


# ---------------------------------------------------------------------- list
def _fixture(mem: Memory) -> dict[str, str]:
    """Three facts over two categories, plus things /memory must not show."""
    ids = {
        "alec": mem.remember("Alec is the user's boss", category="person", user="sam"),
        "pref": mem.remember("User prefers Thursday due dates", category="preference", user="sam"),
        "sarah": mem.remember("Sarah works on the Design team", category="person", user="sam"),
        "gone": mem.remember("Sam used to live in Porto", category="person", user="sam"),
        "other": mem.remember("Kim is allergic to nuts", category="person", user="kim"),
        "shared": mem.remember("The office closes on Fridays", category="work_place"),
    }
    out = {name: result.memory.id for name, result in ids.items()}
    mem.forget(out["gone"])
    mem.add("Sam said hello", user="sam", session="s1")  # an episode: not listed
    mem.learn_procedure("Always answer in English")  # a procedure: not listed
    return out


def test_list_matches_the_reference_format(mem: Memory) -> None:
    ids = _fixture(mem)
    expected = (
        "📝 Your memories:\n"
        "\n"
        "**Person**\n"
        f"• [{ids['alec']}] Alec is the user's boss\n"
        f"• [{ids['sarah']}] Sarah works on the Design team\n"
        "\n"
        "**Preference**\n"
        f"• [{ids['pref']}] User prefers Thursday due dates\n"
        "\n"
        "**Work Place**\n"
        f"• [{ids['shared']}] The office closes on Fridays\n"
        "\n"
        "Use /memory delete <id> to remove a memory."
    )
    assert answer(mem, "/memory", user="sam") == expected
    assert answer(mem, "/memory list", user="sam") == expected


def test_list_one_category(mem: Memory) -> None:
    ids = _fixture(mem)
    assert answer(mem, "/memory list Person", user="sam") == (
        "📝 Your memories:\n\n**Person**\n"
        f"• [{ids['alec']}] Alec is the user's boss\n"
        f"• [{ids['sarah']}] Sarah works on the Design team\n\n"
        "Use /memory delete <id> to remove a memory."
    )
    assert answer(mem, "/memory list project", user="sam") == "📝 No memories in Project."


def test_list_shows_only_what_the_user_may_see(mem: Memory) -> None:
    ids = _fixture(mem)
    reply = answer(mem, "/memory", user="kim")
    assert ids["other"] in reply and ids["shared"] in reply
    assert ids["alec"] not in reply and ids["gone"] not in reply


def test_list_empty(mem: Memory) -> None:
    assert answer(mem, "/memory") == "📝 No memories yet. Tell me something worth remembering!"


def test_list_is_capped(mem: Memory) -> None:
    words = ["apples", "boats", "cellos", "dahlias", "engines"]
    ids = [mem.remember(f"Sam likes {w}", category="preference").memory.id for w in words]
    reply = answer(mem, "/memory", limit=3)
    assert reply == (
        "📝 Your memories:\n\n**Preference**\n"
        + "".join(f"• [{i}] Sam likes {w}\n" for i, w in zip(ids[:3], words, strict=False))
        + "\n…and 2 more.\n\nUse /memory delete <id> to remove a memory."
    )


def test_format_clips_long_content_to_one_line(mem: Memory) -> None:
    node = mem.remember("line one\nline   two " + "x" * 300).memory
    text = format_memory_list([node])
    line = text.splitlines()[3]
    assert line.startswith(f"• [{node.id}] line one line two xxx") and line.endswith("…")
    assert len(line) == len(f"• [{node.id}] ") + 200


# ---------------------------------------------------------------------- delete
def test_delete_soft_deletes(mem: Memory) -> None:
    ids = _fixture(mem)
    reply = answer(mem, f"/memory delete {ids['pref']}", user="sam")
    assert reply == "Deleted: 'User prefers Thursday due dates'"
    assert ids["pref"] not in current_ids(mem)
    assert mem.get(ids["pref"]).valid_until is not None  # history stays
    assert answer(mem, f"/memory forget {ids['pref']}", user="sam") == (
        f"No memory with id {ids['pref']}."
    )


@pytest.mark.parametrize("bad", ["zzzzzzzz", "not-an-id", "a" * 40])
def test_delete_unknown_id(mem: Memory, bad: str) -> None:
    _fixture(mem)
    before = current_ids(mem)
    assert answer(mem, f"/memory delete {bad}", user="sam") == f"No memory with id {bad}."
    assert current_ids(mem) == before


def test_delete_other_users_memory_deletes_nothing(mem: Memory) -> None:
    ids = _fixture(mem)
    reply = answer(mem, f"/memory delete {ids['other']}", user="sam")
    assert reply == f"No memory with id {ids['other']}."
    assert ids["other"] in current_ids(mem)


def test_a_user_cannot_delete_a_fact_every_user_shares(mem: Memory) -> None:
    """The agent tools' rule: a chat user reads the shared facts, changes their own."""
    ids = _fixture(mem)
    reply = answer(mem, f"/memory delete {ids['shared']}", user="sam")
    assert reply.startswith("⚠️") and "shared with every user" in reply
    assert ids["shared"] in current_ids(mem)
    other_agent = mem.remember("Replies are signed Bot A", agent="bot-a", scope="agent").memory
    reply = answer(mem, f"/memory delete {other_agent.id}", agent="bot-b")
    assert other_agent.id in current_ids(mem, agent="bot-a")
    assert answer(mem, f"/memory delete {ids['shared']}") == (
        "Deleted: 'The office closes on Fridays'"
    )  # an operator's chat, bound to no user, may


def test_delete_episode_or_forgotten_memory_deletes_nothing(mem: Memory) -> None:
    ids = _fixture(mem)
    episode = mem.list(type="episodic")[0]
    assert answer(mem, f"/memory delete {episode.id}") == f"No memory with id {episode.id}."
    assert episode.id in current_ids(mem)
    assert answer(mem, f"/memory delete {ids['gone']}") == f"No memory with id {ids['gone']}."


def test_delete_in_foreign_namespace_deletes_nothing(make_memory: MakeMemory) -> None:
    home = make_memory()
    away = home.remember("Sam's locker code is 1234", namespace="work").memory
    reply = answer(home, f"/memory delete {away.id}", namespace="personal")
    assert reply == f"No memory with id {away.id}."
    assert answer(home, f"/memory delete {away.id}") == f"No memory with id {away.id}."
    assert away.id in current_ids(home, namespace="work")
    assert answer(home, f"/memory delete {away.id}", namespace="work") == (
        "Deleted: 'Sam's locker code is 1234'"
    )


# ---------------------------------------------------------------------- search, help
def test_search_shows_top_hits_with_ids(mem: Memory) -> None:
    ids = _fixture(mem)
    for i in range(7):
        mem.remember(f"Sarah's design review number {i} went well", user="sam")
    mem.flush(5)
    reply = answer(mem, "/memory search Sarah design", user="sam")
    lines = reply.splitlines()
    assert lines[0] == "🔎 Memories matching 'Sarah design':"
    bullets = [line for line in lines if line.startswith("• [")]
    assert len(bullets) == 5
    assert f"• [{ids['sarah']}] Sarah works on the Design team" in bullets
    assert lines[-1] == "Use /memory delete <id> to remove a memory."
    assert "Kim" not in answer(mem, "/memory search allergic nuts", user="sam")


def test_search_without_hits(mem: Memory) -> None:
    assert answer(mem, "/memory search kayaks") == "🔎 No memories match 'kayaks'."


def test_invalid_input_is_answered_not_raised(mem: Memory) -> None:
    assert answer(mem, "/memory search " + "q" * 5000).startswith("⚠️ ")
    assert answer(mem, "/memory", namespace="Not Valid").startswith("⚠️ invalid namespace")


def test_help(mem: Memory) -> None:
    assert answer(mem, "/memory help") == HELP
    assert "/memory delete <id>" in HELP and "/memory search <query>" in HELP
