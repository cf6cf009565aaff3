"""Erasure down to the disk: after a deletion and its purge, the deleted text is in no file under
the data folder (heap, indexes, statistics, WAL, server log, Redis), and in no log line or stored
query; the receipt says when that became true."""

import io
import logging
import os
import secrets
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.test import Client

from memoryapp.actors import ActorRef
from memoryapp.api.serializers import receipt_json
from memoryapp.models import AccessLog, DeletionReceipt, Job, Memory
from memoryapp.services import govern
from memoryapp.services.extraction import episodes_extract
from memoryapp.services.purge import QuotedText, deleted_text_purge
from tests.api.conftest import AgentClient
from tests.factories import make_agent, make_memory, make_user, say

ADMIN = ActorRef("admin", "test")


def files_containing(root: Path, marker: str) -> list[str]:
    """`grep -ril marker root`: every regular file whose bytes hold the marker, in any case."""
    needle = marker.lower().encode()
    found = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        try:
            data = path.read_bytes()
        except OSError:  # a file removed while we walk (a WAL segment, a temp file)
            continue
        if needle in data.lower():
            found.append(str(path.relative_to(root)))
    return found


def sql(statement: str, params=()):
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else None


def relation_of(path: str) -> str | None:
    """The table or index a file under base/ belongs to, to say what kept the text."""
    parts = Path(path).parts
    if len(parts) < 4 or parts[1] != "base" or not parts[3].split(".")[0].isdigit():
        return None
    return sql("SELECT pg_filenode_relation(0, %s)::text", [int(parts[3].split(".")[0].split("_")[0])])[0][0]


def statistics_holding(marker: str) -> int:
    """Rows of pg_statistic whose sampled values name the marker (what ANALYZE keeps of a column)."""
    columns = " || ".join(f"coalesce(stavalues{n}::text, '')" for n in range(1, 6))
    return sql(f"SELECT count(*) FROM pg_statistic WHERE lower({columns}) LIKE %s", [f"%{marker}%"])[0][0]


def remember_marker(alice, marker: str, target: str):
    """Alice's memory carrying the marker, written the way `target` will delete it: extracted from
    an episode (episode and user deletion) or written directly (memory deletion, the episode would
    otherwise keep the text)."""
    for text in ("I live in Porto.", "I work at Initech.", "I am vegetarian.", "My sister is called Ana."):
        episodes_extract(episode_ids=[say(alice, text).id], actor=ActorRef.for_job("test"))
    if target == "memory":
        return make_memory(alice, f"Alice's favorite band is {marker}.", subject="alice", attribute="likes",
                           value=marker), None
    episode = say(alice, f"My favourite band is {marker}.")
    episodes_extract(episode_ids=[episode.id], actor=ActorRef.for_job("test"))
    memory = Memory.objects.get(source_links__episode=episode)
    assert marker in memory.text
    return memory, episode


@pytest.mark.parametrize("target", ["episode", "memory", "user"])
@pytest.mark.django_db(transaction=True)
def test_deleted_text_is_in_no_file_under_the_data_folder_after_the_purge(target, alice, bob, acme):
    marker = f"zq{secrets.token_hex(6)}7"
    memory, episode = remember_marker(alice, marker, target)
    agent = AgentClient(make_agent(acme, "reader", permissions=("read",))[1])
    # The agent searches for it for alice, and for bob quoting alice's fact; and lists by ?q=.
    assert agent.post("search", {"user": "alice", "query": f"which band is {marker}"}).status_code == 200
    assert agent.post("search", {"user": "bob", "query": f"does bob like {marker} as alice does"}).status_code == 200
    assert agent.get(f"memories?user=alice&q={marker}").status_code == 200
    assert AccessLog.objects.filter(query__contains=marker).count() == 3  # the list's ?q= is logged too
    sql("ANALYZE")  # as autovacuum would: the column statistics sample the marker
    assert statistics_holding(marker) > 0

    if target == "episode":
        receipt = govern.episode_delete(episode=episode, actor=ADMIN)
    elif target == "memory":
        receipt = govern.memory_delete(memory=memory, actor=ADMIN)
    else:
        receipt = govern.user_memories_delete(user=alice, actor=ADMIN)
    assert not Memory.objects.filter(text__contains=marker).exists()
    # The stored queries are blank already: alice's (they read the memory) and bob's (it quotes it).
    assert not AccessLog.objects.filter(query__contains=marker).exists()
    assert AccessLog.objects.filter(query="").count() == 3
    # The deletion queued one purge for after its commit.
    assert Job.objects.filter(kind="purge", status="queued", params__trigger="deletion").count() == 1
    assert receipt_json(receipt)["purged_at"] is None
    assert receipt_json(receipt)["purge"] == "purge pending (runs within 5 minutes)"

    sql("CHECKPOINT")  # the dirty pages reach their files: what a crash, a backup or a grep would see
    before = files_containing(settings.DATA_DIR, marker)
    assert any(path.startswith("postgres/base/") for path in before), before  # dead tuples, indexes
    assert any(path.startswith("postgres/pg_wal/") for path in before), before

    out = io.StringIO()
    call_command("run_job", "purge", stdout=out)  # on demand; after a deletion the worker runs the same
    assert '"receipts": 1' in out.getvalue() and '"wal": "switched"' in out.getvalue()

    left = files_containing(settings.DATA_DIR, marker)
    assert left == [], [(path, relation_of(path)) for path in left]
    assert statistics_holding(marker) == 0
    receipt.refresh_from_db()
    assert receipt.purged_at is not None
    assert receipt_json(receipt)["purge"] == f"purged at {receipt.purged_at.isoformat()}"
    # The rest of the store is intact and still found.
    assert Memory.objects.filter(user=bob).count() == 0 and AccessLog.objects.count() == 3
    if target != "user":
        assert Memory.objects.filter(user=alice, value="Porto").exists()


@pytest.mark.django_db(transaction=True)
def test_one_purge_covers_every_pending_receipt_and_a_second_finds_nothing(alice):
    memories = [make_memory(alice, f"Alice's code number {n} is zq{secrets.token_hex(4)}1.") for n in range(3)]
    for memory in memories:
        govern.memory_delete(memory=memory, actor=ADMIN)
    assert Job.objects.filter(kind="purge", status="queued").count() == 1  # debounced: one queued for all three
    assert deleted_text_purge()["receipts"] == 3
    assert not DeletionReceipt.objects.filter(purged_at__isnull=True).exists()
    assert deleted_text_purge() == {"receipts": 0}


@pytest.mark.django_db(transaction=True)
def test_dashboard_receipt_says_pending_then_when_the_purge_completed(alice):
    receipt = govern.memory_delete(memory=make_memory(alice, "Alice's locker is number 4411."), actor=ADMIN)
    client = Client()
    client.force_login(alice)
    page = client.get(f"/receipts/{receipt.pk}/").content.decode()
    assert "Purge pending (runs within 5 minutes)" in page
    deleted_text_purge()
    page = client.get(f"/receipts/{receipt.pk}/").content.decode()
    assert "Purged at" in page and "Purge pending" not in page


@pytest.mark.django_db
def test_the_purge_refuses_to_run_inside_a_transaction():
    with pytest.raises(RuntimeError, match="cannot run inside a transaction"):
        deleted_text_purge()


@pytest.mark.django_db
def test_stored_queries_quoting_a_deleted_memory_are_blanked_and_others_kept(alice, bob):
    memory = make_memory(alice, "Alice's favorite band is The Velvet Mornings.", subject="alice",
                         attribute="likes", value="The Velvet Mornings")
    queries = {
        "are the velvet mornings touring": "",  # the value, in any case
        "whose favorite band is that": "",  # three words in a row of the deleted text
        "what does bob eat": "what does bob eat",
        "bob band": "bob band",  # a word or two in common is not a quotation
        "where is the party": "where is the party",  # nor are three common words
    }
    logs = {text: AccessLog.objects.create(organization=bob.organization, actor_type="agent", actor_id="x",
                                           user_id=bob.id, endpoint="search", query=text) for text in queries}
    govern.memory_delete(memory=memory, actor=ADMIN)
    assert {text: AccessLog.objects.get(pk=log.pk).query for text, log in logs.items()} == queries


def test_what_counts_as_quoting_deleted_text():
    quoted = QuotedText(values=["Zq81 Labs"], texts=["My locker code is k9x7qz21, don't tell.", "I live in Porto."])
    assert quoted.found_in("LOCKER CODE IS?")  # three words, case and punctuation aside
    assert quoted.found_in("who has k9x7qz21")  # a code-like word alone
    assert quoted.found_in("jobs at zq81 labs")  # the value as whole words
    assert not quoted.found_in("zq81 lab")  # ... all of them
    assert not quoted.found_in("is my code secret")  # the same words, not in a row
    assert quoted.found_in("porto weather")  # a name of the deleted text, alone
    assert not quoted.found_in("weather in lisbon")


def test_a_rare_word_or_a_name_of_deleted_text_is_enough_to_quote_it():
    quoted = QuotedText(values=["parrot named Plorvenstik"], texts=["My parrot is named Plorvenstik.",
                                                                   "My boat is called Vintrobalex."])
    assert quoted.found_in("what is vintrobalex")  # outside the vocabulary of common words
    assert quoted.found_in("Plorvenstik?")
    assert not quoted.found_in("what is my boat called")  # common words, not three of them in a row


def test_gunicorn_logs_the_path_without_its_query_string():
    import inspect
    from datetime import timedelta
    from types import SimpleNamespace

    from gunicorn.config import Config
    from gunicorn.glogging import Logger

    from memoryapp.management.commands import runstack

    assert "ACCESS_LOG_FORMAT" in inspect.getsource(runstack.Command.handle)  # what `make run` passes
    environ = {"REQUEST_METHOD": "GET", "RAW_URI": "/api/v1/memories?q=zqsecret", "PATH_INFO": "/api/v1/memories",
               "QUERY_STRING": "q=zqsecret", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
               "HTTP_REFERER": "http://localhost/memories/?q=zqsecret", "HTTP_USER_AGENT": "curl"}
    request = SimpleNamespace(headers=[("REFERER", environ["HTTP_REFERER"])])
    response = SimpleNamespace(status="200 OK", sent=12, headers=[], response_length=12)
    atoms = Logger(Config()).atoms(response, request, environ, timedelta(milliseconds=3))
    line = runstack.ACCESS_LOG_FORMAT % atoms
    assert '"GET /api/v1/memories HTTP/1.1" 200' in line and "zqsecret" not in line
    assert "zqsecret" in Logger(Config()).cfg.access_log_format % atoms  # gunicorn's default would log it


def test_django_request_lines_are_logged_without_their_query_string():
    handler = logging.getLogger("django.server").handlers[0]
    stream = io.StringIO()
    previous = handler.setStream(stream)
    try:
        logging.getLogger("django.server").info('"%s" %s %s', "GET /api/v1/memories?q=zqsecret HTTP/1.1", 200, 12)
    finally:
        handler.setStream(previous)
    assert '"GET /api/v1/memories HTTP/1.1" 200 12' in stream.getvalue() and "zqsecret" not in stream.getvalue()


def test_purge_runs_on_the_beat_schedule_and_from_the_jobs_page():
    from memoryapp.jobs import JOBS
    from memoryapp.web.forms import JOB_KINDS

    assert settings.CELERY_BEAT_SCHEDULE["purge"] == {
        "task": "memoryapp.tasks.run_scheduled_job", "schedule": 300.0, "args": ["purge"]}
    assert "purge" in JOBS and "purge" in JOB_KINDS


@pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="an external PostgreSQL is configured by its owner")
@pytest.mark.django_db
def test_embedded_postgres_deletes_old_wal_and_keeps_statements_out_of_its_log():
    assert sql("SHOW wal_recycle") == [("off",)] and sql("SHOW wal_keep_size") == [("0",)]
    assert sql("SHOW log_min_error_statement") == [("panic",)] and sql("SHOW log_error_verbosity") == [("terse",)]


@pytest.mark.django_db
def test_an_admin_starts_a_purge_from_the_jobs_page(acme):
    admin = make_user(acme, "ada", admin=True)
    client = Client()
    client.force_login(admin)
    assert "Purge deleted text" in client.get("/admin/jobs/").content.decode()
    client.post("/admin/jobs/run/", {"kind": "purge"})
    assert Job.objects.filter(kind="purge", organization=acme, params__trigger="manual").exists()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_deletion_gets_purged_by_the_worker_without_anyone_asking(celery_worker_process, alice, monkeypatch):
    import time

    from memoryapp.services import purge

    monkeypatch.setattr(purge, "PURGE_DEBOUNCE_SECONDS", 0)  # the countdown is set here, by the deleting side
    receipt = govern.memory_delete(memory=make_memory(alice, "Alice's locker is number 4411."), actor=ADMIN)
    deadline = time.monotonic() + 60
    while receipt.purged_at is None and time.monotonic() < deadline:
        time.sleep(0.5)
        receipt.refresh_from_db()
    assert receipt.purged_at is not None
    job = Job.objects.get(kind="purge", params__trigger="deletion")
    assert job.status == "succeeded" and job.result["receipts"] == 1


@pytest.mark.django_db(transaction=True)
def test_the_judges_reasons_about_a_deleted_memory_leave_the_extraction_job(alice):
    gone, kept = make_memory(alice, "Alice's locker is number 4411."), make_memory(alice, "Alice lives in Porto.")
    job = Job.objects.create(kind="extraction", organization=alice.organization, status="succeeded", result={
        "operations": [{"op": "ADD", "memory_id": str(gone.id), "reason": "LLM judge: her locker is 4411"},
                       {"op": "ADD", "memory_id": str(kept.id), "reason": "LLM judge: new city"}]})
    govern.memory_delete(memory=gone, actor=ADMIN)
    deleted_text_purge()
    job.refresh_from_db()
    assert [op["reason"] for op in job.result["operations"]] == ["", "LLM judge: new city"]
