"""The retrieval benchmark reads corpora other than LoCoMo's dev split: other time
formats, turns without a session or speaker, conversations without a speaker list. It
must run on them and score them, not stop at the first unfamiliar field."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from common import chat_split, parse_time, turn_time  # noqa: E402


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("2023-05-08T13:56:00Z", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("2023-05-08 13:56", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("2023-05-08", datetime(2023, 5, 8, tzinfo=UTC)),
        ("2023/05/20 (Sat) 02:21", datetime(2023, 5, 20, 2, 21, tzinfo=UTC)),
        ("8 May 2023", datetime(2023, 5, 8, tzinfo=UTC)),
        ("May 8, 2023", datetime(2023, 5, 8, tzinfo=UTC)),
        # REALTALK's form, and dates with slashes: day first, month first when it must be
        ("29.12.2023, 00:51:12", datetime(2023, 12, 29, 0, 51, 12, tzinfo=UTC)),
        ("29.12.2023", datetime(2023, 12, 29, tzinfo=UTC)),
        ("05/08/2023", datetime(2023, 8, 5, tzinfo=UTC)),
        ("12/29/2023 00:51", datetime(2023, 12, 29, 0, 51, tzinfo=UTC)),
        ("", None),
        (None, None),
    ],
)
def test_times_in_common_forms_are_read(text: str | None, expected: datetime | None) -> None:
    assert parse_time(text) == expected


def test_an_unreadable_time_is_reported_once_and_stored_without_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert parse_time("the day after the party") is None
    assert parse_time("the day after the party") is None
    assert capsys.readouterr().err.count("unreadable time") == 1


def test_a_turn_without_a_time_takes_its_sessions() -> None:
    conv = {"sessions": [{"session_id": "S2", "date_time": "2024-01-03 09:00"}]}
    assert turn_time(conv, {"session_id": "S2"}) == datetime(2024, 1, 3, 9, tzinfo=UTC)
    assert turn_time(conv, {"session_id": "S9"}) is None


def test_role_and_full_name_splits_work_without_a_speaker_list() -> None:
    conv = {
        "conv_id": "c",
        "turns": [
            {"id": "1", "speaker": "Ana Silva", "text": "Hi. I moved."},
            {"id": "2", "speaker": "Ben", "text": "Where to?"},
        ],
        "questions": [],
    }
    roles = chat_split([conv], "roles")[0]["turns"]
    assert [t["speaker"] for t in roles] == ["user", "user", "assistant"]
    full = chat_split([conv], "fullnames")[0]["turns"]
    assert {t["speaker"] for t in full} == {"Ana Silva Okafor", "Ben Lindqvist"}


def test_the_roleq_split_asks_about_the_speakers_by_role() -> None:
    conv = {
        "conv_id": "c",
        "speakers": ["Ana", "Ben"],
        "turns": [{"id": "1", "speaker": "Ana", "text": "I paint."}],
        "questions": [{"question": "What did Ana's friend Ben paint?", "evidence": ["1"]}],
    }
    out = chat_split([conv], "roleq")[0]
    assert out["questions"][0]["question"] == "What did the user's friend the assistant paint?"
    assert out["turns"][0]["speaker"] == "user"
    assert conv["questions"][0]["question"] == "What did Ana's friend Ben paint?"  # a copy


def test_the_name_splits_label_and_ask_as_they_say() -> None:
    conv = {
        "conv_id": "c",
        "speakers": ["Caroline", "Melanie"],
        "turns": [
            {"id": "1", "session_id": "D1", "speaker": "Caroline", "text": "I paint."},
            {"id": "2", "session_id": "D2", "speaker": "Melanie", "text": "I run."},
        ],
        "questions": [{"question": "What does Caroline paint for Melanie?", "evidence": ["1"]}],
    }
    lower = chat_split([conv], "lowerlabels")[0]
    assert [t["speaker"] for t in lower["turns"]] == ["caroline", "melanie"]
    asked = chat_split([conv, conv], "misspelt")
    assert asked[0]["questions"][0]["question"] == "What does Carroline paint for Mellanie?"
    assert asked[1]["questions"][0]["question"] == "What does Carolina paint for Melania?"
    relabelled = chat_split([conv], "relabelled")[0]["turns"]
    assert [t["speaker"] for t in relabelled] == ["Caroline", "Melanie Lindqvist"]


def test_the_filler_split_adds_fillers_that_are_never_evidence() -> None:
    turns = [{"id": str(i), "speaker": "AB"[i % 2], "text": f"Said {i}."} for i in range(200)]
    conv = {"conv_id": "c", "turns": turns, "questions": []}
    out = chat_split([conv], "fillers")[0]["turns"]
    fillers = [t for t in out if t["id"].endswith("#f")]
    assert 30 <= len(fillers) <= 90  # about 30 % of 200
    said = [(t["id"], t["text"]) for t in out if not t["id"].endswith("#f")]
    assert said == [(t["id"], t["text"]) for t in turns]  # the rest as it was
    assert all(out[i - 1]["id"] == t["id"][:-2] for i, t in enumerate(out) if t in fillers)
    assert out == chat_split([conv], "fillers")[0]["turns"]  # the same every run


def test_the_pinpoint_split_scores_the_message_that_holds_the_answer() -> None:
    turns = [
        {"id": "D1:9", "speaker": "John", "text": "Any suggestions for our team trip?"},
        {
            "id": "D1:10",
            "speaker": "Tim",
            "text": "Edinburgh, Scotland would be great. Plus, it's a beautiful city.",
        },
    ]
    questions = [
        {"question": "What city did Tim suggest?", "answer": "Edinburgh", "evidence": ["D1:10"]},
        {"question": "What did Tim say?", "answer": "Yes", "evidence": ["D1:10"]},
    ]
    out = chat_split([{"conv_id": "c", "turns": turns, "questions": questions}], "pinpoint")[0]
    assert [(t["id"], t["text"]) for t in out["turns"]] == [
        ("D1:9.1", "Any suggestions for our team trip?"),
        ("D1:10.1", "Edinburgh, Scotland would be great."),
        ("D1:10.2", "Plus, it's a beautiful city."),
    ]
    # the message with a word of the answer; when none has one, every message of the turn
    assert [q["evidence"] for q in out["questions"]] == [["D1:10.1"], ["D1:10.1", "D1:10.2"]]


def test_the_renamed_split_asks_by_names_no_memory_holds() -> None:
    turns = [
        {"id": "D1:1", "speaker": "Caroline", "text": "I went to a support group. Melanie?"},
        {"id": "D1:2", "speaker": "Melanie", "text": "I painted a sunrise."},
    ]
    questions = [
        {"question": "What did Melanie paint?", "answer": "a sunrise", "evidence": ["D1:2"]},
        {"question": "Where did Caroline go?", "answer": "support group", "evidence": ["D1:1"]},
    ]
    conv = {"conv_id": "c", "speakers": ["Caroline", "Melanie"], "turns": turns}
    out = chat_split([{**conv, "questions": questions}], "renamed")[0]
    assert [q["question"] for q in out["questions"]] == [
        "What did Kim paint?",
        "Where did Robin go?",
    ]
    # the messages and their evidence as in pinpoint; the memories keep their names
    assert [q["evidence"] for q in out["questions"]] == [["D1:2.1"], ["D1:1.1"]]
    assert out["turns"][0]["speaker"] == "Caroline" and "Melanie?" in out["turns"][1]["text"]


def test_the_benchmark_runs_on_a_corpus_in_another_format(tmp_path: Path) -> None:
    turns = [
        ("1", "Priya", "2024-02-01T10:00:00Z", "I adopted a greyhound called Pixel last week."),
        ("2", None, "2024-02-01T10:01:00Z", "Lovely! How is she settling in?"),
        ("3", "Priya", None, "She sleeps on the sofa all day and snores."),
        ("4", "Tomás", "2024-03-10 18:30", "My new job at the observatory starts Monday."),
        ("5", "Priya", "10 March 2024", "Congratulations on the observatory job!"),
    ]
    conv = {
        "conv_id": "chat-1",
        "sessions": [{"session_id": "a", "date_time": "2024-02-01"}],
        "turns": [
            {"id": i, "speaker": who, "date_time": when, "text": text}
            | ({"session_id": "a"} if int(i) < 4 else {})
            for i, who, when, text in turns
        ],
        "questions": [
            {"question": "What is the name of Priya's dog?", "evidence": ["1"]},
            {"question": "Where does Tomás work now?", "evidence": ["4"]},
            {"question": "Unanswerable?", "evidence": ["9"], "adversarial": True},
        ],
    }
    data = tmp_path / "chats.jsonl"
    data.write_text(json.dumps(conv) + "\n", encoding="utf-8")
    out = tmp_path / "out.json"
    run = subprocess.run(
        [sys.executable, str(BENCH / "retrieval_bench.py"), "--data", str(data),
         "--facts", str(data), "--splits", "turns,facts,roles", "--json", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    figures = json.loads(out.read_text())
    for split in ("turns", "facts", "roles"):
        assert figures[split]["hybrid"]["any@10"] == 1.0, (split, figures[split])


def test_a_settled_bench_store_has_consolidated_the_sessions_left_behind(
    tmp_path: Path,
) -> None:
    """``flush()`` waits for the embedding only; the benchmarks score a store whose
    earlier sessions the background has consolidated too (on PostgreSQL their facts came
    after ``flush()``), so both backends are scored on the same store."""
    from common import settle
    from memloci import Memory

    mem = Memory(str(tmp_path / "b.db"), reinforce_on_search=False)
    try:
        for session in ("s1", "s2", "s3"):
            for text in ("I adopted a puppy named Max", "My sister lives in Porto"):
                mem.add(text, user="c1", session=session, speaker="Ana")
        settle(mem)
        pending = mem.service.store.jobs.pending_sessions("default", user="c1")
        assert [p.session for p in pending] == ["s3"]  # only the current one waits
    finally:
        mem.close()
