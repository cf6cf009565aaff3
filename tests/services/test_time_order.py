"""Time order on writes (issue 17, item 3): a statement dated before the current value began goes into
the slot's history instead of replacing it, so a history imported in any order gives one timeline;
a correction still corrects, within its session."""

import itertools
from datetime import timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryapp.actors import ActorRef
from memoryapp.models import Episode, Memory, MemoryEvent
from memoryapp.selectors.scoping import valid_at
from memoryapp.services.apply import candidate_apply, draft_from_candidate
from memoryapp.services.extract.base import Candidate
from tests.factories import at, make_user, tell

pytestmark = pytest.mark.django_db
ACTOR = ActorRef("agent", "import")
VECTOR = np.ones(384, dtype=np.float32) / np.sqrt(384)


def city_as_of(user, when):
    memories = valid_at(Memory.objects.filter(user=user, attribute="city"), as_of=at(when))
    return [m.value for m in memories]


def test_an_older_message_arriving_later_goes_into_the_history(acme):
    sam = make_user(acme, "sam")
    tell(sam, "I live in Berlin.", "2025-05-08", "may")
    operations = tell(sam, "I live in Lisbon.", "2025-01-06", "january")  # imported history, after the fact

    assert [o.op for o in operations] == ["ADD"]
    berlin = Memory.objects.get(user=sam, value="Berlin")
    lisbon = Memory.objects.get(user=sam, value="Lisbon")
    assert (berlin.status, berlin.valid_to, berlin.expired_at) == ("active", None, None), "Berlin stays current"
    assert lisbon.status == "superseded" and lisbon.expired_at is None
    assert (lisbon.valid_from, lisbon.valid_to) == (at("2025-01-06"), at("2025-05-08"))
    assert city_as_of(sam, "2025-06-01") == ["Berlin"]
    assert city_as_of(sam, "2025-03-01") == ["Lisbon"]
    assert city_as_of(sam, "2024-12-01") == []
    assert not MemoryEvent.objects.filter(memory_id=berlin.id, op="INVALIDATE").exists()


def test_a_value_between_two_known_values_is_inserted_between_them(acme):
    sam = make_user(acme, "sam")
    tell(sam, "I live in Lisbon.", "2025-01-06", "january")
    tell(sam, "I live in Berlin.", "2025-09-01", "september")
    tell(sam, "I live in Porto.", "2025-05-08", "may")  # arrives last, belongs in the middle

    spans = {m.value: (m.status, m.valid_from, m.valid_to) for m in Memory.objects.filter(user=sam)}
    assert spans == {
        "Lisbon": ("superseded", at("2025-01-06"), at("2025-05-08")),
        "Porto": ("superseded", at("2025-05-08"), at("2025-09-01")),
        "Berlin": ("active", at("2025-09-01"), None),
    }
    assert [city_as_of(sam, d) for d in ("2025-03-01", "2025-06-01", "2025-10-01")] == [["Lisbon"], ["Porto"],
                                                                                        ["Berlin"]]
    porto = Memory.objects.get(user=sam, value="Porto")
    assert Memory.objects.get(user=sam, value="Berlin").supersedes == porto
    assert porto.supersedes == Memory.objects.get(user=sam, value="Lisbon"), "the chain follows world time"


def test_restating_the_value_of_that_time_only_adds_a_source(acme):
    sam = make_user(acme, "sam")
    tell(sam, "I live in Lisbon.", "2025-01-06", "january")
    tell(sam, "I live in Berlin.", "2025-09-01", "september")
    operations = tell(sam, "I live in Lisbon.", "2025-03-01", "march")
    assert [o.op for o in operations] == ["NOOP"]
    assert Memory.objects.filter(user=sam).count() == 2


def test_a_change_dated_to_the_moment_the_old_value_was_said_ends_it_and_never_unsays_it(acme):
    sam = make_user(acme, "sam")
    tell(sam, "I live in Madrid.", "2025-06-02T10:00", "june")
    tell(sam, "I moved to Seville last month.", "2025-07-02T10:00", "july")  # "last month": 2 June, 10:00
    madrid = Memory.objects.get(user=sam, value="Madrid")
    assert madrid.status == "superseded", "Madrid was true; it is history, not a mistake"
    assert city_as_of(sam, "2025-07-03") == ["Seville"]


@pytest.mark.parametrize("then, now", [
    ("I live in Munich.", "I moved to Berlin two months ago."),
    ("I live in Munich.", "I've lived in Berlin since January."),
    ("I'm a strict vegetarian.", "I started eating fish again a couple of months ago."),
    ("I'm a teacher.", "I've been a full-time writer since February."),
])
def test_a_change_said_later_is_the_users_newer_word_whatever_date_its_words_give(acme, then, now):
    # said a month after the old value, dated before it: no old message imported late
    sam = make_user(acme, "sam")
    tell(sam, then, "2025-03-01", "march")
    tell(sam, now, "2025-04-01", "april")
    old = Memory.objects.get(user=sam, sources__content=then)
    new = Memory.objects.get(user=sam, sources__content=now, attribute=old.attribute)
    assert (old.status, new.status) == ("superseded", "active")
    assert valid_at(Memory.objects.filter(user=sam, attribute=old.attribute), as_of=at("2025-04-02")).get() == new


@pytest.mark.parametrize("then, before", [
    ("I live in Munich.", "In 2019 I lived in Lisbon."),
    ("I work at Tesco.", "Back in 2018 I worked at Google."),
    ("I live in Leeds.", "Growing up we lived in Cork."),
    ("I drive a Golf.", "I drove a Mini until 2020."),
    ("I eat everything.", "I was vegan for a year back in 2019."),
])
def test_a_state_told_as_over_is_kept_beside_the_current_value(acme, then, before):
    sam = make_user(acme, "sam")
    tell(sam, then, "2025-03-01", "march")
    tell(sam, before, "2025-04-01", "april")
    current = Memory.objects.get(user=sam, sources__content=then)
    past = Memory.objects.get(user=sam, sources__content=before)
    assert current.status == "active", "what was is no change of what is"
    assert (past.status, past.attribute) == ("active", ""), "kept, in no slot"


def test_a_correction_still_corrects_within_its_session(acme):
    sam = make_user(acme, "sam")
    tell(sam, "I live in Braga.", "2025-05-08T10:00", "chat")
    operations = tell(sam, "actually, I live in Porto, not Braga", "2025-05-08T10:02", "chat")
    assert ("INVALIDATE", Memory.objects.get(user=sam, value="Braga").id) in [(o.op, o.memory_id) for o in operations]
    assert Memory.objects.get(user=sam, value="Braga").status == "invalidated"
    assert city_as_of(sam, "2025-06-01") == ["Porto"]


def test_a_correction_dated_earlier_still_corrects_within_its_session(acme):
    sam = make_user(acme, "sam")
    tell(sam, "I live in Braga.", "2025-05-08T10:00", "chat")
    tell(sam, "Actually, I have lived in Porto since 2019.", "2025-05-08T10:02", "chat")
    assert Memory.objects.get(user=sam, value="Braga").status == "invalidated"
    assert city_as_of(sam, "2025-06-01") == ["Porto"] and city_as_of(sam, "2020-06-01") == ["Porto"]


def test_an_old_sessions_correction_corrects_the_value_of_its_time_only(acme):
    sam = make_user(acme, "sam")
    tell(sam, "I live in Berlin.", "2025-05-08", "may")
    # An old conversation imported afterwards: it said Braga, then corrected it to Porto.
    tell(sam, "I live in Braga.", "2025-01-06T10:00", "january")
    tell(sam, "sorry, I meant Porto", "2025-01-06T10:01", "january")
    assert Memory.objects.get(user=sam, value="Braga").status == "invalidated"
    assert city_as_of(sam, "2025-03-01") == ["Porto"]
    assert city_as_of(sam, "2025-06-01") == ["Berlin"], "the newer value was never corrected"


def test_untrusted_content_never_cuts_a_users_value_short(alice):
    for when, value in (("2025-01-06", "Lisbon"), ("2025-09-01", "Berlin")):
        apply_statement(alice, value, at(when), session=when)
    operations = apply_statement(alice, "Porto", at("2025-05-08"), session="web",
                                 provenance=Memory.Provenance.UNTRUSTED_SOURCE)
    assert [o.op for o in operations] == ["QUARANTINE"]
    lisbon = Memory.objects.get(user=alice, value="Lisbon")
    assert lisbon.valid_to == at("2025-09-01"), "the user's own value keeps its span"


# ---------------------------------------------------------------------------------------------
# Any order, one timeline
# ---------------------------------------------------------------------------------------------


def apply_statement(user, value, when, *, session, relation="state", provenance=Memory.Provenance.USER_STATED):
    episode = Episode.objects.create(organization=user.organization, user=user, source="user",
                                     trust="untrusted" if provenance == "untrusted_source" else "trusted",
                                     content=f"I live in {value}.", session=session, occurred_at=when)
    candidate = Candidate(text=f"Alice lives in {value}.", subject="alice", attribute="city", value=value,
                          valid_from=when, relation=relation)
    draft = draft_from_candidate(candidate, embedding=VECTOR, organization=user.organization, user=user,
                                 sources=[episode], session=session, provenance=provenance)
    return candidate_apply(candidate=candidate, draft=draft, actor=ACTOR)


def probes(statements):
    """Each statement's date, just before and just after it, and long after the last."""
    days = sorted(day for _, day, _ in statements)
    moments = [d + offset for d in days for offset in (timedelta(hours=-12), timedelta(0), timedelta(hours=12))]
    return [*moments, days[-1] + timedelta(days=400)]


def timeline(user, statements):
    """Which value is current at each probe."""
    slot = Memory.objects.filter(user=user, attribute="city")
    return [sorted(m.value for m in valid_at(slot, as_of=probe)) for probe in probes(statements)]


def assert_well_formed(user):
    memories = Memory.objects.filter(user=user, attribute="city", expired_at__isnull=True,
                                     status__in=["active", "superseded"]).order_by("valid_from")
    memories = list(memories)
    assert [m.status for m in memories].count("active") == 1, "exactly one current value"
    assert memories[-1].status == "active" and memories[-1].valid_to is None
    for earlier, later in itertools.pairwise(memories):
        assert earlier.valid_to == later.valid_from, "contiguous and non-overlapping"


def ingest(user, statements):
    Memory.objects.filter(user=user).delete()
    Episode.objects.filter(user=user).delete()
    for value, day, session in statements:
        apply_statement(user, value, day, session=session, relation="state")
    assert_well_formed(user)
    return timeline(user, statements)


dated_statements = st.lists(
    st.tuples(st.sampled_from(["Lisbon", "Berlin", "Porto", "Oslo", "Lima"]), st.integers(min_value=0, max_value=900)),
    min_size=2, max_size=5, unique_by=(lambda s: s[0], lambda s: s[1]),
).flatmap(lambda items: st.tuples(st.just(items), st.permutations(items), st.booleans()))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=dated_statements)
def test_importing_a_slots_statements_in_any_order_gives_the_same_timeline(alice, case):
    items, shuffled, one_session = case

    def statements(order):
        return [(value, at("2024-01-01") + timedelta(days=day), "import" if one_session else f"s{day}")
                for value, day in order]

    in_order = ingest(alice, statements(sorted(items, key=lambda item: item[1])))
    assert ingest(alice, statements(shuffled)) == in_order
    # And that timeline is what was said: at each moment, the value stated last before it.
    said = statements(items)
    expected = [[value for value, day, _ in said if day == max((d for _, d, _ in said if d <= probe), default=None)]
                for probe in probes(said)]
    assert in_order == expected
