"""Judge and apply, one operation at a time, with hand-written candidates."""

import threading
from datetime import timedelta

import numpy as np
import pytest
from django.db import connection

from memoryapp import embeddings
from memoryapp.actors import ActorRef
from memoryapp.models import Memory, MemoryEvent
from memoryapp.services.apply import candidate_apply, draft_from_candidate
from memoryapp.services.extract.base import Candidate
from tests.factories import at, say

ACTOR = ActorRef("agent", "test-agent")


def fact(text, attribute, value, when="2025-03-01", relation="state", subject="alice", importance=6):
    return Candidate(
        text=text,
        subject=subject,
        attribute=attribute,
        value=value,
        valid_from=at(when),
        relation=relation,
        importance=importance,
    )


def apply(user, candidate, *, session=""):
    episode = say(user, candidate.text, when=candidate.valid_from.isoformat(), session=session)
    draft = draft_from_candidate(
        candidate,
        embedding=embeddings.encode_one(candidate.text),
        organization=user.organization,
        user=user,
        sources=[episode],
        session=session,
    )
    return candidate_apply(candidate=candidate, draft=draft, actor=ACTOR), episode


def ops(operations):
    return [o.op for o in operations]


@pytest.mark.django_db
def test_add_when_nothing_is_known(alice):
    operations, episode = apply(alice, fact("Alice lives in Porto.", "city", "Porto"))
    assert ops(operations) == ["ADD"]
    memory = Memory.objects.get(pk=operations[0].memory_id)
    assert memory.status == "active" and memory.cardinality == "single"
    assert list(memory.sources.all()) == [episode]
    event = MemoryEvent.objects.get(memory_id=memory.id)
    assert event.op == "ADD" and event.actor_type == "agent" and event.actor_id == "test-agent"


@pytest.mark.django_db
def test_noop_appends_the_new_episode_to_the_sources(alice):
    first, _ = apply(alice, fact("Alice lives in Porto.", "city", "Porto"))
    second, episode = apply(alice, fact("Alice lives in Porto.", "city", "porto", when="2025-04-01"))
    assert ops(second) == ["NOOP"] and second[0].memory_id == first[0].memory_id
    assert Memory.objects.get(pk=first[0].memory_id).sources.count() == 2
    assert Memory.objects.filter(user=alice).count() == 1


@pytest.mark.django_db
def test_update_merges_text_and_sources(alice):
    first, _ = apply(alice, fact("Alice is vegetarian.", "diet", "vegetarian"))
    second, _ = apply(alice, fact("Alice eats eggs.", "diet", "eats eggs", relation="refine", when="2025-04-01"))
    assert ops(second) == ["UPDATE"] and second[0].memory_id == first[0].memory_id
    memory = Memory.objects.get(pk=first[0].memory_id)
    assert memory.text == "Alice is vegetarian; eats eggs." and memory.sources.count() == 2


@pytest.mark.django_db
def test_supersede_closes_the_old_value_and_keeps_both(alice):
    first, _ = apply(alice, fact("Alice lives in Porto.", "city", "Porto"))
    second, _ = apply(alice, fact("Alice lives in Lisbon.", "city", "Lisbon", relation="change", when="2025-07-01"))
    assert ops(second) == ["SUPERSEDE"]
    old, new = Memory.objects.get(pk=first[0].memory_id), Memory.objects.get(pk=second[0].memory_id)
    assert old.status == "superseded" and old.valid_to == at("2025-07-01") and old.expired_at is None
    assert new.status == "active" and new.valid_from == at("2025-07-01") and new.supersedes_id == old.id


@pytest.mark.django_db
def test_negation_ends_a_fact_without_a_replacement_value(alice):
    first, _ = apply(alice, fact("Alice is vegetarian.", "diet", "vegetarian"))
    second, _ = apply(
        alice, fact("Alice is no longer vegetarian.", "diet", "vegetarian", relation="negate", when="2025-05-01")
    )
    assert ops(second) == ["SUPERSEDE"]
    assert Memory.objects.get(pk=first[0].memory_id).status == "superseded"
    assert Memory.objects.get(pk=second[0].memory_id).value == "not vegetarian"


@pytest.mark.django_db
def test_correction_invalidates_the_wrong_fact_and_flags_its_siblings(alice):
    wrong, episode = apply(alice, fact("Alice works at Initech.", "employer", "Initech"))
    sibling = candidate_apply(
        candidate=fact("Alice likes jazz.", "likes", "jazz"),
        draft=draft_from_candidate(
            fact("Alice likes jazz.", "likes", "jazz"),
            embedding=embeddings.encode_one("jazz"),
            organization=alice.organization,
            user=alice,
            sources=[episode],
        ),
        actor=ACTOR,
    )
    corrected, _ = apply(
        alice, fact("Alice works at Globex.", "employer", "Globex", relation="correct", when="2025-03-02")
    )
    assert ops(corrected) == ["INVALIDATE", "ADD"]
    old = Memory.objects.get(pk=wrong[0].memory_id)
    assert old.status == "invalidated" and old.expired_at is not None and old.valid_to is None
    assert Memory.objects.get(pk=sibling[0].memory_id).needs_review is True
    assert Memory.objects.get(pk=corrected[1].memory_id).valid_from == at("2025-03-01")


@pytest.mark.django_db
def test_retraction_invalidates_what_was_said_earlier_in_the_session(alice):
    said, _ = apply(alice, fact("Alice has a pet tiger.", "pet", "tiger"), session="s1")
    retract = Candidate(
        text="Alice retracted the previous statement.",
        subject="alice",
        attribute="pet",
        value="",
        valid_from=at("2025-03-01T00:05"),
        relation="retract",
    )
    taken_back, _ = apply(alice, retract, session="s1")
    assert ops(taken_back) == ["INVALIDATE"] and taken_back[0].memory_id == said[0].memory_id
    assert Memory.objects.get(pk=said[0].memory_id).status == "invalidated"


@pytest.mark.django_db
def test_retraction_does_not_reach_into_other_sessions(alice):
    apply(alice, fact("Alice has a pet tiger.", "pet", "tiger"), session="s1")
    retract = Candidate(
        text="Alice retracted the previous statement.",
        subject="alice",
        attribute="pet",
        value="",
        valid_from=at("2025-03-02"),
        relation="retract",
    )
    taken_back, _ = apply(alice, retract, session="s2")
    assert taken_back == []
    assert Memory.objects.get(user=alice).status == "active"


@pytest.mark.django_db
def test_a_fact_about_someone_else_does_not_touch_the_users_slot(alice):
    own, _ = apply(alice, fact("Alice is vegetarian.", "diet", "vegetarian"))
    sister, _ = apply(alice, fact("Alice's sister is vegan.", "diet", "vegan", subject="alice's sister"))
    assert ops(sister) == ["ADD"]
    assert Memory.objects.get(pk=own[0].memory_id).status == "active"


@pytest.mark.django_db
def test_multi_valued_attributes_accumulate(alice):
    apply(alice, fact("Alice likes jazz.", "likes", "jazz"))
    second, _ = apply(alice, fact("Alice likes hiking.", "likes", "hiking"))
    assert ops(second) == ["ADD"]
    assert Memory.objects.filter(user=alice, attribute="likes", status="active").count() == 2


@pytest.mark.django_db
def test_unstructured_restatement_is_a_noop(alice):
    text = "Alice prefers short answers without bullet points."
    first, _ = apply(alice, Candidate(text=text, subject="alice", attribute="", value="", valid_from=at("2025-03-01")))
    again, _ = apply(alice, Candidate(text=text, subject="alice", attribute="", value="", valid_from=at("2025-03-02")))
    assert ops(first) == ["ADD"] and ops(again) == ["NOOP"]


@pytest.mark.django_db
def test_the_database_refuses_two_active_values_in_one_slot(alice):
    from django.db import IntegrityError, transaction

    apply(alice, fact("Alice lives in Porto.", "city", "Porto"))
    existing = Memory.objects.get(user=alice)
    with pytest.raises(IntegrityError, match="one_active_value_per_slot"), transaction.atomic():
        Memory.objects.create(
            organization=alice.organization,
            user=alice,
            text="Alice lives in Rome.",
            subject="alice",
            attribute="city",
            value="Rome",
            cardinality="single",
            embedding=existing.embedding,
        )


@pytest.mark.django_db
def test_the_database_refuses_an_interval_that_ends_before_it_starts(alice):
    from django.db import IntegrityError, transaction

    apply(alice, fact("Alice lives in Porto.", "city", "Porto"))
    memory = Memory.objects.get(user=alice)
    with pytest.raises(IntegrityError, match="valid_from_before_valid_to"), transaction.atomic():
        Memory.objects.filter(pk=memory.pk).update(
            valid_to=memory.valid_from - timedelta(days=1), valid_to_recorded_at=memory.recorded_at
        )


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_on_one_slot_leave_one_active_value(alice):
    cities = ["Lisbon", "Madrid", "Paris", "Rome", "Oslo", "Vienna"]
    vectors = embeddings.encode([f"Alice lives in {c}." for c in cities])
    episode = say(alice, "cities")
    errors = []

    def write(city, vector, day):
        try:
            candidate = fact(f"Alice lives in {city}.", "city", city, relation="change", when=f"2025-0{day}-01")
            draft = draft_from_candidate(
                candidate, embedding=vector, organization=alice.organization, user=alice, sources=[episode]
            )
            candidate_apply(candidate=candidate, draft=draft, actor=ACTOR)
        except Exception as exc:  # collected and asserted below
            errors.append(exc)
        finally:
            connection.close()

    pairs = enumerate(zip(cities, vectors, strict=True))
    threads = [threading.Thread(target=write, args=(city, vector, i + 1)) for i, (city, vector) in pairs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert Memory.objects.filter(user=alice, attribute="city", status="active").count() == 1
    assert Memory.objects.filter(user=alice, attribute="city").count() == len(cities)


def unstructured(text, when="2025-03-01"):
    return Candidate(text=text, subject="alice", attribute="", value="", valid_from=at(when))


@pytest.mark.django_db
def test_llm_judges_related_unstructured_statements(alice, endpoint):
    first, _ = apply(alice, unstructured("Alice is training for the Lisbon marathon in October."))
    endpoint.answer_content('{"op": "SUPERSEDE", "target": 1, "reason": "she switched races"}')
    second, _ = apply(alice, unstructured("Alice is now training for the Porto marathon in November.", "2025-05-01"))
    assert ops(second) == ["SUPERSEDE"]
    assert Memory.objects.get(pk=first[0].memory_id).status == "superseded"
    prompt = endpoint.requests[0]["json"]["messages"][-1]["content"]
    assert "1. Alice is training for the Lisbon marathon" in prompt and "Porto marathon" in prompt


@pytest.mark.django_db
def test_an_unusable_llm_decision_falls_back_to_add(alice, endpoint):
    apply(alice, unstructured("Alice is training for the Lisbon marathon in October."))
    endpoint.answer_content('{"op": "SUPERSEDE", "target": 7}')
    second, _ = apply(alice, unstructured("Alice is now training for the Porto marathon in November.", "2025-05-01"))
    assert ops(second) == ["ADD"]
    assert Memory.objects.filter(user=alice, status="active").count() == 2


@pytest.mark.django_db
def test_the_judges_similarity_lookups_never_walk_the_hnsw_index(alice):
    """A walk filtered to one owner can miss rows; the owner's memories are few, so they are all compared."""
    from django.db import connection
    from pgvector.django import CosineDistance

    from memoryapp.services.apply import row_cosine_distance

    vector = [1 / 384 ** 0.5] * 384
    mine = Memory.objects.filter(user=alice, status="active")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_sort = off")  # the planner's reason to walk the index, if it could
    walked = mine.annotate(distance=CosineDistance("search_embedding", vector)).order_by("distance")[:5].explain()
    compared = mine.annotate(distance=row_cosine_distance(vector)).order_by("distance")[:5].explain()
    assert "hnsw" in walked, "the search vectors' index would serve a plain cosine ordering"
    assert "hnsw" not in compared


@pytest.mark.django_db
def test_memories_written_in_a_batch_are_searched_by_their_final_text_addressed_to_the_user(alice):
    """Within writes_batched a memory holds its text's vector; as the block ends it gets the vector of its
    text as it then stands (a complement may have changed it), addressed to the user."""
    from django.db import transaction

    from memoryapp.services.apply import MemoryDraft, memory_add, writes_batched

    text = "Alice likes jazz."
    with transaction.atomic(), writes_batched():
        memory = memory_add(draft=MemoryDraft(organization=alice.organization, user=alice, text=text,
                                              embedding=embeddings.encode_one(text)), actor=ACTOR, reason="test")
        Memory.objects.filter(pk=memory.pk).update(text="Alice likes jazz and the blues.")
    memory.refresh_from_db()
    searched = np.asarray(memory.search_embedding, dtype=np.float32)
    assert float(searched @ embeddings.encode_one("You likes jazz and the blues.")) > 0.99
    assert float(searched @ embeddings.encode_one(text)) < 0.9
