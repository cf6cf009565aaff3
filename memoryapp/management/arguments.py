"""What the management commands' --org and --user name, looked up once for all of them."""

from django.core.management.base import CommandError

from memoryapp.models import User


def named_user(org: str, external_id: str) -> User:
    """The user agents call `external_id` in the organization named `org`, or a CommandError naming both."""
    user = User.objects.filter(organization__name=org, external_id=external_id).first()
    if user is None:
        raise CommandError(f"no user {external_id!r} in organization {org!r}")
    return user


