"""The evaluation page: recall@k and the ablation ladder of the latest LoCoMo run, the store's
contradiction rate over time, the changing-facts table (test split), write accuracy on the
hand-written corpus per split and extractor, and (for admins) starting runs.

Thin: the runs are read in selectors.evaluation, drawn by web.evaluation_panels (on web.charts),
checked by web.evaluation_forms, and started through memoryapp.jobs.
"""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from memoryapp.evaluation.write_accuracy import EXTRACTORS
from memoryapp.evaluation.write_corpus import SPLITS
from memoryapp.jobs import run_job_now
from memoryapp.models import Job
from memoryapp.selectors.evaluation import (
    CHANGING_FACTS_QUOTED_SPLIT,
    EVALUATION_KINDS,
    evaluation_runs,
    latest_changing_facts,
    latest_locomo,
    latest_questions,
    latest_write_accuracy,
    metrics_history,
    runs_in_progress,
)
from memoryapp.web.evaluation_forms import (
    LocomoUploadForm,
    QuestionsForm,
    WriteAccuracyForm,
    extractors_available,
    upload_save,
)
from memoryapp.web.evaluation_panels import (
    changing_facts_panel,
    health_panel,
    job_summary,
    ladder_panel,
    questions_panel,
    readable,
    recall_panel,
    write_accuracy_panel,
)
from memoryapp.web.permissions import admin_required
from memoryapp.web.rendering import fragment, nav_context, redirect_after_action

LOCOMO_KS = [1, 5, 10]
LOCOMO_BUDGET_TOKENS = 400
CHANGING_FACTS_SEEDS = 5
CHANGING_FACTS_KS = [1, 3, 5]
RECENT_RUNS = 15
# The reference shares at k = 1 the panel quotes next to the measured table.
CHANGING_FACTS_REFERENCE = (
    "last k turns: 2% current only; most relevant: 71% current only, 29% outdated only; "
    "recency + importance + relevance: 87% current only, 4% outdated only, 9% neither"
)


def _is_admin(request) -> bool:
    return bool(request.user.is_org_admin and request.user.organization_id)


def _runs_context(request) -> dict:
    runs = evaluation_runs(request.user.organization_id)
    return {"runs": [(job, EVALUATION_KINDS[job.kind], job_summary(job)) for job in runs[:RECENT_RUNS]],
            "polling": runs_in_progress(runs)}


def _page_context(request, upload_form: LocomoUploadForm | None = None) -> dict:
    organization_id = request.user.organization_id
    locomo = latest_locomo(organization_id)
    history = metrics_history(organization_id)
    changing = latest_changing_facts(organization_id)
    changing_dev = latest_changing_facts(organization_id, split="dev")
    context = {
        **nav_context(request),
        "is_admin": _is_admin(request),
        "locomo": locomo,
        "recall": locomo and readable(recall_panel, locomo.result),
        "ladder": locomo and readable(ladder_panel, locomo.result),
        "health": readable(health_panel, history, organization_id) if history else None,
        "metrics_runs": len(history),
        "changing": changing,
        "changing_panel": changing and readable(changing_facts_panel, changing.result),
        "changing_reference": CHANGING_FACTS_REFERENCE,
        "changing_split": CHANGING_FACTS_QUOTED_SPLIT,
        "changing_dev": changing_dev and job_summary(changing_dev),
        "write_accuracy": write_accuracy_panel(latest_write_accuracy(organization_id, EXTRACTORS)),
        "questions": questions_panel(latest_questions(organization_id)),
    }
    if context["is_admin"]:
        context |= {**_runs_context(request), "upload_form": upload_form or LocomoUploadForm(),
                    "changing_facts_seeds": CHANGING_FACTS_SEEDS, "changing_facts_ks": CHANGING_FACTS_KS,
                    "write_splits": SPLITS, "write_extractors": extractors_available()}
    return context


def _runs_fragment(request):
    context = _runs_context(request)
    response = fragment(request, "web/_eval_runs.html", context)
    if request.GET.get("watch") and not context["polling"]:
        # The runs this page watched are over: reload it so the panels show their results.
        response["HX-Refresh"] = "true"
    return response


@admin_required  # benchmark figures and run controls are for operators, not end users (issue 21)
@require_GET
def evaluation(request):
    if request.htmx and not request.htmx.boosted:
        return _runs_fragment(request)
    return render(request, "web/evaluation.html", _page_context(request))


def _after_start(request):
    if request.htmx:
        return _runs_fragment(request)
    return redirect_after_action(request, "web:evaluation")


@admin_required
@require_POST
def evaluation_measure(request):
    run_job_now(Job.Kind.METRICS, request.user.organization)
    messages.success(request, "Measuring the store now: the chart gains a point when the run finishes.")
    return _after_start(request)


@admin_required
@require_POST
def evaluation_changing_facts(request):
    for split in SPLITS:
        run_job_now(Job.Kind.EVALUATE_CHANGING_FACTS, None, seeds=CHANGING_FACTS_SEEDS, ks=CHANGING_FACTS_KS,
                    split=split)
    messages.success(request, f"Changing-facts runs queued, dev and test splits: {CHANGING_FACTS_SEEDS} "
                              f"conversations each, k = {', '.join(map(str, CHANGING_FACTS_KS))}.")
    return _after_start(request)


@admin_required
@require_POST
def evaluation_write_accuracy(request):
    form = WriteAccuracyForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(error for errors in form.errors.values() for error in errors))
        return _after_start(request)
    split, extractor = form.cleaned_data["split"], form.cleaned_data["extractor"]
    run_job_now(Job.Kind.EVALUATE_WRITE_ACCURACY, None, split=split, extractor=extractor)
    messages.success(request, f"Write-accuracy run queued: {split} split, {extractor} extractor.")
    return _after_start(request)


@admin_required
@require_POST
def evaluation_questions(request):
    form = QuestionsForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(error for errors in form.errors.values() for error in errors))
        return _after_start(request)
    split = form.cleaned_data["split"]
    run_job_now(Job.Kind.EVALUATE_QUESTIONS, None, split=split, extractor="rules")
    messages.success(request, f"Question-set run queued: {split} split.")
    return _after_start(request)


@admin_required
@require_POST
def evaluation_locomo(request):
    """A plain multipart form (the page's polling never replaces a chosen file)."""
    form = LocomoUploadForm(request.POST, request.FILES)
    if not form.is_valid():
        return render(request, "web/evaluation.html", _page_context(request, form), status=400)
    path = upload_save(form.raw)
    run_job_now(Job.Kind.EVALUATE_LOCOMO, request.user.organization, path=path, ks=LOCOMO_KS,
                budget_tokens=LOCOMO_BUDGET_TOKENS)
    messages.success(request, f"LoCoMo run queued: {len(form.conversations)} conversations, "
                              f"{form.measurable} questions with evidence.")
    return redirect_after_action(request, "web:evaluation")
