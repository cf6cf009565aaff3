import logging
import os

from celery import Celery
from celery.concurrency.prefork import TaskPool as PreforkPool
from celery.signals import worker_process_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryapp.settings")

app = Celery("memoryapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
logger = logging.getLogger(__name__)

# Extraction embeds the facts it finds: the model loads as a process that runs tasks starts, not on
# its first task. In the background, so a prefork child still reports ready within the pool's timeout.


@worker_process_init.connect
def _on_prefork_child_start(**_) -> None:
    from memoryapp import embeddings

    embeddings.load_in_background()


@worker_ready.connect
def _on_worker_ready(sender=None, **_) -> None:
    from memoryapp import embeddings

    if not isinstance(getattr(sender, "pool", None), PreforkPool):  # solo and thread pools run tasks here
        embeddings.load_in_background()
    _requeue_jobs_of_dead_workers()


def _requeue_jobs_of_dead_workers() -> None:
    """A worker starting is often one replacing a worker that died: the jobs that one was running go
    back to the queue now, without waiting for their heartbeat to go stale."""
    from django.db import connection

    from memoryapp.jobs import orphans_requeue

    try:
        live = {name for reply in app.control.ping(timeout=1.0) for name in reply}
        orphans_requeue(live_workers=live)
    except Exception as exc:  # the database or broker is away: beat's watchdog tries again
        logger.warning("could not requeue the jobs of dead workers: %s", exc)
    finally:
        connection.close()  # opened in the main process, which runs no tasks
