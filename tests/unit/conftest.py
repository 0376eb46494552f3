"""Fixtures of the unit tests (on moto) that more than one module uses."""

import pytest

from queues_app.models import ApiToken
from tests.helpers.api import Api

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
