"""The JSON API on moto: token auth, every endpoint, validation, idempotency, errors as JSON."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.local import free_port
from queues_app.models import ApiToken, hash_token
from tests.helpers.api import Api, agent, assert_problem

# --- authentication -----------------------------------------------------------------


def test_it_refuses_a_request_without_a_token(moto_db, db):
    body = assert_problem(Api().get("/api/queues"), 401, "Authentication required")
    assert "bearer token" in body["message"]


def test_it_asks_for_a_bearer_token_in_www_authenticate(moto_db, db):
    response = Api().get("/api/queues")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_it_refuses_an_unknown_token(moto_db, db):
    response = Api("not-a-real-token").get("/api/queues")
    assert_problem(response, 401)
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_it_refuses_a_non_bearer_authorization_header(moto_db, supervisor_token):
    response = Api().get("/api/queues", HTTP_AUTHORIZATION=f"Token {supervisor_token}")
    assert_problem(response, 401)


def test_it_rejects_a_revoked_token(moto_db, supervisor_token):
    ApiToken.objects.update(revoked=True)
    assert_problem(Api(supervisor_token).get("/api/queues"), 401)


def test_it_rejects_the_token_of_an_inactive_user(moto_db, supervisor, supervisor_token):
    supervisor.is_active = False
    supervisor.save()
    assert_problem(Api(supervisor_token).get("/api/queues"), 401)


def test_a_session_login_is_not_enough_for_the_api(moto_db, supervisor):
    client = Client()
    client.force_login(supervisor)
    assert_problem(client.get("/api/queues"), 401)


def test_it_stores_only_the_hash_and_a_prefix_of_the_token(supervisor):
    token, raw = ApiToken.issue(supervisor, "phone system")
    token.refresh_from_db()
    assert token.key_hash == hash_token(raw) != raw
    assert token.prefix == raw[:8]
    assert raw not in {token.key_hash, token.prefix, token.name}


def test_it_records_last_use_at_most_once_a_minute(moto_db, api):
    api.get("/api/queues")
    token = ApiToken.objects.get()
    first = token.last_used_at
    assert first is not None
    api.get("/api/queues")
    token.refresh_from_db()
    assert token.last_used_at == first
    ApiToken.objects.update(last_used_at=first - timedelta(minutes=2))
    api.get("/api/queues")
    token.refresh_from_db()
    assert token.last_used_at > first - timedelta(seconds=1)
    assert timezone.now() - token.last_used_at < timedelta(minutes=1)


def test_a_viewers_token_may_read(moto_db, viewer_api):
    assert viewer_api.get("/api/queues").status_code == 200


def test_a_viewers_token_may_not_write(moto_db, viewer_api):
    ana = agent("Ana", ["English"], "F")
    for path, body in [
        ("/api/calls", {"preferences": {}}),
        (f"/api/agents/{ana.agent_id}/available", None),
        (f"/api/agents/{ana.agent_id}/release", {"then": "queue"}),
        (f"/api/agents/{ana.agent_id}/offline", None),
    ]:
        assert_problem(viewer_api.post(path, body), 403, "Forbidden")
    assert CallCenter().line.waiting_calls()[0] == []
    assert Agents().get(ana.agent_id).status == AgentStatus.OFFLINE


def test_token_requests_need_no_csrf_token(moto_db, api):
    # The Api client enforces CSRF checks and sends no CSRF cookie or header.
    assert api.post("/api/calls", {"preferences": {}}).status_code == 201


# --- calls --------------------------------------------------------------------------


def test_it_creates_a_waiting_call_when_no_agent_fits(moto_db, api):
    response = api.post("/api/calls", {"preferences": {"language": "Spanish", "gender": "any"}, "priority": 3})
    assert response.status_code == 201
    call = response.json()
    assert call["status"] == CallStatus.WAITING
    assert call["preferences"] == {"language": "Spanish", "gender": "any"}
    assert call["priority"] == 3
    assert call["agent_id"] is None
    assert response["Location"] == f"/api/calls/{call['call_id']}"
    waiting, _ = CallCenter().line.waiting_calls()
    assert [w["call_id"] for w in waiting] == [call["call_id"]]


def test_it_assigns_a_call_at_once_to_a_queued_agent_who_fits(moto_db, api):
    ana = agent("Ana", ["English", "Spanish"], "F")
    CallCenter().make_available(ana.agent_id)
    response = api.post("/api/calls", {"preferences": {"language": "Spanish"}, "order": "fifo"})
    assert response.status_code == 201
    call = response.json()
    assert call["status"] == CallStatus.ASSIGNED
    assert call["agent_id"] == ana.agent_id
    assert call["agent_name"] == "Ana"
    assert call["assigned_at"]
    assert call["why"][0]["agent_id"] == ana.agent_id
    assert call["waited_seconds"] >= 0


def test_it_reads_a_calls_state(moto_db, api, viewer_api):
    created = api.post("/api/calls", {"preferences": {"gender": "M"}}).json()
    response = viewer_api.get(f"/api/calls/{created['call_id']}")
    assert response.status_code == 200
    call = response.json()
    assert call["call_id"] == created["call_id"]
    assert call["status"] == CallStatus.WAITING
    assert set(call) >= {
        "status",
        "preferences",
        "priority",
        "arrived_at",
        "agent_id",
        "agent_name",
        "assigned_at",
        "ended_at",
        "relaxed",
        "why",
        "waited_seconds",
    }


def test_the_same_idempotency_key_twice_makes_one_call(moto_db, api):
    body = {"preferences": {"language": "French"}, "priority": 1}
    first = api.post("/api/calls", body, HTTP_IDEMPOTENCY_KEY="phone-123")
    second = api.post("/api/calls", body, HTTP_IDEMPOTENCY_KEY="phone-123")
    assert first.status_code == 201
    assert second.status_code == 200
    assert second.json()["call_id"] == first.json()["call_id"]
    assert second["Idempotent-Replayed"] == "true"
    waiting, _ = CallCenter().line.waiting_calls()
    assert [w["call_id"] for w in waiting] == [first.json()["call_id"]]


def test_a_replayed_idempotency_key_returns_the_call_as_it_is_now(moto_db, api):
    body = {"preferences": {"language": "French"}}
    first = api.post("/api/calls", body, HTTP_IDEMPOTENCY_KEY="phone-7").json()
    marie = agent("Marie", ["French"], "F")
    api.available(marie.agent_id)
    again = api.post("/api/calls", body, HTTP_IDEMPOTENCY_KEY="phone-7")
    assert again.status_code == 200
    assert again.json()["call_id"] == first["call_id"]
    assert again.json()["status"] == CallStatus.ASSIGNED


def test_different_idempotency_keys_make_different_calls(moto_db, api):
    a = api.post("/api/calls", {"preferences": {}}, HTTP_IDEMPOTENCY_KEY="a").json()
    b = api.post("/api/calls", {"preferences": {}}, HTTP_IDEMPOTENCY_KEY="b").json()
    assert a["call_id"] != b["call_id"]
    assert len(CallCenter().line.waiting_calls()[0]) == 2


def test_idempotency_keys_of_different_clients_do_not_collide(moto_db, api, staff):
    other = Api(ApiToken.issue(staff, "second phone system")[1])
    a = api.post("/api/calls", {"preferences": {}}, HTTP_IDEMPOTENCY_KEY="1")
    b = other.post("/api/calls", {"preferences": {}}, HTTP_IDEMPOTENCY_KEY="1")
    assert a.status_code == b.status_code == 201
    assert a.json()["call_id"] != b.json()["call_id"]


def test_without_an_idempotency_key_each_request_makes_a_call(moto_db, api):
    api.post("/api/calls", {"preferences": {}})
    api.post("/api/calls", {"preferences": {}})
    assert len(CallCenter().line.waiting_calls()[0]) == 2


# --- validation ---------------------------------------------------------------------


def test_it_rejects_an_unknown_language_naming_the_field(moto_db, api):
    response = api.post("/api/calls", {"preferences": {"language": "Klingon"}})
    body = assert_problem(response, 400, "Invalid request")
    assert body["fields"]["language"].startswith("unknown language 'Klingon'; allowed: English, French, Spanish")
    assert CallCenter().line.waiting_calls()[0] == []


def test_it_rejects_an_unknown_skill_dimension(moto_db, api):
    body = assert_problem(api.post("/api/calls", {"preferences": {"accent": "Scottish"}}), 400)
    assert "accent" in body["fields"]


def test_it_rejects_malformed_json(moto_db, api):
    body = assert_problem(api.post("/api/calls", raw='{"preferences": {'), 400, "Invalid request")
    assert "body" in body["fields"]
    assert CallCenter().line.waiting_calls()[0] == []


def test_it_rejects_a_body_that_is_not_an_object(moto_db, api):
    body = assert_problem(api.post("/api/calls", raw="[1, 2]"), 400)
    assert body["fields"] == {"body": "must be a JSON object"}


@pytest.mark.parametrize("raw", ["1.96e16", "2.5", "1" * 120])
def test_a_body_that_is_a_number_with_a_fraction_or_too_long_is_not_taken_for_an_empty_object(moto_db, api, raw):
    # Such numbers are read exactly (an object holding the decimal), not as plain floats.
    body = assert_problem(api.put("/api/shipment-queues/returns", raw=raw), 400)
    assert body["fields"] == {"body": "must be a JSON object"}
    assert api.get("/api/shipment-queues/returns").status_code == 404
    assert assert_problem(api.post("/api/calls", raw=raw), 400)["fields"] == {"body": "must be a JSON object"}


def test_it_requires_preferences(moto_db, api):
    body = assert_problem(api.post("/api/calls", {"priority": 1}), 400)
    assert "preferences" in body["fields"]


@pytest.mark.parametrize("priority", [-1, 10, "5", 2.5, True, None])
def test_it_rejects_a_priority_outside_0_to_9(moto_db, api, priority):
    body = assert_problem(api.post("/api/calls", {"preferences": {}, "priority": priority}), 400)
    assert set(body["fields"]) == {"priority"}


def test_it_rejects_an_unknown_order(moto_db, api):
    body = assert_problem(api.post("/api/calls", {"preferences": {}, "order": "random"}), 400)
    assert set(body["fields"]) == {"order"}


def test_it_names_every_bad_field_at_once(moto_db, api):
    response = api.post("/api/calls", {"preferences": {"language": "Klingon"}, "priority": 42, "colour": "red"})
    body = assert_problem(response, 400)
    assert set(body["fields"]) == {"language", "priority", "colour"}


def test_it_rejects_an_overlong_idempotency_key(moto_db, api):
    body = assert_problem(api.post("/api/calls", {"preferences": {}}, HTTP_IDEMPOTENCY_KEY="x" * 300), 400)
    assert "Idempotency-Key" in body["fields"]


def test_it_rejects_an_unknown_release_target(moto_db, api):
    ana = agent("Ana", ["English"], "F")
    body = assert_problem(api.post(f"/api/agents/{ana.agent_id}/release", {"call_id": "c1", "then": "lunch"}), 400)
    assert set(body["fields"]) == {"then"}


# --- agents -------------------------------------------------------------------------


def test_marking_an_agent_available_queues_them_when_nobody_waits(moto_db, api):
    ana = agent("Ana", ["English"], "F")
    response = api.available(ana.agent_id)
    assert response.status_code == 200
    body = response.json()
    assert body["agent"]["agent_id"] == ana.agent_id
    assert body["agent"]["status"] == AgentStatus.QUEUED
    assert body["call"] is None


def test_marking_an_agent_available_gives_them_the_waiting_caller(moto_db, api):
    call = api.post("/api/calls", {"preferences": {"language": "English"}}).json()
    ana = agent("Ana", ["English"], "F")
    body = api.available(ana.agent_id).json()
    assert body["agent"]["status"] == AgentStatus.ATTENDING
    assert body["agent"]["call_id"] == call["call_id"]
    assert body["call"]["call_id"] == call["call_id"]
    assert body["call"]["status"] == CallStatus.ASSIGNED


def test_releasing_an_agent_ends_the_call_and_queues_them_again(moto_db, api):
    ana = agent("Ana", ["English"], "F")
    api.available(ana.agent_id)
    call = api.post("/api/calls", {"preferences": {}}).json()
    body = api.release(ana.agent_id).json()
    assert body["agent"]["status"] == AgentStatus.QUEUED
    assert body["call"] is None
    ended = api.get(f"/api/calls/{call['call_id']}").json()
    assert ended["status"] == CallStatus.ENDED
    assert ended["ended_at"]


@pytest.mark.parametrize("then, status", [("wrap_up", AgentStatus.WRAP_UP), ("offline", AgentStatus.OFFLINE)])
def test_releasing_an_agent_can_send_them_to_wrap_up_or_offline(moto_db, api, then, status):
    ana = agent("Ana", ["English"], "F")
    api.available(ana.agent_id)
    api.post("/api/calls", {"preferences": {}})
    response = api.release(ana.agent_id, then)
    assert response.status_code == 200
    assert response.json()["agent"]["status"] == status
    assert response.json()["call"] is None


def test_taking_an_agent_offline_removes_them_from_every_queue(moto_db, api):
    ana = agent("Ana", ["English", "French"], "F")
    api.available(ana.agent_id)
    response = api.offline(ana.agent_id)
    assert response.status_code == 200
    assert response.json() == {"agent": response.json()["agent"]}
    assert response.json()["agent"]["status"] == AgentStatus.OFFLINE
    assert all(q["depth"] == 0 for q in api.get("/api/queues").json()["queues"])


def test_making_an_agent_available_twice_is_a_conflict(moto_db, api):
    ana = agent("Ana", ["English"], "F")
    assert api.available(ana.agent_id).status_code == 200
    body = assert_problem(api.available(ana.agent_id), 409, "Conflict")
    assert "already queued" in body["message"]


def test_releasing_an_agent_who_is_not_attending_names_the_call_that_is_not_theirs(moto_db, api):
    ana = agent("Ana", ["English"], "F")
    body = assert_problem(api.post(f"/api/agents/{ana.agent_id}/release", {"call_id": "c0ffee"}), 404)
    assert "c0ffee" in body["message"]


def test_it_answers_404_for_an_unknown_call(moto_db, api):
    body = assert_problem(api.get("/api/calls/nope"), 404, "Not found")
    assert "nope" in body["message"]


@pytest.mark.parametrize(
    "action, body", [("available", {"version": 1}), ("release", {"call_id": "c1"}), ("offline", {"version": 1})]
)
def test_it_answers_404_for_an_unknown_agent(moto_db, api, action, body):
    assert_problem(api.post(f"/api/agents/nobody/{action}", body), 404, "Not found")


# --- queues -------------------------------------------------------------------------


def test_it_lists_queues_with_depth_and_oldest_age(moto_db, api, viewer_api):
    ana = agent("Ana", ["English"], "F")
    api.available(ana.agent_id)
    api.post("/api/calls", {"preferences": {"language": "French"}})
    response = viewer_api.get("/api/queues")
    assert response.status_code == 200
    body = response.json()
    assert body["callers_waiting"] == 1
    assert len(body["queues"]) == 9  # 3 languages x 3 genders
    english_f = next(q for q in body["queues"] if q["name"] == "Q#English#F")
    assert english_f["combination"] == {"language": "English", "gender": "F"}
    assert english_f["depth"] == 1
    assert english_f["version"] >= 1
    assert english_f["oldest_age_seconds"] >= 0
    empty = next(q for q in body["queues"] if q["name"] == "Q#French#M")
    assert empty["depth"] == 0
    assert empty["oldest_age_seconds"] is None


# --- methods, paths, outages ----------------------------------------------------------


def test_a_wrong_method_is_a_json_405_with_allow(moto_db, api):
    response = api.get("/api/shipments")
    assert_problem(response, 405, "Method not allowed")
    assert response["Allow"] == "POST"
    both = api.client.put("/api/calls", **api._headers({}))
    assert_problem(both, 405)
    assert both["Allow"] == "GET, POST"
    assert_problem(api.post("/api/queues"), 405)


def test_an_unknown_api_path_is_a_json_404(moto_db, api):
    assert_problem(api.get("/api/nothing/here"), 404, "Not found")
    assert_problem(Api().get("/api/nothing/here"), 404, "Not found")


def test_unreachable_dynamodb_is_a_json_503(api, settings):
    settings.DYNAMODB_ENDPOINT_URL = f"http://127.0.0.1:{free_port()}"
    settings.DYNAMODB_MAX_ATTEMPTS = 1
    settings.DYNAMODB_CONNECT_TIMEOUT = 0.5
    for response in (api.get("/api/queues"), api.post("/api/calls", {"preferences": {}})):
        body = assert_problem(response, 503, "DynamoDB unavailable")
        assert settings.DYNAMODB_ENDPOINT_URL not in body["message"] + response.content.decode()  # logged, not shown
        assert response["Retry-After"]
        assert "Traceback" not in response.content.decode()


# --- the command ----------------------------------------------------------------------


def test_the_command_prints_a_working_token_once(moto_db, supervisor):
    out, err = StringIO(), StringIO()
    call_command("create_api_token", supervisor.username, "--name", "phone system", stdout=out, stderr=err)
    raw = out.getvalue().strip()
    token = ApiToken.objects.get()
    assert token.name == "phone system"
    assert token.user == supervisor
    assert token.key_hash == hash_token(raw)
    assert Api(raw).get("/api/queues").status_code == 200


def test_the_command_refuses_an_unknown_user(db):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No user named"):
        call_command("create_api_token", "ghost", stdout=StringIO(), stderr=StringIO())


# --- the admin ------------------------------------------------------------------------


def test_the_admin_lists_tokens_without_their_hash_and_revokes_them(client, staff, supervisor):
    token, raw = ApiToken.issue(supervisor, "phone system")
    client.force_login(staff)
    html = client.get("/admin/queues_app/apitoken/").content.decode()
    assert token.prefix in html
    assert token.key_hash not in html and raw not in html
    response = client.post(
        "/admin/queues_app/apitoken/", {"action": "revoke", "_selected_action": [token.pk]}, follow=True
    )
    assert response.status_code == 200
    token.refresh_from_db()
    assert token.revoked
    assert token.key_hash not in client.get(f"/admin/queues_app/apitoken/{token.pk}/change/").content.decode()


# --- idempotent replays under backpressure ------------------------------------------


@pytest.fixture
def call_bound(settings):
    from queues_app.admission import BackpressureGate

    def bound(calls):
        settings.SWITCHBOARD_FAIRNESS = {
            **settings.SWITCHBOARD_FAIRNESS,
            "depth_cache_seconds": 0,
            "backlog_bounds": {"calls": calls, "live": 100},
        }

    BackpressureGate.forget()
    yield bound
    BackpressureGate.forget()


def test_a_retried_call_is_answered_even_while_new_calls_get_429(moto_db, api, call_bound):
    call_bound(1)
    first = api.post("/api/calls", {"preferences": {"language": "French"}}, HTTP_IDEMPOTENCY_KEY="pbx-1")
    api.post("/api/calls", {"preferences": {"language": "French"}}, HTTP_IDEMPOTENCY_KEY="pbx-2")
    assert first.status_code == 201, first.content
    refused = api.post("/api/calls", {"preferences": {"language": "French"}}, HTTP_IDEMPOTENCY_KEY="pbx-3")
    assert_problem(refused, 429)
    replay = api.post("/api/calls", {"preferences": {"language": "French"}}, HTTP_IDEMPOTENCY_KEY="pbx-1")
    assert replay.status_code == 200, replay.content
    assert replay["Idempotent-Replayed"] == "true"
    assert replay["Location"] == f"/api/calls/{first.json()['call_id']}"
    assert replay.json()["call_id"] == first.json()["call_id"]
    assert len(CallCenter().line.waiting_calls()[0]) == 2


def test_a_replay_under_backpressure_is_not_recorded_again(moto_db, api, call_bound):
    from queues_app.audit.store import AuditTrail

    call_bound(5)
    call_id = api.post("/api/calls", {"preferences": {}}, HTTP_IDEMPOTENCY_KEY="pbx-9").json()["call_id"]
    call_bound(0)
    assert api.post("/api/calls", {"preferences": {}}, HTTP_IDEMPOTENCY_KEY="pbx-9").status_code == 200
    assert len(AuditTrail().for_target(f"call:{call_id}").entries) == 1


# --- shipments: receives and failures --------------------------------------------------


def test_a_shipment_shows_its_receive_count_and_failures(moto_db, api):
    from queues_app.shipments.queue import ShipmentQueue

    shipment_id = api.post("/api/shipments", {"data": {"to": "Porto"}}).json()["shipment_id"]
    queue = ShipmentQueue()
    lease = queue.receive()
    queue.fail(shipment_id, lease.receipt, "printer jammed")
    body = api.get(f"/api/shipments/{shipment_id}").json()
    assert body["receive_count"] == 1 and body["attempts"] == 1
    (failure,) = body["failures"]
    assert (failure["reason"], failure["receive"]) == ("printer jammed", 1)
    assert failure["at"]


def test_a_shipments_failure_history_keeps_the_last_ten_through_restores(moto_db, api):
    from queues_app.shipments.queue import RetryPolicy, ShipmentQueue

    shipment_id = api.post("/api/shipments", {"data": {"to": "Porto"}}).json()["shipment_id"]
    queue = ShipmentQueue(retry=RetryPolicy(max_receives=1))  # every failure sends it to the DLQ
    for attempt in range(12):
        lease = queue.receive()
        queue.fail(shipment_id, lease.receipt, f"failure {attempt}")
        queue.restore(shipment_id)
    body = api.get(f"/api/shipments/{shipment_id}").json()
    assert body["receive_count"] == 12
    assert [f["reason"] for f in body["failures"]] == [f"failure {n}" for n in range(2, 12)]
    assert [f["receive"] for f in body["failures"]] == list(range(3, 13))


# --- hang-ups -------------------------------------------------------------------------


def test_a_caller_who_hangs_up_leaves_the_line_at_once_and_counts_as_abandoned(moto_db, api):
    from queues_app.figures import counters
    from queues_app.figures.service_level import ServiceLevelReader

    call = api.post("/api/calls", {"preferences": {"language": "French", "gender": "X"}}).json()
    other = api.post("/api/calls", {"preferences": {"language": "French", "gender": "X"}}).json()
    assert CallCenter().line.count_waiting() == (2, False)

    response = api.post(f"/api/calls/{call['call_id']}/abandon")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "abandoned" and body["ended_at"] and body["agent_id"] is None
    assert CallCenter().line.count_waiting() == (1, False)
    assert [w["call_id"] for w in CallCenter().line.waiting_calls()[0]] == [other["call_id"]]
    assert api.get(f"/api/calls/{call['call_id']}").json()["status"] == "abandoned"

    counters.MetricsStore(moto_db).flush()
    level = ServiceLevelReader(moto_db).read()
    assert level.recent.overall.abandoned == 1
    assert level.today.overall.abandoned == 1


def test_hanging_up_a_call_that_no_longer_waits_is_a_409_saying_what_happened_and_a_repeat_is_done(moto_db, api):
    ana = agent("Ana", ["English"], "F")
    api.available(ana.agent_id)
    taken = api.post("/api/calls", {"preferences": {"language": "English"}}).json()
    body = assert_problem(api.post(f"/api/calls/{taken['call_id']}/abandon"), 409)
    assert "assigned to Ana" in body["message"]

    waiting = api.post("/api/calls", {"preferences": {"language": "French"}}).json()
    first = api.post(f"/api/calls/{waiting['call_id']}/abandon")
    assert first.status_code == 200 and first["Idempotent-Replayed"] == "false"
    # The same hang-up sent again (its answer lost) is answered as the first was.
    again = api.post(f"/api/calls/{waiting['call_id']}/abandon")
    assert again.status_code == 200 and again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert_problem(api.post("/api/calls/nosuchcall00/abandon"), 404)
