import uuid

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from pgvector.django import HnswIndex

from memoryapp.models.episodes import EMBEDDING_DIM, Episode
from memoryapp.models.fulltext import ScopedSearchVector
from memoryapp.models.tenancy import Agent, Organization, Project, User
from memoryapp.models.vectors import HalfVectorField


class Memory(models.Model):
    """A short self-contained statement, bi-temporal and provenance-tracked."""

    class Kind(models.TextChoices):
        SEMANTIC = "semantic"
        PROCEDURAL = "procedural"
        REFLECTION = "reflection"
        SUMMARY = "summary"

    class Scope(models.TextChoices):
        SESSION = "session"
        USER = "user"
        PROJECT = "project"
        ORG = "org"

    class Provenance(models.TextChoices):
        USER_STATED = "user_stated"
        USER_CORRECTED = "user_corrected"
        AGENT_INFERRED = "agent_inferred"
        TOOL_VERIFIED = "tool_verified"
        UNTRUSTED_SOURCE = "untrusted_source"
        SYSTEM = "system"

    class Status(models.TextChoices):
        ACTIVE = "active"
        SUPERSEDED = "superseded"
        INVALIDATED = "invalidated"
        QUARANTINED = "quarantined"
        ARCHIVED = "archived"

    class Cardinality(models.TextChoices):
        SINGLE = "single"
        MULTI = "multi"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memories")
    user = models.ForeignKey(User, on_delete=models.CASCADE, null=True, blank=True, related_name="memories")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, null=True, blank=True, related_name="memories")
    session = models.CharField(max_length=200, blank=True, default="")
    scope = models.CharField(max_length=16, choices=Scope.choices, default=Scope.USER)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.SEMANTIC)

    text = models.TextField()
    subject = models.CharField(max_length=200, blank=True, default="")
    attribute = models.CharField(max_length=100, blank=True, default="")
    value = models.TextField(blank=True, default="")
    cardinality = models.CharField(max_length=8, choices=Cardinality.choices, default=Cardinality.MULTI)

    importance = models.PositiveSmallIntegerField(default=5)
    confidence = models.FloatField(default=0.8)
    provenance = models.CharField(max_length=20, choices=Provenance.choices, default=Provenance.USER_STATED)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    status_reason = models.CharField(max_length=300, blank=True, default="")
    needs_review = models.BooleanField(default=False)

    # World time (half-open [valid_from, valid_to)) and belief time ([recorded_at, expired_at)).
    valid_from = models.DateTimeField(default=timezone.now)
    valid_to = models.DateTimeField(null=True, blank=True)
    # When the store learned `valid_to`: a question about what was believed before then still
    # sees the fact as open-ended (belief time applies to the end of validity too).
    valid_to_recorded_at = models.DateTimeField(null=True, blank=True)
    recorded_at = models.DateTimeField(default=timezone.now)
    expired_at = models.DateTimeField(null=True, blank=True)

    last_accessed_at = models.DateTimeField(default=timezone.now)
    access_count = models.PositiveIntegerField(default=0)
    strength = models.FloatField(default=1.0)

    # halfvec: searched at half the bytes (migration 0009_halfvec says why stored); read back as floats
    embedding = HalfVectorField(dimensions=EMBEDDING_DIM)
    # What searches compare questions with: the text addressed to the user (grammar.addressed), so that
    # "The user lives in Reading." is as near "where do I live?" as "Sam lives in Reading." is to "where
    # does Sam live?". `embedding` (the text as written) stays what the write path's models were fitted
    # on. A memory saved without one is searched by `embedding` (save below).
    search_embedding = HalfVectorField(dimensions=EMBEDDING_DIM)
    search_vector = models.GeneratedField(
        expression=SearchVector("text", config="english"), output_field=SearchVectorField(), db_persist=True
    )

    sources = models.ManyToManyField(Episode, through="MemorySource", related_name="memories", blank=True)
    derived_from = models.ManyToManyField(
        "self",
        through="MemoryDerivation",
        through_fields=("derived", "source"),
        symmetrical=False,
        related_name="derivatives",
        blank=True,
    )
    supersedes = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="superseded_by"
    )
    agent = models.ForeignKey(Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="memories")

    class Meta:
        verbose_name_plural = "memories"
        ordering = ["recorded_at"]
        indexes = [
            # A user's part of a search (selectors.search._dense_scan) reads this index alone: it holds
            # every column the scope and validity filters and the distance need, so a user's 10k
            # vectors sit on ~2.5k leaf pages together instead of ~10k heap pages written among
            # other users' (10k-memory search at 1M: dense leg 20 -> 11 ms). It costs a second copy
            # of each vector.
            models.Index(
                fields=["organization", "user", "status"],
                include=["id", "scope", "valid_from", "valid_to", "valid_to_recorded_at", "recorded_at", "expired_at",
                         "search_embedding"],
                name="memory_owner_search",
            ),
            # The project and org branches of selectors.scoping.scoped_memories: without it every
            # search with the default scopes read the whole organization.
            models.Index(fields=["organization", "scope", "status"], name="memory_org_scope_status"),
            models.Index(fields=["organization", "user", "subject", "attribute"], name="memory_slot"),
            # selectors.search full-text leg: words and scope lexemes (models.fulltext says why)
            GinIndex(ScopedSearchVector("memory"), name="memory_fulltext_scoped"),
            # Approximate leg of selectors.search, used only above the exact-search size threshold.
            HnswIndex(fields=["search_embedding"], name="memory_search_embedding_hnsw",
                      opclasses=["halfvec_cosine_ops"]),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(importance__gte=1, importance__lte=10), name="%(app_label)s_%(class)s_importance_1_10"
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0, confidence__lte=1), name="%(app_label)s_%(class)s_confidence_0_1"
            ),
            models.CheckConstraint(
                condition=Q(valid_to__isnull=True) | Q(valid_from__lt=F("valid_to")),
                name="%(app_label)s_%(class)s_valid_from_before_valid_to",
            ),
            models.CheckConstraint(
                condition=Q(valid_to__isnull=True, valid_to_recorded_at__isnull=True)
                | Q(valid_to__isnull=False, valid_to_recorded_at__isnull=False),
                name="%(app_label)s_%(class)s_valid_to_has_recorded_at",
            ),
            models.CheckConstraint(
                condition=Q(expired_at__isnull=True) | Q(recorded_at__lt=F("expired_at")),
                name="%(app_label)s_%(class)s_recorded_before_expired",
            ),
            models.CheckConstraint(condition=~Q(text=""), name="%(app_label)s_%(class)s_text_not_empty"),
            models.CheckConstraint(
                condition=Q(scope="org") | Q(scope="project", project__isnull=False) | Q(user__isnull=False),
                name="%(app_label)s_%(class)s_scope_has_owner",
            ),
            # The slot lock in services.apply relies on this as the last line of defence.
            models.UniqueConstraint(
                fields=["organization", "user", "project", "subject", "attribute"],
                condition=Q(status="active", cardinality="single"),
                nulls_distinct=False,
                name="%(app_label)s_%(class)s_one_active_value_per_slot",
            ),
        ]

    def __str__(self) -> str:
        return self.text[:80]

    def save(self, *args, **kwargs):
        # The write path's services always give the addressed vector; a memory written directly with one
        # vector (an import, a test's chosen vector) is searched by it.
        if "search_embedding" not in self.get_deferred_fields() and self.search_embedding is None:
            self.search_embedding = self.embedding
        super().save(*args, **kwargs)


class MemorySource(models.Model):
    """Provenance: a memory came (in part) from this episode."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="source_links")
    episode = models.ForeignKey(Episode, on_delete=models.CASCADE, related_name="memory_links")
    added_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["memory", "episode"], name="%(app_label)s_%(class)s_once_per_pair")
        ]


class MemoryDerivation(models.Model):
    """A summary, reflection or merge (`derived`) was built from `source`."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    derived = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="derivation_links")
    source = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="derivative_links")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["derived", "source"], name="%(app_label)s_%(class)s_once_per_pair"),
            models.CheckConstraint(condition=~Q(derived=F("source")), name="%(app_label)s_%(class)s_not_self"),
        ]
