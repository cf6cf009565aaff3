"""The admin logs answer "what did demo-agent do, and to whose memories?" without a UUID at hand."""

from rest_framework.test import APIClient

from tests.factories import make_agent, make_memory
from tests.web.conftest import remember


def _read_as(key: str, user: str, query: str) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert client.post("/api/v1/search", {"user": user, "query": query}, format="json").status_code == 200


def test_the_access_log_finds_an_agent_by_its_name_or_shortened_id_and_a_user_by_name(ada_client, alice, bob, acme):
    demo, demo_key = make_agent(acme, "demo-agent")
    _, other_key = make_agent(acme, "support-bot")
    make_memory(alice, "Alice lives in Porto.")
    _read_as(demo_key, "alice", "Where does Alice live?")
    _read_as(other_key, "bob", "What does Bob eat?")

    by_name = ada_client.get("/admin/access/", {"actor_id": "demo-agent"}).content.decode()
    assert "1 read, newest first" in by_name and "Where does Alice live?" in by_name
    shown = str(demo.pk)[:13]  # what the table shows, before its "…"
    page = ada_client.get("/admin/access/").content.decode()
    assert f"{shown}…" in page and f'data-copy-text="{demo.pk}"' in page, "short id with the whole one copyable"
    by_short = ada_client.get("/admin/access/", {"actor_id": f"{shown}…"}).content.decode()
    assert "1 read, newest first" in by_short and "What does Bob eat?" not in by_short
    about_bob = ada_client.get("/admin/access/", {"user": "bob"}).content.decode()
    assert "1 read, newest first" in about_bob and "What does Bob eat?" in about_bob
    assert "No reads match" in ada_client.get("/admin/access/", {"user": "nobody-here"}).content.decode()


def test_the_operations_log_shows_whose_memory_changed_and_filters_by_user_and_agent_name(ada_client, alice, bob):
    remember(alice, "I live in Porto.")
    remember(bob, "I am vegetarian.")

    page = ada_client.get("/admin/events/").content.decode()
    assert "<th>About</th>" in page
    about_alice = ada_client.get("/admin/events/", {"user": "alice"}).content.decode()
    # her account's creation and her memory's
    assert "2 events, newest first" in about_alice and "<td>alice</td>" in about_alice
    assert "<td>bob</td>" not in about_alice
    by_user_name = ada_client.get("/admin/events/", {"user": alice.username}).content.decode()
    assert "2 events, newest first" in by_user_name
    by_time = ada_client.get("/admin/events/", {"user": "bob", "until": "2000-01-01"}).content.decode()
    assert "No operations match" in by_time
