import json

from django.core.management.base import BaseCommand, CommandError

from memoryapp.jobs import COMMAND, job_execute
from memoryapp.models import Organization
from memoryapp.services.jobs import job_create


class Command(BaseCommand):
    help = "Run a background job now, in this process, and print what it did."

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=[str(kind) for kind in COMMAND],
                            help="; ".join(f"{kind}: {kind.label}" for kind in COMMAND))
        parser.add_argument("--org", help="only this organization (default: all)")

    def handle(self, *args, kind, org, **options):
        organization = None
        if org:
            organization = Organization.objects.filter(name=org).first()
            if organization is None:
                raise CommandError(f"no organization named {org!r}")
        job = job_create(kind=kind, organization=organization, params={"trigger": "command"})
        result = job_execute(job)
        self.stdout.write(json.dumps({"job": str(job.id), "kind": kind, "result": result}, indent=2))
