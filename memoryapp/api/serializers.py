"""Request validation (explicit fields, unknown ones refused) and response shapes."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import ProhibitNullCharactersValidator
from rest_framework import serializers

from memoryapp.models import Episode, Memory
from memoryapp.services.purge import purge_status
from memoryapp.timebounds import check_in_span

ROLE_TO_SOURCE = {"user": "user", "assistant": "assistant", "tool": "tool", "system": "system"}
EXCERPT_CHARS = 200


def check_text(value: str) -> str:
    if "\x00" in value:
        raise serializers.ValidationError("null bytes are not allowed")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise serializers.ValidationError("invalid Unicode (a lone surrogate)") from exc
    return value


def check_json_strings(value):
    """Metadata is free JSON, but every string in it must be storable text."""
    if isinstance(value, str):
        check_text(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(str(key))
            check_json_strings(item)
    elif isinstance(value, list):
        for item in value:
            check_json_strings(item)
    return value


class StrictSerializer(serializers.Serializer):
    """A JSON body taken as written: unknown fields are an error, not silently ignored (a typo must not
    change behaviour), and a text or true/false field refuses other JSON types (5 is not the user "5",
    "yes" is not true)."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["expected a JSON object"]})
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["unknown field"] for name in unknown})
        mistyped = {name: [error] for name, field in self.fields.items()
                    if data.get(name) is not None and (error := _json_type_error(field, data[name]))}
        if mistyped:
            raise serializers.ValidationError(mistyped)
        return super().to_internal_value(data)


class Text(serializers.CharField):
    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", True)
        super().__init__(**kwargs)
        # check_text refuses null bytes itself (and in metadata too): one message, not DRF's as well
        self.validators = [v for v in self.validators if not isinstance(v, ProhibitNullCharactersValidator)]
        self.validators.append(check_text)


class AwareDateTime(serializers.DateTimeField):
    """ISO 8601 with a zone; a naive time is ambiguous, so it is refused. Only dates the service can
    compute with (memoryapp.timebounds): 9999-12-31 parses, but a month after it does not exist."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.validators.append(check_in_span)

    def to_internal_value(self, value):
        parsed = super().to_internal_value(value)  # not a date and time at all: DRF's message with the format
        if isinstance(value, str) and not _has_zone(value.strip()):
            raise serializers.ValidationError("give a time zone, e.g. 2025-03-10T12:00:00Z or +02:00")
        return parsed


def _json_type_error(field: serializers.Field, value) -> str:
    """What is wrong with a JSON value of the wrong type for a text or true/false field ("" if nothing)."""
    if isinstance(field, serializers.BooleanField) and not isinstance(value, bool):
        return "expected true or false"
    if isinstance(field, serializers.CharField | serializers.ChoiceField) and not isinstance(value, str):
        return "expected a string"
    return ""


def _has_zone(text: str) -> bool:
    return text.endswith(("Z", "z")) or (len(text) > 10 and ("+" in text[10:] or "-" in text[10:]))


class MessageIn(StrictSerializer):
    role = serializers.ChoiceField(choices=list(ROLE_TO_SOURCE), required=False,
                                   help_text="Who spoke, chat style; give this or `source`.")
    source = serializers.ChoiceField(
        choices=Episode.Source.values, required=False,
        help_text="Where it came from; tool, web and document content is untrusted (an instruction in it is "
                  "quarantined).",
    )
    content = Text(max_length=None, help_text="The message text (secrets are redacted before storing).")
    occurred_at = AwareDateTime(required=False, help_text="When it was said, with a zone; default now.")
    metadata = serializers.JSONField(required=False, validators=[check_json_strings],
                                     help_text="A free JSON object kept with the episode.")

    def validate_metadata(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("metadata must be a JSON object")
        return value

    def validate(self, attrs):
        if "role" not in attrs and "source" not in attrs:
            raise serializers.ValidationError({"role": ["give role (user, assistant, tool, system) or source"]})
        attrs["source"] = attrs.get("source") or ROLE_TO_SOURCE[attrs.pop("role")]
        attrs.pop("role", None)
        return attrs


class UserField(Text):
    def __init__(self, **kwargs):
        super().__init__(max_length=150, **kwargs)


class EpisodesIngestIn(StrictSerializer):
    user = UserField(help_text="The user's external id (your own identifier for the person, e.g. `sam`).")
    session = Text(max_length=200, required=False, allow_blank=True, default="",
                   help_text="The conversation these belong to (free text; \"\" for none).")
    project = Text(max_length=120, required=False, allow_blank=True, default="",
                   help_text="The project's name (\"\" for none); an unrestricted key creates it on first use.")
    messages = serializers.ListField(child=MessageIn(), min_length=1,
                                     help_text="The messages, oldest first (at most MEMORY_MAX_MESSAGES_PER_REQUEST).")
    wait = serializers.BooleanField(
        required=False, default=False,
        help_text="true: extract within the request and answer 201 with the operations; false: answer 202 with a job.",
    )

    def validate_messages(self, value):
        limit = settings.MEMORY_MAX_MESSAGES_PER_REQUEST
        if len(value) > limit:
            raise serializers.ValidationError(f"at most {limit} messages per request")
        return value


class Weights(StrictSerializer):
    """Only the weights given: the others stay at the search's defaults (selectors.ranking.default_weights)."""

    relevance = serializers.FloatField(min_value=0, max_value=10, required=False,
                                       help_text="Weight of relevance (meaning) in `score`. Default 1.")
    recency = serializers.FloatField(min_value=0, max_value=10, required=False,
                                     help_text="Weight of recency since the last access. Default: memories "
                                               "SEARCH_WEIGHTS (0.5), episodes 0.")
    importance = serializers.FloatField(min_value=0, max_value=10, required=False,
                                        help_text="Weight of importance. Default: memories SEARCH_WEIGHTS (0.5), "
                                                  "episodes 0.")


class SearchIn(StrictSerializer):
    user = UserField(help_text="The user's external id (your own identifier for the person, e.g. `sam`).")
    query = Text(max_length=2000, help_text="The question, in words (e.g. \"Where does Sam live?\").")
    k = serializers.IntegerField(min_value=1, max_value=50, required=False, default=5,
                                 help_text="At most this many results.")
    session = Text(max_length=200, required=False, allow_blank=True, default="",
                   help_text="The current session: its session-scope memories are searched too (\"\": none).")
    project = Text(max_length=120, required=False, allow_blank=True, default="",
                   help_text="Only this project's project-scope memories (\"\": every project the user is in).")
    scopes = serializers.ListField(child=serializers.ChoiceField(choices=Memory.Scope.values), required=False,
                                   min_length=1, help_text="The scopes to search; default all four.")
    as_of = AwareDateTime(required=False, help_text="World time: what was true then (`valid_from <= as_of < "
                                                    "valid_to`); default now. With a zone.")
    known_at = AwareDateTime(required=False, help_text="Belief time: what the store believed then (`recorded_at <= "
                                                       "known_at < expired_at`); default now. With a zone.")
    min_score = serializers.FloatField(
        min_value=-1, max_value=2, required=False,
        help_text="The least `score` a result may have; nothing above it: abstained. Same scale as `score`: the "
                  "relevance, a cosine (-1..1) between the question and the memory, both with the user's names "
                  "replaced by 'you', plus 0.6 times the likelihood (0..1, `components.kind`) that the memory is "
                  "of the kind of fact the question asks about, plus 0.2 times (the share of the question's own "
                  "words the memory has, `components.words`, 0..1, less 0.1), less 1 for a memory about another "
                  "of the user's people than the question names (`components.someone_else`), less 0.1 for a "
                  "memory of a name when the question does not ask who (`components.name_only`), plus at most 0.03 of "
                  "recency and importance at the default weights. Default SEARCH_MIN_RELEVANCE (0.38).",
    )
    mmr_lambda = serializers.FloatField(
        min_value=0, max_value=1, required=False,
        help_text="Diversification (1: none). It chooses which results come back, never their order: results "
                  "are in `score` order (episodes: in `components.fused` order, see `ordered_by`).",
    )
    weights = Weights(
        required=False,
        help_text="score = relevance * weights.relevance + 0.03 * (recency * weights.recency + importance * "
                  "weights.importance), recency and importance scaled 0..1 over the candidates: at the default "
                  "(1, 0.5, 0.5) they only break near-ties of relevance.",
    )
    explain = serializers.BooleanField(
        required=False, default=False,
        help_text="Every component (cosine, fused rank value, ranks in both legs, scaled values) and "
                  "`searched_as`, the question as searched (first person rewritten to the user's name).",
    )


class ContextIn(SearchIn):
    k = serializers.IntegerField(min_value=1, max_value=50, required=False, default=20,
                                 help_text="At most this many memories are considered for the block.")
    budget_tokens = serializers.IntegerField(min_value=50, max_value=32000, required=False, default=1000,
                                             help_text="The block's size limit, in tokens.")


class MemoryCreateIn(StrictSerializer):
    user = UserField(help_text="The user's external id (your own identifier for the person, e.g. `sam`).")
    text = Text(max_length=2000, help_text="The statement, self-contained (e.g. \"Sam lives in Porto.\").")
    scope = serializers.ChoiceField(
        choices=Memory.Scope.values, required=False, default="user",
        help_text="session (needs `session`), user, project (needs `project`) or org (unrestricted keys only).",
    )
    session = Text(max_length=200, required=False, allow_blank=True, default="",
                   help_text="The session (required for scope session).")
    project = Text(max_length=120, required=False, allow_blank=True, default="",
                   help_text="The project's name (required for scope project).")
    kind = serializers.ChoiceField(choices=[Memory.Kind.SEMANTIC, Memory.Kind.PROCEDURAL], required=False,
                                   default="semantic",
                                   help_text="semantic (a fact) or procedural (how the user wants things done).")
    importance = serializers.IntegerField(min_value=1, max_value=10, required=False, default=5,
                                          help_text="1 (trivia) to 10 (vital).")
    valid_from = AwareDateTime(required=False, help_text="When it became true in the world; default now.")
    subject = Text(max_length=200, required=False, allow_blank=True, default="",
                   help_text="The triple's subject; default the user.")
    attribute = Text(max_length=100, required=False, allow_blank=True, default="",
                     help_text="The triple's attribute (e.g. `city`): a new value of a single-valued one supersedes.")
    value = Text(max_length=500, required=False, allow_blank=True, default="",
                 help_text="The triple's value (required with `attribute`).")

    def validate(self, attrs):
        if attrs["scope"] == "session" and not attrs["session"]:
            raise serializers.ValidationError({"session": ["a session-scope memory needs a session"]})
        if attrs["scope"] == "project" and not attrs["project"]:
            raise serializers.ValidationError({"project": ["a project-scope memory needs a project"]})
        if attrs["attribute"] and not attrs["value"]:
            raise serializers.ValidationError({"value": ["an attribute needs a value"]})
        return attrs


class MemoryCorrectIn(StrictSerializer):
    text = Text(max_length=2000, required=False, help_text="The corrected statement.")
    value = Text(max_length=500, required=False, help_text="The corrected value of the triple.")
    importance = serializers.IntegerField(min_value=1, max_value=10, required=False, help_text="1 to 10.")
    valid_from = AwareDateTime(required=False, help_text="When the corrected fact became true; with a zone.")

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError({"text": ["give the corrected text or fields to change"]})
        return attrs


# --- responses ---------------------------------------------------------------------------------


def iso(value) -> str | None:
    return value.isoformat() if value else None


def excerpt(text: str) -> str:
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def memory_json(memory: Memory, *, detail: bool = False) -> dict:
    body = {
        "id": str(memory.id),
        "text": memory.text,
        "kind": memory.kind,
        "scope": memory.scope,
        "user": memory.user.external_id if memory.user_id else None,
        "session": memory.session or None,
        "project": memory.project.name if memory.project_id else None,
        "status": memory.status,
        "status_reason": memory.status_reason,
        "needs_review": memory.needs_review,
        "subject": memory.subject,
        "attribute": memory.attribute,
        "value": memory.value,
        "importance": memory.importance,
        "confidence": memory.confidence,
        "provenance": memory.provenance,
        "valid_from": iso(memory.valid_from),
        "valid_to": iso(memory.valid_to),
        "recorded_at": iso(memory.recorded_at),
        "expired_at": iso(memory.expired_at),
        "last_accessed_at": iso(memory.last_accessed_at),
        "access_count": memory.access_count,
        "strength": memory.strength,
        "supersedes": str(memory.supersedes_id) if memory.supersedes_id else None,
        "sources": [
            {"episode": str(e.id), "source": e.source, "occurred_at": iso(e.occurred_at), "excerpt": excerpt(e.content)}
            for e in memory.sources.all()
        ],
        "derived_from": [str(pk) for pk in memory.derived_from.values_list("id", flat=True)],
    }
    if detail:
        body["derivatives"] = [str(pk) for pk in memory.derivatives.values_list("id", flat=True)]
    return body


def episode_json(episode: Episode) -> dict:
    return {
        "id": str(episode.id),
        "user": episode.user.external_id,
        "session": episode.session or None,
        "project": episode.project.name if episode.project_id else None,
        "source": episode.source,
        "trust": episode.trust,
        "content": episode.content,
        "occurred_at": iso(episode.occurred_at),
        "received_at": iso(episode.received_at),
        "metadata": episode.metadata,
        "extraction": episode.extraction,
        "memories": [str(pk) for pk in episode.memories.values_list("id", flat=True)],
    }


def event_json(event) -> dict:
    return {
        "id": str(event.id), "op": event.op, "memory_id": str(event.memory_id) if event.memory_id else None,
        "episode_id": str(event.episode_id) if event.episode_id else None, "actor_type": event.actor_type,
        "actor_id": event.actor_id, "reason": event.reason, "data": event.data, "at": iso(event.created_at),
    }


def receipt_json(receipt) -> dict:
    return {
        "receipt_id": str(receipt.id), "target": receipt.target, "deleted": receipt.deleted,
        "recomputed": receipt.recomputed, "at": iso(receipt.at),
        "purged_at": iso(receipt.purged_at), "purge": purge_status(receipt),
    }


def job_json(job) -> dict:
    return {
        "id": str(job.id), "kind": job.kind, "status": job.status, "progress": job.progress,
        "progress_message": job.progress_message, "result": job.result, "error": job.error or None,
        "attempts": job.attempts, "created_at": iso(job.created_at), "started_at": iso(job.started_at),
        "finished_at": iso(job.finished_at),
    }
