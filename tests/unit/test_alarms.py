"""/alarms.json: the alarms the overview shows, worded as it words them, for the pages'
background check."""

import pytest
from django.urls import reverse

from queues_app.centre.call_center import CallCenter
from queues_app.ddb.local import free_port
from queues_app.shipments.queue import ShipmentQueue


@pytest.fixture
def dead_letter(moto_db):
    shipments = ShipmentQueue()
    dead = shipments.create({"destination": "Oslo"}, ready=True)
    shipments.enqueue(dead.shipment_id)
    shipments.send_to_dlq(dead.shipment_id, "address unknown")
    return dead


def test_nothing_wrong_is_no_alarm(viewer_client, moto_db):
    response = viewer_client.get(reverse("alarms"))
    assert response.status_code == 200
    assert response.json() == {"count": 0, "alarms": []}


def test_a_viewer_reads_the_alarms_as_the_overview_words_them(viewer_client, dead_letter):
    answer = viewer_client.get(reverse("alarms")).json()
    assert answer == {
        "count": 1,
        "alarms": [{"key": "live-dlq", "panel": "Shipments", "text": "1 in the dead-letter queue"}],
    }
    overview = viewer_client.get(reverse("home")).content.decode()
    assert 'data-alarm="live-dlq"><span aria-hidden="true">⚠</span> 1 in the dead-letter queue' in overview


def test_every_panels_alarms_are_counted(viewer_client, dead_letter, settings):
    settings.SWITCHBOARD_ALARMS = {
        "oldest_age_seconds": {**settings.SWITCHBOARD_ALARMS["oldest_age_seconds"], "calls": 0}
    }
    CallCenter().create_call({"language": "French", "gender": "X"})
    answer = viewer_client.get(reverse("alarms")).json()
    assert answer["count"] == 2
    assert [a["key"] for a in answer["alarms"]] == ["calls-age", "live-dlq"]
    assert answer["alarms"][0]["panel"] == "Calls and agents"
    assert answer["alarms"][0]["text"].startswith("oldest item waited ")


def test_it_requires_signing_in(client, moto_db):
    response = client.get(reverse("alarms"))
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_unreachable_dynamodb_is_a_json_503_not_zero_alarms(viewer_client, settings):
    settings.DYNAMODB_ENDPOINT_URL = f"http://127.0.0.1:{free_port()}"
    settings.DYNAMODB_MAX_ATTEMPTS = 1
    settings.DYNAMODB_CONNECT_TIMEOUT = 0.5
    response = viewer_client.get(reverse("alarms"), HTTP_ACCEPT="application/json")
    assert response.status_code == 503
    assert response.json()["error"] == "DynamoDB unavailable"
