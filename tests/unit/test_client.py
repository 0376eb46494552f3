"""The client: built lazily from settings, injectable, retries in adaptive mode."""

from queues_app.ddb import meter
from queues_app.ddb.client import Dynamo, default, reset_default


def test_default_client_follows_settings(settings):
    settings.DYNAMODB_ENDPOINT_URL = "http://127.0.0.1:9"
    settings.DYNAMODB_TABLE_PREFIX = "acme-"
    settings.AWS_REGION = "eu-west-1"
    reset_default()
    db = default()
    assert db.endpoint == "http://127.0.0.1:9"
    assert db.table("callcenter") == "acme-callcenter"
    client = db.client
    assert client.meta.region_name == "eu-west-1"
    assert client.meta.endpoint_url == "http://127.0.0.1:9"
    config = client.meta.config
    assert config.retries["mode"] == "adaptive"
    assert config.connect_timeout == settings.DYNAMODB_CONNECT_TIMEOUT
    assert config.read_timeout == settings.DYNAMODB_READ_TIMEOUT


def test_changing_a_setting_rebuilds_the_default(settings):
    first = default()
    settings.DYNAMODB_TABLE_PREFIX = "other-"
    assert default() is not first
    assert default().table("callcenter") == "other-callcenter"


def test_empty_endpoint_means_real_aws(settings):
    settings.DYNAMODB_ENDPOINT_URL = None
    settings.AWS_REGION = "us-west-2"
    assert default().endpoint == "AWS DynamoDB (us-west-2)"


def test_injected_client_is_used_and_metered():
    class FakeEvents:
        def __init__(self):
            self.registered = []

        def register(self, name, handler):
            self.registered.append(name)

    class FakeMeta:
        events = FakeEvents()

    class FakeClient:
        meta = FakeMeta()

    client = FakeClient()
    db = Dynamo(client, prefix="x-")
    assert db.client is client
    assert "after-call.dynamodb" in client.meta.events.registered
    meter.install(client)  # installing twice registers nothing more
    assert client.meta.events.registered.count("after-call.dynamodb") == 1
