"""Who acts: the `Principal` a read or write is scoped to, and the `ActorRef` every event and access
log names. The ground floor: models below it, everything else above."""

from __future__ import annotations

from dataclasses import dataclass

from memoryapp.models import Actor, Agent, User


@dataclass(frozen=True)
class ActorRef:
    type: str
    id: str

    @classmethod
    def for_agent(cls, agent: Agent) -> ActorRef:
        return cls(Actor.AGENT, str(agent.id))

    @classmethod
    def for_user(cls, user: User) -> ActorRef:
        return cls(Actor.ADMIN if user.is_org_admin else Actor.USER, str(user.id))

    @classmethod
    def for_job(cls, name: str) -> ActorRef:
        return cls(Actor.JOB, name)


SYSTEM = ActorRef(Actor.SYSTEM, "system")


@dataclass(frozen=True)
class Principal:
    organization_id: object
    agent: Agent | None = None
    user: User | None = None
    job: str = ""  # a background job reading a whole organization (evaluation runs)

    @classmethod
    def for_agent(cls, agent: Agent) -> Principal:
        return cls(organization_id=agent.organization_id, agent=agent)

    @classmethod
    def for_user(cls, user: User) -> Principal:
        return cls(organization_id=user.organization_id, user=user)

    @classmethod
    def for_job(cls, organization_id, name: str) -> Principal:
        return cls(organization_id=organization_id, job=name)

    @property
    def is_admin(self) -> bool:
        return bool(self.job) or (self.user is not None and self.user.is_org_admin)

    @property
    def is_restricted(self) -> bool:
        """An end user, or an agent key limited to some users or projects: it acts for those users
        only, so it never writes org-wide and never reaches into projects they are not members of."""
        if self.agent is not None:
            return self.agent.allowed_users.exists() or self.agent.allowed_projects.exists()
        return not self.is_admin

    @property
    def actor(self) -> ActorRef:
        if self.job:
            return ActorRef.for_job(self.job)
        return ActorRef.for_agent(self.agent) if self.agent else ActorRef.for_user(self.user)
