"""The Evaluation page's Questions panel: the latest run of each split, test quoted first, with the
first/third-person and per-family details; an admin can start a run."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memoryapp.models import Job

pytestmark = pytest.mark.django_db


def questions_result(recall_at_1: float, split: str) -> dict:
    def answered(r1):
        return {"questions": 1004, "at1": round(r1 * 1004), "at5": 892, "abstained": 91, "recall_at_1": r1,
                "recall_at_5": 0.888, "wrong_abstention": 0.0906}

    def never(rate):
        return {"asks": 348, "abstained": round(rate * 348), "correct_abstention": rate}

    return {"split": split, "extractor": "rules", "k": 5, "first_at": "2025-03-03T10:00:00+00:00", "users": 31,
            "messages": 459, "facts": 625, "written": 502, "write_missed": 123, "unasked": 0,
            "answerable": {**answered(recall_at_1), "persons": {"first": answered(0.812), "third": answered(0.823)}},
            "unanswerable": {"asks": 696, "abstained": 504, "correct_abstention": 0.7241, "questions": 116,
                             "persons": {"first": never(0.66), "third": never(0.79)}},
            "families": [{"family": "pets", "questions": 24, "at1": 22, "at5": 22, "abstained": 2,
                          "recall_at_1": 0.9167, "recall_at_5": 0.9167, "wrong_abstention": 0.0833}],
            "unanswerable_families": [{"family": "blood_type", "asks": 6, "abstained": 5,
                                       "correct_abstention": 0.8333}],
            "examples": {}}


def finished(result: dict, split: str, ago: timedelta = timedelta(0)) -> Job:
    when = timezone.now() - ago
    return Job.objects.create(kind="evaluate_questions", organization=None, status=Job.Status.SUCCEEDED,
                              progress=1.0, result=result, started_at=when - timedelta(minutes=1), finished_at=when,
                              params={"split": split, "extractor": "rules"})


def panel_of(client) -> str:
    response = client.get("/evaluation/")
    assert response.status_code == 200
    html = response.content.decode()
    panel = html[html.index('id="eval-questions"'):]
    return panel[:panel.index("</section>")]


def test_the_panel_is_empty_before_any_run(ada_client):
    assert "No question-set run yet" in panel_of(ada_client)


def test_the_panel_shows_the_latest_run_of_each_split_test_quoted_first(ada_client):
    finished(questions_result(0.5, "test"), "test", ago=timedelta(days=1))
    latest = finished(questions_result(0.777, "test"), "test")
    finished(questions_result(0.818, "dev"), "dev")
    panel = panel_of(ada_client)
    assert "No question-set run yet" not in panel
    assert "77.7%" in panel and "50.0%" not in panel, "the latest test run only"
    assert "81.8%" in panel, "and the latest dev run"
    assert panel.index("77.7%") < panel.index("81.8%"), "the quoted test split first"
    assert "quoted" in panel and ">test <span" in panel and ">dev</th>" in panel, "each split labelled"
    assert "9.1%" in panel and "91 of 1,004" in panel, "wrong abstention"
    assert "72.4%" in panel and "504 of 696" in panel, "correct abstention"
    assert "502 of 625" in panel, "facts written"
    when = timezone.localtime(latest.finished_at)
    assert f"{when.day} {when:%b %Y, %H:%M}" in panel
    assert "First and third person, and per family: test split" in panel
    assert "<td>first</td>" in panel and "81%" in panel and "<td>third</td>" in panel and "79%" in panel
    assert "<td>pets</td>" in panel and "92%" in panel and "<td>blood_type</td>" in panel and "83%" in panel


def test_an_admin_starts_a_run_and_an_end_user_cannot(ada_client, alice_client):
    assert alice_client.post("/evaluation/questions/", {"split": "test"}).status_code in (302, 403)
    assert not Job.objects.exists()
    response = ada_client.post("/evaluation/questions/", {"split": "test"})
    assert response.status_code == 302
    job = Job.objects.get()
    assert (job.kind, job.organization) == ("evaluate_questions", None)
    assert job.params == {"trigger": "manual", "split": "test", "extractor": "rules"}
    assert "Question-set run queued: test split." in ada_client.get("/evaluation/").content.decode()
