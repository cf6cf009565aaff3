"""Moderation of the quarantine queue: untrusted content that tried to instruct the agent waits
here, never retrieved, until an admin approves it (it becomes active) or rejects it (it is hard
deleted, with a receipt)."""

from __future__ import annotations

from django.db import transaction

from memoryapp.models import DeletionReceipt, Memory, MemoryEvent
from memoryapp.services.actors import ActorRef
from memoryapp.services.apply import event_record, memory_close, slot_lock
from memoryapp.services.govern import memory_delete

Op = MemoryEvent.Op


def _quarantined(memory: Memory) -> Memory:
    locked = Memory.objects.select_for_update().get(pk=memory.pk)
    if locked.status != Memory.Status.QUARANTINED:
        raise ValueError(f"only a quarantined memory can be moderated; this one is {locked.status}")
    return locked


@transaction.atomic
def memory_approve(*, memory: Memory, actor: ActorRef) -> Memory:
    """The admin vouches for the memory: it becomes active and retrievable. Its provenance stays
    `untrusted_source`. When it holds a single-valued slot that already has an active value, that
    value is closed (superseded) as if the fact had just changed, so the slot keeps one value."""
    if memory.attribute:
        slot_lock(organization_id=memory.organization_id, user_id=memory.user_id, project_id=memory.project_id,
                  subject=memory.subject, attribute=memory.attribute)
    locked = _quarantined(memory)
    previous = None
    if locked.attribute and locked.cardinality == Memory.Cardinality.SINGLE:
        previous = (
            Memory.objects.filter(organization_id=locked.organization_id, user_id=locked.user_id,
                                  project_id=locked.project_id, subject=locked.subject, attribute=locked.attribute,
                                  status=Memory.Status.ACTIVE)
            .exclude(pk=locked.pk)
            .first()
        )
        if previous is not None:
            memory_close(memory=previous, valid_to=locked.valid_from, actor=actor,
                         reason="replaced by an approved memory")
            locked.supersedes = previous
    locked.status = Memory.Status.ACTIVE
    locked.status_reason = "approved by an admin"
    locked.save(update_fields=["status", "status_reason", "supersedes"])
    event_record(organization_id=locked.organization_id, op=Op.APPROVE, actor=actor,
                 reason="approved from the quarantine", memory_id=locked.pk, user_id=locked.user_id,
                 data={"supersedes": str(previous.pk)} if previous is not None else {})
    return locked


@transaction.atomic
def memory_reject(*, memory: Memory, actor: ActorRef) -> DeletionReceipt:
    """The admin refuses the memory: it is hard deleted like any deletion (the source episode stays
    in the archive). The REJECT event is written after the deletion so it keeps its reason."""
    locked = _quarantined(memory)
    memory_id, user_id, organization = locked.pk, locked.user_id, locked.organization
    receipt = memory_delete(memory=locked, actor=actor)
    event_record(organization_id=organization.id, op=Op.REJECT, actor=actor, reason="rejected from the quarantine",
                 memory_id=memory_id, user_id=user_id, data={"receipt": str(receipt.pk)})
    return receipt
