"""The shapes of the API's answers, for the OpenAPI document and the clients generated from it.

The views build their answers with the `*_json` helpers in serializers.py (shared with MCP and the
dashboard); these serializers only describe them. tests/api/test_contract.py checks real answers of
every endpoint against these descriptions, strictly: an undocumented or a missing required field fails.
"""

from __future__ import annotations

from rest_framework import serializers

from memoryapp import models

# Named in settings.SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]: choice sets that share a field name.
SCOPES = models.Memory.Scope.values
MEMORY_KINDS = models.Memory.Kind.values
STATED_KINDS = [models.Memory.Kind.SEMANTIC.value, models.Memory.Kind.PROCEDURAL.value]  # MemoryCreateIn.kind
MEMORY_STATUSES = models.Memory.Status.values
JOB_STATUSES = models.Job.Status.values

# --- parts -----------------------------------------------------------------------------------


def ids(help_text: str) -> serializers.ListField:
    return serializers.ListField(child=serializers.UUIDField(), help_text=help_text)


class Operation(serializers.Serializer):
    op = serializers.ChoiceField(
        choices=models.MemoryEvent.Op.values,
        help_text="What the judge did with one candidate fact: ADD (new), UPDATE (merged into a memory), SUPERSEDE "
                  "(the world changed: the old value's validity closed), INVALIDATE (the old one was wrong), NOOP "
                  "(already known: the message added to its sources), QUARANTINE (an untrusted source tried to "
                  "instruct; held for an admin).",
    )
    memory_id = serializers.UUIDField(allow_null=True, help_text="The memory written or touched; null when none.")
    reason = serializers.CharField(help_text="Why, in words (the judge's or the rule's reason).")


class Source(serializers.Serializer):
    episode = serializers.UUIDField(help_text="The episode (message) the memory came from.")
    source = serializers.ChoiceField(choices=models.Episode.Source.values, help_text="Who or what said it.")
    occurred_at = serializers.DateTimeField(help_text="When the message was said or written (world time).")
    excerpt = serializers.CharField(help_text="The message's first 200 characters (an ellipsis if cut).")


class Memory(serializers.Serializer):
    id = serializers.UUIDField(help_text="The memory's id (each version has its own).")
    text = serializers.CharField(help_text="A short self-contained statement, e.g. \"Sam lives in Porto.\"")
    kind = serializers.ChoiceField(
        choices=models.Memory.Kind.values,
        help_text="semantic (a fact), procedural (how the user wants things done), reflection (a profile drawn "
                  "from many memories), summary (of a topic).",
    )
    scope = serializers.ChoiceField(
        choices=models.Memory.Scope.values,
        help_text="Who it is recalled for: one session, the user, a project's members, or the whole organization.",
    )
    user = serializers.CharField(allow_null=True, help_text="The user's external id; null for an org memory.")
    session = serializers.CharField(allow_null=True, help_text="The session it belongs to; null when none.")
    project = serializers.CharField(allow_null=True, help_text="The project's name; null when none.")
    status = serializers.ChoiceField(
        choices=models.Memory.Status.values,
        help_text="active (recalled), superseded (an older value), invalidated (found wrong), quarantined "
                  "(waits for an admin; never recalled), archived (decayed; restorable).",
    )
    status_reason = serializers.CharField(allow_blank=True, help_text="Why it has that status (\"\" when active).")
    needs_review = serializers.BooleanField(
        help_text="true when a memory from the same message was found wrong: this one may be too.")
    subject = serializers.CharField(allow_blank=True, help_text="The triple's subject, e.g. \"sam\" (\"\" if none).")
    attribute = serializers.CharField(allow_blank=True,
                                      help_text="The triple's attribute, e.g. \"diet\" (\"\" if none).")
    value = serializers.CharField(allow_blank=True, help_text="The triple's value, e.g. \"eats fish\" (\"\" if none).")
    importance = serializers.IntegerField(min_value=1, max_value=10, help_text="1 (trivia) to 10 (vital).")
    confidence = serializers.FloatField(min_value=0, max_value=1,
                                        help_text="0 to 1: how far the store believes it (lower from untrusted "
                                                  "sources).")
    provenance = serializers.ChoiceField(choices=models.Memory.Provenance.values,
                                         help_text="How the store came to know it.")
    valid_from = serializers.DateTimeField(help_text="World time: when it became true.")
    valid_to = serializers.DateTimeField(allow_null=True,
                                         help_text="World time: when it stopped being true (half-open); null: still.")
    recorded_at = serializers.DateTimeField(help_text="Belief time: when the store learned it.")
    expired_at = serializers.DateTimeField(allow_null=True,
                                           help_text="Belief time: when the store stopped believing it; null: still.")
    last_accessed_at = serializers.DateTimeField(help_text="When a search or context last returned it.")
    access_count = serializers.IntegerField(min_value=0, help_text="How many times it was recalled.")
    strength = serializers.FloatField(help_text="Grows with each recall; retention decays as exp(-t/strength).")
    supersedes = serializers.UUIDField(allow_null=True, help_text="The older version this one replaced; null if none.")
    sources = Source(many=True, help_text="The messages it came from, oldest first.")
    derived_from = ids("The memories a summary, reflection or merge was built from.")


class MemoryCorrected(Memory):
    derivatives = ids("The summaries, reflections and merges built from this memory.")


class Event(serializers.Serializer):
    id = serializers.UUIDField(help_text="The event's id.")
    op = serializers.ChoiceField(choices=models.MemoryEvent.Op.values, help_text="The operation recorded.")
    memory_id = serializers.UUIDField(allow_null=True, help_text="The memory it concerns; null when none.")
    episode_id = serializers.UUIDField(allow_null=True, help_text="The episode it concerns; null when none.")
    actor_type = serializers.ChoiceField(choices=models.Actor.values, help_text="Who did it.")
    actor_id = serializers.CharField(help_text="The agent's, user's or job's id (or name for a job).")
    reason = serializers.CharField(allow_blank=True, help_text="Why; \"(deleted)\" once what it quoted is deleted.")
    data = serializers.DictField(help_text="Details of the operation (free JSON; emptied by a deletion).")
    at = serializers.DateTimeField(help_text="When it happened.")


class History(serializers.Serializer):
    versions = Memory(many=True, help_text="Every version of the fact (the supersedes chain), oldest first.")
    events = Event(many=True, help_text="What happened to those versions, oldest first.")


class MemoryDetail(MemoryCorrected):
    history = History(help_text="The versions of this fact and their events.")


class Episode(serializers.Serializer):
    id = serializers.UUIDField(help_text="The episode's id.")
    user = serializers.CharField(help_text="The user's external id.")
    session = serializers.CharField(allow_null=True, help_text="The session; null when none.")
    project = serializers.CharField(allow_null=True, help_text="The project's name; null when none.")
    source = serializers.ChoiceField(choices=models.Episode.Source.values, help_text="Who or what said it.")
    trust = serializers.ChoiceField(
        choices=models.Episode.Trust.values,
        help_text="trusted (user and assistant turns) or untrusted (tool, web, document): untrusted content that "
                  "tries to instruct is quarantined.",
    )
    content = serializers.CharField(allow_blank=True, help_text="The message as stored (secrets redacted).")
    occurred_at = serializers.DateTimeField(help_text="When it was said or written (world time).")
    received_at = serializers.DateTimeField(help_text="When the store received it.")
    metadata = serializers.DictField(help_text="The free JSON object sent with the message.")
    extraction = serializers.ChoiceField(choices=models.Episode.Extraction.values,
                                         help_text="Whether memories were drawn from it yet.")
    memories = ids("The memories derived from it.")


def page(name: str, item: type[serializers.Serializer], what: str) -> type[serializers.Serializer]:
    link = "A link to the {} page (same filters), or null at the {}."
    return type(name, (serializers.Serializer,), {
        "__doc__": f"One page of {what}, newest first.",
        "next": serializers.URLField(allow_null=True, help_text=link.format("next (older)", "oldest")),
        "previous": serializers.URLField(allow_null=True, help_text=link.format("previous (newer)", "newest")),
        "results": item(many=True, help_text=f"The {what} on this page."),
    })


EpisodePage = page("EpisodePage", Episode, "episodes")
MemoryPage = page("MemoryPage", Memory, "memories")


# --- writes ------------------------------------------------------------------------------------


class EpisodesQueued(serializers.Serializer):
    episodes = ids("The stored episodes, in the order of `messages`.")
    job = serializers.UUIDField(help_text="The extraction job: follow it at GET /api/v1/jobs/{id}.")


class EpisodesExtracted(serializers.Serializer):
    episodes = ids("The stored episodes, in the order of `messages`.")
    job = serializers.UUIDField(allow_null=True, help_text="Always null: extraction ran within the request.")
    operations = Operation(many=True, help_text="What extraction did, one entry per candidate fact.")
    replayed = serializers.BooleanField(required=False,
                                        help_text="Present (true) when this answers a retry of an Idempotency-Key.")


class EpisodesIngestAnswer(serializers.Serializer):
    """200: a retry of an Idempotency-Key (`replayed`), or memory writing is paused (`paused`)."""

    episodes = ids("The episodes the first request stored (empty when paused).")
    job = serializers.UUIDField(allow_null=True,
                                help_text="The first request's extraction job; null with `wait` or when paused.")
    operations = Operation(many=True, required=False,
                           help_text="With `wait: true`: what extraction did for what the first request left pending.")
    replayed = serializers.BooleanField(required=False, help_text="true: a retry; nothing was stored again.")
    paused = serializers.BooleanField(required=False, help_text="true: the user paused memory writing.")
    message = serializers.CharField(required=False, help_text="Why nothing was stored (with `paused`).")


class MemoryStated(serializers.Serializer):
    operations = Operation(many=True, help_text="What the judge did with the statement (empty when paused).")
    memory = Memory(allow_null=True, help_text="The memory that now holds the statement; null when paused.")
    paused = serializers.BooleanField(required=False, help_text="Present (true, with 200) when writing is paused.")
    message = serializers.CharField(required=False, help_text="Why nothing was stored (with `paused`).")


# --- search and context ------------------------------------------------------------------------


class Scaled(serializers.Serializer):
    relevance = serializers.FloatField(help_text="Relevance as used in the score.")
    recency = serializers.FloatField(help_text="Recency min-max scaled to 0..1 over the candidates.")
    importance = serializers.FloatField(help_text="Importance min-max scaled to 0..1 over the candidates.")


class Components(serializers.Serializer):
    """Why a result scored what it did; with `explain: true` every component, else the first three."""

    relevance = serializers.FloatField(help_text="The question's cosine with the result (memories: both addressed to "
                                         "the user, their names replaced by 'you', plus 0.6 times `kind` and "
                                         "0.2 times (`words` less 0.1), plus `someone_else` and `name_only`; "
                                         "episodes: names "
                                         "taken out).")
    recency = serializers.FloatField(help_text="Decayed recency since the last access (1: just now).")
    importance = serializers.FloatField(help_text="The result's importance (episodes: 5).")
    cosine = serializers.FloatField(allow_null=True, required=False,
                                    help_text="explain: the raw cosine; null when the result has no embedding.")
    kind = serializers.FloatField(required=False,
                                  help_text="explain, memories: how likely (0..1) the memory is of the kind of fact "
                                            "the question asks about.")
    words = serializers.FloatField(required=False,
                                   help_text="explain, memories: the share (0..1) of the question's own words "
                                             "(not how it asks, nor the user's names) that the memory has.")
    someone_else = serializers.FloatField(required=False,
                                          help_text="explain, memories: -1, only when the question names some of "
                                                    "the user's people and the memory is about others of them (\"my "
                                                    "mum\" and a fact about their sister) or fills one of the user's "
                                                    "own slots (\"my husband's name\" and the user's name).")
    name_only = serializers.FloatField(required=False,
                                       help_text="explain, memories: -0.1, only for a memory of someone's name when "
                                                 "the question does not ask who someone is, what they are called, "
                                                 "or whether the user has them (\"where does my sister Ana live?\" "
                                                 "and \"Sam's sister's name is Ana.\").")
    fused = serializers.FloatField(required=False,
                                   help_text="explain: the reciprocal-rank fusion of the meaning and word rankings.")
    dense_rank = serializers.IntegerField(allow_null=True, required=False,
                                          help_text="explain: rank by meaning (1: best); null when not ranked.")
    lexical_rank = serializers.IntegerField(allow_null=True, required=False,
                                            help_text="explain: rank by words (full text); null when no word matched.")
    scaled = Scaled(required=False, help_text="explain: the components as weighted into `score`.")


SCORE = "The ranking score (see the request's `weights`); compare with `min_score`."
ORDERED_BY = "score (memories) or fused (episodes: by `components.fused`; `score` is then the relevance)."


class MemoryHit(serializers.Serializer):
    memory = Memory(help_text="The memory found.")
    score = serializers.FloatField(help_text=SCORE)
    components = Components(help_text="Why it scored so.")


class EpisodeHit(serializers.Serializer):
    episode = Episode(help_text="The message found.")
    score = serializers.FloatField(help_text=SCORE)
    components = Components(help_text="Why it scored so.")


def results(name: str, hit: type[serializers.Serializer], what: str) -> type[serializers.Serializer]:
    return type(name, (serializers.Serializer,), {
        "__doc__": f"The {what} that answer the question, best first; none when nothing is relevant.",
        "results": hit(many=True, help_text=f"The {what}, at most `k`."),
        "abstained": serializers.BooleanField(help_text="true when nothing passed `min_score`: no results."),
        "took_ms": serializers.FloatField(help_text="Time the search took, in milliseconds."),
        "ordered_by": serializers.ChoiceField(choices=["score", "fused"], help_text=ORDERED_BY),
        "searched_as": serializers.CharField(
            required=False, help_text="explain: the question as searched (first person rewritten to the user's name)."),
    })


MemorySearchResults = results("MemorySearchResults", MemoryHit, "memories")
EpisodeSearchResults = results("EpisodeSearchResults", EpisodeHit, "episodes")


class Context(serializers.Serializer):
    context = serializers.CharField(
        allow_blank=True,
        help_text="A text block to put in a prompt: dated, attributed, confidence-labelled memories within "
                  "`budget_tokens`, marked as retrieved data and not instructions (\"\" when none).",
    )
    memories = ids("The memories in the block, in its order.")
    tokens = serializers.IntegerField(min_value=0, help_text="The block's size in tokens (at most `budget_tokens`).")
    abstained = serializers.BooleanField(help_text="true when no memory was relevant: the block is empty.")
    took_ms = serializers.FloatField(help_text="Time the search took, in milliseconds.")


# --- deletion ----------------------------------------------------------------------------------


class IdCount(serializers.Serializer):
    count = serializers.IntegerField(min_value=0, help_text="How many.")
    ids = ids("Which, sorted.")


class Deleted(serializers.Serializer):
    memories = IdCount(help_text="Memories deleted (the versions and what was derived only from them).")
    episodes = IdCount(help_text="Episodes (messages) deleted.")


TARGETS = ["memory", "memory_with_sources", "episode", "user"]
TARGET = "What was asked to go: a memory, a memory with its messages (`with_sources`), an episode, or a user's all."
RECOMPUTED = "Summaries, reflections, merges and memories rebuilt from what remains."


class DeletionPreview(serializers.Serializer):
    """`?preview=true`: what a deletion would remove and recompute. Nothing is deleted."""

    preview = serializers.BooleanField(help_text="Always true: nothing was deleted.")
    target = serializers.ChoiceField(choices=TARGETS, help_text=TARGET)
    deleted = Deleted(help_text="What would be deleted.")
    recomputed = ids(RECOMPUTED.replace("rebuilt", "that would be rebuilt"))
    sources_unlinked = serializers.IntegerField(
        min_value=0, help_text="Memories that keep other sources and would lose only the deleted message.")
    sources_kept = IdCount(help_text="Deleting a memory: the messages it came from that stay (see `with_sources`).")


class DeletionReceipt(serializers.Serializer):
    """What a deletion removed (ids and counts, never text)."""

    receipt_id = serializers.UUIDField(help_text="The receipt's id (kept after the deletion).")
    target = serializers.ChoiceField(choices=TARGETS, help_text=TARGET)
    deleted = Deleted(help_text="What was deleted.")
    recomputed = ids(RECOMPUTED)
    at = serializers.DateTimeField(help_text="When the deletion committed.")
    purged_at = serializers.DateTimeField(
        allow_null=True, help_text="When the deleted text was also purged from the database files; null: pending.")
    purge = serializers.CharField(help_text="\"purged at <time>\" or \"purge pending (runs within N minutes)\".")


# --- export and jobs ---------------------------------------------------------------------------


class ExportUser(serializers.Serializer):
    external_id = serializers.CharField(help_text="The user's external id.")
    memory_paused = serializers.BooleanField(help_text="Whether the user paused memory writing.")


class ExportEpisode(serializers.Serializer):
    id = serializers.UUIDField(help_text="The episode's id.")
    session = serializers.CharField(allow_blank=True, help_text="The session (\"\" when none).")
    project = serializers.CharField(allow_null=True, help_text="The project's name; null when none.")
    source = serializers.ChoiceField(choices=models.Episode.Source.values, help_text="Who or what said it.")
    trust = serializers.ChoiceField(choices=models.Episode.Trust.values, help_text="trusted or untrusted.")
    content = serializers.CharField(allow_blank=True, help_text="The message as stored.")
    metadata = serializers.DictField(help_text="The free JSON object sent with the message.")
    occurred_at = serializers.DateTimeField(help_text="When it was said (world time).")
    received_at = serializers.DateTimeField(help_text="When the store received it.")
    extraction = serializers.ChoiceField(choices=models.Episode.Extraction.values, help_text="Extraction state.")


class ExportMemory(serializers.Serializer):
    id = serializers.UUIDField(help_text="The memory's id.")
    text = serializers.CharField(help_text="The statement.")
    kind = serializers.ChoiceField(choices=models.Memory.Kind.values, help_text="As in a memory.")
    scope = serializers.ChoiceField(choices=models.Memory.Scope.values, help_text="As in a memory.")
    session = serializers.CharField(allow_blank=True, help_text="The session (\"\" when none).")
    project = serializers.CharField(allow_null=True, help_text="The project's name; null when none.")
    subject = serializers.CharField(allow_blank=True, help_text="The triple's subject.")
    attribute = serializers.CharField(allow_blank=True, help_text="The triple's attribute.")
    value = serializers.CharField(allow_blank=True, help_text="The triple's value.")
    cardinality = serializers.ChoiceField(choices=models.Memory.Cardinality.values,
                                          help_text="single: one active value per subject and attribute.")
    importance = serializers.IntegerField(help_text="1 to 10.")
    confidence = serializers.FloatField(help_text="0 to 1.")
    provenance = serializers.ChoiceField(choices=models.Memory.Provenance.values, help_text="As in a memory.")
    status = serializers.ChoiceField(choices=models.Memory.Status.values, help_text="As in a memory.")
    status_reason = serializers.CharField(allow_blank=True, help_text="Why it has that status.")
    needs_review = serializers.BooleanField(help_text="As in a memory.")
    valid_from = serializers.DateTimeField(help_text="World time: when it became true.")
    valid_to = serializers.DateTimeField(allow_null=True, help_text="World time: when it stopped; null: still.")
    valid_to_recorded_at = serializers.DateTimeField(allow_null=True,
                                                     help_text="When the store learned `valid_to`; null: not yet.")
    recorded_at = serializers.DateTimeField(help_text="Belief time: when the store learned it.")
    expired_at = serializers.DateTimeField(allow_null=True, help_text="Belief time: when it stopped; null: still.")
    access_count = serializers.IntegerField(help_text="Times recalled.")
    strength = serializers.FloatField(help_text="Retention strength.")
    last_accessed_at = serializers.DateTimeField(help_text="Last recall.")
    supersedes = serializers.UUIDField(allow_null=True, help_text="The older version it replaced; null if none.")
    sources = ids("The episodes it came from.")
    derived_from = ids("The memories it was built from.")


class ExportEvent(serializers.Serializer):
    op = serializers.ChoiceField(choices=models.MemoryEvent.Op.values, help_text="The operation recorded.")
    memory_id = serializers.UUIDField(allow_null=True, help_text="The memory it concerns; null when none.")
    episode_id = serializers.UUIDField(allow_null=True, help_text="The episode it concerns; null when none.")
    actor_type = serializers.ChoiceField(choices=models.Actor.values, help_text="Who did it.")
    actor_id = serializers.CharField(help_text="The actor's id.")
    reason = serializers.CharField(allow_blank=True, help_text="Why.")
    data = serializers.DictField(help_text="Details (free JSON).")
    at = serializers.DateTimeField(help_text="When.")


class UserExport(serializers.Serializer):
    """Everything of one user, in a document the import reads back."""

    format = serializers.CharField(help_text="The document's format and version: \"memoryapp.export/1\".")
    exported_at = serializers.DateTimeField(help_text="When it was made.")
    user = ExportUser(help_text="The user.")
    episodes = ExportEpisode(many=True, help_text="Every episode, oldest first.")
    memories = ExportMemory(many=True, help_text="Every memory and version, in the order recorded.")
    events = ExportEvent(many=True, help_text="Every event of the user or their memories, oldest first.")


class Job(serializers.Serializer):
    id = serializers.UUIDField(help_text="The job's id.")
    kind = serializers.CharField(help_text="What it does, e.g. \"extraction\".")
    status = serializers.ChoiceField(choices=models.Job.Status.values,
                                     help_text="queued, running, retrying (after a failure, with backoff), "
                                               "succeeded or failed.")
    progress = serializers.FloatField(min_value=0, max_value=1, help_text="0 to 1.")
    progress_message = serializers.CharField(allow_blank=True, help_text="e.g. \"3 of 10\".")
    result = serializers.DictField(
        help_text="What it did once succeeded (free JSON; an extraction: `{\"operations\": [...]}`).")
    error = serializers.CharField(allow_null=True, help_text="Why it failed or is retrying; null when none.")
    attempts = serializers.IntegerField(min_value=0, help_text="Runs so far.")
    created_at = serializers.DateTimeField(help_text="When it was queued.")
    started_at = serializers.DateTimeField(allow_null=True, help_text="When a worker first took it; null: not yet.")
    finished_at = serializers.DateTimeField(allow_null=True, help_text="When it ended; null: not yet.")


# --- errors ------------------------------------------------------------------------------------


class ErrorDetail(serializers.Serializer):
    code = serializers.CharField(
        help_text="A stable code to branch on: invalid, empty, malformed_json, not_authenticated, "
                  "authentication_failed, permission_denied, not_found, method_not_allowed, unsupported_media_type, "
                  "conflict, too_large, too_many_requests, unavailable, internal_error.",
    )
    message = serializers.CharField(help_text="What went wrong and how to fix it, for a person.")
    fields = serializers.DictField(
        help_text="400 invalid: the messages per request field (nested for list items, by index); else {}.")
    reference = serializers.CharField(
        required=False, help_text="500 only: quote it when reporting; the server log has the details.")


class Error(serializers.Serializer):
    """Every error, whatever the status: one object under `error`."""

    error = ErrorDetail(help_text="The error.")
