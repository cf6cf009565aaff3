"""Background runs as rows: created with the request, queued after commit, progress as they go."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from memoryapp.models import Job, Organization

logger = logging.getLogger(__name__)


def job_create(*, kind: str, organization: Organization | None, params: dict, user=None) -> Job:
    return Job.objects.create(kind=kind, organization=organization, params=params, user=user)


def job_enqueue(job: Job, task) -> None:
    """Send the task once the job row is committed; with the broker down the job stays queued
    (the periodic `requeue_stale_jobs` sends it again) instead of failing the request."""

    def send():
        try:
            task.delay(str(job.id))
        except Exception as exc:  # kombu raises several types for an unreachable broker
            logger.warning("broker unavailable, job %s stays queued: %s", job.id, exc)
            Job.objects.filter(pk=job.pk).update(progress_message="waiting for the broker")

    transaction.on_commit(send)


def job_progress(job: Job, done: int, total: int, message: str = "") -> None:
    job.progress = 1.0 if total == 0 else min(1.0, done / total)
    job.progress_message = message or f"{done} of {total}"
    Job.objects.filter(pk=job.pk).update(progress=job.progress, progress_message=job.progress_message)


def job_run(job: Job, work: Callable[[Callable[[int, int], None]], dict]) -> dict:
    """Run `work(progress)` for the job, recording start, progress and the result."""
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.RUNNING, started_at=timezone.now(), attempts=job.attempts + 1, error=""
    )
    result = work(lambda done, total: job_progress(job, done, total))
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.SUCCEEDED, progress=1.0, result=result, finished_at=timezone.now(), progress_message="done"
    )
    return result


def job_retrying(job: Job, error: str) -> None:
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RETRYING, error=error[:2000])


def job_fail(job: Job, error: str) -> None:
    Job.objects.filter(pk=job.pk).update(status=Job.Status.FAILED, error=error[:2000], finished_at=timezone.now())
