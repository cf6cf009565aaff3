"""Errors answer in the contract's shape with field-level messages, and nothing is half-written."""

import pytest

from memoryapp.models import Episode, Memory

pytestmark = pytest.mark.django_db


def assert_error(response, status, code, field=None):
    assert response.status_code == status, response.body
    error = response.body["error"]
    assert error["code"] == code and error["message"]
    if field:
        assert field in error["fields"], error


def message(content="I live in Porto.", **extra):
    return {"user": "sam", "messages": [{"role": "user", "content": content, **extra}]}


def test_malformed_json(acme_agent):
    assert_error(acme_agent.raw("episodes", b'{"user": "sam", '), 400, "malformed_json")
    assert_error(acme_agent.raw("search", b""), 400, "invalid", "user")
    assert_error(acme_agent.raw("search", b'{"user": "\xff\xfe"}'), 400, "malformed_json")


def test_deep_nesting_is_refused(acme_agent):
    deep = b'{"metadata": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    assert_error(acme_agent.raw("episodes", deep), 400, "malformed_json")


def test_wrong_types_and_unknown_fields(acme_agent):
    assert_error(acme_agent.post("episodes", {"user": "sam", "messages": "hello"}), 400, "invalid", "messages")
    assert_error(acme_agent.post("search", {"user": "sam", "query": "x", "k": "five"}), 400, "invalid", "k")
    assert_error(acme_agent.post("search", {"user": "sam", "query": "x", "top_k": 3}), 400, "invalid", "top_k")
    assert_error(acme_agent.post("episodes", message(mood="happy")), 400, "invalid", "messages")


@pytest.mark.parametrize(
    "body, field, expected",
    [
        ({"user": 5, "messages": [{"role": "user", "content": "I live in Porto."}]}, "user", "expected a string"),
        ({**message(), "wait": "yes"}, "wait", "expected true or false"),
        ({**message(), "session": ["s1"]}, "session", "expected a string"),
    ],
)
def test_json_values_of_the_wrong_type_are_refused_not_converted(acme_agent, body, field, expected):
    response = acme_agent.post("episodes", body)
    assert_error(response, 400, "invalid", field)
    assert response.body["error"]["fields"][field] == [expected]
    assert Episode.objects.count() == 0
    search = acme_agent.post("search", {"user": "sam", "query": "x", "explain": 1})
    assert search.body["error"]["fields"] == {"explain": ["expected true or false"]}


def test_a_value_that_is_no_date_at_all_is_told_the_format_not_the_time_zone(acme_agent):
    response = acme_agent.get("memories?user=sam&as_of=garbage")
    assert_error(response, 400, "invalid", "as_of")
    assert "time zone" not in response.body["error"]["message"] and "format" in response.body["error"]["message"]
    naive = acme_agent.get("memories?user=sam&as_of=2025-03-10T12:00:00")
    assert "time zone" in naive.body["error"]["message"]


@pytest.mark.parametrize("k", [0, -1, 51, 10**12])
def test_out_of_range_k(acme_agent, k):
    assert_error(acme_agent.post("search", {"user": "sam", "query": "x", "k": k}), 400, "invalid", "k")


@pytest.mark.parametrize("budget", [0, 10, 10**9])
def test_out_of_range_budget(acme_agent, budget):
    response = acme_agent.post("context", {"user": "sam", "query": "x", "budget_tokens": budget})
    assert_error(response, 400, "invalid", "budget_tokens")


@pytest.mark.parametrize("when", ["yesterday", "2025-13-45T00:00:00Z", "2025-03-10T12:00:00"])
def test_bad_dates(acme_agent, when):
    assert_error(acme_agent.post("episodes", message(occurred_at=when)), 400, "invalid", "messages")
    assert Episode.objects.count() == 0


def test_empty_text_and_null_bytes(acme_agent):
    assert_error(acme_agent.post("episodes", message("   ")), 400, "invalid", "messages")
    nul = acme_agent.post("episodes", message("a\x00b"))
    assert_error(nul, 400, "invalid", "messages")
    assert nul.body["error"]["fields"]["messages"] == {"0": {"content": ["null bytes are not allowed"]}}, "said once"
    assert_error(acme_agent.post("memories", {"user": "sam", "text": ""}), 400, "invalid", "text")
    assert_error(acme_agent.post("search", {"user": "sam", "query": ""}), 400, "invalid", "query")


def test_oversized_body_is_413_and_nothing_is_stored(acme_agent, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    response = acme_agent.post("episodes", message("I live in Porto. " * 1000))
    assert_error(response, 413, "too_large")
    assert Episode.objects.count() == 0


def test_oversized_episode_is_413_and_nothing_is_stored(acme_agent, settings):
    settings.MEMORY_MAX_EPISODE_CHARS = 100
    body = {
        "user": "sam",
        "messages": [{"role": "user", "content": "I live in Porto."}, {"role": "user", "content": "x" * 101}],
    }
    assert_error(acme_agent.post("episodes", body), 413, "too_large")
    assert Episode.objects.count() == 0 and Memory.objects.count() == 0


def test_too_many_requests(acme_agent, settings):
    from memoryapp.api.throttling import PrincipalRateThrottle

    PrincipalRateThrottle.THROTTLE_RATES = {"principal": "3/min"}
    try:
        statuses = [acme_agent.get("memories").status_code for _ in range(4)]
    finally:
        PrincipalRateThrottle.THROTTLE_RATES = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    assert statuses[:3] == [200, 200, 200]
    assert statuses[3] == 429


def test_missing_or_bad_key_is_401(client):
    assert client.get("/api/v1/memories").status_code in (401, 403)
    response = client.get("/api/v1/memories", HTTP_AUTHORIZATION="Bearer mk_nothing_here")
    assert response.status_code == 401 and response.json()["error"]["code"] == "authentication_failed"


def test_unknown_ids_are_404_and_say_what_was_not_found(acme_agent):
    memory = acme_agent.get("memories/00000000-0000-0000-0000-000000000000")
    assert_error(memory, 404, "not_found")
    assert memory.body["error"]["message"] == "no such memory"
    assert_error(acme_agent.get("jobs/00000000-0000-0000-0000-000000000000"), 404, "not_found")
    user = acme_agent.post("search", {"user": "nobody", "query": "x"})
    assert_error(user, 404, "not_found")
    assert user.body["error"]["message"] == "no user 'nobody'"


@pytest.mark.parametrize(
    "path", ["episodes?user=a%00b", "memories?user=a%00b", "memories?q=%00", "episodes?session=%00"]
)
def test_null_bytes_in_query_parameters_are_400(acme_agent, path):
    assert_error(acme_agent.get(path), 400, "invalid")


@pytest.mark.parametrize("path", ["memories/not-a-uuid", "memories/", "nowhere", "episodes/12/extra"])
def test_a_path_no_endpoint_matches_answers_json_404(acme_agent, path):
    assert_error(acme_agent.get(path), 404, "not_found")
    assert_error(acme_agent.post(path, {"user": "sam"}), 404, "not_found")
