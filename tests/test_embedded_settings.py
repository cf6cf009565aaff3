"""The embedded PostgreSQL runs with the settings memoryapp gives it, those applied only at a start included:
a new data folder gets them on its first start, and a folder whose settings differ (made by an older
memoryapp, or changed by hand) gets them back on its next start."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from memoryapp import embedded

ROOT = Path(__file__).resolve().parent.parent

# A process's start of the server, as `make run` or `manage.py` does it (the last one stops it as it exits):
# prints the settings it runs with, then sets those given as arguments for the next start.
START = """
import json, sys
from pathlib import Path
import psycopg
from memoryapp import embedded
url = embedded.start(Path(sys.argv[1]), postgres=True, redis=False)["database"]
with psycopg.connect(url, autocommit=True) as conn:
    print(json.dumps({
        "shared_buffers": int(conn.execute("SELECT pg_size_bytes(current_setting('shared_buffers'))").fetchone()[0]),
        "wal_recycle": conn.execute("SHOW wal_recycle").fetchone()[0],
    }))
    for setting in sys.argv[2:]:
        conn.execute(f"ALTER SYSTEM SET {setting}")
"""


@pytest.fixture
def data_dir():
    path = Path(settings.DATA_DIR).parent / f"embedded-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    yield path
    embedded._stop_process(embedded._postmaster_pid(path / "postgres"), signal.SIGQUIT)
    shutil.rmtree(path, ignore_errors=True)


def start_in_a_new_process(data_dir: Path, *settings_for_next_start: str) -> dict:
    started = subprocess.run([sys.executable, "-c", START, str(data_dir), *settings_for_next_start], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    return json.loads(started.stdout.splitlines()[-1])


def test_the_server_starts_with_memoryapp_s_settings_and_gets_them_back_after_a_change(data_dir):
    buffers = embedded.POSTGRES_START_SETTINGS["shared_buffers"]
    expected = {"shared_buffers": int(buffers.removesuffix("MB")) * 2**20, "wal_recycle": "off"}
    assert expected["shared_buffers"] > 128 * 2**20  # more than PostgreSQL's default, or this test proves nothing

    # A new folder; then set as a folder of an older memoryapp has them
    assert start_in_a_new_process(data_dir, "shared_buffers = '128MB'", "wal_recycle = on") == expected
    assert start_in_a_new_process(data_dir) == expected
