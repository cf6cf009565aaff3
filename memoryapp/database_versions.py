"""The PostgreSQL and pgvector versions in use, and the one pgvector floor this service supports.

Read by /healthz (memoryapp.health), by the embedded server's start (memoryapp.embedded) and by a
database system check that `manage.py migrate` runs, so an external server with an old pgvector is
named before the app starts on it. Takes any DB-API cursor (Django's or psycopg's): embedded.py
runs before Django is configured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.core import checks

# halfvec (0.7) and HNSW iterative scans (0.8) are what the search path relies on.
PGVECTOR_FLOOR = (0, 8)
PGVECTOR_FLOOR_TEXT = ".".join(map(str, PGVECTOR_FLOOR))

_VERSIONS_SQL = """
    SELECT current_setting('server_version'),
           (SELECT extversion FROM pg_extension WHERE extname = 'vector'),
           (SELECT default_version FROM pg_available_extensions WHERE name = 'vector')
"""


def version_tuple(text: str) -> tuple[int, ...]:
    """'0.8.5' -> (0, 8, 5); '18.4 (Debian 18.4-1.pgdg120+1)' -> (18, 4); '19beta1' -> (19,)."""
    match = re.match(r"\d+(?:\.\d+)*", text.strip())
    return tuple(int(part) for part in match.group().split(".")) if match else ()


@dataclass(frozen=True)
class Versions:
    server: str  # PostgreSQL's server_version, e.g. "18.4"
    pgvector: str | None  # the extension's version in this database (None: not created here)
    pgvector_available: str | None  # what CREATE EXTENSION / ALTER EXTENSION UPDATE would install

    def pgvector_problem(self, *, created: bool = True) -> str | None:
        """What is wrong with pgvector here, in words an operator can act on (None: nothing).
        `created=False`: the extension may still be missing (migrations create it)."""
        floor = PGVECTOR_FLOOR_TEXT
        offered = self.pgvector_available is not None and version_tuple(self.pgvector_available) >= PGVECTOR_FLOOR
        install = "" if offered else f"install pgvector {floor} or later on the server, then "
        if self.pgvector is not None and version_tuple(self.pgvector) < PGVECTOR_FLOOR:
            return (
                f"pgvector {self.pgvector} is older than {floor}, the oldest this service supports: "
                f"{install}run ALTER EXTENSION vector UPDATE"
            )
        if self.pgvector is None and (created or not offered):
            found = f"offers pgvector {self.pgvector_available}" if self.pgvector_available else "has no pgvector"
            return f"this database has no vector extension and the server {found}: {install}run CREATE EXTENSION vector"
        return None


def read_versions(cursor) -> Versions:
    cursor.execute(_VERSIONS_SQL)
    return Versions(*cursor.fetchone())


@checks.register(checks.Tags.database)
def check_pgvector(app_configs=None, databases=None, **kwargs) -> list[checks.CheckMessage]:
    """Runs where Django runs database checks (`manage.py migrate`, `check --database default`)."""
    from django.db import connections

    errors = []
    for alias in databases or []:
        if connections[alias].vendor != "postgresql":
            continue
        with connections[alias].cursor() as cursor:
            problem = read_versions(cursor).pgvector_problem(created=False)
        if problem:
            errors.append(checks.Error(problem, id="memoryapp.E001", obj=f"database {alias!r}"))
    return errors
