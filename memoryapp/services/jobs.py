"""Background runs as rows: created with the request, queued after commit, progress as they go.

A run claims its row (queued or retrying, or running under a worker that stopped answering) in one
conditional UPDATE, and heartbeats it while it works. So a job whose worker died is found within
seconds (`jobs_orphaned`) and sent again, and a second delivery of the same job (the broker hands
an unacknowledged message out again after its visibility timeout) finds the row taken or done and
does nothing: each job's work runs to completion once.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

from celery import Task, current_app
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from memoryapp.models import Job, Organization

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 5
STALE_AFTER_SECONDS = 30  # six missed heartbeats: the worker is gone (or frozen, which is the same to a user)
RETRY_WAIT_SECONDS = 30  # a retrying job waits up to 16 s for its next attempt without a heartbeat
INLINE = "inline:"  # a run in this process (a command, the demo, beat's entry task), not a Celery worker's


def job_create(*, kind: str, organization: Organization | None, params: dict, user=None) -> Job:
    return Job.objects.create(kind=kind, organization=organization, params=params, user=user)


def task_named(name: str) -> Task:
    """The Celery task registered as `name` ("memoryapp.tasks.run_job", as beat's schedule names it).
    memoryapp.tasks runs the services and the job registry, so they send its tasks by name: importing
    it would run up the floors and close a cycle. The app registers the tasks as Django starts
    (MemoryappConfig.ready), so this is the task itself, sent with its own options."""
    return current_app.tasks[name]


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
    Job.objects.filter(pk=job.pk).update(
        progress=job.progress, progress_message=job.progress_message, heartbeat_at=timezone.now()
    )


def job_claim(job: Job, *, worker: str) -> bool:
    """Take the job for `worker` if nobody holds it; False if it is done, failed, or running elsewhere."""
    now = timezone.now()
    claimable = Q(status__in=[Job.Status.QUEUED, Job.Status.RETRYING]) | Q(
        status=Job.Status.RUNNING, heartbeat_at__lt=now - timedelta(seconds=STALE_AFTER_SECONDS)
    )
    taken = Job.objects.filter(claimable, pk=job.pk).update(
        status=Job.Status.RUNNING, worker=worker, heartbeat_at=now, started_at=now, attempts=F("attempts") + 1,
        error="",
    )
    job.refresh_from_db()
    return taken == 1


def job_run(job: Job, work: Callable[[Callable[[int, int], None]], dict], *, worker: str = "") -> dict:
    """Run `work(progress)` for the job, recording start, progress and the result; a job another run
    holds or finished is left alone (its current result is returned)."""
    worker = worker or f"{INLINE}{socket.gethostname()}:{os.getpid()}"
    if not job_claim(job, worker=worker):
        logger.info("job %s is %s under %s; this delivery does nothing", job.pk, job.status, job.worker or "nobody")
        return job.result
    with _heartbeat(job, worker):
        result = work(lambda done, total: job_progress(job, done, total))
    Job.objects.filter(pk=job.pk, worker=worker).update(
        status=Job.Status.SUCCEEDED, progress=1.0, result=result, finished_at=timezone.now(), progress_message="done"
    )
    return result


@contextmanager
def _heartbeat(job: Job, worker: str) -> Iterator[None]:
    """Mark the job alive every few seconds from a thread, however long one step of the work takes."""
    stop = threading.Event()

    def beat():
        try:
            while not stop.wait(HEARTBEAT_SECONDS):
                Job.objects.filter(pk=job.pk, worker=worker, status=Job.Status.RUNNING).update(
                    heartbeat_at=timezone.now()
                )
        except Exception as exc:  # the database is away: the run itself will find out and retry
            logger.warning("job %s heartbeat stopped: %s", job.pk, exc)
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=beat, name=f"heartbeat-{job.pk}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(HEARTBEAT_SECONDS)


def jobs_orphaned(*, live_workers: set[str] | None = None) -> list[Job]:
    """Jobs whose run died: no heartbeat for a while, or (when `live_workers` is known) a Celery worker
    that no longer answers. Each is put back to queued here, by one caller only; the caller sends it."""
    now = timezone.now()
    dead = Q(status=Job.Status.RUNNING, heartbeat_at__lt=now - timedelta(seconds=STALE_AFTER_SECONDS)) | Q(
        status=Job.Status.RETRYING, heartbeat_at__lt=now - timedelta(seconds=STALE_AFTER_SECONDS + RETRY_WAIT_SECONDS)
    )
    if live_workers is not None:
        dead |= Q(status=Job.Status.RUNNING) & ~Q(worker="") & ~Q(worker__startswith=INLINE) & ~Q(
            worker__in=live_workers
        )
    orphans = []
    for job in Job.objects.filter(dead):
        # conditional on what was read: of two watchdogs that found the same job, one requeues it
        requeued = Job.objects.filter(pk=job.pk, status=job.status, heartbeat_at=job.heartbeat_at).update(
            status=Job.Status.QUEUED, progress_message=f"requeued: {job.worker or 'its worker'} stopped answering"
        )
        if requeued:
            logger.warning("job %s (%s) lost its worker %s; requeued", job.pk, job.kind, job.worker)
            orphans.append(job)
    return orphans


def job_retrying(job: Job, error: str) -> None:
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RETRYING, error=error[:2000])


def job_fail(job: Job, error: str) -> None:
    Job.objects.filter(pk=job.pk).update(status=Job.Status.FAILED, error=error[:2000], finished_at=timezone.now())
