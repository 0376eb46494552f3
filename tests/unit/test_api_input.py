"""Bad input to the JSON API is a 4xx naming the field, never a 500: preferences of the
wrong type, bodies nested too deeply or too large, numbers DynamoDB cannot store. The
tests of nesting and numbers run on DynamoDB Local too (`backend_db`): moto has neither
DynamoDB's nesting limit nor its number limits."""

import json
import logging
import math
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queues_app.admission import BackpressureGate
from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.api.parsing import MAX_BODY_BYTES, MAX_DEPTH
from queues_app.centre.call_center import CallCenter
from queues_app.shipments.queue import ShipmentQueue
from tests.helpers.api import Api, agent, assert_problem


@pytest.fixture(autouse=True)
def fresh_gate(settings):
    settings.SWITCHBOARD_FAIRNESS = {**settings.SWITCHBOARD_FAIRNESS, "depth_cache_seconds": 0}
    BackpressureGate.forget()
    yield
    BackpressureGate.forget()


def nested(levels: int, leaf=1) -> dict:
    value = leaf
    for _ in range(levels):
        value = {"a": value}
    return value


# --- preferences ----------------------------------------------------------------------


@pytest.mark.parametrize("value", [["English"], {"name": "English"}, 5, True, 1.5])
def test_a_preference_that_is_not_a_string_is_400_naming_it(moto_db, api, value):
    body = assert_problem(api.post("/api/calls", {"preferences": {"language": value}}), 400, "Invalid request")
    assert set(body["fields"]) == {"language"}
    assert "one value" in body["fields"]["language"]
    assert CallCenter().line.waiting_calls()[0] == []


def test_preferences_that_are_not_an_object_are_400(moto_db, api):
    body = assert_problem(api.post("/api/calls", {"preferences": ["English"]}), 400)
    assert set(body["fields"]) == {"preferences"}


def test_a_preference_of_any_or_left_out_means_any_agent(moto_db, api):
    response = api.post("/api/calls", {"preferences": {"gender": "*"}})
    assert response.status_code == 201, response.content
    assert response.json()["preferences"] == {"language": "any", "gender": "any"}


def test_a_preference_of_null_is_400_naming_it(moto_db, api):
    body = assert_problem(api.post("/api/calls", {"preferences": {"language": None, "gender": "F"}}), 400)
    assert set(body["fields"]) == {"language"}
    assert "may not be null" in body["fields"]["language"] and "'any'" in body["fields"]["language"]
    assert CallCenter().line.waiting_calls()[0] == []


def test_an_unknown_skill_dimension_is_named_with_the_dimensions_allowed(moto_db, api):
    body = assert_problem(api.post("/api/calls", {"preferences": {"planet": "Mars"}}), 400)
    assert body["fields"] == {"planet": "unknown skill dimension 'planet'; allowed: language, gender"}


@pytest.mark.parametrize(
    "path, body, allowed",
    [
        (
            "/api/calls",
            {"preferences": {}, "colour": "red"},
            "allowed: preferences, priority, order, line, steps, preferred_agent_id, preferred_for_seconds",
        ),
        ("/api/shipments", {"data": {}, "colour": "red"}, "allowed: data, tenant, queue, priority, delay_seconds"),
        ("/api/agents/{id}/release", {"call_id": "c1", "colour": "red"}, "allowed: call_id, then"),
        ("/api/agents/{id}/available", {"version": 1, "colour": "red"}, "allowed: version"),
        ("/api/agents/{id}/offline", {"version": 1, "colour": "red"}, "allowed: version"),
        ("/api/calls/c1/end", {"colour": "red"}, "allowed: then"),
        ("/api/calls/c1/abandon", {"colour": "red"}, "this operation takes no fields"),
    ],
)
def test_an_unknown_field_is_named_with_the_fields_allowed(moto_db, api, path, body, allowed):
    ana = agent("Ana", ["English"], "F")
    refused = assert_problem(api.post(path.format(id=ana.agent_id), body), 400)
    assert refused["fields"] == {"colour": f"unknown field; {allowed}"}


# --- content types --------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json; charset=latin-1",
        "",
    ],
)
def test_a_body_that_is_not_json_is_415_naming_the_type_expected(moto_db, api, content_type):
    response = api.client.post(
        "/api/calls",
        data='{"preferences": {}}',
        content_type=content_type,
        HTTP_AUTHORIZATION=f"Bearer {api.token}",
    )
    body = assert_problem(response, 415, "Unsupported media type")
    assert "application/json" in body["message"]
    assert CallCenter().line.waiting_calls()[0] == []


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "Application/JSON; charset=UTF-8"]
)
def test_json_is_accepted_with_or_without_a_utf8_charset(moto_db, api, content_type):
    response = api.client.post(
        "/api/calls", data='{"preferences": {}}', content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {api.token}"
    )
    assert response.status_code == 201, response.content


def test_an_action_without_a_body_is_told_what_the_body_must_hold_not_its_content_type(moto_db, api):
    ana = agent("Ana", ["English"], "F")
    response = api.client.generic(
        "POST", f"/api/agents/{ana.agent_id}/available", HTTP_AUTHORIZATION=f"Bearer {api.token}"
    )
    assert set(assert_problem(response, 400)["fields"]) == {"version"}
    waiting = api.post("/api/calls", {"preferences": {"language": "French"}}).json()
    hung_up = api.client.generic("POST", f"/api/calls/{waiting['call_id']}/abandon", **api._headers({}))
    assert hung_up.status_code == 200, hung_up.content


# --- the body as a whole --------------------------------------------------------------


def test_brackets_nested_100000_deep_are_400_not_a_recursion_error(backend_db, api):
    body = assert_problem(api.post("/api/calls", raw="[" * 100_000), 400, "Invalid request")
    assert "nested deeper" in body["fields"]["body"]


def test_nesting_is_allowed_up_to_the_limit_and_refused_beyond(backend_db, api):
    # The body is one level: `data` may hold MAX_DEPTH - 1 levels of objects.
    fits = api.post("/api/shipments", {"data": nested(MAX_DEPTH - 1)})
    assert fits.status_code == 201, fits.content
    assert ShipmentQueue().get(fits.json()["shipment_id"]).data == nested(MAX_DEPTH - 1)
    refused = assert_problem(api.post("/api/shipments", {"data": nested(MAX_DEPTH)}), 400)
    assert set(refused["fields"]) == {"body"}


@pytest.mark.parametrize(
    "raw",
    ['{"preferences": {', "{'preferences': {}}", b'{"preferences": {"language": "\xff"}}', "nul", '{"a": 1}}'],
)
def test_malformed_json_is_400_naming_the_body(moto_db, api, raw):
    body = assert_problem(api.post("/api/calls", raw=raw), 400, "Invalid request")
    assert set(body["fields"]) == {"body"}
    assert body["fields"]["body"].startswith("not valid JSON")


@pytest.mark.parametrize("raw", ["", "   ", "null"])
def test_a_missing_body_is_400_naming_the_fields_it_must_hold(moto_db, api, raw):
    body = assert_problem(api.post("/api/shipments", raw=raw), 400)
    assert set(body["fields"]) == {"data"}
    ana = agent("Ana", ["English"], "F")
    release = assert_problem(api.post(f"/api/agents/{ana.agent_id}/release", raw=raw), 400)
    assert set(release["fields"]) == {"call_id"}


@pytest.mark.parametrize("raw", ["", "{}", "null"])
def test_agent_actions_without_the_version_they_were_decided_on_are_400_naming_it(moto_db, api, raw):
    ana = agent("Ana", ["English"], "F")
    for action in ("available", "offline"):
        refused = assert_problem(api.post(f"/api/agents/{ana.agent_id}/{action}", raw=raw or None), 400)
        assert set(refused["fields"]) == {"version"}
        assert "version" in refused["fields"]["version"]
    assert Agents().get(ana.agent_id).status == AgentStatus.OFFLINE


@pytest.mark.parametrize(
    "version, problem",
    [
        ('"7"', "valid integer"),
        ("7.5", "valid integer"),
        ("0", "greater than or equal to 1"),
        ("true", "not true or false"),
    ],
)
def test_a_version_sent_wrong_is_refused_saying_what_is_wrong_with_it_not_that_it_is_missing(
    moto_db, api, version, problem
):
    ana = agent("Ana", ["English"], "F")
    refused = assert_problem(api.post(f"/api/agents/{ana.agent_id}/available", raw=f'{{"version": {version}}}'), 400)
    said = refused["fields"]["version"]
    assert problem in said and "as you last read it" in said and not said.startswith("required")


@pytest.mark.parametrize("raw", ["", "{}", "null"])
def test_ending_a_call_takes_no_body_or_an_empty_one(moto_db, api, raw):
    ana = agent("Ana", ["English"], "F")
    api.available(ana.agent_id)
    call = api.post("/api/calls", {"preferences": {}}).json()
    ended = api.post(f"/api/calls/{call['call_id']}/end", raw=raw or None)
    assert ended.status_code == 200, ended.content
    assert ended.json()["agent"]["status"] == AgentStatus.QUEUED


def test_a_3_mb_body_is_a_json_413(moto_db, api):
    response = api.post("/api/shipments", {"data": {"blob": "x" * 3_000_000}})
    body = assert_problem(response, 413, "Request body too large")
    assert f"{MAX_BODY_BYTES:,}" in body["message"]
    assert ShipmentQueue().count_queued() == 0


def test_a_body_just_over_the_limit_is_413_and_one_within_is_read(moto_db, api):
    padding = MAX_BODY_BYTES - len(json.dumps({"data": {"blob": ""}}))
    assert api.post("/api/shipments", {"data": {"blob": "x" * padding}}).status_code == 201
    assert_problem(api.post("/api/shipments", {"data": {"blob": "x" * (padding + 1)}}), 413)


def test_djangos_own_upload_limit_is_a_json_413_too(moto_db, api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    body = assert_problem(api.post("/api/shipments", {"data": {"blob": "x" * 200}}), 413)
    assert "100 bytes" in body["message"]


def test_an_oversized_body_is_refused_before_authentication(moto_db):
    response = Api().post("/api/shipments", {"data": {"blob": "x" * 300_000}})
    assert_problem(response, 413)


# --- numbers and values DynamoDB cannot store ------------------------------------------


@pytest.mark.parametrize(
    "raw_value, path, words",
    [
        ("NaN", "data.weight", "NaN"),
        ("Infinity", "data.weight", "Infinity"),
        ("-Infinity", "data.weight", "-Infinity"),
        ("1e200", "data.weight", "range"),
        ("1e-200", "data.weight", "range"),
        ("1" + "0" * 59, "data.weight", "38 significant digits"),
        ("123456789012345678901234567890123456789012345678901234567890", "data.weight", "38 significant digits"),
        ("1" * 5000, "data.weight", "38 significant digits"),
    ],
)
def test_a_number_dynamodb_cannot_store_is_400_naming_its_path(backend_db, api, raw_value, path, words):
    response = api.post("/api/shipments", raw='{"data": {"weight": ' + raw_value + "}}")
    body = assert_problem(response, 400, "Invalid request")
    assert set(body["fields"]) == {path}
    assert words in body["fields"][path]
    assert ShipmentQueue().count_queued() == 0


def test_bad_numbers_deep_inside_data_are_named_by_their_full_path(backend_db, api):
    raw = '{"data": {"parcels": [{"kg": 1}, {"kg": NaN, "dims": [1, 2, 1e300]}], "ok": 2}}'
    body = assert_problem(api.post("/api/shipments", raw=raw), 400)
    assert set(body["fields"]) == {"data.parcels[1].kg", "data.parcels[1].dims[2]"}


def test_bad_data_and_other_bad_fields_are_named_at_once(moto_db, api):
    raw = '{"data": {"w": Infinity}, "priority": 12, "colour": "red"}'
    body = assert_problem(api.post("/api/shipments", raw=raw), 400)
    assert set(body["fields"]) == {"data.w", "priority", "colour"}


def test_numbers_at_dynamodbs_limits_are_stored_and_read_back(backend_db, api):
    data = {
        "digits": 12345678901234567890123456789012345678,  # 38 digits
        "smallest": 1e-130,
        "largest": 9.99e125,
        "negative": -9.99e125,
        "zero": 0,
        "fraction": 0.1,
    }
    response = api.post("/api/shipments", {"data": data})
    assert response.status_code == 201, response.content
    assert same(api.get(f"/api/shipments/{response.json()['shipment_id']}").json()["data"], data)


def same(one, other) -> bool:
    """Equal JSON values, numbers compared as numbers (DynamoDB keeps no int/float type:
    a whole float comes back as an int)."""
    if isinstance(one, dict) and isinstance(other, dict):
        return one.keys() == other.keys() and all(same(one[k], other[k]) for k in one)
    if isinstance(one, list) and isinstance(other, list):
        return len(one) == len(other) and all(same(a, b) for a, b in zip(one, other, strict=True))
    numbers = (int, float)
    if isinstance(one, numbers) and isinstance(other, numbers) and not isinstance(one, bool):
        return math.isclose(one, other, rel_tol=1e-15, abs_tol=0)
    return one == other and type(one) is type(other)


def test_an_empty_key_or_a_lone_surrogate_in_data_is_400_naming_it(moto_db, api):
    body = assert_problem(api.post("/api/shipments", raw='{"data": {"": 1, "s": "\\ud800", "t": {"\\udfff": 2}}}'), 400)
    assert set(body["fields"]) == {'data.""', "data.s", "data.t.\\udfff"}


def test_a_very_long_key_is_named_shortly(moto_db, api):
    body = assert_problem(api.post("/api/shipments", {"data": {"k" * 70_000: 1}}), 400)
    [name] = body["fields"]
    assert name.startswith("data.kkk") and len(name) < 60


@pytest.mark.parametrize("name", ["priority", "delay_seconds"])
@pytest.mark.parametrize("raw_value", ["NaN", "Infinity", "-1", "1e400", "1" * 5000, '"5"', "true", "null"])
def test_a_bad_priority_or_delay_is_400_naming_it(moto_db, api, name, raw_value):
    raw = '{"data": {}, "' + name + '": ' + raw_value + "}"
    body = assert_problem(api.post("/api/shipments", raw=raw), 400)
    assert set(body["fields"]) == {name}


def test_a_fraction_of_a_second_is_a_fine_delay(moto_db, api):
    assert api.post("/api/shipments", {"data": {}, "delay_seconds": 2.5}).status_code == 201


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.integers(min_value=-(10**60), max_value=10**60)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


TEXT = st.characters(codec="utf-8")  # no lone surrogates
KEYS = st.text(TEXT, min_size=1, max_size=8)
# Values DynamoDB stores: numbers within its range and 38 digits, keys of one character
# or more, and not too deep (a few levels; the body may nest 32).
storable_values = st.recursive(
    st.none()
    | st.booleans()
    | st.floats(min_value=-1e100, max_value=1e100).filter(lambda x: x == 0 or abs(x) >= 1e-100)
    | st.integers(min_value=-(10**37), max_value=10**37)
    | st.text(TEXT, max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=20,
)


def test_any_json_data_is_stored_or_refused_naming_fields_never_a_500(backend_db, api):
    stored = Counter()

    @given(
        case=st.one_of(
            st.tuples(st.just("any"), st.dictionaries(st.text(max_size=8), json_values, max_size=5)),
            st.tuples(st.just("storable"), st.dictionaries(KEYS, storable_values, max_size=5)),
        )
    )
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    def send(case):
        kind, data = case
        raw = json.dumps({"data": data})  # NaN and Infinity are written as JavaScript literals
        response = api.post("/api/shipments", raw=raw)
        assert response.status_code in (201, 400), response.content
        stored[kind, response.status_code] += 1
        if response.status_code == 400:
            assert kind != "storable", response.content  # data DynamoDB can store is never refused
            fields = response.json()["fields"]
            assert fields and all(name.startswith("data") for name in fields)
        else:
            assert same(ShipmentQueue().get(response.json()["shipment_id"]).data, response.json()["data"])

    send()
    assert stored["storable", 201] >= 10, stored  # enough storable data was sent, and stored


# --- parameters and methods -----------------------------------------------------------


def test_an_overlong_path_id_is_400_naming_it(moto_db, api):
    body = assert_problem(api.get("/api/calls/" + "x" * 300), 400)
    assert set(body["fields"]) == {"call_id"}


def test_a_blank_idempotency_key_is_400(moto_db, api):
    body = assert_problem(api.post("/api/calls", {"preferences": {}}, HTTP_IDEMPOTENCY_KEY="   "), 400)
    assert body["fields"] == {"Idempotency-Key": "must be 1 to 255 characters"}


@pytest.mark.parametrize("method", ["put", "patch", "delete", "options"])
def test_every_other_method_is_a_json_405_with_allow(moto_db, api, method):
    response = getattr(api.client, method)("/api/queues", HTTP_AUTHORIZATION=f"Bearer {api.token}")
    assert_problem(response, 405, "Method not allowed")
    assert response["Allow"] == "GET"


def test_the_api_root_is_a_json_404(moto_db, api):
    assert_problem(api.get("/api/"), 404, "Not found")


def test_an_unexpected_failure_is_a_json_500_without_details_and_is_logged(moto_db, api, monkeypatch, caplog):
    from queues_app.api import queues

    def broken():
        raise RuntimeError("secret detail")

    monkeypatch.setattr(queues, "get_call_center", broken)
    with caplog.at_level(logging.ERROR, logger="queues_app"):
        response = api.get("/api/queues")
    body = assert_problem(response, 500, "Internal error")
    assert "secret detail" not in response.content.decode()
    assert "Traceback" not in response.content.decode()
    assert "secret detail" in caplog.text and body["message"]


def test_a_503_always_says_when_to_retry():
    from queues_app.http.errors import DEFAULT_RETRY_AFTER_SECONDS, UserError, json_answer

    response = json_answer(UserError(503, "DynamoDB table missing", "The table is missing."))
    assert response["Retry-After"] == str(DEFAULT_RETRY_AFTER_SECONDS)
    assert json_answer(UserError(503, "busy", "busy", retry_after=2))["Retry-After"] == "2"


@pytest.mark.parametrize("host", ["", "evil.example.com"])
def test_a_request_with_a_host_it_cannot_take_is_a_json_400(moto_db, client, host):
    response = client.get("/api/queues", HTTP_HOST=host)
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert "Host header" in response.json()["message"]


# --- numbers ----------------------------------------------------------------------------


def every_input_schema() -> list[type]:
    from queues_app.api import application  # noqa: F401 - every resource's schemas defined
    from queues_app.api.schemas import InputSchema

    found, todo = [], [InputSchema]
    while todo:
        for schema in todo.pop().__subclasses__():
            found.append(schema)
            todo.append(schema)
    return found


def test_every_number_of_every_body_refuses_true_and_false():
    from pydantic import ValidationError

    from queues_app.api.schemas import _takes_numbers_not_booleans

    checked = 0
    for schema in every_input_schema():
        for name, field in schema.model_fields.items():
            if not _takes_numbers_not_booleans(field.annotation):
                continue
            for value in (True, False):
                with pytest.raises(ValidationError) as refused:
                    schema.model_validate({name: value})
                assert any(e["loc"] == (name,) and e["type"] == "number_not_boolean" for e in refused.value.errors()), (
                    schema.__name__,
                    name,
                )
            checked += 1
    assert checked >= 10  # versions, priorities, seconds, rates, targets...


def test_a_rate_of_true_is_400_naming_it_not_a_rate_of_one(moto_db, api):
    body = assert_problem(api.put("/api/shipment-queues/urgent", {"tenant_rate": True}), 400)
    assert body["fields"] == {"tenant_rate": "must be a number, not true or false"}
    assert api.get("/api/shipment-queues/urgent").status_code == 404  # nothing made
