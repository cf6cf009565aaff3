"""Redaction on every API write: corrections, the structured fields of a new memory, stored search
queries. The secret is in no table afterwards, and the placeholder shows where it was."""

import pytest

from memoryapp.models import AccessLog, Memory, MemoryEvent
from tests.stored_text import tables_containing

pytestmark = pytest.mark.django_db

OPENAI_KEY = "sk-proj-" + "Zx8cVb5nMa2sDf7gHj4kLq1wEr6tYu9i" * 2


def sam_lives_in_porto(agent) -> Memory:
    created = agent.post("episodes", {"user": "sam", "wait": True,
                                      "messages": [{"role": "user", "content": "I live in Porto."}]})
    assert created.status_code == 201, created.body
    return Memory.objects.get(user__external_id="sam", attribute="city")


def test_a_correction_through_the_api_is_stored_redacted(acme_agent):
    memory = sam_lives_in_porto(acme_agent)

    fixed = acme_agent.patch(f"memories/{memory.id}", {"text": "Sam lives in Porto; card 4111 1111 1111 1111."})

    assert fixed.status_code == 200, fixed.body
    assert fixed.body["text"] == "Sam lives in Porto; card [REDACTED:card_number]."
    assert tables_containing("4111 1111 1111 1111") == []
    assert MemoryEvent.objects.filter(op="REDACT", memory_id=fixed.body["id"]).exists()


def test_a_corrected_value_is_redacted_in_the_light_of_its_slot(acme_agent):
    memory = sam_lives_in_porto(acme_agent)

    fixed = acme_agent.patch(f"memories/{memory.id}", {"value": "Braga, password: Geheim-99x"})

    assert fixed.status_code == 200, fixed.body
    assert fixed.body["value"] == "Braga, password: [REDACTED:password]"
    assert tables_containing("Geheim-99x") == []


def test_the_structured_fields_of_a_new_memory_are_stored_redacted(acme_agent):
    created = acme_agent.post("memories", {
        "user": "sam", "text": "Sam's wifi password is set.", "subject": f"sam {OPENAI_KEY}",
        "attribute": "wifi password", "value": "Sunny-Day-42", "session": "setup, password: Hunter2-x",
    })

    assert created.status_code == 201, created.body
    memory = Memory.objects.get(pk=created.body["memory"]["id"])
    assert (memory.value, memory.subject) == ("[REDACTED:password]", "sam [REDACTED:openai_key]")
    assert memory.session == "setup, password: [REDACTED:password]"
    for secret in ("Sunny-Day-42", OPENAI_KEY, OPENAI_KEY.lower(), "Hunter2-x"):
        assert tables_containing(secret) == [], secret
    assert "Sunny-Day-42" not in str(created.body)
    assert MemoryEvent.objects.filter(op="REDACT", memory_id=memory.id).exists()


@pytest.mark.parametrize("endpoint", ["search", "episodes/search", "context"])
def test_a_search_query_is_logged_redacted(acme_agent, endpoint):
    sam_lives_in_porto(acme_agent)

    found = acme_agent.post(endpoint, {"user": "sam", "query": "which city? my password: Hunter2-x"})

    assert found.status_code == 200, found.body
    assert AccessLog.objects.get(endpoint=endpoint).query == "which city? my password: [REDACTED:password]"
    assert tables_containing("Hunter2-x") == []
