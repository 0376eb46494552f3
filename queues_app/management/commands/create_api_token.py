from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from queues_app.http.roles import can_act
from queues_app.models import ApiToken


class Command(BaseCommand):
    help = (
        "Create a JSON API token acting as USERNAME and print it once (only its hash is stored). "
        "A supervisor's token may change queues; a viewer's token may only read. "
        "With --expires-in-days the token is refused after that many days."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="api", help='what uses the token, e.g. "phone system"')
        parser.add_argument(
            "--expires-in-days",
            type=int,
            default=None,
            metavar="DAYS",
            help="refuse the token after this many days (default: it never expires; revoke it in the admin)",
        )

    def handle(self, username, name, expires_in_days=None, **options):
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
        expires_at = None
        if expires_in_days is not None:
            if not 1 <= expires_in_days <= 3650:
                raise CommandError("--expires-in-days must be a whole number of days from 1 to 3650.")
            expires_at = timezone.now() + timedelta(days=expires_in_days)
        token, raw = ApiToken.issue(user, name, expires_at=expires_at)
        lifetime = f"expires {token.expires_at:%Y-%m-%d %H:%M} UTC" if token.expires_at else "does not expire"
        self.stderr.write(
            f"Created API token {name!r} ({token.prefix}) for {username} "
            f"({'may act' if can_act(user) else 'read only'}; {lifetime}). It is shown once; store it now:"
        )
        self.stdout.write(raw)
        self.stderr.write("Use it as the header: Authorization: Bearer <token>. Revoke it in the admin.")
