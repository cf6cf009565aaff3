"""`make run`: migrate, seed the demo, then supervise the Celery worker, beat and the web server.

Children run in their own sessions so that Ctrl-C reaches only this supervisor, which then stops
them in order; they also die with it if it is killed outright (PR_SET_PDEATHSIG).
"""

import ctypes
import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from memoryapp.services.demo import demo_seed

PR_SET_PDEATHSIG = 1
STOP_TIMEOUT_SECONDS = 20


def _die_with_parent() -> None:
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


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
        env = {**os.environ, "DATABASE_URL": settings.DATABASE_URL, "REDIS_URL": settings.REDIS_URL}
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
            ],
        }
        children = {
            name: subprocess.Popen(cmd, env=env, start_new_session=True, preexec_fn=_die_with_parent)
            for name, cmd in commands.items()
        }
        self.stdout.write(
            self.style.SUCCESS(f"\nmemoryapp is starting on http://{host}:{port}  (Ctrl-C stops everything)\n")
        )
        exit_code = 0
        while not self.stop_requested:
            crashed = [name for name, child in children.items() if child.poll() is not None]
            if crashed:
                self.stderr.write(f"{', '.join(crashed)} exited unexpectedly; stopping the rest")
                exit_code = 1
                break
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
