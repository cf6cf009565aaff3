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
from memoryapp.models import Episode, Memory, MemoryEvent
from memoryapp.selectors.context import context_assemble
from memoryapp.selectors.ranking import Weights
from memoryapp.selectors.scoping import (
    episode_visible,
    job_visible,
    memory_changeable,
    memory_visible,
    project_visible,
    scoped_episodes,
    scoped_memories,
    user_visible,
    valid_at,
)
from memoryapp.selectors.search import SearchParams, search_episodes, search_memories
from memoryapp.services import govern
from memoryapp.services.access import access_record
from memoryapp.services.apply import MemoryDraft, candidate_apply
from memoryapp.services.extract.base import Candidate
from memoryapp.services.extraction import episodes_extract
from memoryapp.services.ingest import IdempotencyConflict, MessageIn, episodes_ingest, extraction_job_for
from memoryapp.services.jobs import job_create, job_enqueue
from memoryapp.services.tenancy import project_for_write, scope_for_write, user_for_write


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
    principal = view.principal
    user = user_visible(principal, data["user"])
    result = search(principal, user=user, params=search_params(data, principal))
    access_record(principal, items=[h.item for h in result.hits], query=data["query"], endpoint=endpoint,
                  user_id=user.id)
    brief = ("relevance", "recency", "importance")
    return Response({
        "results": [{item_name: item_json(h.item), "score": h.score,
                     "components": h.components if data["explain"] else {k: h.components[k] for k in brief}}
                    for h in result.hits],
        "abstained": result.abstained, "took_ms": result.took_ms,
    })


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
        if params.get("user"):
            episodes = episodes.filter(user=user_visible(principal, params["user"]))
        if params.get("session"):
            episodes = episodes.filter(session=params["session"])
        paginator = NewestFirst("occurred_at")
        page = paginator.paginate_queryset(episodes, request, view=self)
        return paginator.get_paginated_response([s.episode_json(e) for e in page])


class EpisodeSearchView(Api):
    required_permission = "read"  # a POST that only reads

    @extend_schema(request=s.SearchIn, responses=dict)
    def post(self, request):
        return search_response(self, search_episodes, "episode", s.episode_json, endpoint="episodes/search")


class EpisodeView(Api):
    @extend_schema(responses=dict)
    def get(self, request, episode_id):
        return Response(s.episode_json(episode_visible(self.principal, episode_id)))

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
        principal = self.principal
        with transaction.atomic():
            scope_for_write(principal, data["scope"])
            user = user_for_write(principal, data["user"])
            project = project_for_write(principal, data["project"], user=user)
            result = episodes_ingest(
                organization=user.organization, user=user, session=data["session"], project=project,
                agent=principal.agent, actor=principal.actor,
                messages=[MessageIn("assistant" if principal.agent else "user", data["text"],
                                    data.get("valid_from"), {"via": govern.STATEMENT_VIA})],
            )
            if result.paused:
                return Response({"operations": [], "memory": None, "paused": True,
                                 "message": f"memory writing is paused for {user.external_id}; nothing was stored"})
            episode = result.episodes[0]
            Episode.objects.filter(pk=episode.pk).update(extraction=Episode.Extraction.DONE)
            candidate = Candidate(
                text=episode.content, subject=(data["subject"] or user.external_id).lower(),
                attribute=data["attribute"], value=data["value"], valid_from=episode.occurred_at,
                importance=data["importance"], confidence=0.9, kind=data["kind"],
            )
            draft = MemoryDraft(
                organization=user.organization, user=user, text=episode.content, embedding=episode.embedding,
                subject=candidate.subject if candidate.attribute else "", attribute=candidate.attribute,
                value=candidate.value, cardinality=candidate.cardinality, kind=candidate.kind, scope=data["scope"],
                project_id=project.id if project else None, session=data["session"], importance=candidate.importance,
                confidence=candidate.confidence, valid_from=episode.occurred_at, sources=[episode],
                provenance=Memory.Provenance.AGENT_INFERRED if principal.agent else Memory.Provenance.USER_STATED,
                agent_id=principal.agent.id if principal.agent else None,
            )
            operations = candidate_apply(candidate=candidate, draft=draft, actor=principal.actor)
        memory = Memory.objects.get(pk=operations[-1].memory_id)
        return Response({"operations": [o.as_dict() for o in operations], "memory": s.memory_json(memory)},
                        status=status.HTTP_201_CREATED)

    @extend_schema(
        operation_id="memories_list",
        parameters=[OpenApiParameter(name, str) for name in ("user", "scope", "status", "kind", "as_of", "known_at",
                                                                "q", "session")],
        responses=dict,
    )
    def get(self, request):
        principal = self.principal
        params = self.valid(MemoryListQuery, request.query_params.dict())
        user = user_visible(principal, params["user"]) if params.get("user") else None
        memories = scoped_memories(principal, user=user, scopes=[params["scope"]] if params.get("scope") else
                                   Memory.Scope.values, session=params.get("session", ""),
                                   all_sessions=not params.get("session"))
        if params.get("status"):
            memories = memories.filter(status=params["status"])
        else:
            memories = valid_at(memories, as_of=params.get("as_of"), known_at=params.get("known_at"))
        if params.get("kind"):
            memories = memories.filter(kind=params["kind"])
        if params.get("q"):
            memories = memories.filter(text__icontains=params["q"])
        paginator = NewestFirst("recorded_at")
        page = paginator.paginate_queryset(memories.select_related("user", "project"), request, view=self)
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


class MemoryView(Api):
    @extend_schema(responses=dict)
    def get(self, request, memory_id):
        memory = memory_visible(self.principal, memory_id)
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

    @extend_schema(parameters=[PREVIEW], responses={200: dict})
    def delete(self, request, memory_id):
        principal = self.principal
        memory = memory_changeable(principal, memory_id)
        return preview_or_delete(request, lambda: govern.plan_memory_deletion(memory),
                                 lambda: govern.memory_delete(memory=memory, actor=principal.actor))


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
