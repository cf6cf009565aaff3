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
