"""The product story over HTTP: ingest, search, context, correct, delete, export."""

import pytest

from memoryapp.models import Memory, User

pytestmark = pytest.mark.django_db


def ingest(agent, user, *texts, when="2025-03-10T12:00:00Z", session="s1", wait=True):
    return agent.post("episodes", {"user": user, "session": session, "wait": wait,
                                   "messages": [{"role": "user", "content": t, "occurred_at": when} for t in texts]})


def test_ingest_search_context_correct_delete(acme, acme_agent):
    created = ingest(acme_agent, "sam", "I'm vegetarian.", "I live in Porto.")
    assert created.status_code == 201, created.body
    assert [o["op"] for o in created.body["operations"]] == ["ADD", "ADD"]
    assert len(created.body["episodes"]) == 2 and created.body["job"] is None

    sam = User.objects.get(organization=acme, external_id="sam")
    assert not sam.has_usable_password(), "agents may name users who have no login yet"

    moved = ingest(acme_agent, "sam", "I moved to Lisbon.", when="2025-07-01T09:00:00Z", session="s2")
    assert [o["op"] for o in moved.body["operations"]] == ["SUPERSEDE"]

    found = acme_agent.post("search", {"user": "sam", "query": "Where does Sam live?", "k": 3, "explain": True})
    assert found.status_code == 200
    assert found.body["results"][0]["memory"]["text"] == "Sam lives in Lisbon."
    assert set(found.body["results"][0]["components"]) >= {"relevance", "recency", "importance", "scaled"}
    assert found.body["abstained"] is False and found.body["took_ms"] > 0
    then = acme_agent.post("search", {"user": "sam", "query": "Where does Sam live?", "as_of": "2025-05-01T00:00:00Z"})
    assert then.body["results"][0]["memory"]["text"] == "Sam lives in Porto."

    context = acme_agent.post("context", {"user": "sam", "query": "What should I cook for Sam?", "budget_tokens": 300})
    assert context.status_code == 200 and "Sam is vegetarian." in context.body["context"]
    assert context.body["tokens"] <= 300 and context.body["memories"]

    vegetarian = Memory.objects.get(user=sam, attribute="diet")
    fixed = acme_agent.patch(f"memories/{vegetarian.id}", {"text": "Sam is vegan."})
    assert fixed.status_code == 200 and fixed.body["provenance"] == "user_corrected"
    assert fixed.body["value"] == "vegan", "the slot takes the corrected value, not the whole sentence"
    history = acme_agent.get(f"memories/{fixed.body['id']}/history")
    assert [v["status"] for v in history.body["versions"]] == ["invalidated", "active"]
    assert {"INVALIDATE", "CORRECT"} <= {e["op"] for e in history.body["events"]}

    detail = acme_agent.get(f"memories/{fixed.body['id']}")
    assert detail.body["sources"][0]["excerpt"] == "I'm vegetarian."
    assert {"derived_from", "derivatives", "history"} <= set(detail.body)

    preview = acme_agent.delete(f"memories/{fixed.body['id']}?preview=true")
    assert preview.status_code == 200 and preview.body["preview"] is True
    assert Memory.objects.filter(pk=fixed.body["id"]).exists()
    receipt = acme_agent.delete(f"memories/{fixed.body['id']}")
    assert receipt.status_code == 200 and receipt.body["deleted"]["memories"]["count"] == 2
    assert {"receipt_id", "deleted", "recomputed", "at"} <= set(receipt.body)
    assert "vegan" not in str(receipt.body)
    assert acme_agent.get(f"memories/{fixed.body['id']}").status_code == 404

    export = acme_agent.get("users/sam/export")
    assert export.status_code == 200 and {"memories", "episodes", "events"} <= set(export.body)
    assert not any("vegan" in m["text"] for m in export.body["memories"])

    wiped = acme_agent.delete("users/sam/memories")
    assert wiped.status_code == 200 and wiped.body["deleted"]["episodes"]["count"] == 3
    assert Memory.objects.filter(user=sam).count() == 0


def test_episode_endpoints(acme, acme_agent):
    created = ingest(acme_agent, "sam", "I have a dog named Rex.")
    episode_id = created.body["episodes"][0]
    detail = acme_agent.get(f"episodes/{episode_id}")
    assert detail.status_code == 200 and detail.body["content"] == "I have a dog named Rex."
    assert len(detail.body["memories"]) == 1 and detail.body["user"] == "sam"
    listed = acme_agent.get("episodes?user=sam")
    assert [e["id"] for e in listed.body["results"]] == [episode_id]
    found = acme_agent.post("episodes/search", {"user": "sam", "query": "what is the dog called"})
    assert found.body["results"][0]["episode"]["id"] == episode_id
    receipt = acme_agent.delete(f"episodes/{episode_id}")
    assert receipt.body["deleted"]["episodes"]["ids"] == [episode_id]
    assert receipt.body["deleted"]["memories"]["count"] == 1


def test_memories_post_goes_through_the_judge(acme_agent):
    first = acme_agent.post("memories", {"user": "sam", "text": "Sam lives in Porto.", "attribute": "city",
                                         "value": "Porto", "importance": 7})
    assert first.status_code == 201 and first.body["operations"][0]["op"] == "ADD"
    assert first.body["memory"]["provenance"] == "agent_inferred" and first.body["memory"]["sources"]
    again = acme_agent.post("memories", {"user": "sam", "text": "Sam lives in Porto.", "attribute": "city",
                                         "value": "porto"})
    assert again.body["operations"][0]["op"] == "NOOP"
    moved = acme_agent.post("memories", {"user": "sam", "text": "Sam lives in Lisbon.", "attribute": "city",
                                         "value": "Lisbon", "valid_from": "2030-01-01T00:00:00Z"})
    assert moved.body["operations"][0]["op"] == "SUPERSEDE"


def test_memory_list_filters_and_cursor_pagination(acme_agent):
    facts = ["Sam collects stamps.", "Sam plays chess on Sundays.", "Sam's favourite colour is green.",
             "Sam is learning Japanese.", "Sam drives an old Volvo.", "Sam grows tomatoes on the balcony.",
             "Sam runs 5 km every morning."]
    for fact in facts:
        assert acme_agent.post("memories", {"user": "sam", "text": fact}).body["operations"][0]["op"] == "ADD"
    page = acme_agent.get("memories?user=sam&page_size=3")
    assert page.status_code == 200 and len(page.body["results"]) == 3 and page.body["next"]
    seen = [m["id"] for m in page.body["results"]]
    while page.body["next"]:
        page = acme_agent.get(page.body["next"].split("/api/v1/")[1])
        seen += [m["id"] for m in page.body["results"]]
    assert len(seen) == len(set(seen)) == 7
    assert [m["text"] for m in acme_agent.get("memories?user=sam&q=chess").body["results"]] == [facts[1]]
    assert acme_agent.get("memories?user=sam&status=superseded").body["results"] == []
    assert acme_agent.get("memories?user=sam&kind=summary").body["results"] == []


def test_ingest_for_a_paused_user_stores_nothing_and_says_so(acme, acme_agent):
    from memoryapp.actors import ActorRef
    from memoryapp.services.govern import memory_writing_set
    from tests.factories import make_user

    sam = make_user(acme, "sam")
    memory_writing_set(user=sam, paused=True, actor=ActorRef.for_user(sam))
    response = ingest(acme_agent, "sam", "I live in Porto.")
    assert response.status_code == 200 and response.body["paused"] is True
    assert "paused" in response.body["message"] and response.body["episodes"] == []
    assert not Memory.objects.filter(user=sam).exists()


def test_a_session_memory_can_be_read_listed_and_deleted_by_id(acme_agent):
    """A session memory is searched only within its session, but it is never unreachable."""
    created = acme_agent.post("memories", {"user": "sam", "text": "Sam is debugging the login page.",
                                           "scope": "session", "session": "s1"})
    assert created.status_code == 201, created.body
    memory_id = created.body["memory"]["id"]

    assert acme_agent.get(f"memories/{memory_id}").status_code == 200
    listed = acme_agent.get("memories?user=sam").body["results"]
    assert [m["id"] for m in listed] == [memory_id]
    assert acme_agent.get("memories?user=sam&session=s2").body["results"] == []
    elsewhere = acme_agent.post("search", {"user": "sam", "query": "login page", "session": "s2"})
    assert elsewhere.body["results"] == []
    assert acme_agent.delete(f"memories/{memory_id}").status_code == 200
