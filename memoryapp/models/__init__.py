from memoryapp.models.episodes import EMBEDDING_DIM, Episode
from memoryapp.models.events import AccessLog, Actor, DeletionReceipt, Job, MemoryEvent
from memoryapp.models.memories import Memory, MemoryDerivation, MemorySource
from memoryapp.models.tenancy import Agent, AgentBlock, Organization, Project, User

__all__ = [
    "EMBEDDING_DIM",
    "AccessLog",
    "Actor",
    "Agent",
    "AgentBlock",
    "DeletionReceipt",
    "Episode",
    "Job",
    "Memory",
    "MemoryDerivation",
    "MemoryEvent",
    "MemorySource",
    "Organization",
    "Project",
    "User",
]
