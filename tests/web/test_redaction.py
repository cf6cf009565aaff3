"""A correction typed in the dashboard is redacted like any message."""

import pytest

from memoryapp.models import Memory, MemoryEvent
from tests.stored_text import tables_containing

pytestmark = pytest.mark.django_db


def test_a_correction_in_the_dashboard_is_stored_redacted(alice_client, alice_memory):
    response = alice_client.post(f"/memories/{alice_memory.pk}/correct/",
                                 {"text": "Alice lives in Braga, my password is Geheim-123x"})

    corrected = Memory.objects.get(supersedes=alice_memory)
    assert response.status_code == 302 and response.url == f"/memories/{corrected.pk}/"
    assert corrected.text == "Alice lives in Braga, my password is [REDACTED:password]"
    assert tables_containing("Geheim-123x") == []
    assert MemoryEvent.objects.filter(op="REDACT", memory_id=corrected.pk).exists()
    page = alice_client.get(response.url)
    assert "[REDACTED:password]" in page.content.decode()
