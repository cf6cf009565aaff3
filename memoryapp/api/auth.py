"""Who is calling: agents by Bearer key, dashboard users by session. Both become a Principal."""

from __future__ import annotations

from rest_framework import authentication, exceptions, permissions

from memoryapp.actors import Principal
from memoryapp.models import Agent, User
from memoryapp.services.tenancy import agent_mark_used


class AgentKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, key = header.partition(" ")
        if scheme != self.keyword or not key.strip():
            raise exceptions.AuthenticationFailed("use 'Authorization: Bearer <agent key>'")
        agent = Agent.objects.for_api_key(key.strip())
        if agent is None:
            raise exceptions.AuthenticationFailed("unknown or revoked agent key")
        agent_mark_used(agent=agent)
        return agent, agent

    def authenticate_header(self, request):
        return self.keyword


def principal_of(request) -> Principal:
    if isinstance(request.user, Agent):
        return Principal.for_agent(request.user)
    return Principal.for_user(request.user)


class HasPermissionFor(permissions.BasePermission):
    """Agents need `read` for safe methods and searches, `write` to create or correct, `delete`
    to delete; a disabled agent is refused everything. Logged-in users act on what their
    scope lets them see (selectors decide), so they pass here."""

    message = "this agent key lacks the permission for this request"

    def has_permission(self, request, view):
        if not request.user or not request.user.is_authenticated:
            return False
        if isinstance(request.user, User):
            return request.user.organization_id is not None
        agent: Agent = request.user
        if not agent.is_active:
            self.message = "this agent has been disabled by an administrator"
            return False
        needed = getattr(view, "required_permission", None) or _permission_for_method(request.method)
        return needed in agent.permissions


def _permission_for_method(method: str) -> str:
    return {"GET": "read", "HEAD": "read", "OPTIONS": "read", "DELETE": "delete"}.get(method, "write")
