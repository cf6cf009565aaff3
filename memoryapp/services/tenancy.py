"""Writes for organizations, users and agent keys."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils import timezone

from memoryapp.actors import SYSTEM, ActorRef, Principal
from memoryapp.models import Agent, Memory, MemoryEvent, Organization, Project, User
from memoryapp.services.apply import event_record
from memoryapp.services.gate import redacted


def admin_actor(principal: Principal | None, *, organization_id) -> ActorRef:
    """Who performs an administrative change (agent keys, logins) in the organization: an admin of it,
    or, with no principal, the operator (a management command, the demo seed), recorded as the system.
    Anyone else is refused, whatever page or command led here."""
    if principal is None:
        return SYSTEM
    if principal.agent is not None or not principal.is_admin or principal.organization_id != organization_id:
        raise PermissionDenied("only an admin of the organization manages its agent keys and logins")
    return principal.actor


def organization_get_or_create(*, name: str) -> Organization:
    organization, _ = Organization.objects.get_or_create(name=name)
    return organization


@transaction.atomic
def user_create(
    *,
    organization: Organization,
    external_id: str,
    username: str | None = None,
    password: str | None = None,
    email: str = "",
    is_org_admin: bool = False,
    actor: ActorRef = SYSTEM,
) -> User:
    """A user of the organization; without a password the account cannot log in until invited.
    `actor`: the agent that named the user first, or the operator (commands, the demo seed)."""
    user = User(
        organization=organization,
        external_id=external_id,
        username=username or _placeholder_username(organization, external_id),
        email=email,
        is_org_admin=is_org_admin,
    )
    if password:
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.save()
    event_record(organization_id=organization.id, op=MemoryEvent.Op.ADD, actor=actor, user_id=user.id,
                 reason="admin account created" if is_org_admin else "user created")
    return user


def _placeholder_username(organization: Organization, external_id: str) -> str:
    """A unique login name until the user is invited: organization prefix plus the external id
    (hashed when too long for the column, so two long ids never collide)."""
    name = f"{organization.id.hex[:8]}.{external_id}"
    if len(name) <= 150:
        return name
    return f"{name[:120]}.{hashlib.sha256(external_id.encode()).hexdigest()[:24]}"


def user_get_or_create_for_agent(*, organization: Organization, external_id: str, actor: ActorRef = SYSTEM) -> User:
    """Agents may name end users who have no login yet: create them inside the agent's organization."""
    user = User.objects.filter(organization=organization, external_id=external_id).first()
    if user is not None:
        return user
    try:
        with transaction.atomic():  # a savepoint: a concurrent request may create the same user first
            return user_create(organization=organization, external_id=external_id, actor=actor)
    except IntegrityError:
        return User.objects.get(organization=organization, external_id=external_id)


@transaction.atomic
def agent_create(
    *,
    organization: Organization,
    name: str,
    permissions: Iterable[str],
    allowed_users: Iterable[User] = (),
    allowed_projects: Iterable[Project] = (),
    principal: Principal | None = None,
) -> tuple[Agent, str]:
    """A new agent and its raw key. The key is returned once and only its hash is stored."""
    actor = admin_actor(principal, organization_id=organization.id)
    permissions = set(permissions)
    unknown = permissions - set(Agent.Permission.values)
    if unknown:
        raise ValueError(f"unknown permissions {sorted(unknown)}; use read, write, delete")
    raw_key, prefix = Agent.new_key()
    agent = Agent.objects.create(
        organization=organization,
        name=name,
        key_prefix=prefix,
        key_hash=Agent.hash_key(raw_key),
        can_read="read" in permissions,
        can_write="write" in permissions,
        can_delete="delete" in permissions,
    )
    agent.allowed_users.set(allowed_users)
    agent.allowed_projects.set(allowed_projects)
    event_record(organization_id=organization.id, op=MemoryEvent.Op.ADD, actor=actor,
                 reason=f"agent key created: {agent.name}"[:300], data=_agent_data(agent))
    return agent, raw_key


def _agent_data(agent: Agent) -> dict:
    """An agent event's data: which key, with which rights and limits (ids, never the key)."""
    return {"agent": str(agent.pk), "key_prefix": agent.key_prefix, "permissions": sorted(agent.permissions),
            "allowed_users": sorted(str(pk) for pk in agent.allowed_users.values_list("pk", flat=True)),
            "allowed_projects": sorted(str(pk) for pk in agent.allowed_projects.values_list("pk", flat=True))}


@transaction.atomic
def agent_revoke(*, agent: Agent, principal: Principal | None = None) -> None:
    """The key is refused from now on, for good; revoking it again changes nothing and records nothing."""
    actor = admin_actor(principal, organization_id=agent.organization_id)
    now = timezone.now()
    if Agent.objects.filter(pk=agent.pk, revoked_at__isnull=True).update(revoked_at=now):
        agent.revoked_at = now
        event_record(organization_id=agent.organization_id, op=MemoryEvent.Op.UPDATE, actor=actor,
                     reason=f"agent key revoked: {agent.name}"[:300], data=_agent_data(agent))


@transaction.atomic
def agent_set_active(*, agent: Agent, active: bool, principal: Principal | None = None) -> None:
    """Disable (or enable again) an agent: while disabled its key is refused, and nothing else changes."""
    actor = admin_actor(principal, organization_id=agent.organization_id)
    Agent.objects.filter(pk=agent.pk).update(is_active=active)
    agent.is_active = active
    event_record(organization_id=agent.organization_id, op=MemoryEvent.Op.UPDATE, actor=actor,
                 reason=f"agent {'enabled' if active else 'disabled'}: {agent.name}"[:300],
                 data=_agent_data(agent))


def agent_mark_used(*, agent: Agent) -> None:
    """When the key was last presented, for the keys page; bookkeeping, not an audited change."""
    Agent.objects.filter(pk=agent.pk).update(last_used_at=timezone.now())


def generate_password() -> str:
    return secrets.token_urlsafe(12)


def user_for_write(principal, external_id: str) -> User:
    """The user an agent writes for; an unrestricted agent may name a user who has no account
    yet (created without a usable password, to be invited later). Anyone else gets a 404."""
    from django.http import Http404

    from memoryapp.selectors.scoping import user_visible

    try:
        return user_visible(principal, external_id)
    except Http404:
        agent = principal.agent
        if agent is None or agent.allowed_users.exists():
            raise
        return user_get_or_create_for_agent(organization=agent.organization, external_id=external_id,
                                            actor=ActorRef.for_agent(agent))


def project_for_write(principal, name: str, *, user: User) -> Project | None:
    """The project a write for `user` goes into. An admin or an unrestricted key may name any project
    (created on first use) and the user becomes a member: the writer vouches that they work in it.
    Anyone restricted writes only into projects the user already belongs to (and the key may reach)."""
    from memoryapp.selectors.scoping import project_visible

    if not name:
        return None
    name = redacted(name)  # a project name is stored text too: a secret in it never reaches the store
    if not principal.is_restricted:
        project = Project.objects.get_or_create(organization_id=principal.organization_id, name=name)[0]
        project.members.add(user)
        return project
    project = project_visible(principal, name)
    if not project.members.filter(pk=user.pk).exists():
        raise PermissionDenied(f"{user.external_id} is not a member of the project {name!r}")
    return project


def scope_for_write(principal, scope: str) -> str:
    """Org-wide memories reach every user's context: only admins and unrestricted keys write them."""
    if scope == Memory.Scope.ORG and principal.is_restricted:
        raise PermissionDenied("only organization admins and unrestricted agent keys write org-wide memories")
    return scope


@transaction.atomic
def user_invite(*, user: User, username: str, principal: Principal | None = None) -> str:
    """Let a user an agent created log in: a login name and a one-time password, returned once.
    Whoever passed it on knows it too, so the user must choose their own at first login."""
    actor = admin_actor(principal, organization_id=user.organization_id)
    if user.has_usable_password():
        raise ValueError(f"{user.external_id!r} can already log in as {user.username!r}")
    if User.objects.filter(username=username).exclude(pk=user.pk).exists():
        raise ValueError(f"the login name {username!r} is taken")
    password = generate_password()
    user.username = username
    user.set_password(password)
    user.must_change_password = True
    user.save(update_fields=["username", "password", "must_change_password"])
    event_record(organization_id=user.organization_id, op=MemoryEvent.Op.UPDATE, actor=actor, user_id=user.id,
                 reason="invited: may log in with a one-time password")
    return password


@transaction.atomic
def user_display_name_set(*, user: User, display_name: str, principal: Principal | None = None) -> None:
    """The name an admin gives the user for memory texts ("Maria lives in Madrid."), kept in
    AbstractUser's `first_name`; "" clears it. A name the user states themselves still wins
    (selectors.names.user_display_name). Only new memories use it: texts already written stay."""
    actor = admin_actor(principal, organization_id=user.organization_id)
    name = redacted(" ".join(display_name.split()))[:150]  # stored text: a pasted secret never reaches it
    user.first_name = name
    user.save(update_fields=["first_name"])
    event_record(organization_id=user.organization_id, op=MemoryEvent.Op.UPDATE, actor=actor, user_id=user.id,
                 reason="display name set" if name else "display name cleared")


@transaction.atomic
def user_password_set(*, user: User, password: str) -> None:
    """The user's own password (validated by the caller's form); a one-time password is then spent.
    Sessions elsewhere end: they were opened with the old password."""
    user.set_password(password)
    user.must_change_password = False
    user.save(update_fields=["password", "must_change_password"])
    event_record(organization_id=user.organization_id, op=MemoryEvent.Op.UPDATE, actor=ActorRef.for_user(user),
                 user_id=user.id, reason="changed their password")


def login_failures_forget(*, username: str, ip_address: str | None) -> None:
    """After a successful login, forget that account's failed attempts from that address, and only
    those: django-axes' own reset also drops every failure from the address, so whoever holds an
    account could log in to it between guesses at someone else's and never reach the limit."""
    from axes.models import AccessAttempt

    AccessAttempt.objects.filter(username=username, ip_address=ip_address).delete()
