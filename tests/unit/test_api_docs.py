"""The API's OpenAPI document and its documentation page: served under /api/ to logged-in
people (and the document to tokens), complete, and with nothing loaded from elsewhere."""

import re

import pytest
from django.test import Client

from queues_app.models import ApiToken
from tests.helpers.api import OPERATIONS, Api, assert_problem


@pytest.fixture
def spec(supervisor_client):
    response = supervisor_client.get("/api/openapi.json")
    assert response.status_code == 200
    return response.json()


def operations(spec):
    return {(method, path): op for path, methods in spec["paths"].items() for method, op in methods.items()}


def test_the_document_is_openapi_3_1_with_every_operation(spec):
    assert spec["openapi"].startswith("3.1")
    assert set(operations(spec)) == OPERATIONS


def test_every_operation_needs_the_bearer_token(spec):
    assert spec["components"]["securitySchemes"]["BearerToken"] == {
        "type": "http",
        "scheme": "bearer",
        "description": spec["components"]["securitySchemes"]["BearerToken"]["description"],
    }
    assert all(op["security"] == [{"BearerToken": []}] for op in operations(spec).values())


def test_every_operation_documents_its_refusals(spec):
    for (method, path), op in operations(spec).items():
        statuses = set(op["responses"])
        assert {"401", "503"} <= statuses, (method, path)
        assert op["responses"]["401"]["headers"]["WWW-Authenticate"]["required"]
        assert op["responses"]["503"]["headers"]["Retry-After"]["required"]
        if method == "post":
            assert {"400", "403", "413", "415"} <= statuses, path
        if "{" in path:
            assert {"400", "404"} <= statuses, path
        for status, answer in op["responses"].items():
            assert answer["description"]
            schema = answer["content"]["application/json"]["schema"]["$ref"]
            assert schema.endswith("/Problem") == (int(status) >= 400), (path, status)


def test_creating_documents_backpressure_idempotency_and_the_location(spec):
    for path in ("/api/calls", "/api/shipments"):
        op = operations(spec)[("post", path)]
        assert {"200", "201", "429"} <= set(op["responses"])
        assert "Retry-After" in op["responses"]["429"]["headers"]
        assert "Location" in op["responses"]["201"]["headers"]
        assert "Idempotent-Replayed" in op["responses"]["200"]["headers"]
        header = next(p for p in op["parameters"] if p["name"] == "Idempotency-Key")
        assert header["in"] == "header" and not header["required"]


def test_the_bodies_refuse_unknown_fields_and_say_their_limits(spec):
    schemas = spec["components"]["schemas"]
    for name in ("CallIn", "ShipmentIn", "ReleaseIn", "NothingIn"):
        assert schemas[name]["additionalProperties"] is False, name
    assert schemas["CallIn"]["required"] == ["preferences"]
    assert schemas["CallIn"]["properties"]["priority"]["minimum"] == 0
    assert schemas["CallIn"]["properties"]["priority"]["maximum"] == 9
    assert schemas["ShipmentIn"]["properties"]["delay_seconds"]["maximum"] == 900
    assert set(schemas["Problem"]["required"]) == {"error", "message"}


def test_a_token_may_read_the_document(moto_db, supervisor):
    raw = ApiToken.issue(supervisor, "generator")[1]
    response = Api(raw).get("/api/openapi.json")
    assert response.status_code == 200
    assert response.json()["info"]["title"] == "Switchboard API"


def test_the_document_is_not_for_strangers(db):
    assert_problem(Client().get("/api/openapi.json"), 401, "Authentication required")
    assert_problem(Api("not-a-token").get("/api/openapi.json"), 401)


def test_a_viewer_may_read_the_docs(viewer_client):
    assert viewer_client.get("/api/docs").status_code == 200
    assert viewer_client.get("/api/openapi.json").status_code == 200


def test_the_docs_page_needs_a_login(db):
    response = Client().get("/api/docs")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_the_docs_page_lists_every_operation_and_loads_nothing_from_elsewhere(supervisor_client, spec):
    response = supervisor_client.get("/api/docs")
    assert response.status_code == 200
    html = response.content.decode()
    for op in operations(spec).values():
        assert f'id="{op["operationId"]}"' in html
    for path in spec["paths"]:
        assert f"<code>{path}</code>" in html
    assert 'href="/api/openapi.json"' in html
    # Scripts and stylesheets come from our own static files: no CDN, no other host.
    assets = re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"]+)"', html)
    assert assets and all(url.startswith("/static/") for url in assets), assets
    assert "cdn" not in html.lower()
    assert "<style" not in html and "style=" not in html  # the site's CSP allows no inline style
