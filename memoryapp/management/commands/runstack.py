"""`make run`: migrate, seed the demo, then supervise the Celery worker, beat and the web server.

Children run in their own sessions so that Ctrl-C reaches only this supervisor, which then stops
them in order; they also die with it if it is killed outright (PR_SET_PDEATHSIG). A worker or beat
that dies is started again after a growing pause; the web server's exit stops everything (its own
master already restarts its workers, so an exit means it cannot serve at all, a port in use say).

The children serve with DEBUG off, under a random SECRET_KEY kept in the data folder (so sessions
survive a restart), and with cookies allowed over the plain http of a local run.
"""

import ctypes
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from memoryapp.demo import demo_seed

PR_SET_PDEATHSIG = 1
STOP_TIMEOUT_SECONDS = 20
ACCESS_LOG_FORMAT = '%(h)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms "%(a)s"'

RESTARTED = ("worker", "beat")
RESTART_MAX_DELAY_SECONDS = 30
STABLE_AFTER_SECONDS = 60  # a child that ran this long before dying starts its backoff again from the start


def _die_with_parent() -> None:
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def restart_delay(crashes_in_a_row: int) -> float:
    """Seconds to wait before starting a child again after its n-th crash in a row: 1, 2, 4 ... 30."""
    return float(min(RESTART_MAX_DELAY_SECONDS, 2 ** max(0, crashes_in_a_row - 1)))


def secret_key_for(data_dir: Path) -> str:
    """The data folder's own SECRET_KEY, made on first use and readable by its owner only."""
    path = data_dir / "secret_key"
    if not path.exists():
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(secrets.token_urlsafe(50))
    return path.read_text().strip()


def serving_environment(data_dir: Path) -> dict[str, str]:
    """What the children serve with, unless the environment says otherwise."""
    return {
        "DEBUG": os.environ.get("DEBUG", "0"),
        "SECRET_KEY": os.environ.get("SECRET_KEY") or secret_key_for(data_dir),
        "SECURE_COOKIES": os.environ.get("SECURE_COOKIES", "0"),  # http://127.0.0.1 would drop secure cookies
    }


class Command(BaseCommand):
    help = "Run the whole stack locally: web on PORT (default 8000), Celery worker and beat."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", 8000)))
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))

    def handle(self, *args, port, host, **options):
        self.stdout.write(f"data folder: {settings.DATA_DIR}")
        call_command("migrate", interactive=False, verbosity=0)
        credentials = demo_seed(password=os.environ.get("DEMO_PASSWORD") or None)
        if credentials:
            self.stdout.write(
                self.style.SUCCESS("\nDemo organization created. These credentials are shown only once:\n")
                + f"  dashboard user : {credentials.user} / {credentials.password}\n"
                + f"  org admin      : {credentials.admin} / {credentials.password}\n"
                + f"  agent API key  : {credentials.agent_key}\n"
            )
        self.stop_requested = False
        signal.signal(signal.SIGINT, self._request_stop)
        signal.signal(signal.SIGTERM, self._request_stop)

        # Children reach the servers this process attached to; they do not start their own.
        env = {**os.environ, "DATABASE_URL": settings.DATABASE_URL, "REDIS_URL": settings.REDIS_URL,
               **serving_environment(settings.DATA_DIR)}
        celery = [sys.executable, "-m", "celery", "-A", "memoryapp"]
        commands = {
            "worker": [
                *celery,
                "worker",
                "--loglevel=INFO",
                "--concurrency",
                os.environ.get("WORKER_CONCURRENCY", "1"),
                "--hostname",
                "worker@%h",
            ],
            "beat": [
                *celery,
                "beat",
                "--loglevel=INFO",
                "--schedule",
                settings.CELERY_BEAT_SCHEDULE_FILENAME,
                "--pidfile",
                str(settings.DATA_DIR / "celerybeat.pid"),
            ],
            "web": [
                sys.executable,
                "-m",
                "gunicorn",
                "memoryapp.wsgi",
                "--bind",
                f"{host}:{port}",
                "--workers",
                os.environ.get("WEB_CONCURRENCY", "1"),
                "--threads",
                "8",
                "--timeout",
                "120",
                "--access-logfile",
                "-",
                # The path without its query string (%(U)s, not %(r)s) and no referer: a `?q=` there
                # would put search text into the log.
                "--access-logformat",
                ACCESS_LOG_FORMAT,
            ],
        }
        def start(name: str) -> subprocess.Popen:
            started[name] = time.monotonic()
            return subprocess.Popen(commands[name], env=env, start_new_session=True, preexec_fn=_die_with_parent)

        started: dict[str, float] = {}
        children = {name: start(name) for name in commands}
        self.stdout.write(
            self.style.SUCCESS(f"\nmemoryapp is starting on http://{host}:{port}  (Ctrl-C stops everything)\n")
        )
        exit_code = 0
        crashes: dict[str, int] = dict.fromkeys(commands, 0)
        restart_at: dict[str, float] = {}
        while not self.stop_requested:
            now = time.monotonic()
            for name, child in children.items():
                if name in restart_at or child.poll() is None:
                    continue
                if name not in RESTARTED:
                    self.stderr.write(f"{name} exited unexpectedly (code {child.returncode}); stopping the rest")
                    exit_code = 1
                    break
                crashes[name] = 1 if now - started[name] >= STABLE_AFTER_SECONDS else crashes[name] + 1
                restart_at[name] = now + restart_delay(crashes[name])
                self.stderr.write(f"{name} exited unexpectedly (code {child.returncode}); restarting it in "
                                  f"{restart_delay(crashes[name]):.0f} s ({crashes[name]} in a row)")
            if exit_code:
                break
            for name, when in list(restart_at.items()):
                if now >= when:
                    del restart_at[name]
                    children[name] = start(name)
                    self.stdout.write(f"{name} restarted")
            time.sleep(0.5)
        self._stop(children)
        self.stdout.write("stopped.")
        if exit_code:
            sys.exit(exit_code)

    def _request_stop(self, signum, frame):
        self.stop_requested = True

    def _stop(self, children: dict[str, subprocess.Popen]) -> None:
        for child in children.values():
            if child.poll() is None:
                child.terminate()
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        for child in children.values():
            try:
                child.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
