"""Time phrases in queries (layer: retrieval): "in May 2023", "on 1 May, 2022",
"between 11 and 15 August 2023", "before June 2023", "last week" → a time window.

A window is a soft constraint: the ``time`` strategy ranks the memories inside it
(:mod:`memloci.retrieval.graph`); nothing outside is filtered away. Conversations
report events *after* they happen ("yesterday", "last Friday"), so a window whose end
comes from a phrase is kept open :data:`REPORT_LAG` longer. A month without a year
("in May", "during June") is the latest such month that has begun by ``now``: asked in
November, "in June" is this year's June, asked in March, last year's; when no memory
of that June matches, the search looks a year earlier, and so on
(:meth:`TimeWindow.year_before`, :data:`YEARS_BACK`): a chat imported from two years ago
is asked about its own June. A day without a year ("on 13th January", "Jan 13", "the
2nd of May") is the latest such day begun, looked for a year earlier likewise; a date
in digits ("13/01/2024", "29.12.2023") is read day first, month first when it must be.
A holiday said as when ("on Christmas Eve", "over New Year's", "around Halloween", "at
Thanksgiving 2023", "over Easter", "on Mother's Day") is its days (:func:`_holiday`;
movable feasts found per year; "for Christmas" is not when). A
week or third of a month ("the second week of November", "mid-August", "the end of
June") is that part of it (:func:`_part`).

Also here: "after the trip" / "before the move" (no date) give the direction the
temporal chain walks.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta

REPORT_LAG = timedelta(days=7)  # one week: how long after an event it is still "recent news"
YEARS_BACK = 5  # earlier years a month named without a year is looked for in
SHORTLY = timedelta(days=31)  # "the week / the Sunday / two weeks before X": within a month

_MONTH_NAMES = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_M = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_D = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_Y = r"(?:19|20)\d{2}"
# one date: "1 May, 2022" / "May 1, 2022" / "2022-05-01" / "13/01/2024" / "May 2022" /
# "2022" / a day without a year: "13th January", "Jan 13", "the 13th of January"
_DATE = (
    rf"(?P<d1>{_D})\s+(?:of\s+)?(?P<m1>{_M})\.?,?\s*(?P<y1>{_Y})"
    rf"|(?P<m2>{_M})\.?\s+(?P<d2>{_D}),?\s*(?P<y2>{_Y})"
    rf"|(?P<y3>{_Y})-(?P<m3>\d{{2}})-(?P<d3>\d{{2}})"
    rf"|(?P<a6>\d{{1,2}})(?P<sep>[/.])(?P<b6>\d{{1,2}})(?P=sep)(?P<y6>{_Y})"
    rf"|(?P<m4>{_M})\.?,?\s+(?P<y4>{_Y})"
    rf"|(?P<y5>{_Y})"
    rf"|(?P<d7>{_D})\s+(?:of\s+)?(?P<m7>{_M})(?![\w-])"
    rf"|(?P<m8>{_M})\.?\s+(?P<d8>{_D})(?![\w:/.-])"
)
_DATE_RE = re.compile(rf"\b(?:{_DATE})\b", re.IGNORECASE)
_RANGE = re.compile(
    rf"\bbetween\s+(?:(?P<da>{_D})\s+and\s+(?P<db>{_D})\s+(?P<ma>{_M})|(?P<mb>{_M})\s+(?P<dc>{_D})"
    rf"\s+and\s+(?:(?P<mc>{_M})\s+)?(?P<dd>{_D})),?\s*(?P<y>{_Y})\b",
    re.IGNORECASE,
)
_BOUND = re.compile(
    r"\b(?P<rel>before|after|since|until|by|prior to)\s+(?:the\s+)?"
    r"(?:(?P<edge>end|beginning|start)\s+of\s+(?:the\s+)?)?$",
    re.IGNORECASE,
)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_RELATIVE = re.compile(
    r"\b(?P<rel>the\s+day\s+before\s+yesterday|yesterday|today|tonight|last\s+night"
    r"|this\s+(?:morning|afternoon|evening)|last\s+(?:week|month|year|weekend)"
    r"|(?:over\s+the|this\s+past)\s+weekend"
    r"|this\s+(?:week|month|year)|a\s+few\s+days\s+ago|the\s+other\s+day"
    rf"|(?:last|on|this\s+past)\s+(?P<wd>{'|'.join(_WEEKDAYS)})"
    r"|(?P<n>\d+|a|one|two|three)\s+(?P<unit>days?|weeks?|months?|years?)\s+ago)\b",
    re.IGNORECASE,
)
_SHORTLY = re.compile(
    r"\b(?:days?|nights?|weeks?|weekend|month|monday|tuesday|wednesday|thursday|friday"
    r"|saturday|sunday)\s*$",
    re.IGNORECASE,
)
# "in May", "during June": a month named alone (no day, no year after it)
_BARE_MONTH = re.compile(
    rf"\b(?:(?:in|during)\s+(?:early\s+|late\s+|mid[- ]?)?|(?:early|mid|late)[- ]"
    rf"|(?:week|beginning|start|end|middle)\s+of\s+)(?P<m>{_M})\b(?!\.?,?\s*(?:{_D}|{_Y})\b)",
    re.IGNORECASE,
)
# the part of a month a phrase names: "the second week of November", "early May 2023",
# "mid-August", "the end of June"
_PART = re.compile(
    r"\b(?:(?P<nth>first|1st|second|2nd|third|3rd|fourth|4th|last)\s+week"
    r"|(?P<third>early|mid|middle|late|beginning|start|end))(?:\s+of)?(?:\s+the\s+month)?"
    r"(?:\s+of)?[\s-]*$",
    re.IGNORECASE,
)
_WEEK = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "fourth": 3, "4th": 3}
_THIRD = {"early": 0, "beginning": 0, "start": 0, "mid": 1, "middle": 1, "late": 2, "end": 2}
LOOSE = timedelta(days=3)  # how far past a named week or third of a month people still mean
# a holiday said as when: "on Christmas Eve", "over New Year's", "at Halloween 2023"
# ("for Christmas" is not when: a present is bought before)
_HOLIDAY = re.compile(
    r"\b(?P<pre>on|at|over|during|around)\s+(?:the\s+)?(?P<h>christmas(?:\s+(?:eve|day))?"
    r"|new\s+year['’]?s(?:\s+(?:eve|day))?|valentine['’]?s(?:\s+day)?|halloween"
    r"|thanksgiving(?:\s+day)?|independence\s+day|(?:the\s+)?(?:fourth|4th)\s+of\s+july"
    r"|easter(?:\s+(?:sunday|monday|weekend))?|good\s+friday|boxing\s+day"
    r"|(?:st\.?|saint)\s+patrick['’]?s(?:\s+day)?|mother['’]?s\s+day|father['’]?s\s+day"
    r"|memorial\s+day(?:\s+weekend)?|labou?r\s+day(?:\s+weekend)?)"
    rf"(?:,?\s+(?P<y>{_Y}))?\b",
    re.IGNORECASE,
)


def _easter(year: int) -> date:
    """Easter Sunday of ``year`` (Gregorian; the anonymous algorithm)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = divmod(b, 4)
    g = (8 * b + 13) // 25
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    l_ = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * l_) // 451
    month, day = divmod(h + l_ - 7 * m + 114, 31)
    return date(year, month, day + 1)


def _nth(year: int, month: int, weekday: int, n: int) -> date:
    """The ``n``-th ``weekday`` (Monday 0) of ``month``; ``n`` -1: the last."""
    if n < 0:
        last = date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)
        return last - timedelta(days=(last.weekday() - weekday) % 7)
    first = date(year, month, 1)
    return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))


def _fixed(month: int, day: int) -> Callable[[int], date]:
    return lambda year: date(year, month, day)


# each holiday, by its name in lower case without apostrophes (:func:`_holiday_name`):
# its first day in a year, and how many days it lasts (Easter: Good Friday to Easter
# Monday; a Monday holiday's weekend: Saturday to Monday)
_HOLIDAYS: dict[str, tuple[Callable[[int], date], int]] = {
    "christmas": (_fixed(12, 24), 3),
    "christmas eve": (_fixed(12, 24), 1),
    "christmas day": (_fixed(12, 25), 1),
    "boxing day": (_fixed(12, 26), 1),
    "new years": (_fixed(12, 31), 2),
    "new years eve": (_fixed(12, 31), 1),
    "new years day": (_fixed(1, 1), 1),
    "valentines": (_fixed(2, 14), 1),
    "valentines day": (_fixed(2, 14), 1),
    "st patricks": (_fixed(3, 17), 1),
    "st patricks day": (_fixed(3, 17), 1),
    "halloween": (_fixed(10, 31), 1),
    "independence day": (_fixed(7, 4), 1),
    "fourth of july": (_fixed(7, 4), 1),
    "4th of july": (_fixed(7, 4), 1),
    "thanksgiving": (lambda y: _nth(y, 11, 3, 4), 1),
    "thanksgiving day": (lambda y: _nth(y, 11, 3, 4), 1),
    "easter": (lambda y: _easter(y) - timedelta(days=2), 4),
    "easter weekend": (lambda y: _easter(y) - timedelta(days=2), 4),
    "easter sunday": (_easter, 1),
    "easter monday": (lambda y: _easter(y) + timedelta(days=1), 1),
    "good friday": (lambda y: _easter(y) - timedelta(days=2), 1),
    "mothers day": (lambda y: _nth(y, 5, 6, 2), 1),
    "fathers day": (lambda y: _nth(y, 6, 6, 3), 1),
    "memorial day": (lambda y: _nth(y, 5, 0, -1), 1),
    "memorial day weekend": (lambda y: _nth(y, 5, 0, -1) - timedelta(days=2), 3),
    "labor day": (lambda y: _nth(y, 9, 0, 1), 1),
    "labor day weekend": (lambda y: _nth(y, 9, 0, 1) - timedelta(days=2), 3),
}
AROUND = timedelta(days=3)  # "around Christmas": from a few days before
_COUNT = {"a": 1, "one": 1, "two": 2, "three": 3}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_ORDER = re.compile(r"\b(?P<rel>after|before|prior to|following|since)\s+(?P<what>\w+)", re.I)


@dataclass(frozen=True)
class TimeWindow:
    """``start <= event_time < end`` (either may be None: open); ``phrase`` as written."""

    start: datetime | None
    end: datetime | None
    phrase: str
    yearless: bool = False  # a month named without a year ("in June"): see :meth:`year_before`
    # a holiday's (name, year, around): a year earlier its days are found again (Easter moves)
    holiday: tuple[str, int, bool] | None = None

    def label(self) -> str:
        return self.phrase

    def year_before(self) -> TimeWindow:
        """The same window a year earlier: "in June" asked of a store whose memories
        end before this June is the latest June that holds some (29 February: the 28th
        in a year without one); a holiday's days in the year before ("over Easter")."""
        if self.holiday is not None:
            name, year, around = self.holiday
            return _holiday_window(name, year - 1, around, self.phrase, yearless=self.yearless)
        start = _a_year_before(self.start) if self.start else None
        end = self.end - (self.start - start) if self.end and self.start and start else self.end
        if self.start is None and self.end is not None:
            end = _a_year_before(self.end)
        return replace(self, start=start, end=end)


def _a_year_before(when: datetime) -> datetime:
    try:
        return when.replace(year=when.year - 1)
    except ValueError:  # 29 February
        return when.replace(year=when.year - 1, day=28)


def _month(text: str) -> int:
    return [m[:3] for m in _MONTH_NAMES].index(text.lower()[:3]) + 1


def _day(text: str) -> int:
    return int(re.sub(r"\D", "", text))


def _span(match: re.Match[str], now: datetime | None) -> tuple[datetime, datetime] | None:
    """The days a date phrase covers: ``(first instant, first instant after)``. A day
    without a year is the latest one begun by ``now`` (:func:`_yearless`)."""
    g = match.groupdict()
    try:
        if g["m7"] or g["m8"]:
            return _yearless(*((g["m7"], g["d7"]) if g["m7"] else (g["m8"], g["d8"])), now)
        if g["y6"]:  # day first ("13/01/2024", "29.12.2023"); month first when it must be
            a, b = int(g["a6"]), int(g["b6"])
            y, m, d = (int(g["y6"]), a, b) if b > 12 else (int(g["y6"]), b, a)
            start = datetime(y, m, d, tzinfo=UTC)
            return start, start + timedelta(days=1)
        if g["y1"] or g["y2"] or g["y3"]:
            if g["y1"]:
                y, m, d = int(g["y1"]), _month(g["m1"]), _day(g["d1"])
            elif g["y2"]:
                y, m, d = int(g["y2"]), _month(g["m2"]), _day(g["d2"])
            else:
                y, m, d = int(g["y3"]), int(g["m3"]), int(g["d3"])
            start = datetime(y, m, d, tzinfo=UTC)
            return start, start + timedelta(days=1)
        if g["y4"]:
            y, m = int(g["y4"]), _month(g["m4"])
            return datetime(y, m, 1, tzinfo=UTC), datetime(y + m // 12, m % 12 + 1, 1, tzinfo=UTC)
        y = int(g["y5"])
        return datetime(y, 1, 1, tzinfo=UTC), datetime(y + 1, 1, 1, tzinfo=UTC)
    except ValueError:  # 31 February and the like
        return None


def _yearless(month: str, day: str, now: datetime | None) -> tuple[datetime, datetime] | None:
    """The latest ``day`` of ``month`` begun by ``now`` ("13th January" asked in March
    is this year's, asked in January before the 13th last year's); None when the month
    never has that day, or for "may" not written as the month ("May 5": a name of the
    month is capitalised, the verb need not be; "may 5th" is the month all the same)."""
    if month.lower() == "may" and month != "May" and day.isdigit():
        return None
    at = now or datetime.now(UTC)
    m, d = _month(month), _day(day)
    for year in range(at.year, at.year - 5, -1):
        try:
            start = datetime(year, m, d, tzinfo=UTC)
        except ValueError:  # 29 February in a year without one; 31 April never
            continue
        if start <= at:
            return start, start + timedelta(days=1)
    return None


def _part(found: re.Match[str] | None, start: datetime, end: datetime) -> tuple[datetime, datetime]:
    """The month ``[start, end)`` narrowed to the part of it ``found`` (a :data:`_PART`
    match of the query's text up to the month) names — its first … fourth or last week,
    its early / mid / late third — widened by :data:`LOOSE` on each side; the whole
    month when none."""
    if found is None:
        return start, end
    days = (end - start).days
    if found.group("nth"):
        nth = found.group("nth").lower()
        first = days - 7 if nth == "last" else 7 * _WEEK[nth]
        last = first + 7
    else:
        third = _THIRD[found.group("third").lower()]
        first, last = (0, 10) if third == 0 else (10, 20) if third == 1 else (20, days)
    day = timedelta(days=1)
    return max(start, start + first * day - LOOSE), min(end, start + last * day + LOOSE)


def time_window(text: str, *, now: datetime | None = None) -> TimeWindow | None:
    """The time window a query names, or None. ``now`` anchors "last week" etc."""
    found = _RANGE.search(text)
    if found:
        g = found.groupdict()
        try:
            y = int(g["y"])
            if g["da"]:
                m = _month(g["ma"])
                a, b = datetime(y, m, _day(g["da"]), tzinfo=UTC), (m, _day(g["db"]))
            else:
                m = _month(g["mb"])
                a = datetime(y, m, _day(g["dc"]), tzinfo=UTC)
                b = (_month(g["mc"]) if g["mc"] else m, _day(g["dd"]))
            end = datetime(y, b[0], b[1], tzinfo=UTC) + timedelta(days=1)
        except ValueError:
            return None
        return TimeWindow(a, end + REPORT_LAG, found.group(0))
    holiday = _holiday(text, now)
    if holiday is not None:
        return holiday
    for found in _DATE_RE.finditer(text):
        span = _span(found, now)
        if span is None:
            continue
        start, end = span
        yearless = bool(found.group("m7") or found.group("m8"))
        bound = _BOUND.search(text[: found.start()])
        phrase = text[bound.start() if bound else found.start() : found.end()].strip()
        rel = bound.group("rel").lower() if bound else ""
        if rel in ("before", "prior to") and bound and _SHORTLY.search(text[: bound.start()]):
            # "the week before 16 November", "the Sunday before": shortly before, not ever
            return TimeWindow(start - SHORTLY, start + REPORT_LAG, phrase, yearless)
        # "by the end of May": the end is the bound; "before the start of May": the start
        edge = end if bound and (bound.group("edge") or "").lower() == "end" else start
        if rel in ("before", "until", "by", "prior to"):
            return TimeWindow(None, edge + REPORT_LAG, phrase, yearless)
        if rel in ("after", "since"):
            return TimeWindow(end if rel == "after" else edge, None, phrase, yearless)
        if found.group("y4"):  # "the second week of November 2023", "early May 2023"
            part = _PART.search(text[: found.start()])
            start, end = _part(part, start, end)
            phrase = text[part.start() if part else found.start() : found.end()].strip()
        return TimeWindow(start, end + REPORT_LAG, phrase, yearless)
    bare = _BARE_MONTH.search(text)
    if bare:
        at = now or datetime.now(UTC)
        month = _month(bare.group("m"))
        year = at.year if month <= at.month else at.year - 1  # the latest one begun
        start = datetime(year, month, 1, tzinfo=UTC)
        end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
        part = _PART.search(text[: bare.start("m")])
        start, end = _part(part, start, end)
        phrase = text[min(part.start(), bare.start()) if part else bare.start() : bare.end()]
        return TimeWindow(start, end + REPORT_LAG, phrase.strip(), yearless=True)
    return _relative(text, now)


def _holiday(text: str, now: datetime | None) -> TimeWindow | None:
    """The days of a holiday the query names as when ("on Christmas Eve", "over New
    Year's", "at Thanksgiving 2023"): in the year named, else the latest one begun
    by ``now`` (yearless, looked for a year earlier as a month is)."""
    found = _HOLIDAY.search(text)
    if found is None:
        return None
    name = _holiday_name(found.group("h"))
    around = found.group("pre").lower() == "around"
    if found.group("y"):
        return _holiday_window(name, int(found.group("y")), around, found.group(0))
    at = now or datetime.now(UTC)
    window = _holiday_window(name, at.year, around, found.group(0), yearless=True)
    first = _holiday_window(name, at.year, False, "").start
    return window.year_before() if first is not None and first > at else window


def _holiday_name(text: str) -> str:
    """A holiday as written → its key in :data:`_HOLIDAYS`: "St. Patrick's Day" → "st
    patricks day", "Saint Patricks" → "st patricks", "the Fourth of July" → "fourth of
    july", "Labour Day" → "labor day"."""
    name = " ".join(re.sub(r"['’.]", "", text.lower()).split()).removeprefix("the ")
    return re.sub(r"^saint ", "st ", name).replace("labour", "labor")


def _holiday_window(
    name: str, year: int, around: bool, phrase: str, *, yearless: bool = False
) -> TimeWindow:
    """The days of holiday ``name`` (a key of :data:`_HOLIDAYS`) in ``year``, and the
    days after them while it is told (:data:`REPORT_LAG`); ``around``: from
    :data:`AROUND` before to as long after."""
    first_day, days = _HOLIDAYS[name]
    start = datetime.combine(first_day(year), datetime.min.time(), tzinfo=UTC)
    if around:
        start, days = start - AROUND, days + 2 * AROUND.days
    end = start + timedelta(days=days) + REPORT_LAG
    return TimeWindow(start, end, phrase, yearless=yearless, holiday=(name, year, around))


def _relative(text: str, now: datetime | None) -> TimeWindow | None:
    """A phrase that counts back from ``now``: "yesterday", "last night", "this
    morning", "last week", "last weekend", "over the weekend" (this one once it has
    begun; "this weekend" may be the next, so it is none), "last Friday" / "on Friday"
    (the latest Friday before today), "a few days ago", "3 weeks ago"."""
    found = _RELATIVE.search(text)
    if found is None:
        return None
    now = now or datetime.now(UTC)
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    day = timedelta(days=1)
    word = " ".join(found.group("rel").lower().split())
    phrase = found.group(0)
    if found.group("wd"):  # the latest such weekday before today, and its reports after
        back = (today.weekday() - _WEEKDAYS.index(found.group("wd").lower()) - 1) % 7 + 1
        start = today - back * day
        return TimeWindow(start, min(start + day + REPORT_LAG, today + day), phrase)
    days = {  # word -> (first day back, days it spans)
        "the day before yesterday": (2, 1),
        "yesterday": (1, 1),
        "last night": (1, 1),
        "a few days ago": (5, 4),
        "the other day": (7, 7),
        "last weekend": (today.weekday() + 2, 3),  # Saturday, Sunday, Monday's reports
    }
    if word in ("over the weekend", "this past weekend"):  # the latest weekend begun
        days[word] = (today.weekday() - 5, 3) if today.weekday() >= 5 else days["last weekend"]
    if word in days:
        back, span = days[word]
        start = today - back * day
        return TimeWindow(start, start + span * day, phrase)
    starts = {
        "today": today,
        "tonight": today,
        "this morning": today,
        "this afternoon": today,
        "this evening": today,
        "last week": today - 7 * day,
        "last month": today - 30 * day,
        "last year": today - 365 * day,
        "this week": today - today.weekday() * day,
        "this month": today.replace(day=1),
        "this year": today.replace(month=1, day=1),
    }
    if word in starts:
        return TimeWindow(starts[word], None, phrase)
    n = int(_COUNT.get(found.group("n").lower(), 0) or found.group("n"))
    back = n * _UNIT_DAYS[found.group("unit").lower().rstrip("s")]
    at = today - back * day
    half = timedelta(days=max(1, back // 4))  # "3 weeks ago" is roughly, not exactly
    return TimeWindow(at - half, at + half + day, phrase)


def chain_direction(text: str) -> str:
    """Which way a temporal chain walks: ``forward`` for "after the trip", ``backward``
    for "before the move", ``both`` otherwise (or when a date follows: that is a window)."""
    ways = set()
    for found in _ORDER.finditer(text):
        rest = text[found.start("what") :]
        if _DATE_RE.match(rest) or found.group("what").lower() in ("last", "this"):
            continue
        rel = found.group("rel").lower()
        ways.add("forward" if rel in ("after", "following", "since") else "backward")
    return ways.pop() if len(ways) == 1 else "both"


NARROW = timedelta(days=62)  # a window this short is narrow ("on 1 May", "in May 2023")


def narrow(window: TimeWindow | None) -> bool:
    """Whether ``window`` is closed and at most :data:`NARROW` long: a day, a week, a
    month — not a year or an open "before June"."""
    if window is None or window.start is None or window.end is None:
        return False
    return window.end - window.start <= NARROW
