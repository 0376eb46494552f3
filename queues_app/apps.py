from django.apps import AppConfig


class QueuesAppConfig(AppConfig):
    name = "queues_app"
    verbose_name = "Switchboard queues"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.conf import settings

        from queues_app.calls.store import first_answers
        from queues_app.figures import counters, tally

        # A process's flush counts the call facts its own changes wrote; an ended call's
        # handle time is counted from its record.
        counters.tally_facts_with(tally.count_expected)
        counters.recorder.period = settings.SWITCHBOARD_FLUSH_SECONDS
        tally.read_answers_with(first_answers)
