"""Erasure down to the disk: after a deletion, the deleted text must leave the database files too.

A DELETE in PostgreSQL only marks rows dead; their bytes stay in the table and index files (a plain
VACUUM makes the space reusable but does not overwrite it), in `pg_statistic` (sampled values) and
in the write-ahead log. The purge rewrites the tables deletions touch (`VACUUM FULL`, which also
rebuilds their indexes), refreshes their statistics, rewrites `pg_statistic`, then switches and
checkpoints the WAL so the segments that recorded the text are deleted (the embedded server runs
with `wal_recycle = off`, see memoryapp.embedded). One purge covers every receipt still pending.

Stored search queries are scrubbed earlier, inside the deletion itself: only then is the deleted
text still there to compare them with (`access_queries_scrub`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from contextlib import contextmanager
from datetime import timedelta
from uuid import UUID

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Q
from django.utils import timezone

from memoryapp import embeddings
from memoryapp.models import (
    AccessLog,
    DeletionReceipt,
    Episode,
    Job,
    Memory,
    MemoryDerivation,
    MemoryEvent,
    MemorySource,
    Organization,
)

logger = logging.getLogger(__name__)

# The tables a deletion removes or rewrites rows of (rows with text, and the link tables whose
# index pages name deleted ids), and Job, whose extraction results the purge scrubs.
# DeletionReceipt holds ids only and is left alone.
PURGED_MODELS = (Memory, Episode, MemorySource, MemoryDerivation, MemoryEvent, AccessLog, Job)
# VACUUM FULL holds an ACCESS EXCLUSIVE lock: it must not queue behind a long transaction (every
# reader would queue behind it). Past this wait the purge fails and runs again on its next turn.
PURGE_LOCK_TIMEOUT = "5s"
_ADVISORY_LOCK = 0x6D656D70  # "memp": one purge at a time, across workers and processes
# After a deletion commits, the purge waits this long so a burst of deletions shares one rewrite.
PURGE_DEBOUNCE_SECONDS = 30


def purge_delay_minutes() -> int:
    """The longest a receipt stays "purge pending": the beat interval (the post-deletion run is sooner)."""
    seconds = settings.PURGE_INTERVAL_SECONDS or PURGE_DEBOUNCE_SECONDS
    return max(1, -(-seconds // 60))


def purge_status(receipt: DeletionReceipt) -> str:
    """What a receipt says about the disk: "purged at <time>" or "purge pending (runs within N minutes)"."""
    if receipt.purged_at:
        return f"purged at {receipt.purged_at.isoformat()}"
    minutes = purge_delay_minutes()
    return f"purge pending (runs within {minutes} minute{'' if minutes == 1 else 's'})"


def purge_soon() -> None:
    """Queue a purge job after the debounce; `transaction.on_commit(purge_soon)` in a deletion. A purge
    already queued covers this deletion too. With the broker down nothing fails: the job row stays
    queued and the scheduled purge covers the receipt."""
    from memoryapp.services.jobs import job_create, task_named

    fresh = timezone.now() - timedelta(seconds=2 * PURGE_DEBOUNCE_SECONDS)
    try:
        if Job.objects.filter(kind=Job.Kind.PURGE, status=Job.Status.QUEUED, created_at__gte=fresh).exists():
            return
        job = job_create(kind=Job.Kind.PURGE, organization=None, params={"trigger": "deletion"})
    except DatabaseError as exc:  # the deletion has committed: its answer must not become a 500
        logger.warning("could not queue a purge, the scheduled purge will cover this deletion: %s", exc)
        return
    try:
        purge_deleted_text = task_named("memoryapp.tasks.purge_deleted_text")
        purge_deleted_text.apply_async(args=[str(job.id)], countdown=PURGE_DEBOUNCE_SECONDS)
    except Exception as exc:  # kombu raises several types for an unreachable broker
        logger.warning("broker unavailable, the scheduled purge will cover this deletion: %s", exc)
        Job.objects.filter(pk=job.pk).update(progress_message="waiting for the broker")


def deleted_text_purge(*, organization: Organization | None = None) -> dict:
    """Make the text of every pending deletion unreadable in the database files; stamp the receipts.

    Runs on the whole database whoever starts it (the files are shared by all organizations);
    `organization` only narrows which receipts the result counts. Must run outside a transaction:
    VACUUM cannot run inside one.
    """
    if connection.in_atomic_block:
        raise RuntimeError("the purge runs VACUUM, which cannot run inside a transaction: call it from a job, "
                           "a task or a command, never inside transaction.atomic()")
    with _single_purge() as alone:
        if not alone:
            return {"skipped": "another purge is running"}
        pending = list(DeletionReceipt.objects.filter(purged_at__isnull=True))
        if not pending:
            return {"receipts": 0}
        _refuse_behind_open_transactions(since=max(r.at for r in pending))
        scrubbed = _late_access_logs_scrub(pending)
        _extraction_reasons_scrub(pending)
        tables = [model._meta.db_table for model in PURGED_MODELS]
        with connection.cursor() as cursor:
            cursor.execute(f"SET lock_timeout = '{PURGE_LOCK_TIMEOUT}'")
            try:
                for table in tables:
                    # FULL writes a new file (and new indexes) from the live rows only; the old files
                    # are truncated at commit. ANALYZE then replaces sampled values of deleted rows.
                    cursor.execute(f"VACUUM (FULL, ANALYZE) {connection.ops.quote_name(table)}")
            finally:
                cursor.execute("RESET lock_timeout")
            statistics = _statistics_rewrite(cursor, tables)
            wal = _drop_old_wal(cursor)
        DeletionReceipt.objects.filter(pk__in=[r.pk for r in pending]).update(purged_at=timezone.now())
    counted = [r for r in pending if organization is None or r.organization_id == organization.id]
    return {"receipts": len(counted), "tables": len(tables), "queries_scrubbed": scrubbed,
            "statistics": statistics, "wal": wal}


class PurgeDeferred(RuntimeError):
    """The purge cannot erase yet; the job retries (the receipts stay pending)."""


def _refuse_behind_open_transactions(*, since) -> None:
    """VACUUM FULL copies dead rows that an open transaction could still see: a transaction begun
    before the deletion would make the rewrite keep the deleted text. Wait for it instead."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend' AND backend_xmin IS NOT NULL AND xact_start <= %s",
            [since],
        )
        (open_transactions,) = cursor.fetchone()
    if open_transactions:
        raise PurgeDeferred(f"{open_transactions} transaction(s) open since before the deletion still see the "
                            "deleted rows; the purge runs again when they end")


@contextmanager
def _single_purge():
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [_ADVISORY_LOCK])
        alone = cursor.fetchone()[0]
    try:
        yield alone
    finally:
        if alone:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [_ADVISORY_LOCK])


def _statistics_rewrite(cursor, tables: list[str]) -> str:
    """Sampled values of deleted rows out of pg_statistic. ANALYZE replaces a table's statistics,
    except on a table it finds empty, where it keeps the old ones: those of a table left empty are
    dropped here. Then pg_statistic itself is rewritten (the replaced rows are dead tuples there).
    Needs superuser rights (the embedded server's user has them; a managed database's may not)."""
    try:
        for table in tables:
            cursor.execute(f"SELECT EXISTS (SELECT FROM {connection.ops.quote_name(table)})")
            if not cursor.fetchone()[0]:
                cursor.execute("DELETE FROM pg_catalog.pg_statistic WHERE starelid = %s::regclass"
                               " OR starelid IN (SELECT indexrelid FROM pg_index WHERE indrelid = %s::regclass)",
                               [table, table])
        cursor.execute("VACUUM FULL pg_catalog.pg_statistic")
    except DatabaseError as exc:
        logger.warning("purge: could not rewrite pg_statistic: %s", exc)
        return f"not done: {type(exc).__name__}"
    return "rewritten"


def _drop_old_wal(cursor) -> str:
    """Close the WAL segment that holds the deletion (and everything before it) and checkpoint past
    it: a checkpoint deletes the segments before its redo point (kept none by wal_keep_size = 0, and
    unlinked rather than renamed for reuse by wal_recycle = off). Twice, so the segment of the first
    checkpoint goes too. Full-page images written after the checkpoint show the rewritten pages."""
    try:
        cursor.execute("CHECKPOINT")
        for _ in range(2):
            cursor.execute("SELECT pg_switch_wal()")
            cursor.execute("CHECKPOINT")
    except DatabaseError as exc:
        logger.warning("purge: could not switch and checkpoint the WAL: %s", exc)
        return f"not done: {type(exc).__name__}"
    return "switched"


def _late_access_logs_scrub(receipts: Iterable[DeletionReceipt]) -> int:
    """Blank the query of reads logged after the deletion's own scrub that still name deleted rows
    (a search that read them before the delete committed and logged after)."""
    memory_ids: list[str] = []
    episode_ids: list[str] = []
    for receipt in receipts:
        memory_ids += receipt.deleted.get("memories", {}).get("ids", [])
        episode_ids += receipt.deleted.get("episodes", {}).get("ids", [])
    if not memory_ids and not episode_ids:
        return 0
    return AccessLog.objects.filter(
        Q(memory_ids__overlap=memory_ids) | Q(episode_ids__overlap=episode_ids)
    ).exclude(query="").update(query="")


def _extraction_reasons_scrub(receipts: Iterable[DeletionReceipt]) -> int:
    """An extraction job's result lists its operations with the judge's reason, which an LLM judge
    words freely (it may quote the fact): the reason goes for operations on deleted memories."""
    deleted = {pk for receipt in receipts for pk in receipt.deleted.get("memories", {}).get("ids", [])}
    if not deleted:
        return 0
    changed = 0
    jobs = Job.objects.filter(kind=Job.Kind.EXTRACTION, result__has_key="operations").values_list("id", "result")
    for pk, result in jobs.iterator(chunk_size=500):
        operations = result["operations"]
        if any(op.get("memory_id") in deleted and op.get("reason") for op in operations):
            result["operations"] = [{**op, "reason": ""} if op.get("memory_id") in deleted else op
                                    for op in operations]
            changed += Job.objects.filter(pk=pk).update(result=result)
    return changed


# --- stored queries that quote deleted text ---------------------------------------------------

_WORD = re.compile(r"\w+")
PHRASE_WORDS = 3  # a query repeating this many consecutive words of deleted text quotes it
# Three common words in a row ("i live in") are not a quotation of anything in particular.
_COMMON = frozenset(
    "a an and are as at be but by do does did for from has have he her his i if in is it its me my no not "
    "of on or our she so that the their them they this to was we were what when where which who will with "
    "you your".split()
)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _distinctive(word: str) -> bool:
    """A code, id or marker-like token (letters and digits together), or a word rare enough to name
    one thing (outside the embedding model's vocabulary of common words): long enough to be specific."""
    if len(word) < 5:
        return False
    if any(c.isdigit() for c in word) and any(c.isalpha() for c in word):
        return True
    return word.isalpha() and word not in embeddings.vocabulary()


# A capitalised word inside a sentence: a name ("Biscuit", "Porto"), which a query repeats on its own.
_NAME = re.compile(r"(?<=[^\s.!?])\s+([A-Z][\w'-]{2,})")


class QuotedText:
    """What it means for a stored query to contain deleted text. A query contains it when it has,
    ignoring case and punctuation, any of:
    - a deleted memory's value, as whole words ("Porto", "Initech Labs");
    - PHRASE_WORDS consecutive words of any deleted text (memory text or value, episode content)
      that are not all common words;
    - a code-like or rare word of the deleted text (letters and digits, or a word outside the
      embedding model's vocabulary; 5 characters or more), or a name in it (a capitalised word
      inside a sentence).
    It errs on the side of blanking: a blanked query costs an audit row its query text, a kept one
    would keep the deleted text."""

    def __init__(self, *, values: Iterable[str], texts: Iterable[str]):
        self.values = {tuple(words) for words in map(_words, values) if words and not set(words) <= _COMMON}
        self.phrases: set[tuple[str, ...]] = set()
        self.codes: set[str] = set()
        for text in texts:
            words = _words(text)
            self.codes.update(word for word in words if _distinctive(word))
            self.codes.update(name.casefold() for name in _NAME.findall(text) if name.casefold() not in _COMMON)
            for i in range(len(words) - PHRASE_WORDS + 1):
                phrase = tuple(words[i : i + PHRASE_WORDS])
                if not set(phrase) <= _COMMON:
                    self.phrases.add(phrase)

    def __bool__(self) -> bool:
        return bool(self.values or self.phrases or self.codes)

    def found_in(self, query: str) -> bool:
        words = _words(query)
        if self.codes.intersection(words):
            return True
        if any(tuple(words[i : i + PHRASE_WORDS]) in self.phrases for i in range(len(words) - PHRASE_WORDS + 1)):
            return True
        return any(tuple(words[i : i + len(value)]) == value
                   for value in self.values for i in range(len(words) - len(value) + 1))


def access_queries_scrub(*, organization: Organization, memory_ids: Iterable[UUID],
                         episode_ids: Iterable[UUID]) -> int:
    """Blank the stored query of every read in the organization that quotes the text of these
    memories or episodes (a search by another user or agent included). Call it in the deletion's
    transaction, before the rows go: afterwards there is no text left to compare with."""
    memories = Memory.objects.filter(organization=organization, pk__in=list(memory_ids))
    episodes = Episode.objects.filter(organization=organization, pk__in=list(episode_ids))
    values, texts = [], []
    for text, value in memories.values_list("text", "value"):
        texts += [text, value]
        values.append(value)
    texts += list(episodes.values_list("content", flat=True))
    quoted = QuotedText(values=values, texts=texts)
    if not quoted:
        return 0
    # A linear pass over the organization's logged queries, in the deletion's transaction: matching
    # word sequences has no index to lean on, and a deletion is rare next to reads.
    logs = AccessLog.objects.filter(organization=organization).exclude(query="").values_list("id", "query")
    hits = [pk for pk, query in logs.iterator(chunk_size=2000) if quoted.found_in(query)]
    return AccessLog.objects.filter(pk__in=hits).update(query="") if hits else 0
