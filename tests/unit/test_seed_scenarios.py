"""The six seed scenarios ("Testing Scenarios" of the original memory spec), driven
through the SDK: store (after the user says yes), recall in a new session, update when
information changes, decline (nothing stored), ``/memory`` list and ``/memory delete``.
A new ``Memory`` on the same file is a new session; the rule-based extractor stands in
for the agent where the conversation itself carries the decision."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memloci import Memory
from memloci.interfaces.chat_commands import answer_memory_command
from memloci.models import NodeType

MakeMemory = Callable[..., Memory]
USER = "sam"


def chat(m: Memory, session: str, *lines: tuple[str, str]) -> None:
    """Add a conversation: ``(role, text)`` pairs."""
    for role, text in lines:
        speaker = "Sam" if role == "user" else "Assistant"
        m.add(text, user=USER, session=session, role=role, speaker=speaker)


def facts(m: Memory) -> list[str]:
    return [n.content for n in m.list(user=USER, type=["semantic", "opinion"])]


def command(m: Memory, text: str) -> str:
    answer = m._call(answer_memory_command(text, m.service, user=USER))
    assert answer is not None
    return answer


@pytest.fixture
def path(tmp_path: object) -> str:
    return f"{tmp_path}/seed.db"


# ---------------------------------------------------------------------- 1. store
def test_1_store_after_the_user_agrees(make_memory: MakeMemory, path: str) -> None:
    m = make_memory(path)
    chat(
        m, "s1",
        ("user", "Alec is my boss by the way"),
        ("assistant", "Would you like me to remember that Alec is your boss for future "
                      "conversations?"),
        ("user", "Yes"),
    )  # fmt: skip
    report = m._call(m.service.consolidation.end_session("s1"))
    assert report.sessions == ["s1"] and len(report.created) == 1
    (boss,) = m.list(user=USER, type="semantic")
    assert boss.content == "Alec is the user's boss"
    assert boss.category == "person" and boss.subject == "Alec"
    sources = m._call(m.service.records.explain(boss.id)).sources
    assert [s.content for s in sources] == ["Alec is my boss by the way"]


def test_1_store_through_the_tool_call(make_memory: MakeMemory, path: str) -> None:
    m = make_memory(path)  # the agent's add_to_memory call
    result = m.remember("Alec is the user's boss", category="person", subject="Alec", user=USER)
    assert result.action == "created" and facts(m) == ["Alec is the user's boss"]


# ---------------------------------------------------------------------- 2. recall
def test_2_recall_in_a_new_session(make_memory: MakeMemory, path: str) -> None:
    first = make_memory(path)
    chat(first, "s1", ("user", "Alec is my boss by the way"),
         ("assistant", "Want me to remember that?"), ("user", "Yes"))  # fmt: skip
    first.close()
    later = make_memory(path)  # a new conversation on the same store
    chat(later, "s2", ("user", "Can you create a task to update Alec on the project?"))
    assert later.service.consolidation.wait_for_consolidation(10)  # the switch consolidated s1
    (boss,) = later.list(user=USER, type="semantic")
    block = later.context("Can you create a task to update Alec on the project?", user=USER)
    line = next(x for x in block.splitlines() if f"[id:{boss.id}]" in x)
    assert line.endswith("Alec is the user's boss")  # e.g. "- [id:…] [Alec] Alec is …"
    hits = later.search("who is Alec", user=USER, type="semantic")
    assert hits and hits[0].memory.id == boss.id


# ---------------------------------------------------------------------- 3. update
def test_3_update_when_information_changes(make_memory: MakeMemory, path: str) -> None:
    m = make_memory(path)
    old = m.remember("Sarah works on the Platform team", category="person", subject="Sarah",
                     user=USER).memory  # fmt: skip
    chat(m, "s1", ("user", "Sarah moved to the Design team last week"))
    result = m.update(old.id, "Sarah works on the Design team")  # the update_memory call
    assert result.action == "updated" and result.memory.id == old.id
    assert facts(m) == ["Sarah works on the Design team"]
    history = [v.content for v in m.history(old.id)]
    assert history == ["Sarah works on the Platform team", "Sarah works on the Design team"]
    m._call(m.service.consolidation.end_session("s1"))  # the rules add nothing conflicting
    assert facts(m) == ["Sarah works on the Design team"]


# ---------------------------------------------------------------------- 4. decline
def test_4_nothing_is_stored_when_the_user_declines(make_memory: MakeMemory, path: str) -> None:
    m = make_memory(path)
    chat(
        m, "s1",
        ("user", "I'm working with James on this project"),
        ("assistant", "Would you like me to remember that James is a project collaborator?"),
        ("user", "No, it's just for this task"),
        ("assistant", "No problem, I won't store that."),
    )  # fmt: skip
    report = m._call(m.service.consolidation.end_session("s1"))
    assert report.sessions == ["s1"] and report.created == []
    assert facts(m) == []
    names = [e.canonical_name for e in m._call(m.service.records.list_entities())]
    assert "James" not in names  # (the speaker, Sam, may be linked by the embedding worker)
    assert m.count(type="episodic") == 4  # the conversation itself is kept


# ---------------------------------------------------------------------- 5 and 6. /memory
def _seed(m: Memory) -> dict[str, str]:
    chat(m, "s1", ("user", "Alec is my boss by the way"), ("assistant", "Shall I remember?"),
         ("user", "Yes"), ("user", "I prefer Thursday due dates"))  # fmt: skip
    m._call(m.service.consolidation.end_session("s1"))
    m.remember("Sarah works on the Design team", category="person", subject="Sarah", user=USER)
    return {n.content: n.id for n in m.list(user=USER, type=["semantic", "opinion"])}


def test_5_memory_command_lists_by_category(make_memory: MakeMemory, path: str) -> None:
    m = make_memory(path)
    ids = _seed(m)
    assert set(ids) == {
        "Alec is the user's boss", "User prefers Thursday due dates",
        "Sarah works on the Design team",
    }  # fmt: skip
    answer = command(m, "/memory")
    alec, sarah = ids["Alec is the user's boss"], ids["Sarah works on the Design team"]
    thursday = ids["User prefers Thursday due dates"]
    expected = "\n\n".join(
        [
            "📝 Your memories:",
            f"**Person**\n• [{alec}] Alec is the user's boss\n"
            f"• [{sarah}] Sarah works on the Design team",
            f"**Preference**\n• [{thursday}] User prefers Thursday due dates",
            "Use /memory delete <id> to remove a memory.",
        ]
    )
    assert answer == expected


def test_6_memory_delete(make_memory: MakeMemory, path: str) -> None:
    m = make_memory(path)
    ids = _seed(m)
    target = ids["User prefers Thursday due dates"]
    assert command(m, f"/memory delete {target}") == "Deleted: 'User prefers Thursday due dates'"
    assert "Thursday" not in command(m, "/memory")
    assert m.get(target).valid_until is not None  # soft delete: history kept
    assert command(m, f"/memory delete {target}") == f"No memory with id {target}."
    assert m.count(type=NodeType.EPISODIC) == 4
