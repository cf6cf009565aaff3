"""Thin Celery wrappers: load by id, call the service, retry with backoff. Never pass content."""

from celery import shared_task

from memoryapp.models import Episode, Job
from memoryapp.services.actors import ActorRef
from memoryapp.services.extraction import episodes_extract
from memoryapp.services.jobs import job_fail, job_retrying, job_run

MAX_RETRIES = 4


@shared_task(name="memoryapp.tasks.ping")
def ping() -> str:
    """A round trip through the broker and a worker; used by tests and health checks."""
    return "pong"


@shared_task(bind=True, name="memoryapp.tasks.extract_episodes", max_retries=MAX_RETRIES)
def extract_episodes(self, job_id: str) -> dict:
    job = Job.objects.get(pk=job_id)
    if job.status == Job.Status.SUCCEEDED:
        return job.result  # a redelivered message: the work is done
    try:
        return job_run(job, lambda progress: _extract(job, progress))
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
        if self.request.retries >= MAX_RETRIES:
            job_fail(job, reason)
            Episode.objects.filter(pk__in=job.params["episode_ids"], extraction=Episode.Extraction.PENDING).update(
                extraction=Episode.Extraction.FAILED
            )
            raise
        job_retrying(job, reason)
        raise self.retry(exc=exc, countdown=2 ** (self.request.retries + 1)) from exc


def _extract(job: Job, progress) -> dict:
    operations = episodes_extract(
        episode_ids=job.params["episode_ids"], actor=ActorRef.for_job("extraction"), on_progress=progress
    )
    return {"operations": [op.as_dict() for op in operations]}


@shared_task(bind=True, name="memoryapp.tasks.run_job", max_retries=MAX_RETRIES)
def run_job(self, job_id: str) -> dict:
    """A maintenance job (consolidate, summarize, decay, expire_sessions, requeue) by its row."""
    from memoryapp.jobs import job_execute

    job = Job.objects.get(pk=job_id)
    if job.status == Job.Status.SUCCEEDED:
        return job.result
    try:
        return job_execute(job)
    except Exception as exc:
        if self.request.retries >= MAX_RETRIES:
            job_fail(job, f"{type(exc).__name__}: {exc}")
            raise
        job_retrying(job, f"{type(exc).__name__}: {exc}")
        raise self.retry(exc=exc, countdown=2 ** (self.request.retries + 1)) from exc


@shared_task(name="memoryapp.tasks.run_scheduled_job")
def run_scheduled_job(kind: str) -> str:
    """Beat's entry point: one job row for the whole store, run here on the worker."""
    from memoryapp.jobs import job_execute
    from memoryapp.services.jobs import job_create

    job = job_create(kind=kind, organization=None, params={"trigger": "schedule"})
    job_execute(job)
    return str(job.id)
