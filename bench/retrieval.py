"""Retrieval benchmarks: search latency at scale, and LoCoMo evidence recall.

    .venv/bin/python bench/retrieval.py [--store N] [--skip-scale] [--skip-locomo] [--locomo PATH]

Runs on its own embedded servers under MEMORYAPP_DATA_DIR (default var/bench), never on the
development data. The scale store is kept between runs and reused when it has the asked size.
The first run builds the 1M store (about 20 minutes on 2 cores: see DEFAULT_STORE); later runs reuse it.

(a) Scale: N memories with seeded random unit vectors and short synthetic texts, across many
    users of one organization; three target users own 1k, 10k and 100k of them. Each target is
    searched with real sentence queries (embedded by the real model, which is part of the
    latency) through selectors.search.search_memories, as an unrestricted agent.
(b) LoCoMo: every turn imported as an episode (evaluation.locomo), then evidence recall@k of
    selectors.search.search_episodes within each question's own conversation, categories 1-4.
"""

# ruff: noqa: E402  (Django is configured before the project is imported)
from __future__ import annotations

import argparse
import math
import os
import struct
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from setup_django import setup_django

ROOT = setup_django("bench")

import numpy as np
from django.conf import settings
from django.core.management import call_command
from django.db import connection, transaction
from django.db.models import Count

from memoryapp.actors import ActorRef, Principal
from memoryapp.evaluation.locomo import episode_retrievals, locomo_import_current
from memoryapp.evaluation.metrics import ALL, CATEGORY_NAMES, evidence_recall
from memoryapp.models import EMBEDDING_DIM, Episode, Memory, Organization, User
from memoryapp.selectors import search
from memoryapp.selectors.scoping import ALL_SCOPES, memories_of_parts, scoped_episodes
from memoryapp.services.tenancy import agent_create, organization_get_or_create

SCALE_ORG = "bench-scale"
LOCOMO_ORG = "bench-locomo"
TARGET_SIZES = (1_000, 10_000, 100_000)
HNSW_INDEX = {Memory: "memory_search_embedding_hnsw", Episode: "episode_embedding_hnsw"}
SEARCHED_COLUMN = {Memory: "search_embedding", Episode: "embedding"}  # what selectors.search compares
FILLER_SIZE = 1_000  # memories per non-target user
COPY_CHUNK = 50_000
DEFAULT_LOCOMO = ROOT.parent / "shared" / "data" / "locomo-dev" / "locomo-dev.json"
# On the 2-core development machine 1M memories took 20 min to load the first time (COPY 52 s,
# HNSW build 886 s); --store 300000 is a quicker first look.
DEFAULT_STORE = 1_000_000

NAMES = "Alice Bruno Chen Dana Emeka Farah Goran Hana Ines Jonas Kiri Lena Malik Nora Omar Priya".split()
PREDICATES = [
    "likes",
    "prefers",
    "is allergic to",
    "bought",
    "visited",
    "is learning about",
    "works on",
    "recommended",
    "dislikes",
    "plans to try",
    "talked about",
    "keeps notes on",
]
OBJECTS = (
    "coffee tea jazz opera python rust porto lisbon kyoto hiking cycling sailing chess tennis sushi ramen "
    "tacos cheese peanuts shellfish gluten cello piano guitar violin painting pottery gardening tomatoes roses "
    "orchids kubernetes postgres redis django react budgets invoices taxes mortgages insurance vaccines "
    "dentists marathons yoga pilates climbing skiing surfing novels poetry podcasts documentaries cameras "
    "drones telescopes astronomy birds cats dogs horses bees compost solar batteries trains ferries airports "
    "museums castles beaches deserts volcanoes glaciers forests rivers islands markets bakeries vineyards"
).split()
QUALIFIERS = [
    "on weekends",
    "since last spring",
    "with her sister",
    "every morning",
    "for work",
    "at the office",
    "when travelling",
    "after the move",
    "during the holidays",
    "with friends",
]
QUESTIONS = [
    "What does {name} think about {obj}?",
    "Has {name} ever mentioned {obj}?",
    "Is {name} interested in {obj} {qualifier}?",
    "Tell me what {name} said about {obj} and {obj2}.",
    "Which {obj} does {name} prefer?",
    "Any preferences about {obj} I should remember?",
]


def say(message: str) -> None:
    print(message, flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


# --- (a) scale -------------------------------------------------------------------------------


def owners_plan(total: int) -> list[tuple[str, int]]:
    """(external id, memory count) per user: the three targets, then fillers of FILLER_SIZE."""
    rest = total - sum(TARGET_SIZES)
    if rest < 0:
        raise SystemExit(f"--store must be at least {sum(TARGET_SIZES)} (the three target users)")
    plan = [(f"target-{size}", size) for size in TARGET_SIZES]
    fillers = math.ceil(rest / FILLER_SIZE)
    for i in range(fillers):
        plan.append((f"filler-{i}", min(FILLER_SIZE, rest - i * FILLER_SIZE)))
    return plan


def synthetic_texts(rng: np.random.Generator, n: int) -> list[str]:
    names = rng.integers(len(NAMES), size=n)
    predicates = rng.integers(len(PREDICATES), size=n)
    objects = rng.integers(len(OBJECTS), size=n)
    qualifiers = rng.integers(len(QUALIFIERS), size=n)
    return [
        f"{NAMES[a]} {PREDICATES[b]} {OBJECTS[c]} {QUALIFIERS[d]}."
        for a, b, c, d in zip(names.tolist(), predicates.tolist(), objects.tolist(), qualifiers.tolist(), strict=True)
    ]


def synthetic_queries(rng: np.random.Generator, n: int) -> list[str]:
    queries = []
    for _ in range(n):
        template = QUESTIONS[int(rng.integers(len(QUESTIONS)))]
        obj, obj2 = rng.choice(OBJECTS, size=2, replace=False).tolist()
        queries.append(
            template.format(
                name=NAMES[int(rng.integers(len(NAMES)))],
                obj=obj,
                obj2=obj2,
                qualifier=QUALIFIERS[int(rng.integers(len(QUALIFIERS)))],
            )
        )
    return queries


def _vector_binary(vectors: np.ndarray) -> list[bytes]:
    """pgvector's binary input for halfvec: int16 dimensions, int16 unused, then big-endian float2s."""
    header = struct.pack(">hh", vectors.shape[1], 0)
    big_endian = vectors.astype(">f2")
    return [header + row.tobytes() for row in big_endian]


# The per-row columns of each scaled table (the rest take their model default): the owner, the text,
# the vector, and for episodes a distinct time (the neighbours' lookup reads the owner-time index).
TEXT_COLUMN = {Memory: "text", Episode: "content"}
VECTOR_COLUMNS = {"embedding", "search_embedding"}  # a memory's two get the same random vector
VARIABLE_COLUMNS = {"id", "organization_id", "user_id", "text", "content", *VECTOR_COLUMNS, "occurred_at"}
EPISODE_CONSTANTS = {
    "source": Episode.Source.USER, "trust": Episode.Trust.TRUSTED, "extraction": Episode.Extraction.DONE,
}


def _copy_columns(model) -> tuple[list[str], list[str], dict[str, object]]:
    """Every stored column of `model`, its type for COPY, and a constant value where one will do."""
    columns, types, constants = [], [], {}
    for model_field in model._meta.concrete_fields:
        if getattr(model_field, "generated", False):
            continue
        column = model_field.column
        db_type = model_field.db_type(connection).split("(")[0]
        columns.append(column)
        types.append("bytea" if column in VECTOR_COLUMNS else db_type)  # bytes already in halfvec's wire format
        if column in VARIABLE_COLUMNS:
            continue
        default = EPISODE_CONSTANTS.get(column) if model is Episode else None
        default = model_field.get_default() if default is None else default
        if default is None and not model_field.null:
            raise SystemExit(f"bench/retrieval.py: give {model.__name__}.{model_field.name} a value in _copy_columns")
        constants[column] = default
    return columns, types, constants


def scale_load(model, organization: Organization, total: int, seed: int, maintenance_work_mem: str) -> None:
    """Load `model`'s rows (memories or episodes) with COPY (binary), the HNSW index dropped and rebuilt."""
    plan = owners_plan(total)
    table = model._meta.db_table
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX[model]}")
        cursor.execute(f"DELETE FROM {table} WHERE organization_id = %s", [organization.id])
    users = {user.external_id: user for user in User.objects.filter(organization=organization)}
    new_users = []
    for external_id, _ in plan:
        if external_id not in users:
            user = User(organization=organization, external_id=external_id, username=f"{SCALE_ORG}.{external_id}")
            user.set_unusable_password()
            new_users.append(user)
    User.objects.bulk_create(new_users, batch_size=5_000)
    users = {user.external_id: user.id for user in User.objects.filter(organization=organization)}
    say(f"  cleared and made {len(plan)} users in {time.perf_counter() - started:.1f} s")

    owner_ids = np.repeat(np.arange(len(plan)), [count for _, count in plan])
    np.random.default_rng(seed).shuffle(owner_ids)  # interleaved, as many users writing over time would
    user_ids = [users[external_id] for external_id, _ in plan]
    columns, types, constants = _copy_columns(model)
    rng = np.random.default_rng(seed)
    first = datetime(2024, 1, 1, tzinfo=UTC)
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        sql = f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)"
        with cursor.cursor.copy(sql) as copy:
            copy.set_types(types)
            for start in range(0, total, COPY_CHUNK):
                n = min(COPY_CHUNK, total - start)
                vectors = rng.standard_normal((n, EMBEDDING_DIM), dtype=np.float32)
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                variable = {"organization_id": organization.id}
                rows = zip(
                    owner_ids[start : start + n].tolist(), synthetic_texts(rng, n), _vector_binary(vectors), strict=True
                )
                for i, (owner, text, vector) in enumerate(rows, start=start):
                    variable.update(id=uuid.uuid4(), user_id=user_ids[owner], embedding=vector, search_embedding=vector)
                    variable[TEXT_COLUMN[model]] = text
                    variable["occurred_at"] = first + timedelta(seconds=i)
                    copy.write_row([variable[c] if c in variable else constants[c] for c in columns])
                done = start + n
                if done % (COPY_CHUNK * 4) == 0 or done == total:
                    say(f"  copied {done:,} rows ({time.perf_counter() - started:.0f} s)")
    copy_s = time.perf_counter() - started
    say(f"  COPY of {total:,} {model._meta.verbose_name_plural}: {copy_s:.1f} s ({total / copy_s:,.0f} rows/s)")

    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {table}")
    say(f"  VACUUM ANALYZE: {time.perf_counter() - started:.1f} s")
    hnsw_build(model, maintenance_work_mem)


def hnsw_build(model, maintenance_work_mem: str) -> None:
    """Recreate the HNSW index exactly as the migration defines it, with room to build in memory."""
    index = next(i for i in model._meta.indexes if i.name == HNSW_INDEX[model])
    with connection.schema_editor() as editor:
        sql = str(index.create_sql(model, editor))
    workers = max(0, (os.cpu_count() or 1) - 1)
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('maintenance_work_mem', %s, false)", [maintenance_work_mem])
        cursor.execute("SELECT set_config('max_parallel_maintenance_workers', %s, false)", [str(workers)])
        cursor.execute(sql)
        cursor.execute("RESET maintenance_work_mem")
        cursor.execute("RESET max_parallel_maintenance_workers")
    say(
        f"  HNSW build ({HNSW_INDEX[model]}, maintenance_work_mem={maintenance_work_mem}, {workers} parallel workers): "
        f"{time.perf_counter() - started:.1f} s"
    )


def hnsw_exists(model) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [HNSW_INDEX[model]])
        return cursor.fetchone() is not None


def scale_store(model, total: int, seed: int, maintenance_work_mem: str) -> Organization:
    organization = organization_get_or_create(name=SCALE_ORG)
    expected = dict(owners_plan(total))
    counts = dict(
        model.objects.filter(organization=organization)
        .values_list("user__external_id")
        .annotate(n=Count("id"))
        .values_list("user__external_id", "n")
    )
    name = model._meta.verbose_name_plural
    if counts == expected:
        say(f"  reusing the store of {total:,} {name} in {SCALE_ORG}")
        if not hnsw_exists(model):
            hnsw_build(model, maintenance_work_mem)
        return organization
    say(f"  loading {total:,} {name} ({len(expected):,} users); found {sum(counts.values()):,}")
    scale_load(model, organization, total, seed, maintenance_work_mem)
    return organization


class PathProbe:
    """Which dense path each search took (wraps private helpers of selectors.search): "scan" (an exact
    pass over the scope), "hnsw" for scopes larger than SEARCH_EXACT_MAX_ROWS, or "hnsw short -> scan"
    when HNSW brought back fewer rows than asked."""

    def __init__(self):
        self.calls: list[str] = []
        self.hnsw_rows: list[int] = []  # rows each HNSW scan brought back
        self._scan, self._approximate = search._dense_scan, search._dense_approximate

    def __enter__(self):
        def scan(parts, vector, limit, column):
            self.calls.append("scan")
            return self._scan(parts, vector, limit, column)

        def approximate(queryset, vector, limit, column):
            rows = self._approximate(queryset, vector, limit, column)
            self.calls.append("hnsw" if len(rows) >= limit else "hnsw short")
            self.hnsw_rows.append(len(rows))
            return rows

        search._dense_scan, search._dense_approximate = scan, approximate
        return self

    def __exit__(self, *exc):
        search._dense_scan, search._dense_approximate = self._scan, self._approximate

    def take(self) -> str:
        path, self.calls = " -> ".join(self.calls), []
        return path


def _scan_nodes(plan: str) -> str:
    return "; ".join(line.strip().lstrip("-> ").split("  (")[0] for line in plan.splitlines() if "Scan" in line)


def exact_plan_outline(parts, vector) -> str:
    """The scan nodes of each scope part's exact pass: is the user's part an index-only scan?"""
    query = search.HalfVector(vector)
    annotated = (part.annotate(distance=search._ExactCosineDistance(SEARCHED_COLUMN[part.model], query))
                 for part in parts)
    return " + ".join(_scan_nodes(part.order_by().values("id", "distance").explain()) for part in annotated)


def plan_outline(queryset, vector, limit: int) -> str:
    """The scan nodes of the approximate query's plan: does it really walk the HNSW index?"""
    plan = (
        queryset.annotate(distance=search.CosineDistance(SEARCHED_COLUMN[queryset.model], search.HalfVector(vector)))
        .order_by("distance")
        .values_list("id", "distance")[:limit]
        .explain()
    )
    return _scan_nodes(plan)


def scale_searches(principal, user, queries: list[str], k: int, scopes: tuple[str, ...] | None) -> str:
    """One line of figures: took_ms (the selector's own clock) and wall time, p50 and p95, and paths.
    `scopes` None: episode search."""
    took, wall, paths = [], [], Counter()
    with PathProbe() as probe:
        for query in queries:
            # min_score=0: the synthetic vectors are unrelated to real questions, and a search that
            # abstains would skip loading its hits.
            params = search.SearchParams(query=query, k=k, scopes=scopes or ALL_SCOPES, min_score=0.0)
            started = time.perf_counter()
            if scopes is None:
                result = search.search_episodes(principal, user=user, params=params)
            else:
                result = search.search_memories(principal, user=user, params=params)
            wall.append((time.perf_counter() - started) * 1000)
            took.append(result.took_ms)
            paths[probe.take()] += 1
    hnsw = probe.hnsw_rows
    returned = f"; HNSW returned {min(hnsw)}-{max(hnsw)} rows" if hnsw else ""
    return (
        f"took_ms p50 {percentile(took, 50):7.1f} p95 {percentile(took, 95):7.1f}"
        f" | wall p50 {percentile(wall, 50):7.1f} p95 {percentile(wall, 95):7.1f} ms"
        f" | {len(queries)} searches, dense path {dict(paths)}{returned}"
    )


def scale_bench(
    total: int, searches: int, compare_searches: int, episode_searches: int, seed: int, maintenance_work_mem: str,
    k: int, warm_searches: int,
) -> None:
    say(f"\n== (a) scale: {total:,} memories and {total:,} episodes, k={k} ==")
    organization = scale_store(Memory, total, seed, maintenance_work_mem)
    scale_store(Episode, total, seed, maintenance_work_mem)
    agent = (
        organization.agents.filter(name="bench").first()
        or agent_create(organization=organization, name="bench", permissions=["read"])[0]
    )
    principal = Principal.for_agent(agent)
    queries = synthetic_queries(np.random.default_rng(seed + 1), max(searches, compare_searches, episode_searches))
    warm_queries = synthetic_queries(np.random.default_rng(seed + 2), warm_searches)
    users = {size: User.objects.get(organization=organization, external_id=f"target-{size}") for size in TARGET_SIZES}
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        pgvector = cursor.fetchone()[0]
    say(f"  SEARCH_EXACT_MAX_ROWS={settings.SEARCH_EXACT_MAX_ROWS}, pgvector {pgvector}")
    for warm in queries[:5]:  # the model load and first plans are not part of the figures
        search.search_memories(principal, user=users[TARGET_SIZES[0]], params=search.SearchParams(query=warm, k=k))
    pool = max(k * 4, settings.SEARCH_CANDIDATES)
    # All scopes is what an agent gets by default: the user's memories plus the organization's
    # project and org memories. User scope alone shows what that org-wide part costs.
    for label, scopes, count in (
        ("memories, all scopes (the default)", ALL_SCOPES, searches),
        ("memories, user scope only", ("user",), compare_searches),
        ("episodes", None, episode_searches),
    ):
        if not count:
            continue
        say(f"  {label}:")
        for size, user in users.items():
            if warm_queries:  # untimed
                scale_searches(principal, user, warm_queries, k, scopes)
            say(f"    {size:>7,} rows: {scale_searches(principal, user, queries[:count], k, scopes)}")
            vector = search.embeddings.encode_one(queries[0])
            if scopes is None:
                parts = [scoped_episodes(principal, user=user)]
            else:
                question = search.SearchParams("", scopes=scopes)
                parts = search.memory_parts_for_question(principal, user=user, params=question)
            if size > settings.SEARCH_EXACT_MAX_ROWS:
                queryset = parts[0] if scopes is None else memories_of_parts(parts)
                say(f"      approximate query plan: {plan_outline(queryset, vector, pool)}")
            else:
                say(f"      exact pass plan: {exact_plan_outline(parts, vector)}")


# --- (b) LoCoMo ------------------------------------------------------------------------------


def locomo_store(path: Path) -> list:
    """The conversations imported into LOCOMO_ORG (evaluation.locomo.locomo_import_current)."""
    started = time.perf_counter()
    imported, reused = locomo_import_current(
        organization_name=LOCOMO_ORG, path_or_data=path, actor=ActorRef.for_job("bench")
    )
    if reused:
        say(f"  reusing the import in {LOCOMO_ORG}")
    else:
        turns = sum(item.created for item in imported)
        say(
            f"  imported {len(imported)} conversations, {turns} turns (embedded) in "
            f"{time.perf_counter() - started:.1f} s"
        )
    return imported


def locomo_bench(path: Path, ks: tuple[int, ...] = (1, 5, 10)) -> None:
    say(f"\n== (b) LoCoMo evidence recall: {path} ==")
    imported = locomo_store(path)
    organization = imported[0].user.organization
    agent = (
        organization.agents.filter(name="bench").first()
        or agent_create(organization=organization, name="bench", permissions=["read"])[0]
    )
    principal = Principal.for_agent(agent)
    retrievals, took = [], []
    for item in imported:
        conversation_retrievals, conversation_took = episode_retrievals(principal, item, k=max(ks))
        retrievals += conversation_retrievals
        took += conversation_took
    table = evidence_recall(retrievals, ks)
    header = f"  {'category':<16}{'questions':>10}" + "".join(f"{f'recall@{k}':>11}" for k in ks)
    say(header)
    for key, summary in table.items():
        name = f"{key} {CATEGORY_NAMES[key]}" if key != ALL else "all (1-4)"
        say(f"  {name:<16}{summary.questions:>10}" + "".join(f"{summary.recall[k]:>11.3f}" for k in ks))
    say(f"  search took_ms p50 {percentile(took, 50):.1f} p95 {percentile(took, 95):.1f}")
    overall = table[ALL].recall
    say(" ".join(f"recall@{k}={overall[k]:.3f}" for k in ks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--store", type=int, default=DEFAULT_STORE, help=f"memories in the scale store (default {DEFAULT_STORE:,})"
    )
    parser.add_argument("--searches", type=int, default=200, help="searches per target user, all scopes")
    parser.add_argument("--compare-searches", type=int, default=50, help="searches per target user, user scope only")
    parser.add_argument("--episode-searches", type=int, default=200, help="episode searches per target user")
    parser.add_argument(
        "--warm-searches", type=int, default=50,
        help="untimed searches (other queries) before each line's: a running server's buffers hold its users' pages,"
        " and this script starts the server afresh; 0 measures from empty buffers",
    )
    parser.add_argument("--k", type=int, default=5, help="results per search in the scale part")
    parser.add_argument("--seed", type=int, default=20240508)
    parser.add_argument("--maintenance-work-mem", default="8GB", help="for the HNSW build")
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO, help="a LoCoMo-format JSON file")
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="EMBEDDING_THREADS: intra-op threads for the query embedding (0: torch's default, one per core)",
    )
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--skip-locomo", action="store_true")
    args = parser.parse_args()

    settings.EMBEDDING_THREADS = args.torch_threads
    say(f"bench data: {os.environ['MEMORYAPP_DATA_DIR']}; torch threads: {args.torch_threads or 'default'}")
    call_command("migrate", verbosity=0)
    if not args.skip_scale:
        scale_bench(
            args.store, args.searches, args.compare_searches, args.episode_searches, args.seed,
            args.maintenance_work_mem, args.k, args.warm_searches,
        )
    if not args.skip_locomo:
        locomo_bench(args.locomo.resolve())


if __name__ == "__main__":
    main()
