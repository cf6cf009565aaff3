"""The per-user write lock. Deletion plans and executes under it; ingest and extraction write under
it, so a deletion never meets a half-written ingest or extraction of the same user, and an episode
it is deleting never gets a memory linked to it meanwhile.

Lock order, everywhere: the user row first, then episode rows, then slot locks
(services.apply.slot_lock), then memory rows. A writer that takes the user lock after any of the
others can deadlock with a deletion."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from django.db import connection

from memoryapp.models import User


class _Held:
    """A lock's mark in the transaction: an on-commit hook that does nothing. Django drops it when the
    transaction ends, or when the savepoint it was set in is rolled back: exactly when PostgreSQL lets
    go of a lock taken there. Extraction takes the same locks for each of hundreds of candidates."""

    __slots__ = ("key",)

    def __init__(self, key: str):
        self.key = key

    def __call__(self) -> None:
        pass


def once_per_transaction(key: str, take: Callable[[], bool]) -> bool:
    """Take the lock named `key` with `take` (True when taken) unless this transaction holds it already."""
    if any(isinstance(hook, _Held) and hook.key == key for _, hook, _ in connection.run_on_commit):
        return True
    taken = take()
    if taken and connection.in_atomic_block:
        connection.on_commit(_Held(key))
    return taken


def user_lock(*, user_id: UUID | None) -> bool:
    """Hold the user's write lock until the end of the caller's transaction (one is required);
    False when the user does not exist (any more). Re-taking it in the same transaction costs no query.

    FOR NO KEY UPDATE, not FOR UPDATE: it still excludes every other holder of the lock, but not
    the key-share locks PostgreSQL takes for foreign keys, so a writer that only inserts rows
    pointing at the user (an access log, a summary job) is never made to wait, or to deadlock,
    behind a deletion."""
    if user_id is None:
        return False
    return once_per_transaction(f"user:{user_id}", lambda: bool(list(
        User.objects.select_for_update(no_key=True).filter(pk=user_id).values_list("pk", flat=True))))
