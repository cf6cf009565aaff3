"""What the dashboard pages show, read through the scoping selectors with the viewer's principal.

Reads only: every write goes through memoryapp.services. Nothing here reaches past the
principal's organization, and an end user's principal sees only what scoping lets them see.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone

from memoryapp.actors import Principal
from memoryapp.models import (
    AccessLog,
    Actor,
    Agent,
    AgentBlock,
    DeletionReceipt,
    Episode,
    Job,
    Memory,
    MemoryEvent,
    MemorySource,
    User,
)
from memoryapp.selectors.scoping import ALL_SCOPES, scoped_episodes, scoped_memories
from memoryapp.selectors.search import SearchParams, search_memories
from memoryapp.selectors.versions import memory_version_ids

if TYPE_CHECKING:  # the plan is made by the service and only shown here
    from memoryapp.services.govern import DeletionPlan

# An end user's own memories (of every session too) plus those of the projects they belong to.
MY_SCOPES = (Memory.Scope.USER, Memory.Scope.SESSION, Memory.Scope.PROJECT)
SEARCH_RESULTS = 30
READS_SHOWN = 50
# A queued job younger than this still counts as about to run (the jobs page keeps polling);
# an older one waits for a broker that is not there and must not keep the page polling forever.
QUEUED_JOB_FRESH_FOR = timedelta(minutes=10)


# --- memory lists ---------------------------------------------------------------------------


# Kind filters beyond the single kinds: a summary restates the facts it was built from, so a list
# shows either the facts ("facts", My memories' default) or the summaries, never both by default.
KIND_GROUPS = {
    "facts": (Memory.Kind.SEMANTIC, Memory.Kind.PROCEDURAL),
    "summaries": (Memory.Kind.SUMMARY, Memory.Kind.REFLECTION),
}


@dataclass(frozen=True)
class MemoryFilters:
    query: str = ""
    kind: str = ""  # one Memory.Kind, or a key of KIND_GROUPS
    scope: str = ""
    status: str = ""
    agent: Agent | None = None
    user: User | None = None
    true_from: datetime | None = None  # the memory was true at some point in [true_from, true_until)
    true_until: datetime | None = None
    needs_review: bool = False


@dataclass
class MemoryListing:
    rows: Sequence[Memory]
    searched: bool = False  # ranked by the real retrieval (each row has `search_score`)
    took_ms: float | None = None


def _with_list_columns(memories: QuerySet[Memory]) -> QuerySet[Memory]:
    """Plus `source_count` (episodes) and `built_from_count` (memories a summary or merge was built from)."""
    return memories.select_related("user", "agent", "project").annotate(
        source_count=Count("source_links", distinct=True), built_from_count=Count("derivation_links", distinct=True)
    )


def _filtered(memories: QuerySet[Memory], filters: MemoryFilters) -> QuerySet[Memory]:
    if filters.kind in KIND_GROUPS:
        memories = memories.filter(kind__in=KIND_GROUPS[filters.kind])
    elif filters.kind:
        memories = memories.filter(kind=filters.kind)
    if filters.status:
        memories = memories.filter(status=filters.status)
    if filters.agent is not None:
        memories = memories.filter(agent=filters.agent)
    if filters.user is not None:
        memories = memories.filter(user=filters.user)
    if filters.needs_review:
        memories = memories.filter(needs_review=True)
    if filters.true_until is not None:
        memories = memories.filter(valid_from__lt=filters.true_until)
    if filters.true_from is not None:
        memories = memories.filter(Q(valid_to__isnull=True) | Q(valid_to__gt=filters.true_from))
    return memories


def _visible(principal: Principal) -> QuerySet[Memory]:
    """Every memory the principal may see, of any scope and any session."""
    return scoped_memories(principal, all_sessions=True)


def memories_listing(
    principal: Principal, *, user: User | None, filters: MemoryFilters, scopes: Iterable[str] = ALL_SCOPES
) -> MemoryListing:
    """Memories for a list page. With a query, the hits of the real retrieval (what an agent asking
    this would get: memories true now, best first), narrowed by the other filters; without one,
    every memory the filters match, newest first."""
    scopes = (filters.scope,) if filters.scope else tuple(scopes)
    memories = _filtered(scoped_memories(principal, user=user, scopes=scopes, all_sessions=True), filters)
    if not filters.query:
        return MemoryListing(rows=_with_list_columns(memories).order_by("-valid_from", "-recorded_at"))
    params = SearchParams(query=filters.query, k=SEARCH_RESULTS, scopes=scopes)
    result = search_memories(principal, user=filters.user or user, params=params)
    scores = {hit.item.pk: hit.score for hit in result.hits}
    rows = {memory.pk: memory for memory in _with_list_columns(memories.filter(pk__in=list(scores)))}
    ranked = [rows[pk] for pk in scores if pk in rows]
    for memory in ranked:
        memory.search_score = scores[memory.pk]
    return MemoryListing(rows=ranked, searched=True, took_ms=result.took_ms)


# --- one memory -----------------------------------------------------------------------------


@dataclass
class EventRow:
    event: MemoryEvent
    actor: str
    world_time: datetime | None  # when the episode behind the operation happened, if it names one
    about: str = ""  # the external id of the user whose memory changed; "" for an event not about one user


@dataclass
class Version:
    memory: Memory
    events: list[EventRow]
    is_viewed: bool


@dataclass
class Read:
    log: AccessLog
    reader: str
    is_agent: bool


@dataclass
class MemoryPage:
    memory: Memory
    sources: list[MemorySource]
    derived_from: list[Memory]
    derivatives: list[Memory]
    versions: list[Version]
    reads: list[Read]
    readers: list[str] = field(default_factory=list)  # distinct agent names, most recent first


def _uuids(values: Iterable[str]) -> list[uuid.UUID]:
    found = []
    for value in values:
        try:
            found.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    return found


def actor_labels(organization_id, actors: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Readable names for (actor_type, actor_id) pairs: agent names, usernames, job names."""
    actors = set(actors)
    agent_ids = _uuids(actor_id for kind, actor_id in actors if kind == Actor.AGENT)
    user_ids = _uuids(actor_id for kind, actor_id in actors if kind in (Actor.USER, Actor.ADMIN))
    agents = {str(pk): name for pk, name in
              Agent.objects.filter(organization_id=organization_id, pk__in=agent_ids).values_list("pk", "name")}
    users = {str(pk): name for pk, name in
             User.objects.filter(organization_id=organization_id, pk__in=user_ids).values_list("pk", "username")}
    labels = {}
    for kind, actor_id in actors:
        if kind == Actor.AGENT:
            labels[kind, actor_id] = agents.get(actor_id, "a deleted agent")
        elif kind in (Actor.USER, Actor.ADMIN):
            labels[kind, actor_id] = users.get(actor_id, "a deleted user")
        elif kind == Actor.JOB:
            labels[kind, actor_id] = f"{actor_id} job"
        else:
            labels[kind, actor_id] = actor_id
    return labels


def _event_episode_ids(event: MemoryEvent) -> list[str]:
    data = event.data or {}
    return list(data.get("sources") or data.get("sources_added") or [])


def event_rows(organization_id, events: Sequence[MemoryEvent]) -> list[EventRow]:
    labels = actor_labels(organization_id, ((e.actor_type, e.actor_id) for e in events))
    episode_ids = _uuids(pk for e in events for pk in _event_episode_ids(e))
    occurred = {str(pk): when for pk, when in
                Episode.objects.filter(organization_id=organization_id, pk__in=episode_ids)
                .values_list("pk", "occurred_at")}
    users = dict(User.objects.filter(organization_id=organization_id, pk__in={e.user_id for e in events if e.user_id})
                 .values_list("pk", "external_id"))
    rows = []
    for event in events:
        times = [occurred[pk] for pk in _event_episode_ids(event) if pk in occurred]
        rows.append(EventRow(event=event, actor=labels[event.actor_type, event.actor_id],
                             world_time=max(times) if times else None,
                             about=users.get(event.user_id, "a deleted user") if event.user_id else ""))
    return rows


def _versions(principal: Principal, memory: Memory) -> list[Version]:
    """Every version of the fact (the supersedes chain), in world-time order, each with its events."""
    chain = memory_version_ids({memory.pk})
    memories = list(_visible(principal).filter(pk__in=chain).order_by("valid_from", "recorded_at"))
    events = list(MemoryEvent.objects.filter(organization_id=principal.organization_id,
                                             memory_id__in=[m.pk for m in memories]).order_by("created_at"))
    rows = event_rows(principal.organization_id, events)
    return [
        Version(memory=m, events=[row for row in rows if row.event.memory_id == m.pk], is_viewed=m.pk == memory.pk)
        for m in memories
    ]


def _reads(principal: Principal, memory: Memory) -> list[Read]:
    logs = list(AccessLog.objects.filter(organization_id=principal.organization_id, memory_ids__contains=[memory.pk])
                .order_by("-created_at")[:READS_SHOWN])
    labels = actor_labels(principal.organization_id, ((log.actor_type, log.actor_id) for log in logs))
    return [Read(log=log, reader=labels[log.actor_type, log.actor_id], is_agent=log.actor_type == Actor.AGENT)
            for log in logs]


def memory_page(principal: Principal, memory: Memory) -> MemoryPage:
    """Where the memory came from, what was built from it, its versions over time and who read it."""
    visible = _visible(principal)
    sources = list(MemorySource.objects.filter(memory=memory, episode__in=scoped_episodes(principal))
                   .select_related("episode").order_by("episode__occurred_at"))
    reads = _reads(principal, memory)
    return MemoryPage(
        memory=memory,
        sources=sources,
        derived_from=list(visible.filter(derivative_links__derived=memory).order_by("valid_from")),
        derivatives=list(visible.filter(derivation_links__source=memory).order_by("kind", "recorded_at")),
        versions=_versions(principal, memory),
        reads=reads,
        readers=list(dict.fromkeys(read.reader for read in reads if read.is_agent)),
    )


@dataclass
class DeletionPreview:
    plan: DeletionPlan
    memories: list[Memory]  # what will be deleted, as the viewer may see it
    recomputed: list[Memory]
    episodes: list[Episode]


def deletion_preview(principal: Principal, plan: DeletionPlan) -> DeletionPreview:
    visible = _visible(principal)
    return DeletionPreview(
        plan=plan,
        memories=list(visible.filter(pk__in=plan.memories).order_by("valid_from")),
        recomputed=list(visible.filter(pk__in=plan.recompute).order_by("recorded_at")),
        episodes=list(scoped_episodes(principal).filter(pk__in=plan.episodes)),
    )


@dataclass
class SourcesOffer:
    """What deleting a memory's messages as well (govern.plan_memory_deletion with_sources) adds to its
    deletion, as the viewer may see it."""

    messages: list[Episode]  # the messages that would go too
    also_deleted: list[Memory]  # other memories only those messages support
    also_rebuilt: list[Memory]  # other memories and summaries they helped write, rebuilt from what remains
    kept: int  # messages of other users, which stay either way

    @property
    def suggested(self) -> bool:
        """Offered checked when the messages carry nothing else that is remembered: then deleting them
        costs nothing more, and is what a user who deletes a memory expects (the agent forgets). When they
        do, the user chooses it with that list in view."""
        return bool(self.messages) and not self.also_deleted and not self.also_rebuilt


def sources_offer(principal: Principal, plain: DeletionPlan, full: DeletionPlan) -> SourcesOffer:
    """`plain` deletes the memory alone; `full` its messages as well (with_sources)."""
    visible = _visible(principal)
    return SourcesOffer(
        messages=list(scoped_episodes(principal).filter(pk__in=full.episodes - plain.episodes)
                      .order_by("occurred_at", "received_at")),
        also_deleted=list(visible.filter(pk__in=full.memories - plain.memories).order_by("valid_from")),
        also_rebuilt=list(visible.filter(pk__in=full.recompute - plain.recompute).order_by("recorded_at")),
        kept=len(full.sources_kept),
    )


def receipts_visible(principal: Principal) -> QuerySet[DeletionReceipt]:
    """Receipts of the principal's organization: all of them for an admin, a user's own otherwise."""
    receipts = DeletionReceipt.objects.filter(organization_id=principal.organization_id)
    if principal.is_admin:
        return receipts
    return receipts.filter(Q(user_id=principal.user.id) | Q(actor_id=str(principal.user.id)))


# --- admin ----------------------------------------------------------------------------------


def org_agents(principal: Principal) -> QuerySet[Agent]:
    return (Agent.objects.filter(organization_id=principal.organization_id)
            .prefetch_related("allowed_users", "allowed_projects")
            .order_by(F("revoked_at").asc(nulls_first=True), "name"))  # live keys first (PostgreSQL sorts NULL last)


def quarantine_queue(principal: Principal) -> QuerySet[Memory]:
    return (_visible(principal).filter(status=Memory.Status.QUARANTINED)
            .select_related("user", "agent").prefetch_related("sources").order_by("-recorded_at"))


@dataclass(frozen=True)
class LogFilters:
    """The operations and access logs' filters: what happened (an operation, an endpoint), who, about
    whom, when. `actor_id` is what an admin types to find who acted: an agent's or a user's name, or an
    id, whole or as shortened in the table; `user` finds whose data the row touched by external id or
    name."""

    what: str = ""
    actor_type: str = ""
    actor_id: str = ""
    user: str = ""
    since: datetime | None = None
    until: datetime | None = None

    def apply(self, rows: QuerySet, what_field: str, organization_id) -> QuerySet:
        if self.what:
            rows = rows.filter(**{what_field: self.what})
        if self.actor_type:
            rows = rows.filter(actor_type=self.actor_type)
        if self.actor_id:
            rows = rows.filter(_actors_named(organization_id, self.actor_id))
        if self.user:
            rows = rows.filter(user_id__in=_users_named(organization_id, self.user).values("pk"))
        if self.since:
            rows = rows.filter(created_at__gte=self.since)
        if self.until:
            rows = rows.filter(created_at__lt=self.until)
        return rows.order_by("-created_at")


def _users_named(organization_id, text: str) -> QuerySet[User]:
    text = text.strip()
    return User.objects.filter(organization_id=organization_id).filter(
        Q(external_id__iexact=text) | Q(username__iexact=text) | Q(external_id__icontains=text)
        | Q(first_name__icontains=text) | Q(last_name__icontains=text)
    ) if text else User.objects.none()


def _actors_named(organization_id, text: str) -> Q:
    """Rows whose actor the text names: the id itself, its start (the table shows ids cut to 13
    characters and a "…", which a pasted value may keep), or an agent's or user's name."""
    text = text.strip().rstrip("…").strip()
    agents = Agent.objects.filter(organization_id=organization_id, name__icontains=text).values_list("pk", flat=True)
    users = _users_named(organization_id, text).values_list("pk", flat=True)
    named = [str(pk) for pk in [*agents, *users]]
    return Q(actor_id=text) | Q(actor_id__istartswith=text) | Q(actor_id__in=named)


def operations_log(principal: Principal, filters: LogFilters) -> QuerySet[MemoryEvent]:
    return filters.apply(MemoryEvent.objects.filter(organization_id=principal.organization_id), "op",
                         principal.organization_id)


def access_log(principal: Principal, filters: LogFilters) -> QuerySet[AccessLog]:
    return filters.apply(AccessLog.objects.filter(organization_id=principal.organization_id), "endpoint",
                         principal.organization_id)


@dataclass
class AccessRow:
    log: AccessLog
    reader: str
    about: str  # the external id of the user whose memories were read; "" for a read not about one user


def access_rows(organization_id, logs: Sequence[AccessLog]) -> list[AccessRow]:
    labels = actor_labels(organization_id, ((log.actor_type, log.actor_id) for log in logs))
    user_ids = {log.user_id for log in logs if log.user_id}
    users = dict(User.objects.filter(organization_id=organization_id, pk__in=user_ids).values_list("pk", "external_id"))
    return [
        AccessRow(log=log, reader=labels[log.actor_type, log.actor_id],
                  about=users.get(log.user_id, "a deleted user") if log.user_id else "")
        for log in logs
    ]


def existing_memory_ids(principal: Principal, ids: Iterable) -> set:
    """Which of these memory ids still exist for the principal (the log links only to those)."""
    return set(_visible(principal).filter(pk__in=[pk for pk in ids if pk]).values_list("pk", flat=True))


@dataclass
class JobKindStatus:
    kind: str
    title: str
    about: str
    last: Job | None


def org_jobs(principal: Principal) -> QuerySet[Job]:
    return Job.objects.filter(organization_id=principal.organization_id).select_related("user").order_by("-created_at")


def job_kinds_status(principal: Principal, kinds: dict[str, tuple[str, str]]) -> list[JobKindStatus]:
    """Each kind (name: (title, what it does)) with its most recent run."""
    jobs = org_jobs(principal)
    return [JobKindStatus(kind=kind, title=title, about=about, last=jobs.filter(kind=kind).first())
            for kind, (title, about) in kinds.items()]


def jobs_in_progress(principal: Principal) -> bool:
    """Whether a job of the organization is running or about to run (the page keeps polling)."""
    fresh = timezone.now() - QUEUED_JOB_FRESH_FOR
    return org_jobs(principal).filter(
        Q(status__in=[Job.Status.RUNNING, Job.Status.RETRYING]) | Q(status=Job.Status.QUEUED, created_at__gte=fresh)
    ).exists()


# --- the user's controls --------------------------------------------------------------------


@dataclass
class AgentSeen:
    agent: Agent
    blocked: bool


def agents_seen(user: User) -> list[AgentSeen]:
    """The agents that read or wrote this user's memories (or are blocked by them), for the per-agent switch."""
    read = AccessLog.objects.filter(organization_id=user.organization_id, user_id=user.id,
                                    actor_type=Actor.AGENT).values_list("actor_id", flat=True).distinct()
    wrote = Episode.objects.filter(user=user, agent__isnull=False).values("agent_id")
    blocked = set(AgentBlock.objects.filter(user=user).values_list("agent_id", flat=True))
    agents = Agent.objects.filter(organization_id=user.organization_id).filter(
        Q(pk__in=[value for value in read if _is_uuid(value)]) | Q(pk__in=wrote) | Q(pk__in=blocked)
    ).order_by("name")
    return [AgentSeen(agent=agent, blocked=agent.pk in blocked) for agent in agents]


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True
