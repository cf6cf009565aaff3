from django.core.management.base import BaseCommand

from memoryapp.management.arguments import named_user
from memoryapp.services.tenancy import user_display_name_set


class Command(BaseCommand):
    help = ("Set how new memory texts name a user (\"Maria lives in Madrid.\") when they have not said their "
            "name themselves; an empty name goes back to their id when it reads as a name, else \"the user\".")

    def add_arguments(self, parser):
        parser.add_argument("--org", required=True, help="organization name")
        parser.add_argument("--user", required=True, help="the user's id as agents name them")
        parser.add_argument("--name", required=True, help='the display name, or "" to clear it')

    def handle(self, *args, org, user, name, **options):
        target = named_user(org, user)
        user_display_name_set(user=target, display_name=name)
        shown = target.first_name or "their id or \"the user\""
        self.stdout.write(f"new memories about {user} name them {shown}; memories already written keep their text")
