import uuid

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from memoryapp.models.tenancy import Organization


class Actor(models.TextChoices):
    AGENT = "agent"
    USER = "user"
    ADMIN = "admin"
    JOB = "job"
    SYSTEM = "system"


class MemoryEvent(models.Model):
    """The audit row of one operation. Keeps ids and counts, never memory or episode text."""

    class Op(models.TextChoices):
        ADD = "ADD"
        UPDATE = "UPDATE"
        SUPERSEDE = "SUPERSEDE"
        INVALIDATE = "INVALIDATE"
        NOOP = "NOOP"
        ARCHIVE = "ARCHIVE"
        RESTORE = "RESTORE"
        QUARANTINE = "QUARANTINE"
        APPROVE = "APPROVE"
        REJECT = "REJECT"
        DELETE = "DELETE"
        REDACT = "REDACT"
        MERGE = "MERGE"
        SUMMARIZE = "SUMMARIZE"
        CORRECT = "CORRECT"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="events")
    # Plain ids, not foreign keys: the event outlives a hard-deleted memory or episode.
    memory_id = models.UUIDField(null=True, blank=True, db_index=True)
    episode_id = models.UUIDField(null=True, blank=True, db_index=True)
    user_id = models.UUIDField(null=True, blank=True, db_index=True)
    op = models.CharField(max_length=16, choices=Op.choices)
    actor_type = models.CharField(max_length=16, choices=Actor.choices)
    actor_id = models.CharField(max_length=64)
    reason = models.CharField(max_length=300)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.CheckConstraint(condition=~models.Q(actor_id=""), name="%(app_label)s_%(class)s_actor_named")
        ]


class AccessLog(models.Model):
    """One read by a principal: which memories it was shown, for which query, when."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="access_logs")
    actor_type = models.CharField(max_length=16, choices=Actor.choices)
    actor_id = models.CharField(max_length=64)
    user_id = models.UUIDField(null=True, blank=True, db_index=True)
    endpoint = models.CharField(max_length=40)
    query = models.TextField(blank=True, default="")
    memory_ids = ArrayField(models.UUIDField(), default=list, blank=True)
    episode_ids = ArrayField(models.UUIDField(), default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at"]


class Job(models.Model):
    """A background run (extraction, consolidation, decay, evaluation) with its progress."""

    class Kind(models.TextChoices):
        """Every kind of job, named once: memoryapp.jobs runs them, the dashboard and `run_job` offer them.
        Not the field's choices (a row of a kind this version dropped still reads), so no migration."""

        EXTRACTION = "extraction", "Extraction"
        CONSOLIDATE = "consolidate", "Consolidate"
        SUMMARIZE = "summarize", "Summarize"
        DECAY = "decay", "Decay"
        EXPIRE_SESSIONS = "expire_sessions", "Expire sessions"
        REQUEUE = "requeue", "Requeue stalled work"
        PURGE = "purge", "Purge deleted text"
        METRICS = "metrics", "Store metrics"
        EVALUATE_LOCOMO = "evaluate_locomo", "LoCoMo recall and ladder"
        EVALUATE_CHANGING_FACTS = "evaluate_changing_facts", "Changing facts"
        EVALUATE_WRITE_ACCURACY = "evaluate_write_accuracy", "Write accuracy"
        EVALUATE_QUESTIONS = "evaluate_questions", "Questions"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        RETRYING = "retrying"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, null=True, blank=True, related_name="jobs")
    # The user whose data the job works on, if one: jobs are visible to whoever may see that user.
    user = models.ForeignKey("memoryapp.User", on_delete=models.CASCADE, null=True, blank=True, related_name="jobs")
    kind = models.CharField(max_length=40)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    progress = models.FloatField(default=0.0)
    progress_message = models.CharField(max_length=200, blank=True, default="")
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The Celery worker running the job and its last sign of life: a job whose worker died is requeued.
    worker = models.CharField(max_length=200, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(progress__gte=0, progress__lte=1), name="%(app_label)s_%(class)s_progress_0_1"
            )
        ]

    @property
    def kind_label(self) -> str:
        """The kind in words ("Purge deleted text"); a kind this version does not know, as stored."""
        return self.Kind(self.kind).label if self.kind in self.Kind.values else self.kind

    @property
    def result_summary(self) -> str:
        """The result's counts and figures as words ("users 3 · created 3"); nested values are left out."""
        return " · ".join(f"{key.replace('_', ' ')} {value}" for key, value in self.result.items()
                          if isinstance(value, str | int | float) and not isinstance(value, bool))


class DeletionReceipt(models.Model):
    """What a deletion removed: ids, counts and time, never content."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="receipts")
    user_id = models.UUIDField(null=True, blank=True)
    actor_type = models.CharField(max_length=16, choices=Actor.choices)
    actor_id = models.CharField(max_length=64)
    target = models.CharField(max_length=40)
    deleted = models.JSONField(default=dict)
    recomputed = models.JSONField(default=list)
    at = models.DateTimeField(default=timezone.now)
    # When the purge job made the deleted text unreadable on disk too (null until it has run).
    purged_at = models.DateTimeField(null=True, blank=True)
