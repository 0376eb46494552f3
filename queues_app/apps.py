from django.apps import AppConfig


class QueuesAppConfig(AppConfig):
    name = "queues_app"
    verbose_name = "Switchboard queues"
    default_auto_field = "django.db.models.BigAutoField"
