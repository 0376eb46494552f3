"""What the moto fuzz leaves out, on DynamoDB Local: a cursor one list handed out, sent
to another list (or to the same list with another filter). The signature is ours, so
only DynamoDB can tell: it refuses the start key, and the page says so (400). moto fails
on such a key with a TypeError of its own, which is why test_page_fuzz.py gives each
page only its own cursors and forged ones.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.helpers.page_fuzz import page_world

LIST_PAGES = [
    "/agents/",
    "/agents/?status=queued",
    "/agents/?status=offline",
    "/calls/",
    "/shipments/",
    "/shipments/?view=in_flight",
    "/shipments/?view=delayed",
    "/shipments/?view=dlq",
    "/tasks/",
    "/tasks/?view=FAILURE",
    "/audit/",
    "/audit/?target=agent:nobody",
]
# The list each cursor of the world was made on.
OWN_PAGE = {
    "agents": "/agents/",
    "calls": "/calls/",
    "queue": "/shipments/",
    "dlq": "/shipments/?view=dlq",
    "tasks": "/tasks/",
    "audit": "/audit/",
}


@pytest.fixture
def world(local_db):
    """The fuzz's world, built on DynamoDB Local."""
    return page_world()


def test_a_cursor_of_another_list_is_refused_never_a_server_error(fuzz_client, world):
    statuses = {}
    for name, cursor in world["cursors"].items():
        for page in LIST_PAGES:
            url = page + ("&" if "?" in page else "?") + "cursor=" + quote(cursor, safe="")
            response = fuzz_client.get(url)
            body = response.content.decode()
            assert response.status_code < 500, (name, page, response.status_code)
            assert "Traceback" not in body
            statuses[name, page] = response.status_code
    for name, page in OWN_PAGE.items():
        assert statuses[name, page] == 200, name  # a list's own cursor still pages
    assert sum(status == 400 for status in statuses.values()) > len(statuses) // 2
