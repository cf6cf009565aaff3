"""Judge: decide what a candidate does to the store. Meaning (subject, attribute, value)
decides; similarity only brings the candidates to look at."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime

from memoryapp import llm
from memoryapp.models import Memory, MemoryEvent
from memoryapp.services.extract.base import Candidate, says_one_more

logger = logging.getLogger(__name__)

Op = MemoryEvent.Op
# Above this cosine similarity an unstructured statement restates a memory it is compared with.
RESTATEMENT_SIMILARITY = 0.92
# Below it, an unstructured statement is about something else; between the two an LLM (when
# configured) reads both and decides.
RELATED_SIMILARITY = 0.6


# What the user said (or corrected) themselves: untrusted content never ends or changes it.
USER_PROVENANCE = frozenset({Memory.Provenance.USER_STATED, Memory.Provenance.USER_CORRECTED})
# Operations that end or rewrite their target.
OVERRIDING_OPS = frozenset({Op.UPDATE, Op.SUPERSEDE, Op.INVALIDATE})


@dataclass(frozen=True)
class Decision:
    op: str  # ADD, UPDATE, SUPERSEDE, INVALIDATE, NOOP, QUARANTINE, or "" for "nothing to do"
    target: Memory | None  # for QUARANTINE: the user's memory the candidate conflicts with
    reason: str
    also_add: bool = False  # INVALIDATE of a wrong fact followed by the corrected one
    link_source: bool = True  # NOOP: append the candidate's episodes to the target's sources
    # ADD into a slot's past: the value that follows the candidate in world time, whose start ends it;
    # `target`, if any, is the value it falls within, which now ends where the candidate begins.
    until: Memory | None = None


def normalize(value: str) -> str:
    return " ".join(value.lower().replace(",", " ").split())


def negated(value: str) -> str:
    """How a slot keeps a value said to have stopped being true ("I don't like olives": "not olives")."""
    return f"not {value}"


def value_parts(memory: Memory) -> set[str]:
    """An UPDATE joins complementary values with '; ' (vegetarian; eats eggs)."""
    return {normalize(part) for part in memory.value.split(";") if part.strip()}


def judge(
    candidate: Candidate,
    *,
    slot: list[Memory],
    similar: list[tuple[Memory, float]],
    session_recent: list[Memory],
    provenance: str,
    history: list[Memory] | None = None,
    session: str = "",
    said_at: datetime | None = None,
) -> Decision:
    """`slot`: active memories with the candidate's subject and attribute (newest last);
    `similar`: (memory, cosine) of the most similar active memories in scope;
    `session_recent`: active memories written from this session, newest last (for retractions);
    `provenance`: the candidate's provenance class (untrusted_source for web, tool and document content);
    `history`: the single-valued slot's superseded values still believed, by `valid_from` (needed
    when the candidate is dated before the current value: see needs_history);
    `session`: the session the candidate was said in;
    `said_at`: when the message it came from was said (its `valid_from` may be earlier: "two months ago")."""
    decision = _judge_meaning(
        candidate, slot=slot, similar=similar, session_recent=session_recent, history=history or [], session=session,
        said_at=said_at,
    )
    if provenance == Memory.Provenance.UNTRUSTED_SOURCE:
        return held_to_the_user(decision)
    return decision


def held_to_the_user(decision: Decision) -> Decision:
    """An untrusted candidate's decision, limited by what the user said: instead of ending or
    rewriting a user-stated or user-corrected memory it goes to the quarantine queue, where only
    an admin's explicit approval lets it through; restating one adds nothing to its sources (an
    untrusted episode must not keep the user's fact alive once the user's own source is deleted).
    Every judge (rules or LLM) passes through here, so no decision path can skip it."""
    target = decision.target
    if target is None or target.provenance not in USER_PROVENANCE:
        return decision
    if decision.op in OVERRIDING_OPS or decision.until is not None:  # cutting a user's value short overrides it
        # Names the slot, never the user's text: deleting that memory must not leave its words here.
        about = f"the {target.attribute} " if target.attribute else "a memory "
        return Decision(Op.QUARANTINE, target, f"untrusted content conflicts with {about}the user stated")
    if decision.op == Op.NOOP:
        return Decision(Op.NOOP, target, f"{decision.reason}; known from the user, untrusted source not linked",
                        link_source=False)
    return decision


def needs_history(candidate: Candidate, slot: list[Memory], said_at: datetime | None = None) -> bool:
    """Whether judging the candidate reads the slot's past: a value dated before the current one's start, in a
    message said before it too (`said_at`: the message's time; an old message imported late). One said since is
    the user's newer word whatever date its words give: "I moved to Berlin two months ago" or "I've lived in Berlin
    since January", a month after "I live in Munich" (a state told as over, "In 2019 I lived in Lisbon", fills no
    slot: services.extract.general.used_to)."""
    return (
        candidate.cardinality == "single"
        and candidate.relation in ("state", "change", "correct")
        and bool(slot)
        and candidate.valid_from < slot[-1].valid_from
        and (said_at is None or said_at <= slot[-1].valid_from)
    )


def _judge_meaning(
    candidate: Candidate,
    *,
    slot: list[Memory],
    similar: list[tuple[Memory, float]],
    session_recent: list[Memory],
    history: list[Memory],
    session: str,
    said_at: datetime | None,
) -> Decision:
    if candidate.relation == "retract":
        return _judge_retraction(candidate, session_recent)
    if not candidate.attribute:
        return _judge_unstructured(candidate, similar)
    value = normalize(candidate.value)
    same_value = [m for m in slot if _same_value(m, value)]

    # "I don't like olives" is kept as the value "not olives": saying so again adds nothing, and saying the
    # value holds again ends it.
    said_not = [m for m in slot if normalize(m.value) == normalize(negated(candidate.value))]
    if candidate.relation == "negate":
        if said_not:
            return Decision(Op.NOOP, said_not[-1], f"{candidate.attribute} already known not to hold; source appended")
        target = same_value[-1] if same_value else (slot[-1] if slot and candidate.cardinality == "single" else None)
        if target is None:
            return Decision("", None, f"nothing known about {candidate.attribute} to end")
        return Decision(Op.SUPERSEDE, target, f"{candidate.attribute} stopped being true")

    if candidate.cardinality == "multi":
        # The same plan on another day is another plan: "dentist appointment" on the 3rd and on the 14th.
        same_value = [m for m in same_value if m.valid_to == candidate.valid_to]
        if same_value:
            return Decision(Op.NOOP, same_value[-1], f"{candidate.attribute} already known; source appended")
        if candidate.relation == "correct" and slot:
            return Decision(Op.INVALIDATE, slot[-1], f"{candidate.attribute} corrected by the user", also_add=True)
        if said_not and candidate.relation in ("state", "change", "refine"):
            return Decision(Op.SUPERSEDE, said_not[-1], f"{candidate.attribute} holds again")
        if (candidate.relation == "change" and slot and candidate.valid_from > slot[-1].valid_from
                and not says_one_more(candidate.text)):
            # "I switched to Italian": extractors mark a change in a many-valued slot only when the
            # words say a value was replaced (services.extract.general), so the latest one ends; "I've also
            # started Quran classes" joins the others.
            return Decision(Op.SUPERSEDE, slot[-1], f"{candidate.attribute} replaced")
        return Decision(Op.ADD, None, f"new {candidate.attribute}")

    current = slot[-1] if slot else None
    if current is None:
        return Decision(Op.ADD, None, f"first value for {candidate.attribute}")
    if same_value and (candidate.valid_from >= current.valid_from or candidate.relation not in ("state", "change")):
        return Decision(Op.NOOP, current, f"{candidate.attribute} already known; source appended")
    if candidate.relation == "correct" and session and current.session == session:
        # "Actually, Porto, not Braga": the user corrects what they said in this session, whatever its date.
        return Decision(Op.INVALIDATE, current, f"{candidate.attribute} corrected", also_add=True)
    if needs_history(candidate, slot, said_at):
        return _judge_past(candidate, value, current=current, history=history)
    if candidate.relation == "refine":
        return Decision(Op.UPDATE, current, f"{candidate.attribute} complemented")
    same_moment = candidate.valid_from == current.valid_from
    if candidate.relation == "correct" or (same_moment and candidate.relation != "change"):
        # Two values for the same moment: the later word is the user's correction, unless its words say the value
        # changed ("moved to Seville last month", a month after "I live in Madrid", ends Madrid, never unsays it).
        return Decision(Op.INVALIDATE, current, f"{candidate.attribute} corrected", also_add=True)
    return Decision(Op.SUPERSEDE, current, f"{candidate.attribute} changed")


def _same_value(memory: Memory, value: str) -> bool:
    return value in value_parts(memory) or normalize(memory.value) == value


def _judge_past(candidate: Candidate, value: str, *, current: Memory, history: list[Memory]) -> Decision:
    """A single value dated before the current one began (an old message imported, "in 2019 I lived in
    Lisbon") says what held then, not that the current value is wrong: it joins the slot's history, so
    that statements imported in any order give the same timeline. Only a correction in the session of
    the value it corrects (judged before this) ends a newer value."""
    timeline = sorted([*history, current], key=lambda m: m.valid_from)
    at = candidate.valid_from
    within = next((m for m in reversed(timeline) if m.valid_from <= at and (m.valid_to is None or at < m.valid_to)),
                  None)
    following = next(m for m in timeline if m.valid_from > at)  # the current value at least
    attribute = candidate.attribute
    if within is not None and _same_value(within, value):
        return Decision(Op.NOOP, within, f"{attribute} already known for that time; source appended")
    if within is not None and (candidate.relation == "correct" or within.valid_from == at):
        return Decision(Op.INVALIDATE, within, f"{attribute} at that time corrected", also_add=True)
    return Decision(Op.ADD, within, f"earlier {attribute}, kept as history", until=following)


def _judge_retraction(candidate: Candidate, session_recent: list[Memory]) -> Decision:
    matching = [m for m in session_recent if not candidate.attribute or m.attribute == candidate.attribute]
    if not matching:
        return Decision("", None, "nothing said earlier in this session to retract")
    return Decision(Op.INVALIDATE, matching[-1], "retracted by the user later in the session")


def _judge_unstructured(candidate: Candidate, similar: list[tuple[Memory, float]]) -> Decision:
    best = max(similar, key=lambda pair: pair[1], default=None)
    if best and best[1] >= RESTATEMENT_SIMILARITY and not _news_beside(candidate, best[0], best[1]):
        return Decision(Op.NOOP, best[0], f"restates a known memory (cosine {best[1]:.2f})")
    related = [memory for memory, cosine in similar if cosine >= RELATED_SIMILARITY]
    if related and llm.is_configured():
        try:
            return _judge_with_llm(candidate, related)
        except llm.LLMError as exc:
            logger.warning("LLM judge unavailable, adding the memory: %s", exc)
    return Decision(Op.ADD, None, "nothing similar known")


def _news_beside(candidate: Candidate, memory: Memory, similarity: float) -> bool:
    """Whether a change below NEWS_SIMILARITY says a word of content the memory it is nearest to does not: "The
    user's niece Ava finished primary school." is news beside "The user's niece Ava is in her last year of primary
    school." (cosine 0.93); "The user is not allergic to peanuts anymore." is none beside "The user is no longer
    allergic to peanuts." (0.98)."""
    if similarity >= NEWS_SIMILARITY or not (candidate.relation == "change" or candidate.says_change):
        return False
    said = set(_WORD.findall(memory.text.lower()))
    return any(word not in said and word not in _SAYS_NOTHING_NEW for word in _WORD.findall(candidate.text.lower()))


NEWS_SIMILARITY = 0.97
_WORD = re.compile(r"[\w']+")
# the words of saying a change or a negation, which a restatement of an ended value says in its own way
_SAYS_NOTHING_NEW = frozenset("not no longer anymore now just finally these days nowadays any more never n't the a an"
                              " is are was were has have had been".split())


LLM_JUDGE_PROMPT = """You maintain a user's long-term memory. A new statement arrived. Compare it with the
numbered existing memories and choose one operation:
ADD (new information), UPDATE (complements one memory: both stay true together),
SUPERSEDE (the world changed: the old memory was true until now), INVALIDATE (the old memory was wrong),
NOOP (already known). Decide by meaning: a statement about someone else never changes the user's memories.
Answer {"op": "...", "target": <number of the existing memory or null>, "reason": "<short reason>"}."""


def _judge_with_llm(candidate: Candidate, related: list[Memory]) -> Decision:
    listing = "\n".join(f"{i}. {m.text}" for i, m in enumerate(related, start=1))
    reply = llm.chat_json(
        [
            {"role": "system", "content": LLM_JUDGE_PROMPT},
            {"role": "user", "content": f"New statement: {candidate.text}\nExisting memories:\n{listing}"},
        ]
    )
    op = str(reply.get("op", "")).upper() if isinstance(reply, dict) else ""
    target = reply.get("target") if isinstance(reply, dict) else None
    reason = str(reply.get("reason", ""))[:200] if isinstance(reply, dict) else ""
    if op == Op.ADD:
        return Decision(Op.ADD, None, f"LLM judge: {reason or 'new information'}")
    valid_target = isinstance(target, int) and not isinstance(target, bool) and 1 <= target <= len(related)
    if op not in {Op.UPDATE, Op.SUPERSEDE, Op.INVALIDATE, Op.NOOP} or not valid_target:
        raise llm.LLMError(f"the judge answered an unusable decision: {reply!r}"[:300])
    return Decision(op, related[target - 1], f"LLM judge: {reason or op.lower()}", also_add=op == Op.INVALIDATE)
