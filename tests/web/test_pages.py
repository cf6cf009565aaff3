"""Each page renders for its owner with what a user needs to see, and fragments for htmx."""

import re

import pytest
from django.test import Client

from memoryapp.actors import Principal
from memoryapp.models import Memory, Project
from memoryapp.selectors.search import SearchParams, search_memories
from memoryapp.services.access import access_record
from tests.factories import PASSWORD, make_agent, make_memory
from tests.web.conftest import htmx, remember

pytestmark = pytest.mark.django_db


def test_anonymous_visitors_are_sent_to_the_login_page():
    response = Client().get("/")
    assert response.status_code == 302 and response.url == "/login/?next=/"


def test_login_page_logs_in_and_logout_logs_out(alice):
    client = Client()
    page = client.get("/login/")
    assert page.status_code == 200 and b"Log in" in page.content
    logged_in = client.post("/login/", {"username": alice.username, "password": PASSWORD})
    assert logged_in.status_code == 302 and logged_in.url == "/"
    assert client.get("/").status_code == 200
    logged_out = client.post("/logout/")
    assert logged_out.status_code == 302 and logged_out.url == "/login/"
    assert client.get("/").status_code == 302


def test_wrong_password_shows_an_error(alice):
    response = Client().post("/login/", {"username": alice.username, "password": "nope"})
    assert response.status_code == 200 and b"form-error" in response.content


def test_my_memories_lists_text_dates_provenance_status_and_sources(alice_client, alice):
    remember(alice, "I live in Porto.", when="2025-03-10")
    remember(alice, "I moved to Lisbon.", when="2025-06-02")
    page = alice_client.get("/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Alice lives in Lisbon." in html and "2 Jun 2025" in html
    assert "User Stated" in html and "Active" in html
    assert "Alice lives in Porto." not in html, "the first visit shows what is believed now"
    history = alice_client.get("/", {"status": "superseded"}).content.decode()
    assert "Alice lives in Porto." in history and "10 Mar 2025" in history and "2 Jun 2025" in history


def test_search_shows_what_the_real_retrieval_returns_in_its_order(alice_client, alice):
    remember(alice, "I live in Porto.", "I'm vegetarian.", "I have a cat named Miso.", "I work as a nurse.")
    question = "what pets does alice have"
    html = alice_client.get("/", {"q": question}).content.decode()
    assert "from the same retrieval agents use" in html
    expected = search_memories(Principal.for_user(alice), user=alice, params=SearchParams(query=question, k=30))
    shown = re.findall(r'class="memory-link" href="/memories/([0-9a-f-]+)/"', html)
    assert shown == [str(hit.item.pk) for hit in expected.hits] and shown
    assert "Alice has a cat named Miso." in html


def test_filters_by_kind_agent_and_the_time_a_fact_was_true(alice_client, alice, acme):
    agent, _ = make_agent(acme, "planner")
    make_memory(alice, "Alice plans a trip to Japan.", agent=agent)
    remember(alice, "I live in Porto.", when="2025-03-10")
    remember(alice, "I moved to Lisbon.", when="2025-06-02")
    by_agent = alice_client.get("/", {"agent": agent.pk}).content.decode()
    assert "Alice plans a trip to Japan." in by_agent and "Lisbon" not in by_agent
    in_april = alice_client.get("/", {"status": "", "true_from": "2025-04-01", "true_until": "2025-04-30"})
    assert "Alice lives in Porto." in in_april.content.decode()
    assert "Alice lives in Lisbon." not in in_april.content.decode()
    summaries = alice_client.get("/", {"kind": "summary"}).content.decode()
    assert "No memories match these filters" in summaries


def test_empty_states(alice_client, alice):
    assert "Nothing is remembered about you yet" in alice_client.get("/").content.decode()
    make_memory(alice, "Alice likes jazz.")
    abstained = alice_client.get("/", {"q": "quarterly tax filing deadline"}).content.decode()
    assert "Nothing relevant" in abstained


def test_the_list_is_paginated(alice_client, alice):
    for number in range(25):
        make_memory(alice, f"Alice collects stamp series number {number}.", embedding=[0.01] * 384)
    first = alice_client.get("/").content.decode()
    assert "Page 1 of 2" in first
    second = alice_client.get("/", {"page": 2}).content.decode()
    assert "Page 2 of 2" in second


def test_memory_page_shows_provenance_versions_and_agent_reads(alice_client, alice, acme):
    remember(alice, "I'm vegetarian.", when="2025-03-10")
    (fish,) = remember(alice, "I eat fish now.", when="2025-07-15")
    reader, _ = make_agent(acme, "kitchen-helper")
    access_record(Principal.for_agent(reader), items=[fish], query="what does alice eat", endpoint="search",
                  user_id=alice.id)
    html = alice_client.get(f"/memories/{fish.pk}/").content.decode()
    assert "I eat fish now." in html, "the source episode excerpt"
    assert "Alice is vegetarian." in html and ">replaced<" in html and ">added<" in html, "the version history"
    assert "10 Mar 2025" in html and "15 Jul 2025" in html
    assert "kitchen-helper" in html and "what does alice eat" in html, "which agents read it"


def test_an_end_user_reads_plain_words_and_the_admin_the_exact_codes(alice_client, ada_client, alice):
    """Issue 21: what changed, in words, for the owner ("replaced", "Fact"); the operation's code name
    (SUPERSEDE) and the kind's (semantic) stay available to the admin."""
    remember(alice, "I'm vegetarian.", when="2025-03-10")
    (fish,) = remember(alice, "I eat fish now.", when="2025-07-15")
    assert fish.kind == Memory.Kind.SEMANTIC
    html = alice_client.get(f"/memories/{fish.pk}/").content.decode()
    assert '<span class="op op-supersede">replaced</span>' in html
    assert '<span class="op op-add">added</span>' in html
    assert '<span class="badge">Fact</span>' in html
    for jargon in ("SUPERSEDE", "Semantic", ">ADD<", "semantic"):
        assert jargon not in html, jargon
    listing = alice_client.get("/").content.decode()
    assert "Fact ·" in listing and "Semantic" not in listing and "Procedural" not in listing

    admin_html = ada_client.get(f"/memories/{fish.pk}/").content.decode()
    assert ">replaced</span> <code" in admin_html and ">SUPERSEDE</code>" in admin_html
    assert 'title="kind: semantic"' in admin_html


def test_memory_page_lists_summaries_built_from_it(alice_client, alice):
    from memoryapp.actors import ActorRef
    from memoryapp.services.reflect import summaries_rebuild

    (porto,) = remember(alice, "I live in Porto.")
    summaries_rebuild(user=alice, actor=ActorRef.for_job("summarize"))
    profile = Memory.objects.get(user=alice, kind=Memory.Kind.SUMMARY, attribute="profile")
    html = alice_client.get(f"/memories/{porto.pk}/").content.decode()
    assert f"/memories/{profile.pk}/" in html and "Built from it" in html
    summary_page = alice_client.get(f"/memories/{profile.pk}/").content.decode()
    assert "Built from memories" in summary_page and f"/memories/{porto.pk}/" in summary_page
    listed = alice_client.get("/", {"kind": "summary"}).content.decode()
    assert "built from these memories" in listed and ">1 memory</span>" in listed, "not '0 sources'"


def test_session_memories_are_listed_and_open_for_their_owner_only(alice_client, bob_client, alice):
    session_memory = make_memory(alice, "Alice is debugging the login page.", scope="session", session="s1")
    assert "Alice is debugging the login page." in alice_client.get("/").content.decode()
    assert alice_client.get(f"/memories/{session_memory.pk}/").status_code == 200
    assert "Alice is debugging the login page." not in bob_client.get("/").content.decode()
    assert bob_client.get(f"/memories/{session_memory.pk}/").status_code == 404


def test_project_memories_show_for_members_only(alice_client, bob_client, alice, acme):
    project = Project.objects.create(organization=acme, name="Apollo")
    project.members.add(alice)
    Memory.objects.create(organization=acme, project=project, scope=Memory.Scope.PROJECT,
                          text="The Apollo launch is on Friday.", embedding=[0.02] * 384)
    assert "The Apollo launch is on Friday." in alice_client.get("/").content.decode()
    assert "The Apollo launch is on Friday." not in bob_client.get("/").content.decode()


def test_htmx_requests_get_fragments(alice_client, alice_memory):
    for url in ("/", "/?q=where+does+alice+live", f"/memories/{alice_memory.pk}/",
                f"/memories/{alice_memory.pk}/correct/", f"/memories/{alice_memory.pk}/delete/"):
        response = alice_client.get(url, **htmx())
        assert response.status_code == 200, url
        assert b"<html" not in response.content and b"<body" not in response.content, url
    assert b"<html" in alice_client.get("/").content


def test_text_is_always_escaped(alice_client, alice):
    memory = make_memory(alice, "Alice wrote <script>alert('x')</script> in her bio.")
    for url in ("/", f"/memories/{memory.pk}/"):
        html = alice_client.get(url).content.decode()
        assert "<script>alert" not in html and "&lt;script&gt;alert" in html, url


def test_pages_load_nothing_from_outside():
    from pathlib import Path

    templates = Path(__file__).resolve().parents[2] / "templates"
    for template in templates.rglob("*.html"):
        text = template.read_text()
        assert "http://" not in text and "https://" not in text and "//cdn" not in text, template


@pytest.mark.parametrize("path", ["/nowhere/", "/memories/00000000-0000-4000-8000-000000000000/", "/receipts/x/"])
def test_a_missing_page_is_the_dashboards_not_found_page_even_under_debug(alice_client, settings, path):
    settings.DEBUG = True  # what `make run` serves with: Django would list every URL pattern here
    response = alice_client.get(path)
    html = response.content.decode()
    assert response.status_code == 404 and "There is nothing here, or nothing you may see." in html
    assert "URLconf" not in html and "Back to my memories" in html


def test_a_missing_slash_still_redirects_and_the_api_still_answers_json(alice_client, settings):
    settings.DEBUG = True
    assert alice_client.get("/export")["Location"] == "/export/"
    api = alice_client.get("/api/v1/memories/not-an-id")
    assert api.status_code == 404 and api.json()["error"]["code"] == "not_found"


def test_my_memories_lists_each_fact_once_and_summaries_under_their_own_filter(alice_client, alice):
    from memoryapp.actors import ActorRef
    from memoryapp.services.reflect import summaries_rebuild

    facts = remember(alice, "I live in Porto.", "I'm vegan.", "I'm allergic to peanuts.")
    summaries_rebuild(user=alice, actor=ActorRef.for_job("summarize"))
    summaries = list(Memory.objects.filter(user=alice, kind=Memory.Kind.SUMMARY))
    assert len(summaries) >= 2, "a profile and the food topic"

    default = alice_client.get("/").content.decode()
    for fact in facts:
        assert default.count(fact.text) == 1, f"{fact.text!r} shown {default.count(fact.text)} times"
    assert not any(f"/memories/{summary.pk}/" in default for summary in summaries)
    assert '<option value="facts" selected>Facts</option>' in default

    listed = alice_client.get("/", {"kind": "summaries"}).content.decode()
    assert all(f"/memories/{summary.pk}/" in listed for summary in summaries)
    assert not any(f"/memories/{fact.pk}/" in listed for fact in facts)
    everything = alice_client.get("/", {"kind": ""}).content.decode()
    assert all(f"/memories/{m.pk}/" in everything for m in [*facts, *summaries])
