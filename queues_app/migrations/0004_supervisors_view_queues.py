"""Supervisors see the DynamoDB entries in the admin (when they are also staff)."""

from django.db import migrations


def grant(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    # Permissions are normally made after migrations run; make this one now.
    content_type, _ = ContentType.objects.get_or_create(app_label="queues_app", model="agententry")
    permission, _ = Permission.objects.get_or_create(
        codename="view_queues",
        content_type=content_type,
        defaults={"name": "Can see queues, agents, shipments and tasks in the admin"},
    )
    group, _ = Group.objects.get_or_create(name="supervisors")
    group.permissions.add(permission)


class Migration(migrations.Migration):
    dependencies = [
        ("queues_app", "0003_dynamo_admin_entries"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
