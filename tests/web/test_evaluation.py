"""The evaluation page: recall@k, contradiction rate over time, the ablation ladder, the
changing-facts table, and admins starting runs (changing facts, a LoCoMo upload, measure now)."""

import json
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from memoryapp.models import Job
from tests.web.conftest import htmx

pytestmark = pytest.mark.django_db

FULL_SYSTEM = "full system (supersession + validity)"
LOCOMO_SAMPLE = [{
    "sample_id": "conv-1",
    "conversation": {
        "speaker_a": "Caroline", "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to the LGBTQ support group yesterday."},
            {"speaker": "Melanie", "dia_id": "D1:2", "text": "That sounds powerful, how was it?"},
        ],
    },
    "qa": [{"question": "When did Caroline go to the support group?", "answer": "7 May 2023",
            "evidence": ["D1:1"], "category": 4}],
}]


def locomo_result(all_at_5: float = 0.62, budget_tokens: int = 400) -> dict:
    def row(r1, r5, r10, questions):
        return {"1": r1, "5": r5, "10": r10, "questions": questions}

    return {
        "conversations": 10, "questions": 1540, "ks": [1, 5, 10], "budget_tokens": budget_tokens,
        "recall": {"multi-hop": row(0.18, 0.41, 0.55, 282), "temporal": row(0.22, 0.47, 0.6, 321),
                   "open-domain": row(0.09, 0.23, 0.31, 96), "single-hop": row(0.35, 0.71, 0.83, 841),
                   "all": row(0.28, all_at_5, 0.72, 1540)},
        "ladder": {"no memory": 0.0, "random memories": 0.034, "retrieved memories": 0.512,
                   "oracle memories": 0.963, "full history": 0.118},
        "ladder_score": "gold evidence in context",
        "gaps": [{"name": "distraction cost", "value": 0.034, "explains": "what irrelevant memories cost the reader"},
                 {"name": "delivered lift", "value": 0.512, "explains": "what the memory system adds"},
                 {"name": "retrieval headroom", "value": 0.451, "explains": "what better retrieval could add"},
                 {"name": "compression loss", "value": -0.845, "explains": "what the raw history loses"}],
    }


def metrics_result(contradiction: float, duplicates: float) -> dict:
    return {"slots": 64, "contradicting_slots": 2, "contradiction_rate": contradiction, "sampled": 120,
            "duplicate_rate": duplicates, "unstructured_pairs_checked": 3, "unstructured_contradictions": 0}


def changing_facts_result() -> dict:
    def row(policy, k, current, both, outdated, neither):
        return {"policy": policy, "k": k, "current_only": current, "both": both, "outdated_only": outdated,
                "neither": neither, "changed_facts": {"current_only": current, "both": both,
                                                      "outdated_only": outdated, "neither": neither}}

    return {"seeds": 5, "ks": [1, 3], "questions_per_seed": 8, "rows": [
        row("last k turns", 1, 0.025, 0.0, 0.0, 0.975), row("last k turns", 3, 0.075, 0.0, 0.0, 0.925),
        row("most relevant k", 1, 0.7, 0.0, 0.3, 0.0), row("most relevant k", 3, 0.45, 0.55, 0.0, 0.0),
        row(FULL_SYSTEM, 1, 0.975, 0.0, 0.0, 0.025), row(FULL_SYSTEM, 3, 1.0, 0.0, 0.0, 0.0),
    ]}


def write_accuracy_result(missed: float = 0.123, split: str = "test") -> dict:
    return {"split": split, "extractor": "rules", "written_at": "2025-06-02T10:00:00+00:00", "messages": 343,
            "expected": 300, "missed": round(missed * 300), "missed_rate": missed, "none_messages": 92,
            "spurious": 3, "spurious_rate": 0.0326, "unmatched_memories": 7,
            "changes": {"way": "all", "pairs": 70, "recognised": 63, "recognised_rate": 0.9, "new_written": 66,
                        "new_current": 65, "old_current": 4, "new_written_rate": 0.9429, "old_current_rate": 0.0571,
                        "unrelated_held": 280, "unrelated_closed": 3, "unrelated_closed_rate": 0.0107},
            "continuations": {"kind": "all", "held": 180, "ended": 9, "ended_rate": 0.05,
                              "kinds": [{"kind": "addition", "held": 26, "ended": 4, "ended_rate": 0.1538}]},
            "families": [{"family": "pets", "messages": 12, "expected": 14, "missed": 2, "missed_rate": 0.1429,
                          "spurious": 0}],
            "ways": [{"way": "left_joined", "pairs": 8, "recognised": 7, "recognised_rate": 0.875, "new_written": 8,
                      "new_current": 8, "old_current": 1}],
            "examples": {}}


def finished(kind: str, organization, result: dict, *, ago: timedelta = timedelta(0), **fields) -> Job:
    when = timezone.now() - ago
    return Job.objects.create(kind=kind, organization=organization, status=Job.Status.SUCCEEDED, progress=1.0,
                              result=result, started_at=when - timedelta(minutes=1), finished_at=when, **fields)


def page(client) -> str:
    response = client.get("/evaluation/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_page_shows_empty_states_before_any_run(alice_client, ada_client):
    assert 'href="/evaluation/"' not in alice_client.get("/").content.decode(), "an admin tab (issue 21)"
    html = page(ada_client)
    assert 'href="/evaluation/" aria-current="page">Evaluation</a>' in html
    for empty in ("No LoCoMo run yet", "No ladder yet", "No measurement yet", "No changing-facts run yet"):
        assert empty in html
    assert '<svg class="chart"' not in html
    assert "Published reference at k = 1" in html and "87% current only" in html

    admin_html = html
    assert "Measure now" in admin_html and "Run changing-facts (5 seeds)" in admin_html
    assert 'enctype="multipart/form-data"' in admin_html and "csrfmiddlewaretoken" in admin_html
    assert "No runs yet" in admin_html


def test_the_panels_draw_the_latest_results(ada_client, acme):
    finished("evaluate_locomo", acme, locomo_result(all_at_5=0.11), ago=timedelta(days=2))
    finished("evaluate_locomo", acme, locomo_result(all_at_5=0.62))
    finished("metrics", None, metrics_result(0.05, 0.01), ago=timedelta(hours=2))
    finished("metrics", acme, metrics_result(0.031, 0.02), ago=timedelta(hours=1))
    finished("evaluate_changing_facts", None, changing_facts_result(), params={"split": "test"})
    html = page(ada_client)

    assert html.count('<svg class="chart"') == 3, "recall, ladder and the time series"
    # Recall@k: grouped bars per category with values and question counts, from the latest run only.
    recall = html[html.index('id="eval-recall"'):]
    recall = recall[:recall.index("</section>")]
    assert "62%" in recall and "11%" not in recall, "the admin's runs list names older runs; the panel does not"
    assert "single-hop" in html and "841 questions" in html and "1,540 questions" in html
    assert "recall@1" in html and "recall@10" in html
    # The ablation ladder: five conditions, signed gaps with their explanations, the budget.
    assert "96%" in html and "51%" in html and "retrieved" in html and "oracle" in html
    assert "+51.2 pts" in html
    assert "-84.5 pts" in html and "what better retrieval could add" in html
    assert "budget 400 tokens per condition" in html and "gold evidence in context" in html
    # Contradiction rate over time: both lines, latest figures, write accuracy.
    assert html.count('class="chart-line"') == 2 and 'class="chart-dot hollow"' in html
    assert "3.1%" in html and "2 of 64 slots" in html
    # Changing facts: policy x k with the four shares, the full system highlighted.
    assert "most relevant k" in html and "70%" in html and "30%" in html and "98%" in html
    assert 'class="full-system"' in html and "this system" in html
    assert 'class="seg seg-current_only" style="width: 97.5%"' in html


def test_another_organizations_results_never_show(ada_client, globex):
    finished("evaluate_locomo", globex, locomo_result(all_at_5=0.777, budget_tokens=977))
    finished("metrics", globex, metrics_result(0.444, 0.333))
    finished("evaluate_changing_facts", globex, changing_facts_result(), params={"split": "test"})
    finished("evaluate_write_accuracy", globex, write_accuracy_result(), params={"split": "test", "extractor": "rules"})
    html = page(ada_client)
    assert "78%" not in html and "977" not in html and "44.4%" not in html and "most relevant k" not in html
    assert "No LoCoMo run yet" in html and "No measurement yet" in html and "No changing-facts run yet" in html
    assert "No write-accuracy run yet" in html and "12.3%" not in html


def test_store_wide_metrics_count_for_every_organization(ada_client):
    finished("metrics", None, metrics_result(0.042, 0.0))
    html = page(ada_client)
    assert "4.2%" in html and html.count('class="chart-dot"') == 2 and "chart-dot hollow" not in html


def test_results_are_escaped(ada_client, acme):
    result = locomo_result()
    result["recall"]["<script>alert(1)</script>"] = {"1": 0.5, "5": 0.5, "10": 0.5, "questions": 1}
    result["gaps"][0]["explains"] = "<img src=x onerror=alert(1)>"
    finished("evaluate_locomo", acme, result)
    html = page(ada_client)
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img src=x" not in html


def test_a_result_of_another_shape_does_not_break_the_page(ada_client, acme):
    finished("evaluate_locomo", acme, {"recall": "?"})
    finished("metrics", acme, {"unexpected": True})
    html = page(ada_client)
    assert html.count("not in a shape this panel can draw") == 3, "recall, ladder and the time series say so"


@pytest.mark.parametrize("path", ["/evaluation/measure/", "/evaluation/changing-facts/", "/evaluation/locomo/",
                                  "/evaluation/write-accuracy/"])
def test_end_users_cannot_start_runs(alice_client, path):
    assert alice_client.post(path).status_code == 403
    assert not Job.objects.exists()


def test_an_admin_starts_the_changing_facts_benchmark(ada_client):
    response = ada_client.post("/evaluation/changing-facts/")
    assert response.status_code == 302 and response["Location"] == "/evaluation/"
    jobs = Job.objects.order_by("params__split")
    assert [(job.kind, job.organization, job.status) for job in jobs] == [
        ("evaluate_changing_facts", None, Job.Status.QUEUED)] * 2
    assert [job.params for job in jobs] == [{"trigger": "manual", "seeds": 5, "ks": [1, 3, 5], "split": split}
                                            for split in ("dev", "test")]
    html = page(ada_client)
    assert "Changing-facts runs queued, dev and test splits" in html and "Changing facts</strong>" in html
    assert 'hx-trigger="every 2s"' in html, "the runs list polls while the run waits or works"


def test_an_admin_measures_the_store_now_with_htmx(ada_client, acme):
    response = ada_client.post("/evaluation/measure/", **htmx())
    assert response.status_code == 200 and b"<html" not in response.content
    assert b'id="eval-runs"' in response.content and b'hx-trigger="every 2s"' in response.content
    assert b"Measuring the store now" in response.content, "the message comes along out of band"
    job = Job.objects.get()
    assert (job.kind, job.organization) == ("metrics", acme)


def test_an_invalid_upload_shows_a_form_error_and_starts_nothing(ada_client, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    cases = [
        (b"{not json", "not valid JSON"),
        (json.dumps([{"sample_id": "x", "qa": []}]).encode(), "a sample has no &#x27;conversation&#x27; field"),
        (json.dumps(42).encode(), "This is not a LoCoMo-format file"),
        (json.dumps([{**LOCOMO_SAMPLE[0], "qa": []}]).encode(), "nothing to measure"),
    ]
    for content, error in cases:
        upload = SimpleUploadedFile("locomo.json", content, content_type="application/json")
        response = ada_client.post("/evaluation/locomo/", {"file": upload})
        assert response.status_code == 400
        html = response.content.decode()
        assert 'class="form-error"' in html and error in html, html[html.find("form-error"):][:300]
        assert 'action="/evaluation/locomo/#locomo-upload"' in html, "the page opens at the error"
    assert ada_client.post("/evaluation/locomo/", {}).status_code == 400
    assert not Job.objects.exists() and not (tmp_path / "uploads").exists()


def test_a_valid_upload_starts_a_locomo_run_on_the_saved_file(ada_client, acme, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    content = json.dumps(LOCOMO_SAMPLE).encode()
    upload = SimpleUploadedFile("locomo10.json", content, content_type="application/json")
    response = ada_client.post("/evaluation/locomo/", {"file": upload})
    assert response.status_code == 302 and response["Location"] == "/evaluation/"
    job = Job.objects.get()
    assert (job.kind, job.organization) == ("evaluate_locomo", acme)
    assert job.params["ks"] == [1, 5, 10] and job.params["budget_tokens"] == 400
    saved = tmp_path / "uploads" / job.params["path"].rsplit("/", 1)[-1]
    assert job.params["path"] == str(saved) and saved.suffix == ".json" and saved.read_bytes() == content
    assert "LoCoMo run queued: 1 conversations, 1 questions with evidence" in page(ada_client)


def test_htmx_gets_only_the_runs_fragment_which_polls_while_a_run_works(ada_client, alice_client, acme):
    idle = ada_client.get("/evaluation/", **htmx())
    assert idle.status_code == 200 and b"<html" not in idle.content and b'id="eval-runs"' in idle.content
    assert b"every 2s" not in idle.content and b"Evidence recall" not in idle.content
    job = Job.objects.create(kind="evaluate_locomo", organization=acme, status=Job.Status.RUNNING, progress=0.4,
                             progress_message="40 of 100")
    running = ada_client.get("/evaluation/?watch=1", **htmx()).content.decode()
    assert 'hx-trigger="every 2s"' in running and 'style="width: 40%"' in running and "40 of 100" in running
    Job.objects.filter(pk=job.pk).update(status=Job.Status.SUCCEEDED, progress=1.0, result=locomo_result(),
                                         finished_at=timezone.now())
    done = ada_client.get("/evaluation/?watch=1", **htmx())
    assert done["HX-Refresh"] == "true", "the page reloads to show the finished run's panels"
    assert b"every 2s" not in done.content and b"recall@5 62%" in done.content
    assert alice_client.get("/evaluation/", **htmx()).status_code == 403


def test_other_organizations_runs_are_not_listed(ada_client, globex):
    Job.objects.create(kind="evaluate_locomo", organization=globex, status=Job.Status.RUNNING)
    fragment = ada_client.get("/evaluation/", **htmx()).content.decode()
    assert "No runs yet" in fragment and "every 2s" not in fragment


@pytest.mark.parametrize("path", ["/evaluation/", "/evaluation/?watch=1"])
def test_evaluation_is_an_admin_page(alice_client, acme, path):
    """Issue 21: an end user typing the address gets the 403 page, not the benchmark figures."""
    finished("evaluate_locomo", acme, locomo_result(all_at_5=0.62))
    response = alice_client.get(path)
    assert response.status_code == 403
    html = response.content.decode()
    assert "Not allowed" in html and "Evidence recall" not in html and "62%" not in html


def test_the_page_needs_a_login(client):
    response = client.get("/evaluation/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_a_write_accuracy_run_from_before_unrelated_closing_was_measured_shows_a_dash(ada_client):
    result = write_accuracy_result()
    for key in ("unrelated_held", "unrelated_closed", "unrelated_closed_rate"):
        del result["changes"][key]
    finished("evaluate_write_accuracy", None, result, params={"split": "test", "extractor": "rules"})
    html = page(ada_client)
    panel = html[html.index('id="eval-write-accuracy"'):]
    assert "12.3%" in panel and "—" in panel[:panel.index("</section>")]
    assert "not in a shape this panel can draw" not in panel[:panel.index("</section>")]


def test_the_write_accuracy_panel_shows_how_many_facts_news_that_changes_nothing_ended(ada_client):
    finished("evaluate_write_accuracy", None, write_accuracy_result(), params={"split": "test", "extractor": "rules"})
    older = write_accuracy_result()
    del older["continuations"]  # measured before 2026-12-06
    finished("evaluate_write_accuracy", None, older, params={"split": "dev", "extractor": "rules"})
    html = page(ada_client)
    panel = html[html.index('id="eval-write-accuracy"'):]
    panel = panel[:panel.index("</section>")]
    assert "Same topic ended" in panel and "5.0%" in panel and "9 of 180" in panel
    assert "not in a shape this panel can draw" not in panel


def test_the_write_accuracy_panel_shows_the_latest_run_of_each_split_and_extractor(ada_client):
    finished("evaluate_write_accuracy", None, write_accuracy_result(0.5), ago=timedelta(days=1),
             params={"split": "test", "extractor": "rules"})
    latest = finished("evaluate_write_accuracy", None, write_accuracy_result(0.123),
                      params={"split": "test", "extractor": "rules"})
    finished("evaluate_write_accuracy", None, write_accuracy_result(0.25, "dev"),
             params={"split": "dev", "extractor": "rules"})
    html = page(ada_client)
    panel = html[html.index('id="eval-write-accuracy"'):]
    panel = panel[:panel.index("</section>")]
    assert "No write-accuracy run yet" not in panel
    assert "12.3%" in panel and "37 of 300" in panel and "50.0%" not in panel, "the latest test run only"
    assert "25.0%" in panel, "and the latest dev run"
    assert panel.index("12.3%") < panel.index("25.0%"), "the quoted test split first"
    assert "3.3%" in panel and "3 of 92" in panel and "90.0%" in panel and "63 of 70" in panel
    assert "Unrelated closed" in panel and "1.1%" in panel and "3 of 280" in panel
    when = timezone.localtime(latest.finished_at)
    assert "Run of" in panel and f"{when.day} {when:%b %Y, %H:%M}" in panel, "the run's date"
    assert "quoted" in panel and "<td>rules</td>" in panel
    assert "Per family and per way of changing: test split, rules extractor" in panel
    assert "pets" in panel and "14%" in panel and "left_joined" in panel and "88%" in panel


def test_an_admin_starts_a_write_accuracy_run(ada_client, settings):
    settings.MEMORY_LLM_BASE_URL = ""
    html = page(ada_client)
    assert "Run write accuracy" in html and '<option value="rules">' in html and '<option value="llm">' not in html
    response = ada_client.post("/evaluation/write-accuracy/", {"split": "test", "extractor": "rules"})
    assert response.status_code == 302
    job = Job.objects.get()
    assert (job.kind, job.organization) == ("evaluate_write_accuracy", None)
    assert job.params == {"trigger": "manual", "split": "test", "extractor": "rules"}
    assert "Write-accuracy run queued: test split, rules extractor" in page(ada_client)

    ada_client.post("/evaluation/write-accuracy/", {"split": "test", "extractor": "llm"})
    assert Job.objects.count() == 1, "no LLM run without an endpoint"
    assert "needs MEMORY_LLM_BASE_URL" in page(ada_client)
