"""Fixtures of the unit tests (on moto) that more than one module uses."""

from types import SimpleNamespace

import pytest

from queues_app.models import ApiToken
from tests.helpers.api import Api
from tests.helpers.clock import Moments

# --- the JSON API -------------------------------------------------------------------


@pytest.fixture
def supervisor_token(supervisor):
    return ApiToken.issue(supervisor, "phone system")[1]


@pytest.fixture
def viewer_token(viewer):
    return ApiToken.issue(viewer, "wallboard")[1]


@pytest.fixture
def api(supervisor_token):
    """A phone system's client, with a supervisor's token."""
    return Api(supervisor_token)


@pytest.fixture
def viewer_api(viewer_token):
    return Api(viewer_token)


# --- time -------------------------------------------------------------------------------


@pytest.fixture
def moments(monkeypatch):
    """The clock of the contention gauge and of the claims: however slow the machine, no
    time passes between two lines of a test unless it says so."""
    from queues_app.ddb import contention
    from queues_app.routing import claims

    clock = Moments()
    for module in (contention, claims):
        monkeypatch.setattr(module, "time", SimpleNamespace(monotonic=clock.monotonic))
    return clock
