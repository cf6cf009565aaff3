"""Settings come from the environment; external servers replace the embedded ones."""

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from tests.conftest import database_url_for_other_processes

ROOT = Path(__file__).resolve().parent.parent


def run_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG"}}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "memoryapp.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_refuses_to_start_with_debug_off_and_the_default_secret(tmp_path):
    result = run_python(
        "import django; django.setup()",
        {"DEBUG": "false", "DATABASE_URL": "postgres://x@localhost/x", "REDIS_URL": "redis://localhost:1/0"},
    )
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr and "DEBUG is off" in result.stderr


def test_starts_with_debug_off_and_a_real_secret():
    result = run_python(
        "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)",
        {
            "DEBUG": "false",
            "SECRET_KEY": "x" * 50,
            "DATABASE_URL": "postgres://x@localhost/x",
            "REDIS_URL": "redis://localhost:1/0",
        },
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_external_servers_are_used_and_nothing_embedded_starts(tmp_path, db):
    data_dir = tmp_path / "data"
    code = (
        "import django; django.setup()\n"
        "from django.db import connection\n"
        "print(connection.settings_dict['NAME'])\n"
        "from memoryapp.celery import app\n"
        "print(app.conf.broker_url)\n"
    )
    result = run_python(
        code,
        {
            "DATABASE_URL": database_url_for_other_processes(),
            "REDIS_URL": settings.REDIS_URL,
            "MEMORYAPP_DATA_DIR": str(data_dir),
        },
    )
    assert result.returncode == 0, result.stderr
    database_name, broker = result.stdout.split()
    assert database_name.startswith("test_")
    assert broker == settings.REDIS_URL
    assert not (data_dir / "postgres").exists() and not (data_dir / "redis").exists()


def test_embedding_model_comes_from_the_environment():
    result = run_python(
        "import django; django.setup(); from memoryapp import embeddings; print(embeddings.model_path())",
        {
            "EMBEDDING_MODEL": "/models/my-minilm",
            "DATABASE_URL": "postgres://x@localhost/x",
            "REDIS_URL": "redis://localhost:1/0",
        },
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "/models/my-minilm"
