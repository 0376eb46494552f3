"""The people of the tests (the fixtures `supervisor`, `viewer` and `staff` in
tests/conftest.py make them)."""

PASSWORD = "correct-horse-battery"


def make_user(django_user_model, username, group=None, **extra):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username=username, password=PASSWORD, **extra)
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user
