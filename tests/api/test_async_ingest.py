"""The asynchronous default: 202 with a job id, the real worker extracts, the job shows progress."""

import time

import pytest

from memoryapp.models import Episode, Memory

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def wait_for_job(client, job_id, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"jobs/{job_id}").body
        if job["status"] in ("succeeded", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.2)


def test_ingest_returns_a_job_that_the_worker_completes(celery_worker_process, acme_agent):
    response = acme_agent.post("episodes", {"user": "sam", "session": "s1", "messages": [
        {"role": "user", "content": "I'm vegetarian and I live in Porto.", "occurred_at": "2025-03-10T12:00:00Z"},
        {"role": "assistant", "content": "Noted!"},
    ]})
    assert response.status_code == 202, response.body
    assert len(response.body["episodes"]) == 2 and response.body["job"]
    job = wait_for_job(acme_agent, response.body["job"])
    assert job["status"] == "succeeded", job
    assert job["progress"] == 1.0 and {o["op"] for o in job["result"]["operations"]} == {"ADD"}
    assert Memory.objects.filter(user__external_id="sam", status="active").count() == 2
    assert set(Episode.objects.values_list("extraction", flat=True)) == {"done"}
