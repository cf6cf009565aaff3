import pytest

from memoryapp.celery import app

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
