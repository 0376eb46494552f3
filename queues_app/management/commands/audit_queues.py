"""The earlier name of `check_invariants`, kept for one release: scripts and cron jobs that
still call it keep working, and are told the new name."""

from queues_app.management.commands.check_invariants import Command as CheckInvariants


class Command(CheckInvariants):
    help = "The earlier name of check_invariants (kept for one release): " + CheckInvariants.help

    def handle(self, *args, **options):
        self.stderr.write("audit_queues is now check_invariants; the old name goes in the next release.")
        return super().handle(*args, **options)
