import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def database_url_for_other_processes() -> str:
    """A URL for the test database that other processes (a real worker) can use."""
    params = connection.get_connection_params()
    host = params.get("host", "")
    port = params.get("port") or 5432
    name = connection.settings_dict["NAME"]
    user = params.get("user", "postgres")
    if host.startswith("/"):
        return f"postgresql://{user}@/{name}?host={host}"
    password = params.get("password", "")
    return f"postgresql://{user}:{password}@{host}:{port}/{name}"


def celery_worker_start(hostname: str, *options: str, env: dict | None = None, **popen) -> subprocess.Popen:
    """A real `celery worker` process with one child, on the test database and the test Redis.
    `options`: more worker options (a queue); `env`: more environment; `popen`: for subprocess.Popen."""
    environment = {
        **os.environ,
        "DATABASE_URL": database_url_for_other_processes(),
        "REDIS_URL": settings.REDIS_URL,
        "DJANGO_SETTINGS_MODULE": "memoryapp.settings",
        **(env or {}),
    }
    command = [sys.executable, "-m", "celery", "-A", "memoryapp", "worker", *options, "--concurrency", "1",
               "--loglevel", "WARNING", "--hostname", hostname, "--without-gossip", "--without-mingle"]
    return subprocess.Popen(command, cwd=ROOT, env=environment, **popen)


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker):
    """A real Celery worker process (not eager mode) on the test database and the test Redis."""
    from memoryapp.celery import app

    app.control.purge()
    with django_db_blocker.unblock():
        worker = celery_worker_start(f"test-{os.getpid()}@%h")
    deadline = time.monotonic() + 60
    while not app.control.ping(timeout=0.5):
        if worker.poll() is not None or time.monotonic() > deadline:
            worker.kill()
            raise RuntimeError("the test Celery worker did not come up")
    yield worker
    worker.terminate()
    worker.wait(30)


@pytest.fixture
def acme(db):
    from tests.factories import org

    return org("Acme")


@pytest.fixture
def globex(db):
    from tests.factories import org

    return org("Globex")


@pytest.fixture
def alice(acme):
    from tests.factories import make_user

    return make_user(acme, "alice")


@pytest.fixture
def bob(acme):
    from tests.factories import make_user

    return make_user(acme, "bob")


@pytest.fixture
def charlie(globex):
    from tests.factories import make_user

    return make_user(globex, "charlie")


@pytest.fixture
def acme_admin(acme):
    from tests.factories import make_user

    return make_user(acme, "ada", admin=True)


def database_dump() -> str:
    """A pg_dump of the test database (committed rows only: use with transactional_db)."""
    from memoryapp.embedded import postgres_bin

    result = subprocess.run(
        [str(postgres_bin() / "pg_dump"), "--data-only", database_url_for_other_processes()],
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


from tests.fake_llm import endpoint  # noqa: E402,F401  (the fake LLM endpoint fixture, for every test)
