"""Moderation of the quarantine queue: untrusted content that tried to instruct the agent, or that
contradicted what the user said, waits here, never retrieved, until an admin approves it (it
becomes active, possibly edited first) or rejects it (it is hard deleted, with a receipt)."""

from __future__ import annotations

from django.db import transaction

from memoryapp import embeddings
from memoryapp.actors import ActorRef
from memoryapp.models import DeletionReceipt, Memory, MemoryEvent
from memoryapp.selectors.questions import search_vector
from memoryapp.services.apply import event_record, memory_close, slot_lock
from memoryapp.services.gate import redact_secrets
from memoryapp.services.govern import corrected_value, memory_delete
from memoryapp.services.locks import user_lock

Op = MemoryEvent.Op


def _quarantined(memory: Memory) -> Memory:
    locked = Memory.objects.select_for_update().get(pk=memory.pk)
    if locked.status != Memory.Status.QUARANTINED:
        raise ValueError(f"only a quarantined memory can be moderated; this one is {locked.status}")
    return locked


def memory_approval_replaces(memory: Memory) -> Memory | None:
    """The active value approving `memory` would close: the current value of its single-valued
    slot (often what the user said, which is why the untrusted memory was held back), or None."""
    if not memory.attribute or memory.cardinality != Memory.Cardinality.SINGLE:
        return None
    return (
        Memory.objects.filter(organization_id=memory.organization_id, user_id=memory.user_id,
                              project_id=memory.project_id, subject=memory.subject, attribute=memory.attribute,
                              status=Memory.Status.ACTIVE)
        .exclude(pk=memory.pk)
        .first()
    )


@transaction.atomic
def memory_approve(*, memory: Memory, actor: ActorRef, text: str | None = None) -> Memory:
    """The admin vouches for the memory: it becomes active and retrievable, with `text` when the
    admin edited it first (re-embedded, its slot value re-read from it). Its provenance stays
    `untrusted_source`, so it is never folded into a summary and the context marks it unverified.
    When it holds a single-valued slot that already has an active value (what the user said, when
    the judge quarantined it for contradicting them), that value is closed (superseded) as if the
    fact had just changed, so the slot keeps one value: the views ask the admin to confirm this first."""
    user_lock(user_id=memory.user_id)  # services.locks' order: the user, then the slot, then the row
    if memory.attribute:
        slot_lock(organization_id=memory.organization_id, user_id=memory.user_id, project_id=memory.project_id,
                  subject=memory.subject, attribute=memory.attribute)
    locked = _quarantined(memory)
    edited, redacted = _approved_text(locked, text)
    if redacted:
        event_record(organization_id=locked.organization_id, op=Op.REDACT, actor=actor, memory_id=locked.pk,
                     user_id=locked.user_id, reason=f"secrets redacted before storage: {', '.join(redacted)}",
                     data={"kinds": redacted})
    if edited is not None:
        # The value is what stands in the edited text where the old value stood (as for a correction).
        locked.value = corrected_value(locked.text, locked.value, edited) if locked.value else ""
        locked.text = edited
        locked.embedding = embeddings.encode_one(edited)
        locked.search_embedding = search_vector(edited, locked.attribute, locked.user, subject=locked.subject)
    previous = memory_approval_replaces(locked)
    if previous is not None:
        memory_close(memory=previous, valid_to=locked.valid_from, actor=actor, reason="replaced by an approved memory")
        locked.supersedes = previous
    locked.status = Memory.Status.ACTIVE
    locked.status_reason = "approved by an admin" + (" after an edit" if edited is not None else "")
    locked.save(update_fields=["status", "status_reason", "supersedes", "text", "value", "embedding",
                               "search_embedding"])
    data = {"supersedes": str(previous.pk)} if previous is not None else {}
    event_record(organization_id=locked.organization_id, op=Op.APPROVE, actor=actor,
                 reason="approved from the quarantine" + (" after an edit" if edited is not None else ""),
                 memory_id=locked.pk, user_id=locked.user_id, data={**data, "edited": edited is not None})
    return locked


def _approved_text(memory: Memory, text: str | None) -> tuple[str | None, list[str]]:
    """(the admin's edited text, redacted like any written text, or None when it is not an edit;
    the kinds of secret taken out of it)."""
    if text is None:
        return None, []
    cleaned, redacted = redact_secrets(" ".join(text.split()))
    if not cleaned:
        raise ValueError("the approved text is empty")
    return (None if cleaned == memory.text else cleaned), redacted


@transaction.atomic
def memory_reject(*, memory: Memory, actor: ActorRef) -> DeletionReceipt:
    """The admin refuses the memory: it is hard deleted like any deletion (the source episode stays
    in the archive). The REJECT event is written after the deletion so it keeps its reason."""
    user_lock(user_id=memory.user_id)  # before the row lock, as the deletion takes it (services.locks)
    locked = _quarantined(memory)
    memory_id, user_id, organization = locked.pk, locked.user_id, locked.organization
    receipt = memory_delete(memory=locked, actor=actor)
    event_record(organization_id=organization.id, op=Op.REJECT, actor=actor, reason="rejected from the quarantine",
                 memory_id=memory_id, user_id=user_id, data={"receipt": str(receipt.pk)})
    return receipt
