"""The read path: scoped, time-aware hybrid search over memories and episodes."""

from __future__ import annotations

import contextlib
import functools
import json
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np
from django.conf import settings
from django.contrib.postgres.search import SearchQuery
from django.db import connection
from django.db.models import BinaryField, BooleanField, F, Func, OuterRef, QuerySet, Subquery, Value
from django.utils import timezone
from pgvector import HalfVector
from pgvector.django import CosineDistance
from psycopg import Pipeline

from memoryapp import embeddings
from memoryapp.actors import Principal
from memoryapp.models import Episode, Memory, Project, User
from memoryapp.models.fulltext import ScopedSearchVector, scope_lexeme
from memoryapp.selectors import ranking
from memoryapp.selectors.questions import (
    NAME_SLOTS,
    NameNeutral,
    about_someone_else,
    about_the_user_alone,
    about_them_all,
    asked_words,
    asks_their_names,
    asks_who,
    mentions,
    name_words,
    names_someone,
    people_asked_about,
    subject_names,
    third_person,
    words_shared,
)
from memoryapp.selectors.ranking import (
    RRF_K,
    Scored,
    Weights,
    maximal_marginal_relevance,
    recency,
    reciprocal_rank_fusion,
    relevance_first,
)
from memoryapp.selectors.scoping import (
    ALL_SCOPES,
    memories_of_parts,
    require_reading,
    scoped_episodes,
    scoped_memory_parts,
    valid_at,
)
from memoryapp.services.extract import classifier
from memoryapp.services.extract.grammar import addressed
from memoryapp.services.extract.lexicon import SLOTS

MAX_QUERY_TERMS = 32
# A memory's relevance is its cosine to the question plus KIND_WEIGHT times how likely it is of the kind of fact the
# question asks about (kind_weighed): "What's my job?" and "Marisol is a sommelier at a little wine bar in Lyon."
# share few words but one kind. Chosen with SEARCH_MIN_RELEVANCE on the dev question set, the question head and the
# family model cross-fitted by user (bench/question_kinds.py): recall@1 0.876 -> 0.886, wrong abstention 4.8% ->
# 4.9%, correct abstention 0.751 -> 0.827 (before: the cosine alone, floor 0.32). Weights 0.4 to 0.8 came within a
# point of each other at their best floors; 0.6 is what a logistic model over cosine and kind gave.
KIND_WEIGHT = 0.6
# ...plus WORDS_WEIGHT times how far the share of the question's own words (questions.asked_words) the memory has
# is above WORDS_EXPECTED: a word said back is evidence the vectors blur ("what do I do on Thursdays?" is as near to
# "...volunteers at the food bank on Saturday mornings." as to "...play five-a-side every Thursday."). Chosen on the
# dev question set at the floor kept (SEARCH_MIN_RELEVANCE), from the ranked answers of every ask: weights 0.15 to
# 0.25 and shares 0 to 0.2 traded recall for abstention. `evaluate questions --split dev`: recall@1 92.5% -> 93.5%,
# wrong abstention 3.0% -> 2.6%, correct abstention 85.0% -> 85.7%.
WORDS_WEIGHT = 0.2
# How much of a slotted memory's kind is its slot's (kind_weighed). Dev question set, replayed from every ask's
# ranked answers at the floor kept: 0.25 gave recall@1 93.4% -> 93.8%, wrong abstention 2.8% -> 2.4%, correct
# abstention 88.7% -> 88.6%; 0.5 to 1 gained no more recall and lost up to 0.9 points of correct abstention
# (raising the floor to win it back cost the changing-facts benchmark a point on dev).
SLOT_WEIGHT = 0.25
WORDS_EXPECTED = 0.1
# A question about one of the user's people ("what's my mum's name?") asks nothing about another of them ("Sam's
# sister's name is Leah.", cosine 0.54), nor about the user's own slots ("Mia is the user's name."): such a memory's
# relevance is lowered by this much (questions.about_someone_else). Dev question set: correct abstention 85.7% ->
# 87.5% (other people) -> 88.7% (the user's own slots), recall@1 93.5% -> 93.3%, wrong abstention 2.6% -> 2.8%
# (0.2 and 1 gave the same; what is lost is mostly a fact written under the wrong person or slot).
SOMEONE_ELSE_PENALTY = 1.0
# A name memory ("Sam's sister's name is Ana.") tells a question that does not ask who someone is nothing more than
# that it names them: "where does my sister Ana live?" got it above "Sam's sister Ana is a dentist in Pune". Its
# relevance is lowered by this much (questions.asks_who). Dev question set, replayed from every ask's ranked
# answers: recall@1 93.3% -> 93.4%, correct abstention 88.6% -> 88.7%, wrong abstention unchanged (0.1 to 1 gave
# the same; 0.05 half of it). 0.2 since the thirty-first session's retrained question head, which put "what does my
# brother Tomas do?" as near to the name memory's kind as to the job's (0.1 then left the name 0.001 ahead).
NAME_ONLY_PENALTY = 0.2
# A memory that names nobody but the user cannot say what one of their people is called: "what's my mum's name?" got
# "Sam's mother is turning 90 in May." Its relevance is lowered by this much (questions.asks_their_names,
# names_someone). Dev question set, replayed: correct abstention +4 of 1,008 at 0.1 (0.05 half of it, 0.2 the same),
# recall@1 and wrong abstention unchanged.
NAMELESS_PENALTY = 0.1
SCORE_DIGITS = 6  # of the scores and their components shown
# Raw turns: one leg often has the answer at its very top (a rare word matched, or a paraphrase
# the words miss) while the other is noise there. A small fusion constant keeps each leg's first
# few ranks ahead of both legs' middling agreement. The four episode tunables were chosen by leaving
# one LoCoMo dev conversation out (bench/locomo_loo.py: every fold chose these on the other two;
# held-out evidence recall@5 0.643 and @10 0.742 on average, against 0.598 / 0.712 at 5, 1.0, the
# memories' pool, no neighbours).
EPISODE_RRF_K = 5
EPISODE_LEXICAL_WEIGHT = 1.5  # the word leg's weight in the episodes' fusion (the meaning leg's: 1)
EPISODE_NEIGHBOUR_WEIGHT = 0.6  # the share of a turn's fused score its neighbours get (_with_neighbours)
EPISODE_POOL: int | None = 100  # candidates per leg (None: as for memories, _search)


@dataclass(frozen=True)
class SearchParams:
    query: str
    k: int = 5
    scopes: tuple[str, ...] = ALL_SCOPES
    session: str = ""
    project: Project | None = None
    as_of: datetime | None = None
    known_at: datetime | None = None
    # the least score a result may have (abstention); the score's scale: relevance_first
    min_score: float | None = None
    mmr_lambda: float | None = None
    weights: Weights | None = None
    include_archived: bool = False


@dataclass
class Hit:
    item: Memory | Episode
    score: float
    components: dict = field(default_factory=dict)


@dataclass
class SearchResult:
    hits: list[Hit]
    abstained: bool
    took_ms: float
    # what the hits are ordered by: "score" (memories), or "fused" (episodes: the rank fusion of the
    # meaning and word legs, shown as components["fused"]; `score` is then the relevance alone)
    ordered_by: str = "score"
    searched_as: str = ""  # the query as searched (first person rewritten)


@dataclass
class Legs:
    """The two candidate rankings of a scope, best first: (id, cosine) by meaning, ids by words; and
    the query's vector they were found with."""

    dense: list[tuple[object, float]]
    lexical: list[object]
    vector: np.ndarray


def query_terms(query: str, *, without: set[str] = frozenset()) -> list[str]:
    """The query's search words, less `without` (the user's name: every memory of theirs has it)."""
    return [term for term in re.findall(r"[a-z0-9]+", query.lower()) if term not in without][:MAX_QUERY_TERMS]


@dataclass(frozen=True)
class ScopeLexemes:
    """The scope lexemes (models.fulltext) of every row a search may read, or more: the full-text index
    is probed for each query word AND any of them. `member_of`: a user whose projects' lexemes join
    `lexemes` (looked up in the same query)."""

    lexemes: tuple[str, ...]
    member_of: uuid.UUID | None = None


def _any_term(terms: list[str]) -> SearchQuery:
    """Any of the terms may match; stop words drop out (to_tsquery makes them empty)."""
    return SearchQuery(" | ".join(terms), search_type="raw", config="english")


# A word most of a large scope shares ("like", a name) once had every row holding it ranked (~100 ms
# at 100k memories) for a weight near nothing. Each term now brings at most this many rows: a rare
# term brings all of its rows, and a row a common term alone brings is at best noise. No term of a
# LoCoMo dev conversation reaches it (the most common, a speaker's name, is in 550 of 663 turns), so
# their ranking is unchanged.
LEXICAL_ROWS_PER_TERM = 1000

# The full-text ranking over a CTE `capped (id, search_vector, tsq)`: for each query term (`terms`),
# up to LEXICAL_ROWS_PER_TERM rows of the scope that match it. Each matched term counts by ts_rank
# times its rarity (BM25's inverse document frequency), so a word most rows share, such as a
# speaker's or the user's name, cannot outrank a rare one. Rarity is taken among the matched rows,
# not the whole scope: that needs no second pass over a large scope and ranked LoCoMo evidence the
# same (recall@5 0.601 against 0.602). Parameters: the limit.
_TERMS_CTE = (  # parameter: the terms (text[]); stop words drop out (to_tsquery makes them empty)
    "terms AS (SELECT DISTINCT tsq FROM (SELECT to_tsquery('english', term) AS tsq FROM unnest(%s::text[]) AS term) "
    "  AS parsed WHERE numnode(tsq) > 0)"
)
_LEXICAL_CTES = (
    "hits AS MATERIALIZED (SELECT id, tsq, ts_rank(search_vector, tsq) AS tf FROM capped), "
    "df AS MATERIALIZED (SELECT tsq, count(*)::float8 AS n FROM hits GROUP BY tsq), "
    "total AS MATERIALIZED (SELECT count(DISTINCT id)::float8 AS n FROM hits), "
    "best AS (SELECT hits.id, sum(ln(1 + (total.n - df.n + 0.5) / (df.n + 0.5)) * hits.tf) AS weight "
    "  FROM hits JOIN df USING (tsq) CROSS JOIN total GROUP BY hits.id ORDER BY weight DESC, hits.id LIMIT %s), "
    "lexical AS (SELECT id, row_number() OVER (ORDER BY weight DESC, id) AS position FROM best)"
)


def _sql(querysets: list[QuerySet], *fields) -> tuple[str, list]:
    """The rows of the querysets (disjoint: the parts of one scope) as one UNION ALL select of `fields`."""
    # not the model's default ordering: it would sort the whole scope for nothing
    selects = [queryset.order_by().values(*fields).query.sql_with_params() for queryset in querysets]
    return " UNION ALL ".join(sql for sql, _ in selects), [param for _, params in selects for param in params]


class _ExactCosineDistance(CosineDistance):
    """`<=>` in its function form, which no HNSW index can answer: the planner has to read the scope
    exactly, and keeps only the best rows while it reads (a top-N sort, no table of every distance)."""

    function = "cosine_distance"
    arg_joiner = ", "


def _dense_scan(parts: list[QuerySet], vector: np.ndarray, limit: int, column: str) -> list[tuple[object, float]]:
    """Exact cosine over the scope, read part by part (see scoping.scoped_memory_parts): a user's part
    is then an index-only scan of memory_owner_search, where the parts joined by OR must visit the table.
    Exact means k results whenever the scope holds k, whatever the store's size."""
    if not parts:
        return []
    distances = [part.annotate(distance=_ExactCosineDistance(column, HalfVector(vector))) for part in parts]
    sql, params = _sql(distances, "id", "distance")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, 1 - distance FROM ({sql}) scoped ORDER BY distance, id LIMIT %s", [*params, limit]
        )
        # rows without a vector sort last, so they come back only where the scope has fewer than `limit` with one
        return [(pk, float(cosine)) for pk, cosine in cursor.fetchall() if cosine is not None]


def _lexical_scan(parts: list[QuerySet], terms: list[str], limit: int) -> tuple[str, list]:
    """The full-text leg of a small scope (SQL and parameters), matched row by row over the scope's parts.
    ts_match_vq is the @@ operator in a form the planner cannot answer from the GIN index, which for a
    common word (a name) would fetch every row of the organization that has it."""
    matches = Func(F("search_vector"), _any_term(terms), function="ts_match_vq", output_field=BooleanField())
    sql, params = _sql([part.filter(matches) for part in parts], "id", "search_vector")
    query = (
        f"WITH {_TERMS_CTE}, matched AS MATERIALIZED ({sql}), "
        "capped AS (SELECT found.id, found.search_vector, terms.tsq FROM terms CROSS JOIN LATERAL "
        "  (SELECT id, search_vector FROM matched WHERE search_vector @@ terms.tsq LIMIT %s) AS found), "
        f"{_LEXICAL_CTES} SELECT id FROM lexical ORDER BY position"
    )
    return query, [terms, *params, LEXICAL_ROWS_PER_TERM, limit]


def _estimated_rows(queryset: QuerySet) -> float:
    """The planner's estimate of a queryset's rows: ~1.5 ms, where counting a large scope costs as much
    as searching it. It only picks the path; results never depend on it."""
    plan = json.loads(queryset.order_by().explain(format="json"))
    return float(plan[0]["Plan"]["Plan Rows"])


SCOPE_SIZE_SECONDS = 60.0  # how long a scope's size estimate is reused
_scope_sizes: dict[tuple, tuple[float, float]] = {}  # scope key: (monotonic time taken, estimated rows)


def _scope_rows(queryset: QuerySet, key: tuple | None) -> float:
    """_estimated_rows, reused for SCOPE_SIZE_SECONDS per scope `key` (None: not reused). A scope's size
    moves slowly against the threshold, and a stale estimate costs speed only: either path gives k."""
    if key is None:
        return _estimated_rows(queryset)
    now = time.monotonic()
    taken, rows = _scope_sizes.get(key, (-SCOPE_SIZE_SECONDS, 0.0))
    if now - taken >= SCOPE_SIZE_SECONDS:
        if len(_scope_sizes) >= 10_000:  # bounded: a long-lived worker sees many users
            _scope_sizes.clear()
        rows = _estimated_rows(queryset)
        _scope_sizes[key] = (now, rows)
    return rows


def _dense_approximate(queryset: QuerySet, vector: np.ndarray, limit: int, column: str) -> list[tuple[object, float]]:
    """HNSW for large scopes. The graph is walked before the scope's filter applies; pgvector's iterative
    scan (hnsw.iterative_scan, set for every connection in settings.DATABASES) keeps walking until `limit`
    rows of the scope have come, up to hnsw.max_scan_tuples visited. In relaxed order: sorted here."""
    rows = (
        queryset.annotate(distance=CosineDistance(column, HalfVector(vector)))
        .order_by("distance")
        .values_list("id", "distance")[:limit]
    )
    return sorted(((pk, 1 - float(distance)) for pk, distance in rows), key=lambda row: -row[1])


def _scope_query(lexemes: ScopeLexemes) -> tuple[str, list]:
    """The tsquery "any of the scope's lexemes" (SQL and parameters). NULL when there are none: then
    nothing matches, as the scope holds nothing."""
    members = Project.members.through._meta.db_table
    return (
        f"(SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery FROM unnest(%s::text[] || ARRAY("
        f"  SELECT '#p' || replace(project_id::text, '-', '') FROM {members} WHERE user_id = %s)) AS lexeme)"
    ), [list(lexemes.lexemes), lexemes.member_of]


def _lexical_indexed(
    queryset: QuerySet, terms: list[str], limit: int, lexemes: ScopeLexemes | None = None
) -> tuple[str, list]:
    """The full-text leg through the GIN index: each term's rows of the scope, a common term's stopping
    at LEXICAL_ROWS_PER_TERM. With `lexemes`, the index is probed for the term AND the scope's lexemes,
    so only the scope's rows are fetched (at 100k memories a common word's probe fetched every user's
    rows that have it). The scope's own filter still applies to every row; ts_rank reads search_vector,
    which has no scope lexemes."""
    indexed = ScopedSearchVector(queryset.model._meta.model_name)
    probe = "%(expressions)s @@ probes.probe"
    if lexemes is not None:
        # Stated twice, for the planner: it cannot see a probe computed in the query and assumes 0.5% of
        # the table match it (1,500 rows of 300k), so it ANDed the probe with a bitmap of the owner's
        # every row from their btree index (100k entries: ~6 ms per word). Twice, it multiplies the two
        # estimates and trusts the probe alone; the index answers both at once. 100k memories: this
        # leg 27 -> 10 ms p50, the same rankings.
        probe = f"({probe} AND {probe})"
    matches_probe = Func(indexed, template=probe, output_field=BooleanField())
    sql, params = _sql([queryset.filter(matches_probe)], "id", "search_vector")
    probes, probe_params = "probes AS (SELECT tsq, tsq AS probe FROM terms)", []
    if lexemes is not None:
        scope_sql, probe_params = _scope_query(lexemes)
        probes = f"probes AS (SELECT terms.tsq, terms.tsq && {scope_sql} AS probe FROM terms)"
    query = (
        f"WITH {_TERMS_CTE}, {probes}, "
        "capped AS (SELECT found.id, found.search_vector, probes.tsq FROM probes "
        f"  CROSS JOIN LATERAL ({sql} LIMIT %s) AS found), "
        f"{_LEXICAL_CTES} SELECT id FROM lexical ORDER BY position"
    )
    return query, [terms, *probe_params, *params, LEXICAL_ROWS_PER_TERM, limit]


def _while_computing(query: tuple[str, list] | None, compute: Callable[[], np.ndarray]) -> tuple[list, np.ndarray]:
    """Runs `query` on the server while `compute()` (the query's embedding) runs here, and returns both
    results: in pipeline mode the query is sent without waiting for its rows. On two cores the ~9 ms
    embedding then costs nothing next to the full-text leg. (A thread would fight the database calls
    for the GIL: both slowed down.)"""
    if query is None:
        return [], compute()
    with connection.cursor() as cursor:
        with cursor.connection.pipeline() if Pipeline.is_supported() else contextlib.nullcontext():
            cursor.execute(*query)
            computed = compute()
            rows = cursor.fetchall()
    return rows, computed


def candidate_legs(
    queryset: QuerySet,
    embed: Callable[[], np.ndarray],
    terms: list[str],
    limit: int,
    *,
    parts: list[QuerySet] | None = None,
    scope_key: tuple | None = None,
    lexemes: ScopeLexemes | None = None,
    column: str = "embedding",
) -> Legs:
    """Up to `limit` candidates per leg; the dense leg never has fewer than `limit` when the scope holds
    that many. Scopes the planner expects to hold up to SEARCH_EXACT_MAX_ROWS rows are read exactly;
    larger ones use the HNSW and full-text indexes, with an exact pass when HNSW comes back short.

    `embed`: gives the query's vector, computed while the full-text leg runs. `parts`: the same rows as
    `queryset`, as disjoint querysets (scoping.scoped_memory_parts), which exact passes read one by one.
    `scope_key`: names the scope, so that its size estimate is reused for a while (_scope_rows).
    `lexemes`: the scope's lexemes in the full-text index; with them the word leg reads the index at
    any scope size, without them only above the threshold (a common word would bring every user's rows).
    `column`: the vectors compared (memories are searched by search_embedding)."""
    if queryset.query.is_empty():  # no scope asked for
        return Legs(dense=[], lexical=[], vector=embed())
    parts = parts if parts is not None else [queryset]
    exact = _scope_rows(queryset, scope_key) <= settings.SEARCH_EXACT_MAX_ROWS
    lexical_query = None
    if terms:
        if exact and lexemes is None:
            lexical_query = _lexical_scan(parts, terms, limit)
        else:
            lexical_query = _lexical_indexed(queryset, terms, limit, lexemes)
    rows, vector = _while_computing(lexical_query, embed)
    lexical = [row[0] for row in rows]
    if exact:
        return Legs(dense=_dense_scan(parts, vector, limit, column), lexical=lexical, vector=vector)
    dense = _dense_approximate(queryset, vector, limit, column)
    if len(dense) < limit:  # the iterative scan's budget ran out first: the scope is a small share of the table
        dense = _dense_scan(parts, vector, limit, column)
    return Legs(dense=dense, lexical=lexical, vector=vector)


def dense_ranking(queryset: QuerySet, vector: np.ndarray, limit: int) -> list[tuple[object, float]]:
    """(id, cosine) best first; never fewer than `limit` when the scope holds that many."""
    return candidate_legs(queryset, lambda: vector, [], limit).dense


def _vector_from_binary(data) -> np.ndarray | None:
    """halfvec's binary form (int16 dimensions, int16 unused, big-endian float2s), as a unit vector.
    Parsing the text form of 384 floats per row cost more than the whole database part of a search."""
    if data is None:
        return None
    vector = np.frombuffer(data, dtype=">f2", offset=4).astype(np.float32)
    return vector / (np.linalg.norm(vector) or 1.0)


@dataclass(frozen=True)
class _Question:
    """A query as the search reads it: the text embedded, its search words, the names whose direction
    carries no relevance (questions.NameNeutral), the query as shown back (`searched_as`), and whether it
    asks for everything about the user (questions.about_them_all: nothing to abstain from). `others_of`: when
    the question is about the user alone (questions.about_the_user_alone), how the subjects of memories about
    their people start ("sam's "); no fact about them is then of the kind the question asks for."""

    text: str
    terms: list[str]
    neutral: NameNeutral
    shown: str
    about_them_all: bool = False
    others_of: str = ""
    asked: frozenset[str] = frozenset()
    people: frozenset[str] = frozenset()
    asks_who: bool = True
    names_asked: bool = False  # what one of the user's people is called (questions.asks_their_names)
    user_names: tuple[str, ...] = ()


def _question(query: str, user: User | None, *, memories: bool) -> _Question:
    """Memories are compared by their texts addressed to the user (Memory.search_embedding), and so is the
    question, whoever it names the user by: "where do I live?", "Where does Sam live?" and "Where does the
    user live?" are all embedded as "where does you live?". Episodes are the user's own words, searched
    as written; the user's names, when the question has them, carry no relevance (NameNeutral)."""
    none = NameNeutral.of(())
    if user is None:  # across users: no one's names to take out
        terms = query_terms(query)
        return _Question(text=addressed(query, ()) if memories else query, terms=terms, neutral=none, shown=query,
                         asked=asked_words(terms) if memories else frozenset())
    names = subject_names(user)
    if memories:
        said = third_person(query, names[0])
        terms = query_terms(said, without=name_words(names))
        people = people_asked_about(query, names)
        return _Question(text=addressed(said, names), terms=terms, neutral=none, shown=said,
                         about_them_all=about_them_all(query, names), asked=asked_words(terms),
                         people=people, asks_who=asks_who(query), names_asked=asks_their_names(query, people),
                         user_names=names,
                         others_of=f"{user.external_id.lower()}'s " if about_the_user_alone(query, names) else "")
    # Episodes name the user seldom: their names are taken out only when the question names them.
    neutral = NameNeutral.of(names) if mentions(query, names) else none
    return _Question(text=query, terms=query_terms(query, without=name_words(names)), neutral=neutral, shown=query)


def _search(
    queryset: QuerySet,
    params: SearchParams,
    question: _Question,
    started: float,
    *,
    last_used: str,
    importance: str | None,
    default_weights: Weights,
    rrf_k: int = RRF_K,
    lexical_weight: float = 1.0,
    pool: int | None = None,
    expand: Callable[[dict], dict] | None = None,
    order_by_fusion: bool = False,
    parts: list[QuerySet] | None = None,
    scope_key: tuple | None = None,
    lexemes: ScopeLexemes | None = None,
    column: str = "embedding",
    kinds: bool = False,
) -> SearchResult:
    """`started`: the search's perf_counter start. `last_used` and `importance` name the columns behind
    recency and importance (None: no importance). `parts`, `scope_key`, `lexemes` and `column`: as in
    candidate_legs.
    `order_by_fusion`: rank by the fusion of the two legs (episodes), not by score (memories).
    `lexical_weight`: the word leg's weight in the fusion, the meaning leg's being 1. `pool`: candidates
    per leg (at least 4k and SEARCH_CANDIDATES). `expand`: takes the fused scores, gives them back with
    more candidates (_with_neighbours). `kinds`: the relevance weighs in what kind of fact each candidate is
    (kind_weighed; memories, whose texts and plain vectors are then read too)."""
    pool = max(pool or 0, params.k * 4, settings.SEARCH_CANDIDATES)
    legs = candidate_legs(
        queryset, lambda: question.neutral(embeddings.encode_one(question.text)), question.terms, pool, parts=parts,
        scope_key=scope_key, lexemes=lexemes, column=column,
    )
    vector = legs.vector
    fused = reciprocal_rank_fusion([pk for pk, _ in legs.dense], legs.lexical, k=rrf_k, weights=(1.0, lexical_weight))
    if expand is not None:
        fused = expand(fused)
    # Every fused id came out of `queryset`, so the rows are fetched by primary key alone: repeating
    # the scope's filter here made the planner intersect it with the key lookup (2 ms for nothing).
    # Only what scoring needs is read for all candidates; whole rows only for the hits.
    model = queryset.model
    columns = model.objects.filter(pk__in=list(fused)).values_list(
        "pk",
        last_used,
        importance or Value(0.0),
        Func(F(column), function="halfvec_send", output_field=BinaryField()),
        *(("text", Func(F("embedding"), function="halfvec_send", output_field=BinaryField()), "subject", "attribute")
          if kinds else ()),
    )
    facts, written, someone_else, name_only, nameless = {}, {}, set(), set(), set()
    for pk, used, weight, data, *as_written in columns:
        stored = _vector_from_binary(data)
        facts[pk] = (used, float(weight), None if stored is None else question.neutral(stored))
        # "how old am I?" asks nothing about "Sam's son is 7 years old.", of the kind though it is
        if as_written and not (question.others_of and as_written[2].startswith(question.others_of)):
            written[pk] = (as_written[0], _vector_from_binary(as_written[1]), as_written[3])
        if as_written and about_someone_else(question.people, subject=as_written[2], attribute=as_written[3],
                                             text=as_written[0]):
            someone_else.add(pk)
        if as_written and not question.asks_who and as_written[3] in NAME_SLOTS:
            name_only.add(pk)
        if as_written and question.names_asked and not names_someone(as_written[0], question.user_names):
            nameless.add(pk)
    # A row without a vector (an episode stored before ingest embedded) has no cosine: its word match is the evidence.
    cosine = {pk: None if fact[2] is None else float(fact[2] @ vector) for pk, fact in facts.items()}
    kind = kind_weighed(vector, written)
    words = {pk: words_shared(question.asked, text) for pk, (text, *_) in written.items()} if question.asked else {}
    min_score = settings.SEARCH_MIN_RELEVANCE if params.min_score is None else params.min_score
    if question.about_them_all and params.min_score is None:
        min_score = -1.0
    now = timezone.now()
    candidates = [
        Scored(
            key=pk,
            # found by a rare word alone: relevant
            relevance=1.0 if cosine[pk] is None else (
                cosine[pk] + KIND_WEIGHT * kind.get(pk, 0.0)
                + (WORDS_WEIGHT * (words.get(pk, 0.0) - WORDS_EXPECTED) if question.asked and kinds else 0.0)
                - (SOMEONE_ELSE_PENALTY if pk in someone_else else 0.0)
                - (NAME_ONLY_PENALTY if pk in name_only else 0.0)
                - (NAMELESS_PENALTY if pk in nameless else 0.0)),
            recency=recency((now - facts[pk][0]).total_seconds() / 3600, settings.SEARCH_RECENCY_DECAY),
            importance=facts[pk][1],
        )
        for pk in fused  # fused order, so that ties stay deterministic
        if pk in facts
    ]
    # compared as shown (rounded), so that a result's own score given as min_score keeps it
    ranked = [c for c in relevance_first(candidates, params.weights or default_weights)
              if round(c.score, SCORE_DIGITS) >= min_score]
    if order_by_fusion:
        ranked.sort(key=lambda c: fused[c.key], reverse=True)
    mmr_lambda = settings.SEARCH_MMR_LAMBDA if params.mmr_lambda is None else params.mmr_lambda
    unembedded = np.zeros_like(vector)  # similar to nothing: never counted as redundant
    vectors = {pk: unembedded if fact[2] is None else fact[2] for pk, fact in facts.items()}
    picked = maximal_marginal_relevance(ranked, vectors, k=params.k, lambda_=mmr_lambda)
    if order_by_fusion:
        picked.sort(key=lambda c: fused[c.key], reverse=True)
    items = model.objects.in_bulk([c.key for c in picked])
    dense_rank = {pk: rank for rank, (pk, _) in enumerate(legs.dense, start=1)}
    lexical_rank = {pk: rank for rank, pk in enumerate(legs.lexical, start=1)}
    hits = [
        Hit(
            item=items[c.key],
            score=round(c.score, SCORE_DIGITS),
            components={
                "relevance": round(c.relevance, SCORE_DIGITS),
                "cosine": None if cosine[c.key] is None else round(cosine[c.key], SCORE_DIGITS),
                **({"kind": round(kind[c.key], SCORE_DIGITS)} if c.key in kind else {}),
                **({"words": round(words[c.key], SCORE_DIGITS)} if c.key in words else {}),
                **({"someone_else": -SOMEONE_ELSE_PENALTY} if c.key in someone_else else {}),
                **({"name_only": -NAME_ONLY_PENALTY} if c.key in name_only else {}),
                **({"nameless": -NAMELESS_PENALTY} if c.key in nameless else {}),
                "fused": round(fused[c.key], SCORE_DIGITS),
                "dense_rank": dense_rank.get(c.key),
                "lexical_rank": lexical_rank.get(c.key),
                "recency": round(c.recency, SCORE_DIGITS),
                "importance": c.importance,
                "scaled": {name: round(value, SCORE_DIGITS) for name, value in c.scaled.items()},
            },
        )
        for c in picked
    ]
    return SearchResult(
        hits=hits, abstained=not hits, took_ms=round((time.perf_counter() - started) * 1000, 2),
        ordered_by="fused" if order_by_fusion else "score", searched_as=question.shown,
    )


def kind_weighed(question_vector: np.ndarray, written: dict) -> dict:
    """{id: how likely the memory is of the kind of fact the question asks about}, for `written`: {id: (text, vector
    as written, slot)}. The relevance adds KIND_WEIGHT times it to the cosine. The kind is read from the text
    (classifier.kind_agreement) and, for a memory in a slot, from the slot the write path chose with the
    whole message before it (SLOT_WEIGHT of it): "The user joined Stripe in the week of 17 February 2025." reads
    as little of an employer, but it is the user's employer."""
    if not written:
        return {}
    keys = list(written)
    asked = classifier.question_family_probabilities(question_vector)[0]  # read once, for the slots too
    agreement = classifier.kind_agreement(question_vector, [written[key][0] for key in keys],
                                          np.vstack([written[key][1] for key in keys]), asked=asked)
    kinds = {}
    for key, by_text in zip(keys, agreement, strict=True):
        families = _families_filling(written[key][2])
        kinds[key] = float(by_text if not families else
                           (1 - SLOT_WEIGHT) * by_text + SLOT_WEIGHT * asked[list(families)].sum())
    return kinds


# Slots that also answer another family's questions: a relationship status names the partner when there is one
# ("Sam has been married to Hannah for twelve years.": "What is the name of Sam's spouse?").
ALSO_ANSWERS = {"relationship_status": ("partner",)}


@functools.lru_cache(maxsize=256)
def _families_filling(slot: str) -> tuple[int, ...]:
    """The indices of the fact families whose statements the write path keeps in `slot` (lexicon.SLOTS), and of
    those it also answers (ALSO_ANSWERS)."""
    families = classifier.weights().families
    return tuple(i for i, family in enumerate(families)
                 if SLOTS.get(family, (family,))[0] == slot or family in ALSO_ANSWERS.get(slot, ()))


def _with_neighbours(episodes: QuerySet, fused: dict, *, weight: float, k: int) -> dict:
    """The fused scores with each candidate's neighbours in its session (the turns just before and just
    after it, within the search's scope) raised to at least `weight` times the candidate's score. A turn
    often answers only with its neighbour's words ("It's been great for my mental health." after "How is
    the running going?"): the match is the neighbour, the answer the turn. Neighbours are the next rows
    in time of the same user (the owner-time index: one probe each), kept when of the same session.
    Scores only rise, so a candidate whose share is below the k-th best fused score cannot bring a
    neighbour into the first k: only the others' neighbours are looked up (a third of the time)."""
    if not weight or not fused:
        return fused
    kth = sorted(fused.values(), reverse=True)[min(k, len(fused)) - 1]
    sources = [pk for pk, value in fused.items() if weight * value >= kth]
    nearby = episodes.filter(user_id=OuterRef("user_id"))
    before = nearby.filter(occurred_at__lt=OuterRef("occurred_at")).order_by("-occurred_at")
    after = nearby.filter(occurred_at__gt=OuterRef("occurred_at")).order_by("occurred_at")
    rows = Episode.objects.filter(pk__in=sources).values_list(
        "pk",
        "session",
        Subquery(before.values("pk")[:1]),
        Subquery(before.values("session")[:1]),
        Subquery(after.values("pk")[:1]),
        Subquery(after.values("session")[:1]),
    )
    bonus: dict = {}
    for pk, session, *neighbours in rows:
        for neighbour, neighbour_session in zip(neighbours[::2], neighbours[1::2], strict=True):
            if neighbour is not None and neighbour_session == session:
                bonus[neighbour] = max(bonus.get(neighbour, 0.0), weight * fused[pk])
    order = [*fused, *(pk for pk in bonus if pk not in fused)]  # fused order first: ties stay deterministic
    return {pk: max(fused.get(pk, 0.0), bonus.get(pk, 0.0)) for pk in order}


def _scope_key(kind: str, principal: Principal, user: User | None, *rest) -> tuple:
    """What a search's scope depends on, for _scope_rows: the reader, the person read about, and `rest`."""
    reader = (principal.agent and principal.agent.pk, principal.user and principal.user.pk, principal.job)
    return (kind, principal.organization_id, reader, user and user.pk, *rest)


def _memory_lexemes(principal: Principal, *, user: User | None, params: SearchParams) -> ScopeLexemes | None:
    """The lexemes of every memory scoping.scoped_memory_parts may give for this question (a superset of
    its parts; None across users, where the index cannot narrow the scope to a few lexemes)."""
    if user is None:
        return None
    scopes = set(params.scopes)
    lexemes, member_of = [], None
    if scopes & {"user", "session"}:
        lexemes.append(scope_lexeme("u", user.pk))
    if "project" in scopes:
        if params.project is not None:
            lexemes.append(scope_lexeme("p", params.project.pk))
        else:  # the projects the user works in
            member_of = user.pk
    if "org" in scopes:
        lexemes.append(scope_lexeme("o", principal.organization_id))
    return ScopeLexemes(lexemes=tuple(lexemes), member_of=member_of)


def memory_parts_for_question(
    principal: Principal, *, user: User | None, params: SearchParams
) -> list[QuerySet[Memory]]:
    """The memories a question may find, valid at its times, as the disjoint parts of its scopes
    (scoping.scoped_memory_parts); scoping.memories_of_parts joins them into one queryset."""
    parts = scoped_memory_parts(
        principal, user=user, scopes=params.scopes, session=params.session, project=params.project
    )
    now = timezone.now()  # one "now" for every part
    as_of, known_at = params.as_of or now, params.known_at or now
    return [valid_at(part, as_of=as_of, known_at=known_at, include_archived=params.include_archived) for part in parts]


def search_memories(principal: Principal, *, user: User | None, params: SearchParams) -> SearchResult:
    """Memories for a question, best first, with each result's score components."""
    require_reading(principal, user)
    started = time.perf_counter()
    parts = memory_parts_for_question(principal, user=user, params=params)
    return _search(
        memories_of_parts(parts),
        params,
        _question(params.query, user, memories=True),
        started,
        parts=parts,
        scope_key=_scope_key(
            "memories", principal, user, tuple(params.scopes), params.session, params.project and params.project.pk
        ),
        lexemes=_memory_lexemes(principal, user=user, params=params),
        column="search_embedding",
        last_used="last_accessed_at",
        importance="importance",
        default_weights=ranking.default_weights(),
        kinds=True,
    )


def search_episodes(
    principal: Principal,
    *,
    user: User | None,
    params: SearchParams,
    rrf_k: int = EPISODE_RRF_K,
    lexical_weight: float = EPISODE_LEXICAL_WEIGHT,
    pool: int | None = EPISODE_POOL,
    neighbour_weight: float = EPISODE_NEIGHBOUR_WEIGHT,
) -> SearchResult:
    """The raw archive, for questions no extracted fact answers: ranked by the fusion of the meaning and
    word legs unless weights are asked for (a rare word at the top of the word leg is often the answer
    where its cosine is middling), min_score on the relevance, and no diversification unless asked (turns
    are seldom restatements; dropping a near neighbour loses evidence). Searched as written: episodes are
    the user's own first-person words; the user's name, when the question has it, carries no relevance.
    `rrf_k`, `lexical_weight`, `pool` and `neighbour_weight`: the fusion's tunables (see _search and
    _with_neighbours), for bench/locomo_loo.py."""
    require_reading(principal, user)
    started = time.perf_counter()
    episodes = scoped_episodes(principal, user=user)
    if params.session:
        episodes = episodes.filter(session=params.session)
    if params.as_of:
        episodes = episodes.filter(occurred_at__lte=params.as_of)
    if params.known_at:
        episodes = episodes.filter(received_at__lte=params.known_at)
    if params.mmr_lambda is None:
        params = replace(params, mmr_lambda=1.0)
    return _search(
        episodes,
        params,
        _question(params.query, user, memories=False),
        started,
        scope_key=_scope_key("episodes", principal, user, params.session),
        # every episode of the user carries their lexeme; across users the index cannot narrow the scope
        lexemes=None if user is None else ScopeLexemes(lexemes=(scope_lexeme("u", user.pk),)),
        last_used="occurred_at",
        importance=None,
        default_weights=ranking.EPISODE_WEIGHTS,
        rrf_k=rrf_k,
        lexical_weight=lexical_weight,
        pool=pool,
        expand=functools.partial(_with_neighbours, episodes, weight=neighbour_weight, k=params.k)
        if neighbour_weight
        else None,
        order_by_fusion=params.weights is None,  # asked-for weights rank by score, as for memories
    )
