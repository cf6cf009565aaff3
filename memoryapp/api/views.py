"""REST API v1: thin views. Validation in serializers, writes in services, reads in selectors."""

from __future__ import annotations

from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryapp.api import contract
from memoryapp.api import serializers as s
from memoryapp.api.auth import HasPermissionFor, principal_of
from memoryapp.api.pagination import NewestFirst
from memoryapp.models import Memory
from memoryapp.selectors.scoping import episode_visible, job_visible, memory_changeable, user_visible
from memoryapp.services import govern, reading
from memoryapp.services.ingest import IdempotencyConflict
from memoryapp.services.statements import conversation_remember, statement_remember


class Api(APIView):
    permission_classes = [HasPermissionFor]

    @property
    def principal(self):
        return principal_of(self.request)

    def valid(self, serializer_class, data):
        serializer = serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data


def search_response(view: Api, *, episodes: bool, endpoint: str) -> Response:
    """Search memories or episodes for the request, log the read, answer the contract's shape."""
    data = view.valid(s.SearchIn, view.request.data)
    return Response(search_answer(view.principal, data, episodes=episodes, endpoint=endpoint))


def search_answer(principal, data: dict, *, episodes: bool, endpoint: str) -> dict:
    """The search contract's answer to validated SearchIn data, the read logged (REST and MCP alike)."""
    user = user_visible(principal, data["user"])
    recall = reading.episodes_recall if episodes else reading.memories_recall
    result = recall(principal, user=user, params=reading.search_params(principal, data, episodes=episodes),
                    endpoint=endpoint)
    item_name, item_json = ("episode", s.episode_json) if episodes else ("memory", s.memory_json)
    brief = ("relevance", "recency", "importance")
    return {
        "results": [{item_name: item_json(h.item), "score": h.score,
                     "components": h.components if data["explain"] else {k: h.components[k] for k in brief}}
                    for h in result.hits],
        "abstained": result.abstained, "took_ms": result.took_ms,
        "ordered_by": result.ordered_by, **({"searched_as": result.searched_as} if data["explain"] else {}),
    }


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


class EpisodesView(Api):
    @contract.episodes_ingest
    def post(self, request):
        data = self.valid(s.EpisodesIngestIn, request.data)
        key = request.headers.get("Idempotency-Key", "").strip()
        if len(key) > 200:
            raise ValidationError({"Idempotency-Key": ["at most 200 characters"]})
        try:
            result = conversation_remember(self.principal, user=data["user"], messages=data["messages"],
                                           session=data["session"], project=data["project"], wait=data["wait"],
                                           request_key=key)
        except IdempotencyConflict as exc:
            from memoryapp.api.errors import Conflict

            raise Conflict(str(exc)) from exc
        if result.paused:
            return Response({"episodes": [], "job": None, "paused": True,
                             "message": f"memory writing is paused for {result.user.external_id}; nothing was stored"},
                            status=status.HTTP_200_OK)
        ids = [str(e.id) for e in result.episodes]
        replayed = {"replayed": True} if result.replayed else {}
        if data["wait"]:
            # A replay extracts only what the first request left pending: its operations are not repeated.
            return Response({"episodes": ids, "job": None, "operations": [o.as_dict() for o in result.operations],
                             **replayed}, status=status.HTTP_200_OK if replayed else status.HTTP_201_CREATED)
        job = str(result.job.id) if result.job else None
        if result.replayed:
            return Response({"episodes": ids, "job": job, **replayed})
        return Response({"episodes": ids, "job": job}, status=status.HTTP_202_ACCEPTED)

    @contract.episodes_list
    def get(self, request):
        principal = self.principal
        params = self.valid(EpisodeListQuery, request.query_params.dict())
        user = user_visible(principal, params["user"]) if params.get("user") else None
        paginator = NewestFirst("occurred_at")
        page = reading.episodes_lookup(principal, user=user, session=params.get("session", ""),
                                       page=lambda episodes: paginator.paginate_queryset(episodes, request, view=self))
        return paginator.get_paginated_response([s.episode_json(e) for e in page])


class EpisodeSearchView(Api):
    required_permission = "read"  # a POST that only reads

    @contract.episodes_search
    def post(self, request):
        return search_response(self, episodes=True, endpoint="episodes/search")


class EpisodeView(Api):
    @contract.episode_read
    def get(self, request, episode_id):
        return Response(s.episode_json(reading.episode_lookup(self.principal, episode_id=episode_id)))

    @contract.episode_delete
    def delete(self, request, episode_id):
        principal = self.principal
        episode = episode_visible(principal, episode_id)
        return preview_or_delete(request, lambda: govern.plan_episode_deletion(episode),
                                 lambda: govern.episode_delete(episode=episode, actor=principal.actor))


# --- memories ---------------------------------------------------------------------------------


class MemoriesView(Api):
    @contract.memories_state
    def post(self, request):
        data = self.valid(s.MemoryCreateIn, request.data)
        result = statement_remember(self.principal, **data)
        if result.paused:
            return Response({"operations": [], "memory": None, "paused": True,
                             "message": f"memory writing is paused for {result.user.external_id}; nothing was stored"})
        return Response({"operations": [o.as_dict() for o in result.operations],
                         "memory": s.memory_json(result.memory)}, status=status.HTTP_201_CREATED)

    @contract.memories_list
    def get(self, request):
        principal = self.principal
        params = self.valid(MemoryListQuery, request.query_params.dict())
        name = params.pop("user", None)
        user = user_visible(principal, name) if name else None
        paginator = NewestFirst("recorded_at")
        page = reading.memories_lookup(principal, user=user, **params,
                                       page=lambda memories: paginator.paginate_queryset(memories, request, view=self))
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


class MemoryDeletionQuery(s.serializers.Serializer):
    with_sources = s.serializers.BooleanField(required=False, default=False)


class MemoryView(Api):
    @contract.memory_read
    def get(self, request, memory_id):
        read = reading.memory_lookup(self.principal, memory_id=memory_id)
        return Response({**s.memory_json(read.memory, detail=True), "history": _history(read)})

    @contract.memory_correct
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

    @contract.memory_delete
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


def _history(read: reading.MemoryRead) -> dict:
    return {"versions": [s.memory_json(v) for v in read.versions], "events": [s.event_json(e) for e in read.events]}


class MemoryHistoryView(Api):
    @contract.memory_history
    def get(self, request, memory_id):
        return Response(_history(reading.memory_lookup(self.principal, memory_id=memory_id,
                                                       endpoint="memories/{id}/history")))


# --- search and context ---------------------------------------------------------------------


class SearchView(Api):
    required_permission = "read"

    @contract.search
    def post(self, request):
        return search_response(self, episodes=False, endpoint="search")


class ContextView(Api):
    required_permission = "read"  # a POST that only reads

    @contract.context
    def post(self, request):
        data = self.valid(s.ContextIn, request.data)
        principal = self.principal
        context = reading.context_recall(principal, user=user_visible(principal, data["user"]),
                                         params=reading.search_params(principal, data),
                                         budget_tokens=data["budget_tokens"])
        return Response({"context": context.text, "memories": [str(m.id) for m in context.memories],
                         "tokens": context.tokens, "abstained": not context.memories,
                         "took_ms": context.search.took_ms})


# --- users and jobs ---------------------------------------------------------------------------


class UserExportView(Api):
    required_permission = "read"

    @contract.user_export
    def get(self, request, user):
        principal = self.principal
        return Response(reading.user_export_read(principal, user=user_visible(principal, user)))


class UserMemoriesView(Api):
    @contract.user_memories_delete
    def delete(self, request, user):
        principal = self.principal
        target = user_visible(principal, user)
        return preview_or_delete(request, lambda: govern.plan_user_deletion(target),
                                 lambda: govern.user_memories_delete(user=target, actor=principal.actor))


class JobView(Api):
    required_permission = "read"

    @contract.job_read
    def get(self, request, job_id):
        return Response(s.job_json(job_visible(self.principal, job_id)))
