from django.apps import AppConfig


class QueuesAppConfig(AppConfig):
    name = "queues_app"
    verbose_name = "Switchboard queues"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from queues_app.monitoring import counters, tally

        # A process's flush counts the call facts its own changes wrote.
        counters.tally_facts_with(tally.count_expected)
