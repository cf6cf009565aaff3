"""The demo organization that `make run` seeds on first start."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from memoryapp.models import Organization
from memoryapp.services.tenancy import agent_create, generate_password, user_create

DEMO_ORGANIZATION = "Demo"


@dataclass(frozen=True)
class DemoCredentials:
    user: str
    admin: str
    password: str
    agent_key: str


@transaction.atomic
def demo_seed(*, password: str | None = None) -> DemoCredentials | None:
    """Create the demo organization once; returns the credentials only when it was just created."""
    if Organization.objects.filter(name=DEMO_ORGANIZATION).exists():
        return None
    organization = Organization.objects.create(name=DEMO_ORGANIZATION)
    password = password or generate_password()
    user_create(organization=organization, external_id="sam", username="sam", password=password)
    user_create(organization=organization, external_id="admin", username="admin", password=password, is_org_admin=True)
    _, key = agent_create(organization=organization, name="demo-agent", permissions=["read", "write", "delete"])
    return DemoCredentials(user="sam", admin="admin", password=password, agent_key=key)
