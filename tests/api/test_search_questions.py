"""POST /search and /episodes/search as agents call them (issue 18): first-person questions, the
user's name carrying no relevance, results in the order of the score they show, min_score on its scale."""

import pytest

from tests.factories import make_memory, make_user, say

pytestmark = pytest.mark.django_db


@pytest.fixture
def riley(acme):
    riley = make_user(acme, "riley")
    make_memory(riley, "Riley lives in Berlin.", importance=6)
    make_memory(riley, "Riley works as a data engineer at Zalando.", importance=7)
    make_memory(riley, "Riley is allergic to peanuts.", importance=9)
    make_memory(riley, "Riley is vegan.", importance=8)
    return riley


def test_first_person_questions_are_answered(acme_agent, riley):
    for query, answer in (("where do I live?", "Riley lives in Berlin."),
                          ("what do I do for work?", "Riley works as a data engineer at Zalando."),
                          ("am I allergic to anything?", "Riley is allergic to peanuts.")):
        response = acme_agent.post("search", {"user": "riley", "query": query, "k": 1})
        assert response.status_code == 200
        assert not response.body["abstained"], query
        assert response.body["results"][0]["memory"]["text"] == answer


def test_first_person_questions_find_the_users_own_messages(acme_agent, riley):
    say(riley, "I have a cat named Miso.", when="2025-01-02")
    say(riley, "The train to Hamburg was late again.", when="2025-01-03")
    for query in ("do I have a cat?", "Does Riley have a cat?"):
        body = acme_agent.post("episodes/search", {"user": "riley", "query": query, "k": 1}).body
        assert [r["episode"]["content"] for r in body["results"]] == ["I have a cat named Miso."], query
        assert body["ordered_by"] == "fused"


def test_naming_the_user_in_a_question_about_nothing_said_abstains(acme_agent, riley):
    for query in ("When is Riley's dentist appointment?", "When is the dentist appointment?"):
        body = acme_agent.post("search", {"user": "riley", "query": query}).body
        assert body["abstained"] and body["results"] == [], query


def test_scores_come_in_order_and_min_score_reads_on_their_scale(acme_agent, riley):
    body = acme_agent.post("search", {"user": "riley", "query": "What does Riley eat?", "k": 4, "min_score": 0.0,
                                      "explain": True}).body
    scores = [r["score"] for r in body["results"]]
    assert body["ordered_by"] == "score" and len(scores) >= 2 and scores == sorted(scores, reverse=True)
    assert body["results"][0]["memory"]["text"] in ("Riley is vegan.", "Riley is allergic to peanuts.")
    assert all(-1 <= s <= 1.03 for s in scores)
    assert body["searched_as"] == "What does Riley eat?"  # shown as the name the memories use
    above = acme_agent.post("search", {"user": "riley", "query": "What does Riley eat?", "k": 4,
                                       "min_score": scores[0] + 0.001}).body
    assert above["abstained"]  # nothing scores above the best score shown
    at_best = acme_agent.post("search", {"user": "riley", "query": "What does Riley eat?", "k": 4,
                                         "min_score": scores[0] - 1e-6}).body  # shown rounded to 6 places
    assert [r["score"] for r in at_best["results"]] == scores[:1]
