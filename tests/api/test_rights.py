"""Rights inside one organization: every endpoint × every kind of principal × every kind of memory.

Alice is an end user of Acme, a member of the project zeus; bob works in apollo. The principals act
about alice: alice herself (her dashboard session on the API), a key limited to alice, a read-only
key, the organization's admin, and a key of another organization. The targets: alice's own memory,
her project's memory, bob's memory, an org-wide memory bob owns, and bob's project memory."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from memoryapp.models import Memory, Project
from tests.api.conftest import AgentClient
from tests.factories import make_agent, make_memory, make_user, say

pytestmark = pytest.mark.django_db

TEXTS = {
    "own": "Alice keeps her bike in the garage.",
    "own_project": "The zeus project ships its mobile app in May.",
    "other_user": "Bob keeps his locker code in a red notebook.",
    "org": "The office closes at six on Fridays.",
    "other_project": "The apollo project launches its rocket in June.",
}
PRINCIPALS = ("end_user", "restricted", "read_only", "admin", "other_org")


class SessionClient(AgentClient):
    """The API as a logged-in dashboard user calls it (session cookie, no key)."""

    def __init__(self, user):
        self.client = APIClient()
        self.client.force_login(user)


@pytest.fixture
def world(acme, globex, alice, bob, acme_admin):
    zeus = Project.objects.create(organization=acme, name="zeus")
    zeus.members.add(alice)
    apollo = Project.objects.create(organization=acme, name="apollo")
    apollo.members.add(bob)
    memories = {
        "own": make_memory(alice, TEXTS["own"]),
        "own_project": make_memory(alice, TEXTS["own_project"], scope=Memory.Scope.PROJECT, project=zeus),
        "other_user": make_memory(bob, TEXTS["other_user"]),
        "org": make_memory(bob, TEXTS["org"], scope=Memory.Scope.ORG),
        "other_project": make_memory(bob, TEXTS["other_project"], scope=Memory.Scope.PROJECT, project=apollo),
    }
    clients = {
        "end_user": SessionClient(alice),
        "restricted": AgentClient(make_agent(acme, "alice-only", allowed_users=[alice])[1]),
        "read_only": AgentClient(make_agent(acme, "reader", permissions=["read"])[1]),
        "admin": SessionClient(acme_admin),
        "other_org": AgentClient(make_agent(globex, "globex-bot")[1]),
    }
    episodes = {"own": say(alice, "I ride my bike to work."), "other_user": say(bob, "I take the tram to work.")}
    return {"memories": {k: str(m.pk) for k, m in memories.items()}, "clients": clients,
            "episodes": {k: str(e.pk) for k, e in episodes.items()}}


# --- one memory: read, history, correct, delete ---------------------------------------------------

OWN_RIGHTS = {"get": 200, "history": 200, "patch": 200, "delete": 200}
HIDDEN = {"get": 404, "history": 404, "patch": 404, "delete": 404}
SEEN_NOT_OWNED = {"get": 200, "history": 200, "patch": 403, "delete": 403}
READ_ONLY = {"get": 200, "history": 200, "patch": 403, "delete": 403}
AS_ALICE = {"own": OWN_RIGHTS, "own_project": OWN_RIGHTS, "other_user": HIDDEN, "org": SEEN_NOT_OWNED,
            "other_project": HIDDEN}
EXPECTED = {
    "end_user": AS_ALICE,
    "restricted": AS_ALICE,
    "read_only": dict.fromkeys(TEXTS, READ_ONLY),
    "admin": dict.fromkeys(TEXTS, OWN_RIGHTS),
    "other_org": dict.fromkeys(TEXTS, HIDDEN),
}


def memory_call(client, action: str, memory_id: str):
    if action == "get":
        return client.get(f"memories/{memory_id}")
    if action == "history":
        return client.get(f"memories/{memory_id}/history")
    if action == "patch":
        return client.patch(f"memories/{memory_id}", {"text": "Nobody keeps anything here any more."})
    return client.delete(f"memories/{memory_id}")


@pytest.mark.parametrize("principal", PRINCIPALS)
@pytest.mark.parametrize("target", TEXTS)
@pytest.mark.parametrize("action", ("get", "history", "patch", "delete"))
def test_memory_endpoint_rights(world, principal, target, action):
    memory_id = world["memories"][target]
    response = memory_call(world["clients"][principal], action, memory_id)
    expected = EXPECTED[principal][target][action]
    assert response.status_code == expected, (principal, target, action, response.body)
    changed = not Memory.objects.filter(pk=memory_id, status=Memory.Status.ACTIVE).exists()
    assert changed == (expected == 200 and action in ("patch", "delete")), "only an allowed change changes it"
    if expected == 404:
        assert TEXTS[target] not in response.content.decode()


# --- reads about alice: what each principal is shown ----------------------------------------------

SHOWN_ABOUT_ALICE = {"own", "own_project", "org"}  # never bob's own or his project's, whoever asks


def shown(response) -> set[str]:
    body = response.content.decode()
    return {target for target, text in TEXTS.items() if text in body or json.dumps(text)[1:-1] in body}


@pytest.mark.parametrize("principal", ("end_user", "restricted", "read_only", "admin"))
@pytest.mark.parametrize("endpoint", ("search", "context", "list", "export"))
def test_reads_about_alice_show_her_memories_and_nobody_elses(world, principal, endpoint):
    client = world["clients"][principal]
    question = {"user": "alice", "query": "where are things kept and when do things happen", "k": 10,
                "min_score": 0}
    if endpoint == "search":
        response = client.post("search", question)
    elif endpoint == "context":
        response = client.post("context", {**question, "budget_tokens": 2000})
    elif endpoint == "list":
        response = client.get("memories?user=alice&page_size=200")
    else:
        response = client.get("users/alice/export")
    assert response.status_code == 200, response.body
    # an export holds the rows about her (her project memory too), never the org's
    expected = {"own", "own_project"} if endpoint == "export" else SHOWN_ABOUT_ALICE
    assert shown(response) == expected


@pytest.mark.parametrize("principal, expected", [
    ("end_user", SHOWN_ABOUT_ALICE),
    ("restricted", SHOWN_ABOUT_ALICE),
    ("read_only", set(TEXTS)),
    ("admin", set(TEXTS)),
    ("other_org", set()),
])
def test_listing_without_a_user_keeps_to_each_principals_reach(world, principal, expected):
    response = world["clients"][principal].get("memories?page_size=200")
    assert response.status_code == 200
    assert shown(response) == expected


@pytest.mark.parametrize("principal", ("end_user", "restricted", "read_only", "admin", "other_org"))
def test_reads_about_bob(world, principal):
    response = world["clients"][principal].post("search", {"user": "bob", "query": "locker code", "min_score": 0})
    if principal in ("read_only", "admin"):
        assert response.status_code == 200 and "other_user" in shown(response)
    else:
        assert response.status_code == 404 and not shown(response)


# --- writes: scope, project and user of a new memory ----------------------------------------------

WRITES = {
    # name: (body, {principal: status})
    "org_scope": ({"user": "alice", "text": "Everyone gets Fridays off.", "scope": "org"},
                  {"end_user": 403, "restricted": 403, "read_only": 403, "admin": 201, "other_org": 201}),
    "other_project": ({"user": "alice", "text": "Apollo moved to July.", "scope": "project", "project": "apollo"},
                      {"end_user": 404, "restricted": 404, "read_only": 403, "admin": 201, "other_org": 201}),
    "own_project": ({"user": "alice", "text": "Zeus moved to June.", "scope": "project", "project": "zeus"},
                    {"end_user": 201, "restricted": 201, "read_only": 403, "admin": 201, "other_org": 201}),
    "other_user": ({"user": "bob", "text": "Bob now cycles to work."},
                   {"end_user": 404, "restricted": 404, "read_only": 403, "admin": 201, "other_org": 201}),
    "own": ({"user": "alice", "text": "Alice now cycles to work."},
            {"end_user": 201, "restricted": 201, "read_only": 403, "admin": 201, "other_org": 201}),
}


@pytest.mark.parametrize("principal", PRINCIPALS)
@pytest.mark.parametrize("write", WRITES)
def test_memory_create_rights(world, acme, principal, write):
    body, statuses = WRITES[write]
    before = Memory.objects.filter(organization=acme).count()
    response = world["clients"][principal].post("memories", body)
    assert response.status_code == statuses[principal], (principal, write, response.body)
    created_in_acme = Memory.objects.filter(organization=acme).count() - before
    assert created_in_acme == (1 if response.status_code == 201 and principal != "other_org" else 0)


@pytest.mark.parametrize("principal, status", [("end_user", 404), ("restricted", 404), ("read_only", 403),
                                               ("admin", 201)])
def test_ingest_into_a_project_the_user_is_not_in(world, principal, status, alice):
    response = world["clients"][principal].post("episodes", {
        "user": "alice", "project": "apollo", "wait": True,
        "messages": [{"role": "user", "content": "The apollo launch slipped to August."}]})
    assert response.status_code == status, response.body
    if status == 201:  # an admin vouches that alice works in apollo: she is now a member
        assert alice.projects.filter(name="apollo").exists()


def test_key_limited_to_a_project_writes_only_for_its_members(acme, alice, bob):
    apollo = Project.objects.create(organization=acme, name="apollo")
    apollo.members.add(bob)
    key = AgentClient(make_agent(acme, "apollo-bot", allowed_projects=[apollo])[1])
    body = {"text": "The launch is in August.", "scope": "project", "project": "apollo"}
    assert key.post("memories", {**body, "user": "bob"}).status_code == 201
    refused = key.post("memories", {**body, "user": "alice"})
    assert refused.status_code == 403 and "not a member" in refused.body["error"]["message"]


def test_unrestricted_key_writing_into_a_new_project_makes_the_user_a_member(acme, alice):
    key = AgentClient(make_agent(acme, "owner")[1])
    response = key.post("memories", {"user": "alice", "text": "Hermes starts in May.", "scope": "project",
                                     "project": "hermes"})
    assert response.status_code == 201
    assert alice.projects.filter(name="hermes").exists()


# --- episodes and whole-user deletion -------------------------------------------------------------


@pytest.mark.parametrize("principal, own, other", [
    ("end_user", 200, 404), ("restricted", 200, 404), ("read_only", 403, 403), ("admin", 200, 200),
    ("other_org", 404, 404),
])
def test_episode_and_user_deletion_rights(world, principal, own, other):
    client = world["clients"][principal]
    assert client.delete(f"episodes/{world['episodes']['other_user']}").status_code == other
    assert client.delete(f"episodes/{world['episodes']['own']}").status_code == own
    assert client.call("delete", "users/bob/memories?preview=true").status_code == other
    assert client.call("delete", "users/alice/memories?preview=true").status_code == own


def test_end_user_dashboard_and_api_apply_the_same_rule(world, acme):
    """Both routes refuse alice changing the org-wide memory bob owns, and allow her own."""
    alice_browser = world["clients"]["end_user"].client
    org_memory, own = world["memories"]["org"], world["memories"]["own"]
    assert alice_browser.post(f"/memories/{org_memory}/delete/").status_code == 403
    assert alice_browser.get(f"/memories/{org_memory}/correct/").status_code == 403
    assert Memory.objects.filter(pk=org_memory, status=Memory.Status.ACTIVE).exists()
    assert alice_browser.post(f"/memories/{own}/delete/").status_code in (200, 302)
    assert not Memory.objects.filter(pk=own).exists()


def test_a_second_end_user_cannot_touch_the_first_ones_memories(world, acme):
    carol = make_user(acme, "carol")
    client = SessionClient(carol)
    own = world["memories"]["own"]
    assert client.patch(f"memories/{own}", {"text": "Alice sold her bike."}).status_code == 404
    assert client.delete(f"memories/{own}").status_code == 404
    assert Memory.objects.filter(pk=own, status=Memory.Status.ACTIVE).exists()


@pytest.mark.parametrize("principal, own, other", [
    ("end_user", 200, 404), ("restricted", 200, 404), ("read_only", 200, 200), ("admin", 200, 200),
    ("other_org", 404, 404),
])
def test_episode_reads(world, principal, own, other):
    client = world["clients"][principal]
    assert client.get(f"episodes/{world['episodes']['own']}").status_code == own
    assert client.get(f"episodes/{world['episodes']['other_user']}").status_code == other
    for path in ("episodes?user=bob", "episodes/search"):
        response = (client.get(path) if path.startswith("episodes?")
                    else client.post(path, {"user": "bob", "query": "tram to work"}))
        assert response.status_code == other
        assert ("tram" in response.content.decode()) == (other == 200)
    listing = client.get("episodes?page_size=200")
    assert listing.status_code == 200
    assert ("tram" in listing.content.decode()) == (other == 200)
    assert ("bike" in listing.content.decode()) == (own == 200)


@pytest.mark.parametrize("principal, own, other", [
    ("end_user", 200, 404), ("restricted", 200, 404), ("read_only", 200, 200), ("admin", 200, 200),
    ("other_org", 404, 404),
])
def test_job_reads(world, acme, alice, bob, principal, own, other):
    from memoryapp.models import Job

    jobs = {who: Job.objects.create(organization=acme, user=user, kind="extraction", params={})
            for who, user in (("own", alice), ("other", bob))}
    client = world["clients"][principal]
    assert client.get(f"jobs/{jobs['own'].pk}").status_code == own
    assert client.get(f"jobs/{jobs['other'].pk}").status_code == other


def test_a_secret_in_a_project_name_is_stored_redacted(acme, alice):
    key = AgentClient(make_agent(acme, "owner")[1])
    response = key.post("memories", {"user": "alice", "text": "Kickoff is on Monday.", "scope": "project",
                                     "project": "launch password: Tr0ub4dor&3"})
    assert response.status_code == 201
    names = list(Project.objects.filter(organization=acme).values_list("name", flat=True))
    assert names and not any("Tr0ub4dor" in name for name in names)


def test_a_refusal_inside_the_organization_says_why(world):
    org_memory = world["memories"]["org"]
    api = world["clients"]["end_user"].patch(f"memories/{org_memory}", {"text": "The office never closes."})
    assert api.body["error"]["code"] == "permission_denied"
    assert api.body["error"]["message"] == "you may change only your own memories"
    page = world["clients"]["end_user"].client.get(f"/memories/{org_memory}/delete/")
    assert page.status_code == 403 and "You may change only your own memories." in page.content.decode()


def test_a_login_form_without_its_csrf_cookie_gets_the_dashboards_page(db):
    from django.test import Client

    response = Client(enforce_csrf_checks=True).post("/login/", {"username": "x", "password": "y"})
    assert response.status_code == 403 and "This form has expired" in response.content.decode()


def test_every_agent_read_leaves_an_access_log_row_and_a_lookup_is_no_recall(world, acme):
    from memoryapp.models import AccessLog

    key = world["clients"]["restricted"]
    own, episode = world["memories"]["own"], world["episodes"]["own"]
    before = Memory.objects.get(pk=own).access_count
    for path in (f"memories/{own}", "memories?user=alice", "episodes?user=alice", f"episodes/{episode}"):
        assert key.get(path).status_code == 200
    logged = list(AccessLog.objects.filter(organization=acme).values_list("endpoint", flat=True))
    assert sorted(logged) == sorted(["memories/{id}", "memories", "episodes", "episodes/{id}"])
    assert Memory.objects.get(pk=own).access_count == before, "listing a store is not recalling it"
    world["clients"]["end_user"].get(f"memories/{own}")  # a person reading their own page is no agent read
    assert AccessLog.objects.filter(organization=acme).count() == 4
