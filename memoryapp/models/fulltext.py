"""The full-text index of memories and episodes: each row's words plus the lexemes of its scope.

A GIN index on the words alone answered a common word ("like", a user's name) with every row of the
table that has it, every user's, and the scope filter then threw nearly all of them away (~30 ms at
100k memories). Indexed with its scope's lexeme too, a search ANDs its words with the reader's scope
lexemes and GIN intersects the posting lists: only the scope's rows that match are fetched.

The lexemes are an accelerator, never the security boundary: selectors.scoping still filters every
row. They live in the index expression only, not in search_vector, so nothing shows them and the
ranking (ts_rank over search_vector) never sees them. A lexeme is "#" plus a letter plus 32 hex
digits: a query word is [a-z0-9]+ (selectors.search.query_terms), and the parser never keeps "#" in
a lexeme, so neither side can match the other.
"""

from __future__ import annotations

import uuid

from django.contrib.postgres.search import SearchVectorField
from django.db.models import F, Func


def scope_lexeme(kind: str, pk: uuid.UUID) -> str:
    """The lexeme of a scope key: kind "u" (a user's own rows), "p" (a project's), "o" (an organization's
    org-wide memories). As _lexeme builds it in SQL."""
    return f"#{kind}{pk.hex}"


def _lexeme(kind: str, column: str) -> str:
    return f"'#{kind}' || replace(({column})::text, '-', '')"


class ScopedSearchVector(Func):
    """search_vector || the row's scope lexeme, for the GIN index and the queries it answers (the two
    must compile to the same expression). Memories: a user or session memory carries its owner's, a
    project memory its project's, an org memory its organization's. Episodes: the user's."""

    output_field = SearchVectorField()

    def __init__(self, model: str):
        self.model = model
        columns = ["search_vector", "scope", "user_id", "project_id", "organization_id"]
        super().__init__(*(F(column) for column in (columns if model == "memory" else columns[:3:2])))

    def as_sql(self, compiler, connection, **extra_context):
        sqls, params = [], []
        for expression in self.get_source_expressions():
            sql, expression_params = compiler.compile(expression)
            sqls.append(sql)
            params.extend(expression_params)
        if self.model == "memory":
            words, scope, user, project, organization = sqls
            lexeme = (
                f"CASE {scope} WHEN 'project' THEN {_lexeme('p', project)} "
                f"WHEN 'org' THEN {_lexeme('o', organization)} ELSE {_lexeme('u', user)} END"
            )
        else:
            words, user = sqls
            lexeme = _lexeme("u", user)
        # COALESCE: array_to_tsvector refuses a NULL (a row whose key column is empty gets a lexeme no one has)
        return f"({words} || array_to_tsvector(ARRAY[COALESCE({lexeme}, '#')]))", params
