"""Write locks taken once per transaction: a lock given up with its savepoint is taken again."""

import psycopg
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memoryapp.services.apply import slot_lock
from memoryapp.services.locks import user_lock
from tests.conftest import database_url_for_other_processes


class Undo(Exception):
    pass


def slot_of(user):
    return {"organization_id": user.organization_id, "user_id": user.id, "project_id": None,
            "subject": "alice", "attribute": "city"}


def advisory_locks_held() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()")
        return cursor.fetchone()[0]


def user_row_free_elsewhere(user) -> bool:
    """Whether another session could take the user's write lock right now."""
    with psycopg.connect(database_url_for_other_processes(), autocommit=False) as other:
        try:
            other.execute("SELECT 1 FROM memoryapp_user WHERE id = %s FOR NO KEY UPDATE NOWAIT", [user.id])
            return True
        except psycopg.errors.LockNotAvailable:
            return False


@pytest.mark.django_db(transaction=True)
def test_a_lock_is_taken_once_per_transaction_and_again_after_its_savepoint_rolls_back(alice):
    with transaction.atomic():
        try:
            with transaction.atomic():
                slot_lock(**slot_of(alice))
                assert user_lock(user_id=alice.id)
                assert advisory_locks_held() == 1 and not user_row_free_elsewhere(alice)
                raise Undo
        except Undo:
            pass
        # PostgreSQL let go of both with the savepoint: the next writer of the slot must take them again.
        assert advisory_locks_held() == 0 and user_row_free_elsewhere(alice)
        slot_lock(**slot_of(alice))
        assert user_lock(user_id=alice.id)
        assert advisory_locks_held() == 1 and not user_row_free_elsewhere(alice)
        with CaptureQueriesContext(connection) as taken_again:
            slot_lock(**slot_of(alice))
            assert user_lock(user_id=alice.id)
        assert len(taken_again) == 0
    assert user_row_free_elsewhere(alice)
