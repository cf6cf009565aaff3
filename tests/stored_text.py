"""Where a piece of text is stored: every table of the test database, every column (JSON included)."""

from django.db import connection


def tables_containing(text: str) -> list[str]:
    """The tables with a row that holds `text` anywhere: a secret must be in none of them."""
    with connection.cursor() as cursor:
        found = []
        for table in connection.introspection.table_names(cursor):
            # The whole row as text: a column nobody thought of (a name, a JSON key) is searched too.
            cursor.execute(f'SELECT EXISTS (SELECT 1 FROM "{table}" AS t WHERE t::text LIKE %s)', [f"%{text}%"])
            if cursor.fetchone()[0]:
                found.append(table)
    return found
