"""switchboard_client against scripted answers (httpx.MockTransport): paths, keys,
retries with Retry-After or backoff, typed errors carrying the problem body, paging."""

import json

import httpx
import pytest

import switchboard_client as sc


class Script:
    """A MockTransport handler answering from a list, recording every request."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def ok(body, status=200, **headers):
    return httpx.Response(status, json=body, headers=headers)


def problem(status, error, message="", **headers):
    return httpx.Response(
        status, json={"error": error, "message": message, "fields": {"language": "bad"}}, headers=headers
    )


@pytest.fixture
def waits():
    return []


def client(script, waits, **options):
    return sc.Switchboard(
        "http://switchboard.test/",
        "tok-123",
        transport=httpx.MockTransport(script),
        sleep=waits.append,
        jitter=lambda: 1.0,
        **options,
    )


def test_it_sends_the_token_and_json_to_the_api_paths(waits):
    script = Script(ok({"call_id": "c1", "status": "waiting"}, 201))
    call = client(script, waits).create_call({"language": "French"}, priority=3)
    assert call == {"call_id": "c1", "status": "waiting"}
    sent = script.requests[0]
    assert (sent.method, sent.url.path) == ("POST", "/api/calls")
    assert sent.headers["Authorization"] == "Bearer tok-123"
    assert sent.headers["Content-Type"] == "application/json"
    assert json.loads(sent.content) == {"preferences": {"language": "French"}, "priority": 3}


def test_a_call_gets_an_idempotency_key_when_none_is_given_and_keeps_it_on_retries(waits):
    script = Script(problem(503, "DynamoDB unavailable"), ok({"call_id": "c1"}, 201))
    client(script, waits).create_call({})
    keys = [r.headers["Idempotency-Key"] for r in script.requests]
    assert len(keys) == 2 and keys[0] == keys[1] and len(keys[0]) >= 16


def test_two_calls_get_different_keys_and_a_given_key_is_sent_as_is(waits):
    script = Script(ok({}, 201), ok({}, 201), ok({}, 200))
    sb = client(script, waits)
    sb.create_call({})
    sb.create_call({})
    sb.create_call({}, idempotency_key="pbx-42")
    keys = [r.headers["Idempotency-Key"] for r in script.requests]
    assert keys[0] != keys[1] and keys[2] == "pbx-42"


def test_a_429_is_retried_after_the_retry_after_it_names(waits):
    script = Script(problem(429, "Too many callers waiting", **{"Retry-After": "7"}), ok({"call_id": "c1"}, 201))
    assert client(script, waits).create_call({})["call_id"] == "c1"
    assert waits == [7.0]


def test_without_retry_after_the_backoff_doubles_up_to_its_cap(waits):
    script = Script(*[problem(503, "Unavailable") for _ in range(5)], ok({"call_id": "c1"}))
    client(script, waits, backoff_base=0.5, backoff_max=4.0).get_call("c1")
    assert waits == [0.5, 1.0, 2.0, 4.0, 4.0]


def test_the_backoff_is_jittered_below_its_step(waits):
    script = Script(problem(503, "Unavailable"), ok({}))
    sb = sc.Switchboard(
        "http://switchboard.test", "t", transport=httpx.MockTransport(script), sleep=waits.append, jitter=lambda: 0.25
    )
    sb.get_call("c1")
    assert waits == [0.125]


def test_an_absurd_retry_after_is_capped(waits):
    script = Script(problem(429, "Busy", **{"Retry-After": "86400"}), ok({}))
    client(script, waits, max_retry_after=60).get_call("c1")
    assert waits == [60]


def test_after_max_retries_the_429_is_raised_with_its_problem(waits):
    script = Script(*[problem(429, "Too many callers waiting", "past its bound", **{"Retry-After": "1"})] * 3)
    with pytest.raises(sc.Backpressure) as raised:
        client(script, waits, max_retries=2).create_call({})
    assert raised.value.status == 429 and raised.value.message == "past its bound"
    assert len(script.requests) == 3 and waits == [1.0, 1.0]


@pytest.mark.parametrize(
    "status, kind",
    [(400, sc.InvalidInput), (401, sc.Unauthorized), (403, sc.Forbidden), (404, sc.NotFound), (409, sc.Conflict),
     (413, sc.TooLarge), (415, sc.UnsupportedMediaType), (500, sc.ServerError)],
)  # fmt: skip
def test_refusals_raise_a_typed_error_carrying_the_problem_and_are_not_retried(waits, status, kind):
    script = Script(problem(status, "Refused", "because", **{"X-Trace-Id": "t-9"}))
    with pytest.raises(kind) as raised:
        client(script, waits).get_agent("a1")
    error = raised.value
    assert isinstance(error, sc.ApiError)
    assert (error.status, error.error, error.message, error.fields, error.trace_id) == (
        status,
        "Refused",
        "because",
        {"language": "bad"},
        "t-9",
    )
    assert len(script.requests) == 1 and waits == []


def test_an_answer_that_is_not_json_still_raises_a_typed_error(waits):
    script = Script(httpx.Response(404, text="<html>not here</html>"))
    with pytest.raises(sc.NotFound) as raised:
        client(script, waits).get_call("c1")
    assert "not here" in raised.value.message


def test_connection_errors_are_retried_then_raised_as_unreachable(waits):
    script = Script(*[httpx.ConnectError("refused")] * 3)
    with pytest.raises(sc.Unreachable):
        client(script, waits, max_retries=2).get_call("c1")
    assert len(script.requests) == 3 and len(waits) == 2


def test_a_read_timeout_is_retried_for_a_creation_which_carries_its_key(waits):
    script = Script(httpx.ReadTimeout("slow"), ok({"call_id": "c1"}, 200))
    assert client(script, waits).create_call({})["call_id"] == "c1"
    assert len(script.requests) == 2


def test_a_change_whose_answer_was_lost_is_sent_again_naming_the_same_state(waits):
    script = Script(httpx.ReadTimeout("slow"), ok({"agent": {"agent_id": "a1"}, "call": None}))
    assert client(script, waits).release("a1", "c1")["call"] is None
    assert len(script.requests) == 2
    # The retry is the same request: it names the same call, so it cannot end another one.
    assert [json.loads(r.content) for r in script.requests] == [{"call_id": "c1", "then": "queue"}] * 2


def test_an_agent_action_that_could_not_connect_is_sent_again(waits):
    script = Script(httpx.ConnectError("refused"), ok({"agent": {"agent_id": "a1"}, "call": None}))
    assert client(script, waits).make_available("a1", 7)["call"] is None
    assert len(script.requests) == 2
    assert [json.loads(r.content) for r in script.requests] == [{"version": 7}] * 2


def test_agent_and_call_actions_use_their_paths_and_name_what_they_were_decided_on(waits):
    script = Script(*(ok({}) for _ in range(6)))
    sb = client(script, waits)
    sb.make_available("a/1", 3)
    sb.release("a1", "c9", then="wrap_up")
    sb.log_off("a1", 5)
    sb.get_agent("a1")
    sb.abandon_call("c1")
    sb.end_call("c2", then="offline")
    paths = [(r.method, r.url.raw_path.decode()) for r in script.requests]
    assert paths == [
        ("POST", "/api/agents/a%2F1/available"),
        ("POST", "/api/agents/a1/release"),
        ("POST", "/api/agents/a1/offline"),
        ("GET", "/api/agents/a1"),
        ("POST", "/api/calls/c1/abandon"),
        ("POST", "/api/calls/c2/end"),
    ]
    bodies = [json.loads(r.content) if r.content else None for r in script.requests]
    assert bodies == [
        {"version": 3},
        {"call_id": "c9", "then": "wrap_up"},
        {"version": 5},
        None,
        None,
        {"then": "offline"},
    ]


def test_a_conflict_carries_the_items_as_they_are_now(waits):
    now = {"agent": {"agent_id": "a1", "version": 9}}
    script = Script(httpx.Response(409, json={"error": "Conflict", "message": "changed", "current": now}))
    with pytest.raises(sc.Conflict) as refused:
        client(script, waits).make_available("a1", 7)
    assert refused.value.current == now


def test_a_bad_release_target_or_status_is_refused_before_sending(waits):
    script = Script()
    sb = client(script, waits)
    with pytest.raises(ValueError):
        sb.release("a1", "c1", then="lunch")
    with pytest.raises(ValueError):
        sb.end_call("c1", then="lunch")
    with pytest.raises(ValueError):
        sb.list_calls("ended")
    assert script.requests == []


def test_iter_calls_follows_the_cursors_to_the_end(waits):
    script = Script(
        ok({"calls": [{"call_id": "c1"}, {"call_id": "c2"}], "next_cursor": "p2"}),
        ok({"calls": [{"call_id": "c3"}], "next_cursor": None}),
    )
    assert [c["call_id"] for c in client(script, waits).iter_calls("waiting")] == ["c1", "c2", "c3"]
    params = [dict(r.url.params) for r in script.requests]
    assert params == [{"status": "waiting"}, {"status": "waiting", "cursor": "p2"}]


def test_list_agents_sends_only_the_filters_given(waits):
    script = Script(ok({"agents": [], "next_cursor": None}), ok({"agents": [{"agent_id": "a"}], "next_cursor": None}))
    sb = client(script, waits)
    sb.list_agents(skill="language:French")
    assert [a["agent_id"] for a in sb.iter_agents(status="queued")] == ["a"]
    assert [dict(r.url.params) for r in script.requests] == [{"skill": "language:French"}, {"status": "queued"}]


def test_shipments_are_created_with_a_key_and_read_back(waits):
    script = Script(ok({"shipment_id": "s1"}, 201), ok({"shipment_id": "s1", "failures": []}))
    sb = client(script, waits)
    sb.create_shipment({"to": "Porto"}, tenant="acme")
    assert sb.get_shipment("s1")["failures"] == []
    first = script.requests[0]
    assert first.headers["Idempotency-Key"]
    assert json.loads(first.content) == {"data": {"to": "Porto"}, "priority": 0, "delay_seconds": 0, "tenant": "acme"}


def test_wait_for_call_polls_until_the_call_is_no_longer_waiting(waits):
    script = Script(ok({"status": "waiting"}), ok({"status": "waiting"}), ok({"status": "assigned", "agent_id": "a"}))
    call = client(script, waits).wait_for_call("c1", timeout=3600, poll_every=0.5)
    assert call["agent_id"] == "a" and waits == [0.5, 0.5]
