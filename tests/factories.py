"""Test data: three named actors (alice and bob in Acme, charlie in Globex) and small builders."""

from __future__ import annotations

from datetime import UTC, datetime

from memoryapp.actors import ActorRef
from memoryapp.models import Organization
from memoryapp.services.ingest import MessageIn, episodes_ingest
from memoryapp.services.tenancy import agent_create, user_create

PASSWORD = "correct-horse-battery"


def org(name: str) -> Organization:
    return Organization.objects.get_or_create(name=name)[0]


def make_user(organization: Organization, external_id: str, *, admin: bool = False):
    return user_create(
        organization=organization,
        external_id=external_id,
        username=f"{external_id}@{organization.name}".lower(),
        password=PASSWORD,
        is_org_admin=admin,
    )


def make_agent(organization: Organization, name: str = "bot", permissions=("read", "write", "delete"), **limits):
    return agent_create(organization=organization, name=name, permissions=permissions, **limits)


def at(text: str) -> datetime:
    """'2025-03-10' or '2025-03-10T09:00' as an aware UTC datetime."""
    value = datetime.fromisoformat(text)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def say(user, content: str, *, when: str | None = None, session: str = "", source: str = "user"):
    """Ingest one message from the user (or another source) and return its episode (embedded, as
    ingest stores it)."""
    result = episodes_ingest(
        organization=user.organization,
        user=user,
        session=session,
        actor=ActorRef("agent", "test"),
        messages=[MessageIn(source=source, content=content, occurred_at=at(when) if when else None)],
    )
    return result.episodes[0] if result.episodes else None


def tell(user, content: str, when: str, session: str):
    """Say one message and extract it at once, as a worker would; returns the operations."""
    from memoryapp.services.extraction import episodes_extract

    episode = say(user, content, when=when, session=session)
    return episodes_extract(episode_ids=[episode.id], actor=ActorRef.for_job("test"))


def told_in_turn(user, first: str, then: str) -> list[str]:
    """The user says `first`, six weeks later `then`: the texts of what holds now."""
    tell(user, first, "2025-02-01", "first")
    tell(user, then, "2025-03-15", "later")
    return current_texts(user)


def holds(texts: list[str], *words: str) -> bool:
    """Whether one of the texts mentions all the words (evaluation.write_corpus.mentions)."""
    from memoryapp.evaluation.write_corpus import mentions

    return any(mentions(text, words) for text in texts)


def current_texts(user) -> list[str]:
    """The texts of the user's memories that hold now."""
    from memoryapp.models import Memory
    from memoryapp.selectors.scoping import valid_at

    return list(valid_at(Memory.objects.filter(user=user)).values_list("text", flat=True))


def make_memory(user, text: str, *, embedding=None, **fields):
    """A memory written directly (no judge), for read-path tests; real vectors unless one is given (then
    searched by it too)."""
    from memoryapp import embeddings
    from memoryapp.models import Memory
    from memoryapp.selectors.questions import search_vector

    fields.setdefault("scope", Memory.Scope.USER)
    if embedding is None:
        embedding = embeddings.encode_one(text)
        fields.setdefault("search_embedding", search_vector(text, fields.get("attribute", ""), user,
                                                            subject=fields.get("subject", "")))
    return Memory.objects.create(organization=user.organization, user=user, text=text, embedding=embedding, **fields)
