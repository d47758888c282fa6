"""The rules extractor (no LLM configured), driven as a user would: turns in a session,
then ``end_session``. A later opposite opinion or a correction supersedes the earlier
fact instead of standing beside it, and every cue of a sentence is taken."""

from __future__ import annotations

from consolidation_helpers import turns

from memloci import Memory


def _end(mem: Memory, session: str) -> None:
    report = mem._call(mem.service.consolidation.end_session(session))
    assert report.extractor == "rules" and report.sessions == [session]


def _current(mem: Memory) -> list[str]:
    return sorted(n.content for n in mem.list(type=["semantic", "opinion"], user="sam"))


def _all(mem: Memory) -> dict[str, bool]:
    nodes = mem.list(type=["semantic", "opinion"], user="sam", include_forgotten=True)
    return {n.content: n.is_current for n in nodes}


def test_a_later_opposite_opinion_supersedes_the_earlier(mem: Memory) -> None:
    turns(mem, "s1", "I love Python")
    _end(mem, "s1")
    assert _current(mem) == ["User loves Python"]
    turns(mem, "s2", "I hate Python")
    _end(mem, "s2")
    assert _current(mem) == ["User hates Python"]
    assert _all(mem) == {"User loves Python": False, "User hates Python": True}  # history kept
    turns(mem, "s3", "I don't like Python")  # a negated opinion of the same object
    _end(mem, "s3")
    assert _current(mem) == ["User dislikes Python"]
    turns(mem, "s4", "I love Rust")  # another object: both stand
    _end(mem, "s4")
    assert _current(mem) == ["User dislikes Python", "User loves Rust"]


def test_an_opinion_that_has_ended_replaces_it(mem: Memory) -> None:
    turns(mem, "s1", "I love Python")
    _end(mem, "s1")
    turns(mem, "s2", "I don't love Python anymore")
    _end(mem, "s2")
    assert _current(mem) == ["User no longer loves Python"]
    turns(mem, "s3", "I like jazz", "I no longer like jazz.")
    _end(mem, "s3")
    assert _current(mem) == ["User no longer likes jazz", "User no longer loves Python"]
    turns(mem, "s4", "I don't enjoy running any more")
    _end(mem, "s4")
    assert "User no longer enjoys running" in _current(mem)


def test_a_new_language_to_answer_in_replaces_the_old(mem: Memory) -> None:
    turns(mem, "s1", "From now on, always answer in French")
    _end(mem, "s1")
    turns(mem, "s2", "From now on, always answer in Spanish", "Always use metric units")
    _end(mem, "s2")
    rules = mem.list(type="procedural", user="sam")
    assert sorted(n.content for n in rules) == [
        "User instruction: always answer in Spanish",
        "User instruction: always use metric units",
    ]  # fmt: skip  (other instructions stand beside it)


def test_a_reversed_choice_supersedes(mem: Memory) -> None:
    turns(mem, "s1", "I prefer tea over coffee")
    _end(mem, "s1")
    turns(mem, "s2", "I prefer coffee over tea")
    _end(mem, "s2")
    assert _current(mem) == ["User prefers coffee over tea"]


def test_in_one_session_the_last_word_stands(mem: Memory) -> None:
    turns(mem, "s1", "I love Python", "Hmm, it's complicated.", "I hate Python")
    _end(mem, "s1")
    assert _current(mem) == ["User hates Python"]


def test_every_cue_of_a_sentence_is_taken(mem: Memory) -> None:
    turns(mem, "s1", "I work at Globex and I live in Lisbon")
    _end(mem, "s1")
    assert _current(mem) == ["User lives in Lisbon", "User works at Globex"]
    turns(mem, "s2", "Alec is my boss, and I prefer tea over coffee")
    _end(mem, "s2")
    assert "Alec is the user's boss" in _current(mem)
    assert "User prefers tea over coffee" in _current(mem)


def test_a_correction_supersedes_the_fact_it_corrects(mem: Memory) -> None:
    turns(mem, "s1", "I work at TechCorp.")
    _end(mem, "s1")
    assert _current(mem) == ["User works at TechCorp"]
    turns(mem, "s2", "Actually I work at Globex now, not TechCorp")
    _end(mem, "s2")
    assert _current(mem) == ["User works at Globex"]
    assert _all(mem) == {"User works at TechCorp": False, "User works at Globex": True}
    turns(mem, "s3", "I live in Lisbon. Actually, I live in Porto now, not Lisbon anymore.")
    _end(mem, "s3")
    assert _current(mem) == ["User lives in Porto", "User works at Globex"]


def test_a_bare_negation_stores_nothing(mem: Memory) -> None:
    turns(mem, "s1", "I don't work at TechCorp", "I don't live in Lisbon")
    mem._call(mem.service.consolidation.end_session("s1"))
    assert _current(mem) == []


def test_an_ended_fact_replaces_what_it_ends(mem: Memory) -> None:
    turns(mem, "s1", "I live in Lisbon", "I work at TechCorp")
    _end(mem, "s1")
    assert _current(mem) == ["User lives in Lisbon", "User works at TechCorp"]
    turns(mem, "s2", "I no longer live in Lisbon")
    _end(mem, "s2")
    assert _current(mem) == ["User no longer lives in Lisbon", "User works at TechCorp"]
    assert _all(mem)["User lives in Lisbon"] is False  # history kept
    turns(mem, "s3", "I don't work at TechCorp anymore.")
    _end(mem, "s3")
    assert _current(mem) == ["User no longer lives in Lisbon", "User no longer works at TechCorp"]
    turns(mem, "s4", "I live in Porto")  # a new home replaces the ended one
    _end(mem, "s4")
    assert _current(mem) == ["User lives in Porto", "User no longer works at TechCorp"]


def test_an_ended_fact_about_something_else_leaves_the_known_one(mem: Memory) -> None:
    turns(mem, "s1", "I live in Lisbon")
    _end(mem, "s1")
    turns(mem, "s2", "I moved away from Paris", "I quit Globex")
    _end(mem, "s2")
    assert _current(mem) == [
        "User lives in Lisbon", "User no longer lives in Paris", "User no longer works at Globex"
    ]  # fmt: skip


def test_a_new_phone_number_or_email_replaces_the_old(mem: Memory) -> None:
    turns(mem, "s1", "My phone number is 555-0100", "My email is sam@example.com.")
    _end(mem, "s1")
    assert _current(mem) == [
        "User's email address is sam@example.com",
        "User's phone number is 555-0100",
    ]
    turns(
        mem, "s2", "I got a new number: +351 912 345 678",
        "Btw, my email changed to sam.k@example.org!", "My work email is sam@acme.com",
        "Call 555-0199 for pizza", "my number is 42",
    )  # fmt: skip
    _end(mem, "s2")
    assert _current(mem) == [
        "User's email address is sam.k@example.org",
        "User's phone number is +351 912 345 678",
        "User's work email address is sam@acme.com",
    ]
    assert _all(mem)["User's phone number is 555-0100"] is False  # history kept
    turns(mem, "s3", "You can reach me at (555) 010-2000")
    _end(mem, "s3")
    assert "User's phone number is (555) 010-2000" in _current(mem)
    assert "User's phone number is +351 912 345 678" not in _current(mem)
