"""Governance: deletion that is real, correction, export, pause."""

import json

import pytest

from memoryapp.actors import ActorRef, Principal
from memoryapp.models import AccessLog, DeletionReceipt, Episode, Memory, MemoryEvent, User
from memoryapp.selectors.context import context_assemble
from memoryapp.selectors.search import SearchParams, search_episodes, search_memories
from memoryapp.selectors.versions import memory_version_ids
from memoryapp.services import govern
from memoryapp.services.access import access_record
from memoryapp.services.extraction import episodes_extract
from memoryapp.services.reflect import summaries_rebuild
from tests.conftest import database_dump
from tests.factories import make_user, org, say

MARKER = "Zorblattquix"
ACTOR = ActorRef("user", "test")


def tell(user, text, when="2025-03-01", session="s"):
    episode = say(user, text, when=when, session=session)
    episodes_extract(episode_ids=[episode.id], actor=ACTOR)
    return episode


@pytest.mark.django_db(transaction=True)
def test_a_deleted_episode_leaves_no_trace_anywhere(client):
    acme = org("Acme")
    sam = make_user(acme, "sam")
    tell(sam, "I'm vegetarian.")
    tell(sam, "I work at Initech.")
    marked = tell(sam, f"I live in {MARKER}.", when="2025-03-02")
    city = Memory.objects.get(user=sam, attribute="city")
    assert MARKER in city.text
    summaries_rebuild(user=sam, actor=ACTOR)
    profile = Memory.objects.get(user=sam, kind="summary", attribute="profile")
    assert MARKER in profile.text
    agent_read = search_memories(Principal.for_user(sam), user=sam, params=SearchParams(query="where does sam live"))
    access_record(Principal.for_user(sam), items=[h.item for h in agent_read.hits], query="where does sam live",
                  endpoint="search", user_id=sam.id)

    preview = govern.plan_episode_deletion(marked)
    assert preview.memories == {city.id} and profile.id in preview.recompute
    receipt = govern.episode_delete(episode=marked, actor=ACTOR)

    assert receipt.deleted["episodes"]["ids"] == [str(marked.id)]
    assert str(profile.id) in receipt.recomputed and MARKER not in json.dumps(receipt.deleted)
    profile.refresh_from_db()
    assert MARKER not in profile.text and "vegetarian" in profile.text, "rebuilt from what remains"
    principal = Principal.for_user(sam)
    for query in ("where does sam live", "city", "home town"):
        params = SearchParams(query=query, k=20, min_score=0)
        assert MARKER not in str([h.item.text for h in search_memories(principal, user=sam, params=params).hits])
        assert MARKER not in str([h.item.content for h in search_episodes(principal, user=sam, params=params).hits])
        assert MARKER not in context_assemble(principal, user=sam, params=params, budget_tokens=2000).text
    assert MARKER not in json.dumps(govern.user_export(user=sam))
    assert MARKER not in database_dump()


@pytest.mark.django_db
def test_memories_with_other_sources_lose_only_the_deleted_one(alice):
    first = tell(alice, "I live in Porto.")
    second = tell(alice, "I live in Porto.", when="2025-04-01")
    city = Memory.objects.get(user=alice, attribute="city")
    assert city.sources.count() == 2
    plan = govern.plan_episode_deletion(first)
    assert plan.memories == set() and plan.sources_unlinked == 1
    govern.episode_delete(episode=first, actor=ACTOR)
    city.refresh_from_db()
    assert list(city.sources.all()) == [second] and city.status == "active"


@pytest.mark.django_db
def test_deleting_a_memory_takes_its_history_versions_too(alice):
    tell(alice, "I live in Porto.")
    tell(alice, "I moved to Lisbon.", when="2025-07-01")
    lisbon = Memory.objects.get(user=alice, attribute="city", status="active")
    assert Memory.objects.filter(user=alice, attribute="city").count() == 2
    receipt = govern.memory_delete(memory=lisbon, actor=ACTOR)
    assert receipt.deleted["memories"]["count"] == 2
    assert not Memory.objects.filter(user=alice, attribute="city").exists()
    assert Episode.objects.filter(user=alice).count() == 2, "the raw record stays until it is deleted itself"


@pytest.mark.django_db
def test_a_summary_left_without_members_is_deleted_not_recomputed(alice):
    tell(alice, "I work at Initech.")
    summaries_rebuild(user=alice, actor=ACTOR)
    profile = Memory.objects.get(user=alice, kind="summary")
    receipt = govern.memory_delete(memory=Memory.objects.get(user=alice, attribute="employer"), actor=ACTOR)
    assert str(profile.id) in receipt.deleted["memories"]["ids"] and receipt.recomputed == []
    assert not Memory.objects.filter(pk=profile.pk).exists()


@pytest.mark.django_db
def test_events_and_logs_keep_ids_not_text(alice):
    episode = tell(alice, f"I live in {MARKER}.")
    memory = Memory.objects.get(user=alice)
    AccessLog.objects.create(organization=alice.organization, actor_type="agent", actor_id="a", user_id=alice.id,
                             endpoint="search", query=f"is {MARKER} nice?", memory_ids=[memory.id])
    govern.episode_delete(episode=episode, actor=ACTOR)
    assert MemoryEvent.objects.filter(memory_id=memory.id, op="DELETE").exists()
    assert MARKER not in str(list(MemoryEvent.objects.values_list("reason", "data")))
    assert MARKER not in str(list(AccessLog.objects.values_list("query", flat=True)))


@pytest.mark.django_db
def test_deleting_everything_of_a_user_leaves_the_neighbours_untouched(alice, bob, charlie):
    for person in (alice, bob, charlie):
        tell(person, "I live in Porto. I have a dog named Rex.")
        summaries_rebuild(user=person, actor=ACTOR)

    def counts(user):
        return (Memory.objects.filter(user=user).count(), Episode.objects.filter(user=user).count())

    bob_before, charlie_before = counts(bob), counts(charlie)
    preview = govern.plan_user_deletion(alice)
    assert len(preview.memories) == counts(alice)[0] and len(preview.episodes) == 1
    receipt = govern.user_memories_delete(user=alice, actor=ACTOR)
    assert counts(alice) == (0, 0)
    assert counts(bob) == bob_before and counts(charlie) == charlie_before
    assert DeletionReceipt.objects.get(pk=receipt.pk).target == "user"
    assert User.objects.filter(pk=alice.pk).exists(), "the account stays; its memories go"


@pytest.mark.django_db
def test_correction_creates_a_new_version_and_flags_siblings(alice):
    tell(alice, "I live in Porto. I work at Initech.")
    city = Memory.objects.get(user=alice, attribute="city")
    employer = Memory.objects.get(user=alice, attribute="employer")
    corrected = govern.memory_correct(memory=city, actor=ActorRef.for_user(alice), text="Alice lives in Braga.")
    city.refresh_from_db()
    employer.refresh_from_db()
    assert corrected.provenance == "user_corrected" and corrected.status == "active"
    assert city.status == "invalidated" and city.expired_at is not None
    assert employer.needs_review, "another memory from the same source episode is flagged"
    assert set(corrected.sources.all()) == set(city.sources.all())
    assert corrected.pk in memory_version_ids({city.pk})
    ops = list(MemoryEvent.objects.filter(memory_id__in=[city.pk, corrected.pk]).values_list("op", flat=True))
    assert "INVALIDATE" in ops and "CORRECT" in ops
    with pytest.raises(ValueError, match="only an active memory"):
        govern.memory_correct(memory=city, actor=ACTOR, text="again")


@pytest.mark.django_db
def test_a_corrected_text_gives_its_slot_the_new_value(alice):
    tell(alice, "I live in Porto. I'm vegetarian.")
    city = Memory.objects.get(user=alice, attribute="city")
    diet = Memory.objects.get(user=alice, attribute="diet")
    assert (city.value, diet.value) == ("Porto", "vegetarian")
    braga = govern.memory_correct(memory=city, actor=ACTOR, text="Alice lives in Braga.")
    vegan = govern.memory_correct(memory=diet, actor=ACTOR, text="alice is vegan.")
    assert (braga.value, vegan.value) == ("Braga", "vegan")
    # Reworded beyond the old sentence's frame: the slot holds the whole statement, not a stale value.
    fish = govern.memory_correct(memory=vegan, actor=ACTOR, text="Alice eats fish now.")
    assert fish.value == "Alice eats fish now."


@pytest.mark.django_db
def test_a_correction_that_changes_nothing_is_refused_and_keeps_the_memory(alice):
    tell(alice, "I live in Porto.")
    city = Memory.objects.get(user=alice, attribute="city")
    with pytest.raises(ValueError, match="nothing to correct"):
        govern.memory_correct(memory=city, actor=ACTOR, text=f"  {city.text} ")
    city.refresh_from_db()
    assert city.status == "active" and Memory.objects.filter(user=alice).count() == 1
    assert govern.memory_correct(memory=city, actor=ACTOR, importance=city.importance + 1).text == city.text


@pytest.mark.django_db
def test_export_holds_each_memory_with_its_versions_sources_and_the_episodes(alice):
    tell(alice, "I'm vegetarian. I live in Porto.")
    tell(alice, "I moved to Lisbon.", when="2025-06-01")
    exported = json.loads(json.dumps(govern.user_export(user=alice)))
    assert exported["format"] == govern.EXPORT_FORMAT and exported["user"]["external_id"] == "alice"
    episodes = {e["id"]: e["content"] for e in exported["episodes"]}
    assert sorted(episodes.values()) == ["I moved to Lisbon.", "I'm vegetarian. I live in Porto."]
    cities = {m["value"]: m for m in exported["memories"] if m["attribute"] == "city"}
    assert (cities["Porto"]["status"], cities["Lisbon"]["status"]) == ("superseded", "active")
    assert cities["Lisbon"]["supersedes"] == cities["Porto"]["id"]
    assert [episodes[pk] for pk in cities["Lisbon"]["sources"]] == ["I moved to Lisbon."]
    assert {e["op"] for e in exported["events"]} >= {"ADD", "SUPERSEDE"}


@pytest.mark.django_db
def test_pause_stops_new_memories_and_resume_restarts_them(alice):
    govern.memory_writing_set(user=alice, paused=True, actor=ActorRef.for_user(alice))
    assert say(alice, "I live in Porto.") is None
    assert Episode.objects.filter(user=alice).count() == 0
    govern.memory_writing_set(user=alice, paused=False, actor=ActorRef.for_user(alice))
    tell(alice, "I live in Porto.")
    assert Memory.objects.filter(user=alice).count() == 1


# --- a merged memory is rebuilt from the sources that remain (issue 16) ----------------------


def diet_said(user) -> str:
    """Everything the store says about the user, every version and summary included."""
    return " ".join(f"{m.text} {m.value}" for m in Memory.objects.filter(user=user)).lower()


@pytest.fixture
def merged_diet(alice):
    vegetarian = tell(alice, "I'm vegetarian.")
    eggs = tell(alice, "I still eat eggs.", when="2025-03-05")
    summaries_rebuild(user=alice, actor=ACTOR)
    diet = Memory.objects.get(user=alice, attribute="diet")
    assert set(diet.sources.all()) == {vegetarian, eggs} and "eggs" in diet.text and "vegetarian" in diet.text
    assert "eggs" in Memory.objects.get(user=alice, kind="summary", attribute="profile").text
    return diet, vegetarian, eggs


@pytest.mark.django_db
def test_deleting_the_episode_merged_into_a_memory_takes_what_it_said_out_of_it(alice, merged_diet):
    diet, _, eggs = merged_diet

    preview = govern.plan_episode_deletion(eggs)
    assert str(diet.id) in preview.as_dict()["recomputed"], "the preview says the memory is rebuilt"
    receipt = govern.episode_delete(episode=eggs, actor=ACTOR)

    diet.refresh_from_db()
    assert str(diet.id) in receipt.recomputed
    assert "eggs" not in diet_said(alice), "no memory, version or summary says it any more"
    assert diet.text == "Alice is vegetarian." and diet.value == "vegetarian" and diet.status == "active"
    assert [e.content for e in diet.sources.all()] == ["I'm vegetarian."]
    principal = Principal.for_user(alice)
    params = SearchParams(query="eggs", k=20, min_score=0)
    assert "eggs" not in context_assemble(principal, user=alice, params=params, budget_tokens=2000).text.lower()


@pytest.mark.django_db
def test_deleting_the_first_source_of_a_merged_memory_leaves_only_what_the_other_says(alice, merged_diet):
    diet, vegetarian, _ = merged_diet

    govern.episode_delete(episode=vegetarian, actor=ACTOR)

    assert "vegetarian" not in diet_said(alice)
    diet.refresh_from_db()
    assert "eggs" in diet.text and [e.content for e in diet.sources.all()] == ["I still eat eggs."]


@pytest.mark.django_db
def test_an_earlier_version_merged_from_a_deleted_episode_is_rebuilt_too(alice, merged_diet):
    diet, _, eggs = merged_diet
    tell(alice, "I'm vegan now.", when="2025-06-01")
    diet.refresh_from_db()
    assert diet.status == "superseded" and "eggs" in diet.text

    govern.episode_delete(episode=eggs, actor=ACTOR)

    assert "eggs" not in diet_said(alice)
    assert Memory.objects.get(user=alice, attribute="diet", status="active").value == "vegan"


@pytest.mark.django_db
def test_deleting_both_sources_of_a_merged_memory_deletes_it(alice, merged_diet):
    diet, vegetarian, eggs = merged_diet
    govern.episode_delete(episode=eggs, actor=ACTOR)
    receipt = govern.episode_delete(episode=vegetarian, actor=ACTOR)
    assert str(diet.id) in receipt.deleted["memories"]["ids"]
    assert not Memory.objects.filter(user=alice, attribute="diet").exists()


# --- forgetting a memory with the messages it came from (issue 18, item 6) --------------------


def _miso_found(user, question="Does Sam have a cat?") -> dict:
    """Where the cat's name still shows up for an agent asking about it (real model, every result)."""
    principal, params = Principal.for_user(user), SearchParams(query=question, k=20, min_score=-1)
    return {
        "memories": [h.item.text for h in search_memories(principal, user=user, params=params).hits
                     if "Miso" in h.item.text],
        "episodes": [h.item.content for h in search_episodes(principal, user=user, params=params).hits
                     if "Miso" in h.item.content],
        "context": "Miso" in context_assemble(principal, user=user, params=params, budget_tokens=4000).text,
    }


@pytest.mark.django_db
def test_deleting_a_memory_keeps_its_message_unless_asked_and_says_so_in_the_preview(alice):
    cat_message = tell(alice, "I have a cat named Miso.")
    cat = Memory.objects.get(user=alice, text__contains="Miso")

    plain = govern.plan_memory_deletion(cat)
    assert plain.episodes == set() and plain.sources_kept == {cat_message.id}
    assert plain.as_dict()["sources_kept"] == {"count": 1, "ids": [str(cat_message.id)]}
    offered = govern.plan_memory_deletion(cat, with_sources=True)
    assert offered.episodes == {cat_message.id} and offered.memories == {cat.id} and offered.sources_kept == set()

    govern.memory_delete(memory=cat, actor=ACTOR)
    assert _miso_found(alice, "Does Alice have a cat?")["episodes"] == ["I have a cat named Miso."], (
        "without the option the message stays, and episode search still quotes it")


@pytest.mark.django_db
def test_deleting_a_memory_with_its_sources_leaves_nothing_an_agent_can_find(alice):
    tell(alice, "I live in Lisbon.")
    tell(alice, "I work as a nurse.")
    first = tell(alice, "I have a cat named Miso.")
    again = tell(alice, "I have a cat named Miso.", when="2025-03-05")  # said twice: both messages go
    summaries_rebuild(user=alice, actor=ACTOR)
    cat = Memory.objects.get(user=alice, attribute="pet", status="active")
    question = "Does Alice have a cat?"
    assert _miso_found(alice, question)["episodes"], "found before"

    receipt = govern.memory_delete(memory=cat, actor=ACTOR, with_sources=True)

    assert _miso_found(alice, question) == {"memories": [], "episodes": [], "context": False}
    assert not Episode.objects.filter(user=alice, content__contains="Miso").exists()
    assert not Memory.objects.filter(user=alice, text__contains="Miso").exists(), "summaries rebuilt without it"
    assert receipt.target == govern.MEMORY_WITH_SOURCES
    assert receipt.deleted["episodes"]["ids"] == sorted([str(first.id), str(again.id)])
    assert str(cat.id) in receipt.deleted["memories"]["ids"]
    assert Memory.objects.filter(user=alice, text__contains="Lisbon").exists(), "the rest is untouched"


@pytest.mark.django_db
def test_the_plan_with_sources_shows_the_other_memories_a_shared_message_takes_or_keeps(alice):
    both = tell(alice, "I have a cat named Miso. I live in Lisbon.")
    tell(alice, "I work as a nurse.")
    tell(alice, "I work as a nurse.", when="2025-03-02")
    nurse_too = tell(alice, "I have a cat named Miso. I work as a nurse.", when="2025-03-03")
    cat = Memory.objects.get(user=alice, attribute="pet")
    lisbon = Memory.objects.get(user=alice, attribute="city")
    nurse = Memory.objects.get(user=alice, attribute="job")

    plain = govern.plan_memory_deletion(cat)
    offered = govern.plan_memory_deletion(cat, with_sources=True)

    assert plain.memories == {cat.id}, "the plain deletion touches nothing else"
    assert offered.episodes == {both.id, nurse_too.id}
    assert offered.memories == {cat.id, lisbon.id}, "Lisbon was said only in a message that goes"
    assert nurse.id not in offered.memories and offered.sources_unlinked == 1, "the nurse job keeps other sources"
    govern.memory_delete(memory=cat, actor=ACTOR, with_sources=True)
    assert not Memory.objects.filter(pk__in=[cat.id, lisbon.id]).exists()
    assert Memory.objects.filter(pk=nurse.id).exists()


NAMELESS = ActorRef("admin", "")  # refused by the events table's actor_named constraint: the event cannot be written


@pytest.mark.django_db
@pytest.mark.parametrize("change", [
    lambda user, agent: govern.memory_writing_set(user=user, paused=True, actor=NAMELESS),
    lambda user, agent: govern.agents_reading_set(user=user, paused=True, actor=NAMELESS),
    lambda user, agent: govern.agent_block_set(user=user, agent=agent, blocked=True, actor=NAMELESS),
], ids=["pause writing", "stop agents reading", "block an agent"])
def test_a_switch_whose_event_cannot_be_written_changes_nothing(alice, change):
    from memoryapp.models import AgentBlock
    from tests.factories import make_agent

    agent, _ = make_agent(alice.organization, "switch-bot")
    with pytest.raises(Exception, match="actor_named"):
        change(alice, agent)
    alice.refresh_from_db()  # the test's own transaction is still usable: the change rolled back alone
    assert (alice.memory_paused, alice.agents_reading_paused) == (False, False)
    assert not AgentBlock.objects.filter(user=alice).exists()
