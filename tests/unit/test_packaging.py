"""What pyproject.toml puts into the wheel: every package of the checkout by name, and the
top-level templates/ and static/ under callcenter/, where the settings look for them when
installed (tests/integration/test_wheel_install.py builds and installs the wheel)."""

import tomllib
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_the_wheel_lists_every_package_of_the_checkout():
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("callcenter", "queues_app")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert set(SETUPTOOLS["packages"]) == found | {"callcenter.templates", "callcenter.static"}


def test_templates_and_static_files_go_under_callcenter_in_the_wheel():
    assert SETUPTOOLS["package-dir"] == {"callcenter.templates": "templates", "callcenter.static": "static"}
    assert SETUPTOOLS["package-data"] == {
        "callcenter.templates": ["**/*"],
        "callcenter.static": ["**/*"],
        "queues_app.simulation": ["days/*.json"],  # the days `simulate_day` plays
    }


def test_from_a_checkout_the_settings_read_its_templates_static_files_and_var():
    assert not settings.INSTALLED
    assert settings.BASE_DIR == ROOT
    assert settings.TEMPLATES[0]["DIRS"] == [ROOT / "templates"]
    assert settings.STATICFILES_DIRS == [ROOT / "static"]
