"""Faker, for the demo commands' names and addresses (seed_demo, demo_load) only: it is
the `demo` extra, not a dependency of a deployment."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.management.base import CommandError

if TYPE_CHECKING:
    from faker import Faker

MISSING = "The demo commands need Faker: pip install 'switchboard[demo]' (make run and make demo install it)."


def seeded_faker(seed: int | None) -> Faker:
    try:
        from faker import Faker
    except ImportError as exc:
        raise CommandError(MISSING) from exc
    fake = Faker()
    fake.seed_instance(seed)
    return fake
