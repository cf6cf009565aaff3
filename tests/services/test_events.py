"""Events and plans keep their resolved date and stop being current once it has passed (issue 17,
item 5). Dates are relative to a fixed moment the message was said."""

from datetime import UTC, datetime, timedelta

import pytest

from memoryapp.actors import ActorRef, Principal
from memoryapp.models import Memory
from memoryapp.selectors.context import context_assemble
from memoryapp.selectors.scoping import valid_at
from memoryapp.selectors.search import SearchParams, search_memories
from memoryapp.services.extract.base import EpisodeInput
from memoryapp.services.extract.rules import RulesExtractor
from memoryapp.services.extract.timeparse import find_time
from memoryapp.services.extraction import episodes_extract
from tests.factories import holds, make_memory, make_user, say

SAID = datetime(2025, 3, 5, 10, 0, tzinfo=UTC)  # a Wednesday


def end_of(year, month, day) -> datetime:
    return datetime(year, month, day, tzinfo=UTC) + timedelta(days=1, microseconds=-1)


def plan(message: str):
    (candidate,) = [c for c in RulesExtractor().extract([EpisodeInput(message, SAID)], subject="sam")
                    if c.attribute == "plan"]
    return candidate


@pytest.mark.parametrize(
    ("message", "text", "ends"),
    [
        ("I have a dentist appointment next Friday.", "Sam has a dentist appointment on Friday 7 March 2025.",
         end_of(2025, 3, 7)),
        ("I've got a job interview tomorrow!", "Sam has a job interview on Thursday 6 March 2025.",
         end_of(2025, 3, 6)),
        ("I have an exam on the 3rd.", "Sam has an exam on Thursday 3 April 2025.", end_of(2025, 4, 3)),
        ("I have a flight in two weeks", "Sam has a flight on Wednesday 19 March 2025.", end_of(2025, 3, 19)),
        ("I'm planning to visit Japan next month.", "Sam plans to visit Japan in April 2025.", end_of(2025, 4, 30)),
        ("My doctor's appointment is on March 14.", "Sam has a doctor's appointment on Friday 14 March 2025.",
         end_of(2025, 3, 14)),
        ("I have a wedding this weekend.", "Sam has a wedding on the weekend of 8 March 2025.", end_of(2025, 3, 9)),
    ],
)
def test_an_event_keeps_its_resolved_date_and_ends_with_it(message, text, ends):
    candidate = plan(message)
    assert candidate.text == text
    assert (candidate.valid_from, candidate.valid_to) == (SAID, ends), "current from when it was said to its day"


def test_a_plan_without_a_date_stays_current():
    candidate = plan("I'm planning to learn Spanish.")
    assert (candidate.text, candidate.valid_to) == ("Sam plans to learn Spanish.", None)


def test_ordinals_that_count_things_are_no_dates():
    assert find_time("I live on the 3rd floor", SAID, prefer_future=True) is None
    assert find_time("this is my 2nd try", SAID, prefer_future=True) is None


# ---------------------------------------------------------------------------------------------
# Through the store and the read path
# ---------------------------------------------------------------------------------------------


def tell(user, content, when):
    episode = say(user, content, when=when)
    episodes_extract(episode_ids=[episode.id], actor=ActorRef.for_job("test"))
    return episode


@pytest.mark.django_db
def test_an_appointment_is_current_until_its_day_has_passed(acme):
    sam = make_user(acme, "sam")
    episode = tell(sam, "I have a dentist appointment next Friday.", "2025-03-05T10:00")
    memory = Memory.objects.get(user=sam, attribute="plan", sources=episode)
    assert memory.text == "Sam has a dentist appointment on Friday 7 March 2025."
    assert memory.status == "active"

    mine = Memory.objects.filter(user=sam, attribute="plan")
    as_of = {day: list(valid_at(mine, as_of=datetime.fromisoformat(day).replace(tzinfo=UTC)))
             for day in ("2025-03-05T12:00", "2025-03-07T18:00", "2025-03-08T09:00")}
    assert as_of == {"2025-03-05T12:00": [memory], "2025-03-07T18:00": [memory], "2025-03-08T09:00": []}

    principal = Principal.for_user(sam)
    found = search_memories(principal, user=sam, params=SearchParams(query="When is the dentist appointment?"))
    assert memory not in [hit.item for hit in found.hits], "long past today: no longer current"
    before = SearchParams(query="When is the dentist appointment?", as_of=datetime(2025, 3, 6, tzinfo=UTC))
    assert memory in [hit.item for hit in search_memories(principal, user=sam, params=before).hits]
    context = context_assemble(principal, user=sam, params=before, budget_tokens=500)
    assert "dentist appointment on Friday 7 March 2025" in context.text


@pytest.mark.django_db
def test_the_same_plan_on_another_day_is_another_plan(acme):
    sam = make_user(acme, "sam")
    tell(sam, "I have a dentist appointment next Friday.", "2025-03-05T10:00")
    tell(sam, "I have a dentist appointment on April 2.", "2025-03-20T10:00")  # after the first has passed
    plans = Memory.objects.filter(user=sam, attribute="plan").order_by("valid_to")
    assert [p.text for p in plans] == ["Sam has a dentist appointment on Friday 7 March 2025.",
                                       "Sam has a dentist appointment on Wednesday 2 April 2025."]


@pytest.mark.django_db
def test_a_plan_without_a_date_is_still_found_later(acme):
    sam = make_user(acme, "sam")
    episode = tell(sam, "I'm planning to learn Spanish.", "2025-03-05T10:00")
    memory = Memory.objects.get(user=sam, attribute="plan", sources=episode)
    found = search_memories(Principal.for_user(sam), user=sam, params=SearchParams(query="What is Sam learning?"))
    assert memory.valid_to is None and memory in [hit.item for hit in found.hits]


@pytest.mark.django_db
def test_a_value_whose_day_has_passed_makes_way_for_the_next(acme):
    """A one-value slot's value with an end date (an admin's correction, an older write) used to stay active after
    its day, and the slot's next value failed the one-active-value constraint: the whole batch was lost."""
    sam = make_user(acme, "sam")
    passed = make_memory(sam, "Sam works at the Royal Free.", subject="sam", attribute="employer", value="Royal Free",
                         cardinality="single", valid_from=datetime(2025, 2, 1, tzinfo=UTC),
                         valid_to=end_of(2025, 2, 3), valid_to_recorded_at=datetime(2025, 2, 1, tzinfo=UTC))
    tell(sam, "I work at Tesco.", "2025-03-05T10:00")
    employer = Memory.objects.filter(user=sam, attribute="employer")
    assert list(valid_at(employer).values_list("text", flat=True)) == ["Sam works at Tesco."]
    passed.refresh_from_db()
    assert (passed.status, passed.valid_to) == ("superseded", end_of(2025, 2, 3)), "history, ending when it said"


@pytest.mark.django_db
def test_an_appointment_is_no_value_of_the_job_it_sounds_like(acme):
    """An appointment with a professional at a named place sounds like a workplace to the family model; it is a day's
    event: one memory with its date, which neither ends the job nor fills its slot."""
    sam = make_user(acme, "sam")
    tell(sam, "I work at Tesco.", "2025-03-01T10:00")
    episode = tell(sam, "I have a consultant appointment at the Royal Free on the 3rd, so I'm out that morning.",
                   "2025-03-01T11:00")
    written = Memory.objects.filter(user=sam, sources=episode)
    assert [(m.attribute, m.valid_to) for m in written if "appointment" in m.text] == [("plan", end_of(2025, 3, 3))]
    assert holds([m.text for m in written], "Royal", "Free", "Monday", "3", "March")
    assert "Sam works at Tesco." in [m.text for m in valid_at(Memory.objects.filter(user=sam), as_of=SAID)]


@pytest.mark.django_db
@pytest.mark.parametrize("moved", ["The GP appointment got moved to Monday.",
                                   "the surgery rang, my GP appointment has been pushed back to monday"])
def test_an_appointment_moved_to_another_day_holds_until_that_day(acme, moved):
    """"moved to Monday" names the coming Monday: before, the moved appointment was undated and current for ever."""
    sam = make_user(acme, "sam")
    tell(sam, "I have a GP appointment on Friday.", "2025-03-05T10:00")
    episode = tell(sam, moved, "2025-03-05T12:00")
    (memory,) = Memory.objects.filter(user=sam, sources=episode)
    assert (memory.valid_to, "Monday 10 March 2025" in memory.text) == (end_of(2025, 3, 10), True), memory.text
    current = valid_at(Memory.objects.filter(user=sam), as_of=datetime(2025, 3, 8, tzinfo=UTC))
    assert list(current.values_list("text", flat=True)) == [memory.text], "the Friday appointment is history"


@pytest.mark.django_db
@pytest.mark.parametrize(("message", "ends", "day_named"), [
    ("got a physio appointment at the Nuffield on tuesday", end_of(2025, 3, 11), "Tuesday 11 March 2025"),
    ("My GP appointment at the Lister surgery is next Monday.", end_of(2025, 3, 10), "Monday 10 March 2025"),
    ("Flying to Dublin tomorrow for work", end_of(2025, 3, 6), "Thursday 6 March 2025"),
    ("had a scan on the 3rd, all clear", None, None),  # told as past: the last 3rd, over already
    # an appointment the family model files under health, and one going on since a month (not the next January)
    ("I'm seeing a dermatologist next week about my eczema.", end_of(2025, 3, 16), "week of 10 March 2025"),
    ("I've been seeing a physio for my back since January.", None, "since January"),
])
def test_a_plan_no_rule_reads_ends_on_its_day_too(acme, message, ends, day_named):
    """Plans and appointments said in words the rules do not read (no "I", the place before "is") are still kept
    with their day, and stop being current when it has passed."""
    sam = make_user(acme, "sam")
    episode = tell(sam, message, "2025-03-05T10:00")
    (memory,) = Memory.objects.filter(user=sam, sources=episode)
    assert memory.valid_to == ends
    assert day_named is None or day_named in memory.text
