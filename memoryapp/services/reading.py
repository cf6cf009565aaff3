"""Agent reads: the one way an agent (REST, MCP, the demo's agents) reads memories and episodes. Each
read goes through the selectors and writes its access log row (services.access), so a new endpoint
cannot forget the log: DESIGN section 2, every read by an agent leaves one.

A recall (search, context, a profile) answers a question: it is logged whoever asks, and refreshes
what it returned. A lookup (a list, one memory or episode by id, a history, an export) is logged for
agents only: a person reading their own pages is no agent read, and paging is not remembering."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from uuid import UUID

from django.db.models import QuerySet

from memoryapp.actors import Principal
from memoryapp.models import Episode, Memory, MemoryEvent, User
from memoryapp.selectors.context import Context, context_assemble
from memoryapp.selectors.listing import memories_listed
from memoryapp.selectors.ranking import default_weights
from memoryapp.selectors.scoping import (
    episode_visible,
    memory_visible,
    project_visible,
    scoped_episodes,
    scoped_memories,
    valid_at,
)
from memoryapp.selectors.search import SearchParams, SearchResult, search_episodes, search_memories
from memoryapp.selectors.versions import memory_history
from memoryapp.services import govern
from memoryapp.services.access import access_record

Page = Callable[[QuerySet], Sequence]  # what of a listing is shown: a paginator's page, the first n


def search_params(principal: Principal, data: Mapping, *, episodes: bool = False) -> SearchParams:
    """SearchParams from a validated SearchIn or ContextIn (REST body or MCP arguments). Weights asked
    for in part take the others from the search's own defaults (selectors.ranking.default_weights)."""
    weights = data.get("weights")
    return SearchParams(
        query=data["query"], k=data.get("k", SearchParams.k), scopes=tuple(data.get("scopes") or Memory.Scope.values),
        session=data.get("session", ""), project=project_visible(principal, data.get("project", "")),
        as_of=data.get("as_of"), known_at=data.get("known_at"), min_score=data.get("min_score"),
        mmr_lambda=data.get("mmr_lambda"),
        weights=replace(default_weights(episodes=episodes), **weights) if weights else None,
    )


def _recalled(principal: Principal, items: list, *, query: str, endpoint: str, user: User | None) -> None:
    access_record(principal, items=items, query=query, endpoint=endpoint, user_id=user.id if user else None)


def _looked_up(principal: Principal, items: Sequence, *, endpoint: str, user: User | None = None,
               query: str = "") -> None:
    if principal.agent is not None:
        access_record(principal, items=list(items), query=query, endpoint=endpoint,
                      user_id=user.id if user else None, recalled=False)


# --- recalls --------------------------------------------------------------------------------------


def memories_recall(principal: Principal, *, user: User, params: SearchParams, endpoint: str = "search"
                    ) -> SearchResult:
    result = search_memories(principal, user=user, params=params)
    _recalled(principal, [hit.item for hit in result.hits], query=params.query, endpoint=endpoint, user=user)
    return result


def episodes_recall(principal: Principal, *, user: User, params: SearchParams, endpoint: str = "episodes/search"
                    ) -> SearchResult:
    result = search_episodes(principal, user=user, params=params)
    _recalled(principal, [hit.item for hit in result.hits], query=params.query, endpoint=endpoint, user=user)
    return result


def context_recall(principal: Principal, *, user: User, params: SearchParams, budget_tokens: int,
                   endpoint: str = "context") -> Context:
    context = context_assemble(principal, user=user, params=params, budget_tokens=budget_tokens)
    _recalled(principal, context.memories, query=params.query, endpoint=endpoint, user=user)
    return context


def profile_recall(principal: Principal, *, user: User, endpoint: str) -> list[Memory]:
    """The user's active summaries, newest first (the MCP profile resource)."""
    summaries = list(valid_at(scoped_memories(principal, user=user, scopes=[Memory.Scope.USER]))
                     .filter(status=Memory.Status.ACTIVE, kind=Memory.Kind.SUMMARY)
                     .select_related("user", "project").order_by("-recorded_at"))
    _recalled(principal, summaries, query="", endpoint=endpoint, user=user)
    return summaries


# --- lookups --------------------------------------------------------------------------------------


def memories_lookup(principal: Principal, *, user: User | None, page: Page, endpoint: str = "memories",
                    **filters) -> list[Memory]:
    """The page of selectors.listing.memories_listed(**filters) that `page` picks, logged."""
    shown = list(page(memories_listed(principal, user=user, **filters)))
    _looked_up(principal, shown, endpoint=endpoint, user=user, query=filters.get("q", ""))
    return shown


def episodes_lookup(principal: Principal, *, user: User | None, page: Page, session: str = "",
                    endpoint: str = "episodes") -> list[Episode]:
    episodes = scoped_episodes(principal).select_related("user", "project")
    if user is not None:
        episodes = episodes.filter(user=user)
    if session:
        episodes = episodes.filter(session=session)
    shown = list(page(episodes))
    _looked_up(principal, shown, endpoint=endpoint, user=user)
    return shown


def episode_lookup(principal: Principal, *, episode_id: UUID | str, endpoint: str = "episodes/{id}") -> Episode:
    episode = episode_visible(principal, episode_id)
    _looked_up(principal, [episode], endpoint=endpoint, user=episode.user)
    return episode


@dataclass(frozen=True)
class MemoryRead:
    memory: Memory
    versions: list[Memory]  # every version of the fact, oldest first (the memory among them)
    events: list[MemoryEvent]  # what happened to them, oldest first


def memory_lookup(principal: Principal, *, memory_id: UUID | str, endpoint: str = "memories/{id}") -> MemoryRead:
    """One memory with its history; the versions are shown too, so they are logged with it."""
    memory = memory_visible(principal, memory_id)
    versions, events = memory_history(memory)
    _looked_up(principal, versions, endpoint=endpoint, user=memory.user)
    return MemoryRead(memory=memory, versions=versions, events=events)


def user_export_read(principal: Principal, *, user: User, endpoint: str = "users/{user}/export") -> dict:
    """Everything of the user (services.govern.user_export); the log names every memory and episode in it."""
    document = govern.user_export(user=user)
    shown = [*Memory.objects.filter(user=user).only("id"), *Episode.objects.filter(user=user).only("id")]
    _looked_up(principal, shown, endpoint=endpoint, user=user)
    return document
