import hashlib
import secrets
import uuid

from django.contrib.auth.models import AbstractUser
from django.db import models
from django.utils import timezone


class Organization(models.Model):
    """The tenant boundary: every row of every table carries one."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=120, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.name


class User(AbstractUser):
    """An end user (or organization admin) of one organization.

    `username` is the global login name; `external_id` is how agents name the user inside the
    organization (agents may name users that have no login yet).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="users", null=True)
    external_id = models.CharField(max_length=150)
    is_org_admin = models.BooleanField(default=False)
    memory_paused = models.BooleanField(default=False, help_text="When on, nothing new is remembered.")
    # Its own switch: a user may keep remembering while no agent reads (or the reverse).
    agents_reading_paused = models.BooleanField(default=False, help_text="When on, no agent reads their memories.")
    # An invited user logs in with a one-time password and must choose their own first.
    must_change_password = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "external_id"], name="%(app_label)s_%(class)s_external_id_unique_in_org"
            )
        ]

    def __str__(self) -> str:
        return self.external_id or self.username


class Project(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="projects")
    name = models.CharField(max_length=120)
    members = models.ManyToManyField(User, related_name="projects", blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="%(app_label)s_%(class)s_name_unique_in_org")
        ]

    def __str__(self) -> str:
        return self.name


class AgentQuerySet(models.QuerySet):
    def for_api_key(self, raw_key: str) -> "Agent | None":
        """The usable agent holding this key, or None (unknown, revoked or disabled)."""
        prefix = Agent.key_prefix_of(raw_key)
        if prefix is None:
            return None
        agent = self.filter(key_prefix=prefix, revoked_at__isnull=True).select_related("organization").first()
        if agent is None or not secrets.compare_digest(agent.key_hash, Agent.hash_key(raw_key)):
            return None
        return agent


class Agent(models.Model):
    """An LLM agent of one organization, authenticating with an API key stored hashed."""

    class Permission(models.TextChoices):
        READ = "read"
        WRITE = "write"
        DELETE = "delete"

    KEY_PREFIX = "mk_"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="agents")
    name = models.CharField(max_length=120)
    key_prefix = models.CharField(max_length=16, unique=True)
    # SHA-256 is enough here: keys are 32 random bytes, not guessable passwords.
    key_hash = models.CharField(max_length=64)
    can_read = models.BooleanField(default=True)
    can_write = models.BooleanField(default=False)
    can_delete = models.BooleanField(default=False)
    allowed_users = models.ManyToManyField(User, blank=True, related_name="+")
    allowed_projects = models.ManyToManyField(Project, blank=True, related_name="+")
    is_active = models.BooleanField(default=True, help_text="An admin can disable an agent; its key then gets 403.")
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    objects = AgentQuerySet.as_manager()

    # DRF treats the authenticated agent as `request.user`.
    is_authenticated = True
    is_anonymous = False

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="%(app_label)s_%(class)s_name_unique_in_org")
        ]

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def hash_key(raw_key: str) -> str:
        return hashlib.sha256(raw_key.encode()).hexdigest()

    @classmethod
    def key_prefix_of(cls, raw_key: str) -> str | None:
        if not raw_key.startswith(cls.KEY_PREFIX) or raw_key.count("_") < 2:
            return None
        return raw_key.split("_")[1]

    @classmethod
    def new_key(cls) -> tuple[str, str]:
        """A fresh (raw key, prefix); the raw key is shown once and never stored."""
        prefix = secrets.token_hex(6)
        return f"{cls.KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}", prefix

    @property
    def permissions(self) -> list[str]:
        return [p for p, on in (("read", self.can_read), ("write", self.can_write), ("delete", self.can_delete)) if on]


class AgentBlock(models.Model):
    """One user refusing one agent: it neither reads nor writes their memories (OpenMemory's per-app pause)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="agent_blocks")
    agent = models.ForeignKey("Agent", on_delete=models.CASCADE, related_name="blocks")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "agent"], name="%(app_label)s_%(class)s_once")]
