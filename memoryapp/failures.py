"""What a request answers when something fails that no view handled.

An outage of the database or the broker is not a fault of the request: it answers 503 with
Retry-After. Anything else unexpected answers 500 with a reference that is also logged with the
traceback. API paths answer in the error shape, dashboard pages with the project's own page;
never Django's debug page, which lists settings, even with DEBUG on.

DRF views reach `failure_status` through memoryapp.api.errors.exception_handler. What fails
outside a view (session or user lookups in middleware, a session saved on the way out) is turned
into a response by Django before any middleware sees the exception, so `FailurePages` learns of it
from `got_request_exception` and replaces the response.
"""

from __future__ import annotations

import logging
import sys
import uuid

import kombu.exceptions
import psycopg
import redis.exceptions
from django.core.signals import got_request_exception
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.template import loader

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 10
OUTAGES = {
    "database": (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError),
    "broker": (kombu.exceptions.OperationalError, redis.exceptions.ConnectionError, redis.exceptions.TimeoutError),
}


def outage_of(exc: BaseException) -> str | None:
    """"database" or "broker" when `exc`, or an error it was raised from, says that server is unreachable."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        for part, types in OUTAGES.items():
            if isinstance(exc, types):
                return part
        exc = exc.__cause__ or exc.__context__
    return None


def error_body(code: str, message: str, fields: dict | None = None) -> dict:
    """The one error shape of the API, for every failure (memoryapp.api.errors answers with it)."""
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


def failure_status(exc: BaseException, request=None) -> tuple[int, dict, dict]:
    """The status, error body and headers for an exception nothing else handled; logs it."""
    where = f"{request.method} {request.path}" if request is not None else "a request"
    part = outage_of(exc)
    if part:
        logger.warning("%s unavailable during %s: %s: %s", part, where, type(exc).__name__, exc)
        message = f"the {part} is unavailable; retry in {RETRY_AFTER_SECONDS} s"
        return 503, error_body("unavailable", message), {"Retry-After": str(RETRY_AFTER_SECONDS)}
    reference = uuid.uuid4().hex[:12]
    logger.error("unexpected error during %s, reference %s", where, reference,
                 exc_info=(type(exc), exc, exc.__traceback__))
    body = error_body("internal_error", f"an unexpected error occurred; quote reference {reference} when reporting it")
    body["error"]["reference"] = reference
    return 500, body, {}


def failure_response(request, exc: BaseException) -> HttpResponse:
    status, body, headers = failure_status(exc, request)
    if request.path.startswith("/api/"):
        return JsonResponse(body, status=status, headers=headers)
    # Rendered without the request: the pages' context processors would look up the user, and the
    # database may be what is down.
    template = "503.html" if status == 503 else "500.html"
    context = {"reference": body["error"].get("reference", ""), "part": outage_of(exc),
               "retry_after": RETRY_AFTER_SECONDS}
    return HttpResponse(loader.render_to_string(template, context), status=status, headers=headers)


def _remember_failure(sender, request=None, **kwargs) -> None:
    if request is not None:
        request._failure = sys.exc_info()[1]


got_request_exception.connect(_remember_failure, dispatch_uid="memoryapp.failures")


class FailurePages:
    """Outermost middleware: a response Django made for an uncaught exception (its debug page under
    DEBUG, a bare page otherwise) becomes `failure_response`."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        exc = request.__dict__.pop("_failure", None)
        if exc is not None and response.status_code >= 500:
            return failure_response(request, exc)
        return response
