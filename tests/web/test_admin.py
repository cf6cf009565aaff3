"""Organization admin pages: provenance browser, agent keys, operations and access logs, jobs."""

import pytest
from rest_framework.test import APIClient

from memoryapp.models import Agent, Job, MemoryEvent
from memoryapp.web.forms import JOB_KINDS
from tests.factories import make_agent, make_memory
from tests.web.conftest import client_for, htmx, remember

pytestmark = pytest.mark.django_db


def api(key: str, path: str):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client.get(f"/api/v1/{path}")


def test_provenance_browser_lists_every_users_memories_and_filters(ada_client, alice, bob, acme):
    writer, _ = make_agent(acme, "writer")
    remember(alice, "I live in Porto.")
    make_memory(bob, "Bob likes chess.", agent=writer)
    everything = ada_client.get("/admin/").content.decode()
    assert "Alice lives in Porto." in everything and "Bob likes chess." in everything
    only_bob = ada_client.get("/admin/", {"user": bob.pk}).content.decode()
    assert "Bob likes chess." in only_bob and "Alice lives in Porto." not in only_bob
    by_agent = ada_client.get("/admin/", {"agent": writer.pk}).content.decode()
    assert "Bob likes chess." in by_agent and "Porto" not in by_agent
    superseded = ada_client.get("/admin/", {"status": "superseded"}).content.decode()
    assert "No memories match these filters" in superseded
    fragment = ada_client.get("/admin/", {"user": bob.pk}, **htmx())
    assert b"<html" not in fragment.content and b'id="admin-memories"' in fragment.content


def test_creating_an_agent_key_shows_it_once_and_it_works(ada_client, alice):
    remember(alice, "I live in Porto.")
    response = ada_client.post("/admin/agents/", {"name": "support-bot", "permissions": ["read"]})
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    raw_key = response.context["raw_key"]
    assert raw_key.startswith("mk_") and raw_key in response.content.decode()
    agent = Agent.objects.get(name="support-bot")
    assert agent.key_hash == Agent.hash_key(raw_key) and raw_key not in agent.key_hash
    assert agent.permissions == ["read"]
    assert raw_key not in ada_client.get("/admin/agents/").content.decode(), "shown once only"

    listed = api(raw_key, "memories?user=alice")
    assert listed.status_code == 200
    assert [m["text"] for m in listed.json()["results"]] == ["Alice lives in Porto."]


def test_an_agent_key_can_be_limited_to_some_users(ada_client, alice, bob):
    remember(alice, "I live in Porto.")
    response = ada_client.post("/admin/agents/", {"name": "bobs-bot", "permissions": ["read", "write"],
                                                  "allowed_users": [bob.pk]})
    raw_key = response.context["raw_key"]
    agent = Agent.objects.get(name="bobs-bot")
    assert list(agent.allowed_users.all()) == [bob] and agent.permissions == ["read", "write"]
    assert api(raw_key, "memories?user=bob").status_code == 200
    assert api(raw_key, "memories?user=alice").status_code == 404


def test_creating_an_agent_validates_the_form(ada_client, acme):
    make_agent(acme, "taken")
    duplicate = ada_client.post("/admin/agents/", {"name": "taken", "permissions": ["read"]})
    assert duplicate.status_code == 400 and b"already exists" in duplicate.content
    no_permission = ada_client.post("/admin/agents/", {"name": "fresh"})
    assert no_permission.status_code == 400
    assert not Agent.objects.filter(name="fresh").exists()


def test_revoking_a_key_asks_first_then_the_key_is_refused(ada_client, acme):
    agent, raw_key = make_agent(acme, "old-bot")
    confirm = ada_client.get(f"/admin/agents/{agent.pk}/revoke/")
    assert confirm.status_code == 200 and b"Revoke the key of old-bot?" in confirm.content
    assert api(raw_key, "memories").status_code == 200
    response = ada_client.post(f"/admin/agents/{agent.pk}/revoke/")
    assert response.status_code == 302 and response.url == "/admin/agents/"
    agent.refresh_from_db()
    assert agent.revoked_at is not None
    assert api(raw_key, "memories").status_code == 401
    make_agent(acme, "zeta-bot")
    page = ada_client.get("/admin/agents/").content.decode()
    keys = page[page.index('id="agents-table"'):]  # the table, not the message about the revoke
    assert "revoked" in keys
    assert keys.index("zeta-bot") < keys.index("old-bot"), "live keys are listed before revoked ones"


def test_disabling_an_agent_refuses_it_until_enabled(ada_client, acme):
    agent, raw_key = make_agent(acme, "flaky-bot")
    response = ada_client.post(f"/admin/agents/{agent.pk}/active/", {"active": "false"}, **htmx())
    assert response.status_code == 200 and b"<html" not in response.content
    assert b'id="agents-table"' in response.content and b"disabled" in response.content
    assert api(raw_key, "memories").status_code == 403
    enabled = ada_client.post(f"/admin/agents/{agent.pk}/active/", {"active": "true"})
    assert enabled.status_code == 302
    assert api(raw_key, "memories").status_code == 200


def test_the_operations_log_filters_by_operation_actor_and_time(ada_client, alice, alice_memory):
    ada_client.post(f"/memories/{alice_memory.pk}/correct/", {"text": "Alice lives in Braga."})
    everything = ada_client.get("/admin/events/").content.decode()
    assert "ADD" in everything and "CORRECT" in everything and "INVALIDATE" in everything
    corrections = ada_client.get("/admin/events/", {"what": "CORRECT"}).content.decode()
    assert "op-correct" in corrections and "op-add" not in corrections
    by_admin = ada_client.get("/admin/events/", {"actor_type": "admin"}).content.decode()
    assert "op-correct" in by_admin and "op-add" not in by_admin and "ada@acme" in by_admin
    by_agent = ada_client.get("/admin/events/", {"actor_type": "agent", "actor_id": "test"}).content.decode()
    assert "op-add" in by_agent and "op-correct" not in by_agent
    future = ada_client.get("/admin/events/", {"since": "2999-01-01"}).content.decode()
    assert "No operations match" in future
    assert MemoryEvent.objects.filter(op="CORRECT").count() == 1


def test_the_operations_log_is_paginated(ada_client, alice):
    for number in range(55):
        make_memory(alice, f"Alice fact {number}.", embedding=[0.01] * 384)
        MemoryEvent.objects.create(organization=alice.organization, op="ADD", actor_type="job", actor_id="x",
                                   reason=f"fact {number}")
    assert "Page 1 of 2" in ada_client.get("/admin/events/").content.decode()


def test_the_menu_marks_where_a_memory_page_was_reached_from(ada_client, alice_client, alice_memory):
    own = 'href="/" aria-current="page">My memories</a>'
    provenance = 'href="/admin/" aria-current="page">Provenance</a>'
    admin_view = ada_client.get(f"/memories/{alice_memory.pk}/").content.decode()
    assert provenance in admin_view and own not in admin_view, "an admin reading Alice's memory is in Provenance"
    assert own in alice_client.get(f"/memories/{alice_memory.pk}/").content.decode()


def test_the_access_log_shows_each_agent_read_and_filters_it(ada_client, globex_admin, alice, acme):
    reader, key = make_agent(acme, "support-bot")
    porto = make_memory(alice, "Alice lives in Porto.")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    client.post("/api/v1/search", {"user": "alice", "query": "Where does Alice live?"}, format="json")
    client.post("/api/v1/context", {"user": "alice", "query": "quantum chromodynamics lecture"}, format="json")

    page = ada_client.get("/admin/access/").content.decode()
    assert "2 reads, newest first" in page and "support-bot" in page and "alice" in page
    assert "Where does Alice live?" in page and f'href="/memories/{porto.pk}/"' in page
    assert "nothing (abstained)" in page, "a read that returned nothing is logged too"
    contexts = ada_client.get("/admin/access/", {"what": "context"}).content.decode()
    assert "1 read, newest first" in contexts and "Where does Alice live?" not in contexts
    by_id = ada_client.get("/admin/access/", {"actor_type": "agent", "actor_id": str(reader.pk)}).content.decode()
    assert "2 reads" in by_id
    assert "No reads match" in ada_client.get("/admin/access/", {"since": "2999-01-01"}).content.decode()
    fragment = ada_client.get("/admin/access/", {"what": "search"}, **htmx()).content.decode()
    assert fragment.startswith('<section id="access-table"') and "<html" not in fragment

    other_org = client_for(globex_admin).get("/admin/access/").content.decode()
    assert "No reads yet" in other_org and "support-bot" not in other_org


def test_jobs_page_reads_a_finished_jobs_result_as_words(ada_client, acme):
    Job.objects.create(kind="summarize", organization=acme, status=Job.Status.SUCCEEDED, progress=1.0,
                       result={"users": 3, "summaries_built": 2, "per_user": {"sam": 2}})
    page = ada_client.get("/admin/jobs/").content.decode()
    assert "users 3 · summaries built 2" in page and "{&#x27;users" not in page and "per_user" not in page


def test_jobs_page_polls_every_two_seconds_only_while_a_job_runs(ada_client, acme):
    idle = ada_client.get("/admin/jobs/").content.decode()
    assert 'hx-trigger="every 2s"' not in idle and "Never run here yet." in idle
    job = Job.objects.create(kind="consolidate", organization=acme, status=Job.Status.RUNNING, progress=0.4,
                             progress_message="2 of 5")
    running = ada_client.get("/admin/jobs/").content.decode()
    assert 'hx-trigger="every 2s"' in running and 'style="width: 40%"' in running and "2 of 5" in running
    Job.objects.filter(pk=job.pk).update(status=Job.Status.SUCCEEDED, progress=1.0)
    finished = ada_client.get("/admin/jobs/", **htmx())
    assert b"<html" not in finished.content and b"every 2s" not in finished.content
    assert b"Succeeded" in finished.content


def test_run_now_queues_a_job_of_that_kind_for_the_admins_organization(ada_client, acme, globex):
    response = ada_client.post("/admin/jobs/run/", {"kind": "summarize"}, **htmx())
    assert response.status_code == 200 and b"Summarize job queued" in response.content
    (job,) = Job.objects.all()
    assert (job.kind, job.organization, job.status, job.params) == ("summarize", acme, "queued", {"trigger": "manual"})
    assert b'hx-trigger="every 2s"' in response.content, "a queued job keeps the page polling"
    assert ada_client.post("/admin/jobs/run/", {"kind": "rm -rf"}).status_code == 302
    assert ada_client.post("/admin/jobs/run/", {"kind": "evaluate_locomo"}).status_code == 302, "not offered here"
    assert Job.objects.count() == 1


def test_the_jobs_page_names_each_kind_by_its_label(ada_client, acme):
    Job.objects.create(kind=Job.Kind.EXPIRE_SESSIONS, organization=acme, status=Job.Status.SUCCEEDED)
    page = ada_client.get("/admin/jobs/").content.decode()
    assert page.count("Run now</button>") == len(JOB_KINDS) and "disabled>Run now" not in page
    for title, about in JOB_KINDS.values():
        assert f"<h2>{title}</h2>" in page and about.replace("'", "&#x27;") in page
    recent = page[page.index("Recent runs"):]
    assert "<strong>Expire sessions</strong>" in recent and "expire_sessions" not in recent


def test_agent_key_and_login_changes_are_in_the_operations_log_with_the_admin_who_made_them(
        ada_client, acme, acme_admin):
    from memoryapp.actors import Principal
    from memoryapp.services.tenancy import user_get_or_create_for_agent, user_invite

    ada_client.post("/admin/agents/", {"name": "audit-bot", "permissions": ["read"]})
    agent = Agent.objects.get(name="audit-bot")
    ada_client.post(f"/admin/agents/{agent.pk}/active/", {"active": "false"})
    ada_client.post(f"/admin/agents/{agent.pk}/active/", {"active": "true"})
    ada_client.post(f"/admin/agents/{agent.pk}/revoke/")
    newcomer = user_get_or_create_for_agent(organization=acme, external_id="newcomer")
    user_invite(user=newcomer, username="newcomer", principal=Principal.for_user(acme_admin))

    page = ada_client.get("/admin/events/", {"actor_type": "admin"}).content.decode()
    for reason in ("agent key created: audit-bot", "agent disabled: audit-bot", "agent enabled: audit-bot",
                   "agent key revoked: audit-bot", "invited: may log in with a one-time password"):
        assert reason in page, reason
    assert "5 events, newest first" in page and acme_admin.username in page
    assert "<td>newcomer</td>" in page, "the invitation is about the invited user"
    events = MemoryEvent.objects.filter(data__agent=str(agent.pk))
    assert {e.actor_id for e in events} == {str(acme_admin.pk)} and events.count() == 4


def test_only_an_admin_of_the_agents_organization_changes_its_key(acme, alice, globex_admin):
    from django.core.exceptions import PermissionDenied

    from memoryapp.actors import Principal
    from memoryapp.services.tenancy import agent_revoke, agent_set_active

    agent, _ = make_agent(acme, "guarded-bot")
    for outsider in (Principal.for_user(alice), Principal.for_user(globex_admin), Principal.for_agent(agent)):
        with pytest.raises(PermissionDenied):
            agent_set_active(agent=agent, active=False, principal=outsider)
        with pytest.raises(PermissionDenied):
            agent_revoke(agent=agent, principal=outsider)
    agent.refresh_from_db()
    assert agent.is_active and agent.revoked_at is None
    assert not MemoryEvent.objects.filter(data__agent=str(agent.pk), actor_type__in=["admin", "user", "agent"])


def test_accounts_made_named_and_secured_are_in_the_operations_log(ada_client, acme, acme_admin):
    from memoryapp.actors import Principal
    from memoryapp.services.tenancy import user_display_name_set, user_for_write, user_password_set

    agent, _ = make_agent(acme, "intake-bot")
    newcomer = user_for_write(Principal.for_agent(agent), "newcomer")
    user_display_name_set(user=newcomer, display_name="Nia", principal=Principal.for_user(acme_admin))
    user_password_set(user=newcomer, password="a-new-long-passphrase")

    page = ada_client.get("/admin/events/").content.decode()
    for reason in ("user created", "display name set", "changed their password"):
        assert reason in page, reason
    created = MemoryEvent.objects.get(user_id=newcomer.id, reason="user created")
    assert (created.actor_type, created.actor_id) == ("agent", str(agent.pk)), "the agent that named the user"
    assert "a-new-long-passphrase" not in page
