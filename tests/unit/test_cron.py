"""Cron triggers: five-field cron expressions as a role file and ``--every`` give them
(``*/5 * * * *``, ranges, lists, names, nicknames), the next minute each comes round,
and errors that say what is wrong in words (never a regular expression)."""

from __future__ import annotations

from datetime import datetime

import pytest

from memloci.errors import ValidationError
from memloci.runtime.cron import CronError, CronSchedule, looks_like_cron
from memloci.runtime.role import Role
from memloci.runtime.run_config import TriggerConfig

NOW = datetime(2026, 3, 4, 10, 7, 30)  # a Wednesday


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("*/5 * * * *", datetime(2026, 3, 4, 10, 10)),
        ("* * * * *", datetime(2026, 3, 4, 10, 8)),
        ("7 * * * *", datetime(2026, 3, 4, 11, 7)),  # 10:07 itself has begun: the next
        ("0 9 * * mon-fri", datetime(2026, 3, 5, 9, 0)),
        ("0 9 * * MON-FRI", datetime(2026, 3, 5, 9, 0)),
        ("30 8,12,18 * * *", datetime(2026, 3, 4, 12, 30)),
        ("0 0 1 jan,jul *", datetime(2026, 7, 1, 0, 0)),
        ("15 14 1 * *", datetime(2026, 4, 1, 14, 15)),
        ("0 8-18/4 * * *", datetime(2026, 3, 4, 12, 0)),
        ("0 0 * * 7", datetime(2026, 3, 8, 0, 0)),  # 7 is Sunday too
        ("0 0 * * sun", datetime(2026, 3, 8, 0, 0)),
        ("0 0 29 2 *", datetime(2028, 2, 29, 0, 0)),  # the next leap day
        ("0 0 13 * fri", datetime(2026, 3, 6, 0, 0)),  # day of month OR day of week
        ("@hourly", datetime(2026, 3, 4, 11, 0)),
        ("@daily", datetime(2026, 3, 5, 0, 0)),
        ("@weekly", datetime(2026, 3, 8, 0, 0)),
        ("@monthly", datetime(2026, 4, 1, 0, 0)),
        ("@yearly", datetime(2027, 1, 1, 0, 0)),
        ("5/20 * * * *", datetime(2026, 3, 4, 10, 25)),
    ],
)
def test_the_next_minute_a_schedule_comes_round(expression: str, expected: datetime) -> None:
    schedule = CronSchedule.parse(expression)
    assert schedule.next_after(NOW) == expected
    assert schedule.matches(expected)
    assert schedule.next_after(expected) > expected  # strictly after: never twice


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("*/5 * * *", "a cron expression has 5 fields (minute hour day-of-month month"),
        ("61 * * * *", "the minute 61 is out of range: 0 to 59"),
        ("* 24 * * *", "the hour 24 is out of range: 0 to 23"),
        ("* * 0 * *", "the day of month 0 is out of range: 1 to 31"),
        ("* * * foo *", "the month 'foo' is not a number from 1 to 12 or a name (jan-dec)"),
        ("* * * * funday", "the day of week 'funday' is not a number from 0 to 7 or a name"),
        ("*/0 * * * *", "the minute step in '*/0' must be a whole number over 0"),
        ("10-5 * * * *", "the minute range '10-5' runs backwards"),
        ("1,,2 * * * *", "the minute field '1,,2' has an empty item"),
        ("@often", "unknown cron nickname '@often'"),
        ("0 0 31 2 *", "never comes round"),
    ],
)
def test_errors_say_what_is_wrong_in_words(expression: str, words: str) -> None:
    with pytest.raises(CronError) as caught:
        CronSchedule.parse(expression).next_after(NOW)
    assert words in str(caught.value)


def test_what_reads_as_a_cron_expression() -> None:
    assert looks_like_cron("*/5 * * * *") and looks_like_cron("@daily")
    assert looks_like_cron("*/5 * *")  # told it has 3 fields, not that it is no interval
    assert not looks_like_cron("10m") and not looks_like_cron("ten minutes")


def role(triggers: str) -> Role:
    return Role.from_yaml(f"name: ops\ntriggers: {triggers}\n")


def problem(triggers: str) -> str:
    with pytest.raises(ValidationError) as caught:
        role(triggers)
    return str(caught.value)


def test_a_role_file_takes_cron_syntax() -> None:
    [by_schedule, by_every, interval] = role(
        "[{type: cron, schedule: '0 9 * * mon-fri', prompt: Morning summary},"
        " {type: cron, every: '*/5 * * * *'}, {type: cron, every: 10m}]"
    ).triggers
    assert by_schedule.cron is not None and by_schedule.when == "at 0 9 * * mon-fri"
    assert by_schedule.cron.next_after(NOW) == datetime(2026, 3, 5, 9, 0)
    assert by_every.cron is not None and by_every.when == "at */5 * * * *"
    assert interval.cron is None and interval.seconds == 600 and interval.when == "every 10m"


@pytest.mark.parametrize(
    ("triggers", "words"),
    [
        (
            "[{type: cron, schedule: '*/5 * * *'}]",
            "triggers[0]: schedule: a cron expression has 5 fields",
        ),
        (
            "[{type: cron, every: '99 * * * *'}]",
            "triggers[0]: every: the minute 99 is out of range: 0 to 59",
        ),
        (
            "[{type: cron, every: ten minutes}]",
            "every 'ten minutes' is neither an interval (a number and a unit: 30s, 10m",
        ),
        (
            "[{type: cron, every: 10m, schedule: '* * * * *'}]",
            "a cron trigger needs every: (e.g. every: 10m) or schedule:",
        ),
        (
            "[{type: webhook, port: 8080, schedule: '* * * * *'}]",
            "schedule: is for cron triggers, not webhook",
        ),
        (
            "[{type: file_watch, path: x, poll: soon}]",
            "poll 'soon' must be over 0 and at most 1h: a number and a unit",
        ),
    ],
)
def test_a_bad_schedule_is_refused_in_words(triggers: str, words: str) -> None:
    message = problem(triggers)
    assert words in message
    assert "(s|m|h|d)" not in message and "pattern" not in message  # no raw regex


def test_trigger_config_built_in_code() -> None:
    trig = TriggerConfig(type="cron", schedule="@hourly", prompt="Check")
    assert trig.cron is not None and trig.cron.text == "@hourly"
