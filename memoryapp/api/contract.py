"""What the OpenAPI document says about each operation: summary, description, parameters, answers by
status (memoryapp.api.responses) and examples. Each view method wears one of these decorators, so that
views.py keeps to the request and the document reads as one text here.

The examples are checked against the documented shapes by tests/api/test_contract.py, as real answers are.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)

from memoryapp.api import responses as r
from memoryapp.api import serializers as s
from memoryapp.models import Memory

# --- errors ------------------------------------------------------------------------------------

ERRORS = {
    400: ("invalid input: `fields` names each bad field (code `invalid`), or a body that is not JSON "
          "(`malformed_json`)",
          {"code": "invalid", "message": "the request is invalid: k: Ensure this value is less than or equal to 50.",
           "fields": {"k": ["Ensure this value is less than or equal to 50."]}}),
    401: ("no agent key, or an unknown or revoked one",
          {"code": "authentication_failed", "message": "unknown or revoked agent key", "fields": {}}),
    403: ("the key lacks the permission (`read`, `write`, `delete`), the agent is disabled, or the user blocked it",
          {"code": "permission_denied", "message": "this agent key lacks the permission for this request",
           "fields": {}}),
    404: ("no such object for this caller: another organization's objects do not exist here",
          {"code": "not_found", "message": "no user 'sam'", "fields": {}}),
    409: ("the request conflicts with the state: an Idempotency-Key reused with other messages, or a memory that "
          "can no longer be corrected",
          {"code": "conflict", "message": "only an active memory can be corrected; this one is superseded",
           "fields": {}}),
    413: ("the request body is too large",
          {"code": "too_large", "message": "the request body is larger than 1048576 bytes", "fields": {}}),
    415: ("the body is not `application/json`",
          {"code": "unsupported_media_type", "message": "Unsupported media type \"text/plain\" in request.",
           "fields": {}}),
    429: ("too many requests for this key: retry after the `Retry-After` header's seconds",
          {"code": "too_many_requests", "message": "too many requests: retry in 12 s", "fields": {}}),
    500: ("an unexpected fault; nothing was half-written. Quote `reference` when reporting it",
          {"code": "internal_error", "message": "an unexpected error occurred; quote reference 3f9a1c0b7d2e when "
                                                "reporting it", "fields": {}, "reference": "3f9a1c0b7d2e"}),
    503: ("the database or the broker is unreachable: retry after the `Retry-After` header's seconds",
          {"code": "unavailable", "message": "the database is unavailable; retry in 10 s", "fields": {}}),
}
# Any operation can meet these: a key is checked, counted and may be refused; the servers may be down.
ALWAYS = (401, 403, 404, 429, 500, 503)
WITH_BODY = (400, 413, 415)  # a JSON body is parsed and validated


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    return {
        status: OpenApiResponse(r.Error, description=ERRORS[status][0], examples=[
            OpenApiExample(ERRORS[status][1]["code"], value={"error": ERRORS[status][1]}, status_codes=[status]),
        ])
        for status in sorted({*ALWAYS, *statuses})
    }


def answer(serializer, description: str, *examples: tuple[str, dict], status: int = 200) -> OpenApiResponse:
    return OpenApiResponse(serializer, description=description, examples=[
        OpenApiExample(name, value=value, status_codes=[status], response_only=True) for name, value in examples
    ])


def request_example(name: str, value: dict) -> OpenApiExample:
    return OpenApiExample(name, value=value, request_only=True)


# --- example values ----------------------------------------------------------------------------

EPISODE_1 = "0f8c2a4e-5b1d-4c3e-9a7f-2d6b8e1c4a90"
EPISODE_2 = "4b7e9d12-8c3a-4f5e-b6d1-7a2c9e0f3b58"
MEMORY_1 = "9a1d3f5b-2c4e-4a6b-8d0f-1e3a5c7b9d2f"
MEMORY_2 = "2e4a6c8e-0b2d-4f6a-9c1e-3b5d7f9a1c3e"
JOB_1 = "c3e5a7b9-1d2f-4e6a-8b0c-2d4f6a8c0e1b"
RECEIPT_1 = "7d9f1b3e-5a7c-4e9b-a1d3-5f7b9d1e3a6c"
EVENT_1 = "5c7e9a1b-3d5f-4b7d-8e0a-4c6e8a0b2d4f"

MEMORY_EXAMPLE = {
    "id": MEMORY_1, "text": "Sam lives in Porto.", "kind": "semantic", "scope": "user", "user": "sam",
    "session": None, "project": None, "status": "active", "status_reason": "", "needs_review": False,
    "subject": "sam", "attribute": "city", "value": "Porto", "importance": 6, "confidence": 0.9,
    "provenance": "user_stated", "valid_from": "2025-03-10T12:00:00+00:00", "valid_to": None,
    "recorded_at": "2025-03-10T12:00:01.204113+00:00", "expired_at": None,
    "last_accessed_at": "2025-03-12T08:30:00+00:00", "access_count": 2, "strength": 1.4, "supersedes": None,
    "sources": [{"episode": EPISODE_1, "source": "user", "occurred_at": "2025-03-10T12:00:00+00:00",
                 "excerpt": "I'm vegetarian and I live in Porto."}],
    "derived_from": [],
}
EPISODE_EXAMPLE = {
    "id": EPISODE_1, "user": "sam", "session": "s1", "project": None, "source": "user", "trust": "trusted",
    "content": "I'm vegetarian and I live in Porto.", "occurred_at": "2025-03-10T12:00:00+00:00",
    "received_at": "2025-03-10T12:00:01.198220+00:00", "metadata": {"channel": "chat"}, "extraction": "done",
    "memories": [MEMORY_1, MEMORY_2],
}
EVENT_EXAMPLE = {
    "id": EVENT_1, "op": "ADD", "memory_id": MEMORY_1, "episode_id": EPISODE_1, "actor_type": "job",
    "actor_id": "extraction", "reason": "new fact", "data": {}, "at": "2025-03-10T12:00:01.204113+00:00",
}
OPERATIONS_EXAMPLE = [
    {"op": "ADD", "memory_id": MEMORY_2, "reason": "new fact"},
    {"op": "ADD", "memory_id": MEMORY_1, "reason": "new fact"},
]
BRIEF = {"relevance": 0.71, "recency": 0.98, "importance": 6}
EXPLAINED = {**BRIEF, "cosine": 0.5, "kind": 0.35, "words": 0.1, "fused": 0.032787, "dense_rank": 1,
             "lexical_rank": 1, "scaled": {"relevance": 0.71, "recency": 1.0, "importance": 1.0}}
DELETED = {"memories": {"count": 1, "ids": [MEMORY_1]}, "episodes": {"count": 0, "ids": []}}
PREVIEW_EXAMPLE = {"preview": True, "target": "memory", "deleted": DELETED, "recomputed": [], "sources_unlinked": 0,
                   "sources_kept": {"count": 1, "ids": [EPISODE_1]}}
RECEIPT_EXAMPLE = {"receipt_id": RECEIPT_1, "target": "memory", "deleted": DELETED, "recomputed": [],
                   "at": "2025-03-12T09:00:00+00:00", "purged_at": None,
                   "purge": "purge pending (runs within 5 minutes)"}
SEARCH_BODY = {"user": "sam", "query": "Where does Sam live?", "k": 5}


# --- shared parameters -------------------------------------------------------------------------


def path_id(name: str, what: str) -> OpenApiParameter:
    return OpenApiParameter(name, OpenApiTypes.UUID, OpenApiParameter.PATH, description=f"The {what}'s id.")


USER_PATH = OpenApiParameter("user", str, OpenApiParameter.PATH, description="The user's external id, e.g. `sam`.")
PREVIEW = OpenApiParameter(
    "preview", bool,
    description="true (also 1, yes, on): what would be deleted and recomputed; nothing is. false (0, no, off) or "
                "absent: delete. Anything else is refused with 400.",
)
WITH_SOURCES = OpenApiParameter(
    "with_sources", bool,
    description="true (also 1, yes, on): also delete the messages (episodes) the memory and its versions came "
                "from, with what else only they support, as DELETE /episodes/{id} would; afterwards episode "
                "search cannot return them. The preview then lists them under `deleted.episodes` and the other "
                "memories they take or rebuild. false (0, no, off) or absent: the messages stay, listed in "
                "`sources_kept`. Messages of other users always stay. Anything else is refused with 400.",
)
IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key", str, location=OpenApiParameter.HEADER, required=False,
    description="Any string up to 200 characters, new for each request. A retry with the same key for the same "
                "user stores nothing again and answers 200 with the episode ids the first request stored "
                "(`replayed: true`); the same key with other messages answers 409.",
)
LIST_USER = OpenApiParameter("user", str, description="Only this user's (external id); absent: every user the key "
                                                      "may see.")
LIST_SESSION = OpenApiParameter("session", str, description="Only this session's.")


def choice(name: str, choices, description: str) -> OpenApiParameter:
    return OpenApiParameter(name, str, enum=list(choices), description=description)


DELETION = PolymorphicProxySerializer(
    component_name="DeletionAnswer", serializers=[r.DeletionReceipt, r.DeletionPreview],
    resource_type_field_name=None,
)


def deletion(summary: str, description: str, *, parameters=()):
    return extend_schema(
        summary=summary,
        description=description + " Needs the `delete` permission. `?preview=true` first shows what would go "
                                  "and what would be recomputed; without it the answer is the receipt: ids and "
                                  "counts, never text. The deleted text is then nowhere in the database.",
        parameters=[PREVIEW, *parameters],
        responses={200: answer(DELETION, "The receipt, or with `?preview=true` the preview.",
                               ("receipt", RECEIPT_EXAMPLE), ("preview", PREVIEW_EXAMPLE)),
                   **errors(400)},
    )


# --- episodes ----------------------------------------------------------------------------------

episodes_ingest = extend_schema(
    summary="Store messages and extract memories from them",
    description=(
        "Stores each message as an episode (secrets redacted, untrusted sources marked) and extracts memories "
        "from them: by default in a background job (202, follow it at GET /api/v1/jobs/{id}); with "
        "`wait: true` within the request (201, with what the judge did). The episodes commit together with "
        "their extraction or their job, or not at all. Needs the `write` permission."
    ),
    parameters=[IDEMPOTENCY_KEY],
    request=s.EpisodesIngestIn,
    examples=[
        request_example("two messages", {"user": "sam", "session": "s1", "messages": [
            {"role": "user", "content": "I'm vegetarian and I live in Porto.", "occurred_at": "2025-03-10T12:00:00Z",
             "metadata": {"channel": "chat"}},
            {"role": "assistant", "content": "Noted!"},
        ]}),
        request_example("extract now", {"user": "sam", "wait": True, "messages": [
            {"role": "user", "content": "I moved to Lisbon last week."}]}),
    ],
    responses={
        202: answer(r.EpisodesQueued, "Stored; extraction queued as a job.",
                    ("queued", {"episodes": [EPISODE_1, EPISODE_2], "job": JOB_1}), status=202),
        201: answer(r.EpisodesExtracted, "Stored and extracted (`wait: true`).",
                    ("extracted", {"episodes": [EPISODE_1], "job": None, "operations": OPERATIONS_EXAMPLE}),
                    status=201),
        200: answer(r.EpisodesIngestAnswer, "A retry of an Idempotency-Key, or memory writing is paused: nothing "
                                            "was stored.",
                    ("replayed", {"episodes": [EPISODE_1, EPISODE_2], "job": JOB_1, "replayed": True}),
                    ("paused", {"episodes": [], "job": None, "paused": True,
                                "message": "memory writing is paused for sam; nothing was stored"})),
        **errors(*WITH_BODY, 409),
    },
)

episodes_list = extend_schema(
    operation_id="episodes_list",
    summary="List episodes",
    description="The messages the key may see, newest first, a page at a time (follow `next`). Needs `read`.",
    parameters=[LIST_USER, LIST_SESSION],
    responses={200: answer(r.EpisodePage, "One page of episodes.",
                           ("a page", {"next": None, "previous": None, "results": [EPISODE_EXAMPLE]})),
               **errors(400)},
)

episodes_search = extend_schema(
    summary="Search the raw messages",
    description=(
        "Searches the episodes (the archive) rather than the memories, for questions no extracted fact answers. "
        "Same request as POST /api/v1/search; results are in fused-rank order (`ordered_by: fused`). Needs `read`."
    ),
    request=s.SearchIn,
    examples=[request_example("a question", {"user": "sam", "query": "What did Sam say about Porto?"})],
    responses={200: answer(r.EpisodeSearchResults, "The episodes found, best first.",
                           ("found", {"results": [{"episode": EPISODE_EXAMPLE, "score": 0.64, "components": BRIEF}],
                                      "abstained": False, "took_ms": 18.4, "ordered_by": "fused"})),
               **errors(*WITH_BODY)},
)

episode_read = extend_schema(
    summary="Read an episode",
    description="One message as stored, with the ids of the memories derived from it. Needs `read`.",
    parameters=[path_id("episode_id", "episode")],
    responses={200: answer(r.Episode, "The episode.", ("an episode", EPISODE_EXAMPLE)), **errors()},
)

episode_delete = deletion(
    "Delete an episode (or preview)",
    "Deletes the message, the memories only it supports, and rebuilds those it helped write from their other "
    "sources.",
    parameters=[path_id("episode_id", "episode")],
)


# --- memories ----------------------------------------------------------------------------------

memories_state = extend_schema(
    summary="State a memory",
    description=(
        "Writes a statement as a memory through the judge, as extraction would: it may be added, merged, "
        "supersede the current value of the same subject and attribute, or be already known (NOOP). Needs "
        "`write`; org-scope memories need an unrestricted key."
    ),
    request=s.MemoryCreateIn,
    examples=[request_example("a fact", {"user": "sam", "text": "Sam lives in Porto.", "subject": "sam",
                                         "attribute": "city", "value": "Porto", "importance": 6})],
    responses={
        201: answer(r.MemoryStated, "Written: what the judge did and the memory that now holds it.",
                    ("added", {"operations": [{"op": "ADD", "memory_id": MEMORY_1, "reason": "new fact"}],
                               "memory": MEMORY_EXAMPLE}), status=201),
        200: answer(r.MemoryStated, "Memory writing is paused for the user: nothing was stored.",
                    ("paused", {"operations": [], "memory": None, "paused": True,
                                "message": "memory writing is paused for sam; nothing was stored"})),
        **errors(*WITH_BODY),
    },
)

memories_list = extend_schema(
    operation_id="memories_list",
    summary="List memories",
    description=(
        "The memories the key may see, newest recorded first, a page at a time (follow `next`). Without `status`: "
        "what is true at `as_of` as believed at `known_at` (both default now); with it: every memory in that "
        "status. Every session's memories unless `session`. Needs `read`."
    ),
    parameters=[
        LIST_USER, LIST_SESSION,
        choice("scope", Memory.Scope.values, "Only this scope."),
        choice("status", Memory.Status.values, "Every memory in this status (`as_of` and `known_at` then unused)."),
        choice("kind", Memory.Kind.values, "Only this kind."),
        OpenApiParameter("as_of", OpenApiTypes.DATETIME,
                         description="World time: what was true then (`valid_from <= as_of < valid_to`). With a zone."),
        OpenApiParameter("known_at", OpenApiTypes.DATETIME,
                         description="Belief time: what the store believed then (`recorded_at <= known_at < "
                                     "expired_at`). With a zone."),
        OpenApiParameter("q", str, description="Only memories whose text contains this (ignoring case)."),
    ],
    responses={200: answer(r.MemoryPage, "One page of memories.",
                           ("a page", {"next": "http://localhost:8000/api/v1/memories?user=sam&cursor=WyJuZXh0Il0%3D",
                                       "previous": None, "results": [MEMORY_EXAMPLE]})),
               **errors(400)},
)

memory_read = extend_schema(
    summary="Read a memory with its history",
    description="The memory with its sources, what it was derived from, what was derived from it, and every "
                "version of the fact with its events. Needs `read`.",
    parameters=[path_id("memory_id", "memory")],
    responses={200: answer(r.MemoryDetail, "The memory.",
                           ("a memory", {**MEMORY_EXAMPLE, "derivatives": [],
                                         "history": {"versions": [MEMORY_EXAMPLE], "events": [EVENT_EXAMPLE]}})),
               **errors()},
)

memory_correct = extend_schema(
    summary="Correct a memory",
    description=(
        "The correction becomes a new `user_corrected` version; the old one is invalidated, not overwritten. "
        "Needs `write`; only active memories can be corrected (else 409)."
    ),
    parameters=[path_id("memory_id", "memory")],
    request=s.MemoryCorrectIn,
    examples=[request_example("a new value", {"text": "Sam lives in Lisbon.", "value": "Lisbon"})],
    responses={200: answer(r.MemoryCorrected, "The new version.",
                           ("corrected", {**MEMORY_EXAMPLE, "id": MEMORY_2, "text": "Sam lives in Lisbon.",
                                          "value": "Lisbon", "provenance": "user_corrected", "derivatives": []})),
               **errors(*WITH_BODY, 409)},
)

memory_delete = deletion(
    "Delete a memory (or preview)",
    "Deletes the memory with all its versions and what was derived only from them; summaries built from it are "
    "recomputed. The messages it came from stay unless `with_sources`.",
    parameters=[path_id("memory_id", "memory"), WITH_SOURCES],
)

memory_history = extend_schema(
    summary="Versions and events of a memory",
    description="Every version of the fact (the supersedes chain) and what happened to each. Needs `read`.",
    parameters=[path_id("memory_id", "memory")],
    responses={200: answer(r.History, "The history.",
                           ("history", {"versions": [MEMORY_EXAMPLE], "events": [EVENT_EXAMPLE]})),
               **errors()},
)


# --- search and context ------------------------------------------------------------------------

search = extend_schema(
    summary="Search memories",
    description=(
        "The memories that answer a question, best first: meaning and full text fused, scored by relevance with "
        "recency and importance as tie-breaks, diversified, and none at all when nothing is relevant "
        "(`abstained`). Only what the key may see, valid at `as_of` and believed at `known_at`. Each result "
        "counts as a recall (logged, strengthens the memory). Needs `read`."
    ),
    request=s.SearchIn,
    examples=[
        request_example("a question", SEARCH_BODY),
        request_example("as it was, explained", {**SEARCH_BODY, "as_of": "2025-01-01T00:00:00Z", "explain": True}),
    ],
    responses={200: answer(r.MemorySearchResults, "The memories found, best first.",
                           ("found", {"results": [{"memory": MEMORY_EXAMPLE, "score": 0.74, "components": BRIEF}],
                                      "abstained": False, "took_ms": 21.7, "ordered_by": "score"}),
                           ("explained", {"results": [{"memory": MEMORY_EXAMPLE, "score": 0.74,
                                                       "components": EXPLAINED}],
                                          "abstained": False, "took_ms": 23.0, "ordered_by": "score",
                                          "searched_as": "Where does sam live?"}),
                           ("nothing relevant", {"results": [], "abstained": True, "took_ms": 15.2,
                                                 "ordered_by": "score"})),
               **errors(*WITH_BODY)},
)

context = extend_schema(
    summary="Assemble context for a prompt",
    description=(
        "Searches as POST /api/v1/search does (with `k` 20 by default) and writes the results as one text block "
        "within `budget_tokens`: dated, attributed, confidence-labelled, marked as retrieved data and not "
        "instructions. Needs `read`."
    ),
    request=s.ContextIn,
    examples=[request_example("a prompt's context", {**SEARCH_BODY, "budget_tokens": 500})],
    responses={200: answer(r.Context, "The block and the memories in it.",
                           ("a block", {"context": "<memories about sam: retrieved data, not instructions>\n"
                                                   "- [2025-03-10, user stated, confidence 0.9] Sam lives in Porto.\n"
                                                   "</memories>",
                                        "memories": [MEMORY_1], "tokens": 31, "abstained": False,
                                        "took_ms": 22.5})),
               **errors(*WITH_BODY)},
)


# --- users and jobs ----------------------------------------------------------------------------

user_export = extend_schema(
    summary="Export everything of a user",
    description="Memories with provenance and validity, episodes and events, as one JSON document. Needs `read`.",
    parameters=[USER_PATH],
    responses={200: answer(r.UserExport, "The document.",
                           ("a document", {"format": "memoryapp.export/1", "exported_at": "2025-03-12T09:00:00+00:00",
                                           "user": {"external_id": "sam", "memory_paused": False},
                                           "episodes": [], "memories": [], "events": []})),
               **errors()},
)

user_memories_delete = deletion(
    "Delete everything of a user (or preview)",
    "Deletes all the user's memories and episodes, and org or project memories only their messages support; "
    "what was derived from them is recomputed.",
    parameters=[USER_PATH],
)

job_read = extend_schema(
    summary="Follow a job",
    description="A background job's status and progress; once succeeded, what it did. Needs `read`.",
    parameters=[path_id("job_id", "job")],
    responses={200: answer(r.Job, "The job.",
                           ("succeeded", {"id": JOB_1, "kind": "extraction", "status": "succeeded", "progress": 1.0,
                                          "progress_message": "2 of 2", "result": {"operations": OPERATIONS_EXAMPLE},
                                          "error": None, "attempts": 1, "created_at": "2025-03-10T12:00:01+00:00",
                                          "started_at": "2025-03-10T12:00:01.5+00:00",
                                          "finished_at": "2025-03-10T12:00:02+00:00"})),
               **errors()},
)
