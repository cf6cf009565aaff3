"""Redaction on every write path of the services: session names, metadata keys, memories written
from structured fields (their vectors computed from the redacted text)."""

import numpy as np
import pytest

from memoryapp import embeddings
from memoryapp.actors import ActorRef
from memoryapp.models import Episode, Memory, MemoryEvent
from memoryapp.services.apply import MemoryDraft, candidate_apply
from memoryapp.services.extract.base import Candidate
from memoryapp.services.extraction import episodes_extract
from memoryapp.services.ingest import MessageIn, episodes_ingest
from tests.factories import at
from tests.stored_text import tables_containing

pytestmark = pytest.mark.django_db

AGENT = ActorRef("agent", "test-agent")
OPENAI_KEY = "sk-proj-" + "Qw3eRt6yUi9oPa2sDf5gHj8kLz1xCv4b" * 2


def ingest(user, content, *, session="", metadata=None):
    return episodes_ingest(organization=user.organization, user=user, actor=AGENT, session=session,
                           messages=[MessageIn(source="user", content=content, metadata=metadata or {})])


def test_a_secret_in_a_session_name_is_stored_redacted_on_episodes_and_memories(alice):
    result = ingest(alice, "I live in Porto.", session="onboarding, password: Tr0ub4dor-77")
    episodes_extract(episode_ids=[e.id for e in result.episodes], actor=AGENT)

    assert tables_containing("Tr0ub4dor-77") == []
    episode = Episode.objects.get(user=alice)
    assert episode.session == "onboarding, password: [REDACTED:password]"
    assert Memory.objects.get(user=alice, attribute="city").session == episode.session
    event = MemoryEvent.objects.get(op="REDACT", episode_id=episode.id)
    assert event.data["kinds"] == ["password"]


def test_a_secret_in_a_metadata_key_is_stored_redacted(alice):
    ingest(alice, "I live in Porto.", metadata={f"Bearer {OPENAI_KEY}": "header", "nested": [{OPENAI_KEY: 1}]})

    assert tables_containing(OPENAI_KEY) == []
    episode = Episode.objects.get(user=alice)
    assert episode.metadata == {"Bearer [REDACTED:openai_key]": "header", "nested": [{"[REDACTED:openai_key]": 1}]}
    assert MemoryEvent.objects.get(op="REDACT", episode_id=episode.id).data["kinds"] == ["openai_key"]


def test_a_memory_from_structured_fields_is_stored_redacted_and_embedded_from_the_redacted_text(alice):
    secret_text = "Alice's wifi password is 4821-7730."
    candidate = Candidate(text=secret_text, subject="alice", attribute="wifi password", value="4821-7730",
                          valid_from=at("2025-03-10"))
    draft = MemoryDraft(organization=alice.organization, user=alice, text=secret_text,
                        embedding=embeddings.encode_one(secret_text), subject="alice", attribute="wifi password",
                        value="4821-7730", session="setup, password: Hunter2-x")

    (operation,) = candidate_apply(candidate=candidate, draft=draft, actor=AGENT)

    assert tables_containing("4821-7730") == [] and tables_containing("Hunter2-x") == []
    memory = Memory.objects.get(pk=operation.memory_id)
    assert memory.text == "Alice's wifi password is [REDACTED:password]."
    assert (memory.value, memory.session) == ("[REDACTED:password]", "setup, password: [REDACTED:password]")
    # atol: stored as halfvec (migration 0009_halfvec)
    assert np.allclose(memory.embedding, embeddings.encode_one(memory.text), atol=1e-3), "never the secret's vector"
    event = MemoryEvent.objects.get(op="REDACT", memory_id=memory.id)
    assert event.data["kinds"] == ["password"] and "4821" not in event.reason
