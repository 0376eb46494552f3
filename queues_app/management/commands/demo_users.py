from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import CommandError
from django.db import DatabaseError

from queues_app.http.roles import SUPERVISORS, VIEWERS
from queues_app.management.arguments import CheckedCommand

DEMO_USERS = (
    # username, password, group, staff
    ("supervisor", "switchboard-supervisor", SUPERVISORS, True),
    ("viewer", "switchboard-viewer", VIEWERS, False),
)


class Command(CheckedCommand):
    help = "Create the demo supervisor and the demo read-only viewer if they do not exist, and print their logins."

    def handle(self, **options):
        try:
            self._create()
        except DatabaseError as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise CommandError(f"The database is not ready ({reason}); run `python manage.py migrate` first.") from exc

    def _create(self):
        User = get_user_model()
        for username, password, group_name, staff in DEMO_USERS:
            group, _ = Group.objects.get_or_create(name=group_name)
            user, created = User.objects.get_or_create(username=username, defaults={"is_staff": staff})
            if created:
                user.set_password(password)
                user.save()
                user.groups.add(group)
                self.stdout.write(self.style.SUCCESS(f"Created {group_name[:-1]} login: {username} / {password}"))
            else:
                self.stdout.write(
                    f"Demo {group_name[:-1]} login: {username} (exists; password unchanged, demo default {password})"
                )
