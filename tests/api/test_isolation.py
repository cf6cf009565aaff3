"""Every endpoint against four keys: the owner's, one restricted to another user, one without
the permission, one of another organization. 404 or 403 as the contract says, and nothing of
alice's leaks into any answer."""

import io

import pytest
from django.core.management import call_command

from memoryapp.models import Job, Memory
from memoryapp.services.tenancy import agent_revoke
from tests.api.conftest import AgentClient
from tests.factories import make_agent

pytestmark = pytest.mark.django_db
SECRET_TEXT = "Alice keeps her spare key under the blue flowerpot."


@pytest.fixture
def world(acme, globex, alice, bob):
    owner = AgentClient(make_agent(acme, "owner")[1])
    created = owner.post("episodes", {"user": "alice", "wait": True,
                                      "messages": [{"role": "user", "content": "I live in Porto."}]})
    memory = owner.post("memories", {"user": "alice", "text": SECRET_TEXT}).body["memory"]
    job = Job.objects.create(organization=acme, user=alice, kind="extraction", params={})
    return {
        "owner": owner,
        "restricted": AgentClient(make_agent(acme, "bob-only", allowed_users=[bob])[1]),
        "read_only": AgentClient(make_agent(acme, "reader", permissions=["read"])[1]),
        "other_org": AgentClient(make_agent(globex, "globex-bot")[1]),
        "episode": created.body["episodes"][0], "memory": memory["id"], "job": str(job.id),
    }


ENDPOINTS = {
    # name: (method, path, body, kind)  kind: read, write, delete, or "write-any-user" (creates in the caller's org)
    "ingest": ("post", "episodes", {"user": "alice", "messages": [{"role": "user", "content": "hi"}]}, "write-any"),
    "episode_search": ("post", "episodes/search", {"user": "alice", "query": "Porto"}, "read"),
    "episode_list": ("get", "episodes?user=alice", None, "read"),
    "episode_get": ("get", "episodes/{episode}", None, "read"),
    "episode_delete": ("delete", "episodes/{episode}", None, "delete"),
    "memory_create": ("post", "memories", {"user": "alice", "text": "Alice likes tea."}, "write-any"),
    "memory_list": ("get", "memories?user=alice", None, "read"),
    "memory_get": ("get", "memories/{memory}", None, "read"),
    "memory_patch": ("patch", "memories/{memory}", {"text": "Alice keeps no key outside."}, "write"),
    "memory_delete": ("delete", "memories/{memory}", None, "delete"),
    "memory_history": ("get", "memories/{memory}/history", None, "read"),
    "search": ("post", "search", {"user": "alice", "query": "where is the spare key"}, "read"),
    "context": ("post", "context", {"user": "alice", "query": "where is the spare key"}, "read"),
    "export": ("get", "users/alice/export", None, "read"),
    "user_delete": ("delete", "users/alice/memories", None, "delete"),
    "job": ("get", "jobs/{job}", None, "read"),
}


def call(client, world, name):
    method, path, body, kind = ENDPOINTS[name]
    path = path.format(**world)
    return (client.call(method, path, body) if body is not None else client.call(method, path)), kind


def assert_no_leak(response, world):
    text = response.content.decode()
    assert SECRET_TEXT not in text and "Porto" not in text and world["memory"] not in text


@pytest.mark.parametrize("name", ENDPOINTS)
def test_owner_key_succeeds(world, name):
    response, _ = call(world["owner"], world, name)
    assert response.status_code in (200, 201, 202), response.body


@pytest.mark.parametrize("name", ENDPOINTS)
def test_key_restricted_to_another_user_gets_404(world, name):
    response, _ = call(world["restricted"], world, name)
    assert response.status_code == 404, response.body
    assert response.body["error"]["message"].startswith(("no user ", "no such ")), "as if it did not exist"
    assert_no_leak(response, world)


@pytest.mark.parametrize("name", ENDPOINTS)
def test_key_without_the_permission_gets_403(world, name):
    response, kind = call(world["read_only"], world, name)
    if kind == "read":
        assert response.status_code == 200
    else:
        assert response.status_code == 403, response.body
        assert response.body["error"]["code"] == "permission_denied"
    assert Memory.objects.filter(pk=world["memory"], status="active").exists()


@pytest.mark.parametrize("name", ENDPOINTS)
def test_key_of_another_organization_sees_nothing(world, name, alice):
    before = Memory.objects.filter(user=alice).count()
    response, kind = call(world["other_org"], world, name)
    if kind == "write-any":
        # Their own "alice", a different person in their own organization.
        assert response.status_code in (200, 201, 202)
    else:
        assert response.status_code == 404, response.body
    assert_no_leak(response, world)
    assert Memory.objects.filter(user=alice).count() == before


def test_other_org_listing_without_a_user_shows_none_of_acme(world):
    response = world["other_org"].get("memories")
    assert response.status_code == 200 and response.body["results"] == []


def test_create_agent_key_prints_only_the_key_and_it_works(db):
    out = io.StringIO()
    call_command("create_agent_key", "--org", "Initech", "--name", "ci-bot", "--permissions", "read,write", stdout=out)
    key = out.getvalue().strip()
    assert key.startswith("mk_") and "\n" not in key and len(key) > 40
    client = AgentClient(key)
    assert client.get("memories").status_code == 200
    from memoryapp.models import Agent

    agent = Agent.objects.get(name="ci-bot")
    assert key not in (agent.key_hash, agent.key_prefix) and agent.permissions == ["read", "write"]


def test_revoked_key_is_refused_at_once(acme):
    agent, key = make_agent(acme, "short-lived")
    client = AgentClient(key)
    assert client.get("memories").status_code == 200
    agent_revoke(agent=agent)
    response = client.get("memories")
    assert response.status_code == 401 and response.body["error"]["code"] == "authentication_failed"


def test_disabled_agent_gets_403(acme):
    from memoryapp.services.tenancy import agent_set_active

    agent, key = make_agent(acme, "paused-bot")
    agent_set_active(agent=agent, active=False)
    response = AgentClient(key).get("memories")
    assert response.status_code == 403 and "disabled" in response.body["error"]["message"]
