"""bench.load's verdict on a step: 429s (a limit: API_RATE_LIMIT or backpressure) are
named as their own cause, apart from failures."""

from __future__ import annotations

from bench import load


def step(statuses: dict[str, int], failures: int, fives: int = 0) -> dict:
    calls = {"count": 10, "p95_ms": 100.0, "statuses": statuses}
    return {
        "endpoints": {load.CREATE_CALL: calls},
        "failures": failures,
        "5xx": fives,
        "calls_due": 10,
        "driver": {"late_p95_ms": 0.0},
    }


def test_a_step_refused_by_a_limit_says_so_apart_from_failures():
    assert load.not_held_because(step({"201": 6, "429": 4}, failures=4), 1.0) == [
        "limits: 4 answers were 429 (API_RATE_LIMIT or backpressure)"
    ]
    assert load.not_held_because(step({"201": 5, "429": 3, "500": 2}, failures=5, fives=2), 1.0) == [
        "limits: 3 answers were 429 (API_RATE_LIMIT or backpressure)",
        "failures: 2 (2 5xx)",
    ]
    assert load.not_held_because(step({"201": 10}, failures=0), 1.0) == []


def test_a_request_the_client_stopped_waiting_for_is_latency_and_any_other_missing_answer_a_failure():
    timed_out = step({"201": 8, "0": 2}, failures=2)
    timed_out["endpoints"][load.CREATE_CALL]["no_answer"] = {"ReadTimeout: timed out": 2}
    assert load.not_held_because(timed_out, 1.0) == ["latency: 2 requests had no answer within the client's 30 s"]
    reset = step({"201": 8, "0": 2}, failures=2)
    reset["endpoints"][load.CREATE_CALL]["no_answer"] = {"ReadTimeout: timed out": 1, "RemoteProtocolError": 1}
    assert load.not_held_because(reset, 1.0) == [
        "latency: 1 requests had no answer within the client's 30 s",
        "failures: 1 (0 5xx)",
    ]


def test_shipments_due_in_a_step_and_still_unanswered_at_its_wait_are_latency():
    slow = step({"201": 10}, failures=0)
    slow["shipments_due"] = 4
    assert load.not_held_because(slow, 1.0) == ["latency: 4 of 4 shipments due had no answer 35 s on"]
    slow["endpoints"][load.SHIPMENT] = {"count": 4, "p95_ms": 100.0, "statuses": {"201": 4}}
    assert load.not_held_because(slow, 1.0) == []


def test_supervisors_watching_a_step_shown_no_panel_is_latency():
    watched = step({"201": 10}, failures=0)
    watched.update(supervisors=3, panel_views=0)
    assert load.not_held_because(watched, 1.0) == ["latency: no panel was shown to the 3 supervisors watching"]
    watched["panel_views"] = 1
    assert load.not_held_because(watched, 1.0) == []


def test_dynamodb_slow_under_the_load_is_an_outage_apart_from_failures_and_a_missing_table_a_problem():
    slow = step({"201": 7, "503": 2, "500": 1}, failures=3, fives=3)
    assert load.not_held_because(slow, 1.0) == [
        "outage: 2 answers were 503 (DynamoDB did not answer in time, or was busy)",
        "failures: 1 (3 5xx)",
    ]
    said = "Unavailable: 503 DynamoDB unavailable: DynamoDB did not answer in time."
    samples = [load.Sample(load.CREATE_CALL, 0.0, 0.1, 503, said), load.Sample(load.CREATE_CALL, 0.0, 0.1, 201)]
    assert load.endpoint_figures(samples)[load.CREATE_CALL]["unavailable"] == {said: 1}
    busy = {"statuses": {"503": 1}, "unavailable": {"Unavailable: 503 DynamoDB is busy": 1}}
    assert load.faults([{"endpoints": {load.CREATE_CALL: busy}}]) == []
    missing = {"statuses": {"503": 2, "500": 1}, "unavailable": {"Unavailable: 503 DynamoDB table missing: x": 2}}
    assert load.faults([{"endpoints": {load.CREATE_CALL: missing}}]) == [
        "1 answers were 500 (internal error)",
        "2 answers were 503 for a missing table",
    ]
    assert load.faults([]) == ["no step was measured"]
