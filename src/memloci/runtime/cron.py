"""Five-field cron expressions (layer: runtime): parse ``*/5 * * * *`` and find the
next minute it matches.

Fields: minute (0-59), hour (0-23), day of month (1-31), month (1-12 or ``jan``-``dec``)
and day of week (0-7, 0 and 7 both Sunday, or ``sun``-``sat``). Each field is ``*``, a
value, a range ``a-b``, a list ``a,b,c`` of those, with an optional step ``/n``
(``*/15``, ``8-18/2``). The nicknames ``@hourly``, ``@daily`` (``@midnight``),
``@weekly``, ``@monthly`` and ``@yearly`` (``@annually``) are accepted. As in classic
cron, when both day of month and day of week are restricted, a day matching either
runs. Times are the machine's local time. Errors say what is wrong in words.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

NICKNAMES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
# (name, lowest, highest, names for lowest.. in order)
FIELDS: tuple[tuple[str, int, int, list[str]], ...] = (
    ("minute", 0, 59, []),
    ("hour", 0, 23, []),
    ("day of month", 1, 31, []),
    ("month", 1, 12, MONTHS),
    ("day of week", 0, 7, DAYS),
)
SEARCH_DAYS = 366 * 5  # far enough for any day that exists (29 February)


class CronError(ValueError):
    """A cron expression that cannot be read; the message says why in words."""


def looks_like_cron(text: str) -> bool:
    """True for text shaped as a cron expression: an ``@`` nickname, five fields or more,
    or cron's ``*``, ``/`` or ``,`` (``ten minutes`` is not one; ``*/5 * *`` is)."""
    text = text.strip()
    return text.startswith("@") or len(text.split()) >= 5 or any(c in text for c in "*/,")


@dataclass(frozen=True)
class CronSchedule:
    """A parsed five-field expression; :meth:`next_after` finds its next minute."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    any_day: bool  # day of month is ``*``
    any_weekday: bool  # day of week is ``*``

    @classmethod
    def parse(cls, text: str) -> CronSchedule:
        """Read ``text``; :class:`CronError` says what is wrong."""
        source = text.strip()
        expanded = NICKNAMES.get(source.lower(), source)
        if expanded.startswith("@"):
            raise CronError(f"unknown cron nickname {source!r}; use one of {', '.join(NICKNAMES)}")
        parts = expanded.split()
        if len(parts) != 5:
            raise CronError(
                f"a cron expression has 5 fields (minute hour day-of-month month "
                f"day-of-week), {source!r} has {len(parts)}; e.g. '*/5 * * * *'"
            )
        sets = [_field(part, *spec) for part, spec in zip(parts, FIELDS, strict=True)]
        weekdays = frozenset(d % 7 for d in sets[4])
        return cls(
            text=source,
            minutes=sets[0],
            hours=sets[1],
            days=sets[2],
            months=sets[3],
            weekdays=weekdays,
            any_day=parts[2] == "*",
            any_weekday=parts[4] == "*",
        )

    def matches(self, when: datetime) -> bool:
        """Whether the minute ``when`` falls in is one of the schedule's."""
        return (
            when.minute in self.minutes
            and when.hour in self.hours
            and when.month in self.months
            and self._day(when)
        )

    def next_after(self, when: datetime) -> datetime:
        """The first matching minute strictly after ``when`` (same time zone as ``when``)."""
        start = when.replace(second=0, microsecond=0) + timedelta(minutes=1)
        day = start.replace(hour=0, minute=0)
        for offset in range(SEARCH_DAYS):
            date = day + timedelta(days=offset)
            if date.month not in self.months or not self._day(date):
                continue
            for hour in sorted(self.hours):
                for minute in sorted(self.minutes):
                    moment = date.replace(hour=hour, minute=minute)
                    if moment >= start:
                        return moment
        raise CronError(f"the cron expression {self.text!r} never comes round (no such date)")

    def _day(self, when: datetime) -> bool:
        in_month = when.day in self.days
        in_week = (when.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return in_month and in_week
        return in_month or in_week


def _field(text: str, name: str, low: int, high: int, names: list[str]) -> frozenset[int]:
    out: set[int] = set()
    for item in text.split(","):
        if not item:
            raise CronError(f"the {name} field {text!r} has an empty item in its list")
        span, slash, step_text = item.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) == 0:
                raise CronError(f"the {name} step in {item!r} must be a whole number over 0")
            step = int(step_text)
        if span == "*":
            first, last = low, high
        elif "-" in span:
            a, _, b = span.partition("-")
            first, last = _value(a, name, low, high, names), _value(b, name, low, high, names)
            if first > last:
                raise CronError(f"the {name} range {span!r} runs backwards")
        else:
            first = _value(span, name, low, high, names)
            last = high if slash else first
        out.update(range(first, last + 1, step))
    return frozenset(out)


def _value(text: str, name: str, low: int, high: int, names: list[str]) -> int:
    key = text.strip().lower()
    if key in names:
        return names.index(key) + low
    if not key.isdigit():
        known = f" or a name ({names[0]}-{names[-1]})" if names else ""
        raise CronError(f"the {name} {text!r} is not a number from {low} to {high}{known}")
    value = int(key)
    if not low <= value <= high:
        raise CronError(f"the {name} {value} is out of range: {low} to {high}")
    return value


__all__ = ["CronError", "CronSchedule", "looks_like_cron"]
