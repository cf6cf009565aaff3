"""The API contract describes itself (issue 20): every answer of every endpoint, success or error, has the
shape the OpenAPI document gives for its status, strictly: a field the document does not name, or a
required one missing, fails. Every operation, parameter and field is described, and the examples have the
documented shapes too.

The document is generated in-process (drf-spectacular) and each response schema turned into a JSON Schema
(jsonschema): `$ref`s resolved, OpenAPI 3.0's `nullable` as a union with null, and every object that lists
its properties closed (`additionalProperties: false`) unless it says otherwise (free JSON: `metadata`,
`data`, `result`, `fields`)."""

from datetime import datetime
from urllib.parse import urlsplit
from uuid import UUID, uuid4

import jsonschema
import pytest
from drf_spectacular.generators import SchemaGenerator

from memoryapp.api.throttling import PrincipalRateThrottle
from memoryapp.models import Episode, Memory, User
from tests.api.conftest import AgentClient
from tests.factories import make_agent

pytestmark = pytest.mark.django_db
PREFIX = "/api/v1"
JSON = "application/json"

# --- OpenAPI 3.0 to JSON Schema ----------------------------------------------------------------

OPENAPI_ONLY = {"nullable", "readOnly", "writeOnly", "example", "examples", "discriminator", "xml", "externalDocs",
                "deprecated"}

FORMATS = jsonschema.FormatChecker(formats=())  # only the checks below (no optional packages needed)


@FORMATS.checks("date-time", raises=ValueError)
def _time_with_a_zone(value) -> bool:
    """DESIGN 7: times are ISO 8601 with a zone."""
    return not isinstance(value, str) or datetime.fromisoformat(value).tzinfo is not None


@FORMATS.checks("uuid", raises=ValueError)
def _uuid(value) -> bool:
    return not isinstance(value, str) or bool(UUID(value))


@FORMATS.checks("uri")
def _absolute_url(value) -> bool:
    return not isinstance(value, str) or (urlsplit(value).scheme in ("http", "https") and bool(urlsplit(value).netloc))


def json_schema(node, components: dict, seen: tuple = ()):
    """A JSON Schema for an OpenAPI 3.0 schema node, `$ref`s inlined, closed objects."""
    if isinstance(node, list):
        return [json_schema(item, components, seen) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[1]
        assert name not in seen, f"the component {name} refers to itself"
        return json_schema(components[name], components, (*seen, name))
    out = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: json_schema(prop, components, seen) for name, prop in value.items()}
        elif key in ("enum", "default", "required"):
            out[key] = value
        elif key not in OPENAPI_ONLY:
            out[key] = json_schema(value, components, seen)
    if "properties" in node:
        out.setdefault("additionalProperties", False)
    if node.get("nullable"):
        # spectacular writes a nullable enum with None in its values; a nullable $ref as allOf + nullable
        return {"anyOf": [{"type": "null"}, out]}
    return out


def violations(schema: dict, components: dict, body) -> list[str]:
    validator = jsonschema.Draft202012Validator(json_schema(schema, components), format_checker=FORMATS)
    found = [leaf for error in validator.iter_errors(body) for leaf in _leaves(error)]
    return [f"{'/'.join(map(str, e.absolute_path)) or '(body)'}: {e.message}"
            for e in sorted(found, key=lambda e: list(map(str, e.absolute_path)))]


def _leaves(error):
    """What failed inside an anyOf or oneOf (a nullable object: not the "is not null" of the other branch)."""
    branches = [e for e in error.context or [] if not (e.validator == "type" and e.validator_value == "null")]
    if not branches:
        yield error
    for branch in branches:
        yield from _leaves(branch)


@pytest.fixture(scope="module")
def openapi() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


class Contract:
    """Calls the API and checks each answer against the document; remembers what it has seen."""

    def __init__(self, openapi: dict):
        self.openapi = openapi
        self.components = openapi["components"]["schemas"]
        self.seen: set[tuple[str, str, str]] = set()

    def call(self, client: AgentClient, method: str, template: str, body=None, *, query: str = "",
             headers: dict | None = None, **path):
        response = client.call(method, template.format(**path).lstrip("/") + query, body, **(headers or {}))
        return self.check(response, method, template)

    def check(self, response, method: str, template: str):
        operation = self.openapi["paths"][PREFIX + template][method]
        status = str(response.status_code)
        declared = operation["responses"]
        assert status in declared, f"{method.upper()} {template} answered {status}, undeclared: {response.body}"
        schema = declared[status]["content"][JSON]["schema"]
        problems = violations(schema, self.components, response.body)
        assert not problems, f"{method.upper()} {template} {status} is not as documented:\n" + "\n".join(problems)
        self.seen.add((method, template, status))
        return response.body


def operations(openapi: dict):
    for path, item in openapi["paths"].items():
        for method, operation in item.items():
            yield method, path.removeprefix(PREFIX), operation


def ingest(api: Contract, bot: AgentClient, *texts: str, key: str = "", wait: bool = True, session: str = "s1"):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    return api.call(bot, "post", "/episodes", {
        "user": "sam", "session": session, "wait": wait,
        "messages": [{"role": "user", "content": text, "occurred_at": "2025-03-10T12:00:00Z",
                      "metadata": {"channel": "chat"}} for text in texts],
    }, headers=headers)


# --- real answers ------------------------------------------------------------------------------


def test_every_endpoint_answers_every_documented_success_in_its_documented_shape(openapi, acme):
    from memoryapp.tasks import extract_episodes

    api = Contract(openapi)
    bot = AgentClient(make_agent(acme, "contract")[1])

    # writes: extracted within the request, replayed, queued as a job, stated, corrected
    extracted = ingest(api, bot, "I'm vegetarian and I live in Porto.", "My sister Ana is a nurse.", key="k1")
    assert extracted["operations"], "extraction wrote memories"
    assert ingest(api, bot, "I'm vegetarian and I live in Porto.", "My sister Ana is a nurse.", key="k1")["replayed"]
    queued = ingest(api, bot, "I work at Acme as an engineer.", wait=False, session="s2")
    assert api.call(bot, "get", "/jobs/{job_id}", job_id=queued["job"])["status"] == "queued"
    extract_episodes.apply(args=[queued["job"]])
    job = api.call(bot, "get", "/jobs/{job_id}", job_id=queued["job"])
    assert job["status"] == "succeeded" and job["result"]["operations"]
    stated = api.call(bot, "post", "/memories", {"user": "sam", "text": "Sam's favourite colour is green.",
                                                 "subject": "sam", "attribute": "favourite colour", "value": "green"})
    corrected = api.call(bot, "patch", "/memories/{memory_id}", {"text": "Sam's favourite colour is blue.",
                                                                  "value": "blue"}, memory_id=stated["memory"]["id"])

    # reads: pages both ways, details, history, searches plain and explained, context, export
    first = api.call(bot, "get", "/episodes", query="?user=sam&page_size=1")
    assert first["next"], "more than one page"
    second = api.call(bot, "get", "/episodes", query="?" + urlsplit(first["next"]).query)
    assert second["previous"]
    api.call(bot, "get", "/episodes/{episode_id}", episode_id=extracted["episodes"][0])
    assert api.call(bot, "get", "/memories", query="?user=sam")["results"]
    assert api.call(bot, "get", "/memories", query="?user=sam&status=invalidated&page_size=1")["results"]
    detail = api.call(bot, "get", "/memories/{memory_id}", memory_id=corrected["id"])
    assert len(detail["history"]["versions"]) == 2 and detail["history"]["events"]
    api.call(bot, "get", "/memories/{memory_id}/history", memory_id=corrected["id"])
    question = {"user": "sam", "query": "Where does Sam live?"}
    assert api.call(bot, "post", "/search", question)["results"]
    explained = api.call(bot, "post", "/search", {**question, "explain": True})
    assert "scaled" in explained["results"][0]["components"] and explained["searched_as"]
    assert api.call(bot, "post", "/search", {**question, "min_score": 1})["abstained"]
    said = {"user": "sam", "query": "Is Sam vegetarian?"}
    assert api.call(bot, "post", "/episodes/search", {**said, "explain": True})["results"]
    api.call(bot, "post", "/episodes/search", said)
    assert api.call(bot, "post", "/context", question)["memories"]
    export = api.call(bot, "get", "/users/{user}/export", user="sam")
    assert export["memories"] and export["episodes"] and export["events"]

    # deletions: previews (with and without the sources) and receipts
    porto = str(Memory.objects.get(user__external_id="sam", text__icontains="Porto").pk)
    for query in ("?preview=true", "?preview=true&with_sources=true"):
        assert api.call(bot, "delete", "/memories/{memory_id}", query=query, memory_id=porto)["preview"]
    assert api.call(bot, "delete", "/memories/{memory_id}", memory_id=porto)["receipt_id"]
    nurse = str(Episode.objects.get(user__external_id="sam", content__icontains="nurse").pk)
    assert api.call(bot, "delete", "/episodes/{episode_id}", query="?preview=true", episode_id=nurse)["preview"]
    assert api.call(bot, "delete", "/episodes/{episode_id}", episode_id=nurse)["receipt_id"]

    # memory writing paused: both writes answer 200 and store nothing
    User.objects.filter(external_id="sam").update(memory_paused=True)
    assert ingest(api, bot, "I have a dog called Rex.")["paused"]
    assert api.call(bot, "post", "/memories", {"user": "sam", "text": "Sam has a dog."})["paused"]
    assert api.call(bot, "delete", "/users/{user}/memories", query="?preview=true", user="sam")["preview"]
    assert api.call(bot, "delete", "/users/{user}/memories", user="sam")["receipt_id"]

    documented = {(method, path, status) for method, path, operation in operations(openapi)
                  for status in operation["responses"] if status.startswith("2")}
    assert documented - api.seen == set(), "documented successes this test never saw"


def test_errors_answer_in_the_shape_each_operation_documents(openapi, acme, settings, monkeypatch):
    api = Contract(openapi)
    bot = AgentClient(make_agent(acme, "contract")[1])
    stored = ingest(api, bot, "I live in Porto.", key="k1")

    assert api.call(bot, "post", "/search", {"user": "sam", "query": "x", "k": 99})["error"]["fields"]["k"]
    assert api.call(bot, "post", "/episodes", {"user": "sam", "messages": [{"content": "hi"}]})["error"]["fields"]
    assert api.call(bot, "get", "/memories", query="?as_of=garbage")["error"]["code"] == "invalid"
    api.call(bot, "delete", "/episodes/{episode_id}", query="?preview=maybe", episode_id=stored["episodes"][0])
    malformed = bot.raw("context", b'{"user": "sam", ')
    assert api.check(malformed, "post", "/context")["error"]["code"] == "malformed_json"
    unsupported = bot.raw("search", b"user=sam", content_type="text/plain")
    assert api.check(unsupported, "post", "/search")["error"]["code"] == "unsupported_media_type"
    assert api.call(AgentClient("mk_unknown"), "get", "/jobs/{job_id}", job_id=uuid4())["error"]["code"] == (
        "authentication_failed")
    reader = AgentClient(make_agent(acme, "reader", permissions=("read",))[1])
    assert api.call(reader, "post", "/memories", {"user": "sam", "text": "Sam likes tea."})["error"]["code"] == (
        "permission_denied")
    assert api.call(bot, "get", "/memories/{memory_id}", memory_id=uuid4())["error"]["code"] == "not_found"
    assert api.call(bot, "get", "/users/{user}/export", user="nobody")["error"]["code"] == "not_found"
    conflict = ingest(api, bot, "I live in Lisbon.", key="k1")
    assert conflict["error"]["code"] == "conflict"
    superseded = str(Memory.objects.get(user__external_id="sam").pk)
    api.call(bot, "patch", "/memories/{memory_id}", {"text": "I live in Braga."}, memory_id=superseded)
    assert api.call(bot, "patch", "/memories/{memory_id}", {"text": "I live in Faro."},
                    memory_id=superseded)["error"]["code"] == "conflict"
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    assert ingest(api, bot, "I live in Porto. " * 100)["error"]["code"] == "too_large"

    monkeypatch.setattr(PrincipalRateThrottle, "THROTTLE_RATES", {"principal": "1/min"})
    hurried = AgentClient(make_agent(acme, "hurried")[1])
    api.call(hurried, "get", "/memories")
    assert api.call(hurried, "get", "/memories")["error"]["code"] == "too_many_requests"

    seen = {status for _, _, status in api.seen}
    assert {"400", "401", "403", "404", "409", "413", "415", "429"} <= seen


@pytest.mark.urls("tests.api.failing_urls")
@pytest.mark.parametrize("path, status", [("test-failures/drf-unexpected", 500), ("test-failures/broker-down", 503)])
def test_faults_and_outages_answer_the_documented_error(openapi, path, status):
    from django.test import Client

    response = Client(raise_request_exception=False).get(f"{PREFIX}/{path}")
    assert response.status_code == status
    documented = {operation["responses"][str(status)]["content"][JSON]["schema"]["$ref"]
                  for _, _, operation in operations(openapi)}
    assert documented == {"#/components/schemas/Error"}, "every operation declares it"
    assert violations({"$ref": "#/components/schemas/Error"}, openapi["components"]["schemas"], response.json()) == []


def test_the_check_fails_on_an_undocumented_field_and_on_a_missing_required_one(openapi, acme):
    """What keeps the two tests above honest: the validation is strict at every depth."""
    api = Contract(openapi)
    bot = AgentClient(make_agent(acme, "contract")[1])
    ingest(api, bot, "I live in Porto.")
    memory = Memory.objects.get(user__external_id="sam")
    body = bot.get(f"memories/{memory.pk}").body
    schema = openapi["paths"][f"{PREFIX}/memories/{{memory_id}}"]["get"]["responses"]["200"]["content"][JSON]["schema"]
    components = openapi["components"]["schemas"]
    assert violations(schema, components, body) == []

    assert violations(schema, components, {**body, "colour": "green"}) == [
        "(body): Additional properties are not allowed ('colour' was unexpected)"]
    assert violations(schema, components, {k: v for k, v in body.items() if k != "text"}) == [
        "(body): 'text' is a required property"]
    source = body["sources"][0]
    assert violations(schema, components, {**body, "sources": [{**source, "content": "I live in Porto."}]})
    assert violations(schema, components, {**body, "history": {**body["history"], "versions": [{}]}})
    assert violations(schema, components, {**body, "valid_from": "2025-03-10T12:00:00"}), "a time without a zone"
    assert violations(schema, components, {**body, "status": "forgotten"}), "a status outside the enum"
    assert violations(schema, components, {**body, "valid_to": None}) == [], "nullable"
    assert violations(schema, components, {**body, "valid_from": None}), "not nullable"


# --- the document itself -----------------------------------------------------------------------


def described_fields(schema: dict, where: str):
    for name, prop in schema.get("properties", {}).items():
        yield f"{where}.{name}", prop.get("description", "")


def test_every_operation_parameter_and_field_is_described(openapi):
    missing = []
    for method, path, operation in operations(openapi):
        where = f"{method.upper()} {path}"
        missing += [f"{where}: {part}" for part in ("summary", "description") if not operation.get(part)]
        missing += [f"{where}: parameter {parameter['name']}" for parameter in operation.get("parameters", [])
                    if not parameter.get("description")]
        for status, answer in operation["responses"].items():
            if not answer.get("description") or "content" not in answer:
                missing.append(f"{where}: answer {status}")
            elif answer["content"][JSON]["schema"] in ({}, {"type": "object", "additionalProperties": {}}):
                missing.append(f"{where}: answer {status} has no shape")
        missing += [f"{where}: error {status}" for status in ("401", "403", "404", "429", "500", "503")
                    if status not in operation["responses"]]
    for name, schema in openapi["components"]["schemas"].items():
        missing += [field for field, description in described_fields(schema, name) if not description]
    assert missing == []


MAIN_CALLS = [
    ("post", "/episodes", "202"), ("post", "/episodes", "201"), ("post", "/search", "200"), ("post", "/context", "200"),
    ("get", "/memories", "200"), ("get", "/memories/{memory_id}", "200"), ("delete", "/memories/{memory_id}", "200"),
    ("get", "/jobs/{job_id}", "200"), ("post", "/search", "400"), ("get", "/memories/{memory_id}", "404"),
]


def test_the_examples_have_the_documented_shapes(openapi):
    components = openapi["components"]["schemas"]
    checked = set()
    for method, path, operation in operations(openapi):
        request = operation.get("requestBody", {}).get("content", {}).get(JSON, {})
        for name, example in request.get("examples", {}).items():
            assert violations(request["schema"], components, example["value"]) == [], (method, path, name)
        for status, answer in operation["responses"].items():
            content = answer["content"][JSON]
            for name, example in content.get("examples", {}).items():
                assert violations(content["schema"], components, example["value"]) == [], (method, path, status, name)
                checked.add((method, path, status))
    assert set(MAIN_CALLS) <= checked, "the main calls show an example"
    assert all("examples" in operation["requestBody"]["content"][JSON]
               for _, _, operation in operations(openapi) if "requestBody" in operation), "every body has an example"
