"""Apply: each operation commits with its event, in its own transaction or in its caller's.
Single-valued slots are locked so concurrent writers never leave two active values."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from uuid import UUID

import numpy as np
from django.db import connection, transaction
from django.db.models import ExpressionWrapper, FloatField, Q, QuerySet, Subquery, Value
from django.utils import timezone
from pgvector.django import CosineDistance

from memoryapp import embeddings
from memoryapp.actors import ActorRef
from memoryapp.models import Episode, Memory, MemoryEvent, MemorySource, Organization, User
from memoryapp.selectors.questions import NAME_SLOTS, search_vector, search_vectors, subject_names
from memoryapp.services import replacement
from memoryapp.services.extract.base import Candidate, says_one_more, single_valued
from memoryapp.services.extract.general import DEATH, NOT_FOR_A_WHILE, a_stay, someone_named_first, used_to
from memoryapp.services.extract.grammar import THE_USER, possessive, readable_name, sentence, stem
from memoryapp.services.extract.lexicon import (
    BLOOD_RELATIVES,
    FAMILY_MEMBERS,
    LANGUAGES,
    NAME_LETTERS,
    PETS,
    RELATIVES,
    alternatives,
    relative_key,
)
from memoryapp.services.gate import redact_labelled
from memoryapp.services.judge import USER_PROVENANCE, Decision, judge, needs_history, negated
from memoryapp.services.locks import once_per_transaction, user_lock

Op = MemoryEvent.Op
SIMILAR_CANDIDATES = 5
# The judge and the closing rules read texts and values, never a stored vector, and parsing each loaded
# row's two vectors of 384 numbers was a tenth of extraction: rows they load leave them unread.
VECTORS = ("embedding", "search_embedding")


@dataclass(frozen=True)
class Operation:
    op: str
    memory_id: UUID | None
    reason: str

    def as_dict(self) -> dict:
        return {"op": self.op, "memory_id": str(self.memory_id) if self.memory_id else None, "reason": self.reason}


@dataclass
class MemoryDraft:
    """Everything needed to write a memory, whatever produced it (extraction, API, job)."""

    organization: Organization
    user: User | None
    text: str
    embedding: np.ndarray
    # Memory.search_embedding; None: computed from the text when the memory is added (see writes_batched)
    search_embedding: np.ndarray | None = None
    subject: str = ""
    attribute: str = ""
    value: str = ""
    cardinality: str = Memory.Cardinality.MULTI
    kind: str = Memory.Kind.SEMANTIC
    scope: str = Memory.Scope.USER
    project_id: UUID | None = None
    session: str = ""
    importance: int = 5
    confidence: float = 0.8
    provenance: str = Memory.Provenance.USER_STATED
    status: str = Memory.Status.ACTIVE
    status_reason: str = ""
    valid_from: datetime | None = None
    valid_to: datetime | None = None  # a plan's end, or where a value put into the slot's past ends
    sources: Sequence[Episode] = field(default_factory=list)
    agent_id: UUID | None = None
    redacted: list[str] = field(default_factory=list)  # kinds of secret taken out, for the REDACT event


_queued = threading.local()


@contextmanager
def writes_batched():
    """Within the block, event_record queues its events and memory_add the memories whose search vector
    it was not given; as the block ends the events are written in one INSERT, and the vectors computed in
    one batch (twice the rate of one by one) and written in one UPDATE: extraction writes one event per
    operation and a memory for most, hundreds per task. Use it inside a transaction, so that all of it
    still commits (or rolls back) with the operations; until the block ends a queued memory holds its
    text's vector, which no other transaction sees."""
    if getattr(_queued, "events", None) is not None:  # nested: the outer block writes them
        yield
        return
    _queued.events, _queued.searchable = [], []
    try:
        yield
        MemoryEvent.objects.bulk_create(_queued.events)
        _search_vectors_store(_queued.searchable)
    finally:
        _queued.events = _queued.searchable = None


def _search_vectors_store(memory_ids: list[UUID]) -> None:
    """Memory.search_embedding of these memories, from their texts as they are now."""
    rows = list(Memory.objects.filter(pk__in=memory_ids).select_related("user").only(
        "id", "text", "attribute", "subject", "user"))
    if not rows:
        return
    names = {}
    for memory in rows:
        if memory.user_id not in names:
            names[memory.user_id] = subject_names(memory.user)
    vectors = search_vectors([(memory.text, memory.attribute, names[memory.user_id], memory.subject)
                              for memory in rows])
    # One UPDATE from a list of values: bulk_update's CASE of hundreds of vectors took Django longer to build
    # than PostgreSQL to run.
    field = Memory._meta.get_field("search_embedding")
    values = ", ".join(["(%s::uuid, %s::halfvec)"] * len(rows))
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {Memory._meta.db_table} AS memory SET search_embedding = given.vector"
                       f" FROM (VALUES {values}) AS given (id, vector) WHERE memory.id = given.id",
                       [value for memory, vector in zip(rows, vectors, strict=True)
                        for value in (memory.pk, field.get_prep_value(vector))])


def event_record(
    *,
    organization_id,
    op: str,
    actor: ActorRef,
    reason: str,
    memory_id=None,
    episode_id=None,
    user_id=None,
    data: dict | None = None,
) -> None:
    event = MemoryEvent(
        organization_id=organization_id,
        op=op,
        actor_type=actor.type,
        actor_id=actor.id,
        reason=reason[:300],
        memory_id=memory_id,
        episode_id=episode_id,
        user_id=user_id,
        data=data or {},
    )
    queue = getattr(_queued, "events", None)
    if queue is None:
        event.save(force_insert=True)
    else:
        queue.append(event)


def redaction_record(*, organization_id, actor: ActorRef, kinds: list[str], memory_id=None, user_id=None) -> None:
    """The REDACT event of a memory stored with secrets taken out: which kinds, never the secrets."""
    event_record(organization_id=organization_id, op=Op.REDACT, actor=actor, memory_id=memory_id, user_id=user_id,
                 reason=f"secrets redacted before storage: {', '.join(sorted(set(kinds)))}", data={"kinds": kinds})


def row_cosine_distance(vector) -> ExpressionWrapper:
    """The cosine distance to `vector`, computed row by row. Judging looks among one owner's memories, which
    are few; the HNSW index must not serve it, as a walk filtered to one owner can miss rows (a fresh clone's
    suite once lost a restatement behind thousands of other tests' dead entries)."""
    return ExpressionWrapper(CosineDistance("embedding", vector) + Value(0.0), output_field=FloatField())


def slot_lock(*, organization_id, user_id, project_id, subject: str, attribute: str) -> None:
    """Serialize writers of one slot until the end of the transaction."""
    key = f"{organization_id}:{user_id}:{project_id}:{subject.lower()}:{attribute}"

    def take() -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [key])
        return True

    once_per_transaction(key, take)


def _sources_add(memory: Memory, episodes: Iterable[Episode]) -> None:
    """One INSERT; a link that already exists is left as it is (the relation's .add() reads them first). In SQL:
    extraction links a source for nearly every candidate, and bulk_create's own work was twice the statement's."""
    now = timezone.now()
    rows = [(memory.organization_id, memory.id, episode.id, now) for episode in episodes]
    if not rows:
        return
    table = MemorySource._meta.db_table
    values = ", ".join(["(%s, %s, %s, %s)"] * len(rows))
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} (organization_id, memory_id, episode_id, added_at) VALUES {values}"
                       " ON CONFLICT (memory_id, episode_id) DO NOTHING", [value for row in rows for value in row])


def memory_add(*, draft: MemoryDraft, actor: ActorRef, reason: str, op: str = Op.ADD, supersedes=None) -> Memory:
    now = timezone.now()
    memory = Memory.objects.create(
        organization=draft.organization,
        user=draft.user,
        project_id=draft.project_id,
        session=draft.session,
        scope=draft.scope,
        kind=draft.kind,
        text=draft.text,
        subject=draft.subject,
        attribute=draft.attribute,
        value=draft.value,
        cardinality=draft.cardinality,
        importance=draft.importance,
        confidence=draft.confidence,
        provenance=draft.provenance,
        status=draft.status,
        status_reason=draft.status_reason,
        valid_from=draft.valid_from or now,
        valid_to=draft.valid_to,
        valid_to_recorded_at=now if draft.valid_to else None,
        recorded_at=now,
        last_accessed_at=now,
        embedding=draft.embedding,
        search_embedding=_search_vector(draft),
        supersedes=supersedes,
        agent_id=draft.agent_id,
    )
    if draft.search_embedding is None and getattr(_queued, "searchable", None) is not None:
        _queued.searchable.append(memory.id)
    _sources_add(memory, draft.sources)
    event_record(
        organization_id=draft.organization.id,
        op=op,
        actor=actor,
        reason=reason,
        memory_id=memory.id,
        user_id=draft.user.id if draft.user else None,
        data={"sources": [str(e.id) for e in draft.sources], "supersedes": str(supersedes.id) if supersedes else None},
    )
    if draft.redacted:
        redaction_record(organization_id=draft.organization.id, actor=actor, kinds=draft.redacted,
                         memory_id=memory.id, user_id=draft.user.id if draft.user else None)
    return memory


def _search_vector(draft: MemoryDraft) -> np.ndarray:
    """The draft's search vector; within writes_batched, its text's vector until the block ends."""
    if draft.search_embedding is not None:
        return draft.search_embedding
    if getattr(_queued, "searchable", None) is not None:
        return draft.embedding
    return search_vector(draft.text, draft.attribute, draft.user, subject=draft.subject)


def memory_noop(*, memory: Memory, sources: Sequence[Episode], actor: ActorRef, reason: str) -> None:
    _sources_add(memory, sources)
    event_record(
        organization_id=memory.organization_id,
        op=Op.NOOP,
        actor=actor,
        reason=reason,
        memory_id=memory.id,
        user_id=memory.user_id,
        data={"sources_added": [str(e.id) for e in sources]},
    )


def memory_update(*, memory: Memory, draft: MemoryDraft, actor: ActorRef, reason: str) -> None:
    """A complement: the memory now says both things, with the union of sources."""
    memory.text, memory.value = complemented(memory.text, memory.value, draft.text, draft.subject, draft.value)
    memory.importance = max(memory.importance, draft.importance)
    memory.embedding = embeddings.encode_one(memory.text)
    memory.search_embedding = search_vector(memory.text, memory.attribute, memory.user, subject=memory.subject)
    memory.save(update_fields=["value", "text", "importance", "embedding", "search_embedding"])
    _sources_add(memory, draft.sources)
    event_record(
        organization_id=memory.organization_id,
        op=Op.UPDATE,
        actor=actor,
        reason=reason,
        memory_id=memory.id,
        user_id=memory.user_id,
        data={"sources_added": [str(e.id) for e in draft.sources]},
    )


def complemented(text: str, value: str, more_text: str, more_subject: str, more_value: str) -> tuple[str, str]:
    """(text, value) of a memory complemented by a statement: "Sam is vegetarian; eats eggs."."""
    return (f"{text.rstrip('.')}; {_lower_first(_without_subject(more_text, more_subject, text))}",
            f"{value}; {more_value}" if value else more_value)


def memory_close(*, memory: Memory, valid_to: datetime, actor: ActorRef, reason: str) -> None:
    """The world changed: the fact held until `valid_to`; it stays as history."""
    now = timezone.now()
    memory.status = Memory.Status.SUPERSEDED
    memory.valid_to = max(valid_to, memory.valid_from + timedelta(seconds=1))
    memory.valid_to_recorded_at = now
    memory.status_reason = reason[:300]
    memory.save(update_fields=["status", "valid_to", "valid_to_recorded_at", "status_reason"])


def memory_end(*, memory: Memory, valid_to: datetime, actor: ActorRef, reason: str) -> None:
    """A value ended by another memory than its successor in its slot: closed, with its own event."""
    memory_close(memory=memory, valid_to=valid_to, actor=actor, reason=reason)
    event_record(organization_id=memory.organization_id, op=Op.SUPERSEDE, actor=actor, memory_id=memory.id,
                 user_id=memory.user_id, reason=reason[:300])


def memory_passed(*, memory: Memory, actor: ActorRef) -> None:
    """A one-value slot's value whose day has passed becomes history as it was, ending when it said it would:
    the slot holds one active value, and a new one may now take it."""
    memory.status, memory.status_reason = Memory.Status.SUPERSEDED, "its day passed"
    memory.save(update_fields=["status", "status_reason"])
    event_record(organization_id=memory.organization_id, op=Op.SUPERSEDE, actor=actor, memory_id=memory.id,
                 user_id=memory.user_id, reason=memory.status_reason)


def memory_add_to_history(
    *, draft: MemoryDraft, within: Memory | None, until: Memory, actor: ActorRef, reason: str
) -> Memory:
    """A value that held before the current one (an older message imported late): it joins the slot's
    past from its own date until the next known value (`until`) begins, and the value it falls
    `within`, if any, now ends where it begins. Recorded now, so a question about what was believed
    before today does not see it."""
    if within is not None:
        memory_close(memory=within, valid_to=draft.valid_from, actor=actor, reason=f"{draft.attribute} changed")
    draft.status, draft.status_reason = Memory.Status.SUPERSEDED, reason
    draft.valid_to = until.valid_from
    memory = memory_add(draft=draft, actor=actor, reason=reason, supersedes=within)
    until.supersedes = memory  # the chain of values stays in world-time order
    until.save(update_fields=["supersedes"])
    return memory


def memory_supersede(*, old: Memory, draft: MemoryDraft, actor: ActorRef, reason: str) -> Memory:
    memory_close(memory=old, valid_to=draft.valid_from or timezone.now(), actor=actor, reason=reason)
    draft.valid_from = old.valid_to
    with_old = written_beside(old, [episode.id for episode in draft.sources])
    for memory in dict.fromkeys([*companions(old, with_old), *restatements(old, with_old, draft)]):
        memory_end(memory=memory, valid_to=old.valid_to, actor=actor, reason=f"{reason} (said with the old value)")
    return memory_add(draft=draft, actor=actor, reason=reason, op=Op.SUPERSEDE, supersedes=old)


_VALUE_WORD = re.compile(r"[^\W_]+")
_VALUE_FILLER = frozenset({"a", "an", "the", "of", "in", "at", "to", "for", "and", "with", "my", "not"})


def companions(old: Memory, with_old: list[Memory]) -> list[Memory]:
    """What was written beside `old` (`with_old`: written_beside) and says its value too. A rule fills the
    slot ("employer: Vodafone") and the general path keeps the rest of the sentence unslotted ("The user
    works at Vodafone in the customer care team.", unslotted or in a neighbouring slot such as job): when
    the slot's value is replaced, that sentence would otherwise keep saying the old value is current.
    Only memories of the same subject in another slot (the slot's other values are its own business),
    from one of `old`'s episodes, naming every word of its value, and starting no later than it (an
    older statement never ends a newer one; same episodes, so the same provenance as `old`)."""
    words = {w for w in _VALUE_WORD.findall(old.value.lower()) if w not in _VALUE_FILLER}
    return [memory for memory in with_old
            if words and memory.subject == old.subject and memory.attribute != old.attribute
            and memory.valid_from <= old.valid_from and words <= set(_VALUE_WORD.findall(memory.text.lower()))]


def memory_invalidate(*, memory: Memory, actor: ActorRef, reason: str, flag_siblings: bool = True) -> list[UUID]:
    """The memory was wrong: it stops being believed now. Other memories from the same source
    episodes are flagged for review; their ids are returned."""
    now = timezone.now()
    memory.status = Memory.Status.INVALIDATED
    memory.expired_at = max(now, memory.recorded_at + timedelta(microseconds=1))
    memory.status_reason = reason[:300]
    memory.save(update_fields=["status", "expired_at", "status_reason"])
    flagged: list[UUID] = []
    if flag_siblings:
        siblings = (
            Memory.objects.filter(
                organization_id=memory.organization_id, sources__in=memory.sources.all(), status=Memory.Status.ACTIVE
            )
            .exclude(pk=memory.pk)
            .distinct()
        )
        flagged = list(siblings.values_list("id", flat=True))
        Memory.objects.filter(pk__in=flagged).update(needs_review=True)
    event_record(
        organization_id=memory.organization_id,
        op=Op.INVALIDATE,
        actor=actor,
        reason=reason,
        memory_id=memory.id,
        user_id=memory.user_id,
        data={"flagged_for_review": [str(i) for i in flagged]},
    )
    return flagged


def _without_subject(text: str, subject: str, joined_to: str = "") -> str:
    """The statement without the words naming its subject, which the memory it joins already starts
    with: "Maria eats eggs." joining "Maria is vegetarian." (texts name the user by their name or as
    "the user", not by `subject`, their id)."""
    name = subject.capitalize()
    if subject and text.startswith(name + " "):
        return text[len(name) + 1 :]
    words, known = text.split(" "), joined_to.split(" ")
    shared = 0
    while shared < min(len(words), len(known)) - 1 and words[shared] == known[shared]:
        word, before = words[shared], words[shared - 1] if shared else ""
        # A name ("Mary Jane"), "the user", or whose someone is ("the user's sister").
        if not (word[:1].isupper() or (before.lower() == "the" and word.startswith("user")) or before.endswith("'s")):
            break
        shared += 1
    return " ".join(words[shared:]) if shared else text


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:].rstrip(".") + "."


def draft_from_candidate(
    candidate: Candidate,
    *,
    embedding: np.ndarray,
    organization: Organization,
    user: User,
    sources: Sequence[Episode],
    provenance: str = Memory.Provenance.USER_STATED,
    status: str = Memory.Status.ACTIVE,
    status_reason: str = "",
    session: str = "",
    agent_id=None,
) -> MemoryDraft:
    return MemoryDraft(
        organization=organization,
        user=user,
        text=candidate.text,
        embedding=embedding,
        subject=candidate.subject.lower(),
        attribute=candidate.attribute,
        value=candidate.value,
        cardinality=candidate.cardinality,
        kind=candidate.kind,
        importance=candidate.importance,
        confidence=candidate.confidence,
        provenance=provenance,
        status=status,
        status_reason=status_reason,
        valid_from=candidate.valid_from,
        valid_to=candidate.valid_to,
        sources=sources,
        session=session,
        agent_id=agent_id,
    )


def _secrets_redacted(candidate: Candidate, draft: MemoryDraft) -> Candidate:
    """The candidate without secrets, and the draft redacted in place. Extracted candidates come from
    redacted episodes, but an API client's structured fields (subject, attribute, value, session) reach
    here straight; the judge and the stored row must see the same redacted values."""
    kinds: list[str] = []
    seen: dict[tuple[str, str], str] = {}  # candidate and draft mostly repeat each other's strings

    def clean(text: str, label: str = "") -> str:
        if text and (text, label) not in seen:
            seen[text, label], found = redact_labelled(text, label=label)
            kinds.extend(found)
        return seen.get((text, label), text)

    attribute = clean(candidate.attribute)
    candidate = replace(candidate, text=clean(candidate.text), subject=clean(candidate.subject), attribute=attribute,
                        value=clean(candidate.value, attribute))
    text = clean(draft.text)
    if text != draft.text:  # the vector must never be computed from the secret
        draft.text, draft.embedding, draft.search_embedding = text, embeddings.encode_one(text), None
    draft.subject, draft.attribute = clean(draft.subject), clean(draft.attribute)
    draft.value, draft.session = clean(draft.value, draft.attribute), clean(draft.session)
    draft.redacted = list(dict.fromkeys(draft.redacted + kinds))
    return candidate


# No savepoint: no caller recovers from a failed candidate, so it fails with its caller's transaction
# (extraction applies hundreds per transaction: a savepoint and its release were a quarter of its queries).
@transaction.atomic(savepoint=False)
def candidate_apply(*, candidate: Candidate, draft: MemoryDraft, actor: ActorRef) -> list[Operation]:
    """Judge one candidate against the store and apply the decision, under the slot's lock."""
    candidate = _secrets_redacted(candidate, draft)
    if draft.status == Memory.Status.QUARANTINED:
        memory = memory_add(draft=draft, actor=actor, reason=draft.status_reason or "untrusted", op=Op.QUARANTINE)
        return [Operation(Op.QUARANTINE, memory.id, draft.status_reason)]
    owner = {
        "organization_id": draft.organization.id,
        "user_id": draft.user.id if draft.user else None,
        "project_id": draft.project_id,
    }
    user_lock(user_id=owner["user_id"])  # before the slot lock: services.locks' order
    if draft.user is not None and draft.provenance in USER_PROVENANCE:
        candidate, draft = _of_someone_known(candidate, draft)
    # Unstructured statements share one slot per owner, so two writers cannot both ADD the same text.
    slot_lock(**owner, subject=draft.subject if candidate.attribute else "", attribute=candidate.attribute)
    active = Memory.objects.filter(**owner, status=Memory.Status.ACTIVE).defer(*VECTORS)
    slot = list(active.filter(subject=draft.subject, attribute=candidate.attribute).order_by("recorded_at"))
    # A plan whose day has passed is no longer a value of the slot: the same plan later is a new one.
    passed = [m for m in slot if m.valid_to is not None and m.valid_to <= candidate.valid_from]
    slot = [m for m in slot if m not in passed]
    for memory in passed:
        if memory.cardinality == Memory.Cardinality.SINGLE:
            memory_passed(memory=memory, actor=actor)
    said_at = max((episode.occurred_at for episode in draft.sources), default=None)
    history = []
    if candidate.attribute and needs_history(candidate, slot, said_at):
        # Rare (an older statement arriving late), so read only then: the slot's past still believed.
        history = list(
            Memory.objects.filter(**owner, subject=draft.subject, attribute=candidate.attribute,
                                  status=Memory.Status.SUPERSEDED, expired_at__isnull=True, valid_to__isnull=False)
            .defer(*VECTORS)
            .order_by("valid_from")
        )
    if candidate.attribute:
        similar = []
    else:
        similar = [
            (m, 1 - m.distance)
            for m in active.annotate(distance=row_cosine_distance(draft.embedding)).order_by("distance")[
                :SIMILAR_CANDIDATES
            ]
        ]
    session_recent = (
        list(active.filter(sources__session=draft.session).exclude(session="").distinct().order_by("recorded_at"))
        if candidate.relation == "retract" and draft.session
        else []
    )
    decision = judge(
        candidate, slot=slot, similar=similar, session_recent=session_recent, provenance=draft.provenance,
        history=history, session=draft.session, said_at=said_at,
    )
    operations = decision_apply(decision, candidate=candidate, draft=draft, actor=actor)
    users_own = draft.provenance in USER_PROVENANCE and draft.status == Memory.Status.ACTIVE
    if candidate.ends and users_own:
        written = operations[0].memory_id if decision.op in (Op.ADD, Op.SUPERSEDE) else None
        ended_close(ends=candidate.ends, draft=draft, said_at=candidate.valid_from, new_id=written, actor=actor)
    # a new memory, beside its slot's old value or in its place ("graduated, now working as a paralegal" replaces
    # the job "a student" and ends "studies at King's College" as a later state)
    holds_from_now = users_own and decision.op in (Op.ADD, Op.SUPERSEDE) and decision.until is None
    if holds_from_now:
        later_state_close(draft=draft, said_at=candidate.valid_from, new_id=operations[0].memory_id, actor=actor)
        taste_turned_close(draft=draft, said_at=candidate.valid_from, new_id=operations[0].memory_id, actor=actor)
        if draft.attribute == "instruction":
            instruction_close(draft=draft, said_at=candidate.valid_from, new_id=operations[0].memory_id, actor=actor)
    if users_own and decision.op == Op.SUPERSEDE:
        said_beside_close(old=decision.target, draft=draft, said_at=candidate.valid_from,
                          new_id=operations[0].memory_id, actor=actor)
        if draft.user is not None:
            from memoryapp.selectors.names import user_display_name

            # "We gave Kiwi to my neighbour" in the place of "The user has a budgie named Kiwi.": Kiwi is the budgie
            _answers_in_place_of(decision.target, new_id=operations[0].memory_id, draft=draft,
                                 who=user_display_name(draft.user))
    # A plain statement in a one-value slot met its slot's "none" in the judge ("I don't have a car").
    changes = candidate.relation == "change" or candidate.says_change
    # (a plain statement may still end a "none" of another slot: "I'm in my first year of a degree" in the education
    # slot ends "The user doesn't have a degree.", kept in the degree slot)
    says = changes or candidate.change_heard >= FAINT_CHANGE_HEARD or candidate.relation == "state"
    if users_own and says and decision.op == Op.ADD and decision.until is None:
        related_close(draft=draft, changes=changes, message_changes=candidate.says_change,
                      heard=candidate.change_heard, said_at=candidate.valid_from, new_id=operations[0].memory_id,
                      actor=actor)
    if holds_from_now:
        # after related_close, which files the news in the slot of what it ended ("we lost nan": her health)
        death_close(draft=draft, said_at=candidate.valid_from, new_id=operations[0].memory_id, actor=actor)
    return operations


def _stems(text: str) -> set[str]:
    return {stem(word) for word in _VALUE_WORD.findall(text)}


def _names_the_value(wanted: set[str], phrase: str, said: set[str]) -> bool:
    """Whether a memory's stems name the value a phrase ended: every name and number of the phrase, and its
    other words but one when it has three or more ("stopped doing food bank shifts" ends "volunteers at
    the food bank")."""
    # stemmed as `wanted` is, hyphens apart: "T-Mobile" names t and mobil, not "t-mobile"
    names = {named for word in _NAMING_WORD.findall(phrase) for named in _stems(word)}
    missing = wanted - said
    return names <= said and (not missing or (len(wanted) >= 3 and len(missing) == 1 and not missing & names))


def ended_close(*, ends: Sequence[str], draft: MemoryDraft, said_at: datetime, new_id: UUID | None,
                actor: ActorRef) -> None:
    """The user said a value is over by naming it ("I left Google", "Sophie and I split up", "swapped Lyon
    for Marseille"): whatever still says it is current ends where the statement begins, in whichever slot
    it was kept (employer or workplace, partner or home_life, or none). A memory must name the value
    (candidate.ends, _names_the_value) and have begun before the statement; memories of the statement's
    subject first, else those of the user and their people ("Tom left Deloitte" ends the brother's
    employer). News of someone named ends the user's own memories only where they name that person: "Kiki
    passed in the night" ends "The user's parrot Kiki is 30.", "Ollie quit his spin class" leaves the user's.
    Never what the statement itself wrote. The statement (`new_id`, when it was written) answers in place of the
    first memory it ends: "We rehomed Mochi with my aunt" says Mochi is the user's cat, as the ended memory did
    (_answers_in_place_of)."""
    from memoryapp.selectors.names import user_display_name

    if draft.user is None:
        return
    user_key = draft.user.external_id.lower()
    doer = None  # someone named whom the statement is news of: looked up once, when a memory of the user's could end
    who = ""  # how texts call the user: looked up once, when first needed
    said_now = [episode.id for episode in draft.sources]
    answered = new_id is None
    for phrase in ends:
        wanted = _stems(phrase)
        if not wanted:
            continue
        mentions_any = Q()
        for word in wanted:
            mentions_any |= Q(text__icontains=word)
        matching = [
            memory for memory in Memory.objects.filter(
                organization_id=draft.organization.id, user=draft.user, project_id=draft.project_id,
                status=Memory.Status.ACTIVE, valid_from__lt=said_at,
            ).filter(mentions_any).exclude(sources__in=said_now).defer(*VECTORS).distinct()
            if _names_the_value(wanted, phrase, _stems(memory.text))
        ]
        if doer is None and any(memory.subject == user_key for memory in matching):
            who = who or user_display_name(draft.user)
            doer = someone_named_first(draft.text, who) or ""
        if doer:
            matching = [memory for memory in matching
                        if memory.subject != user_key or doer in _WORD.findall(memory.text)]
        same = [memory for memory in matching if memory.subject == draft.subject]
        theirs = [memory for memory in matching
                  if memory.subject == user_key or memory.subject.startswith(f"{user_key}'s ")]
        for memory in same or theirs:
            reason = f"{memory.attribute or 'statement'} ended: the user said {phrase!r} is over"
            memory_end(memory=memory, valid_to=said_at, actor=actor, reason=reason)
            if not answered:
                who = who or user_display_name(draft.user)
                _answers_in_place_of(memory, new_id=new_id, draft=draft, who=who)
                answered = True


# Life states that end in a later one, whatever words the change is said in and however unlike the two
# memories are (a baby's name and weight against "30 weeks pregnant"): (earlier state, later state), each a
# pattern over memory texts; of which of the user's people the later state may be said to end the user's own
# (`said_of`, a pattern over the relation: someone moving in ends the user's living alone, a cousin's baby only
# the cousin's pregnancy); and whether it ends their partner's too (`partners`: "our son was born" ends "my wife
# is pregnant"). World knowledge, not one way of saying it: a change word is not needed.
_ANYONE_OF_THEIRS = re.compile(r".+")
_PARTNERS = ("wife", "husband", "partner", "spouse", "girlfriend", "boyfriend", "fiance", "fiancé", "fiancee",
             "fiancée")
_PARTNER = f"(?:{'|'.join(_PARTNERS)})"
_THEIR_CHILD_OR_PARTNER = re.compile(rf"(?:(?:new(?:born)? |baby |little )?(?:son|daughter|baby|child|kid|boy|girl"
                                     rf"|twins|little one)s?|{_PARTNER})")
_ANIMALS_COUNTED = ("dog", "cat", "rabbit", "guinea pig", "hamster", "chicken", "horse", "budgie", "parrot", "tortoise",
                    "snake", "lizard", "ferret", "rat", "goat", "duck")


def _time_without(habit: str) -> str:
    """ "Day ten without a cigarette": time kept off a habit, as a later state's pattern (not "went two days without
    a drink at the festival")."""
    return rf"^(?!.*\bwent\b).*?\b(?:days?|weeks?|months?|years?)(?: \w+)? without (?:a |any )?(?:{habit})"


_FULL_TIME, _PART_TIME = r"\b(?:full[- ]time|9[- ]to[- ]5|nine[- ]to[- ]five)\b", r"\bpart[- ]time\b"
LATER_STATES = tuple((re.compile(earlier, re.I), re.compile(later, re.I), said_of, partners)
                     for earlier, later, said_of, partners in (
    # a pregnancy ends in a birth
    (r"\b(?:pregnant|expecting (?:a |our |my |their |the )?(?:baby|first|second|third|twins|little one))\b",
     r"\b(?:born|arrived|gave birth|birth of|had (?:the|our|my|her|their|a) (?:baby|little)|welcomed (?:a|our|their)"
     r"|newborn|baby (?:girl|boy)|it'?s a (?:girl|boy)|\d+\s*(?:lbs?|pounds?)\s*\d+\s*(?:oz|ounces?))\b",
     _THEIR_CHILD_OR_PARTNER, True),
    # how many children, in one more ("We had our third in May!" after "has two kids")
    (r"\bha(?:s|ve) (?:one|two|three|four|five|\d) (?:kids|children|boys|girls|sons|daughters)\b"
     r"|\bha(?:s|ve) (?:a|one) (?:kid|child|son|daughter)\b",
     r"\b(?:had|welcomed) (?:their|our|his|her) (?:second|third|fourth|fifth|sixth|2nd|3rd|4th|5th|6th)\b"
     r"(?! (?:anniversary|birthday|date|time|go|attempt|try|round|dose|jab|session|lesson|appointment|interview))",
     None, False),
    # how many animals of a kind, in one more ("We adopted a third cat" after "has two cats"; not a memory that names
    # them: "has two cats, Tom and Jerry" stays, the count with it)
    *((rf"\bha(?:s|ve) (?:two|three|four|five|six|\d+) {kind}s\b(?![^.;]*\b(?:named|called)\b)",
       rf"\b(?:adopted|got|rescued|bought|took in|brought home|welcomed) (?:a|an|our|their|his|her)"
       rf" (?:second|third|fourth|fifth|sixth|\d+(?:nd|rd|th)) {kind}\b"
       rf"|\b(?:adopted|got|rescued|took in|brought home) another {kind}\b",
       None, False) for kind in _ANIMALS_COUNTED),
    # trying for a child, in a pregnancy
    (r"\btrying (?:for (?:a|another) (?:baby|child|kid)|to (?:have a (?:baby|child|kid)|conceive|get pregnant))\b",
     r"\b(?:pregnant|expecting|positive (?:pregnancy )?test)\b", re.compile(_PARTNER), False),
    # studies, in a graduation (or in leaving them)
    (r"\b(?:(?:a|an) (?:\w+ )?(?:student|undergrad\w*|postgrad\w*)|stud(?:ies|ying)\b"
     r"|in (?:their|his|her) (?:first|second|third|final|last|\w+th) year)",
     r"\b(?:graduated|graduating|dropped out|qualified (?:as|in)|passed (?:their|his|her) (?:phd |final )?viva"
     r"|defended (?:their|his|her) (?:\w+ )?(?:thesis|dissertation)"
     r"|(?:finished|completed|done with|left) (?:(?:their|his|her|the) (?:degree|studies|course|phd|masters|uni"
     r"|university)|uni|university|college))\b"
     r"(?! (?:early|late|at|to|for|around|about|before|after (?:class|lunch|work))\b)",  # not "left uni early today"
     None, False),
    # school, in the next one ("just started uni in Glasgow" after "is at school", "started reception" after nursery)
    (r"\b(?:at|in|goes to|attends) (?:a |the )?(?:[\w'-]+ ){0,2}(?:nursery|preschool|pre-school|playgroup|primary"
     r"|school|secondary|sixth form|high school)\b|\bin year \d+\b",
     r"\bstarted (?:at )?(?:a |the |their |his |her )?(?:new )?(?:uni|university|college|secondary|sixth form|reception"
     r"|high school|big school|(?:primary )?school|year \d+)\b"
     r"|\bfinished (?:their|his|her) (?:a-levels|a levels|gcses|highers|exams"
     r"|leaving cert|sixth form|high school|school)\b|\bleft school\b", None, False),
    # nights, then days; full time, then part time (and back)
    (r"\b(?:night (?:shifts?|worker)|works? nights|on nights)\b",
     r"\b(?:(?:swapped|switched|moved|changed|gone|back) (?:on)?to days|day shifts?|on days)\b", None, False),
    (_FULL_TIME, _PART_TIME, None, False),
    (_PART_TIME, _FULL_TIME, None, False),
    # working for oneself, then for an employer ("gone in-house at an agency", "taken a salaried job")
    (r"\b(?:freelanc\w*|self-employed|self employed|(?:their|his|her) own boss|contractor)\b",
     r"\b(?:in-house|salaried|permanent (?:job|role|position|contract)|(?:on|joined) (?:the|a) payroll)\b",
     None, False),
    # single, in someone new ("seeing a lovely guy called Dev"); single as a state ("is single", "a single mum"), not
    # "every single Arsenal game" nor "a single bed"
    (r"\b(?:is|are|am|was|been|being|still|currently|happily|now|stays?|staying|went|gone)\s+(?:a\s+|so\s+)?single\b"
     r"(?![\s-]+(?:handed\w*|use|bed|room|file|track|page|day|night|time|one|thing|word|game|ticket|cream|malt)\b)"
     r"|\bsingle (?:mum|mom|dad|parent|mother|father)\b",
     r"\b(?:seeing|dating|in a relationship|(?:got|getting) together|engaged|married"
     r"|new (?:boyfriend|girlfriend|partner)"
     r"|(?:have|has|got) a (?:boyfriend|girlfriend|partner|husband|wife|fianc[ée]e?))\b",
     None, False),
    # a boyfriend or girlfriend, in a wedding ("we got married on saturday!! i have a husband")
    # (the subject's own: not "The user's boyfriend's name is Jake." when his brother got married)
    (r"\b(?:their|his|her|a) (?:boyfriend|girlfriend)\b(?!'s)", r"\b(?:got married|(?:have|has) a (?:husband|wife))\b",
     None, False),
    # going out with someone, in an engagement ("Chris proposed and I said yes!")
    (r"\b(?:dating|seeing|going out with|in a relationship with)\b",
     r"\b(?:engaged|proposed|popped the question|fianc[ée]e?)\b", None, False),
    # a doctorate or a degree under way, in its end ("passed their viva", "handed in their thesis")
    (r"\b(?:doing|studying for|working on|writing up|in the middle of) (?:a|an|their|his|her) (?:\w+ )?(?:phd|doctorate"
     r"|dphil|masters|master's|mba|degree|dissertation|thesis)\b"
     r"|\b(?:a|an) (?:[\w-]+ )?(?:phd|doctoral|dphil|masters|master's) (?:student|candidate|researcher)\b",
     r"\b(?:passed (?:their|his|her|the) (?:viva|defen[cs]e|finals)|defended (?:their|his|her) (?:thesis|dissertation)"
     r"|(?:got|earned|was awarded|received) (?:their|his|her) (?:phd|doctorate|masters|degree)|graduated"
     r"|dropped out|(?:officially )?dr\.? [A-Z]\w+)", None, False),
    # a home, in moving to another ("got the keys to their new house", "moved into a bigger flat")
    (r"\b(?:lives?|living|rents?|renting|owns?) (?:in )?(?:a|an|the|their|his|her) (?:[\w-]+ ){0,3}(?:flat|house"
     r"|apartment|bungalow|studio|cottage|terrace|semi|condo|townhouse|maisonette|houseboat|caravan)\b",
     r"\b(?:(?:got|picked up) the keys to|moved (?:in)?to|moving (?:in)?to|bought|completed on|closed on)"
     r" (?:a|an|their|his|her|the) (?:new |first |bigger |smaller |own )?(?:[\w-]+ ){0,2}(?:flat|house|apartment"
     r"|bungalow|studio|cottage|place|home|condo|townhouse|maisonette)\b|\bmoved (?:house|home)\b",
     None, False),
    # an illness, an injury or its treatment, in a recovery
    (r"\b(?:chemo\w*|cancer|treatment|broken|broke (?:my|their|his|her)|fractured?"
     r"|in (?:a|the) (?:cast|plaster|sling|boot)|(?:has|have|wears?|wearing|got) (?:\w+ )?(?:braces|stitches)"
     r"|long covid|covid|pneumonia|shingles|slipped disc|mono|injur(?:y|ed)"
     r"|recovering|sick with|infection)\b",
     r"\b(?:recovered|remission|all clear|(?:scan|test|results?) (?:was|were|is|are|came back) clear|healed|cured"
     r"|cancer[- ]free|(?:cast|plaster|boot|sling|braces|stitches) (?:is|are|was|were|came|comes|come) off"
     r"|done with (?:treatment|chemo)"
     r"|rang the bell)\b", None, False),
    # a habit, in time kept off it ("three months smoke free", "a year sober")
    (r"\b(?:smok(?:es|er|ing|e)|cigarettes?|fags|vap(?:es|er|ing|e))\b",
     r"\b(?:smoke[- ]free|nicotine[- ]free|vape[- ]free|" + _time_without(r"cigarettes?|fags?|smoking|vap\w*")
     + r"|(?:quit|stopped|gave up|given up) (?:smoking|vaping|cigarettes))\b",
     None, False),
    # drugs, in time clean of them ("smokes weed sometimes", then "been clean 3 months now")
    (r"\b(?:weed|cannabis|drugs|cocaine|ketamine)\b",
     r"\b(?:clean|drug[- ]free|sober) (?:for )?(?:\d+|a|one|two|three|four|five|six|\w+ and a half) (?:days?|weeks?"
     r"|months?|years?)\b|\b(?:quit|stopped|gave up|given up) (?:the )?(?:weed|cannabis|drugs|smoking weed)\b",
     None, False),
    (r"\b(?:drinks? (?:a lot|heavily|too much|every|(?:[\w-]+ ){0,3}(?:alcohol|wine|beer|lager|cider|gin|vodka"
     r"|whiske?y|rum|spirits|pints?))|drinker|alcohol|booze)\b",
     r"\b(?:sober|alcohol[- ]free|booze[- ]free|teetotal|" + _time_without("drinks?|drinking|alcohol|booze")
     + r"|(?:quit|stopped|gave up|given up) (?:drinking|alcohol|booze))\b",
     None, False),
    # a ward, a unit or a station of one's work, in a transfer ("transferred to ICU", "Transfer came through")
    # (of work: not "lives in a ground floor flat"; not "transferred my savings to Monzo")
    (r"\b(?:works?|working|nurse|doctor|porter|carer|job) (?:[\w'-]+ ){0,4}?(?:on|in) (?:the )?(?:[\w&-]+ ){0,3}"
     r"(?:floor|ward|unit|department|dept)\b|\bon ward \d+|\b(?:working out of|based at) ",
     r"\btransferred (?:over )?(?:to|into|onto) (?:the )?(?:[\w&'-]+ ){0,3}(?:ward|unit|department|dept|floor|team|icu"
     r"|a&e|er|theatres?|station|office|branch|site|hospital)(?!\w)|\btransfer came through\b", None, False),
    # walking, or with a stick, in a wheelchair or a frame ("I walk with a cane", then "wheelchair full time")
    (r"\b(?:walks? with|uses?|using|needs?) (?:a )?(?:cane|stick|walking stick|crutch(?:es)?|walking frame)\b"
     r"|\bget(?:s)? around fine\b|\bown two feet\b",
     r"\b(?:in a wheelchair|(?:uses?|using|needs?) (?:a )?(?:wheelchair|rollator|walker|zimmer|mobility scooter))\b"
     r"|\bwheelchair (?:full[- ]time|user)\b", None, False),
    # no job, in one ("a stay-at-home mum", then "started a part-time job at the pharmacy")
    (r"\b(?:stay[- ]at[- ]home (?:mum|mom|dad|parent)|unemployed|out of work|between jobs|job[- ]hunting"
     r"|looking for (?:a job|work))\b",
     r"\b(?:started|got|landed|accepted|took|starts?) (?:a |the |their |his |her |a new )?(?:[\w-]+ ){0,2}(?:job"
     r"|role|position)\b|\bhired\b|\bjoined (?:the |a )?(?:[\w&'-]+ ){0,2}(?:team|company|firm|staff|payroll"
     r"|practice|agency)\b", None, False),
    # how one gets to work, in another way ("I drive to work every day", then "I take the metro to the office now")
    (r"\b(?:drives?|driving|cycles?|cycling|walks?|walking|bikes?) (?:in)?to (?:work|the office)\b|\bdrives? into\b"
     r"|\b(?:gets?|takes?) the (?:bus|train|tube|metro|tram|subway) (?:in)?to (?:work|the office)\b",
     r"\b(?:takes?|gets?|taking|getting) the (?:metro|bus|train|tube|luas|tram|subway|underground)(?: [\w'-]+){0,3}"
     r" (?:to work|to the office|in|into (?:work|town)|every (?:day|morning)|now)\b"
     r"|\b(?:cycles?|cycling|walks?|walking) (?:in)?to (?:work|the office)\b"
     r"|\b(?:fully|gone|went|now|working|works?) remote(?:ly)?\b|\bgave up (?:on )?driving\b", None, False),
    # not driving, in a licence ("I can't drive", then "I've had my licence since October!")
    (r"\b(?:can(?:'t|not| not) drive|(?:doesn't|does not|don't|do not|never learned to) drive|(?:no|without a)"
     r" (?:driving )?licen[cs]e|learning to drive|(?:taking|having|doing) driving lessons)\b",
     r"\b(?:passed (?:their|his|her|the) (?:driving )?test|(?:got|has had|have had|has got|now has|earned)"
     r" (?:their|his|her|a) (?:full )?(?:driving |drivers? )?licen[cs]e)\b", None, False),
    # working from home, then in the office; in the office, then from home
    (r"\b(?:works? (?:from|at) home|working (?:from|at) home|(?:fully )?remote(?:ly)?|wfh)\b",
     r"\b(?:(?:back )?(?:in|to|into) the office|hybrid|office (?:\w+ )?days?)\b", None, False),
    (r"\b(?:(?:in|into|to|at) the office|office (?:\w+ )?days?|commut\w*)\b",
     r"\b(?:(?:fully )?remote(?:ly)?|from home|wfh|hybrid)\b", None, False),
    # leave from work, in going back ("I'm on maternity leave", then "back at work since Monday")
    (r"\b(?:on|off on|taking|taken) (?:maternity|paternity|parental|sick|medical|compassionate|long-term sick) leave\b",
     r"\b(?:back (?:at|to|in) (?:work|the office)|returned to work|returning to work|went back to work)\b",
     None, False),
    # a job, in losing it ("got made redundant" ends "works at the council" as well as "is a planner")
    (r"\b(?:works? (?:at|for|in)|working (?:at|for)|employed (?:at|by)|(?:job|position|role) (?:at|with)|works as)\b"
     r"(?! (?:home|weekends?|nights?|the weekend)\b)",
     r"\b(?:(?:made|been made|got made|was made) redundant|laid off|lost (?:their|his|her|my) job"
     # the user's own notice ("their"): "Chloe handed in her notice" is news of a colleague, no end of the user's job
     r"|(?:handed|put|gave|turned) in their notice"
     r"|(?:got|was|been|getting) (?:fired|sacked|let go)|unemployed|out of work|between jobs|job[- ]hunting)\b",
     None, False),
    # living with parents, then in a home of one's own
    (r"\b(?:lives?|living|still lives?|still living) (?:with|at) (?:their|his|her) (?:parents|mum|mom|dad|family|folks"
     r"|parents' house|mum's|mom's|dad's)",
     r"\b(?:moved out|moving out|(?:moved|moving) in(?:to)? (?:a|an|their|his|her|the) (?:\w+ )?(?:flat|flatshare|house"
     r"|houseshare|apartment|place|home|studio|room)"
     r"|(?:got|has|have) (?:their|his|her) own (?:place|flat|house|apartment)"
     r"|renting (?:a|an|their|his|her) (?:\w+ )?(?:flat|studio|place|house|room|apartment|bedsit)"
     r"|bought (?:a|their|his|her) (?:first )?(?:place|flat|house|home|apartment))\b",
     None, False),
    # living alone, then with someone
    (r"\b(?:lives? alone|living alone|lives? on (?:their|his|her) own|lives? by (?:them|him|her)sel(?:f|ves))\b",
     r"\b(?:moved in|moving in|living with|lives with|live with|staying with|roommate|flatmate|housemate)\b",
     _ANYONE_OF_THEIRS, False),
))


def _whose_state_ends(subject: str, attribute: str, said_of: re.Pattern | None, partners: bool) -> set[str]:
    """The subjects whose earlier state a later one said of `subject` ends: its own; when `subject` is one of
    the user's people `said_of` names, the user's too; and with `partners`, the user's partner's, whether said
    of one of those people ("our son was born") or as the user's own news about their children ("our twins
    arrived", never "Maria was born in Lagos")."""
    owner, _, relation = subject.partition("'s ")
    theirs = {f"{owner}'s {partner}" for partner in _PARTNERS} if partners else set()
    if not relation:
        return {subject, *theirs} if attribute in ("children", "pregnancy") else {subject}
    if said_of is None or not said_of.fullmatch(relation):
        return {subject}
    return {subject, owner, *theirs}


def _held_when_said(draft: MemoryDraft, said_at: datetime, new_id: UUID) -> QuerySet:
    """The user's memories current when the statement was said, begun before it, other than what it wrote:
    what a statement may end."""
    return (
        Memory.objects.filter(organization_id=draft.organization.id, user=draft.user, project_id=draft.project_id,
                              status=Memory.Status.ACTIVE, valid_from__lt=said_at)
        .filter(Q(valid_to__isnull=True) | Q(valid_to__gt=said_at))
        .exclude(id=new_id).exclude(sources__in=[episode.id for episode in draft.sources])
    )


# A taste turned ("weirdly I like mushrooms now" after "can't stand mushrooms"): the other taste of the same thing
# ends, in whichever slot either was kept (likes, dislikes, dislikes_food, none). Disliking is read first: "doesn't
# like" holds "like".
_DISLIKING = (r"(?:hates?|dislikes?|detests?|can(?:'|no)?t stand|cannot stand|(?:doesn't|does not|don't|do not)"
              r" (?:really )?(?:like|enjoy|eat)|(?:is|am|'m) not (?:a (?:big )?fan of|into))")
_LIKING = (r"(?:likes?|loves?|enjoys?|adores?|(?:is|am|'m) (?:really |so )?into|(?:is|am|'m) a (?:big |huge )?fan of"
           r"|(?:got|gotten|getting) (?:really )?into)")
_THING = (r"\s+(?P<thing>[\w' -]+?)(?=\s+(?:now|these days|anymore|any more|again|after all|though|either)\b"
          r"|[,.;:!?(]|$)")
_DISLIKED, _LIKED = (re.compile(rf"\b{verb}{_THING}", re.I) for verb in (_DISLIKING, _LIKING))
_NOT_THE_THING = _stems(" ".join(_VALUE_FILLER | {"their", "them", "it", "food", "stuff"}))


def _taste(text: str) -> tuple[str, set[str]] | None:
    """("dislikes" or "likes", the stems of what) a text says of a taste, or None when it says none, or both."""
    disliked = _DISLIKED.search(text)
    liked = _LIKED.search(_DISLIKED.sub("", text))
    if bool(disliked) == bool(liked):
        return None
    found = disliked or liked
    thing = _stems(found["thing"]) - _NOT_THE_THING
    return ("dislikes" if disliked else "likes", thing) if thing else None


def taste_turned_close(*, draft: MemoryDraft, said_at: datetime, new_id: UUID, actor: ActorRef) -> None:
    """A new taste ends the opposite taste of the same thing that the user's subject held (_LIKED, _DISLIKED)."""
    told = _taste(draft.text)
    if told is None:
        return
    way, thing = told
    for memory in _held_when_said(draft, said_at, new_id).filter(subject=draft.subject).defer(*VECTORS):
        held = _taste(memory.text)
        if held and held[0] != way and (held[1] <= thing or thing <= held[1]):
            memory_end(memory=memory, valid_to=said_at, actor=actor, reason=f"{memory.attribute or 'taste'} turned")


def later_state_close(*, draft: MemoryDraft, said_at: datetime, new_id: UUID, actor: ActorRef) -> None:
    """A new memory in a later life state (LATER_STATES) ends the current memories of its subject in the
    earlier one: "Baby Aiko arrived on Tuesday." ends "The user is 30 weeks pregnant.", "mum's in remission"
    ends "Mum's having chemo". A memory that already says the later state is left alone. Only the user's own
    words get here."""
    states = [(earlier, later, _whose_state_ends(draft.subject, draft.attribute, said_of, partners))
              for earlier, later, said_of, partners in LATER_STATES if later.search(draft.text)]
    if draft.user is None or not states:
        return
    subjects = set().union(*(whose for *_, whose in states))
    current = _held_when_said(draft, said_at, new_id).filter(subject__in=subjects, kind=Memory.Kind.SEMANTIC)
    for memory in current.defer(*VECTORS).distinct()[:PEOPLE_LOOKED_AT]:
        if any(earlier.search(memory.text) and not later.search(memory.text) and memory.subject in whose
               for earlier, later, whose in states):
            memory_end(memory=memory, valid_to=said_at, actor=actor, reason="changed: a later state of it was said")


# One of the user's people or animals died, said of them ("The user's dad died last week.", "The user's dog Rex was
# put down.") or as the bereaved say it ("we lost nan on Tuesday", not "lost the dog in the park for an hour"); not
# someone of theirs ("dad's best friend died"), nor a burial or a funeral, which others have too ("dad buried the
# time capsule").
_ONE_WHO_DIED = (r"(?:(?:old|late|little|big|baby|younger|older|beloved) )?"
                 rf"(?P<who>{alternatives({*RELATIVES, *PETS})})(?: (?P<name>(?-i:[A-Z])[\w'-]+))?")
_SAID_DIED = (
    re.compile(rf"(?P<whose>[\w-]+)'s {_ONE_WHO_DIED}(?: (?:has|had|just|sadly|finally|recently|peacefully|was))* "
               r"(?!buried|funeral)"
               rf"(?:{DEATH}|put down|put to sleep)\b", re.I),  # "was put down": DEATH's has whom between
    re.compile(rf"\blost (?:(?:the user's|their|our|my) )?{_ONE_WHO_DIED}\b(?!'s){NOT_FOR_A_WHILE}", re.I),
)


def death_close(*, draft: MemoryDraft, said_at: datetime, new_id: UUID, actor: ActorRef) -> None:
    """The death of one of the user's people or animals ends what was current of them: "my dad died last week" ends
    "The user's dad is 84 and the dementia is getting worse.", not their name, nor what is of the user ("The user's
    dad lives with the user now." is of the dad: it ends). Told with a name, only the memories that say it ("our
    dog Rex died" leaves the other dog's, and ends "Rex is 12 and has arthritis."). Only the user's own words get
    here."""
    died = next((found for said in _SAID_DIED if (found := said.search(draft.text))), None)
    if draft.user is None or died is None or _SOMEONE_OF_THEIRS.fullmatch(died.groupdict().get("whose") or ""):
        return  # not the user's own ("The user's dad's best friend died.")
    owner, who, name = _subject_owner(draft.subject), died["who"].lower(), died["name"]
    subject = f"{owner}'s {relative_key(PETS.get(who, who))}"
    theirs = Q(subject=subject)
    if name:
        # what names them, in their subject or told of them by name ("Rex is 12 and has arthritis.")
        theirs = Q(subject=subject, text__iregex=rf"\m{re.escape(name)}\M") | Q(subject=owner,
                                                                               text__regex=rf"^{re.escape(name)}\M")
    held = _held_when_said(draft, said_at, new_id).filter(theirs, kind=Memory.Kind.SEMANTIC)
    for memory in held.exclude(attribute__in=NAME_SLOTS).defer(*VECTORS).distinct()[:PEOPLE_LOOKED_AT]:
        memory_end(memory=memory, valid_to=said_at, actor=actor, reason="ended: they died")


# What a standing instruction is about: a new one about the same thing ("answer in Portuguese" after "reply in
# English", "more detail from now on" after "keep replies short") replaces the old one; others accumulate.
INSTRUCTION_ASPECTS = {
    "language": re.compile(rf"\b(?:{alternatives(LANGUAGES)}|language)\b", re.I),
    "length": re.compile(r"\b(?:short(?:er)?|brief(?:er)?|concise|long(?:er)?|detail(?:ed|s)?|in depth|one line"
                         r"|bullet points?|bullets|tl;?dr|to the point)\b", re.I),
    "emoji": re.compile(r"\bemojis?\b", re.I),
    "formality": re.compile(r"\b(?:formal(?:ly)?|informal(?:ly)?|casual(?:ly)?|polite(?:ly)?|swear(?:ing)?|slang)\b",
                            re.I),
    "address": re.compile(r"\b(?:call|address) them\b", re.I),
    "units": re.compile(r"\b(?:metric|imperial|celsius|fahrenheit|units)\b", re.I),
}


def _aspects(instruction: str) -> set[str]:
    return {aspect for aspect, pattern in INSTRUCTION_ASPECTS.items() if pattern.search(instruction)}


# What a preference of how to be answered is said of, in whatever slot it was kept ("The user likes short answers.")
_OF_ANSWERS = r"\m(?:answers?|repl(?:y|ies)|responses?|explanations?)\M"


def instruction_close(*, draft: MemoryDraft, said_at: datetime, new_id: UUID, actor: ActorRef) -> None:
    """A new standing instruction ends the user's earlier ones, and their stated preferences of how to be answered,
    about nothing else than what it is about (INSTRUCTION_ASPECTS): "answer in Portuguese" ends "reply in English",
    "give me more detail from now on" ends "The user prefers short answers."; "never use emojis" leaves them."""
    aspects = _aspects(draft.text)
    if draft.user is None or not aspects:
        return
    earlier = _held_when_said(draft, said_at, new_id).filter(
        Q(attribute__in=["instruction", "communication"]) | Q(text__iregex=_OF_ANSWERS))
    for memory in earlier.defer(*VECTORS).distinct()[:PEOPLE_LOOKED_AT]:
        if (old := _aspects(memory.text)) and old <= aspects:
            memory_end(memory=memory, valid_to=said_at, actor=actor, reason="changed: a new instruction about it")


# A change closes the old value it replaces even when the two were kept in different slots, or in none: the
# memory services.replacement's model finds most likely replaced, among the user's memories nearest to the new
# one and nearest to the message that said it, when likely enough (bars from bench/change_closing.py's table).
REPLACEMENT_CANDIDATES = 6  # nearest to the new memory, and as many nearest to the message
# Out of fold on dev (648 pairs, 279 of whose old values the rest of the write path leaves current): at 0.7, 228 of
# those end for 17 unrelated facts; at 0.8, 212 for 8; at 0.6, 231 for 24 (the model before: 211 for 30 at 0.3).
# The whole write path, dev pairs written under weights trained without them: changes recognised 76.0% -> 78.8%,
# unrelated facts closed 39 -> 32 of ~3,400 (at 0.6 and 0.7: 80.4%, 61 closed without the margin floor).
REPLACEMENT_BAR = 0.7  # the change said in the memory's own words, or a statement that there was none of a kind
HEARD_CHANGE_BAR = 0.8  # only the classifier heard a change in the message
# Below its threshold the change head still hears many changes faintly ("the Libre sensor on my arm is a game
# changer" after "I check my glucose with a finger prick meter"), and so does news that changes nothing ("Declan won
# driver of the month" after "my partner Declan drives trucks"): heard at least FAINT_CHANGE_HEARD, a memory ends
# only when the replacement model is near certain of it. Three new writers' pairs (360 changes, 258 continuations),
# held out, the replacement model off: of the 102 old values left current, 35 are heard so and that certain, against
# 12 of the 85 facts news on their topic left current (0.15 and 0.95: 44 against 20; 0.3 and 0.98: 22 against 10).
FAINT_CHANGE_HEARD = 0.2
FAINT_CHANGE_BAR = 0.98
# Heard only faintly, a change must also be of the kind of fact it replaces: at least FAINT_KIND_FLOOR likely of the
# same family (the dot product of the family model's probabilities), or a user who holds little else sees faint news
# of another kind clearly nearest to what they hold. Faint ends on the dev split (logged): 3 right and 7 wrong, of
# which none and 3 below 0.05. Not for changes said or heard clearly: the family model reads short news badly
# ("braces off!!!" and "The user has braces." agree 0.04, "Nils is Ines's husband now" and "Ines's boyfriend Nils
# teaches maths" 0.01), so a floor there ends fewer of the changes people say every day.
FAINT_KIND_FLOOR = 0.05
FAMILY_AGREEMENT = replacement.REPLACEMENT_FEATURES.index("family agreement")
_SAYS_CHANGE = re.compile(r"\b(?:now|anymore|any more|no longer|these days|nowadays|instead|switched|moved|relocated"
                          r"|quit|left|retired|graduated|turned|became|stopped|gave up|back to|new|upgraded|sold"
                          r"|recovered|got over|renamed|transferred|remarried|outgr[eo]wn?|cut (?:down|back)"
                          r"|handed in (?:my|our|their|his|her) notice"
                          r"|changed (?:my|our|their) (?:minds?|majors?|courses?|names?))\b",
                          re.I)
# "I've never had a pet", "I don't have any allergies", "I don't really exercise", "I have no health problems": a
# statement that the subject has none of a kind, which any later statement of that kind ends, said with a change
# word or not.
_NONE_OF_A_KIND = (r"\m(never|no longer)\M|\m(has|have|had) no\M"
                   r"|\m(no|not|n't|dont|don't|doesn't|haven't|hasn't)\M.*\m(any|a|an|really|ever|at all)\M")
_SPEAKS_OF_A_NAME = re.compile(r"\b(?:names?|named|called|calls|surname|maiden|goes by|go by|going by)\b", re.I)
_NO_NEW_NAME = re.compile(r"\b(?:maiden|former|old|previous|birth) (?:sur|last )?name (?:was|is)\b|\bn[ée]e\b"
                          r"|\bkept (?:my|our|their|his|her) (?:own )?(?:sur|last |maiden )?names?\b", re.I)
_NEGATION = re.compile(r"\b(?:never|no|not|don't|dont|doesn't|haven't|hasn't|isn't|aren't|can't|won't)\b|n't\b", re.I)
_PERSON_NAME = re.compile(rf"\b(?-i:[A-Z][{NAME_LETTERS}]{{2,}})\b")


def related_close(*, draft: MemoryDraft, changes: bool, message_changes: bool, heard: float, said_at: datetime,
                  new_id: UUID, actor: ActorRef) -> None:
    """The user said something new about a kind of fact the judge found no slot value of to replace:
    "Can't believe my boy is 5 now" after "my son is 4", "I do IT support now" after "I'm a
    photographer", "got a cat this weekend" after "I've never had a pet". The value it replaces ends
    where the statement begins: when it says a change (`changes`), the closest current memory of one of
    the user's people it names ("tariq graduated", "mum retired"), else the memory of the user or their
    people it most likely replaces (services.replacement); without a change, only a statement that there is
    none of the kind. A change is said by the memory's own words or heard in the whole message by the
    classifier (`message_changes`: "Aer Lingus now" after "I work for Ryanair", "Baby Aiko arrived on
    Tuesday" after "I'm 30 weeks pregnant"); heard only faintly (`heard`, the classifier's likelihood, at least
    FAINT_CHANGE_HEARD), the memory it replaces must be near certain. Only the user's own words get here."""
    from memoryapp.selectors.names import user_display_name

    if draft.user is None or (not changes and _NEGATION.search(draft.text)):
        return
    if a_stay(draft.text):
        return  # "We're in Rome on holiday this week" replaces no home
    if used_to(draft.text) or any(used_to(episode.content) for episode in draft.sources):
        # "I used to be a chef", "Back in 2018 I worked at Google" replace no job (said in the first person: the
        # text's "the user worked" is no "I worked"); what it names ends by its name (ended_close)
        return
    if says_one_more(draft.text):
        return  # "The user has also cut out dairy.", "...got into sci-fi too": one more value, none replaced
    if _NO_NEW_NAME.search(draft.text):
        return  # "The user's maiden name was Brennan.", "...kept their own surname": no name changed
    said_now = [episode.id for episode in draft.sources]
    held = _held_when_said(draft, said_at, new_id).filter(kind=Memory.Kind.SEMANTIC)
    # news of someone leaves their name as it was ("Niamh's left teaching!"), unless it speaks of a name
    current = held if _SPEAKS_OF_A_NAME.search(draft.text) else held.exclude(attribute__in=NAME_SLOTS)
    faint = not changes and heard >= FAINT_CHANGE_HEARD
    if not changes and not faint:
        # Most users have no such statement: a light look first (the whole query cost ingest a tenth).
        negatives = list(current.filter(text__iregex=_NONE_OF_A_KIND).values_list("id", flat=True)[:50])
        if not negatives:
            return
        current = current.filter(id__in=negatives)
    # What may end is measured against the user's other memories nearest to the change: a memory is likely
    # replaced when it is clearly nearer than those (services.replacement), not merely the only one looked at.
    message = _message(draft)
    beside = replacement_candidates(held, draft.embedding, message[1])
    who = user_display_name(draft.user)  # how texts call the user, looked up once for all that follows
    old = _person_named(current, draft, beside, message, who) if changes else None
    likely_bar = None  # the bar `old` was chosen by when the replacement model chose it
    # Most change words say nothing alone ("just", "got", "since"): the new memory must say the change
    # itself, or the classifier hear one in the message (25 dev users of 15 facts lost 7 of their 375 facts
    # to changes without this rule; 1 with it, 3 since the classifier is heard too).
    said_in_words = bool(_SAYS_CHANGE.search(draft.text))
    if old is None and (not changes or message_changes or said_in_words):
        # A relative's news never replaces the user's own value; a statement kept as the user's may be about
        # one of their people the extractor did not recognise ("Eli turned 5" after "my son Eli is 4", "Tom got
        # promoted" after "my husband's a PC"), but news of someone named never ends a value of the user's own
        # ("Marco got a job at Google" and "The user works at Tesco.").
        theirs = current.filter(subject_and_their_people(draft.subject))
        if someone_named_first(draft.text, who):
            theirs = theirs.exclude(subject=draft.subject)
        bar = FAINT_CHANGE_BAR if faint else REPLACEMENT_BAR if not changes or said_in_words else HEARD_CHANGE_BAR
        old = _kind_said_again(theirs, draft)
        if old is None:
            candidates = replacement_candidates(theirs, draft.embedding, message[1])
            others = _about_someone_else(candidates, draft, who)
            old = _replaced([memory for memory in candidates if memory.id not in others], draft, bar, beside, message,
                            who, clear_gap_suffices=not faint, kind_floor=FAINT_KIND_FLOOR if faint else 0.0)
            likely_bar = bar
    if old is None or _relatives_name_said(old, draft) or _name_of_someone_not_spoken_of(old, draft):
        return
    if old.subject == draft.subject != _subject_owner(draft.subject) and _OF_THEIR_PERSON.search(draft.text):
        return  # news of someone of theirs, kept under them: "The user's dad's best friend died." ends none of dad's
    if old.subject != draft.subject and not _names_someone_of_theirs(draft.text, who):
        # the user's own news ends none of their people's values: "crochet is my new thing" and "my roommate Dev is a
        # chef" (the family model heard a job in both). Nothing ends: the next likeliest was measured against it.
        return
    reason = "changed: the user said something new about it"
    with_old = written_beside(old, said_now)
    # What the same message said beside `old` and the change as likely replaces ends too: "I have tuberculosis,
    # I'm in treatment for six months" when "the last sputum test was clean".
    likely_too = _replaced_beside(old, with_old, draft, likely_bar, beside, message, who) if likely_bar else []
    for memory in dict.fromkeys([old, *restatements(old, with_old, draft), *_said_alike(old, draft.text, with_old),
                                 *likely_too]):
        memory_end(memory=memory, valid_to=said_at, actor=actor, reason=reason)
    _answers_in_place_of(old, new_id=new_id, draft=draft, who=who)


def _of_someone_known(candidate: Candidate, draft: MemoryDraft) -> tuple[Candidate, MemoryDraft]:
    """News of one of the user's people or pets told by name alone is theirs, said with who they are as the user's
    memory of them says it: "Ana moved to Rome." after "The user's sister Ana lives in Paris." is written "The
    user's sister Ana moved to Rome.", of the sister (found by "where does my sister live?", in her slots);
    "Pepper crossed the rainbow bridge." after "... has a cat called Pepper." "The user's cat Pepper crossed..."."""
    from memoryapp.selectors.names import user_display_name

    if draft.subject != _subject_owner(draft.subject):
        return candidate, draft  # already someone else's
    # most texts open with the user or "The user": told apart without a query for how texts call the user
    name = someone_named_first(draft.text, THE_USER)
    if name is None or name in (readable_name(draft.user.external_id), draft.user.first_name.strip()):
        return candidate, draft
    who = user_display_name(draft.user)
    if someone_named_first(draft.text, who) is None:
        return candidate, draft
    known = (Memory.objects.filter(organization_id=draft.organization.id, user=draft.user, project_id=draft.project_id,
                                   status=Memory.Status.ACTIVE, text__iregex=rf"\m{re.escape(name)}\M")
             .exclude(attribute__in=NAME_SLOTS).order_by("-valid_from").only("text", "subject")[:PEOPLE_LOOKED_AT])
    for memory in known:
        text = _said_who_they_are(draft.text, memory, who)
        if text != draft.text:
            subject = memory.subject if memory.subject.startswith(f"{draft.subject}'s ") else draft.subject
            candidate = replace(candidate, text=text, subject=subject)
            return candidate, replace(draft, text=text, subject=subject, embedding=embeddings.encode_one(text),
                                      search_embedding=None)
    return candidate, draft


def _answers_in_place_of(old: Memory, *, new_id: UUID, draft: MemoryDraft, who: str) -> None:
    """The change that ends `old` answers what `old` answered: it says who the one it names is, as `old` said it,
    and takes `old`'s slot when its own is one of many values (the family model's guess from the news alone):
    "We had to put Rufus down", filed under coworkers, ends "The user's dog Rufus is 3." and becomes "The user's
    household had to put the user's dog Rufus down." in the slot pet, which "do I have a dog?" finds."""
    changed = {}
    text = _said_who_they_are(draft.text, old, who)
    if text == draft.text:
        text = _named_as_whose(draft, old, who)
    if text != draft.text:
        changed.update(text=text, embedding=embeddings.encode_one(text))
        if old.subject.startswith(f"{draft.subject}'s ") and text.lower().startswith(possessive(who).lower()):
            changed["subject"] = old.subject  # "Chloe's just moved back to Perth to be closer to us."
    # a name says who someone is, never what the news is about; and a slot of someone else's is none of the news'
    # subject's ("Sam and I ended things" ends "The user's girlfriend Sam lives in Bristol.": no home of the user)
    if (old.attribute not in ("", *NAME_SLOTS, draft.attribute) and not single_valued(draft.attribute)
            and changed.get("subject", draft.subject) == old.subject):
        changed["attribute"] = old.attribute
    if not changed:
        return
    slot = {"subject": changed.get("subject", draft.subject), "attribute": changed.get("attribute", draft.attribute)}
    if single_valued(slot["attribute"]):
        if Memory.objects.filter(organization_id=draft.organization.id, user=draft.user, project_id=draft.project_id,
                                 status=Memory.Status.ACTIVE, cardinality=Memory.Cardinality.SINGLE,
                                 **slot).exclude(pk=new_id).exists():
            # its slot's value still holds: the news stays beside it, where it was
            changed = {key: value for key, value in changed.items() if key in ("text", "embedding")}
        else:
            changed["cardinality"] = Memory.Cardinality.SINGLE
    if not changed:
        return
    Memory.objects.filter(pk=new_id).update(**changed)
    queued = getattr(_queued, "searchable", None)
    if queued is None or new_id not in queued:
        _search_vectors_store([new_id])


_NOT_A_KIND = frozenset({"old", "new", "little", "big", "young", "lovely", "beloved", "favourite", "favorite", "own",
                         "first", "second", "only", "current"})


def _said_who_they_are(text: str, old: Memory, who: str) -> str:
    """The news with who the one it names is, as `old` said it: "Ana moved to Rome." after "The user's sister Ana
    lives in Paris." -> "The user's sister Ana moved to Rome."; "Pepper crossed the rainbow bridge." after "The
    user's household has a cat called Pepper." -> "The user's cat Pepper crossed the rainbow bridge."."""
    # the names it gives someone, not a place or an organisation ("... mother lives in Tampa.")
    for name in _NAME_OF_SOMEONE.findall(old.text):
        at = re.search(rf"\b{re.escape(name)}\b", text, re.IGNORECASE)
        if at is None or name.lower() in {"the", *(word.lower() for word in _WORD.findall(who))}:
            continue
        # it says who they are itself ("nils is my husband now"); a word for someone else does not ("We rehomed
        # Mochi with the user's aunt" is still to say Mochi is their cat)
        if _says_who(text, name):
            return text
        relation = old.subject.partition("'s ")[2]
        kind = re.search(rf"\b(?i:an?|{re.escape(possessive(who))}|their) ([a-z][\w-]*) "
                         rf"(?:(?:is |was )?(?:called|named) )?{name}\b", old.text)
        # in the user's word when the old text has one ("stepdad", not the key "stepfather"); "an old Chromebook"
        # says what it is like, not who
        said_kind = kind[1] if kind and kind[1] not in _NOT_A_KIND else None
        word = said_kind if said_kind and not (relation and said_kind in relation.split()) else relation
        described = f"{possessive(who)} {word}" if word else ""
        if not described or described.lower() in text.lower():
            return text
        if re.search(rf"\b{re.escape(word)} {re.escape(name)}\b", text, re.I):
            return text  # the news says who they are itself ("lost our dog Rex")
        if at.start() == 0:
            return f"{sentence(described)} {text}"
        if text.lower().startswith(who.lower()):
            described = f"their {word}"  # the user said first: "The user's household rehomed their cat Mochi"
        before = re.sub(r"\b(?:the|a|an) $", "", text[:at.start()], flags=re.I)  # "fed the Pepper" is no English
        return f"{before}{described} {text[at.start():]}"
    return text


def _named_as_whose(draft: MemoryDraft, old: Memory, who: str) -> str:
    """News of someone by a name no memory gave them, which ends what the user said of one of their people unnamed:
    that person, by that name. "Holly turned 16 on Saturday." ending "The user's daughter is 15 years old." ->
    "The user's daughter Holly turned 16 on Saturday." (not when the old memory names someone: another person)."""
    relation = old.subject.partition("'s ")[2] if old.subject.startswith(f"{draft.subject}'s ") else ""
    name = someone_named_first(draft.text, who)
    if not relation or name is None or _names_besides_the_user(old.text, who):
        return draft.text
    return f"{sentence(possessive(who))} {relation} {draft.text}"


def _says_who(text: str, name: str) -> bool:
    """Whether the text says who `name` is: a word for one of the user's people or animals just before the name ("the
    user's husband Nils") or said of it ("Nils is the user's husband now", "Nils, their husband")."""
    said = rf"(?:{_PEOPLE_WORDS})"
    return bool(re.search(rf"\b{said}\s+{re.escape(name)}\b|\b{re.escape(name)}(?:,|\s+(?:is|was|has been))\s+"
                          rf"(?:[\w']+\s+){{0,3}}?{said}\b", text, re.IGNORECASE))


# The words for the user's people and animals.
_PEOPLE_WORDS = alternatives({*RELATIVES, *FAMILY_MEMBERS, *PETS, "partner", "friend", "pet", "roommate", "flatmate",
                              "housemate", "boss", "manager", "colleague", "coworker", "neighbour", "neighbor"})


# Few memories are written beside a value from its message, and one of them saying it again is likely: a lower bar
# than among all of the user's memories. Dev out of fold: one more change recognised, one fewer unrelated fact closed.
SAID_BESIDE_BAR = 0.4


def said_beside_close(*, old: Memory, draft: MemoryDraft, said_at: datetime, new_id: UUID, actor: ActorRef) -> None:
    """A value replaced in its slot may have been said again beside it in words no rule ties to it: "I eat
    everything, I'm a total omnivore." wrote "The user eats everything." and "The user is a total omnivore.", and
    "I've gone vegetarian" replaces the first in the diet slot. Of what the same message said of the same
    subject and another slot, the memory the new one most likely replaces (services.replacement, at
    SAID_BESIDE_BAR) ends too; a value said beside it of another kind ("... and I work as a plumber") is not
    likely replaced, and stays."""
    from memoryapp.selectors.names import user_display_name

    written_with_old = _written_from_its_messages(old)
    if not written_with_old:
        return
    held = _held_when_said(draft, said_at, new_id).filter(kind=Memory.Kind.SEMANTIC)
    # not the slot's other values: "allergic to shellfish" said beside "allergic to peanuts" is another allergy
    beside_old = list(held.filter(subject=old.subject, id__in=written_with_old).exclude(attribute=old.attribute))
    if not beside_old:
        return
    message = _message(draft)
    beside = replacement_candidates(held, draft.embedding, message[1])
    replaced = _replaced(beside_old, draft, SAID_BESIDE_BAR, beside, message, user_display_name(draft.user))
    if replaced is not None and not _relatives_name_said(replaced, draft):
        memory_end(memory=replaced, valid_to=said_at, actor=actor,
                   reason="changed: said beside the value the user replaced")


def _relatives_name_said(memory: Memory, draft: MemoryDraft) -> bool:
    """Whether `memory` is the name of a relative by birth that the new memory says whole: "Tom left Deloitte" is
    news of Tom, not of "The user's brother's name is Tom." ("broke up with Dan" may end "The user's boyfriend's
    name is Dan.", "Jessica's Jessica Alvarado now" "The user's daughter's name is Jessica Moore.")."""
    return (_a_relatives_name(memory, _subject_owner(draft.subject))
            and _words(memory.value) <= _words(draft.text))


def _name_of_someone_not_spoken_of(memory: Memory, draft: MemoryDraft) -> bool:
    """Whether `memory` is a name the new memory neither is about nor says a word of: "We just had a baby girl, her
    name is Zara!" names someone new, and leaves "The user's sister's name is Priya." as it was ("i go by Robin now"
    is of the user's own name, "Jessica's Jessica Alvarado now" says the name it changes)."""
    return (memory.attribute in NAME_SLOTS and memory.subject != draft.subject
            and not _words(memory.value) & _words(draft.text))


def _subject_owner(subject: str) -> str:
    """Whose a memory's subject is: the user's id for the user and for their people ("u1's sister" -> "u1")."""
    return subject.split("'s ", 1)[0]


def _a_relatives_name(memory: Memory, owner: str) -> bool:
    """Whether `memory` is the name of one of `owner`'s relatives by birth ("The user's brother's name is Tom.")."""
    whose, _, kin = memory.subject.partition("'s ")
    return memory.attribute == "name" and whose == owner and kin in BLOOD_RELATIVES


def _about_someone_else(candidates: list[Memory], draft: MemoryDraft, who: str) -> set[UUID]:
    """The candidates about one of the user's people other than the one the new memory names: "Ethan graduated"
    is no news of "Nico just started at Purdue." when the user's memories, current or not, introduce both as their
    people ("The user's brother Nico ...", "The user's son Ethan ..."). Other capitalized words (places, schools)
    name no one."""
    own = {word.lower() for word in _WORD.findall(who)}
    said = {name for name in _PERSON_NAME.findall(draft.text) if name.lower() not in own}
    if not said:
        return set()
    named = {memory.id: set(_PERSON_NAME.findall(memory.text)) for memory in candidates}
    if not any(names - said for names in named.values()):
        return set()  # no candidate names anyone else: nothing to look up
    words = sorted(said.union(*named.values()))
    alternation = "|".join(map(re.escape, words))
    introduced = re.compile(rf"'s (?:{_PEOPLE_WORDS}),? ({alternation})\b")
    theirs = Memory.objects.filter(organization_id=draft.organization.id, user=draft.user,
                                   text__regex=f"'s .*({alternation})")
    texts = theirs.values_list("text", flat=True)[:PEOPLE_LOOKED_AT]
    people = {name for text in texts for name in introduced.findall(text)}
    if not said & people:
        return set()
    return {id for id, names in named.items() if (names - said) & people and not names & said}


def _names_someone_of_theirs(text: str, who: str) -> bool:
    """Whether a memory's text may speak of someone or something of the user's other than the user: by a
    capitalised word not of the user's name (a place too, to be safe: "Callum's out of the navy"), a word for them
    ("son", "roommate", "dog") or a pronoun ("he", "her")."""
    return bool(_names_besides_the_user(text, who) or _SOMEONE_OF_THEIRS.search(text))


def _names_besides_the_user(text: str, who: str) -> set[str]:
    """The capitalised words of a memory's text other than "The" and the user's name (`who`): people, pets, places."""
    own = {"the", *(word.lower() for word in _WORD.findall(who))}
    return {word for word in _PERSON_NAME.findall(text) if word.lower() not in own}



# One of the user's people's own people or animals: "dad's best friend", "sister's new dog".
_OF_THEIR_PERSON = re.compile(rf"\b(?:{_PEOPLE_WORDS})'s (?:[\w-]+ )?(?:{_PEOPLE_WORDS})\b", re.I)
_SOMEONE_OF_THEIRS = re.compile(rf"\b(?:{_PEOPLE_WORDS}|he|she|him|her|his|hers|kids?|children"
                                rf"|baby|babies|family|household)\b", re.I)


def _kind_said_again(current, draft: MemoryDraft) -> Memory | None:
    """A statement that there is none of a kind whose kind the new memory names, in its words or by its slot:
    "The user has never owned a bike." when "The user bought a bike last weekend.", "The user has no pets."
    when a goldfish fills the pet slot (the kind is the last content word of the negative statement, stemmed:
    "gardens" is the kind of "a small garden")."""
    said = _stems(draft.text) | _stems(draft.attribute.replace("_", " "))
    for memory in current.filter(text__iregex=_NONE_OF_A_KIND).defer(*VECTORS)[:50]:
        kind = _kind_of_none(memory.text)
        if kind and stem(kind) in said:
            return memory
    return None


def _kind_of_none(text: str) -> str | None:
    """The kind a statement says there is none of: the last content word of the clause its negation is in
    ("has no pets, the condo board doesn't allow them": pets; "doesn't drink alcohol at all": alcohol)."""
    negation = _NEGATION.search(text)
    if negation is None:
        return None
    clause = re.split(r"[,;:.!?]|\s(?:but|because|so|since|as)\s", text[negation.start():], maxsplit=1)[0]
    words = [word for word in _VALUE_WORD.findall(clause.lower())
             if word not in _NOT_CONTENT and word not in _NO_KIND and not _NEGATION.fullmatch(word)]
    if len(words) > 1 and words[-1] in _GENERIC_KINDS:
        # "has no health problems", "no back issues": health, back; "no chronic conditions": health
        return "health" if words[-2] in _OF_HEALTH else words[-2]
    return words[-1] if words else None


# Words that name a kind only with the word before them: "no health problems", "no back issues"...
_GENERIC_KINDS = frozenset({"problem", "problems", "issue", "issues", "condition", "conditions", "trouble"})
# ...which, when it only says how serious or how known, is their health.
_OF_HEALTH = frozenset({"medical", "chronic", "serious", "major", "underlying", "known", "ongoing"})
# Words that end a negative statement without naming its kind: "doesn't drink alcohol at all" is about alcohol,
# and "moved all my accounts" is no news of it.
_NO_KIND = frozenset({"all", "any", "anymore", "more", "ever", "either", "yet", "really", "whatsoever", "much", "now",
                      "again", "too", "though", "lol", "tbh", "honestly", "actually"})

PEOPLE_LOOKED_AT = 200
# A person named is not enough alone ("got a little red Fiat" is no news of the Red Cross volunteering):
# the memory must be as likely replaced as when only the classifier heard the change.
NAMED_PERSON_BAR = HEARD_CHANGE_BAR


def subject_and_their_people(subject: str) -> Q:
    """The memories of a subject and, for the user (not one of their people), of the user's people."""
    theirs = Q(subject=subject)
    if "'s " not in subject:
        theirs |= Q(subject__startswith=f"{subject}'s ")
    return theirs


def _person_named(current, draft: MemoryDraft, beside: list[Memory], message: tuple[str, np.ndarray],
                  who: str) -> Memory | None:
    """The closest current memory of one of the user's people the new memory names, by name in any case
    ("tariq graduated" after "my brother Tariq is a student") or by how the user calls them ("mum retired")."""
    from memoryapp.services.extract.lexicon import RELATIVES, relative_key

    said = _words(draft.text)
    said |= {word.removesuffix("'s") for word in said}  # "jamie's been transferred" names Jamie
    kin = {relative_key(word) for word in RELATIVES if set(word.split()) <= said}
    said -= _words(who)  # the user is not one of their people
    owner = _subject_owner(draft.subject)
    people = (current.filter(Q(subject__startswith=f"{owner}'s ") | Q(subject=owner))
              .order_by("-valid_from").values_list("id", "subject", "text")[:PEOPLE_LOOKED_AT])
    # Named in the user's own memories too, as one of their people ("I live with my husband Kwame": the user's
    # home_life; not "The user works at Deloitte." when "Tom left Deloitte").
    named = [id for id, subject, text in people
             if (subject != owner and subject.split("'s ", 1)[1] in kin)
             or any(name.lower() in said
                    for name in (_names_beside_subject(text) if subject != owner else _people_named_in(text, who)))]
    if not named:
        return None
    candidates = replacement_candidates(current.filter(id__in=named), draft.embedding, message[1])
    return _replaced(candidates, draft, NAMED_PERSON_BAR, beside, message, who)


_WORD = re.compile(r"[\w'-]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _people_named_in(text: str, who: str) -> set[str]:
    """The names a memory of the user's (`who`, as texts call them) gives someone: its subject when that is
    someone else ("Alfie is 3."), or a name beside it, not a place or an organisation said after "at", "in",
    "to"...: "husband Kwame", "parrot Kiki" (not "works at Deloitte", "lives in Leeds")."""
    doer = someone_named_first(text, who)
    return ({doer} if doer else set()) | (set(_NAME_OF_SOMEONE.findall(text)) & _names_beside_subject(text))


_NAME_OF_SOMEONE = re.compile(r"(?<!\bat )(?<!\bin )(?<!\bto )(?<!\bfrom )(?<!\bfor )(?<!\bnear )(?<!\binto )"
                              rf"(?<!\bon )(?<!\bof )(?<!\bby )(?<=\s)((?-i:[A-Z])[{NAME_LETTERS}]{{2,}})\b")


def _names_beside_subject(text: str) -> set[str]:
    """The names a memory's text holds other than that of its subject, which it starts with."""
    names = _PERSON_NAME.findall(text)
    return set(names[1:]) - set(names[:1])


def _said_alike(old: Memory, new_text: str, with_old: list[Memory]) -> list[Memory]:
    """The old value said again beside `old` in other words: memories of the same subject written beside it
    (`with_old`: written_beside) that hold a name or number of `old` the new statement no longer says ("The user's
    son is 12 years old." beside "The user's son Leo is 12.", when "Leo turned 13")."""
    said = _words(new_text)
    dropped = {word.lower() for word in _NAMING_WORD.findall(old.text)[1:]} - said
    # all of them: "City" of "City Library" is no name of "the city college" said beside it
    return [memory for memory in with_old if dropped and memory.subject == old.subject
            and dropped <= _words(memory.text)]


_NAMING_WORD = re.compile(r"\b(?:(?-i:[A-Z][\w'-]+)|\d+(?:[.,]\d+)*\w*)")  # "19." names 19, "4.5" itself


def _replaced(candidates: list[Memory], draft: MemoryDraft, bar: float, beside: list[Memory],
              message: tuple[str, np.ndarray], who: str, *, clear_gap_suffices: bool = True,
              kind_floor: float = 0.0) -> Memory | None:
    """The memory of `candidates` the new one most likely replaces (services.replacement), if likely enough;
    `beside`: the user's other memories nearest to the change, which the candidates' margins are taken over;
    `message`: the words and vector of the message that said the change (_message); `who`: how texts call the
    user (selectors.names.user_display_name); `kind_floor`: the least agreement of the two memories' fact families
    (services.replacement's "family agreement") the replaced memory needs (FAINT_KIND_FLOOR)."""
    if not candidates:
        return None
    rows, likelihood = _replacement_likelihood(candidates, draft, beside, message, who)
    best = replacement.most_likely_replaced(likelihood, bar, clear_gap_suffices=clear_gap_suffices)
    return None if best is None or rows[best, FAMILY_AGREEMENT] < kind_floor else candidates[best]


def _replaced_beside(old: Memory, with_old: list[Memory], draft: MemoryDraft, bar: float, beside: list[Memory],
                     message: tuple[str, np.ndarray], who: str) -> list[Memory]:
    """Of what was written beside `old` (`with_old`: written_beside), what the new memory replaces at least `bar`
    likely too, measured as `old` was (_replaced). Not the names of the user's people: news of them leaves who
    they are."""
    owner = _subject_owner(old.subject)
    ids = [memory.id for memory in with_old if memory.kind == Memory.Kind.SEMANTIC
           and memory.attribute not in NAME_SLOTS and _subject_owner(memory.subject) == owner]
    if not ids:
        return []
    with_old = list(Memory.objects.filter(id__in=ids))  # written_beside leaves the vectors out
    _, likelihood = _replacement_likelihood(with_old, draft, beside, message, who)
    return [memory for memory, likely in zip(with_old, likelihood, strict=True) if likely >= bar]


def _replacement_likelihood(candidates: list[Memory], draft: MemoryDraft, beside: list[Memory],
                            message: tuple[str, np.ndarray], who: str) -> tuple[np.ndarray, np.ndarray]:
    """services.replacement's features and likelihood of each of `candidates` (see _replaced)."""
    allowed, looked_at = len(candidates), {memory.id for memory in candidates}
    candidates = [*candidates, *(memory for memory in beside if memory.id not in looked_at)]
    texts = [draft.text, *(memory.text for memory in candidates)]
    vectors = np.vstack([np.asarray(draft.embedding, dtype=np.float32),
                         *(np.asarray(memory.embedding, dtype=np.float32) for memory in candidates)])
    if who.lower() != "the user":
        # The model was fitted on texts that call the user "the user"; a name all of them share would
        # bring any two of this user's memories closer ("Wim has moved 9 times" and "Wim lives in Leeds").
        # Not in the user's own name, which is that memory's value: "The user is the user's name." says
        # nothing, and the change of name it should end ("back to my maiden name, Olga Ivanova") ended
        # the next name of a kind, a girlfriend's.
        said = re.compile(rf"\b{re.escape(who)}\b")
        owner = _subject_owner(draft.subject)
        own_name = {memory.id for memory in candidates if memory.attribute == "name" and memory.subject == owner}
        texts = [said.sub("The user", draft.text),
                 *(memory.text if memory.id in own_name else said.sub("The user", memory.text)
                   for memory in candidates)]
        vectors = embeddings.encode(texts)
    rows = replacement_rows(texts, vectors, candidates, message)
    return rows[:allowed], replacement.probabilities(rows)[:allowed]


def replacement_rows(texts: list[str], vectors: np.ndarray, candidates: list[Memory],
                     message: tuple[str, np.ndarray]) -> np.ndarray:
    """services.replacement's features of each candidate: `texts` and `vectors` hold the new memory's first,
    then the candidates' (as the model reads them); `message` is (words, vector) of what said the change."""
    from memoryapp.services.extract import classifier

    families = classifier.family_probabilities(texts, vectors)
    sources: dict[UUID, set] = {memory.id: set() for memory in candidates}
    links = MemorySource.objects.filter(memory_id__in=sources).values_list("memory_id", "episode_id")
    for memory_id, episode_id in links:
        sources[memory_id].add(episode_id)
    return replacement.features(
        new=replacement.Held(texts[0], vectors[0], frozenset()),
        message_text=message[0], message_vector=message[1],
        olds=[replacement.Held(text, vector, frozenset(sources[memory.id]))
              for text, vector, memory in zip(texts[1:], vectors[1:], candidates, strict=True)],
        new_families=families[0], old_families=families[1:],
    )


def _message(draft: MemoryDraft) -> tuple[str, np.ndarray]:
    """The words and the vector of the message that said the new memory (its own vector without one)."""
    if not draft.sources:
        return draft.text, np.asarray(draft.embedding, dtype=np.float32)
    stored = [episode.embedding for episode in draft.sources]
    if any(vector is None for vector in stored):
        stored = list(embeddings.encode([episode.content for episode in draft.sources]))
    vector = np.mean([np.asarray(vector, dtype=np.float32) for vector in stored], axis=0)
    return " ".join(episode.content for episode in draft.sources), vector / max(float(np.linalg.norm(vector)), 1e-12)


def replacement_candidates(memories: QuerySet, *vectors) -> list[Memory]:
    """The REPLACEMENT_CANDIDATES memories nearest to each vector (the new memory's, the message's), once each."""
    found: dict[UUID, Memory] = {}
    for vector in vectors:
        for memory in memories.annotate(distance=row_cosine_distance(vector)).order_by("distance")[
                :REPLACEMENT_CANDIDATES]:
            found.setdefault(memory.id, memory)
    return list(found.values())


RESTATEMENT_DISTANCE = 0.2  # cosine 0.8: "Ana's cousin lives in Oslo." beside "Ana's cousin Lars lives in Oslo."


PART_DISTANCE = 0.5  # cosine 0.5: "The user is single." is part of "The user is single, no time for romance."


def restatements(old: Memory, with_old: list[Memory], news: MemoryDraft) -> list[Memory]:
    """What was written beside `old` (`with_old`: written_beside) and says the same (the rules and the general
    path both wrote it from the same words): it ends with it. Either of the same subject and nearly
    the same meaning, or of any of the user's subjects and saying a part of the other in its words ("The
    user is married." beside "The user's husband Gary and the user have been married 15 years."), never
    another value beside it ("allergic to shellfish" beside "allergic to peanuts"), nor the name of a relative by
    birth beside another value ("The user's sister's name is Priya." beside "The user's sister Priya teaches
    maths."), nor the name of someone the `news` that ends `old` is about in the same role: "The user's boyfriend
    Dev is an accountant now." ends "The user's boyfriend Dev is a student.", never who the user's boyfriend is (a
    break-up is told of the user, so it still ends the partner's name)."""
    owner = _subject_owner(old.subject)
    still_named = news.subject if news.subject != owner and news.attribute not in NAME_SLOTS else None
    return [memory for memory in with_old
            if memory.distance <= PART_DISTANCE
            and (old.attribute == "name" or not _a_relatives_name(memory, owner))
            and not (memory.attribute in NAME_SLOTS and memory.subject == still_named)
            and ((memory.subject == old.subject and memory.distance <= RESTATEMENT_DISTANCE)
                 or _part_of_the_other(memory, old))]


# Words that say nothing of a value ("not" does: "is not single" is no part of "is single").
_NOT_CONTENT = (_VALUE_FILLER - {"not"}) | {"user", "user's", "is", "are", "was", "has", "have", "had", "their",
                                           "them", "they", "household", "household's",
                                           # "The user's girlfriend's name is Zoe." is part of "The user's
                                           # girlfriend Zoe is a teacher."
                                           "name", "named", "called"}


def _part_of_the_other(one: Memory, other: Memory) -> bool:
    """Whether every content word of one memory's text is in the other's (subjects' own words aside)."""
    names = _stems(one.subject) | _stems(other.subject)
    first, second = ({stem(w) for w in _VALUE_WORD.findall(m.text) if w.lower() not in _NOT_CONTENT} - names
                     for m in (one, other))
    return bool(first and second) and (first <= second or second <= first)


def written_beside(old: Memory, said_now: Sequence[UUID]) -> list[Memory]:
    """The owner's active memories, of any subject, written from one of `old`'s episodes and not from `said_now`
    (the statement replacing it: "moved from Lyon to Marseille"), each with its cosine `distance` to `old`: what
    companions, restatements and _said_alike choose from."""
    beside = _written_from_its_messages(old)
    if not beside:
        return []
    from_now = MemorySource.objects.filter(episode_id__in=said_now).values("memory_id")
    old_vector = Subquery(Memory.objects.filter(pk=old.pk).values("embedding"))  # `old` may not have loaded it
    return list(Memory.objects.filter(organization_id=old.organization_id, user_id=old.user_id,
                                      project_id=old.project_id, status=Memory.Status.ACTIVE, id__in=beside)
                .exclude(id__in=from_now)
                .annotate(distance=row_cosine_distance(old_vector)).defer(*VECTORS))


def _written_from_its_messages(old: Memory) -> set[UUID]:
    """The other memories, in any state, that share a source episode with `old`, in one light query. Most
    messages state one fact, so this is usually empty, and the queries that would look among them are not
    sent (nor built: Django's compiling of those queries cost extraction more than PostgreSQL's running them)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT DISTINCT beside.memory_id FROM {MemorySource._meta.db_table} AS own"
            f" JOIN {MemorySource._meta.db_table} AS beside ON beside.episode_id = own.episode_id"
            " WHERE own.memory_id = %s AND beside.memory_id <> %s", [old.pk, old.pk])
        return {row[0] for row in cursor.fetchall()}


def decision_apply(decision: Decision, *, candidate: Candidate, draft: MemoryDraft, actor: ActorRef) -> list[Operation]:
    target = decision.target
    if not decision.op:
        return []
    if candidate.relation == "negate" and decision.op in (Op.SUPERSEDE, Op.QUARANTINE):
        draft.value = negated(draft.value)  # what ends the old value is that it stopped being true
    if decision.op == Op.ADD and decision.until is not None:
        memory = memory_add_to_history(draft=draft, within=target, until=decision.until, actor=actor,
                                       reason=decision.reason)
        return [Operation(Op.ADD, memory.id, decision.reason)]
    if decision.op == Op.ADD:
        memory = memory_add(draft=draft, actor=actor, reason=decision.reason)
        return [Operation(Op.ADD, memory.id, decision.reason)]
    if decision.op == Op.QUARANTINE:
        # The judge held an untrusted candidate back from the user's fact: it waits for an admin.
        draft.status, draft.status_reason = Memory.Status.QUARANTINED, decision.reason
        memory = memory_add(draft=draft, actor=actor, reason=decision.reason, op=Op.QUARANTINE)
        return [Operation(Op.QUARANTINE, memory.id, decision.reason)]
    if decision.op == Op.NOOP:
        sources = draft.sources if decision.link_source else []
        memory_noop(memory=target, sources=sources, actor=actor, reason=decision.reason)
        return [Operation(Op.NOOP, target.id, decision.reason)]
    if decision.op == Op.UPDATE:
        memory_update(memory=target, draft=draft, actor=actor, reason=decision.reason)
        return [Operation(Op.UPDATE, target.id, decision.reason)]
    if decision.op == Op.SUPERSEDE:
        new = memory_supersede(old=target, draft=draft, actor=actor, reason=decision.reason)
        return [Operation(Op.SUPERSEDE, new.id, decision.reason)]
    assert decision.op == Op.INVALIDATE, f"unknown operation {decision.op!r}"
    was_history = target.status == Memory.Status.SUPERSEDED
    memory_invalidate(memory=target, actor=actor, reason=decision.reason)
    operations = [Operation(Op.INVALIDATE, target.id, decision.reason)]
    if decision.also_add:
        draft.valid_from = min(draft.valid_from or target.valid_from, target.valid_from)
        if was_history:  # a value of the past corrected: the right one takes its place in the timeline
            draft.status, draft.status_reason = Memory.Status.SUPERSEDED, target.status_reason
            draft.valid_to = target.valid_to
        memory = memory_add(draft=draft, actor=actor, reason=decision.reason,
                            supersedes=target.supersedes if was_history else None)
        if was_history:
            Memory.objects.filter(supersedes=target, status__in=[Memory.Status.ACTIVE, Memory.Status.SUPERSEDED]) \
                .update(supersedes=memory)
        operations.append(Operation(Op.ADD, memory.id, decision.reason))
    return operations
