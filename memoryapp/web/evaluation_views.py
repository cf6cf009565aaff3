"""The evaluation page: recall@k and the ablation ladder of the latest LoCoMo run, the store's
contradiction rate over time, the changing-facts table (test split), write accuracy on the
hand-written corpus per split and extractor, and (for admins) starting runs.

Charts are SVG drawn by the templates from the geometry computed here, so every label goes
through the template's escaping and nothing is loaded from outside.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime

from django import forms
from django.conf import settings
from django.contrib import messages
from django.db.models import Q, QuerySet
from django.shortcuts import render
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.views.decorators.http import require_GET, require_POST

from memoryapp import llm
from memoryapp.evaluation.changing_facts import FULL_SYSTEM
from memoryapp.evaluation.locomo import locomo_parse
from memoryapp.evaluation.metrics import CATEGORY_NAMES, RECALL_CATEGORIES
from memoryapp.evaluation.runs import LADDER
from memoryapp.evaluation.write_accuracy import EXTRACTORS
from memoryapp.evaluation.write_corpus import SPLITS
from memoryapp.jobs import run_job_now
from memoryapp.models import Job
from memoryapp.web.access import admin_required
from memoryapp.web.queries import QUEUED_JOB_FRESH_FOR
from memoryapp.web.rendering import fragment, nav_context, redirect_after_action

EVALUATION_KINDS = {
    "evaluate_locomo": "LoCoMo recall and ladder",
    "evaluate_changing_facts": "Changing facts",
    "evaluate_write_accuracy": "Write accuracy",
    "evaluate_questions": "Questions",
    "metrics": "Store metrics",
}
MAX_UPLOAD_BYTES = 20 * 1024 * 1024
LOCOMO_KS = [1, 5, 10]
LOCOMO_BUDGET_TOKENS = 400
CHANGING_FACTS_SEEDS = 5
CHANGING_FACTS_KS = [1, 3, 5]
CHANGING_FACTS_QUOTED_SPLIT = "test"  # the split nothing is tuned on
# Runs made in a throwaway organization: a store-wide run serves every organization's page.
STORE_WIDE_KINDS = ("evaluate_changing_facts", "evaluate_write_accuracy", "evaluate_questions")
METRICS_POINTS = 200  # hourly snapshots: about a week of history
RECENT_RUNS = 15
# The reference shares at k = 1 the panel quotes next to the measured table.
CHANGING_FACTS_REFERENCE = (
    "last k turns: 2% current only; most relevant: 71% current only, 29% outdated only; "
    "recency + importance + relevance: 87% current only, 4% outdated only, 9% neither"
)


# --- reads: every query is limited to the viewer's organization (plus store-wide runs) ----------


def _succeeded(kind: str) -> QuerySet[Job]:
    return Job.objects.filter(kind=kind, status=Job.Status.SUCCEEDED, finished_at__isnull=False)


def _own_or_store_wide(organization_id) -> Q:
    return Q(organization_id=organization_id) | Q(organization__isnull=True)


def latest_locomo(organization_id) -> Job | None:
    """LoCoMo runs import the organization's own data, so only its own runs count."""
    return _succeeded("evaluate_locomo").filter(organization_id=organization_id).order_by("-finished_at").first()


def latest_changing_facts(organization_id, split: str = CHANGING_FACTS_QUOTED_SPLIT) -> Job | None:
    """The benchmark runs in a throwaway organization, so a store-wide run serves everyone. Runs
    from before the corpus (generated sentences, no split) are not shown."""
    runs = _succeeded("evaluate_changing_facts").filter(_own_or_store_wide(organization_id), params__split=split)
    return runs.order_by("-finished_at").first()


def latest_write_accuracy(organization_id) -> list[Job]:
    """The latest run of each split and extractor, test first."""
    runs = _succeeded("evaluate_write_accuracy").filter(_own_or_store_wide(organization_id))
    found = []
    for split in sorted(SPLITS, key=lambda name: name != "test"):
        for extractor in EXTRACTORS:
            job = runs.filter(params__split=split, params__extractor=extractor).order_by("-finished_at").first()
            if job:
                found.append(job)
    return found


def latest_questions(organization_id) -> list[Job]:
    """The latest question-set run of each split, test (the quoted one) first."""
    runs = _succeeded("evaluate_questions").filter(_own_or_store_wide(organization_id))
    found = []
    for split in sorted(SPLITS, key=lambda name: name != "test"):
        job = runs.filter(params__split=split).order_by("-finished_at").first()
        if job:
            found.append(job)
    return found


def metrics_history(organization_id) -> list[Job]:
    """The latest snapshots, oldest first: beat's store-wide ones and the organization's own."""
    runs = _succeeded("metrics").filter(_own_or_store_wide(organization_id)).order_by("-finished_at")
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


# --- chart geometry -----------------------------------------------------------------------------


@dataclass(frozen=True)
class GridLine:
    y: float
    label: str


@dataclass(frozen=True)
class AxisLabel:
    x: float
    lines: tuple[str, ...]
    note: str = ""  # a smaller, muted last line


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    tone: str  # the CSS class that colours the bar
    label: str  # the value written above it
    label_x: float
    label_y: float
    title: str  # the tooltip


@dataclass(frozen=True)
class ChartFrame:
    """What every chart draws first (web/_chart_frame.html): its size, plot area and value grid."""

    width: int
    height: int
    left: float
    right: float
    bottom: float
    label_y: float
    grid: list[GridLine]
    description: str

    @property
    def tick_x(self) -> float:
        return self.left - 6  # the grid's values end just left of the axis


@dataclass(frozen=True)
class BarChart(ChartFrame):
    bars: list[Bar]
    labels: list[AxisLabel]


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    title: str
    hollow: bool


@dataclass(frozen=True)
class Line:
    name: str
    tone: str
    points: list[Point]
    path: str
    end_label: str
    end_x: float
    end_y: float


@dataclass(frozen=True)
class LineChart(ChartFrame):
    ticks: list[AxisLabel]
    lines: list[Line]
    markers: bool


def percent(value: float, digits: int = 0) -> str:
    return f"{value * 100:.{digits}f}%"


# Tops of a rate axis with their number of steps, so that every grid line has a round label.
RATE_AXES = ((0.02, 4), (0.05, 5), (0.1, 5), (0.2, 4), (0.25, 5), (0.5, 5), (1.0, 4))


def _rate_axis(value: float) -> tuple[float, int]:
    """The smallest round axis that holds `value`: (top, steps)."""
    return next((axis for axis in RATE_AXES if value <= axis[0]), RATE_AXES[-1])


def _grid(top_value: float, steps: int, top: float, bottom: float, digits: int = 0) -> list[GridLine]:
    return [GridLine(y=round(bottom - (bottom - top) * i / steps, 1), label=percent(top_value * i / steps, digits))
            for i in range(steps + 1)]


def bar_chart(groups: list[tuple[tuple[str, ...], str, list[tuple[float, str, str]]]], *, description: str,
              width: int = 600, height: int = 280) -> BarChart:
    """Grouped bars of shares (0..1). `groups`: (label lines, note, [(value, tone, tooltip), ...]) each."""
    left, right, top, bottom = 44.0, width - 8.0, 22.0, height - 46.0
    group_width = (right - left) / max(len(groups), 1)
    bars, labels = [], []
    for index, (label_lines, note, values) in enumerate(groups):
        start = left + index * group_width
        inner = group_width * (0.72 if len(values) > 1 else 0.5)
        bar_width = inner / max(len(values), 1)
        first = start + (group_width - inner) / 2
        for position, (value, tone, tooltip) in enumerate(values):
            share = min(max(value, 0.0), 1.0)
            x = first + position * bar_width
            bar_height = (bottom - top) * share
            bars.append(Bar(x=round(x + 1, 1), y=round(bottom - bar_height, 1), width=round(bar_width - 2, 1),
                            height=round(bar_height, 1), tone=tone, label=percent(value),
                            label_x=round(x + bar_width / 2, 1), label_y=round(bottom - bar_height - 5, 1),
                            title=tooltip))
        labels.append(AxisLabel(x=round(start + group_width / 2, 1), lines=label_lines, note=note))
    return BarChart(width=width, height=height, left=left, right=right, bottom=bottom,
                    label_y=bottom + 16, grid=_grid(1.0, 4, top, bottom), bars=bars, labels=labels,
                    description=description)


def _when(moment: datetime, pattern: str = "j M, H:i") -> str:
    return date_format(timezone.localtime(moment), pattern)


def line_chart(series: list[tuple[str, str, list[tuple[datetime, float, bool]]]], *, description: str,
               width: int = 760, height: int = 250) -> LineChart:
    """Rates over time. `series`: (name, tone, [(when, value, hollow marker), ...]) each, oldest first."""
    left, right, top, bottom = 48.0, width - 52.0, 14.0, height - 30.0
    moments = [when for _, _, points in series for when, _, _ in points]
    first, last = min(moments), max(moments)
    span = (last - first).total_seconds()
    top_value, steps = _rate_axis(max((value for _, _, points in series for _, value, _ in points), default=0.0))

    def x_of(when: datetime) -> float:
        if not span:
            return round((left + right) / 2, 1)
        return round(left + (right - left) * (when - first).total_seconds() / span, 1)

    def y_of(value: float) -> float:
        return round(bottom - (bottom - top) * min(max(value, 0.0), top_value) / top_value, 1)

    drawn = [[Point(x=x_of(when), y=y_of(value), hollow=hollow,
                    title=f"{name}: {percent(value, 1)} on {_when(when)}"
                          f"{' (this organization)' if hollow else ' (store-wide)'}")
              for when, value, hollow in points] for name, _, points in series]
    ends = _end_label_heights([line[-1].y + 4 for line in drawn], lowest=bottom + 4)
    lines = [Line(name=name, tone=tone, points=line, path=" ".join(f"{p.x},{p.y}" for p in line),
                  end_label=percent(points[-1][1], 1), end_x=line[-1].x + 8, end_y=end_y)
             for (name, tone, points), line, end_y in zip(series, drawn, ends, strict=True)]
    pattern = "j M, H:i" if span < 3 * 86400 else "j M"
    count = 1 if not span else min(4, len(set(moments)))
    tick_moments = [first + (last - first) * i / max(count - 1, 1) for i in range(count)]
    ticks = [AxisLabel(x=x_of(when), lines=(_when(when, pattern),)) for when in tick_moments]
    digits = 1 if top_value / steps < 0.01 else 0  # a 0.5% step needs its decimal
    return LineChart(width=width, height=height, left=left, right=right, bottom=bottom,
                     label_y=bottom + 18, grid=_grid(top_value, steps, top, bottom, digits), ticks=ticks,
                     lines=lines, markers=max(len(points) for _, _, points in series) <= 120,
                     description=description)


def _end_label_heights(heights: list[float], lowest: float, gap: float = 13) -> list[float]:
    """Where to write each line's last value: labels of lines ending close together are pushed
    apart, and up again where that would take them below the axis."""
    order = sorted(range(len(heights)), key=lambda i: heights[i])
    result = list(heights)
    for previous, current in zip(order, order[1:], strict=False):
        result[current] = max(result[current], result[previous] + gap)
    overflow = max(max(result, default=lowest) - lowest, 0)
    return [round(height - overflow, 1) for height in result]


# --- panels -------------------------------------------------------------------------------------


def _recall_categories(recall: dict) -> list[str]:
    """LoCoMo's categories in their numbered order, anything else after, and all questions last."""
    known = [CATEGORY_NAMES[c] for c in RECALL_CATEGORIES if CATEGORY_NAMES[c] in recall]
    others = sorted(name for name in recall if name not in known and name != "all")
    return known + others + (["all"] if "all" in recall else [])


def recall_panel(result: dict) -> dict:
    recall = result["recall"]
    ks = [int(k) for k in result.get("ks") or sorted({int(k) for row in recall.values() for k in row if k.isdigit()})]
    tones = {k: f"tone-k{min(position, 2)}" for position, k in enumerate(ks)}
    groups = []
    for name in _recall_categories(recall):
        row = recall[name]
        questions = int(row.get("questions", 0))
        groups.append(((name,), f"{questions:,} questions",
                       [(float(row[str(k)]), tones[k], f"{name}: recall@{k} {percent(float(row[str(k)]), 1)} "
                                                      f"over {questions:,} questions") for k in ks if str(k) in row]))
    chart = bar_chart(groups, description="Evidence recall at k per LoCoMo question category")
    return {"chart": chart, "legend": [(f"recall@{k}", tones[k]) for k in ks]}


def ladder_panel(result: dict) -> dict:
    ladder = result["ladder"]
    conditions = [c for c in LADDER if c in ladder] + [c for c in ladder if c not in LADDER]
    tones = {"retrieved memories": "tone-system", "oracle memories": "tone-oracle", "full history": "tone-history"}
    groups = [(tuple(condition.split(" ", 1)), "",
               [(float(ladder[condition]), tones.get(condition, "tone-base"),
                 f"{condition}: {percent(float(ladder[condition]), 1)}")])
              for condition in conditions]
    gaps = [{"name": gap["name"], "explains": gap.get("explains", ""), "value": float(gap["value"]),
             "signed": f"{float(gap['value']) * 100:+.1f} pts"} for gap in result.get("gaps", [])]
    return {"chart": bar_chart(groups, description="Score of each ablation condition at the same token budget"),
            "gaps": gaps, "score": result.get("ladder_score", ""), "budget_tokens": result.get("budget_tokens")}


HEALTH_SERIES = (("contradiction rate", "tone-contradiction", "contradiction_rate"),
                 ("duplicate rate", "tone-duplicate", "duplicate_rate"))
OUTCOME_NAMES = {"current_only": "current only", "both": "both", "outdated_only": "outdated only", "neither": "neither"}


def health_panel(runs: list[Job], organization_id) -> dict:
    def points(key):
        return [(job.finished_at, float(job.result.get(key, 0.0)), job.organization_id == organization_id)
                for job in runs]

    chart = line_chart([(name, tone, points(key)) for name, tone, key in HEALTH_SERIES],
                       description="Contradiction rate and duplicate rate over time")
    latest = runs[-1].result
    figures = [("Contradiction rate", percent(float(latest["contradiction_rate"]), 1),
                _count_of(latest, "contradicting_slots", "slots", "slots")),
               ("Duplicate rate", percent(float(latest["duplicate_rate"]), 1),
                f"of {latest['sampled']:,} sampled memories" if "sampled" in latest else "")]
    return {"chart": chart, "figures": figures, "latest": runs[-1],
            "legend": [(name, tone) for name, tone, _ in HEALTH_SERIES]}


def _count_of(result: dict, part: str, whole: str, what: str) -> str:
    return f"{result[part]:,} of {result[whole]:,} {what}" if part in result and whole in result else ""


def changing_facts_panel(result: dict) -> dict:
    groups: list[dict] = []
    for row in result["rows"]:
        if not groups or groups[-1]["policy"] != row["policy"]:
            groups.append({"policy": row["policy"], "full": row["policy"] == FULL_SYSTEM, "rows": []})
        changed = row.get("changed_facts") or {}
        groups[-1]["rows"].append({
            "k": row["k"],
            "shares": [{"outcome": outcome, "name": name, "label": percent(float(row[outcome])),
                        "width": round(float(row[outcome]) * 100, 1)} for outcome, name in OUTCOME_NAMES.items()],
            "changed_current": percent(float(changed.get("current_only", 0.0))),
            "changed_outdated": percent(float(changed.get("outdated_only", 0.0))),
        })
    return {"groups": groups, "seeds": result.get("seeds"),
            "questions_per_seed": result.get("questions_per_seed"),
            "legend": [(name, f"seg-{outcome}") for outcome, name in OUTCOME_NAMES.items()]}


def write_accuracy_panel(runs: list[Job]) -> list[dict]:
    """One row per stored run (split and extractor), with its per-family and per-way details."""
    rows = []
    for job in runs:
        result = _readable(_write_accuracy_row, job.result)
        rows.append({"job": job, "split": job.params.get("split", "?"), "extractor": job.params.get("extractor", "?"),
                     "result": result})
    return rows


def _write_accuracy_row(result: dict) -> dict:
    changes = result["changes"]
    return {
        "missed": percent(float(result["missed_rate"]), 1),
        "missed_of": f"{result['missed']:,} of {result['expected']:,}",
        "spurious": percent(float(result["spurious_rate"]), 1),
        "spurious_of": f"{result['spurious']:,} of {result['none_messages']:,}",
        "recognised": percent(float(changes["recognised_rate"]), 1),
        "recognised_of": f"{changes['recognised']:,} of {changes['pairs']:,}",
        "new_written": changes["new_written"], "old_current": changes["old_current"],
        "unmatched": result.get("unmatched_memories", 0),
        "families": [{**row, "rate": percent(float(row["missed_rate"]))} for row in result["families"]],
        "ways": [{**row, "rate": percent(float(row["recognised_rate"]))} for row in result["ways"]],
    }


def questions_panel(runs: list[Job]) -> list[dict]:
    """One row per stored question-set run (split and extractor), with per-person and per-family details."""
    return [{"job": job, "split": job.params.get("split", "?"), "extractor": job.params.get("extractor", "?"),
             "result": _readable(_questions_row, job.result)} for job in runs]


def _questions_row(result: dict) -> dict:
    answerable, never = result["answerable"], result["unanswerable"]
    return {
        "recall_at_1": percent(float(answerable["recall_at_1"]), 1),
        "recall_at_5": percent(float(answerable["recall_at_5"]), 1),
        "asked": f"{answerable['questions']:,}",
        "wrong_abstention": percent(float(answerable["wrong_abstention"]), 1),
        "wrong_of": f"{answerable['abstained']:,} of {answerable['questions']:,}",
        "correct_abstention": percent(float(never["correct_abstention"]), 1),
        "correct_of": f"{never['abstained']:,} of {never['asks']:,}",
        "written_of": f"{result['written']:,} of {result['facts']:,}", "write_missed": result["write_missed"],
        "users": result["users"],
        "persons": [{"person": person, **row, "r1": percent(float(row["recall_at_1"])),
                     "r5": percent(float(row["recall_at_5"])), "wrong": percent(float(row["wrong_abstention"])),
                     "correct": percent(float(never["persons"][person]["correct_abstention"]))}
                    for person, row in answerable["persons"].items()],
        "families": [{**row, "r1": percent(float(row["recall_at_1"])), "r5": percent(float(row["recall_at_5"])),
                      "wrong": percent(float(row["wrong_abstention"]))} for row in result["families"]],
        "unanswerable_families": [{**row, "correct": percent(float(row["correct_abstention"]))}
                                  for row in result["unanswerable_families"]],
    }


def _readable(builder, *args) -> dict | None:
    """A panel from a stored result, or None (the panel says so) when its shape is not one we draw."""
    try:
        return builder(*args)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return None


def job_summary(job: Job) -> str:
    """One line of what a finished evaluation run found, for the runs list."""
    result = job.result or {}
    try:
        if job.kind == "evaluate_locomo":
            k = "5" if "5" in result["recall"]["all"] else str(result["ks"][0])
            return (f"recall@{k} {percent(result['recall']['all'][k])} over {result['questions']:,} questions "
                    f"in {result['conversations']} conversations")
        if job.kind == "evaluate_changing_facts":
            full = min((r for r in result["rows"] if r["policy"] == FULL_SYSTEM), key=lambda r: r["k"])
            return (f"{result.get('split', 'generated')} split, full system: {percent(full['current_only'])} "
                    f"current only at k={full['k']} ({result['seeds']} seeds)")
        if job.kind == "evaluate_write_accuracy":
            return (f"{result['split']} split, {result['extractor']} extractor: missed "
                    f"{percent(result['missed_rate'])}, spurious {percent(result['spurious_rate'])}, "
                    f"changes recognised {percent(result['changes']['recognised_rate'])}")
        if job.kind == "evaluate_questions":
            return (f"{result['split']} split: recall@1 {percent(result['answerable']['recall_at_1'])}, "
                    f"@5 {percent(result['answerable']['recall_at_5'])}, wrong abstention "
                    f"{percent(result['answerable']['wrong_abstention'])}, correct abstention "
                    f"{percent(result['unanswerable']['correct_abstention'])}")
        if job.kind == "metrics":
            return (f"contradiction {percent(result['contradiction_rate'], 1)}, "
                    f"duplicates {percent(result['duplicate_rate'], 1)}")
    except (KeyError, TypeError, ValueError, IndexError):
        pass
    return ""


# --- the upload form ----------------------------------------------------------------------------


class LocomoUploadForm(forms.Form):
    file = forms.FileField(label="LoCoMo-format JSON file",
                           help_text="A list of samples (sample_id, conversation, qa), up to 20 MB.",
                           widget=forms.FileInput(attrs={"accept": ".json,application/json"}))

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(f"The file is {upload.size / 1024 / 1024:.1f} MB; the limit is 20 MB.")
        raw = upload.read()
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"The file is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                                        f"{exc.msg}).") from exc
        except UnicodeDecodeError as exc:
            raise forms.ValidationError("The file is not text in UTF-8: upload the JSON file itself.") from exc
        try:
            conversations = locomo_parse(data)
        except KeyError as exc:
            raise forms.ValidationError(f"This is not a LoCoMo-format file: a sample has no {exc.args[0]!r} "
                                        "field.") from exc
        except (TypeError, ValueError, AttributeError, IndexError) as exc:
            detail = str(exc) if isinstance(exc, ValueError) else "expected a list of samples, each with sample_id, " \
                "a conversation of sessions and qa"
            raise forms.ValidationError(f"This is not a LoCoMo-format file: {detail}.") from exc
        if not conversations:
            raise forms.ValidationError("The file holds no conversations.")
        measurable = sum(1 for conversation in conversations for question in conversation.questions
                         if question.category in RECALL_CATEGORIES
                         and set(question.evidence) & {turn.dia_id for turn in conversation.turns})
        if not measurable:
            raise forms.ValidationError("No question of categories 1-4 points at evidence among the turns, so "
                                        "there is nothing to measure.")
        self.raw, self.conversations, self.measurable = raw, conversations, measurable
        return upload


def _save_upload(raw: bytes) -> str:
    folder = settings.DATA_DIR / "uploads"
    folder.mkdir(parents=True, exist_ok=True)
    saved = folder / f"{uuid.uuid4()}.json"
    saved.write_bytes(raw)
    return str(saved)


# --- views --------------------------------------------------------------------------------------


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
        "recall": locomo and _readable(recall_panel, locomo.result),
        "ladder": locomo and _readable(ladder_panel, locomo.result),
        "health": _readable(health_panel, history, organization_id) if history else None,
        "metrics_runs": len(history),
        "changing": changing,
        "changing_panel": changing and _readable(changing_facts_panel, changing.result),
        "changing_reference": CHANGING_FACTS_REFERENCE,
        "changing_split": CHANGING_FACTS_QUOTED_SPLIT,
        "changing_dev": changing_dev and job_summary(changing_dev),
        "write_accuracy": write_accuracy_panel(latest_write_accuracy(organization_id)),
        "questions": questions_panel(latest_questions(organization_id)),
    }
    if context["is_admin"]:
        context |= {**_runs_context(request), "upload_form": upload_form or LocomoUploadForm(),
                    "changing_facts_seeds": CHANGING_FACTS_SEEDS, "changing_facts_ks": CHANGING_FACTS_KS,
                    "write_splits": SPLITS, "write_extractors": _extractors_available()}
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
    run_job_now("metrics", request.user.organization)
    messages.success(request, "Measuring the store now: the chart gains a point when the run finishes.")
    return _after_start(request)


@admin_required
@require_POST
def evaluation_changing_facts(request):
    for split in SPLITS:
        run_job_now("evaluate_changing_facts", None, seeds=CHANGING_FACTS_SEEDS, ks=CHANGING_FACTS_KS, split=split)
    messages.success(request, f"Changing-facts runs queued, dev and test splits: {CHANGING_FACTS_SEEDS} "
                              f"conversations each, k = {', '.join(map(str, CHANGING_FACTS_KS))}.")
    return _after_start(request)


def _extractors_available() -> list[str]:
    return [name for name in EXTRACTORS if name != "llm" or llm.is_configured()]


class WriteAccuracyForm(forms.Form):
    split = forms.ChoiceField(choices=[(s, s) for s in SPLITS], initial="test")
    extractor = forms.ChoiceField(choices=[(e, e) for e in EXTRACTORS], initial="rules")

    def clean_extractor(self):
        extractor = self.cleaned_data["extractor"]
        if extractor not in _extractors_available():
            raise forms.ValidationError("The LLM extractor needs MEMORY_LLM_BASE_URL set on the server.")
        return extractor


@admin_required
@require_POST
def evaluation_write_accuracy(request):
    form = WriteAccuracyForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(error for errors in form.errors.values() for error in errors))
        return _after_start(request)
    split, extractor = form.cleaned_data["split"], form.cleaned_data["extractor"]
    run_job_now("evaluate_write_accuracy", None, split=split, extractor=extractor)
    messages.success(request, f"Write-accuracy run queued: {split} split, {extractor} extractor.")
    return _after_start(request)


class QuestionsForm(forms.Form):
    split = forms.ChoiceField(choices=[(s, s) for s in SPLITS], initial="test")


@admin_required
@require_POST
def evaluation_questions(request):
    form = QuestionsForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(error for errors in form.errors.values() for error in errors))
        return _after_start(request)
    split = form.cleaned_data["split"]
    run_job_now("evaluate_questions", None, split=split, extractor="rules")
    messages.success(request, f"Question-set run queued: {split} split.")
    return _after_start(request)


@admin_required
@require_POST
def evaluation_locomo(request):
    """A plain multipart form (the page's polling never replaces a chosen file)."""
    form = LocomoUploadForm(request.POST, request.FILES)
    if not form.is_valid():
        return render(request, "web/evaluation.html", _page_context(request, form), status=400)
    path = _save_upload(form.raw)
    run_job_now("evaluate_locomo", request.user.organization, path=path, ks=LOCOMO_KS,
                budget_tokens=LOCOMO_BUDGET_TOKENS)
    messages.success(request, f"LoCoMo run queued: {len(form.conversations)} conversations, "
                              f"{form.measurable} questions with evidence.")
    return redirect_after_action(request, "web:evaluation")
