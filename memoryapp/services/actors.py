"""Who performs an operation: every event and access log names its actor."""

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
