import os
import threading

from celery import Celery
from celery.concurrency.prefork import TaskPool as PreforkPool
from celery.signals import worker_process_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryapp.settings")

app = Celery("memoryapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def _load_embedding_model_soon() -> None:
    """Extraction embeds the facts it finds: load the model (~4 s, mostly importing torch) when a
    process that runs tasks starts, not on its first task. In the background, so a prefork child still reports
    ready within the pool's start-up timeout; a task that comes sooner waits for the load."""
    from memoryapp import embeddings

    threading.Thread(target=embeddings.warm_up, name="embedding-model-load", daemon=True).start()


@worker_process_init.connect
def _on_prefork_child_start(**_) -> None:
    _load_embedding_model_soon()


@worker_ready.connect
def _on_worker_ready(sender=None, **_) -> None:
    if not isinstance(getattr(sender, "pool", None), PreforkPool):  # solo and thread pools run tasks here
        _load_embedding_model_soon()
