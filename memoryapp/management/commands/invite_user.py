from django.core.management.base import BaseCommand, CommandError

from memoryapp.management.arguments import named_user
from memoryapp.services.tenancy import user_invite


class Command(BaseCommand):
    help = "Give a user an agent created (no login yet) a login name and a one-time password, printed once."

    def add_arguments(self, parser):
        parser.add_argument("--org", required=True, help="organization name")
        parser.add_argument("--user", required=True, help="the user's id as agents name them")
        parser.add_argument("--username", required=True, help="the login name to give them")

    def handle(self, *args, org, user, username, **options):
        target = named_user(org, user)
        try:
            password = user_invite(user=target, username=username)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{username} can now log in with the one-time password {password} (shown once: at first "
                          "login they must choose their own, and this one stops working)")
