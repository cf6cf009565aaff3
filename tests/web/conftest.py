import pytest
from django.test import Client

from memoryapp.actors import ActorRef
from memoryapp.models import Memory
from memoryapp.services.extraction import episodes_extract
from tests.factories import make_user, say


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def remember(user, *texts: str, when: str = "2025-03-10", session: str = "", source: str = "user") -> list[Memory]:
    """Ingest the messages and extract them with the real write path; the memories they produced."""
    episodes = [say(user, text, when=when, session=session, source=source) for text in texts]
    operations = episodes_extract(episode_ids=[e.id for e in episodes], actor=ActorRef("agent", "test"))
    return list(Memory.objects.filter(pk__in=[op.memory_id for op in operations]).order_by("recorded_at"))


@pytest.fixture
def alice_client(alice):
    return client_for(alice)


@pytest.fixture
def bob_client(bob):
    return client_for(bob)


@pytest.fixture
def charlie_client(charlie):
    return client_for(charlie)


@pytest.fixture
def ada_client(acme_admin):
    return client_for(acme_admin)


@pytest.fixture
def globex_admin(globex):
    return make_user(globex, "gina", admin=True)


@pytest.fixture
def alice_memory(alice) -> Memory:
    """'Alice lives in Porto.', extracted from what she said."""
    (memory,) = remember(alice, "I live in Porto.")
    return memory


def htmx(**headers) -> dict:
    return {"HTTP_HX_REQUEST": "true", **headers}
