"""/healthz and /readyz: no login, no CSRF, GET and HEAD only; /readyz asks DynamoDB once."""

import pytest
from django.test import Client

from queues_app.ddb import meter
from queues_app.ddb.client import reset_default
from queues_app.ddb.local import free_port
from queues_app.ddb.tables import TABLES
from queues_app.views import health


@pytest.fixture(autouse=True)
def no_kept_answers():
    health.forget()
    yield
    health.forget()


def test_healthz_answers_without_login_or_dynamodb(client, settings):
    # Nothing answers at this endpoint: /healthz must not care.
    settings.DYNAMODB_ENDPOINT_URL = f"http://127.0.0.1:{free_port()}"
    with meter.measure() as requests:
        response = client.get("/healthz")
        head = client.head("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert head.status_code == 200
    assert response["Cache-Control"] == "no-store"
    assert requests.calls == 0


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_only_get_and_head_and_no_csrf_token_needed(path, moto_db):
    client = Client(enforce_csrf_checks=True)
    assert client.post(path).status_code == 405
    assert client.put(path).status_code == 405
    assert client.delete(path).status_code == 405


def test_readyz_with_every_table_costs_one_request_per_table_then_none_for_a_while(client, moto_db, monkeypatch):
    # "A while" is long here, so that a slow machine still answers the second probe from
    # the kept answer (3 s in production).
    monkeypatch.setattr(health, "READY_CACHE_SECONDS", 60.0)
    with meter.measure() as requests:
        response = client.get("/readyz")
        again = client.head("/readyz")
    assert response.status_code == 200, response.content
    assert response.json() == {"status": "ok", "tables": [moto_db.table(name) for name in TABLES], "workers": []}
    assert again.status_code == 200
    # One DescribeTable per table, and one Query of the workers' heartbeats.
    assert requests.calls == len(TABLES) + 1 and requests.calls_of("DescribeTable") == len(TABLES)
    assert requests.calls_of("Query") == 1


def test_readyz_asks_again_once_its_kept_answer_is_older_than_a_while(client, moto_db, monkeypatch):
    monkeypatch.setattr(health, "READY_CACHE_SECONDS", 0.0)
    assert client.get("/readyz").status_code == 200
    with meter.measure() as requests:
        assert client.get("/readyz").status_code == 200
    assert requests.calls == len(TABLES) + 1


def test_readyz_names_a_missing_table(client, moto_db):
    moto_db.call("delete_table", TableName=moto_db.table("audit"))
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    body = response.json()
    assert body == {"status": "unavailable", "reason": "tables missing or not active", "missing": ["test-audit"]}


def test_readyz_without_tables_names_them_all(client, moto_empty):
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["missing"] == [moto_empty.table(name) for name in TABLES]
    # Once the tables are there (and the kept answer has expired), ready.
    from queues_app.ddb import schema

    schema.create_tables(moto_empty)
    health.forget()
    assert client.get("/readyz").status_code == 200


def test_readyz_when_dynamodb_does_not_answer(client, settings, aws_credentials):
    endpoint = f"http://127.0.0.1:{free_port()}"
    settings.DYNAMODB_ENDPOINT_URL = endpoint
    settings.DYNAMODB_CONNECT_TIMEOUT = 0.2
    settings.DYNAMODB_MAX_ATTEMPTS = 1
    reset_default()
    try:
        response = client.get("/readyz")
    finally:
        reset_default()
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json() == {"status": "unavailable", "reason": "DynamoDB does not answer"}
    body = response.content.decode()
    assert "127.0.0.1" not in body and str(endpoint) not in body and "arn:" not in body


def test_health_checks_are_not_redirected_to_https(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/healthz").status_code == 200
    assert client.get("/login/").status_code == 301
