"""The one way to read memories and episodes: a principal, then organization, grants, user and
requested scopes, before any other filter. Another tenant's row simply does not exist here."""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable
from datetime import datetime

from django.contrib.postgres.expressions import ArraySubquery
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, Q, QuerySet
from django.http import Http404
from django.utils import timezone

from memoryapp.actors import Principal
from memoryapp.models import Agent, AgentBlock, Episode, Job, Memory, Project, User

ALL_SCOPES = tuple(Memory.Scope.values)


Grants = tuple[list, list]  # an agent key's allowed user ids and project ids (empty: not limited)


def _agent_grants(principal: Principal) -> Grants | None:
    """The agent key's grants in one query (None for other principals): a search read them in three."""
    if principal.agent is None:
        return None
    users = Agent.allowed_users.through.objects.filter(agent_id=OuterRef("pk")).values("user_id")
    projects = Agent.allowed_projects.through.objects.filter(agent_id=OuterRef("pk")).values("project_id")
    return Agent.objects.filter(pk=principal.agent.pk).values_list(ArraySubquery(users), ArraySubquery(projects)).get()


def _allowed_users_q(principal: Principal, field: str, grants: Grants | None = None) -> Q:
    """Agent restrictions and the end user's own view, as a filter on `field` (a user id column).
    `grants`: _agent_grants, when the caller has them already."""
    if principal.agent is not None:
        allowed = (grants or _agent_grants(principal))[0]
        # A user who blocked this agent is out of its reach everywhere: reads, writes and changes.
        blocked = ~Q(**{f"{field}__in": AgentBlock.objects.filter(agent=principal.agent).values("user_id")})
        return (Q(**{f"{field}__in": allowed}) if allowed else Q()) & blocked
    if principal.is_admin:
        return Q()
    return Q(**{field: principal.user.id})


def _allowed_projects(principal: Principal, grants: Grants | None = None) -> list | None:
    """Project ids the principal may read, or None for all of the organization's. A project is read by
    its members and by keys allowed it; a key limited to some users reads only their projects.
    `grants`: as in _allowed_users_q."""
    if principal.agent is not None:
        allowed_users, allowed_projects = grants or _agent_grants(principal)
        if not allowed_users and not allowed_projects:
            return None
        projects = Project.objects.filter(organization_id=principal.organization_id)
        if allowed_projects:
            projects = projects.filter(pk__in=allowed_projects)
        if allowed_users:
            projects = projects.filter(members__in=allowed_users)
        return list(projects.values_list("id", flat=True).distinct())
    if principal.is_admin:
        return None
    return list(principal.user.projects.values_list("id", flat=True))


def _member_projects(user: User):
    return Project.members.through.objects.filter(user_id=user.id).values("project_id")


def scoped_memory_parts(
    principal: Principal,
    *,
    user: User | None = None,
    scopes: Iterable[str] = ALL_SCOPES,
    session: str = "",
    project: Project | None = None,
    all_sessions: bool = False,
) -> list[QuerySet[Memory]]:
    """The memories of scoped_memories as one queryset per requested scope. A memory has one scope,
    so the parts never overlap; a search reads each part on its own, where an index serves it whole.

    Session memories come from `session` only, or from every session with `all_sessions` (what lists
    and governance show: an agent's search is about its own session, a person sees them all)."""
    scopes = set(scopes)
    base = Memory.objects.filter(organization_id=principal.organization_id)
    grants = _agent_grants(principal)
    owned = _allowed_users_q(principal, "user_id", grants)
    allowed_projects = _allowed_projects(principal, grants)

    parts = []
    personal = owned & (Q(user=user) if user is not None else Q())
    if "user" in scopes:
        parts.append(base.filter(Q(scope=Memory.Scope.USER) & personal))
    if "session" in scopes and (session or all_sessions):
        in_session = Q(scope=Memory.Scope.SESSION) & (Q() if all_sessions else Q(session=session))
        parts.append(base.filter(in_session & personal))
    if "project" in scopes and allowed_projects != []:  # [] is a user in no project
        in_project = Q(scope=Memory.Scope.PROJECT)
        if project is not None:
            in_project &= Q(project=project)
        if allowed_projects is not None:
            in_project &= Q(project_id__in=allowed_projects)
        if user is not None:  # a read about one person: the projects they work in, not every project
            in_project &= Q(project_id__in=_member_projects(user))
        parts.append(base.filter(in_project))
    if "org" in scopes:
        parts.append(base.filter(scope=Memory.Scope.ORG))
    return parts


def memories_of_parts(parts: list[QuerySet[Memory]]) -> QuerySet[Memory]:
    """The parts of scoped_memory_parts as one queryset (none when no scope was asked)."""
    return functools.reduce(operator.or_, parts) if parts else Memory.objects.none()


def scoped_memories(
    principal: Principal,
    *,
    user: User | None = None,
    scopes: Iterable[str] = ALL_SCOPES,
    session: str = "",
    project: Project | None = None,
    all_sessions: bool = False,
) -> QuerySet[Memory]:
    """Memories the principal may read, limited to `user` and the requested scopes (sessions as in
    scoped_memory_parts)."""
    parts = scoped_memory_parts(
        principal, user=user, scopes=scopes, session=session, project=project, all_sessions=all_sessions
    )
    return memories_of_parts(parts)


def scoped_episodes(principal: Principal, *, user: User | None = None) -> QuerySet[Episode]:
    grants = _agent_grants(principal)
    episodes = Episode.objects.filter(organization_id=principal.organization_id).filter(
        _allowed_users_q(principal, "user_id", grants)
    )
    allowed_projects = _allowed_projects(principal, grants)
    if allowed_projects is not None:
        episodes = episodes.filter(Q(project__isnull=True) | Q(project_id__in=allowed_projects))
    return episodes.filter(user=user) if user is not None else episodes


def valid_at(
    memories: QuerySet[Memory],
    *,
    as_of: datetime | None = None,
    known_at: datetime | None = None,
    include_archived: bool = False,
) -> QuerySet[Memory]:
    """Memories true at world time `as_of` as the store believed at `known_at` (both default now).

    Half-open intervals. A superseded fact comes back for questions about its time; an
    invalidated one only for a `known_at` before it was found wrong; quarantined never.
    """
    now = timezone.now()
    as_of, known_at = as_of or now, known_at or now
    statuses = [Memory.Status.ACTIVE, Memory.Status.SUPERSEDED, Memory.Status.INVALIDATED]
    if include_archived:
        statuses.append(Memory.Status.ARCHIVED)
    end_known = Q(valid_to__isnull=False, valid_to_recorded_at__lte=known_at)
    return memories.filter(
        Q(status__in=statuses),
        Q(valid_from__lte=as_of),
        ~(end_known & Q(valid_to__lte=as_of)),
        Q(recorded_at__lte=known_at),
        Q(expired_at__isnull=True) | Q(expired_at__gt=known_at),
    )


def user_visible(principal: Principal, external_id: str) -> User:
    """The organization's user with this external id, if the principal may see them (else 404)."""
    user = users_in_reach(principal).filter(external_id=external_id).first()
    if user is None:
        if principal.agent is not None and AgentBlock.objects.filter(
            agent=principal.agent, user__organization_id=principal.organization_id, user__external_id=external_id
        ).exists():
            # Said plainly, so the agent's developer knows why rather than hunting a typo.
            raise PermissionDenied(f"{external_id} has blocked this agent from their memories")
        raise Http404(f"no user {external_id!r}")
    return user


def reading_refusal(principal: Principal, user: User | None) -> str:
    """Why an agent may not read this user's memories now ("" when it may): the user's own switch."""
    if principal.agent is not None and user is not None and user.agents_reading_paused:
        return f"{user.external_id} has stopped agents reading their memories"
    return ""


def require_reading(principal: Principal, user: User | None) -> None:
    """Every agent read about one person (search, context, episode search) passes here: REST and MCP alike."""
    refusal = reading_refusal(principal, user)
    if refusal:
        raise PermissionDenied(refusal)


def memory_visible(principal: Principal, memory_id) -> Memory:
    """Any memory the principal may read, whatever its status, scope or session (else 404)."""
    memories = scoped_memories(principal, all_sessions=True)
    memory = memories.filter(pk=memory_id).select_related("user", "project").first()
    if memory is None:
        raise Http404("no such memory")
    return memory


def memory_changeable(principal: Principal, memory_id, *, correcting: bool = False) -> Memory:
    """A memory the principal may delete, or correct with `correcting` (else 404, or 403 when it may
    read it but not change it)."""
    memory = memory_visible(principal, memory_id)
    refusal = change_refusal(principal, memory, correcting=correcting)
    if refusal:
        raise PermissionDenied(refusal)
    return memory


def change_refusal(principal: Principal, memory: Memory, *, correcting: bool = False) -> str:
    """Why the principal may not change this memory it can read ("" when it may). The one rule for every
    route: an end user or a key limited to some users changes only those users' memories; an org-wide
    memory is corrected only by an admin or an unrestricted key (it reaches everyone's context), though
    its owner may still delete it."""
    if not principal.is_restricted:
        return ""
    if memory.user_id is None or not users_in_reach(principal).filter(pk=memory.user_id).exists():
        return ("you may change only your own memories" if principal.user else
                "this agent key may change only the memories of the users it is limited to")
    if correcting and memory.scope == Memory.Scope.ORG:
        return "only organization admins and unrestricted agent keys change org-wide memories"
    return ""


def users_in_reach(principal: Principal) -> QuerySet[User]:
    """Users the principal acts for: it reads about them, writes for them and changes their memories."""
    return User.objects.filter(organization_id=principal.organization_id).filter(_allowed_users_q(principal, "id"))


def episode_visible(principal: Principal, episode_id) -> Episode:
    episode = scoped_episodes(principal).filter(pk=episode_id).select_related("user", "project").first()
    if episode is None:
        raise Http404("no such episode")
    return episode


def project_visible(principal: Principal, name: str) -> Project | None:
    if not name:
        return None
    projects = Project.objects.filter(organization_id=principal.organization_id, name=name)
    allowed = _allowed_projects(principal)
    if allowed is not None:
        projects = projects.filter(pk__in=allowed)
    project = projects.first()
    if project is None:
        raise Http404(f"no project {name!r}")
    return project


def job_visible(principal: Principal, job_id) -> Job:
    """A job of the principal's organization; a job about one user only for who may see that user."""
    jobs = Job.objects.filter(organization_id=principal.organization_id)
    restricted = principal.agent is not None and principal.agent.allowed_users.exists()
    if restricted or (principal.agent is None and not principal.is_admin):
        jobs = jobs.filter(_allowed_users_q(principal, "user_id"))
    job = jobs.filter(pk=job_id).first()
    if job is None:
        raise Http404("no such job")
    return job
