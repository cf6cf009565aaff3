"""Background jobs: the registry, the real worker, failures with retries, the beat schedule and
the management command."""

import io
import json
import time

import pytest
from django.core.management import call_command

from memoryapp.actors import ActorRef
from memoryapp.jobs import MAINTENANCE, run_job_now
from memoryapp.models import Episode, Job, Memory
from memoryapp.services.extraction import episodes_extract
from memoryapp.services.jobs import job_create
from memoryapp.tasks import MAX_RETRIES, extract_episodes
from tests.factories import make_memory, say


def wait_for(job: Job, timeout=60) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in (Job.Status.SUCCEEDED, Job.Status.FAILED):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job.kind} still {job.status}")


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_run_now_executes_on_the_real_worker(celery_worker_process, alice):
    for text in ("Alice drinks her coffee black.", "Alice takes her coffee black.", "Alice plays the cello."):
        make_memory(alice, text)
    for memory in Memory.objects.filter(user=alice):
        memory.sources.add(say(alice, memory.text), through_defaults={"organization_id": alice.organization_id})
    job = wait_for(run_job_now("consolidate", alice.organization))
    assert job.status == "succeeded", job.error
    assert job.result["merged"] == 2 and job.progress == 1.0 and job.finished_at
    assert Memory.objects.filter(user=alice, status="active").count() == 2


@pytest.mark.django_db
def test_extraction_failure_retries_with_backoff_then_ends_failed_with_the_reason(alice, settings, caplog):
    settings.MEMORY_EXTRACTOR = "llm"
    settings.MEMORY_LLM_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
    episode = say(alice, "I live in Porto.")
    job = job_create(kind="extraction", organization=alice.organization, user=alice,
                     params={"episode_ids": [str(episode.id)]})

    # Eager apply runs the retries in place (without waiting out the countdowns).
    result = extract_episodes.apply(args=[str(job.id)])
    job.refresh_from_db()
    assert result.state == "FAILURE" and job.status == "failed"
    assert "LLMError" in job.error and "cannot reach LLM endpoint" in job.error
    assert job.attempts == MAX_RETRIES + 1 and job.finished_at is not None
    assert [f"Retry in {2 ** n}s" in caplog.text for n in range(1, MAX_RETRIES + 1)] == [True] * MAX_RETRIES
    assert Episode.objects.get(pk=episode.pk).extraction == "failed"


@pytest.mark.django_db
def test_extraction_task_is_idempotent(alice):
    episode = say(alice, "I live in Porto.")
    job = job_create(kind="extraction", organization=alice.organization, user=alice,
                     params={"episode_ids": [str(episode.id)]})
    extract_episodes.apply(args=[str(job.id)])
    job.status = Job.Status.QUEUED
    job.save()
    extract_episodes.apply(args=[str(job.id)])  # a redelivered message
    assert Memory.objects.filter(user=alice).count() == 1
    assert episodes_extract(episode_ids=[episode.id], actor=ActorRef.for_job("test")) == []


@pytest.mark.django_db
def test_management_command_runs_any_job_and_prints_counts(alice):
    make_memory(alice, "Alice lives in Porto.", attribute="city", subject="alice", value="Porto")
    make_memory(alice, "Alice works at Initech.", attribute="employer", subject="alice", value="Initech")
    for kind in [*MAINTENANCE, "metrics"]:
        out = io.StringIO()
        call_command("run_job", kind, stdout=out)
        report = json.loads(out.getvalue())
        assert report["kind"] == kind and isinstance(report["result"], dict)
        assert Job.objects.get(pk=report["job"]).status == "succeeded"
    assert Memory.objects.filter(user=alice, kind="summary", attribute="profile").exists()


def test_beat_schedule_covers_the_jobs_and_reads_the_environment(settings):
    import os
    import subprocess
    import sys

    assert {"consolidate", "decay", "expire_sessions", "summarize", "requeue"} <= set(settings.CELERY_BEAT_SCHEDULE)
    code = ("import django; django.setup(); from django.conf import settings; "
            "s = settings.CELERY_BEAT_SCHEDULE; print(s['decay']['schedule'], 'consolidate' in s)")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memoryapp.settings", "SCHEDULE_DECAY_SECONDS": "120",
           "SCHEDULE_CONSOLIDATE_SECONDS": "0", "DATABASE_URL": "postgres://x@localhost/x",
           "REDIS_URL": "redis://localhost:1/0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["120.0", "False"]
