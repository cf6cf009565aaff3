"""How memory texts call a user: the name they gave themselves, else the one an admin set, else their
external id when it reads as a name, else "the user". Read by the write path (new memory texts) and
the read path (questions asked in the first person)."""

from __future__ import annotations

from collections.abc import Iterable
from uuid import UUID

from memoryapp.models import Memory, User
from memoryapp.services.extract.grammar import THE_USER, readable_name


def user_display_name(user: User) -> str:
    """How new memory texts call the user. What they said about themselves wins ("my name is Maria":
    they know best, and it is what they will be called in conversation), then the display name an
    admin set (services.tenancy.user_display_name_set, kept in `first_name`), then the external id when
    it reads as a name ("sam" -> "Sam"), else "the user": an email address or an opaque id
    ("usr_7f3a9c21") is an account key, never a name. Memories already written keep their text."""
    return users_display_names([user])[user.pk]


def users_display_names(users: Iterable[User]) -> dict[UUID, str]:
    """user_display_name of each user, in one query."""
    users = list(users)
    stated: dict[UUID, str] = {}
    if users:
        names = Memory.objects.filter(
            organization_id__in={user.organization_id for user in users},
            user__in=users,
            attribute="name",
            status=Memory.Status.ACTIVE,
            provenance__in=[Memory.Provenance.USER_STATED, Memory.Provenance.USER_CORRECTED],
        ).order_by("valid_from")
        subjects = {user.pk: user.external_id.lower() for user in users}
        for user_id, subject, value in names.values_list("user_id", "subject", "value"):
            if subject == subjects[user_id]:  # the user's own name, not their sister's
                stated[user_id] = value
    return {
        user.pk: stated.get(user.pk) or user.first_name.strip() or readable_name(user.external_id) or THE_USER
        for user in users
    }
