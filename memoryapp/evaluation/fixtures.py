"""Labelled messages for write accuracy: what each message should (and should not) make the
extractor write. Hand-written for the project; no benchmark data."""

from __future__ import annotations

from datetime import UTC, datetime

LABELLED = (
    ("I live in Porto.", {("city", "porto")}),
    ("I work at Initech.", {("employer", "initech")}),
    ("I'm a nurse.", {("job", "nurse")}),
    ("I'm vegetarian.", {("diet", "vegetarian")}),
    ("I have a dog named Rex.", {("pet", "dog named rex")}),
    ("I love hiking and I hate olives.", {("likes", "hiking"), ("dislikes", "olives")}),
    ("I'm allergic to peanuts.", {("allergy", "peanuts")}),
    ("I moved to Lisbon last month.", {("city", "lisbon")}),
    ("Please always answer in French.", {("instruction", "always answer in french")}),
    ("My sister is a doctor.", {("job", "doctor")}),
    ("how are you today?", set()),
    ("thanks, that was helpful!", set()),
    ("the weather is nice today", set()),
    ("What's the capital of Peru?", set()),
    ("lol ok", set()),
    ("I drive an old Volvo.", {("vehicle", "old volvo")}),
    ("My birthday is on May 5.", {("birthday", "may 5")}),
    ("I play the piano every evening.", {("likes", "piano")}),
)


def _facts(candidates) -> set:
    return {(c.attribute, c.value.lower()) for c in candidates}


def rules_write_accuracy() -> dict:
    """Missed and spurious writes of the configured extractor on LABELLED."""
    from memoryapp.evaluation.metrics import write_accuracy
    from memoryapp.services.extract import get_extractor
    from memoryapp.services.extract.base import EpisodeInput

    extractor = get_extractor()
    when = datetime(2025, 1, 1, tzinfo=UTC)
    written = [_facts(extractor.extract([EpisodeInput(text, when)], subject="user")) for text, _ in LABELLED]
    return write_accuracy([expected for _, expected in LABELLED], written)
