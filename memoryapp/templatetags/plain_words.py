"""Plain words for the dashboard's labels (issue 21): an end user reads what changed ("replaced",
"already known"), not the operation's code name; the exact code stays in the chip's tooltip and,
for admins, beside it. Filters, not model labels, so the choices and migrations stay as they are."""

from __future__ import annotations

from django import template

register = template.Library()

OP_WORDS = {
    "ADD": "added",
    "UPDATE": "added to",
    "SUPERSEDE": "replaced",
    "INVALIDATE": "no longer true",
    "NOOP": "already known",
    "ARCHIVE": "archived",
    "RESTORE": "restored",
    "QUARANTINE": "held back",
    "APPROVE": "approved",
    "REJECT": "rejected",
    "DELETE": "deleted",
    "REDACT": "text removed",
    "MERGE": "merged",
    "SUMMARIZE": "summarized",
    "CORRECT": "corrected",
}

KIND_WORDS = {"semantic": "Fact", "procedural": "Instruction", "reflection": "Reflection", "summary": "Summary"}


@register.filter
def op_words(op: str) -> str:
    """An event's operation in plain words; an unknown code shows as itself, lower-cased."""
    return OP_WORDS.get(str(op), str(op).lower())


@register.filter
def kind_words(kind: str) -> str:
    """A memory's kind as an end user would say it: a fact, an instruction, a summary."""
    return KIND_WORDS.get(str(kind), str(kind).capitalize())
