"""The OpenAPI contract: served, readable, and a bounded fuzz run finds no server error."""

import os

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from tests.factories import make_agent, org

pytestmark = pytest.mark.django_db
CONTRACT_PATHS = [
    "/api/v1/episodes",
    "/api/v1/episodes/search",
    "/api/v1/episodes/{episode_id}",
    "/api/v1/memories",
    "/api/v1/memories/{memory_id}",
    "/api/v1/memories/{memory_id}/history",
    "/api/v1/search",
    "/api/v1/context",
    "/api/v1/users/{user}/export",
    "/api/v1/users/{user}/memories",
    "/api/v1/jobs/{job_id}",
]


def test_schema_is_openapi_3_and_lists_the_contract(client):
    response = client.get("/api/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert set(CONTRACT_PATHS) <= set(schema["paths"])
    search = schema["components"]["schemas"]["SearchInRequest"]["properties"]
    assert {"user", "query", "k", "as_of", "known_at", "min_score", "mmr_lambda", "weights", "explain"} <= set(search)


def test_schema_documents_agent_keys_deletion_receipts_and_the_error_body(client):
    schema = client.get("/api/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert schema["components"]["securitySchemes"]["agentKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "an agent key: `Authorization: Bearer <key>`",
    }
    for path in ("/api/v1/memories/{memory_id}", "/api/v1/episodes/{episode_id}", "/api/v1/users/{user}/memories"):
        delete = schema["paths"][path]["delete"]
        assert "200" in delete["responses"] and "204" not in delete["responses"], path  # a receipt, not an empty body
        assert "preview" in {parameter["name"] for parameter in delete["parameters"]}, path
        assert {"agentKey": []} in delete["security"], path
    search = schema["paths"]["/api/v1/search"]["post"]["responses"]
    assert search["400"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
    assert schema["components"]["schemas"]["Error"]["required"] == ["error"]


def test_docs_page_is_served_without_a_cdn(client):
    response = client.get("/api/v1/docs")
    assert response.status_code == 200
    page = response.content.decode()
    assert "/static/drf_spectacular_sidecar/redoc" in page
    assert "https://" not in page and "http://" not in page, "no font, script or style from the internet"
    assert "img-src 'self' data:; connect-src 'self'" in page, "nor what Redoc's script would fetch"


# Not memoryapp.wsgi: it starts loading the model on a thread, and that thread's imports building ASTs
# while hypothesis parses lambdas here is CPython 3.11's "AST constructor recursion depth mismatch"
# race (gh-106905). Collection stays single-threaded.
schema = schemathesis.openapi.from_wsgi("/api/v1/schema?format=json", get_wsgi_application())


@pytest.fixture
def fuzz_key(db):
    """A key for the fuzzer. Requests go straight to the WSGI app, so keep Django from closing the
    test transaction's connection at the end of each request (as its own test client does)."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield make_agent(org("Fuzz"), "fuzzer")[1]
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", 15)), deadline=None, suppress_health_check=list(HealthCheck))
def test_fuzzed_requests_never_cause_a_server_error(case, fuzz_key):
    case.call_and_validate(headers={"Authorization": f"Bearer {fuzz_key}"}, checks=[not_a_server_error])
