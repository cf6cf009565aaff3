import re

import pytest

from memoryapp.celery import app
from memoryapp.database_versions import version_tuple

pytestmark = [pytest.mark.django_db, pytest.mark.worker]


@pytest.fixture
def broker_url(settings):
    """Point the health check's broker at another URL for one test."""
    original = app.conf.broker_url

    def use(url: str) -> None:
        app.conf.broker_url = url

    yield use
    app.conf.broker_url = original


def test_healthz_reports_every_part_when_all_are_up(client, celery_worker_process):
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ok" and body["failing"] == []
    assert body["database"]["vector_extension"].startswith("0.")
    assert body["broker"]["ok"] is True
    assert body["workers"]["live"], "the test worker answers pings"
    assert body["embedding_model"]["dimensions"] == 384


def test_healthz_is_503_and_names_the_broker_when_redis_is_unreachable(client, broker_url, tmp_path):
    broker_url(f"redis+socket://{tmp_path}/nothing-listens-here.sock")
    response = client.get("/healthz")
    assert response.status_code == 503
    assert "broker" in response.json()["failing"]
    assert response.json()["database"]["ok"] is True


@pytest.fixture
def control_exchange_without_workers():
    """Broadcast pings on an exchange no worker is bound to (the broker itself stays up)."""
    original = app.conf.control_exchange
    app.conf.control_exchange = "nobody-listens"
    app.__dict__.pop("control", None)  # Celery caches the mailbox with the exchange name
    yield
    app.conf.control_exchange = original
    app.__dict__.pop("control", None)


def test_healthz_is_503_and_names_workers_when_none_listens(client, control_exchange_without_workers):
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["failing"] == ["workers"]


def test_healthz_is_503_when_the_embedding_model_is_missing(client, settings, tmp_path):
    settings.EMBEDDING_MODEL = str(tmp_path / "no-model-here")
    response = client.get("/healthz")
    assert response.status_code == 503
    assert "embedding_model" in response.json()["failing"]


def test_healthz_reports_the_postgresql_and_pgvector_versions(client):
    database = client.get("/healthz").json()["database"]
    assert database["ok"] is True
    assert re.fullmatch(r"PostgreSQL \d+\.\d+.*", database["server"]), database
    assert version_tuple(database["vector_extension"]) >= (0, 8), database


@pytest.fixture
def pgvector_left_at_0_7():
    """The catalog of a database whose extension was never updated past 0.7.4 (rolled back with the test)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("UPDATE pg_extension SET extversion = '0.7.4' WHERE extname = 'vector'")


def test_healthz_is_503_and_says_so_when_pgvector_is_older_than_0_8(client, pgvector_left_at_0_7):
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert "database" in body["failing"]
    assert body["database"]["vector_extension"] == "0.7.4"
    assert "pgvector 0.7.4 is older than 0.8" in body["database"]["error"]
    assert "ALTER EXTENSION vector UPDATE" in body["database"]["error"]


def test_migrate_stops_on_a_database_whose_pgvector_is_older_than_0_8(pgvector_left_at_0_7):
    from django.core import checks

    errors = checks.run_checks(databases=["default"], tags=[checks.Tags.database])
    assert [error.id for error in errors] == ["memoryapp.E001"]
    assert "pgvector 0.7.4 is older than 0.8" in errors[0].msg and errors[0].is_serious()
