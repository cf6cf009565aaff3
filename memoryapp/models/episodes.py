import uuid

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.utils import timezone
from pgvector.django import HnswIndex

from memoryapp.models.fulltext import ScopedSearchVector
from memoryapp.models.tenancy import Agent, Organization, Project, User
from memoryapp.models.vectors import HalfVectorField

EMBEDDING_DIM = 384


class Episode(models.Model):
    """One message, document, tool result or observation, as received (after the secret gate)."""

    class Source(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"
        TOOL = "tool"
        WEB = "web"
        DOCUMENT = "document"
        SYSTEM = "system"

    class Trust(models.TextChoices):
        TRUSTED = "trusted"
        UNTRUSTED = "untrusted"

    class Extraction(models.TextChoices):
        PENDING = "pending"
        DONE = "done"
        FAILED = "failed"
        SKIPPED = "skipped"

    UNTRUSTED_SOURCES = {Source.TOOL, Source.WEB, Source.DOCUMENT}

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="episodes")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="episodes")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, null=True, blank=True, related_name="episodes")
    session = models.CharField(max_length=200, blank=True, default="")
    agent = models.ForeignKey(Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="episodes")
    source = models.CharField(max_length=16, choices=Source.choices)
    trust = models.CharField(max_length=16, choices=Trust.choices)
    content = models.TextField()
    metadata = models.JSONField(default=dict, blank=True)
    occurred_at = models.DateTimeField(default=timezone.now)
    received_at = models.DateTimeField(default=timezone.now)
    extraction = models.CharField(max_length=16, choices=Extraction.choices, default=Extraction.PENDING)
    # The client's Idempotency-Key of the request that stored this episode: a retry returns these episodes.
    request_key = models.CharField(max_length=200, blank=True, default="")
    embedding = HalfVectorField(dimensions=EMBEDDING_DIM, null=True)  # halfvec: as Memory.embedding
    search_vector = models.GeneratedField(
        expression=SearchVector("content", config="english"), output_field=SearchVectorField(), db_persist=True
    )

    class Meta:
        ordering = ["occurred_at", "received_at"]
        indexes = [
            # A user's exact episode search (selectors.search._dense_scan) reads this index alone, as
            # memory_owner_search does for memories: it holds every column scoping.scoped_episodes and
            # the question's times filter on, and the vector (10k episodes at 300k: a visit to the heap
            # per row otherwise). In time order per owner: _with_neighbours probes it for a turn's
            # neighbours. It costs a second copy of each vector on every insert.
            models.Index(
                fields=["organization", "user", "occurred_at"],
                include=["id", "project", "session", "received_at", "embedding"],
                name="episode_owner_search",
            ),
            # services.ingest looks a retried request up by its key.
            models.Index(fields=["organization", "user", "request_key"], name="episode_request_key",
                         condition=~models.Q(request_key="")),
            # selectors.search full-text leg: words and the owner's lexeme (models.fulltext says why)
            GinIndex(ScopedSearchVector("episode"), name="episode_fulltext_scoped"),
            # Only scopes above SEARCH_EXACT_MAX_ROWS walk it, but every message inserts into it: a
            # sparser graph than pgvector's default (m=16, ef_construction=64) cost 0.2 ms per insert
            # instead of 0.7 (exact fallback keeps k results; approximate recall is what it trades).
            HnswIndex(
                fields=["embedding"],
                name="episode_embedding_hnsw",
                opclasses=["halfvec_cosine_ops"],
                m=8,
                ef_construction=32,
            ),
        ]
        constraints = [
            models.CheckConstraint(condition=~models.Q(content=""), name="%(app_label)s_%(class)s_content_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.source} episode {self.id}"
