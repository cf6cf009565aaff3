"""The span of dates the service computes with.

A date such as 9999-12-31 is valid ISO 8601, but the service adds to the times it is given (an
exclusive end of day, "next month" read against when a message was said, one second after a
superseded fact): near year 1 or 9999 that arithmetic overflows Python's datetime. Inputs are held to
a span with centuries of margin on both sides, and refused with a message instead of failing later.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from django.core.exceptions import ValidationError

EARLIEST = datetime(1000, 1, 1, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)  # exclusive
OUT_OF_SPAN = "dates from the year 1000 to 8999 only"


def check_in_span(value: date | datetime) -> date | datetime:
    """A Django/DRF validator for a date or an aware datetime."""
    year = value.astimezone(UTC).year if isinstance(value, datetime) else value.year
    if not EARLIEST.year <= year < LATEST.year:
        raise ValidationError(OUT_OF_SPAN, code="out_of_span")
    return value
