"""A refusal quotes at most 100 characters of what it was sent: a 200 KB value gets a
small answer naming the field, on the API and on the pages alike."""

from __future__ import annotations

import pytest

from queues_app.ddb.errors import NotFound
from queues_app.http.errors import UserError, describe, invalid_input
from queues_app.http.redact import QUOTE_MAX, bounded
from tests.helpers.api import assert_problem

BIG = 200_000
SMALL_BODY = 2_000  # bytes: what a refusal of any of these may take


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"preferences": {"language": "x" * BIG}}, "language"),  # an unknown skill value, quoted
        ({"preferences": {"l" * BIG: "French"}}, "l" * QUOTE_MAX + "…"),  # an unknown dimension: a field name
        ({"preferences": {}, "x" * BIG: 1}, "x" * QUOTE_MAX + "…"),  # an unknown field
        ({"preferences": {"language": "'\"" * (BIG // 4)}}, "language"),  # both quotes, escaped by repr
    ],
)
def test_an_api_refusal_quotes_at_most_100_characters_of_a_bad_value(moto_db, api, body, field):
    answer = api.post("/api/calls", body)

    problem = assert_problem(answer, 400)
    assert len(answer.content) < SMALL_BODY
    assert field in problem["fields"]
    assert "…" in problem["message"]


def test_a_shipment_field_path_is_named_however_long_its_keys(moto_db, api):
    answer = api.post("/api/shipments", {"data": {"k" * BIG: float("nan")}})

    problem = assert_problem(answer, 400)
    assert len(answer.content) < SMALL_BODY
    [name] = problem["fields"]
    assert name.startswith("data.kkk")


def test_a_page_that_cannot_find_an_item_does_not_copy_a_long_id(moto_db, supervisor_client):
    answer = supervisor_client.get(f"/shipments/{'s' * 5000}/")

    assert answer.status_code == 404
    assert "s" * (QUOTE_MAX + 1) not in answer.content.decode()


def test_quoted_values_are_cut_and_the_rest_of_the_sentence_is_kept():
    text = f"unknown language {'x' * 300!r}; allowed: English, French or any"
    assert bounded(text) == f"unknown language '{'x' * QUOTE_MAX}…'; allowed: English, French or any"
    # Apostrophes inside words open no quote; short quotes are kept whole.
    sentence = "the agent's version isn't 'short' and " + "y" * 300
    assert bounded(sentence) == sentence


def test_every_user_error_is_bounded_however_it_is_made():
    problem = UserError(404, "Not found", f"No agent with id {'a' * 1000!r}.", fields={"z" * 1000: "q" * 10})
    assert len(problem.message) < 150
    assert list(problem.fields or {}) == ["z" * QUOTE_MAX + "…"]
    assert invalid_input({"k" * 500: f"bad {'v' * 500!r}"}).as_json()["message"] == (
        f"{'k' * QUOTE_MAX}…: bad '{'v' * QUOTE_MAX}…'"
    )
    assert describe(NotFound(f"No call with id {'c' * 999!r}.")).message.endswith("…'.")
