"""Shipment data keeps its numbers exactly, to DynamoDB's 38 significant digits, on moto
and on DynamoDB Local: the answer, a later read and the page show what was stored, digit
for digit; a number with more digits is refused, naming its path."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from queues_app.ddb.numbers import ExactJSONEncoder, ExactNumber
from queues_app.shipments.queue import ShipmentQueue
from tests.helpers.api import assert_problem


def exact(content: bytes) -> dict:
    """An answer read as a receiver that wants every digit reads it."""
    return json.loads(content, parse_float=Decimal)


def post(api, raw_data: str, **extra):
    return api.post("/api/shipments", raw='{"data": ' + raw_data + "}", **extra)


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("12345.678901234567890123", "12345.678901234567890123"),  # rounded to 12345.678901234567 before
        ("0.12345678901234567890123456789012345678", "0.12345678901234567890123456789012345678"),  # 38 digits
        ("-1234567890123456789012345678.9012345678", "-1234567890123456789012345678.9012345678"),
        ("1.50", "1.5"),  # DynamoDB keeps no trailing zeros
        ("2.0", "2"),  # nor a whole number's fraction
        ("1e-130", "1E-130"),
    ],
)
def test_a_number_is_kept_to_its_last_digit(backend_db, api, sent, stored):
    created = post(api, '{"amount": ' + sent + "}")

    assert created.status_code == 201, created.content
    assert exact(created.content)["data"]["amount"] == Decimal(stored)
    read = api.get(f"/api/shipments/{created.json()['shipment_id']}")
    assert exact(read.content)["data"]["amount"] == Decimal(stored)


def test_numbers_deep_inside_data_are_kept_exactly(backend_db, api):
    raw = '{"lines": [{"price": 19.999999999999999999}, {"price": 0.30000000000000000001}], "total": 50.3}'
    created = post(api, raw)

    assert created.status_code == 201, created.content
    data = exact(api.get(f"/api/shipments/{created.json()['shipment_id']}").content)["data"]
    assert [line["price"] for line in data["lines"]] == [
        Decimal("19.999999999999999999"),
        Decimal("0.30000000000000000001"),
    ]
    assert data["total"] == Decimal("50.3")


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ('{"amount": 1.23456789012345678901234567890123456789}', "data.amount"),  # 39 significant digits
        ('{"lines": [{"price": 1}, {"price": 0.000123456789012345678901234567890123456789}]}', "data.lines[1].price"),
        ('{"amount": 1e400}', "data.amount"),  # no float holds it: refused for its range, not as Infinity
    ],
)
def test_a_number_beyond_what_dynamodb_keeps_is_refused_naming_its_path(backend_db, api, raw, path):
    problem = assert_problem(post(api, raw), 400)

    assert list(problem["fields"]) == [path]
    assert "Infinity" not in problem["fields"][path]
    assert ShipmentQueue().count_queued() == 0


def test_the_page_shows_the_number_stored(moto_db, api, supervisor_client):
    created = post(api, '{"amount": 12345.678901234567890123}')

    page = supervisor_client.get(f"/shipments/{created.json()['shipment_id']}/")

    assert "12345.678901234567890123" in page.content.decode()


def test_other_fields_still_take_fractions(moto_db, api):
    created = api.post("/api/shipments", {"data": {"x": 1}, "delay_seconds": 1.5})
    assert created.status_code == 201, created.content


def test_an_exact_number_computes_as_a_float_and_is_written_with_every_digit():
    number = ExactNumber("0.30000000000000000001")
    assert number + 1 == pytest.approx(1.3)
    assert (
        json.dumps({"n": number, "f": 0.5, "i": 2}, cls=ExactJSONEncoder)
        == '{"n": 0.30000000000000000001, "f": 0.5, "i": 2}'
    )
    assert str(number) == "0.30000000000000000001"
