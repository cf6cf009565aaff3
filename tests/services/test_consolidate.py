"""Consolidation: near-duplicates merge into one memory; chains and different facts do not."""

import itertools
import math
from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from memoryapp.actors import ActorRef, Principal
from memoryapp.models import Memory, MemoryEvent
from memoryapp.selectors.questions import search_vector
from memoryapp.selectors.search import SearchParams, search_memories
from memoryapp.services import consolidate
from memoryapp.services.consolidate import (
    components,
    consolidate_user,
    memories_merge,
    merge_recompute,
    neighbour_edges,
    verified_groups,
)
from tests.factories import make_memory, say

JOB = ActorRef.for_job("consolidation")


def at_angle(degrees: float) -> np.ndarray:
    """A unit vector in the plane of the first two axes of the 384-d embedding space."""
    vector = np.zeros(384, dtype=np.float32)
    vector[0], vector[1] = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return vector


CHAIN = {0: at_angle(0), 21: at_angle(21), 42: at_angle(42)}


def remembered(user, text, *, said=None, minutes_ago=0, **fields):
    """A memory with its source episode(s), recorded `minutes_ago` (older ones represent a group on ties)."""
    when = timezone.now() - timedelta(minutes=minutes_ago)
    memory = make_memory(user, text, recorded_at=when, valid_from=when, **fields)
    for content in said or [text]:
        memory.sources.add(say(user, content), through_defaults={"organization_id": user.organization_id})
    return memory


def merged_memory(user):
    return Memory.objects.filter(user=user, status="active", derived_from__isnull=False).distinct().get()


def active_texts(user):
    return sorted(Memory.objects.filter(user=user, status="active").values_list("text", flat=True))


# The pure parts, with hand-made vectors.


def test_the_chain_neighbours_are_close_and_its_ends_are_not():
    assert float(CHAIN[0] @ CHAIN[21]) == pytest.approx(0.934, abs=5e-4)
    assert float(CHAIN[21] @ CHAIN[42]) == pytest.approx(0.934, abs=5e-4)
    assert float(CHAIN[0] @ CHAIN[42]) == pytest.approx(0.743, abs=5e-4)


@pytest.mark.parametrize("order", list(itertools.permutations(CHAIN)))
def test_the_chain_is_one_component_whatever_the_insertion_order(order):
    matrix = np.stack([CHAIN[angle] for angle in order])
    edges = [(order[i], order[j]) for i, j in neighbour_edges(matrix, threshold=0.9, neighbours=10)]
    assert (0, 42) not in edges and (42, 0) not in edges
    assert [sorted(group) for group in components(edges)] == [[0, 21, 42]]


def test_one_nearest_neighbour_is_enough_to_connect_the_chain():
    matrix = np.stack(list(CHAIN.values()))
    edges = [(list(CHAIN)[i], list(CHAIN)[j]) for i, j in neighbour_edges(matrix, threshold=0.9, neighbours=1)]
    assert [sorted(group) for group in components(edges)] == [[0, 21, 42]]


def test_components_of_separate_pairs_stay_separate():
    assert components([("a", "b"), ("c", "d"), ("b", "a")]) == [["a", "b"], ["c", "d"]]
    assert components([]) == []


def test_verification_keeps_the_far_end_out_of_a_group_represented_by_one_end():
    assert verified_groups([0, 21, 42], CHAIN, threshold=0.9) == [[0, 21]]
    assert verified_groups([42, 0, 21], CHAIN, threshold=0.9) == [[42, 21]]


def test_a_representative_in_the_middle_takes_both_ends_within_reach_of_it():
    assert verified_groups([21, 0, 42], CHAIN, threshold=0.9) == [[21, 0, 42]]


def test_what_verification_leaves_out_is_grouped_again():
    vectors = {angle: at_angle(angle) for angle in (0, 21, 42, 63)}
    assert verified_groups([0, 21, 42, 63], vectors, threshold=0.9) == [[0, 21], [42, 63]]


def test_incompatible_members_do_not_join_even_when_identical():
    vectors = {"jazz": at_angle(0), "blues": at_angle(0), "music": at_angle(1)}
    groups = verified_groups(
        ["music", "jazz", "blues"], vectors, threshold=0.9, compatible=lambda a, b: {a, b} != {"jazz", "blues"}
    )
    assert groups == [["music", "jazz"]]


# The service, on the real database.


@pytest.mark.django_db
@pytest.mark.parametrize("in_memory_max", [consolidate.IN_MEMORY_MAX, 0], ids=["numpy-graph", "pgvector-graph"])
def test_restatements_merge_and_an_unrelated_memory_does_not(alice, monkeypatch, in_memory_max):
    monkeypatch.setattr(consolidate, "IN_MEMORY_MAX", in_memory_max)
    black = remembered(alice, "Alice drinks her coffee black.", minutes_ago=30, importance=5)
    takes = remembered(alice, "Alice takes her coffee black.", said=["coffee, black", "no milk"], importance=6)
    jazz = remembered(alice, "Alice likes jazz.")
    episodes = {*black.sources.all(), *takes.sources.all()}

    counts = consolidate_user(user=alice, actor=JOB)

    assert counts["groups"] == 1 and counts["merged"] == 2
    merged = merged_memory(alice)
    assert merged.text == "Alice takes her coffee black."  # the more important one represents the group
    assert set(merged.sources.all()) == episodes
    assert set(merged.derived_from.all()) == {black, takes}
    assert merged.importance == 6 and merged.kind == "semantic"
    for member in (black, takes):
        member.refresh_from_db()
        assert member.status == "archived" and member.status_reason == f"merged into {merged.id}"
    jazz.refresh_from_db()
    assert jazz.status == "active"

    result = search_memories(Principal.for_user(alice), user=alice, params=SearchParams("How does Alice drink coffee?"))
    found = [hit.item.id for hit in result.hits]
    assert merged.id in found and black.id not in found and takes.id not in found


@pytest.mark.django_db
def test_a_merge_is_recorded_with_ids_only(alice):
    black = remembered(alice, "Alice drinks her coffee black.")
    takes = remembered(alice, "Alice takes her coffee black.")
    consolidate_user(user=alice, actor=JOB)
    merged = Memory.objects.get(user=alice, status="active")
    events = MemoryEvent.objects.filter(op="MERGE")
    assert {e.memory_id for e in events} == {black.id, takes.id, merged.id}
    for event in events:
        assert event.actor_type == "job" and event.actor_id == "consolidation"
        assert "coffee" not in event.reason and "coffee" not in str(event.data)
    assert events.get(memory_id=black.id).data["into"] == str(merged.id)


@pytest.mark.django_db
def test_running_consolidation_again_changes_nothing(alice):
    remembered(alice, "Alice drinks her coffee black.")
    remembered(alice, "Alice takes her coffee black.")
    remembered(alice, "Alice likes jazz.")
    consolidate_user(user=alice, actor=JOB)
    rows, events, texts = Memory.objects.count(), MemoryEvent.objects.count(), active_texts(alice)

    again = consolidate_user(user=alice, actor=JOB)

    assert again["merged"] == 0 and again["groups"] == 0
    assert (Memory.objects.count(), MemoryEvent.objects.count(), active_texts(alice)) == (rows, events, texts)


@pytest.mark.django_db
def test_a_chain_of_preferences_does_not_merge_its_far_ends(alice):
    # Real-model cosines: editor-dark ~ terminal-dark 0.92, terminal-dark ~ terminal-light 0.92,
    # editor-dark ~ terminal-light 0.83.
    editor = remembered(alice, "Alice prefers dark mode in the editor.", minutes_ago=30)
    terminal = remembered(alice, "Alice prefers dark mode in the terminal.", minutes_ago=20)
    light = remembered(alice, "Alice prefers light mode in the terminal.", minutes_ago=10)

    counts = consolidate_user(user=alice, actor=JOB)

    assert counts["components"] == 1 and counts["merged"] == 2
    merged = merged_memory(alice)
    assert set(merged.derived_from.all()) == {editor, terminal}  # the oldest represents the group
    assert active_texts(alice) == [
        "Alice prefers dark mode in the editor.",
        "Alice prefers light mode in the terminal.",
    ]
    light.refresh_from_db()
    assert light.status == "active"


@pytest.mark.django_db
@pytest.mark.parametrize("order", list(itertools.permutations(CHAIN)))
def test_stored_chain_merges_only_what_is_within_reach_of_the_representative(alice, order):
    for age, angle in enumerate(reversed(order)):  # order[0] is the oldest
        remembered(alice, f"Alice noted item {angle}.", embedding=CHAIN[angle], minutes_ago=age * 10)
    representative = order[0]

    consolidate_user(user=alice, actor=JOB)

    merged = merged_memory(alice)
    members = {m.text for m in merged.derived_from.all()}
    assert merged.text == f"Alice noted item {representative}."
    if representative == 21:
        assert members == {f"Alice noted item {angle}." for angle in CHAIN}
    else:
        far_end = 42 if representative == 0 else 0
        assert members == {f"Alice noted item {representative}.", "Alice noted item 21."}
        assert active_texts(alice) == sorted([merged.text, f"Alice noted item {far_end}."])


@pytest.mark.django_db
def test_structured_memories_with_different_values_never_merge(alice):
    same = at_angle(0)
    remembered(alice, "Alice likes jazz.", embedding=same, subject="alice", attribute="likes", value="jazz")
    remembered(alice, "Alice likes blues.", embedding=same, subject="alice", attribute="likes", value="blues")
    remembered(
        alice,
        "Alice's sister lives in Porto.",
        embedding=same,
        subject="alice's sister",
        attribute="city",
        value="Porto",
        cardinality="single",
    )
    remembered(
        alice,
        "Alice lives in Porto.",
        embedding=same,
        subject="alice",
        attribute="city",
        value="Porto",
        cardinality="single",
    )

    counts = consolidate_user(user=alice, actor=JOB)

    assert counts["components"] == 1 and counts["merged"] == 0
    assert Memory.objects.filter(user=alice, status="active").count() == 4


@pytest.mark.django_db
def test_a_merge_keeps_the_single_valued_slot_of_its_structured_member(alice):
    porto = remembered(
        alice,
        "Alice lives in Porto.",
        embedding=at_angle(0),
        subject="alice",
        attribute="city",
        value="Porto",
        cardinality="single",
        minutes_ago=10,
    )
    restated = remembered(alice, "Alice's home is Porto.", embedding=at_angle(5), importance=7)

    consolidate_user(user=alice, actor=JOB)

    merged = Memory.objects.get(user=alice, status="active")
    assert merged.text == restated.text
    assert (merged.subject, merged.attribute, merged.value, merged.cardinality) == ("alice", "city", "Porto", "single")
    assert set(merged.derived_from.all()) == {porto, restated}
    # ...and is searched as a memory of that slot (after its name), not as the slotless text it took
    searched_as = search_vector(merged.text, "city", alice, subject=merged.subject)
    assert float(np.asarray(merged.search_embedding, dtype=np.float32) @ searched_as) > 0.999


@pytest.mark.django_db
def test_consolidation_stays_inside_the_user_and_leaves_summaries_alone(alice, bob, charlie):
    same = at_angle(0)
    mine = remembered(alice, "Alice drinks her coffee black.", embedding=same)
    remembered(bob, "Bob drinks his coffee black.", embedding=same)
    remembered(charlie, "Charlie drinks his coffee black.", embedding=same)
    make_memory(alice, "Alice: coffee black.", embedding=same, kind="summary", attribute="profile")
    make_memory(alice, "Alice said coffee black today.", embedding=same, scope="session", session="s1")

    counts = consolidate_user(user=alice, actor=JOB)

    assert counts == {"memories": 1, "edges": 0, "components": 0, "groups": 0, "merged": 0, "skipped": 0}
    mine.refresh_from_db()
    assert mine.status == "active"
    assert not Memory.objects.filter(status="archived").exists()


@pytest.mark.django_db
def test_a_group_that_changed_since_it_was_read_is_skipped(alice):
    first = remembered(alice, "Alice drinks her coffee black.", embedding=at_angle(0))
    second = remembered(alice, "Alice takes her coffee black.", embedding=at_angle(1))
    Memory.objects.filter(pk=second.pk).update(status="invalidated")
    assert memories_merge(members=[first, second], actor=JOB) is None
    first.refresh_from_db()
    assert first.status == "active"


@pytest.mark.django_db
def test_a_merge_is_recomputed_from_what_remains_after_a_deletion(alice):
    black = remembered(alice, "Alice drinks her coffee black.", minutes_ago=10)
    takes = remembered(alice, "Alice takes her coffee black.", importance=8)
    consolidate_user(user=alice, actor=JOB)
    merged = Memory.objects.get(user=alice, status="active")
    assert merged.text == takes.text

    takes.delete()  # what a deletion does first; the merge must not keep saying what it said
    rebuilt = merge_recompute(merged=merged, actor=JOB)

    assert rebuilt.id == merged.id and rebuilt.text == black.text
    assert set(rebuilt.sources.all()) == set(black.sources.all())
    assert not Memory.objects.filter(text=takes.text).exists()

    black.delete()
    assert merge_recompute(merged=rebuilt, actor=JOB) is None
    assert not Memory.objects.filter(pk=merged.pk).exists()


@pytest.mark.django_db
def test_untrusted_memories_never_merge_into_what_the_user_said(alice):
    """Merged, the web page would carry the user's provenance, and keep the user's fact alive after
    the user deleted their own message. Real vectors: the two texts are near-duplicates."""
    said = remembered(alice, "Alice plays the cello in an amateur orchestra.", importance=7, minutes_ago=10)
    page = say(alice, "Alice plays cello in an amateur orchestra.", source="web")
    web = make_memory(alice, page.content, provenance=Memory.Provenance.UNTRUSTED_SOURCE, confidence=0.5)
    web.sources.add(page, through_defaults={"organization_id": alice.organization_id})
    assert float(np.dot(consolidate._unit(said.embedding), consolidate._unit(web.embedding))) >= 0.9

    counts = consolidate_user(user=alice, actor=JOB)

    assert counts["components"] == 1 and counts["merged"] == 0
    said.refresh_from_db()
    web.refresh_from_db()
    assert said.status == web.status == Memory.Status.ACTIVE
    assert said.provenance == Memory.Provenance.USER_STATED
    assert list(said.sources.values_list("source", flat=True)) == ["user"]


@pytest.mark.django_db
def test_untrusted_near_duplicates_still_merge_with_each_other(alice):
    for content in ("Alice plays the cello in an amateur orchestra.", "Alice plays cello in an amateur orchestra."):
        memory = make_memory(alice, content, provenance=Memory.Provenance.UNTRUSTED_SOURCE)
        page = say(alice, content, source="web")
        memory.sources.add(page, through_defaults={"organization_id": alice.organization_id})

    assert consolidate_user(user=alice, actor=JOB)["merged"] == 2
    assert merged_memory(alice).provenance == Memory.Provenance.UNTRUSTED_SOURCE
