"""The design's story, through the services in order, with the real rules extractor."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memoryapp.actors import ActorRef, Principal
from memoryapp.models import Memory
from memoryapp.selectors.scoping import scoped_memories, valid_at
from memoryapp.services.extraction import episodes_extract
from tests.factories import at, make_user, say

pytestmark = pytest.mark.django_db


def tell(user, content, when, session):
    episode = say(user, content, when=when, session=session)
    return episode, episodes_extract(episode_ids=[episode.id], actor=ActorRef.for_job("test"))


def diet_as_of(user, as_of, known_at=None):
    mine = scoped_memories(Principal.for_user(user), user=user)
    return [m.text for m in valid_at(mine, as_of=at(as_of), known_at=known_at).filter(subject="sam", attribute="diet")]


def test_sams_diet_over_a_few_months(acme):
    sam = make_user(acme, "sam")
    march, ops = tell(sam, "I'm vegetarian.", "2025-03-10T12:00", "march")
    assert [o.op for o in ops] == ["ADD"]
    vegetarian = Memory.objects.get(pk=ops[0].memory_id)

    april, ops = tell(sam, "I'm still vegetarian.", "2025-04-12T12:00", "april")
    assert [(o.op, o.memory_id) for o in ops] == [("NOOP", vegetarian.id)]
    assert set(vegetarian.sources.all()) == {march, april}

    eggs, ops = tell(sam, "I still eat eggs.", "2025-04-12T12:05", "april")
    assert [(o.op, o.memory_id) for o in ops] == [("UPDATE", vegetarian.id)]
    vegetarian.refresh_from_db()
    assert "vegetarian" in vegetarian.text and "eggs" in vegetarian.text
    assert set(vegetarian.sources.all()) == {march, april, eggs}

    _, ops = tell(sam, "My sister is vegetarian too.", "2025-04-12T12:10", "april")
    assert all(Memory.objects.get(pk=o.memory_id).subject != "sam" for o in ops if o.memory_id)
    vegetarian.refresh_from_db()
    assert vegetarian.status == "active" and set(vegetarian.sources.all()) == {march, april, eggs}

    believed_before_july = timezone.now()
    _, ops = tell(sam, "btw I eat fish now, so the sushi place works", "2025-07-05T19:00", "july")
    assert [o.op for o in ops] == ["SUPERSEDE"], "the sushi remark yields nothing on its own"
    fish = Memory.objects.get(pk=ops[0].memory_id)
    vegetarian.refresh_from_db()
    assert vegetarian.status == "superseded" and vegetarian.valid_to == at("2025-07-05T19:00")
    assert fish.valid_from == at("2025-07-05T19:00") and "fish" in fish.text and fish.supersedes == vegetarian

    assert diet_as_of(sam, "2025-05-15") == [vegetarian.text]
    assert diet_as_of(sam, "2025-10-01") == [fish.text]
    # What the store believed before July: still vegetarian, even for a question about October.
    assert diet_as_of(sam, "2025-10-01", known_at=believed_before_july) == [vegetarian.text]
    assert diet_as_of(sam, "2025-02-01") == []
    assert Memory.objects.filter(user=sam, attribute="diet", subject="sam", status="active").count() == 1


def test_every_extracted_memory_has_a_source_and_every_event_an_actor(acme):
    from memoryapp.models import MemoryEvent

    sam = make_user(acme, "sam")
    for text, when in [
        ("I live in Porto and I work at Initech.", "2025-01-01"),
        ("I moved to Lisbon two weeks ago.", "2025-06-15"),
        ("I have a dog named Rex. I love hiking.", "2025-06-16"),
    ]:
        tell(sam, text, when, "s")
    memories = Memory.objects.filter(user=sam)
    assert memories.count() >= 4
    assert all(m.sources.exists() for m in memories)
    assert all(e.actor_type and e.actor_id for e in MemoryEvent.objects.all())
    lisbon = memories.get(attribute="city", status="active")
    assert lisbon.valid_from == at("2025-06-01"), "two weeks before the episode"


def test_retraction_later_in_the_session(acme):
    sam = make_user(acme, "sam")
    _, ops = tell(sam, "I have a cat named Tiger.", "2025-05-01T10:00", "s1")
    _, retract = tell(sam, "lol I was kidding", "2025-05-01T10:01", "s1")
    assert [o.op for o in retract] == ["INVALIDATE"] and retract[0].memory_id == ops[0].memory_id
    assert valid_at(scoped_memories(Principal.for_user(sam), user=sam)).count() == 0


def test_small_talk_stores_the_episode_but_no_memory(acme):
    sam = make_user(acme, "sam")
    _, ops = tell(sam, "haha thanks, how's your day going?", "2025-05-01", "s1")
    assert ops == [] and Memory.objects.filter(user=sam).count() == 0


def test_rerunning_extraction_changes_nothing(acme):
    from memoryapp.models import MemoryEvent

    sam = make_user(acme, "sam")
    episode, _ = tell(sam, "I live in Porto.", "2025-01-01", "s1")
    before = (Memory.objects.count(), MemoryEvent.objects.count())
    assert episodes_extract(episode_ids=[episode.id], actor=ActorRef.for_job("test")) == []
    assert (Memory.objects.count(), MemoryEvent.objects.count()) == before
    assert timezone.now() - episode.received_at < timedelta(minutes=5)
