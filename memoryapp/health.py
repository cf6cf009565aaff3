"""GET /healthz: each part of the service and whether it answers."""

import logging

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from memoryapp import embeddings
from memoryapp.celery import app as celery_app
from memoryapp.database_versions import read_versions

logger = logging.getLogger(__name__)


def _database() -> dict:
    with connection.cursor() as cursor:
        versions = read_versions(cursor)
    info = {"server": f"PostgreSQL {versions.server}", "vector_extension": versions.pgvector}
    problem = versions.pgvector_problem()
    if problem:
        return {"ok": False, "error": problem, **info}
    return {"ok": True, **info}


def _broker() -> dict:
    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)
    return {"ok": True}


def _workers() -> dict:
    replies = celery_app.control.ping(timeout=1.0)
    names = sorted(name for reply in replies for name in reply)
    if not names:
        return {"ok": False, "error": "no Celery worker answered a ping within 1 s", "live": []}
    return {"ok": True, "live": names}


def _embedding_model() -> dict:
    path = embeddings.model_path()
    info = {"name": settings.EMBEDDING_MODEL, "dimensions": settings.EMBEDDING_DIM, "loaded": embeddings.is_loaded()}
    info["precision"] = embeddings.loaded_precision() or f"{settings.EMBEDDING_PRECISION} (not loaded yet)"
    info["backend"] = embeddings.loaded_backend() or f"{settings.EMBEDDING_BACKEND} (not loaded yet)"
    if not path.exists():
        return {**info, "ok": False, "error": f"model files not found at {path}"}
    return {**info, "ok": True}


CHECKS = {"database": _database, "broker": _broker, "workers": _workers, "embedding_model": _embedding_model}


@require_GET
def healthz(request):
    parts = {}
    for name, check in CHECKS.items():
        try:
            parts[name] = check()
        except Exception as exc:  # a health check reports every failure instead of raising it
            # The page is public: name the kind of failure, never the server's message (paths, hosts).
            logger.warning("health check %s failed: %s: %s", name, type(exc).__name__, exc)
            parts[name] = {"ok": False, "error": f"{type(exc).__name__}: unreachable or failing"}
    failing = [name for name, part in parts.items() if not part["ok"]]
    body = {"status": "ok" if not failing else "unavailable", "failing": failing, **parts}
    return JsonResponse(body, status=200 if not failing else 503)
