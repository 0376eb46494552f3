from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from queues_app.models import ApiToken
from queues_app.roles import can_act


class Command(BaseCommand):
    help = (
        "Create a JSON API token acting as USERNAME and print it once (only its hash is stored). "
        "A supervisor's token may change queues; a viewer's token may only read."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="api", help='what uses the token, e.g. "phone system"')

    def handle(self, username, name, **options):
        User = get_user_model()
        try:
            user = User.objects.get(username=username)
        except User.DoesNotExist as exc:
            raise CommandError(f"No user named {username!r}.") from exc
        if not user.is_active:
            raise CommandError(f"User {username!r} is inactive; its tokens would be refused.")
        name = name.strip()
        if not name:
            raise CommandError("--name may not be blank.")
        _token, raw = ApiToken.issue(user, name)
        self.stderr.write(
            f"Created API token {name!r} for {username} "
            f"({'may act' if can_act(user) else 'read only'}). It is shown once; store it now:"
        )
        self.stdout.write(raw)
        self.stderr.write("Use it as the header: Authorization: Bearer <token>. Revoke it in the admin.")
