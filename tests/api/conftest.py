import json

import pytest
from rest_framework.test import APIClient

from tests.factories import make_agent


class AgentClient:
    """An API client holding one agent key."""

    def __init__(self, key: str):
        self.client = APIClient()
        self.client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")

    def call(self, method: str, path: str, body=None, **extra):
        kwargs = {"format": "json"} if body is not None else {}
        response = getattr(self.client, method)(f"/api/v1/{path}", body, **kwargs, **extra)
        response.body = json.loads(response.content) if response.content else None
        return response

    def get(self, path, **extra):
        return self.call("get", path, **extra)

    def post(self, path, body, **extra):
        return self.call("post", path, body, **extra)

    def patch(self, path, body):
        return self.call("patch", path, body)

    def delete(self, path):
        return self.call("delete", path)

    def raw(self, path, data: bytes, content_type="application/json"):
        response = self.client.post(f"/api/v1/{path}", data, content_type=content_type)
        response.body = json.loads(response.content) if response.content else None
        return response


@pytest.fixture
def acme_agent(acme):
    return AgentClient(make_agent(acme, "acme-bot")[1])


@pytest.fixture
def acme_agent_model(acme):
    agent, key = make_agent(acme, "acme-bot-2")
    return agent, AgentClient(key)
