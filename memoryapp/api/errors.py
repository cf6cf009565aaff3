"""Every error answers {"error": {"code", "message", "fields"}}."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.db import DataError
from django.http import Http404, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from memoryapp.api.parsing import PayloadTooLarge
from memoryapp.failures import error_body, failure_status
from memoryapp.services.gate import GateRefused


class ServiceUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "unavailable"


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


CODES = {
    exceptions.ParseError: "malformed_json",
    exceptions.ValidationError: "invalid",
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "too_many_requests",
}


def error_response(status_code: int, code: str, message: str, fields: dict | None = None, headers=None) -> Response:
    return Response(error_body(code, message, fields), status=status_code, headers=headers)


def exception_handler(exc, context):
    if isinstance(exc, GateRefused):
        status_code = 413 if exc.code == "too_large" else 400
        return error_response(status_code, exc.code, str(exc))
    if isinstance(exc, DataError):
        # A last line of defence: validation should have refused the value already.
        return error_response(400, "invalid", "the request holds a value that cannot be stored or compared")
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    if isinstance(exc, DjangoPermissionDenied):
        # the selectors' and services' refusals ("you may change only your own memories")
        exc = exceptions.PermissionDenied(str(exc) or None)
    if isinstance(exc, Http404):
        # the selectors' messages ("no user 'sam'") read the same whether a row is missing or out of reach
        exc = exceptions.NotFound(str(exc) or None)
    response = drf_exception_handler(exc, context)
    if response is None:  # an outage (503) or a fault (500 with a reference), never Django's debug page
        set_rollback()
        status_code, body, headers = failure_status(exc, context.get("request"))
        return Response(body, status=status_code, headers=headers)
    code = next((c for cls, c in CODES.items() if isinstance(exc, cls)), getattr(exc, "default_code", "error"))
    if isinstance(exc, exceptions.ValidationError):
        fields = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        message = "the request is invalid: " + "; ".join(f"{k}: {_first(v)}" for k, v in fields.items())
        return error_response(400, code, message, fields)
    message = str(exc.detail) if hasattr(exc, "detail") else str(exc)
    if isinstance(exc, exceptions.Throttled) and exc.wait:
        message = f"too many requests: retry in {int(exc.wait) + 1} s"
    return error_response(response.status_code, code, message, headers=dict(response.items()))


def _first(value) -> str:
    while isinstance(value, list | dict):
        if not value:
            return ""
        value = value[0] if isinstance(value, list) else next(iter(value.values()))
    return str(value)


@csrf_exempt  # it changes nothing, and a POST without a token should hear "no endpoint", not "CSRF"
def no_such_endpoint(request) -> JsonResponse:
    """Any /api/v1/ path no route matches (a malformed id, a trailing slash): JSON like every other error,
    never Django's HTML page."""
    hint = " (API paths have no trailing slash)" if request.path.endswith("/") else ""
    return JsonResponse(error_body("not_found", f"no API endpoint at {request.path}{hint}"), status=404)
