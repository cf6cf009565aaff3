"""Every agent read goes through services.reading: each REST read endpoint leaves its access log row,
naming the agent, the endpoint and what it was shown; partial search weights fill from the defaults."""

import pytest

from memoryapp.models import AccessLog, Memory
from tests.api.conftest import AgentClient
from tests.factories import make_agent, say

pytestmark = pytest.mark.django_db

QUESTION = {"user": "alice", "query": "Where does Alice live?"}
SEARCH = {**QUESTION, "min_score": -1}  # every result, however weak: the log is what is checked


@pytest.fixture
def told(alice):
    """What alice said, stored through the API as an agent would: an episode and the memory from it."""
    agent, key = make_agent(alice.organization, "reader")
    client = AgentClient(key)
    stored = client.post("episodes", {"user": "alice", "wait": True,
                                      "messages": [{"source": "user", "content": "I live in Porto."}]})
    assert stored.status_code == 201, stored.body
    memory = Memory.objects.get(user=alice, attribute="city")
    AccessLog.objects.all().delete()
    return {"agent": agent, "client": client, "memory": memory, "episode": memory.sources.get()}


@pytest.mark.parametrize(("method", "path", "body", "endpoint", "shows"), [
    ("get", "memories?user=alice", None, "memories", "memory"),
    ("get", "memories/{memory}", None, "memories/{id}", "memory"),
    ("get", "memories/{memory}/history", None, "memories/{id}/history", "memory"),
    ("get", "episodes?user=alice", None, "episodes", "episode"),
    ("get", "episodes/{episode}", None, "episodes/{id}", "episode"),
    ("post", "search", SEARCH, "search", "memory"),
    ("post", "episodes/search", SEARCH, "episodes/search", "episode"),
    ("post", "context", QUESTION, "context", "memory"),
    ("get", "users/alice/export", None, "users/{user}/export", "memory"),
])
def test_every_agent_read_endpoint_writes_an_access_log_row(told, alice, method, path, body, endpoint, shows):
    path = path.format(memory=told["memory"].pk, episode=told["episode"].pk)
    response = told["client"].call(method, path, body)
    assert response.status_code == 200, response.body
    (log,) = AccessLog.objects.all()
    assert (log.endpoint, log.actor_type, log.actor_id, log.user_id) == (endpoint, "agent", str(told["agent"].pk),
                                                                          alice.pk)
    shown = log.memory_ids if shows == "memory" else log.episode_ids
    assert told[shows].pk in shown, f"{endpoint} logs what it showed"


def test_partial_search_weights_take_the_others_from_that_searchs_defaults(alice, settings):
    """Episode search ranks by relevance alone unless asked; memory search by SEARCH_WEIGHTS. Asking for
    one weight keeps the others at those defaults, so with relevance alone asked the score is the
    relevance, with no recency or importance added."""
    settings.SEARCH_WEIGHTS = (1.0, 0.0, 0.0)
    client = AgentClient(make_agent(alice.organization, "ranker")[1])
    for text, when in (("I live in Porto.", "2025-01-01"), ("I moved to Lisbon.", "2025-06-01"),
                       ("I live near the river.", "2025-09-01")):
        say(alice, text, when=when)
    client.post("memories", {"user": "alice", "text": "Alice lives in Lisbon.", "importance": 9})
    client.post("memories", {"user": "alice", "text": "Alice lived in Porto.", "importance": 1})
    for path in ("search", "episodes/search"):
        answer = client.post(path, {**SEARCH, "weights": {"relevance": 1.0}, "explain": True})
        assert answer.status_code == 200 and len(answer.body["results"]) >= 2, answer.body
        for result in answer.body["results"]:
            assert result["score"] == pytest.approx(result["components"]["relevance"], abs=1e-6), path
