"""Time expressions in a sentence ("two weeks ago", "since July", "last Monday") resolved to
absolute datetimes against the moment the sentence was said (the episode's `occurred_at`).

Offsets ("3 days ago", "last week") keep the reference's time of day; expressions that name a
calendar day, month or year ("yesterday", "since July", "in 2019") resolve to its start, in the
reference's time zone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from dateutil.relativedelta import relativedelta

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
WEEKDAYS = {
    name: number
    for number, name in enumerate(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])
}
NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "couple of": 2,
}

DAY_WORDS = {"yesterday": -1, "last night": -1, "today": 0, "this morning": 0, "tonight": 0, "tomorrow": 1}

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_WEEKDAY = r"(?P<weekday>" + "|".join(WEEKDAYS) + r")"
_COUNT = r"(?P<count>\d+|" + "|".join(sorted(map(re.escape, NUMBER_WORDS), key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"


# (the match, the reference, prefer_future) -> the moment, or None when the words name no date
Resolver = Callable[[re.Match, datetime, bool], "datetime | None"]


@dataclass(frozen=True)
class TimeMatch:
    start: int  # where the expression starts in the text, so callers can cut it out of a value
    end: int
    when: datetime


def resolve_time(text: str, reference: datetime, *, prefer_future: bool = False) -> datetime | None:
    """The moment the first time expression in `text` refers to, or None when there is none.

    `prefer_future` reads a bare month or date ("in July", "on May 5") as the next one rather than
    the last one: what a plan means.
    """
    found = find_time(text, reference, prefer_future=prefer_future)
    return found.when if found else None


def find_time(text: str, reference: datetime, *, prefer_future: bool = False) -> TimeMatch | None:
    """The leftmost time expression in `text` and what it resolves to."""
    if reference.tzinfo is None:
        raise ValueError("reference must be timezone-aware (the episode's occurred_at)")
    best = None
    for pattern, resolve in _EXPRESSIONS:
        for match in pattern.finditer(text):
            when = resolve(match, reference, prefer_future)
            if when is None:
                continue
            if best is None or match.start() < best.start:
                best = TimeMatch(match.start(), match.end(), when)
            break
    return best


def _start_of_day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _offset(unit: str, count: int) -> relativedelta:
    return relativedelta(**{unit + "s": count})


def _ago(match: re.Match, reference: datetime, prefer_future: bool) -> datetime:
    return reference - _offset(match["unit"], _count(match["count"]))


def _in_future(match: re.Match, reference: datetime, prefer_future: bool) -> datetime:
    return reference + _offset(match["unit"], _count(match["count"]))


def _last_or_next_unit(match: re.Match, reference: datetime, prefer_future: bool) -> datetime:
    step = -1 if match["direction"].lower() == "last" else 1
    return reference + _offset(match["unit"], step)


def _since_last_year(match: re.Match, reference: datetime, prefer_future: bool) -> datetime:
    # "since last year" names the year, not a point one year ago: same reading as "since 2019".
    return _start_of_day(reference.replace(year=reference.year - 1, month=1, day=1))


def _for_the_past(match: re.Match, reference: datetime, prefer_future: bool) -> datetime | None:
    # "I've lived here for 5 years" started 5 years ago; in a plan ("for two weeks") it is a duration.
    return None if prefer_future else _ago(match, reference, prefer_future)


def _day_word(match: re.Match, reference: datetime, prefer_future: bool) -> datetime:
    shift = DAY_WORDS[" ".join(match["word"].lower().split())]
    return _start_of_day(reference) + timedelta(days=shift)


def _weekday(match: re.Match, reference: datetime, prefer_future: bool) -> datetime:
    target = WEEKDAYS[match["weekday"].lower()]
    if match["direction"].lower() == "last":
        days = (reference.weekday() - target) % 7 or 7  # strictly before the reference date
        return _start_of_day(reference) - timedelta(days=days)
    days = (target - reference.weekday()) % 7 or 7
    return _start_of_day(reference) + timedelta(days=days)


def _month(match: re.Match, reference: datetime, prefer_future: bool) -> datetime:
    month = MONTHS[match["month"].lower()]
    if match["year"]:
        year = int(match["year"])
    elif prefer_future:
        year = reference.year if month >= reference.month else reference.year + 1
    else:
        year = reference.year if month <= reference.month else reference.year - 1
    return _start_of_day(reference.replace(year=year, month=month, day=1))


def _date(match: re.Match, reference: datetime, prefer_future: bool) -> datetime | None:
    month, day = MONTHS[match["month"].lower()], int(match["day"])
    if match["year"]:
        return _calendar_day(reference, int(match["year"]), month, day)
    this_year = _calendar_day(reference, reference.year, month, day)
    if this_year is None:
        return None
    if prefer_future and this_year < _start_of_day(reference):
        return _calendar_day(reference, reference.year + 1, month, day)
    if not prefer_future and this_year > reference:
        return _calendar_day(reference, reference.year - 1, month, day)
    return this_year


def _calendar_day(reference: datetime, year: int, month: int, day: int) -> datetime | None:
    try:
        return _start_of_day(reference.replace(year=year, month=month, day=day))
    except ValueError:  # "Feb 30": not a date, so not a time expression
        return None


def _year(match: re.Match, reference: datetime, prefer_future: bool) -> datetime:
    return _start_of_day(reference.replace(year=int(match["year"]), month=1, day=1))


def _count(word: str) -> int:
    return int(word) if word.isdigit() else NUMBER_WORDS[" ".join(word.lower().split())]


# Each expression with its resolver. find_time keeps the leftmost match; at the same position the
# earlier entry wins, so the more specific patterns come first.
_EXPRESSIONS: list[tuple[re.Pattern, Resolver]] = [
    (re.compile(rf"\b{_COUNT}\s+{_UNIT}\s+ago\b", re.I), _ago),
    (re.compile(rf"\bin\s+{_COUNT}\s+{_UNIT}\b", re.I), _in_future),
    (re.compile(rf"\bfor\s+(?:the\s+(?:past|last)\s+)?{_COUNT}\s+{_UNIT}\b", re.I), _for_the_past),
    (re.compile(r"\bsince\s+last\s+year\b", re.I), _since_last_year),
    (re.compile(rf"\b(?P<direction>last|next)\s+{_WEEKDAY}\b", re.I), _weekday),
    (re.compile(rf"\b(?P<direction>last|next)\s+{_UNIT}\b", re.I), _last_or_next_unit),
    (re.compile(r"\b(?P<word>yesterday|last\s+night|today|this\s+morning|tonight|tomorrow)\b", re.I), _day_word),
    (re.compile(rf"\b(?:on\s+)?{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?\b(?!\s*(?:years?|days?|%))", re.I), _date),
    (re.compile(rf"\b(?:on\s+)?(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", re.I), _date),
    (re.compile(rf"\b(?:since|in|from|during|by|until|last|this|next)\s+{_MONTH}(?:\s+{_YEAR})?\b", re.I), _month),
    (re.compile(rf"\b(?:since|in|from|during|by|until|of)\s+{_YEAR}\b", re.I), _year),
]
