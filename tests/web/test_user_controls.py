"""The end user's controls (issue 21): delete all, stop agents reading, block one agent, clear a review
flag; and plain words on their pages."""

import pytest

from memoryapp.models import AgentBlock, DeletionReceipt, Episode, Memory, MemoryEvent
from tests.api.conftest import AgentClient
from tests.factories import make_agent
from tests.web.conftest import remember

pytestmark = pytest.mark.django_db


@pytest.fixture
def bot(acme):
    agent, key = make_agent(acme, "support-bot")
    return agent, AgentClient(key)


def test_delete_all_previews_counts_then_gives_a_receipt(alice_client, alice):
    remember(alice, "I live in Porto.", "I have a dog called Rex.")
    page = alice_client.get("/memories/delete-all/").content.decode()
    assert "Delete everything remembered about you?" in page
    assert "<strong>2</strong> messages" in page
    assert Memory.objects.filter(user=alice).exists(), "the preview deletes nothing"
    response = alice_client.post("/memories/delete-all/")
    receipt = DeletionReceipt.objects.get()
    assert response.status_code == 302 and response.url == f"/receipts/{receipt.pk}/"
    assert not Memory.objects.filter(user=alice).exists() and not Episode.objects.filter(user=alice).exists()
    assert "Delete all" in alice_client.get("/").content.decode()


def test_stop_agents_reading_refuses_search_context_and_episode_search(alice_client, alice, bot):
    remember(alice, "I live in Porto.")
    _, agent = bot
    assert agent.post("search", {"user": "alice", "query": "Where does Alice live?"}).status_code == 200
    alice_client.post("/agents-reading/", {"paused": "true"})
    alice.refresh_from_db()
    assert alice.agents_reading_paused and not alice.memory_paused, "two separate switches"
    for path in ("search", "context", "episodes/search"):
        response = agent.post(path, {"user": "alice", "query": "Where does Alice live?"})
        assert response.status_code == 403, path
        assert "alice has stopped agents reading their memories" in str(response.body)
    assert MemoryEvent.objects.filter(user_id=alice.id, reason="agents reading stopped").exists()
    assert "Agents reading <strong>stopped</strong>" in alice_client.get("/").content.decode()
    alice_client.post("/agents-reading/", {"paused": "false"})
    assert agent.post("search", {"user": "alice", "query": "Where does Alice live?"}).status_code == 200


def test_a_blocked_agent_neither_reads_nor_writes_and_the_admin_sees_it(alice_client, alice, bot, ada_client):
    agent_row, agent = bot
    agent.post("episodes", {"user": "alice", "wait": True, "messages": [{"role": "user", "content": "I like tea."}]})
    page = alice_client.get("/").content.decode()
    assert "Agents that used your memories" in page and "Block support-bot" in page
    alice_client.post(f"/agents/{agent_row.pk}/block/", {"blocked": "true"})
    assert AgentBlock.objects.filter(user=alice, agent=agent_row).exists()
    read = agent.post("search", {"user": "alice", "query": "What does Alice drink?"})
    assert read.status_code == 403 and "alice has blocked this agent from their memories" in str(read.body)
    write = agent.post("episodes", {"user": "alice", "messages": [{"role": "user", "content": "I like coffee."}]})
    assert write.status_code == 403
    assert "Unblock support-bot" in alice_client.get("/").content.decode()
    assert "blocked by 1 user" in ada_client.get("/admin/agents/").content.decode()


def test_needs_review_says_why_and_looks_right_clears_it(alice_client, alice):
    (memory,) = remember(alice, "I live in Porto.")
    Memory.objects.filter(pk=memory.pk).update(needs_review=True)
    listed = alice_client.get("/?review=needs").content.decode()
    assert "Alice lives in Porto." in listed
    page = alice_client.get(f"/memories/{memory.pk}/").content.decode()
    assert "a message this memory came from was corrected" in page and "Looks right" in page
    alice_client.post(f"/memories/{memory.pk}/review/")
    memory.refresh_from_db()
    assert not memory.needs_review
    assert MemoryEvent.objects.filter(memory_id=memory.pk, reason="reviewed: looks right").exists()
    assert "Alice lives in Porto." not in alice_client.get("/?review=needs").content.decode()


def test_plain_words_for_the_end_user(alice_client, alice, ada_client):
    (memory,) = remember(alice, "I live in Porto.")
    listing = alice_client.get("/").content.decode()
    assert "what does Alice eat?" in listing and "what does Sam eat?" not in listing
    assert 'href="/evaluation/"' not in listing
    assert 'href="/evaluation/"' in ada_client.get("/").content.decode()
    detail = alice_client.get(f"/memories/{memory.pk}/").content.decode()
    assert ">Remembered</dt>" in detail and ">Believed</dt>" not in detail
    bad = alice_client.get("/?true_from=2025-05-01&true_until=2025-01-01").content.decode()
    assert "The end date comes before the start date." in bad and "until:" not in bad
