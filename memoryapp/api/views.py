"""REST API v1: thin views. Validation in serializers, writes in services, reads in selectors."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryapp.api import serializers as s
from memoryapp.api.auth import HasPermissionFor, principal_of
from memoryapp.api.pagination import NewestFirst
from memoryapp.models import Memory, MemoryEvent
from memoryapp.selectors.context import context_assemble
from memoryapp.selectors.listing import memories_listed
from memoryapp.selectors.ranking import Weights
from memoryapp.selectors.scoping import (
    episode_visible,
    job_visible,
    memory_changeable,
    memory_visible,
    project_visible,
    scoped_episodes,
    user_visible,
)
from memoryapp.selectors.search import SearchParams, search_episodes, search_memories
from memoryapp.services import govern
from memoryapp.services.access import access_record
from memoryapp.services.extraction import episodes_extract
from memoryapp.services.ingest import IdempotencyConflict, MessageIn, episodes_ingest, extraction_job_for
from memoryapp.services.jobs import job_create, job_enqueue
from memoryapp.services.statements import statement_remember
from memoryapp.services.tenancy import project_for_write, user_for_write


class Api(APIView):
    permission_classes = [HasPermissionFor]

    @property
    def principal(self):
        return principal_of(self.request)

    def valid(self, serializer_class, data):
        serializer = serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data


def search_params(data: dict, principal) -> SearchParams:
    weights = data.get("weights")
    return SearchParams(
        query=data["query"], k=data["k"], scopes=tuple(data.get("scopes") or Memory.Scope.values),
        session=data["session"], project=project_visible(principal, data["project"]), as_of=data.get("as_of"),
        known_at=data.get("known_at"), min_score=data.get("min_score"), mmr_lambda=data.get("mmr_lambda"),
        weights=Weights(**weights) if weights else None,
    )


def search_response(view: Api, search, item_name: str, item_json, *, endpoint: str) -> Response:
    """Search memories or episodes for the request, log the read, answer the contract's shape."""
    data = view.valid(s.SearchIn, view.request.data)
    return Response(search_answer(view.principal, data, search, item_name, item_json, endpoint=endpoint))


def search_answer(principal, data: dict, search, item_name: str, item_json, *, endpoint: str) -> dict:
    """The search contract's answer to validated SearchIn data, the read logged (REST and MCP alike)."""
    user = user_visible(principal, data["user"])
    result = search(principal, user=user, params=search_params(data, principal))
    access_record(principal, items=[h.item for h in result.hits], query=data["query"], endpoint=endpoint,
                  user_id=user.id)
    brief = ("relevance", "recency", "importance")
    return {
        "results": [{item_name: item_json(h.item), "score": h.score,
                     "components": h.components if data["explain"] else {k: h.components[k] for k in brief}}
                    for h in result.hits],
        "abstained": result.abstained, "took_ms": result.took_ms,
        "ordered_by": result.ordered_by, **({"searched_as": result.searched_as} if data["explain"] else {}),
    }


def agent_lookup_logged(principal, items: list, *, endpoint: str, user=None, query: str = "") -> None:
    """DESIGN: every read by an agent leaves an access log row (a lookup, not a recall)."""
    if principal.agent is not None:
        access_record(principal, items=list(items), query=query, endpoint=endpoint,
                      user_id=user.id if user is not None else None, recalled=False)


PREVIEW = OpenApiParameter(
    "preview", bool,
    description="true (also 1, yes, on): what would be deleted and recomputed; nothing is. false (0, no, off) or "
                "absent: delete. Anything else is refused with 400.",
)


class DeletionQuery(s.serializers.Serializer):
    preview = s.serializers.BooleanField(required=False, default=False)


def preview_or_delete(request, plan, delete) -> Response:
    """`?preview=true` answers `plan()`: what would go and what would be recomputed; otherwise the receipt
    of `delete()` (which plans again under the user's lock). A misspelt preview is refused: read as "no",
    it would delete what the caller only meant to see."""
    given = request.query_params.get("preview")
    query = DeletionQuery(data={} if given is None else {"preview": given.strip().lower()})
    query.is_valid(raise_exception=True)
    if query.validated_data["preview"]:
        return Response({"preview": True, **plan().as_dict()})
    return Response(s.receipt_json(delete()))


# --- episodes ---------------------------------------------------------------------------------


IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key", str, location=OpenApiParameter.HEADER, required=False,
    description="Any string up to 200 characters, new for each request. A retry with the same key for the same "
                "user stores nothing again and answers 200 with the episode ids the first request stored "
                "(`replayed: true`); the same key with other messages answers 409.",
)


class EpisodesView(Api):
    @extend_schema(request=s.EpisodesIngestIn, responses={200: dict, 201: dict, 202: dict},
                   parameters=[IDEMPOTENCY_KEY])
    def post(self, request):
        data = self.valid(s.EpisodesIngestIn, request.data)
        key = request.headers.get("Idempotency-Key", "").strip()
        if len(key) > 200:
            raise ValidationError({"Idempotency-Key": ["at most 200 characters"]})
        principal = self.principal
        # All or nothing: the episodes commit together with their extraction (wait) or their job, or not at all.
        with transaction.atomic():
            user = user_for_write(principal, data["user"])
            project = project_for_write(principal, data["project"], user=user)
            try:
                result = episodes_ingest(
                    organization=user.organization, user=user, session=data["session"], project=project,
                    agent=principal.agent, actor=principal.actor, request_key=key,
                    messages=[MessageIn(m["source"], m["content"], m.get("occurred_at"), m.get("metadata") or {})
                              for m in data["messages"]],
                )
            except IdempotencyConflict as exc:
                from memoryapp.api.errors import Conflict

                raise Conflict(str(exc)) from exc
            if result.paused:
                return Response({"episodes": [], "job": None, "paused": True,
                                 "message": f"memory writing is paused for {user.external_id}; nothing was stored"},
                                status=status.HTTP_200_OK)
            ids = [str(e.id) for e in result.episodes]
            replayed = {"replayed": True} if result.replayed else {}
            if data["wait"]:
                # A replay extracts only what the first request left pending: its operations are not repeated.
                operations = episodes_extract(episode_ids=ids, actor=principal.actor)
                return Response({"episodes": ids, "job": None, "operations": [o.as_dict() for o in operations],
                                 **replayed}, status=status.HTTP_200_OK if replayed else status.HTTP_201_CREATED)
            if result.replayed:
                job = extraction_job_for(result.episodes)
                return Response({"episodes": ids, "job": str(job.id) if job else None, **replayed})
            from memoryapp.tasks import extract_episodes

            job = job_create(kind="extraction", organization=user.organization, user=user,
                             params={"episode_ids": ids})
            job_enqueue(job, extract_episodes)
        return Response({"episodes": ids, "job": str(job.id)}, status=status.HTTP_202_ACCEPTED)

    @extend_schema(operation_id="episodes_list", parameters=[OpenApiParameter("user", str)], responses=dict)
    def get(self, request):
        principal = self.principal
        params = self.valid(EpisodeListQuery, request.query_params.dict())
        episodes = scoped_episodes(principal).select_related("user", "project")
        user = user_visible(principal, params["user"]) if params.get("user") else None
        if user is not None:
            episodes = episodes.filter(user=user)
        if params.get("session"):
            episodes = episodes.filter(session=params["session"])
        paginator = NewestFirst("occurred_at")
        page = paginator.paginate_queryset(episodes, request, view=self)
        agent_lookup_logged(principal, page, endpoint="episodes", user=user)
        return paginator.get_paginated_response([s.episode_json(e) for e in page])


class EpisodeSearchView(Api):
    required_permission = "read"  # a POST that only reads

    @extend_schema(request=s.SearchIn, responses=dict)
    def post(self, request):
        return search_response(self, search_episodes, "episode", s.episode_json, endpoint="episodes/search")


class EpisodeView(Api):
    @extend_schema(responses=dict)
    def get(self, request, episode_id):
        episode = episode_visible(self.principal, episode_id)
        agent_lookup_logged(self.principal, [episode], endpoint="episodes/{id}", user=episode.user)
        return Response(s.episode_json(episode))

    @extend_schema(parameters=[PREVIEW], responses={200: dict})
    def delete(self, request, episode_id):
        principal = self.principal
        episode = episode_visible(principal, episode_id)
        return preview_or_delete(request, lambda: govern.plan_episode_deletion(episode),
                                 lambda: govern.episode_delete(episode=episode, actor=principal.actor))


# --- memories ---------------------------------------------------------------------------------


class MemoriesView(Api):
    @extend_schema(request=s.MemoryCreateIn, responses={201: dict})
    def post(self, request):
        data = self.valid(s.MemoryCreateIn, request.data)
        result = statement_remember(self.principal, **data)
        if result.paused:
            return Response({"operations": [], "memory": None, "paused": True,
                             "message": f"memory writing is paused for {result.user.external_id}; nothing was stored"})
        return Response({"operations": [o.as_dict() for o in result.operations],
                         "memory": s.memory_json(result.memory)}, status=status.HTTP_201_CREATED)

    @extend_schema(
        operation_id="memories_list",
        parameters=[OpenApiParameter(name, str) for name in ("user", "scope", "status", "kind", "as_of", "known_at",
                                                                "q", "session")],
        responses=dict,
    )
    def get(self, request):
        principal = self.principal
        params = self.valid(MemoryListQuery, request.query_params.dict())
        name = params.pop("user", None)
        user = user_visible(principal, name) if name else None
        memories = memories_listed(principal, user=user, **params)
        paginator = NewestFirst("recorded_at")
        page = paginator.paginate_queryset(memories, request, view=self)
        agent_lookup_logged(principal, page, endpoint="memories", user=user, query=params.get("q", ""))
        return paginator.get_paginated_response([s.memory_json(m) for m in page])


class EpisodeListQuery(s.serializers.Serializer):
    user = s.UserField(required=False)
    session = s.Text(max_length=200, required=False)


class MemoryListQuery(s.serializers.Serializer):
    user = s.UserField(required=False)
    session = s.Text(max_length=200, required=False)
    scope = s.serializers.ChoiceField(choices=Memory.Scope.values, required=False)
    status = s.serializers.ChoiceField(choices=Memory.Status.values, required=False)
    kind = s.serializers.ChoiceField(choices=Memory.Kind.values, required=False)
    as_of = s.AwareDateTime(required=False)
    known_at = s.AwareDateTime(required=False)
    q = s.Text(max_length=200, required=False)


WITH_SOURCES = OpenApiParameter(
    "with_sources", bool,
    description="true (also 1, yes, on): also delete the messages (episodes) the memory and its versions came "
                "from, with what else only they support, as DELETE /episodes/{id} would; afterwards episode "
                "search cannot return them. The preview then lists them under `deleted.episodes` and the other "
                "memories they take or rebuild. false (0, no, off) or absent: the messages stay, listed in "
                "`sources_kept`. Messages of other users always stay. Anything else is refused with 400.",
)


class MemoryDeletionQuery(s.serializers.Serializer):
    with_sources = s.serializers.BooleanField(required=False, default=False)


class MemoryView(Api):
    @extend_schema(responses=dict)
    def get(self, request, memory_id):
        memory = memory_visible(self.principal, memory_id)
        agent_lookup_logged(self.principal, [memory], endpoint="memories/{id}", user=memory.user)
        return Response({**s.memory_json(memory, detail=True), "history": _history(memory)})

    @extend_schema(request=s.MemoryCorrectIn, responses=dict)
    def patch(self, request, memory_id):
        data = self.valid(s.MemoryCorrectIn, request.data)
        principal = self.principal
        memory = memory_changeable(principal, memory_id, correcting=True)
        try:
            corrected = govern.memory_correct(memory=memory, actor=principal.actor, **data)
        except ValueError as exc:
            from memoryapp.api.errors import Conflict

            raise Conflict(str(exc)) from exc
        return Response(s.memory_json(corrected, detail=True))

    @extend_schema(parameters=[PREVIEW, WITH_SOURCES], responses={200: dict})
    def delete(self, request, memory_id):
        principal = self.principal
        memory = memory_changeable(principal, memory_id)
        # Read as strictly as `preview`, and before it: a misspelt "yes" read as "no" would keep the
        # messages an agent can still quote, and a preview would show the other plan.
        given = request.query_params.get("with_sources")
        query = MemoryDeletionQuery(data={} if given is None else {"with_sources": given.strip().lower()})
        query.is_valid(raise_exception=True)
        with_sources = query.validated_data["with_sources"]
        return preview_or_delete(
            request, lambda: govern.plan_memory_deletion(memory, with_sources=with_sources),
            lambda: govern.memory_delete(memory=memory, actor=principal.actor, with_sources=with_sources),
        )


def _history(memory: Memory) -> dict:
    versions = Memory.objects.filter(pk__in=govern._versions({memory.pk})).order_by("recorded_at")
    events = MemoryEvent.objects.filter(memory_id__in=[v.pk for v in versions]).order_by("created_at")
    return {"versions": [s.memory_json(v) for v in versions], "events": [s.event_json(e) for e in events]}


class MemoryHistoryView(Api):
    @extend_schema(responses=dict)
    def get(self, request, memory_id):
        return Response(_history(memory_visible(self.principal, memory_id)))


# --- search and context ---------------------------------------------------------------------


class SearchView(Api):
    required_permission = "read"

    @extend_schema(request=s.SearchIn, responses=dict)
    def post(self, request):
        return search_response(self, search_memories, "memory", s.memory_json, endpoint="search")


class ContextView(Api):
    required_permission = "read"  # a POST that only reads

    @extend_schema(request=s.ContextIn, responses=dict)
    def post(self, request):
        data = self.valid(s.ContextIn, request.data)
        principal = self.principal
        user = user_visible(principal, data["user"])
        context = context_assemble(principal, user=user, params=search_params(data, principal),
                                   budget_tokens=data["budget_tokens"])
        access_record(principal, items=context.memories, query=data["query"], endpoint="context", user_id=user.id)
        return Response({"context": context.text, "memories": [str(m.id) for m in context.memories],
                         "tokens": context.tokens, "abstained": not context.memories,
                         "took_ms": context.search.took_ms})


# --- users and jobs ---------------------------------------------------------------------------


class UserExportView(Api):
    required_permission = "read"

    @extend_schema(responses=dict)
    def get(self, request, user):
        principal = self.principal
        target = user_visible(principal, user)
        return Response(govern.user_export(user=target))


class UserMemoriesView(Api):
    @extend_schema(parameters=[PREVIEW], responses={200: dict})
    def delete(self, request, user):
        principal = self.principal
        target = user_visible(principal, user)
        return preview_or_delete(request, lambda: govern.plan_user_deletion(target),
                                 lambda: govern.user_memories_delete(user=target, actor=principal.actor))


class JobView(Api):
    required_permission = "read"

    @extend_schema(responses=dict)
    def get(self, request, job_id):
        return Response(s.job_json(job_visible(self.principal, job_id)))
