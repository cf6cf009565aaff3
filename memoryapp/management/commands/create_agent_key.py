from django.core.management.base import BaseCommand, CommandError

from memoryapp.models import Agent
from memoryapp.services.tenancy import agent_create, organization_get_or_create


class Command(BaseCommand):
    help = "Create an agent API key and print only the key (creates the organization if needed)."

    def add_arguments(self, parser):
        parser.add_argument("--org", required=True, help="organization name")
        parser.add_argument("--name", required=True, help="agent name, unique in the organization")
        parser.add_argument("--permissions", default="read", help="comma-separated: read,write,delete")

    def handle(self, *args, org, name, permissions, **options):
        wanted = [p.strip() for p in permissions.split(",") if p.strip()]
        unknown = set(wanted) - set(Agent.Permission.values)
        if not wanted or unknown:
            raise CommandError(f"--permissions takes read, write and/or delete, not {sorted(unknown) or 'nothing'}")
        organization = organization_get_or_create(name=org)
        if organization.agents.filter(name=name).exists():
            raise CommandError(f"an agent named {name!r} already exists in {org!r}")
        _, key = agent_create(organization=organization, name=name, permissions=wanted)
        self.stdout.write(key)
