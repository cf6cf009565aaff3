import pytest

from memoryapp.celery import app
from memoryapp.tasks import ping

pytestmark = pytest.mark.worker


def test_task_round_trips_through_redis_and_a_real_worker(celery_worker_process):
    assert not app.conf.task_always_eager
    result = ping.delay()
    assert result.get(timeout=30) == "pong"
    replies = app.control.ping(timeout=1)
    assert any(name.startswith("test-") for reply in replies for name in reply)
