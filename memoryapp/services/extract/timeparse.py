"""Time expressions in a sentence ("two weeks ago", "since July", "last Monday") resolved to
absolute datetimes against the moment the sentence was said (the episode's `occurred_at`).

Offsets ("3 days ago", "last week") keep the reference's time of day; expressions that name a
calendar day, month or year ("yesterday", "since July", "in 2019") resolve to its start, in the
reference's time zone. Each match also says which stretch of the calendar the words name (a day,
a weekend, a week, a month, a year): a plan "next month" lasts until that month ends.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
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
# The stretch of calendar an expression names: "day", "weekend", "week", "month" or "year"; a function
# of the match where the words say it ("next week", "next month").
Period = str | Callable[[re.Match], str]


@dataclass(frozen=True)
class TimeMatch:
    start: int  # where the expression starts in the text, so callers can cut it out of a value
    end: int
    when: datetime
    period: str = "day"  # the stretch of calendar containing `when` that the words name

    @property
    def period_end(self) -> datetime:
        """The last moment of the period the words name: an event "next Friday" is over when that
        Friday ends, a plan "next month" when that month does."""
        day = _start_of_day(self.when)
        if self.period == "year":
            end = day.replace(month=1, day=1) + relativedelta(years=1)
        elif self.period == "month":
            end = day.replace(day=1) + relativedelta(months=1)
        elif self.period == "week":
            end = day + timedelta(days=7 - day.weekday())
        elif self.period == "weekend":
            end = day + timedelta(days=7 - day.weekday()) if day.weekday() >= 5 else day + timedelta(days=2)
        else:
            end = day + timedelta(days=1)
        return end - timedelta(microseconds=1)


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
    for pattern, resolve, period in _EXPRESSIONS:
        for match in pattern.finditer(text):
            when = resolve(match, reference, prefer_future)
            if when is None:
                continue
            # a pattern that reads words around the time says which are the time's own ("moved to |Wednesday|")
            span = "said" if "said" in pattern.groupindex else 0
            if best is None or match.start(span) < best.start:
                best = TimeMatch(match.start(span), match.end(span), when,
                                 period if isinstance(period, str) else period(match))
            break
    return best


def calendar_words(found: TimeMatch, before: str = "") -> str:
    """ "on Friday 14 March 2025", "in April 2025", "in the week of 17 March 2025", "in 2025"; after a preposition
    (`before`, the text up to the time) without their own: "since Tuesday 17 June 2025", "moved to Friday ..."."""
    if _PREPOSITION_BEFORE.search(before):
        return calendar_words(found).split(" ", 1)[1]
    when = found.when
    if found.period == "year":
        return f"in {when:%Y}"
    if found.period == "month":
        return f"in {when:%B %Y}"
    if found.period == "week":
        monday = when - timedelta(days=when.weekday())
        return f"in the week of {monday.day} {monday:%B %Y}"
    if found.period == "weekend":
        return f"on the weekend of {when.day} {when:%B %Y}"
    return f"on {when:%A} {when.day} {when:%B %Y}"


# Words that name a date only against the moment they were said, whatever the verb's tense ("yesterday",
# "two years ago", "next week"). "On Monday" and "in March" name another date in the past tense than in the
# future; "for two years", "since last year" and "in three years" ("I haven't had a drink in three years") a
# stretch of time: those stay as said.
_RELATIVE = re.compile(r"\b(?:ago|last|next|yesterday|today|tomorrow|tonight|this\s+morning|weekend)\b", re.I)
_FUTURE = re.compile(r"\b(?:next|tomorrow|tonight)\b", re.I)
_STRETCH = re.compile(r"(?:for|since)\b", re.I)
_AGO_UNIT = re.compile(rf"{_UNIT}\s+ago\b", re.I)
# Where the date takes no "on" or "in" of its own: after a preposition ("since yesterday"), or as what the
# sentence is about ("Tomorrow is the user's birthday").
_PREPOSITION_BEFORE = re.compile(r"\b(?:since|until|till|from|by|before|after|of|to)\s+$", re.I)
_VERB_AFTER = re.compile(r"\s+(?:is|was|will|'s)\b", re.I)
# ...or after a verb whose object the time is ("spent last year in Peru").
_TIME_AS_OBJECT = re.compile(r"\b(?:spent|spend|spends|spending)\s+$", re.I)
# Not a time at all, but the words of a thing: "their last day at Google", "the last weekend of the festival",
# "the last year of uni".
_A_THING = re.compile(r"(?:'s|\b(?:the|a|my|our|your|his|her|their|its|this|that|every|each))\s+$", re.I)
_PART_OF = re.compile(r"\s+of\b", re.I)
_NEXT_OR_LAST_DAY = re.compile(r"^(?:next|last)\s+day\b", re.I)


def with_dates_named(text: str, reference: datetime) -> str:
    """`text` with each time it tells against the moment it was said named by its date instead: "The user
    broke their wrist yesterday" -> "... on Tuesday 17 June 2025", "got married two years ago" -> "... in
    2023". A memory is read long after it was said, where "yesterday" is wrong."""
    named, rest = [], text
    while (found := find_time(rest, reference)) is not None:
        said, before = rest[found.start : found.end], rest[: found.start]
        words = said
        a_thing = _A_THING.search(before) or _PART_OF.match(rest, found.end) or _NEXT_OR_LAST_DAY.match(said)
        if _RELATIVE.search(said) and not _STRETCH.match(said) and not a_thing:
            if _FUTURE.search(said):  # "next March" is the coming one
                found = replace(find_time(said, reference, prefer_future=True) or found, start=found.start,
                                end=found.end)
            if unit := _AGO_UNIT.search(said):  # "two years ago" names a year, not a day
                found = replace(found, period=unit["unit"].lower())
            words = calendar_words(found, before)
            if _TIME_AS_OBJECT.search(before) or (not (named or before.strip()) and _VERB_AFTER.match(rest, found.end)):
                words = calendar_words(found).split(" ", 1)[1]  # "spent 2024 in Peru", "Thursday 19 June 2025 is ..."
        named.append(before + words)
        rest = rest[found.end :]
    return "".join(named) + rest


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


def _this_weekday(match: re.Match, reference: datetime, prefer_future: bool) -> datetime:
    """ "on Friday", "this Friday": the coming one in a plan, else the last one (today counts for both)."""
    target = WEEKDAYS[match["weekday"].lower()]
    if prefer_future:
        return _start_of_day(reference) + timedelta(days=(target - reference.weekday()) % 7)
    return _start_of_day(reference) - timedelta(days=(reference.weekday() - target) % 7)


def _moved_to_weekday(match: re.Match, reference: datetime, prefer_future: bool) -> datetime:
    """ "moved to Wednesday", "pushed back till Friday": the coming one, however the rest is told."""
    return _this_weekday(match, reference, prefer_future=True)


def _weekend(match: re.Match, reference: datetime, prefer_future: bool) -> datetime:
    """The Saturday of the weekend meant: "this weekend" is the coming one, or the one under way."""
    saturday = _start_of_day(reference) + timedelta(days=5 - reference.weekday())
    return saturday + timedelta(days={"this": 0, "next": 7, "last": -7}[match["direction"].lower()])


def _day_of_month(match: re.Match, reference: datetime, prefer_future: bool) -> datetime | None:
    """ "on the 3rd": that day of this month, or of the next month in a plan once it has passed (of
    the last month in a statement about the past when it is still to come)."""
    day, step = int(match["day"]), 1 if prefer_future else -1
    for months in range(0, 3):  # the 31st is not in every month: look two months on at most
        month = reference.replace(day=1) + relativedelta(months=months * step)
        candidate = _calendar_day(reference, month.year, month.month, day)
        if candidate is None:
            continue
        if (candidate >= _start_of_day(reference)) if prefer_future else (candidate <= reference):
            return candidate
    return None


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


def _unit(match: re.Match) -> str:
    return match["unit"].lower()


def _unit_of_count(match: re.Match) -> str:
    # "in two weeks" names a day two weeks on; "in three months" only the month.
    return "day" if match["unit"].lower() in {"day", "week"} else match["unit"].lower()


# Ordinals that count things, not days: "on the 3rd floor" is no date.
_NOT_A_DAY = (r"(?!\s+(?:floor|row|place|time|grade|century|step|attempt|try|round|day|week|month|year|anniversary"
              r"|birthday|edition|chapter|level|house|door|street|avenue|one|child|kid|son|daughter|baby)\b)")

# Each expression with its resolver and the period it names. find_time keeps the leftmost match; at the
# same position the earlier entry wins, so the more specific patterns come first.
_EXPRESSIONS: list[tuple[re.Pattern, Resolver, Period]] = [
    (re.compile(rf"\b{_COUNT}\s+{_UNIT}\s+ago\b", re.I), _ago, "day"),
    (re.compile(rf"\bin\s+{_COUNT}\s+{_UNIT}\b", re.I), _in_future, _unit_of_count),
    (re.compile(rf"\bfor\s+(?:the\s+(?:past|last)\s+)?{_COUNT}\s+{_UNIT}\b", re.I), _for_the_past, "day"),
    (re.compile(r"\bsince\s+last\s+year\b", re.I), _since_last_year, "year"),
    (re.compile(rf"\b(?P<direction>last|next)\s+{_WEEKDAY}\b", re.I), _weekday, "day"),
    (re.compile(r"\b(?P<direction>this|next|last)\s+weekend\b", re.I), _weekend, "weekend"),
    (re.compile(rf"\b(?P<direction>last|next)\s+{_UNIT}\b", re.I), _last_or_next_unit, _unit),
    (re.compile(r"\b(?P<word>yesterday|last\s+night|today|this\s+morning|tonight|tomorrow)\b", re.I), _day_word, "day"),
    (re.compile(rf"\b(?:on\s+)?{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?\b(?!\s*(?:years?|days?|%))", re.I), _date, "day"),
    (re.compile(rf"\b(?:on\s+)?(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", re.I), _date, "day"),
    (re.compile(rf"\bon\s+the\s+(?P<day>[0-3]?\d)(?:st|nd|rd|th)\b{_NOT_A_DAY}", re.I), _day_of_month, "day"),
    (re.compile(rf"\b(?:on|this|this\s+coming|coming)\s+{_WEEKDAY}\b", re.I), _this_weekday, "day"),
    # what was put to another day is put ahead (not "Monday to Friday", a span)
    (re.compile(r"\b(?:moved|changed|pushed|brought|postponed|rescheduled|put|bumped|shifted)(?:\s+(?:it|back|forward"
                rf"|off|over)){{0,2}}\s+(?:to|till|until)\s+(?P<said>{_WEEKDAY})\b", re.I), _moved_to_weekday, "day"),
    (re.compile(rf"\b(?:since|in|from|during|by|until|last|this|next)\s+{_MONTH}(?:\s+{_YEAR})?\b", re.I), _month,
     "month"),
    (re.compile(rf"\b(?:since|in|from|during|by|until|of)\s+{_YEAR}\b", re.I), _year, "year"),
]
