"""What each panel of the evaluation page shows, built from a run's stored result: charts (web.charts),
tables and the one-line summary of a run."""

from __future__ import annotations

from memoryapp.evaluation.changing_facts import FULL_SYSTEM
from memoryapp.evaluation.metrics import CATEGORY_NAMES, RECALL_CATEGORIES
from memoryapp.evaluation.runs import LADDER
from memoryapp.models import Job
from memoryapp.web.charts import bar_chart, line_chart, percent


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
        result = readable(_write_accuracy_row, job.result)
        rows.append({"job": job, "split": job.params.get("split", "?"), "extractor": job.params.get("extractor", "?"),
                     "result": result})
    return rows


def _write_accuracy_row(result: dict) -> dict:
    changes = result["changes"]
    # Runs before 2026-12-06 had no continuation pairs.
    continued = result["continuations"] if result.get("continuations", {}).get("held") else None
    return {
        "missed": percent(float(result["missed_rate"]), 1),
        "missed_of": f"{result['missed']:,} of {result['expected']:,}",
        "spurious": percent(float(result["spurious_rate"]), 1),
        "spurious_of": f"{result['spurious']:,} of {result['none_messages']:,}",
        "recognised": percent(float(changes["recognised_rate"]), 1),
        "recognised_of": f"{changes['recognised']:,} of {changes['pairs']:,}",
        "new_written": changes["new_written"], "old_current": changes["old_current"],
        # Runs before 2026-12-01 gave the pairs' users no other facts, so they have no such figure.
        "unrelated": percent(float(changes["unrelated_closed_rate"]), 1) if "unrelated_held" in changes else "—",
        "unrelated_of": (f"{changes['unrelated_closed']:,} of {changes['unrelated_held']:,}"
                         if "unrelated_held" in changes else ""),
        "same_topic": percent(float(continued["ended_rate"]), 1) if continued else "—",
        "same_topic_of": f"{continued['ended']:,} of {continued['held']:,}" if continued else "",
        "unmatched": result.get("unmatched_memories", 0),
        "families": [{**row, "rate": percent(float(row["missed_rate"]))} for row in result["families"]],
        "ways": [{**row, "rate": percent(float(row["recognised_rate"]))} for row in result["ways"]],
    }


def questions_panel(runs: list[Job]) -> list[dict]:
    """One row per stored question-set run (split and extractor), with per-person and per-family details."""
    return [{"job": job, "split": job.params.get("split", "?"), "extractor": job.params.get("extractor", "?"),
             "result": readable(_questions_row, job.result)} for job in runs]


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


def readable(builder, *args) -> dict | None:
    """A panel from a stored result, or None (the panel says so) when its shape is not one we draw."""
    try:
        return builder(*args)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return None


def job_summary(job: Job) -> str:
    """One line of what a finished evaluation run found, for the runs list."""
    result = job.result or {}
    try:
        if job.kind == Job.Kind.EVALUATE_LOCOMO:
            k = "5" if "5" in result["recall"]["all"] else str(result["ks"][0])
            return (f"recall@{k} {percent(result['recall']['all'][k])} over {result['questions']:,} questions "
                    f"in {result['conversations']} conversations")
        if job.kind == Job.Kind.EVALUATE_CHANGING_FACTS:
            full = min((r for r in result["rows"] if r["policy"] == FULL_SYSTEM), key=lambda r: r["k"])
            return (f"{result.get('split', 'generated')} split, full system: {percent(full['current_only'])} "
                    f"current only at k={full['k']} ({result['seeds']} seeds)")
        if job.kind == Job.Kind.EVALUATE_WRITE_ACCURACY:
            return (f"{result['split']} split, {result['extractor']} extractor: missed "
                    f"{percent(result['missed_rate'])}, spurious {percent(result['spurious_rate'])}, "
                    f"changes recognised {percent(result['changes']['recognised_rate'])}")
        if job.kind == Job.Kind.EVALUATE_QUESTIONS:
            return (f"{result['split']} split: recall@1 {percent(result['answerable']['recall_at_1'])}, "
                    f"@5 {percent(result['answerable']['recall_at_5'])}, wrong abstention "
                    f"{percent(result['answerable']['wrong_abstention'])}, correct abstention "
                    f"{percent(result['unanswerable']['correct_abstention'])}")
        if job.kind == Job.Kind.METRICS:
            return (f"contradiction {percent(result['contradiction_rate'], 1)}, "
                    f"duplicates {percent(result['duplicate_rate'], 1)}")
    except (KeyError, TypeError, ValueError, IndexError):
        pass
    return ""
