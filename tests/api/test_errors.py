"""Errors answer in the contract's shape with field-level messages, and nothing is half-written."""

import pytest

from memoryapp.models import Episode, Memory
from tests.factories import make_agent, make_user

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


# --- outages and faults: 503 with Retry-After, a JSON 500 with a reference, never a debug page ---------


@pytest.fixture
def database_down():
    """Every new connection to the database is refused, for real: the next query fails in psycopg's connect."""
    from django.db import connection

    saved = dict(connection.settings_dict)

    def stop():
        connection.close()
        connection.settings_dict.update(HOST="127.0.0.1", PORT="9")  # port 9 (discard): nothing listens

    yield stop
    connection.close()
    connection.settings_dict.clear()
    connection.settings_dict.update(saved)


def assert_unavailable(response):
    assert response.status_code == 503, response.content[:300]
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "unavailable" and response.json()["error"]["message"]
    assert int(response["Retry-After"]) > 0


@pytest.mark.django_db(transaction=True)
def test_with_the_database_down_search_ingest_and_list_answer_503_json(acme, database_down, settings):
    settings.DEBUG = True  # `make run` used to serve Django's debug page here
    agent = make_agent(acme, "bot")[1]
    from tests.api.conftest import AgentClient

    client = AgentClient(agent)
    database_down()
    for response in (
        client.post("search", {"user": "sam", "query": "where do I live"}),
        client.post("episodes", message()),
        client.get("memories?user=sam"),
        client.get("episodes"),
    ):
        assert_unavailable(response)


@pytest.mark.django_db(transaction=True)
def test_with_the_database_down_a_logged_in_api_session_answers_503_json(acme, database_down, settings):
    from django.test import Client

    settings.DEBUG = True
    client = Client(raise_request_exception=False)
    client.force_login(make_user(acme, "sam"))
    database_down()
    assert_unavailable(client.get("/api/v1/memories"))


@pytest.mark.django_db(transaction=True)
def test_with_the_database_down_the_dashboard_says_service_unavailable(acme, database_down, settings):
    from django.test import Client

    settings.DEBUG = True
    client = Client(raise_request_exception=False)
    client.force_login(make_user(acme, "sam"))
    database_down()
    response = client.get("/")
    assert response.status_code == 503 and int(response["Retry-After"]) > 0
    page = response.content.decode()
    assert "Service unavailable" in page
    assert "Traceback" not in page and "SECRET_KEY" not in page and "OperationalError" not in page


@pytest.mark.urls("tests.api.failing_urls")
def test_with_the_broker_down_the_api_answers_503_json(settings):
    from django.test import Client

    settings.DEBUG = True
    assert_unavailable(Client(raise_request_exception=False).get("/api/v1/test-failures/broker-down"))


@pytest.mark.urls("tests.api.failing_urls")
@pytest.mark.parametrize("path", ["/api/v1/test-failures/unexpected", "/api/v1/test-failures/drf-unexpected"])
def test_an_unexpected_api_error_is_json_500_with_a_logged_reference(path, settings, caplog):
    from django.test import Client

    settings.DEBUG = True
    response = Client(raise_request_exception=False).get(path)
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == "internal_error" and error["reference"] in error["message"]
    assert "RuntimeError" not in response.content.decode() and "Traceback" not in response.content.decode()
    logged = [r for r in caplog.records if error["reference"] in r.getMessage()]
    assert logged and logged[0].exc_info and logged[0].exc_info[0] is RuntimeError, "the reference leads to the cause"


@pytest.mark.urls("tests.api.failing_urls")
def test_an_unexpected_dashboard_error_shows_the_projects_page_not_the_debug_page(acme, settings, caplog):
    from django.test import Client

    settings.DEBUG = True
    client = Client(raise_request_exception=False)
    client.force_login(make_user(acme, "sam", admin=True))
    response = client.get("/test-failures/unexpected")
    assert response.status_code == 500
    page = response.content.decode()
    assert "Something went wrong" in page
    assert "Traceback" not in page and "SECRET_KEY" not in page and "RuntimeError" not in page
    reference = page.split("<code>")[1].split("</code>")[0]
    assert any(reference in r.getMessage() and r.exc_info for r in caplog.records)


# --- dates the service cannot compute with -----------------------------------------------------


FAR_DATES = ["9999-12-31T00:00:00Z", "9999-12-31T23:59:59+00:00", "0001-01-01T00:00:00Z", "0001-01-02T00:00:00+01:00"]


@pytest.mark.parametrize("when", FAR_DATES)
def test_dates_out_of_the_computable_span_are_400_everywhere_in_the_api(acme_agent, when):
    from urllib.parse import quote

    created = acme_agent.post("memories", {"user": "sam", "text": "I drink green tea."})
    memory_id = created.body["memory"]["id"]
    episodes = Episode.objects.count()
    for response, field in [
        (acme_agent.post("episodes", message(occurred_at=when)), "messages"),
        # read against a message said in 9999, "next month" is in the year 10000
        (acme_agent.post("episodes", {**message("I'm moving to Berlin next month.", occurred_at=when), "wait": True}),
         "messages"),
        (acme_agent.post("search", {"user": "sam", "query": "x", "as_of": when}), "as_of"),
        (acme_agent.post("search", {"user": "sam", "query": "x", "known_at": when}), "known_at"),
        (acme_agent.post("context", {"user": "sam", "query": "x", "as_of": when}), "as_of"),
        (acme_agent.post("episodes/search", {"user": "sam", "query": "x", "known_at": when}), "known_at"),
        (acme_agent.get(f"memories?user=sam&as_of={quote(when)}"), "as_of"),
        (acme_agent.get(f"memories?user=sam&known_at={quote(when)}"), "known_at"),
        (acme_agent.post("memories", {"user": "sam", "text": "I drink coffee.", "valid_from": when}), "valid_from"),
        (acme_agent.patch(f"memories/{memory_id}", {"text": "I drink black tea.", "valid_from": when}), "valid_from"),
    ]:
        assert_error(response, 400, "invalid", field)
        assert "year 1000 to 8999" in response.body["error"]["message"], response.body
    assert Episode.objects.count() == episodes
    assert Memory.objects.get(pk=memory_id).text == "I drink green tea."


@pytest.mark.parametrize("day", ["9999-12-31", "0001-01-01"])
def test_far_dates_in_the_dashboards_filters_are_form_errors_not_500(acme, client, day):
    client.force_login(make_user(acme, "ada", admin=True))
    for path in (f"/?true_until={day}", f"/?true_from={day}", f"/admin/?true_until={day}",
                 f"/admin/events/?until={day}", f"/admin/access/?since={day}"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert "year 1000 to 8999" in response.content.decode(), path
