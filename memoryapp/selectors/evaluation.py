"""The evaluation runs the evaluation page shows: the latest of each benchmark, the store's metrics
history and the runs list. Every query is limited to the viewer's organization plus the store-wide
runs (those made in a throwaway organization)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q, QuerySet
from django.utils import timezone

from memoryapp.evaluation.write_corpus import SPLITS
from memoryapp.models import Job
from memoryapp.selectors.dashboard import QUEUED_JOB_FRESH_FOR

Kind = Job.Kind
# The runs the page lists, by kind, with their names (the kinds' labels).
EVALUATION_KINDS = {kind: kind.label for kind in (Kind.EVALUATE_LOCOMO, Kind.EVALUATE_CHANGING_FACTS,
                                                  Kind.EVALUATE_WRITE_ACCURACY, Kind.EVALUATE_QUESTIONS, Kind.METRICS)}
CHANGING_FACTS_QUOTED_SPLIT = "test"  # the split nothing is tuned on
# Runs made in a throwaway organization: a store-wide run serves every organization's page.
STORE_WIDE_KINDS = (Kind.EVALUATE_CHANGING_FACTS, Kind.EVALUATE_WRITE_ACCURACY, Kind.EVALUATE_QUESTIONS)
METRICS_POINTS = 200  # hourly snapshots: about a week of history


def _succeeded(kind: str) -> QuerySet[Job]:
    return Job.objects.filter(kind=kind, status=Job.Status.SUCCEEDED, finished_at__isnull=False)


def _own_or_store_wide(organization_id) -> Q:
    return Q(organization_id=organization_id) | Q(organization__isnull=True)


def latest_locomo(organization_id) -> Job | None:
    """LoCoMo runs import the organization's own data, so only its own runs count."""
    return _succeeded(Kind.EVALUATE_LOCOMO).filter(organization_id=organization_id).order_by("-finished_at").first()


def latest_changing_facts(organization_id, split: str = CHANGING_FACTS_QUOTED_SPLIT) -> Job | None:
    """The benchmark runs in a throwaway organization, so a store-wide run serves everyone. Runs
    from before the corpus (generated sentences, no split) are not shown."""
    runs = _succeeded(Kind.EVALUATE_CHANGING_FACTS).filter(_own_or_store_wide(organization_id), params__split=split)
    return runs.order_by("-finished_at").first()


def latest_write_accuracy(organization_id, extractors: Iterable[str]) -> list[Job]:
    """The latest run of each split and of each of `extractors`, test first."""
    runs = _succeeded(Kind.EVALUATE_WRITE_ACCURACY).filter(_own_or_store_wide(organization_id))
    found = []
    for split in sorted(SPLITS, key=lambda name: name != "test"):
        for extractor in extractors:
            job = runs.filter(params__split=split, params__extractor=extractor).order_by("-finished_at").first()
            if job:
                found.append(job)
    return found


def latest_questions(organization_id) -> list[Job]:
    """The latest question-set run of each split, test (the quoted one) first."""
    runs = _succeeded(Kind.EVALUATE_QUESTIONS).filter(_own_or_store_wide(organization_id))
    found = []
    for split in sorted(SPLITS, key=lambda name: name != "test"):
        job = runs.filter(params__split=split).order_by("-finished_at").first()
        if job:
            found.append(job)
    return found


def metrics_history(organization_id) -> list[Job]:
    """The latest snapshots, oldest first: beat's store-wide ones and the organization's own."""
    runs = _succeeded(Kind.METRICS).filter(_own_or_store_wide(organization_id)).order_by("-finished_at")
    return list(reversed(runs[:METRICS_POINTS]))


def evaluation_runs(organization_id) -> QuerySet[Job]:
    return Job.objects.filter(
        Q(organization_id=organization_id) | Q(organization__isnull=True, kind__in=STORE_WIDE_KINDS),
        kind__in=list(EVALUATION_KINDS),
    ).order_by("-created_at")


def runs_in_progress(runs: QuerySet[Job]) -> bool:
    fresh = timezone.now() - QUEUED_JOB_FRESH_FOR
    return runs.filter(
        Q(status__in=[Job.Status.RUNNING, Job.Status.RETRYING]) | Q(status=Job.Status.QUEUED, created_at__gte=fresh)
    ).exists()
