"""Thin Celery wrappers: load by id, call the service, retry. Never pass content to a task."""

from celery import shared_task


@shared_task(name="memoryapp.tasks.ping")
def ping() -> str:
    """A round trip through the broker and a worker; used by tests and health checks."""
    return "pong"
