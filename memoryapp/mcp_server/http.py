"""/mcp in the web process: MCP's Streamable HTTP transport, served from the Django (WSGI) view below.

The SDK's transport is an ASGI app; the web process is WSGI under gunicorn. Rather than switch the
whole process to ASGI, this view hands one HTTP request to the SDK's ASGI handler and returns its
answer. The server runs stateless with JSON responses: every POST is one JSON-RPC exchange answered
in its body, so no SSE stream or session outlives the request and holds a sync worker. The key is
checked here, by the REST authentication, before the SDK sees anything."""

from __future__ import annotations

import functools
import json

import anyio
from asgiref.sync import async_to_sync
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from rest_framework import exceptions
from rest_framework.settings import api_settings

from memoryapp.api.auth import AgentKeyAuthentication
from memoryapp.mcp_server.server import CLIENT_NAME_KEY, Context, build_server
from memoryapp.models import Agent

AGENT_KEY = "memoryapp.agent"  # where the view leaves the authenticated agent in the ASGI scope


def agent_of_request(ctx: Context) -> Agent:
    request = ctx.request_context.request
    agent = request.scope.get(AGENT_KEY) if request is not None else None
    if agent is None:  # not through mcp_view: nobody vouched for the caller
        raise exceptions.NotAuthenticated("use 'Authorization: Bearer <agent key>'")
    return agent


@functools.cache
def http_server():
    return build_server(agent_of_request)


@csrf_exempt  # a Bearer key, not a cookie, authenticates: nothing for a cross-site form to ride on
def mcp_view(request: HttpRequest) -> HttpResponse:
    try:
        found = AgentKeyAuthentication().authenticate(request)
        if found is None:
            raise exceptions.NotAuthenticated("use 'Authorization: Bearer <agent key>'")
        agent = found[0]
        if not agent.is_active:
            raise exceptions.PermissionDenied("this agent has been disabled by an administrator")
    except exceptions.APIException as exc:
        return _refused(exc)
    scope = _scope(request, agent)
    scope[CLIENT_NAME_KEY] = _client_name(request.body, agent)
    status, headers, body = async_to_sync(_serve)(scope, request.body)
    response = HttpResponse(body, status=status)
    for name, value in headers:
        if name.lower() not in ("content-length", "transfer-encoding", "connection"):
            response[name] = value
    return response


CLIENT_NAME_SECONDS = 7 * 24 * 3600


def _client_name(body: bytes, agent: Agent) -> str:
    """The client's name for the access log. Stateless HTTP keeps no session, so the name an initialize
    request gives is remembered for the key (one client per key is the usual set-up) and read back for
    the calls that follow."""
    key = f"mcp-client:{agent.pk}"
    try:
        message = json.loads(body or b"{}")
    except ValueError:
        message = None
    if isinstance(message, dict) and message.get("method") == "initialize":
        info = (message.get("params") or {}).get("clientInfo") or {}
        name = str(info.get("name") or "")[:60]
        if name:
            cache.set(key, name, CLIENT_NAME_SECONDS)
        return name
    return cache.get(key) or ""


def _refused(exc: exceptions.APIException) -> JsonResponse:
    """The REST answer to the same refusal: its status and error body."""
    refusal = api_settings.EXCEPTION_HANDLER(exc, {})
    response = JsonResponse(refusal.data, status=refusal.status_code)
    if refusal.status_code == 401:
        response["WWW-Authenticate"] = AgentKeyAuthentication.keyword
    return response


def _scope(request: HttpRequest, agent: Agent) -> dict:
    headers = [(key[5:].replace("_", "-").lower().encode("latin-1"), str(value).encode("latin-1"))
               for key, value in request.META.items() if key.startswith("HTTP_")]
    for key, name in (("CONTENT_TYPE", b"content-type"), ("CONTENT_LENGTH", b"content-length")):
        if request.META.get(key):
            headers.append((name, str(request.META[key]).encode("latin-1")))
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": request.method,
        "scheme": request.scheme, "path": request.path, "raw_path": request.path.encode(), "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"), "headers": headers,
        "server": (request.get_host().rsplit(":", 1)[0], int(request.get_port())), "client": None,
        AGENT_KEY: agent,
    }


async def _serve(scope: dict, body: bytes) -> tuple[int, list, bytes]:
    """One request through the SDK's stateless handler; the status, headers and body it answered."""
    answered = anyio.Event()
    sent = {"status": 500, "headers": [], "body": b""}
    delivered = False

    async def receive():
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()  # the client "disconnects" only once it has its answer
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            sent["status"] = message["status"]
            sent["headers"] = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])]
        elif message["type"] == "http.response.body":
            sent["body"] += message.get("body", b"")
            if not message.get("more_body"):
                answered.set()

    # A manager runs once (its task group lives in this event loop), so each request has its own.
    manager = StreamableHTTPSessionManager(http_server()._lowlevel_server, json_response=True, stateless=True)
    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return sent["status"], sent["headers"], sent["body"]
