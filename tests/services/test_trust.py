"""Untrusted content (web pages, tool output, documents) never overrides what the user said: a
contradiction waits in the quarantine queue for an admin, and the user's fact stays current.
Everything here goes through the real write path (rules extractor, real embedding model)."""

import pytest

from memoryapp import embeddings
from memoryapp.actors import ActorRef, Principal
from memoryapp.models import Episode, Memory, MemoryEvent
from memoryapp.selectors.context import context_assemble
from memoryapp.selectors.search import SearchParams
from memoryapp.services.apply import candidate_apply, draft_from_candidate
from memoryapp.services.extract.base import Candidate
from memoryapp.services.extraction import episodes_extract
from memoryapp.services.govern import memory_correct
from tests.factories import at, say
from tests.web.conftest import remember

pytestmark = pytest.mark.django_db


def current(user, attribute) -> list[str]:
    return list(Memory.objects.filter(user=user, attribute=attribute, status="active").values_list("text", flat=True))


@pytest.mark.parametrize(
    "said, web_page, attribute",
    [
        ("I live in Porto.", "I moved to Madrid last week.", "city"),  # would SUPERSEDE
        ("I live in Porto.", "Actually I live in Madrid.", "city"),  # would INVALIDATE and ADD
        ("I'm vegetarian.", "I'm no longer vegetarian.", "diet"),  # a negation: would SUPERSEDE
        ("I'm vegetarian.", "I eat meat now.", "diet"),
        ("I'm vegetarian.", "I still eat eggs.", "diet"),  # a complement: would UPDATE (merge into it)
        ("I'm a nurse.", "I'm a pilot.", "job"),
        ("I work at Initech.", "I work at Globex now.", "employer"),
    ],
)
def test_web_content_contradicting_what_the_user_said_goes_to_quarantine(alice, said, web_page, attribute):
    (users_fact,) = remember(alice, said, when="2025-03-10")
    (held,) = remember(alice, web_page, when="2025-05-01", source="web")

    users_fact.refresh_from_db()
    assert users_fact.status == Memory.Status.ACTIVE and users_fact.valid_to is None and users_fact.expired_at is None
    assert current(alice, attribute) == [users_fact.text], "the user's fact is still the current one"
    assert users_fact.text == Memory.objects.get(pk=users_fact.pk).text, "and it was not merged into"
    assert held.status == Memory.Status.QUARANTINED and held.provenance == Memory.Provenance.UNTRUSTED_SOURCE
    assert held.status_reason == f"untrusted content conflicts with the {attribute} the user stated"
    event = MemoryEvent.objects.get(memory_id=held.pk)
    assert event.op == MemoryEvent.Op.QUARANTINE and event.reason == held.status_reason

    context = context_assemble(Principal.for_user(alice), user=alice, budget_tokens=500,
                               params=SearchParams(query=web_page, min_score=0))
    assert users_fact.text in context.text and held.text not in context.text


def test_a_fact_the_user_corrected_is_held_to_as_well(alice, acme_admin):
    (porto,) = remember(alice, "I live in Porto.", when="2025-03-10")
    braga = memory_correct(memory=porto, actor=ActorRef.for_user(alice), text="Alice lives in Braga.")
    (held,) = remember(alice, "I moved to Madrid last week.", when="2025-05-01", source="document")
    assert held.status == Memory.Status.QUARANTINED
    assert current(alice, "city") == [braga.text]


def test_untrusted_content_that_conflicts_with_nothing_the_user_said_is_still_added(alice):
    remember(alice, "I live in Porto.", when="2025-03-10")
    (cat,) = remember(alice, "I have a cat named Luna.", when="2025-05-01", source="web")
    (madrid,) = remember(alice, "I moved to Madrid last week.", when="2025-05-01", source="tool")
    assert cat.status == Memory.Status.ACTIVE and cat.provenance == Memory.Provenance.UNTRUSTED_SOURCE
    assert cat.confidence <= 0.5
    assert madrid.status == Memory.Status.QUARANTINED, "the city is the user's"


def test_untrusted_content_still_replaces_untrusted_content(alice):
    """Only what the user said is protected: a web value of a slot the user never filled changes as before."""
    (madrid,) = remember(alice, "I live in Madrid.", when="2025-03-10", source="web")
    (lisbon,) = remember(alice, "I moved to Lisbon last week.", when="2025-05-01", source="web")
    madrid.refresh_from_db()
    assert madrid.status == Memory.Status.SUPERSEDED and lisbon.supersedes_id == madrid.pk
    assert current(alice, "city") == [lisbon.text]


def test_the_user_still_replaces_an_untrusted_value(alice):
    (madrid,) = remember(alice, "I live in Madrid.", when="2025-03-10", source="web")
    (porto,) = remember(alice, "I moved to Porto last week.", when="2025-05-01")
    madrid.refresh_from_db()
    assert madrid.status == Memory.Status.SUPERSEDED and porto.provenance == Memory.Provenance.USER_STATED


def test_web_content_restating_the_users_fact_is_not_linked_to_it(alice):
    """Linked, the web page would keep "Alice lives in Porto" (labelled user_stated) alive after the
    user deleted the message that said it."""
    (porto,) = remember(alice, "I live in Porto.", when="2025-03-10")
    said = porto.sources.get()
    web = say(alice, "I live in Porto.", when="2025-05-01", source="web")
    (noop,) = episodes_extract(episode_ids=[web.id], actor=ActorRef("agent", "test"))
    assert (noop.op, noop.memory_id) == ("NOOP", porto.pk)
    assert list(porto.sources.all()) == [said]
    assert MemoryEvent.objects.filter(memory_id=porto.pk, op="NOOP").get().data == {"sources_added": []}


def judged(user, text, *, when, source):
    """One unstructured statement from `source`, judged and applied as extraction would."""
    episode = say(user, text, when=when, source=source)
    candidate = Candidate(text=text, subject="", attribute="", value="", valid_from=at(when))
    untrusted = episode.trust == Episode.Trust.UNTRUSTED
    draft = draft_from_candidate(
        candidate, embedding=embeddings.encode_one(text), organization=user.organization, user=user,
        sources=[episode],
        provenance=Memory.Provenance.UNTRUSTED_SOURCE if untrusted else Memory.Provenance.USER_STATED,
    )
    return candidate_apply(candidate=candidate, draft=draft, actor=ActorRef("agent", "test"))


def test_the_llm_judge_cannot_let_untrusted_content_supersede_the_user(alice, endpoint):
    """Unstructured statements are judged by the LLM; its decision is held to the same rule."""
    (added,) = judged(alice, "Alice is training for the Lisbon marathon in October.", when="2025-03-10",
                      source="user")
    endpoint.answer_content('{"op": "SUPERSEDE", "target": 1, "reason": "she switched races"}')
    (operation,) = judged(alice, "Alice is now training for the Porto marathon in November.", when="2025-05-01",
                          source="web")
    assert len(endpoint.requests) == 1, "the LLM judge was asked"
    assert operation.op == "QUARANTINE"
    assert Memory.objects.get(pk=operation.memory_id).status == Memory.Status.QUARANTINED
    assert Memory.objects.get(pk=added.memory_id).status == Memory.Status.ACTIVE
