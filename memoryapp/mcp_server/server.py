"""The MCP tools: each one validates its arguments with the REST serializer of the same request and
calls the same service or selector as the REST view, as the agent holding the key. Nothing here
writes or reads memories another way."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

from asgiref.sync import sync_to_async
from django.core.exceptions import PermissionDenied
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field
from rest_framework.exceptions import ValidationError
from rest_framework.settings import api_settings

from memoryapp.actors import Principal
from memoryapp.api import serializers as s
from memoryapp.api.auth import HasPermissionFor
from memoryapp.api.views import MemoryListQuery, search_answer
from memoryapp.models import Agent
from memoryapp.selectors.scoping import memory_changeable, user_visible
from memoryapp.services import govern, reading
from memoryapp.services.statements import conversation_remember, statement_remember

AgentOf = Callable[[Context], Agent]  # who is calling: the HTTP request's key, or the stdio process's key
LIST_LIMIT = 100

INSTRUCTIONS = (
    "Long-term memory about the people you work with, governed by the organization that issued your key. "
    "Call `recall` (or `context` for a ready-to-paste block) before answering questions that depend on what "
    "a user said before; call `remember` with the conversation turns (or one statement) so later sessions "
    "know it. Users are named by their external id (e.g. 'alice'). `forget` previews first; call it again "
    "with confirm=true to delete. Errors come back as {\"error\": {\"code\", \"message\", \"fields\"}}."
)


class Message(BaseModel):
    role: Literal["user", "assistant", "tool", "system"] = Field(description="Who said it.")
    content: str = Field(description="What was said, verbatim.")
    occurred_at: str | None = Field(
        default=None, description="When it was said, ISO 8601 with a time zone (default: now).")


User = Annotated[str, Field(description="The user the memory is about: their external id, e.g. 'alice'.")]
Session = Annotated[str, Field(description="Conversation id; session-scoped memories belong to it. Optional.")]
Project = Annotated[str, Field(description="Project name, for project-scoped memories. Optional.")]
Scopes = Annotated[
    list[Literal["session", "user", "project", "org"]] | None,
    Field(description="Which memories to search: session, user, project, org (default: all)."),
]
AsOf = Annotated[
    str | None,
    Field(description="Answer as of this moment (ISO 8601 with zone, e.g. 2025-03-10T12:00:00Z): facts true "
                      "then, including ones later superseded. Default: now."),
]


def build_server(agent_of: AgentOf) -> MCPServer:
    server = MCPServer(name="memoryapp", title="memoryapp memory", instructions=INSTRUCTIONS, version="1")

    def tool_call(ctx: Context, permission: str, work: Callable[[Principal, str], dict]):
        """Run `work` as the key's agent in Django's sync world; a refusal or invalid argument comes back
        as a tool error carrying the REST error body (same code and message as the REST endpoint)."""

        def run() -> CallToolResult:
            try:
                agent = agent_of(ctx)
                _check_permission(agent, permission)
                body = work(Principal.for_agent(agent), _reader(ctx))
            except Exception as exc:  # noqa: BLE001 - every failure answers the REST error shape
                response = api_settings.EXCEPTION_HANDLER(exc, {})  # the REST mapping and body
                body = response.data if response is not None else {"error": {"code": "error", "message": str(exc),
                                                                              "fields": {}}}
                return CallToolResult(content=[TextContent(type="text", text=json.dumps(body))], is_error=True)
            return CallToolResult(content=[TextContent(type="text", text=json.dumps(body))], structured_content=body)

        # thread_sensitive: under the web process this runs in the request's own thread (its database
        # connection and transaction handling); under stdio in one thread for the whole session.
        return sync_to_async(run, thread_sensitive=True)()

    @server.tool(
        description="Store what a user said so later conversations can recall it. Give either `messages` (the "
                    "conversation turns; facts are extracted from them) or `statement` (one fact in your words, "
                    "stored as one memory). Secrets (keys, passwords) are refused, and instructions found in "
                    "tool or web content are quarantined, not stored as facts. Returns the operations applied "
                    "(add, update, supersede, noop) with memory ids. Needs the key's write permission.")
    async def remember(
        user: User,
        ctx: Context,
        messages: Annotated[list[Message] | None, Field(description="Conversation turns, oldest first.")] = None,
        statement: Annotated[str | None, Field(description="One fact to store, e.g. 'Alice is vegetarian.'")] = None,
        session: Session = "",
        project: Project = "",
        scope: Annotated[Literal["session", "user", "project", "org"],
                         Field(description="Who the statement is for (statement only; default user).")] = "user",
    ) -> CallToolResult:
        def work(principal: Principal, reader: str) -> dict:
            if (messages is None) == (statement is None):
                raise ValidationError({"messages": ["give either messages or statement"]})
            if statement is not None:
                data = _valid(s.MemoryCreateIn, {"user": user, "text": statement, "session": session,
                                                 "project": project, "scope": scope})
                result = statement_remember(principal, **data)
                if result.paused:
                    return _paused(result.user)
                return {"operations": [o.as_dict() for o in result.operations],
                        "memory": s.memory_json(result.memory)}
            data = _valid(s.EpisodesIngestIn, {
                "user": user, "session": session, "project": project, "wait": True,
                "messages": [m.model_dump(exclude_none=True) for m in messages]})
            # What POST /api/v1/episodes with wait=true does: all or nothing, episodes with their extraction.
            result = conversation_remember(principal, user=data["user"], messages=data["messages"],
                                           session=data["session"], project=data["project"], wait=True)
            if result.paused:
                return _paused(result.user)
            return {"episodes": [str(e.id) for e in result.episodes],
                    "operations": [o.as_dict() for o in result.operations]}

        return await tool_call(ctx, "write", work)

    @server.tool(
        description="Search a user's memories by meaning. Returns the best matches with their text, dates "
                    "(valid_from/valid_to: when it was true; recorded_at: when it was learnt), provenance "
                    "(user_stated, agent_inferred, ...), source messages and a score; `abstained` is true when "
                    "nothing is relevant enough. Needs the key's read permission.")
    async def recall(
        user: User,
        query: Annotated[str, Field(description="The question, in natural language.")],
        ctx: Context,
        k: Annotated[int, Field(ge=1, le=50, description="How many memories at most (1-50).")] = 5,
        as_of: AsOf = None,
        scopes: Scopes = None,
        session: Session = "",
        project: Project = "",
    ) -> CallToolResult:
        def work(principal: Principal, reader: str) -> dict:
            data = _valid(s.SearchIn, _given(user=user, query=query, k=k, as_of=as_of, scopes=scopes,
                                             session=session, project=project))
            return search_answer(principal, data, episodes=False, endpoint=_endpoint("recall", reader))

        return await tool_call(ctx, "read", work)

    @server.tool(
        description="A ready-to-use block of what is known about a user that bears on `query`, within a token "
                    "budget, to put into your prompt. Returns the text, the memory ids it used and its size in "
                    "tokens. Needs the key's read permission.")
    async def context(
        user: User,
        query: Annotated[str, Field(description="What the conversation is about now.")],
        ctx: Context,
        budget_tokens: Annotated[int, Field(ge=50, le=32000, description="Largest block, in tokens.")] = 1000,
        as_of: AsOf = None,
        scopes: Scopes = None,
        session: Session = "",
        project: Project = "",
    ) -> CallToolResult:
        def work(principal: Principal, reader: str) -> dict:
            data = _valid(s.ContextIn, _given(user=user, query=query, budget_tokens=budget_tokens, as_of=as_of,
                                              scopes=scopes, session=session, project=project))
            assembled = reading.context_recall(principal, user=user_visible(principal, data["user"]),
                                               params=reading.search_params(principal, data),
                                               budget_tokens=data["budget_tokens"],
                                               endpoint=_endpoint("context", reader))
            return {"context": assembled.text, "memories": [str(m.id) for m in assembled.memories],
                    "tokens": assembled.tokens, "abstained": not assembled.memories}

        return await tool_call(ctx, "read", work)

    @server.tool(
        description="List memories newest first (what is true now unless `status` is given), e.g. to find the "
                    "id of a memory to forget. Needs the key's read permission.")
    async def list_memories(
        ctx: Context,
        user: Annotated[str | None, Field(description="Only this user's memories (external id).")] = None,
        scope: Annotated[Literal["session", "user", "project", "org"] | None, Field(description="Only this scope.")]
        = None,
        status: Annotated[Literal["active", "superseded", "invalidated", "quarantined", "archived"] | None,
                          Field(description="Only memories in this status (default: those true now).")] = None,
        q: Annotated[str | None, Field(description="Only memories whose text contains this.")] = None,
        limit: Annotated[int, Field(ge=1, le=LIST_LIMIT, description="How many at most.")] = 20,
    ) -> CallToolResult:
        def work(principal: Principal, reader: str) -> dict:
            params = _valid(MemoryListQuery, _given(user=user, scope=scope, status=status, q=q))
            name = params.pop("user", None)
            target = user_visible(principal, name) if name else None
            more = []

            def first(memories):  # one more than shown tells whether there are more
                found = list(memories.order_by("-recorded_at")[: limit + 1])
                more.append(len(found) > limit)
                return found[:limit]

            shown = reading.memories_lookup(principal, user=target, page=first, **params,
                                            endpoint=_endpoint("list_memories", reader))
            return {"results": [s.memory_json(m) for m in shown], "more": more[0]}

        return await tool_call(ctx, "read", work)

    @server.tool(
        description="Delete a memory (with its earlier versions and what was derived only from it). Call it "
                    "first without `confirm`: it answers what would be deleted and recomputed, and deletes "
                    "nothing. Call again with confirm=true to delete: it answers a deletion receipt. Needs the "
                    "key's delete permission.")
    async def forget(
        memory_id: Annotated[str, Field(description="The memory's id (from recall or list_memories).")],
        ctx: Context,
        confirm: Annotated[bool, Field(description="false: preview only; true: delete.")] = False,
    ) -> CallToolResult:
        def work(principal: Principal, reader: str) -> dict:
            memory = memory_changeable(principal, _memory_id(memory_id))
            if not confirm:
                return {"preview": True, **govern.plan_memory_deletion(memory).as_dict()}
            return s.receipt_json(govern.memory_delete(memory=memory, actor=principal.actor))

        return await tool_call(ctx, "delete", work)

    @server.resource(
        "memory://users/{user}/profile", name="profile", mime_type="application/json",
        description="A user's profile: their active summary memories (what the service has distilled about "
                    "them). Needs the key's read permission.")
    async def profile(user: str, ctx: Context) -> str:
        def work(principal: Principal, reader: str) -> dict:
            target = user_visible(principal, user)
            summaries = reading.profile_recall(principal, user=target, endpoint=_endpoint("profile", reader))
            return {"user": target.external_id, "summaries": [s.memory_json(m) for m in summaries]}

        result = await tool_call(ctx, "read", work)
        return result.content[0].text  # a resource has no error flag: the error body is its content

    return server


def _check_permission(agent: Agent, needed: str) -> None:
    """HasPermissionFor's rule and messages, for a tool instead of an HTTP method."""
    if not agent.is_active:
        raise PermissionDenied("this agent has been disabled by an administrator")
    if needed not in agent.permissions:
        raise PermissionDenied(HasPermissionFor.message)


def _valid(serializer_class, data: dict) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _given(**arguments: Any) -> dict:
    """The arguments the caller gave: an omitted one takes the serializer's default, as over REST."""
    return {name: value for name, value in arguments.items() if value not in (None, "")}


def _paused(user) -> dict:
    return {"operations": [], "paused": True,
            "message": f"memory writing is paused for {user.external_id}; nothing was stored"}


def _memory_id(value: str):
    """A memory id that is no id is "no such memory", as the REST route answers for any unknown id."""
    import uuid

    from django.http import Http404

    try:
        return uuid.UUID(value)
    except ValueError:
        raise Http404("no such memory") from None


CLIENT_NAME_KEY = "memoryapp.mcp_client"  # where /mcp leaves the client's name in the ASGI scope


def _reader(ctx: Context) -> str:
    """The MCP client's own name, from its initialize request: kept by the stdio session, and over
    stateless HTTP remembered for the key by memoryapp.mcp_server.http."""
    params = ctx.request_context.session.client_params
    if params is not None and params.client_info:
        return params.client_info.name
    request = ctx.request_context.request
    return request.scope.get(CLIENT_NAME_KEY, "") if request is not None else ""


def _endpoint(tool: str, reader: str) -> str:
    # AccessLog.endpoint holds 40 characters: the tool always fits, the client's name as far as it goes.
    return f"mcp:{tool}" + (f" ({reader})"[: 40 - len(tool) - 4] if reader else "")
