"""Who may see and change what in the dashboard: one helper per object that returns it or raises
404 (it does not exist for this viewer) or 403 (an end user on an admin page)."""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404

from memoryapp.actors import ActorRef, Principal
from memoryapp.models import Agent, DeletionReceipt, Episode, Memory
from memoryapp.selectors.dashboard import receipts_visible
from memoryapp.selectors.scoping import change_refusal, episode_visible, memory_changeable, memory_visible


def principal_of(request) -> Principal:
    return Principal.for_user(request.user)


def actor_of(request) -> ActorRef:
    return ActorRef.for_user(request.user)


def admin_required(view):
    """Organization admins only: anyone else logged in gets 403, anonymous visitors the login page."""

    @login_required
    @wraps(view)
    def checked(request, *args, **kwargs):
        if not (request.user.is_org_admin and request.user.organization_id):
            raise PermissionDenied("organization admins only")
        return view(request, *args, **kwargs)

    return checked


def memory_for_reading(request, memory_id) -> Memory:
    return memory_visible(principal_of(request), memory_id)


def may_change(request, memory: Memory, *, correcting: bool = False) -> bool:
    return not change_refusal(principal_of(request), memory, correcting=correcting)


def memory_for_change(request, memory_id, *, correcting: bool = False) -> Memory:
    return memory_changeable(principal_of(request), memory_id, correcting=correcting)


def episode_for_change(request, episode_id) -> Episode:
    return episode_visible(principal_of(request), episode_id)  # an end user sees only their own episodes


def receipt_for_reading(request, receipt_id) -> DeletionReceipt:
    receipt = receipts_visible(principal_of(request)).filter(pk=receipt_id).first()
    if receipt is None:
        raise Http404("no such receipt")
    return receipt


def agent_for_admin(request, agent_id) -> Agent:
    agent = Agent.objects.filter(organization_id=request.user.organization_id, pk=agent_id).first()
    if agent is None:
        raise Http404("no such agent")
    return agent


def quarantined_for_admin(request, memory_id) -> Memory:
    memory = memory_for_reading(request, memory_id)
    if memory.status != Memory.Status.QUARANTINED:
        raise Http404("no such memory in the quarantine")
    return memory
