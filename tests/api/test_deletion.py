"""Deletion and ingest over HTTP, atomic and honest (issue 16): `preview` read strictly, an ingest
that commits all or nothing and once per Idempotency-Key, and deletes racing ingests of the same
user without a 5xx."""

import threading

import pytest
from django.db import connection
from django.db.models import Count, F

from memoryapp.models import Episode, Memory, MemorySource, User
from memoryapp.services import extraction
from tests.api.conftest import AgentClient
from tests.factories import make_agent


def ingest(agent, *texts, user="sam", wait=True, key=None, session="s1"):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    return agent.post("episodes", {"user": user, "session": session, "wait": wait,
                                   "messages": [{"role": "user", "content": t} for t in texts]}, **headers)


# --- preview ----------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("spelling", ["true", "True", "TRUE", "1", "yes", "Yes", "on", "ON"])
def test_every_usual_spelling_of_true_only_previews(acme_agent, spelling):
    ingest(acme_agent, "I live in Porto.")
    memory = Memory.objects.get(user__external_id="sam")
    answer = acme_agent.delete(f"memories/{memory.id}?preview={spelling}")
    assert answer.status_code == 200 and answer.body["preview"] is True
    assert answer.body["deleted"]["memories"]["ids"] == [str(memory.id)]
    assert Memory.objects.filter(pk=memory.pk).exists(), "a preview deletes nothing"


@pytest.mark.django_db
@pytest.mark.parametrize("spelling", ["false", "False", "0", "no", "NO", "off"])
def test_every_usual_spelling_of_false_deletes(acme_agent, spelling):
    ingest(acme_agent, "I live in Porto.")
    memory = Memory.objects.get(user__external_id="sam")
    answer = acme_agent.delete(f"memories/{memory.id}?preview={spelling}")
    assert answer.status_code == 200 and "receipt_id" in answer.body
    assert not Memory.objects.filter(pk=memory.pk).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["memories/{memory}", "episodes/{episode}", "users/sam/memories"])
@pytest.mark.parametrize("spelling", ["maybe", "tru", "", "2"])
def test_a_preview_that_is_neither_true_nor_false_is_refused_and_deletes_nothing(acme_agent, path, spelling):
    ingest(acme_agent, "I live in Porto.")
    memory = Memory.objects.get(user__external_id="sam")
    episode = Episode.objects.get(user__external_id="sam")
    answer = acme_agent.delete(path.format(memory=memory.id, episode=episode.id) + f"?preview={spelling}")
    assert answer.status_code == 400
    assert answer.body["error"]["code"] == "invalid" and "preview" in answer.body["error"]["fields"]
    assert Memory.objects.filter(pk=memory.pk).exists() and Episode.objects.filter(pk=episode.pk).exists()


# --- an ingest commits all or nothing, once per key -----------------------------------------


class BrokenExtractor:
    def extract(self, episodes, *, subject):
        raise RuntimeError("the extractor fell over")


@pytest.mark.django_db
def test_an_ingest_whose_extraction_fails_stores_nothing(acme_agent, monkeypatch):
    monkeypatch.setattr(extraction, "get_extractor", lambda: BrokenExtractor())
    acme_agent.client.raise_request_exception = False
    answer = ingest(acme_agent, "I live in Porto.", "I love jazz.")
    assert answer.status_code == 500
    assert not Episode.objects.filter(user__external_id="sam").exists(), "an error answer leaves nothing behind"

    monkeypatch.undo()
    retry = ingest(acme_agent, "I live in Porto.", "I love jazz.")
    assert retry.status_code == 201 and Episode.objects.filter(user__external_id="sam").count() == 2


@pytest.mark.django_db
def test_a_retry_with_the_same_idempotency_key_returns_the_first_episodes_and_stores_nothing(acme_agent):
    first = ingest(acme_agent, "I live in Porto.", "I love jazz.", key="req-1")
    assert first.status_code == 201
    stored = (Episode.objects.count(), Memory.objects.count())

    retry = ingest(acme_agent, "I live in Porto.", "I love jazz.", key="req-1")

    assert retry.status_code == 200 and retry.body["replayed"] is True
    assert retry.body["episodes"] == first.body["episodes"], "the same ids, in the same order"
    assert set(retry.body) >= {"episodes", "job", "operations"}
    assert (Episode.objects.count(), Memory.objects.count()) == stored, "nothing stored twice"
    other = ingest(acme_agent, "I live in Porto.", "I love jazz.", key="req-2")
    assert other.status_code == 201 and other.body["episodes"] != first.body["episodes"], "a new key is a new request"


@pytest.mark.django_db
def test_a_queued_ingest_retried_with_its_key_answers_the_same_job(acme_agent):
    first = ingest(acme_agent, "I live in Porto.", key="queued-1", wait=False)
    assert first.status_code == 202
    retry = ingest(acme_agent, "I live in Porto.", key="queued-1", wait=False)
    assert retry.status_code == 200
    assert (retry.body["episodes"], retry.body["job"]) == (first.body["episodes"], first.body["job"])
    assert Episode.objects.count() == 1


@pytest.mark.django_db
def test_an_idempotency_key_reused_for_other_messages_is_a_conflict(acme_agent):
    ingest(acme_agent, "I live in Porto.", key="req-1")
    answer = ingest(acme_agent, "I live in Lisbon.", key="req-1")
    assert answer.status_code == 409 and answer.body["error"]["code"] == "conflict"
    assert list(Episode.objects.values_list("content", flat=True)) == ["I live in Porto."]


@pytest.mark.django_db
def test_an_idempotency_key_belongs_to_one_user(acme_agent):
    sam = ingest(acme_agent, "I live in Porto.", key="req-1", user="sam")
    riley = ingest(acme_agent, "I live in Porto.", key="req-1", user="riley")
    assert riley.status_code == 201 and riley.body["episodes"] != sam.body["episodes"]


@pytest.mark.django_db
def test_the_schema_documents_the_idempotency_key_header(acme_agent):
    schema = acme_agent.client.get("/api/v1/schema", HTTP_ACCEPT="application/json").json()
    parameters = schema["paths"]["/api/v1/episodes"]["post"]["parameters"]
    assert {"name": "Idempotency-Key", "in": "header"}.items() <= next(
        p for p in parameters if p["name"] == "Idempotency-Key"
    ).items()


# --- deletes racing ingests -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_deletes_racing_ingests_of_the_same_user_never_fail_and_leave_a_consistent_store(acme):
    _, key = make_agent(acme, "racer")
    statements = ["I live in Porto.", "I'm vegetarian.", "I still eat eggs.", "I love jazz.", "I moved to Lisbon.",
                  "I work at Initech."]
    failures, ingested = [], []
    assert ingest(AgentClient(key), "I'm vegetarian.", "I still eat eggs.").status_code == 201  # sam exists

    def run(work):
        client = AgentClient(key)
        client.client.raise_request_exception = False  # an exception must show up as the 500 it answers
        try:
            work(client)
        except Exception as exc:  # noqa: BLE001 - a crashed thread is a failure to report, not to lose
            failures.append(repr(exc))
        finally:
            connection.close()

    def ingester(n):
        def work(client):
            for i in range(8):
                answer = ingest(client, statements[(n + i) % len(statements)], session=f"s{n}-{i}",
                                key=f"{n}-{i}")
                if answer.status_code >= 500 or answer.status_code not in (200, 201):
                    failures.append(("ingest", answer.status_code, answer.body))
                else:
                    ingested.append(answer.body["episodes"])
        return work

    def user_deleter(client):
        for _ in range(6):
            answer = client.delete("users/sam/memories")
            if answer.status_code != 200:
                failures.append(("user delete", answer.status_code, answer.body))

    def episode_deleter(client):
        for _ in range(12):
            ids = list(Episode.objects.filter(user__external_id="sam").values_list("id", flat=True)[:1])
            if ids:
                answer = client.delete(f"episodes/{ids[0]}")
                if answer.status_code not in (200, 404):  # 404: a user delete took it first
                    failures.append(("episode delete", answer.status_code, answer.body))

    threads = [threading.Thread(target=run, args=(ingester(n),)) for n in range(3)]
    threads += [threading.Thread(target=run, args=(user_deleter,)),
                threading.Thread(target=run, args=(episode_deleter,))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    assert len(ingested) == 24
    sam = User.objects.get(organization=acme, external_id="sam")
    memories = Memory.objects.filter(user=sam)
    assert not Episode.objects.filter(user=sam, extraction="pending").exists(), "every stored episode was extracted"
    assert not memories.filter(source_links__isnull=True).exists(), "no memory outlived all its sources"
    assert not MemorySource.objects.filter(memory__user=sam).exclude(episode__user=sam).exists()
    doubled = (memories.filter(status="active", cardinality="single").values("subject", "attribute")
               .annotate(n=Count("id")).filter(n__gt=1))
    assert not doubled.exists(), "one active value per slot"
    assert not memories.filter(supersedes__isnull=False).exclude(supersedes__user=F("user")).exists()


def test_deleting_a_stated_memory_deletes_the_episode_that_records_its_text(acme_agent, acme):
    from memoryapp.models import Episode

    created = acme_agent.post("memories", {"user": "dana", "text": "Dana's bike is named Frindlewhomp."})
    memory_id = created.body["memory"]["id"]
    receipt = acme_agent.delete(f"memories/{memory_id}")
    assert receipt.status_code == 200 and receipt.body["deleted"]["episodes"]["count"] == 1
    assert not Episode.objects.filter(content__icontains="Frindlewhomp").exists()
    assert "Frindlewhomp" not in acme_agent.get("episodes?user=dana").content.decode()


def test_deleting_a_memory_drawn_from_a_conversation_keeps_the_message(acme_agent):
    from memoryapp.models import Episode

    acme_agent.post("episodes", {"user": "dana", "wait": True,
                                 "messages": [{"role": "user", "content": "I live in Porto."}]})
    memory = acme_agent.get("memories?user=dana&q=Porto").body["results"][0]
    receipt = acme_agent.delete(f"memories/{memory['id']}")
    assert receipt.body["deleted"]["episodes"]["count"] == 0
    assert Episode.objects.filter(content="I live in Porto.").exists()


# --- deleting a memory with the messages it came from (issue 18, item 6) -----------------------


def _miso_anywhere(agent, question="Does Sam have a cat?") -> dict:
    """What an agent asking about the cat gets back, from each read endpoint (real model)."""
    body = {"user": "sam", "query": question, "k": 20, "min_score": -1}
    memories = agent.post("search", body).body["results"]
    episodes = agent.post("episodes/search", body).body["results"]
    context = agent.post("context", {**body, "budget_tokens": 4000}).body["context"]
    return {"memories": [r["memory"]["text"] for r in memories if "Miso" in r["memory"]["text"]],
            "episodes": [r["episode"]["content"] for r in episodes if "Miso" in r["episode"]["content"]],
            "context": "Miso" in context}


@pytest.mark.django_db
def test_deleting_a_memory_with_sources_true_leaves_no_endpoint_returning_the_fact(acme_agent):
    ingest(acme_agent, "I live in Lisbon.", "I have a cat named Miso.")
    cat = Memory.objects.get(user__external_id="sam", text__contains="Miso")
    message = Episode.objects.get(content="I have a cat named Miso.")
    assert _miso_anywhere(acme_agent)["episodes"] == ["I have a cat named Miso."]

    preview = acme_agent.delete(f"memories/{cat.id}?preview=true")
    assert preview.body["deleted"]["episodes"]["count"] == 0
    assert preview.body["sources_kept"] == {"count": 1, "ids": [str(message.id)]}, "the preview names the message"
    offered = acme_agent.delete(f"memories/{cat.id}?preview=true&with_sources=true")
    assert offered.body["deleted"]["episodes"]["ids"] == [str(message.id)]
    assert offered.body["sources_kept"]["count"] == 0
    assert Episode.objects.filter(pk=message.pk).exists(), "a preview deletes nothing"

    receipt = acme_agent.delete(f"memories/{cat.id}?with_sources=true")

    assert receipt.status_code == 200 and receipt.body["target"] == "memory_with_sources"
    assert receipt.body["deleted"]["episodes"]["ids"] == [str(message.id)]
    assert receipt.body["deleted"]["memories"]["ids"] == [str(cat.id)]
    assert _miso_anywhere(acme_agent) == {"memories": [], "episodes": [], "context": False}
    assert Memory.objects.filter(user__external_id="sam", text__contains="Lisbon").exists()


@pytest.mark.django_db
def test_without_sources_the_message_stays_and_episode_search_still_finds_it(acme_agent):
    ingest(acme_agent, "I have a cat named Miso.")
    cat = Memory.objects.get(user__external_id="sam")
    receipt = acme_agent.delete(f"memories/{cat.id}?with_sources=false")
    assert receipt.status_code == 200 and receipt.body["target"] == "memory"
    assert _miso_anywhere(acme_agent) == {"memories": [], "episodes": ["I have a cat named Miso."], "context": False}


@pytest.mark.django_db
@pytest.mark.parametrize("spelling", ["maybe", "tru", "", "2"])
def test_a_with_sources_that_is_neither_true_nor_false_is_refused_and_deletes_nothing(acme_agent, spelling):
    ingest(acme_agent, "I have a cat named Miso.")
    memory = Memory.objects.get(user__external_id="sam")
    for query in (f"with_sources={spelling}", f"preview=false&with_sources={spelling}"):
        answer = acme_agent.delete(f"memories/{memory.id}?{query}")
        assert answer.status_code == 400, query
        assert answer.body["error"]["code"] == "invalid" and "with_sources" in answer.body["error"]["fields"]
    assert Memory.objects.filter(pk=memory.pk).exists() and Episode.objects.filter(user__external_id="sam").exists()


@pytest.mark.django_db
def test_the_schema_documents_with_sources_on_memory_deletion(client):
    schema = client.get("/api/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    parameters = {p["name"]: p for p in schema["paths"]["/api/v1/memories/{memory_id}"]["delete"]["parameters"]}
    assert parameters["with_sources"]["in"] == "query"
    assert parameters["with_sources"]["schema"]["type"] == "boolean"
    assert "messages" in parameters["with_sources"]["description"]
