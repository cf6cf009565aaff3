import os

from celery import Celery
from celery.concurrency.prefork import TaskPool as PreforkPool
from celery.signals import worker_process_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryapp.settings")

app = Celery("memoryapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

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
