"""Context v1: the "Your Memory" block for the system prompt."""

from __future__ import annotations

import re

import pytest

from memloci import Memory
from memloci.context import MEMORY_INTRO, estimate_tokens
from pgtest import both_backends

WORDS = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
    "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
    "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu",
]  # fmt: skip
HANDLE = re.compile(r"\[id:([A-Za-z0-9]{8})\]")


def distinct_facts(mem: Memory, *, categories: bool = False) -> list[str]:
    """26 facts different enough never to count as near-duplicates of each other."""
    ids = []
    for i, w in enumerate(WORDS):
        text = f"Fact {i}: {w} {WORDS[(i + 9) % 26]} {WORDS[(i + 17) % 26]} matter to the user"
        res = mem.remember(text, category=f"cat {w}" if categories else "notes")
        assert res.action == "created"
        ids.append(res.memory.id)
    return ids


def seed(mem: Memory) -> dict[str, str]:
    ids = {
        "tea": mem.remember("The user likes green tea", category="preference").memory.id,
        "boss": mem.remember(
            "Dana is the user's manager", category="person", subject="Dana"
        ).memory.id,
        "general": mem.remember("The user has two cats").memory.id,
        "coffee": mem.remember("The user dislikes instant coffee", category="Preference").memory.id,
        "proc": mem.learn_procedure("Always answer in British English").memory.id,
    }
    mem.add("yesterday we talked about the garden party")
    return ids


def test_groups_by_category_with_id_handles(mem: Memory) -> None:
    ids = seed(mem)
    text = mem.context()
    assert "## Your Memory" in text and MEMORY_INTRO in text
    headings = re.findall(r"^### (.+)$", text, flags=re.M)
    assert headings == ["General", "Person", "Preference"]
    sections = dict(zip(headings, re.split(r"^### .+$", text, flags=re.M)[1:], strict=True))
    assert HANDLE.findall(sections["General"]) == [ids["general"]]
    assert f"- [id:{ids['boss']}] [Dana] Dana is the user's manager" in sections["Person"]
    assert HANDLE.findall(sections["Preference"]) == [ids["tea"], ids["coffee"]]  # by created time
    assert "garden party" not in text  # turns are not facts


def test_procedures_come_first_as_standing_instructions(mem: Memory) -> None:
    ids = seed(mem)
    text = mem.context()
    assert text.startswith("## Learned Procedures and Policies")
    head, _, tail = text.partition("## Your Memory")
    # reference 004's line, with the handle at the end for record_procedure_use
    assert f"- [procedure] Always answer in British English [id:{ids['proc']}]" in head
    assert ids["proc"] not in tail


def test_at_most_twenty_procedures(mem: Memory) -> None:
    for i in range(25):
        mem.learn_procedure(f"Procedure {WORDS[i]}: always do step {i}")
    head = mem.context(budget=5000).partition("## Your Memory")[0]
    assert len(HANDLE.findall(head)) == 20


def test_twenty_standing_instructions_fit_the_default_budget_with_a_prompt(mem: Memory) -> None:
    """Reference 004: up to 20 of the most recent procedures, as ``- [category] text``
    lines; they take up to half the budget, beside "Your Memory"'s share."""
    rules = [
        ("deployment", "Always run tests before deploying to production"),
        ("code_review", "Check for SQL injection in any database queries"),
        ("communication", "Summarize changes in bullet points for the user"),
    ]
    for i in range(22):
        category, text = rules[i % 3]
        mem.learn_procedure(f"{text}, rule {WORDS[i]}", category=category)
    mem.remember("The user likes green tea", category="preference")
    mem.flush()
    text = mem.context("what tea does the user like?")  # the default budget, 1000
    assert estimate_tokens(text) <= 1000
    head, _, rest = text.partition("## Your Memory")
    lines = [ln for ln in head.splitlines() if ln.startswith("- ")]
    assert len(lines) == 20
    line = re.compile(r"- \[(deployment|code_review|communication)\] .+ \[id:\w{8}\]")
    assert all(line.fullmatch(ln) for ln in lines), lines
    assert "rule " + WORDS[0] not in head and "rule " + WORDS[21] in head  # the 20 newest
    assert "green tea" in rest


def test_relevant_conversation_comes_after_the_cacheable_part(mem: Memory) -> None:
    seed(mem)
    mem.flush()
    text = mem.context("how was the garden party?")
    assert "## Relevant Past Conversations" in text
    assert text.index("## Your Memory") < text.index("## Relevant Past Conversations")
    assert "garden party" in text.partition("## Relevant Past Conversations")[2]
    assert text.startswith(mem.context())  # the cacheable part does not depend on the prompt


def test_long_prompt_still_gives_context(mem: Memory) -> None:
    ids = seed(mem)
    prompt = "Please summarise this pasted report: " + "quarterly numbers went up. " * 200
    text = mem.context(prompt)
    assert ids["tea"] in text and "## Your Memory" in text


def test_empty_memory_gives_empty_context(mem: Memory) -> None:
    assert mem.context() == ""
    assert mem.context("anything at all?") == ""


@both_backends
def test_forgotten_and_superseded_facts_are_left_out(mem: Memory) -> None:
    gone = mem.remember("The user's old phone number is 123")
    old = mem.remember("The user lives in Paris")
    new = mem.correct(old.memory.id, "The user lives in Lyon")
    mem.forget(gone.memory.id)
    handles = HANDLE.findall(mem.context())
    assert handles == [new.memory.id]


@both_backends
def test_byte_identical_for_the_same_memory_set(make_memory, db_path: str) -> None:
    mem = make_memory()
    seed(mem)
    for i in range(10):
        mem.remember(f"Note {WORDS[i]}: the user mentioned item {i}", category=f"topic {i % 3}")
    mem.flush()
    first = mem.context()
    assert mem.context() == first
    with_prompt = mem.context("green tea or coffee?")
    mem.flush()
    assert mem.context("green tea or coffee?") == with_prompt
    small = mem.context(budget=150)
    mem.flush()
    assert mem.context(budget=150) == small
    mem.close()
    reopened = make_memory(db_path)
    assert reopened.context() == first
    assert reopened.context(budget=150) == small
    assert reopened.context("green tea or coffee?") == with_prompt


@pytest.mark.parametrize("budget", [60, 100, 150, 200, 300, 500, 1000])
def test_stays_within_budget_when_facts_overflow(mem: Memory, budget: int) -> None:
    distinct_facts(mem)
    for i in range(3):
        mem.learn_procedure(f"Procedure {WORDS[i]}: always do step {i}")
    text = mem.context(budget=budget)
    assert estimate_tokens(text) <= budget
    facts = len(HANDLE.findall(text.partition("## Your Memory")[2]))
    if budget <= 500:
        assert facts < len(WORDS)  # something had to give
    if budget >= 500:
        assert facts >= 5  # and the room (40 % of the budget) was used


def test_prompt_relevant_facts_that_do_not_fit_follow_the_cacheable_part(mem: Memory) -> None:
    ids = distinct_facts(mem)
    mem.flush()
    text = mem.context("what about alpha?", budget=1000)
    cacheable, _, rest = text.partition("## Relevant Facts")
    assert HANDLE.findall(cacheable)
    assert ids[0] not in HANDLE.findall(cacheable)  # the newest facts won the bounded room
    assert ids[0] in HANDLE.findall(rest)  # the prompt brings it up after it
    # same cacheable bytes whatever the prompt
    assert cacheable == mem.context_parts("and bravo?", budget=1000)[0] + "\n"
    assert estimate_tokens(text) <= 1000


@pytest.mark.parametrize("prompt", [None, "what about zulu and the garden?"])
@pytest.mark.parametrize("budget", [100, 300, 500])
def test_stays_within_budget_with_many_categories(
    mem: Memory, budget: int, prompt: str | None
) -> None:
    distinct_facts(mem, categories=True)
    for i in range(3):
        mem.learn_procedure(f"Procedure {WORDS[i]}: always do step {i}")
    for i in range(8):
        mem.add(f"we talked about the garden and {WORDS[i]} for a long while, turn {i}")
    mem.flush()
    text = mem.context(prompt, budget=budget)
    assert estimate_tokens(text) <= budget
    if budget >= 500:
        # the room is used: facts in "Your Memory" (without a prompt it may take the whole
        # budget) or brought up by the prompt
        assert len(HANDLE.findall(text.partition("## Learned Procedures and Policies")[2])) >= 5


@both_backends
def test_context_respects_user_visibility(mem: Memory) -> None:
    alice = mem.remember("Alice is allergic to shellfish", user="alice")
    bob = mem.remember("Bob is allergic to pollen", user="bob")
    shared = mem.remember("The office closes at six", scope="global")
    alice_view = set(HANDLE.findall(mem.context(user="alice")))
    assert alice_view == {alice.memory.id, shared.memory.id}
    assert bob.memory.id not in alice_view


def test_estimate_tokens_is_deterministic() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("x" * 400) == 100


DYNAMIC = (
    "## Procedures for This Task",
    "## Relevant Facts",
    "## People and Things",
    "## Timeline",
    "## Relevant Past",
)


def cacheable(text: str) -> str:
    cut = min((i for h in DYNAMIC if (i := text.find("\n" + h)) >= 0), default=len(text))
    return text[:cut].rstrip("\n")


@both_backends
def test_cacheable_part_is_stable_far_over_the_budget(make_memory, db_path: str) -> None:
    from datetime import timedelta

    from memloci.models import utcnow

    mem = make_memory(consolidate_on_session_switch=False)
    for i in range(500):
        a, b, c = WORDS[i % 26], WORDS[(i // 26) % 26], WORDS[(i * 7) % 26]
        mem.remember(f"Item {i}: Alec keeps {a} {b} {c} notes in Python file {i}")
    procs = [mem.learn_procedure(f"Procedure {WORDS[i]}: always do step {i}") for i in range(25)]
    mem.add("Alec asked about Python details yesterday", session="s1")
    mem.flush()
    base = cacheable(mem.context("what about the weather?"))
    assert len(HANDLE.findall(base)) < 500  # far over the budget
    head = mem.context(budget=5000).partition("## Your Memory")[0]  # the 20 most recent
    assert set(HANDLE.findall(head)) == {p.memory.id for p in procs[5:]}
    for prompt in ("tell me about Alec", "Python details", "what is in file 42?"):
        assert cacheable(mem.context(prompt)) == base
    for query in ("Alec", "Python", "notes"):
        mem.search(query)  # reads reinforce confidence: not part of the block
    mem.flush()
    assert cacheable(mem.context("tell me about Alec")) == base
    mem._call(mem.service.consolidation.maintain(now=utcnow() + timedelta(days=30)))  # decay
    assert cacheable(mem.context("Python details")) == base
    mem.close()
    assert cacheable(make_memory(db_path).context("tell me about Alec")) == base


def test_triggered_procedures_appear_only_for_matching_goals(mem: Memory) -> None:
    always = mem.learn_procedure("Always answer in British English").memory
    weather = mem.learn_procedure(
        "Check two forecast sources before answering", triggers={"goal_contains": ["weather"]}
    ).memory
    base = mem.context()
    assert always.id in base and weather.id not in base
    asked = mem.context("What will the weather be like in Lisbon?")
    head, _, task = asked.partition("## Procedures for This Task")
    assert cacheable(asked) == cacheable(base) and weather.id in task and weather.id not in head
    assert weather.id not in mem.context("Book me a table for two")


def test_procedure_track_record(mem: Memory, make_memory) -> None:
    proc = mem.learn_procedure(
        "Run the tests before deploying", triggers={"goal_contains": ["deploy"]}
    )
    pid = proc.memory.id
    mem.record_procedure_use(pid, success=True, duration_ms=1000)
    mem.record_procedure_use(pid, success=False, duration_ms=3000)
    node = mem.record_procedure_use(pid)
    assert node.procedure is not None
    assert (node.procedure.times_used, node.procedure.success_rate) == (3, 0.5)
    assert node.procedure.avg_duration_ms == 2000
    from memloci.errors import NotFoundError, ValidationError

    with pytest.raises(NotFoundError):
        mem.record_procedure_use(mem.remember("The user likes tea a lot").memory.id)
    with pytest.raises(ValidationError):
        mem.record_procedure_use(pid, duration_ms=-5)


def test_procedure_uses_are_counted_atomically(mem: Memory) -> None:
    import threading

    pid = mem.learn_procedure("Summarise the meeting notes after each call").memory.id
    threads = [
        threading.Thread(target=lambda: [mem.record_procedure_use(pid) for _ in range(10)])
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    node = mem.get(pid)
    assert node.procedure is not None and node.procedure.times_used == 80
