"""The API rate limit holds when the requests come all at once."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from memoryapp.api.throttling import PrincipalRateThrottle
from tests.api.conftest import AgentClient
from tests.factories import make_agent

LIMIT = 10
CONCURRENT = 40


def _fire_at_once(key: str, count: int) -> list:
    """`count` requests with one agent key, released together from as many threads."""
    start = threading.Barrier(count)

    def one(_):
        client = AgentClient(key)
        try:
            start.wait()
            return client.get("memories")
        finally:
            connection.close()  # each thread opened its own database connection

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(one, range(count)))


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_get_exactly_the_allowed_number_and_the_rest_429(acme, monkeypatch):
    monkeypatch.setattr(PrincipalRateThrottle, "THROTTLE_RATES", {"principal": f"{LIMIT}/min"})
    _, key = make_agent(acme, "burst")
    responses = _fire_at_once(key, CONCURRENT)
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [200] * LIMIT + [429] * (CONCURRENT - LIMIT)
    refused = [response for response in responses if response.status_code == 429]
    for response in refused:
        assert response.body["error"]["code"] == "too_many_requests"
        assert 1 <= int(response["Retry-After"]) <= 60
    # the window is still closed to this key, and only to this key
    assert AgentClient(key).get("memories").status_code == 429
    assert AgentClient(make_agent(acme, "other")[1]).get("memories").status_code == 200


@pytest.mark.django_db
def test_the_window_opens_again_when_it_ends(acme, monkeypatch):
    monkeypatch.setattr(PrincipalRateThrottle, "THROTTLE_RATES", {"principal": "2/s"})
    agent = AgentClient(make_agent(acme, "steady")[1])
    assert [agent.get("memories").status_code for _ in range(3)] == [200, 200, 429]
    # the refusal says when to come back, and by then the key is welcome again
    time.sleep(1.1)
    assert agent.get("memories").status_code == 200
