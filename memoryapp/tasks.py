"""Thin Celery wrappers: load by id, call the service, retry with backoff. Never pass content."""

from celery import shared_task
from django.db import DatabaseError, InterfaceError, OperationalError, close_old_connections

from memoryapp.actors import ActorRef
from memoryapp.jobs import job_execute, job_work, orphans_requeue
from memoryapp.models import Episode, Job
from memoryapp.services.extraction import episodes_extract
from memoryapp.services.jobs import job_create, job_fail, job_retrying, job_run

MAX_RETRIES = 4


@shared_task(name="memoryapp.tasks.ping")
def ping() -> str:
    """A round trip through the broker and a worker; used by tests and health checks."""
    return "pong"


def _run_job_task(task, job_id: str, work, on_give_up=None) -> dict:
    """Run `work(job)` for the job row, retrying failures with exponential backoff (2, 4, 8, 16 s);
    after the last retry the job is marked failed with the reason."""
    try:
        job = Job.objects.get(pk=job_id)
    except (OperationalError, InterfaceError) as exc:  # the database went away (a restart): try again shortly
        close_old_connections()
        raise task.retry(exc=exc, countdown=2 ** (task.request.retries + 1)) from exc
    try:  # a redelivered message finds the job done or held by a live run, and does nothing
        return job_run(job, lambda progress: work(job, progress), worker=task.request.hostname or "")
    except Exception as exc:
        if isinstance(exc, (OperationalError, InterfaceError)):
            close_old_connections()  # drop a connection the database closed, so the retry opens a new one
        reason = f"{type(exc).__name__}: {exc}"
        if task.request.retries >= MAX_RETRIES:
            job_fail(job, reason)
            if on_give_up:
                on_give_up(job)
            raise
        try:
            job_retrying(job, reason)
        except DatabaseError:  # the database is still restarting: the retry itself matters more than its record
            close_old_connections()
        raise task.retry(exc=exc, countdown=2 ** (task.request.retries + 1)) from exc


# ignore_result: the operations (with the judge's reasons) stay in the job row, where the purge
# scrubs them; Redis persists what it stores under the data folder.
@shared_task(bind=True, name="memoryapp.tasks.extract_episodes", max_retries=MAX_RETRIES, ignore_result=True)
def extract_episodes(self, job_id: str) -> dict:
    return _run_job_task(self, job_id, _extract, on_give_up=_mark_episodes_failed)


def _extract(job: Job, progress) -> dict:
    operations = episodes_extract(
        episode_ids=job.params["episode_ids"], actor=ActorRef.for_job(Job.Kind.EXTRACTION), on_progress=progress
    )
    return {"operations": [op.as_dict() for op in operations]}


def _mark_episodes_failed(job: Job) -> None:
    Episode.objects.filter(pk__in=job.params["episode_ids"], extraction=Episode.Extraction.PENDING).update(
        extraction=Episode.Extraction.FAILED
    )


@shared_task(bind=True, name="memoryapp.tasks.run_job", max_retries=MAX_RETRIES)
def run_job(self, job_id: str) -> dict:
    """A maintenance job (consolidate, summarize, decay, expire_sessions, requeue) by its row."""
    return _run_job_task(self, job_id, job_work)


@shared_task(bind=True, name="memoryapp.tasks.purge_deleted_text", max_retries=MAX_RETRIES, ignore_result=True)
def purge_deleted_text(self, job_id: str) -> dict:
    """The purge queued after a deletion (memoryapp.services.purge); its result holds counts only."""
    return _run_job_task(self, job_id, job_work)


@shared_task(name="memoryapp.tasks.requeue_orphaned_jobs", ignore_result=True)
def requeue_orphaned_jobs() -> int:
    """Beat's watchdog: jobs whose worker died go back to the queue within seconds, not after the
    broker's visibility timeout."""
    return len(orphans_requeue())


@shared_task(name="memoryapp.tasks.run_scheduled_job")
def run_scheduled_job(kind: str) -> str:
    """Beat's entry point: one job row for the whole store, run here on the worker."""
    job = job_create(kind=kind, organization=None, params={"trigger": "schedule"})
    job_execute(job)
    return str(job.id)
