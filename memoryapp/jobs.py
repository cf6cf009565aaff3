"""The background jobs by name: what each runs, how it is scheduled, and how to start one now.

Each run is a Job row (status, progress, counts) created before the work starts, so the
dashboard and `python manage.py run_job` show the same thing whether beat, a button or a
command started it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.utils import timezone

from memoryapp.actors import ActorRef
from memoryapp.models import Episode, Job, Memory, Organization, User
from memoryapp.services.consolidate import consolidate_user
from memoryapp.services.decay import decay_run, sessions_expire
from memoryapp.services.jobs import job_create, job_enqueue, job_run, jobs_orphaned, task_named
from memoryapp.services.purge import deleted_text_purge
from memoryapp.services.reflect import summaries_rebuild

REQUEUE_AFTER_SECONDS = 60


def _users(organization: Organization | None):
    users = User.objects.filter(memories__status=Memory.Status.ACTIVE).distinct()
    return users.filter(organization=organization) if organization else users


def _per_user(work: Callable) -> Callable:
    def run(organization, actor, progress, **params) -> dict:
        users = list(_users(organization))
        totals: dict[str, int] = {"users": len(users)}
        for done, user in enumerate(users, start=1):
            for key, value in work(user=user, actor=actor).items():
                if isinstance(value, int | float):
                    totals[key] = totals.get(key, 0) + value
            progress(done, len(users))
        return totals

    return run


def _decay(organization, actor, progress, **params) -> dict:
    return decay_run(actor=actor, organization=organization)


def _expire_sessions(organization, actor, progress, **params) -> dict:
    return sessions_expire(actor=actor, organization=organization)


def _evaluate_changing_facts(organization, actor, progress, seeds: int = 5, ks=(1, 3, 5), split: str = "test",
                             corpus_dir: str = "", **params) -> dict:
    from memoryapp.evaluation.runs import changing_facts_run

    return changing_facts_run(seeds=seeds, ks=ks, split=split, corpus_dir=corpus_dir or None, progress=progress)


def _evaluate_write_accuracy(organization, actor, progress, split: str = "dev", extractor: str = "rules",
                             corpus_dir: str = "", **params) -> dict:
    from memoryapp.evaluation.write_accuracy import run

    return run(split=split, extractor=extractor, corpus_dir=corpus_dir or None, progress=progress)


def _evaluate_questions(organization, actor, progress, split: str = "dev", extractor: str = "rules",
                        corpus_dir: str = "", questions_dir: str = "", **params) -> dict:
    from memoryapp.evaluation.questions_eval import run

    return run(split=split, extractor=extractor, corpus_dir=corpus_dir or None, questions_dir=questions_dir or None,
               progress=progress)


def _evaluate_locomo(organization, actor, progress, path: str = "", ks=(1, 5, 10), budget_tokens: int = 400,
                     **params) -> dict:
    """`path` is a LoCoMo-format JSON file (the dashboard stores an upload under the data folder)."""
    from memoryapp.evaluation.runs import locomo_run

    if not path:
        raise ValueError("an evaluate_locomo job needs the path of a LoCoMo-format file")
    return locomo_run(organization=organization, path_or_data=path, ks=tuple(ks), budget_tokens=budget_tokens,
                      progress=progress)


def _metrics_snapshot(organization, actor, progress, **params) -> dict:
    """The store's health over time: contradiction rate, duplicate rate and staleness, now."""
    from memoryapp.evaluation.metrics import store_metrics

    return store_metrics(organization=organization)


def _purge(organization, actor, progress, **params) -> dict:
    """Deleted text out of the database files and the WAL (every organization's: the files are shared)."""
    return deleted_text_purge(organization=organization)


def _requeue(organization, actor, progress, **params) -> dict:
    """Extraction jobs still queued after a broker outage, and pending episodes no job covers,
    are sent again; extraction is idempotent, so a duplicate send changes nothing."""
    extract_episodes = task_named("memoryapp.tasks.extract_episodes")
    stale = timezone.now() - timedelta(seconds=REQUEUE_AFTER_SECONDS)
    jobs = Job.objects.filter(kind=Job.Kind.EXTRACTION, status=Job.Status.QUEUED, created_at__lt=stale)
    if organization:
        jobs = jobs.filter(organization=organization)
    sent = 0
    for job in jobs:
        extract_episodes.delay(str(job.id))
        sent += 1
    covered = {pk for job in Job.objects.filter(kind=Job.Kind.EXTRACTION).exclude(status=Job.Status.FAILED)
               for pk in job.params.get("episode_ids", [])}
    orphans = Episode.objects.filter(extraction=Episode.Extraction.PENDING, received_at__lt=stale)
    orphan_ids = [str(pk) for pk in orphans.values_list("id", flat=True) if str(pk) not in covered]
    if orphan_ids:
        job = job_create(kind=Job.Kind.EXTRACTION, organization=organization, params={"episode_ids": orphan_ids})
        job_enqueue(job, extract_episodes)
    return {"jobs_resent": sent, "orphan_episodes": len(orphan_ids)}


Kind = Job.Kind
# What each kind runs; extraction is its own task (memoryapp.tasks.extract_episodes), by episode ids.
JOBS: dict[Kind, Callable] = {
    Kind.CONSOLIDATE: _per_user(consolidate_user),
    Kind.SUMMARIZE: _per_user(summaries_rebuild),
    Kind.DECAY: _decay,
    Kind.EXPIRE_SESSIONS: _expire_sessions,
    Kind.REQUEUE: _requeue,
    Kind.PURGE: _purge,
    Kind.METRICS: _metrics_snapshot,
    Kind.EVALUATE_CHANGING_FACTS: _evaluate_changing_facts,
    Kind.EVALUATE_LOCOMO: _evaluate_locomo,
    Kind.EVALUATE_WRITE_ACCURACY: _evaluate_write_accuracy,
    Kind.EVALUATE_QUESTIONS: _evaluate_questions,
}
MAINTENANCE = (Kind.CONSOLIDATE, Kind.SUMMARIZE, Kind.DECAY, Kind.EXPIRE_SESSIONS, Kind.REQUEUE)
# What `run_job` runs in its own process; evaluations take parameters: `evaluate` runs those.
COMMAND = (*MAINTENANCE, Kind.METRICS, Kind.PURGE)


def job_work(job: Job, progress) -> dict:
    """What a job row of this kind does."""
    params = {key: value for key, value in job.params.items() if key != "trigger"}
    return JOBS[job.kind](job.organization, ActorRef.for_job(job.kind), progress, **params)


def job_execute(job: Job) -> dict:
    """Run a job row's work now, in this process, recording progress and the result."""
    return job_run(job, lambda progress: job_work(job, progress))


def orphans_requeue(*, live_workers: set[str] | None = None) -> list[Job]:
    """Send again every job whose run died (memoryapp.services.jobs.jobs_orphaned)."""
    orphans = jobs_orphaned(live_workers=live_workers)
    for job in orphans:
        job_enqueue(job, task_named("memoryapp.tasks.extract_episodes" if job.kind == Job.Kind.EXTRACTION
                                    else "memoryapp.tasks.run_job"))
    return orphans


def run_job_now(kind: str, organization: Organization | None, **params) -> Job:
    """Queue a run of `kind` on the worker (the dashboard's "run now")."""
    if kind not in JOBS:
        raise ValueError(f"unknown job {kind!r}; choose one of {', '.join(JOBS)}")
    job = job_create(kind=kind, organization=organization, params={"trigger": "manual", **params})
    job_enqueue(job, task_named("memoryapp.tasks.run_job"))
    return job
