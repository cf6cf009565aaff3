"""Bad input in every dashboard form: a clear 4xx or a form error, nothing stored, text escaped."""

import pytest

from memoryapp.models import Agent, Memory
from tests.web.conftest import remember

HOSTILE = ["a\x00b", "x" * 5000, "<img src=x onerror=alert(1)>", "'; DROP TABLE memoryapp_memory; --",
           "مرحبا \u200f 👋🏽"]
INVALID_UTF8 = "%ED%A0%80%FF"  # a lone surrogate and a stray byte, as a client could send them


@pytest.fixture
def alice_memory(alice):
    return remember(alice, "I live in Porto.")[0]


@pytest.mark.django_db
@pytest.mark.parametrize("query", HOSTILE)
def test_search_and_filters_never_fail(alice_client, alice_memory, query):
    for params in ({"q": query}, {"kind": query}, {"status": query}, {"valid_after": query}, {"page": query}):
        response = alice_client.get("/", params)
        assert response.status_code in (200, 400), (params, response.status_code)
        assert "<img src=x" not in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("text", HOSTILE)
def test_correction_form_refuses_or_stores_verbatim_and_escapes(alice_client, alice_memory, text):
    response = alice_client.post(f"/memories/{alice_memory.pk}/correct/", {"text": text})
    if response.status_code == 302:
        corrected = Memory.objects.get(pk=response.url.split("/")[2])
        assert corrected.text == text.strip()
        page = alice_client.get(response.url).content.decode()
        assert "<img src=x" not in page
    else:
        assert response.status_code == 400
        alice_memory.refresh_from_db()
        assert alice_memory.status == "active", "nothing changed"


@pytest.mark.django_db
@pytest.mark.parametrize("name", HOSTILE)
def test_agent_key_form_refuses_or_escapes(ada_client, name):
    before = Agent.objects.count()
    response = ada_client.post("/admin/agents/", {"name": name, "permissions": ["read"]})
    assert response.status_code in (200, 302, 400)
    if Agent.objects.count() > before:
        assert "<img src=x" not in ada_client.get("/admin/agents/").content.decode()
    else:
        assert "form-error" in response.content.decode() or response.status_code == 400


@pytest.mark.django_db
def test_invalid_utf8_in_a_query_or_a_form_is_handled(alice_client, alice_memory):
    assert alice_client.get(f"/?q={INVALID_UTF8}").status_code in (200, 400)
    response = alice_client.post(f"/memories/{alice_memory.pk}/correct/", f"text={INVALID_UTF8}",
                                 content_type="application/x-www-form-urlencoded")
    assert response.status_code in (302, 400)
    alice_memory.refresh_from_db()
    assert "\ud800" not in alice_memory.text
