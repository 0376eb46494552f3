"""API tokens that expire, and changes made through the API that name their token in the
audit trail and the log."""

import logging
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from queues_app.audit.store import AuditTrail
from queues_app.models import ApiToken
from tests.helpers.api import Api, agent, assert_problem

# --- expiry ---------------------------------------------------------------------------


def test_a_token_without_expiry_never_expires(moto_db, supervisor):
    token, raw = ApiToken.issue(supervisor, "phone system")
    assert token.expires_at is None and not token.expired
    assert Api(raw).get("/api/queues").status_code == 200


def test_a_token_is_accepted_until_it_expires_and_refused_after(moto_db, supervisor):
    token, raw = ApiToken.issue(supervisor, "phone system", expires_at=timezone.now() + timedelta(minutes=5))
    assert Api(raw).get("/api/queues").status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = Api(raw).get("/api/queues")
    body = assert_problem(response, 401, "Authentication required")
    assert "expired" in body["message"]
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_an_expired_token_may_not_act_either(moto_db, supervisor):
    _, raw = ApiToken.issue(supervisor, "phone system", expires_at=timezone.now() - timedelta(days=1))
    ana = agent("Ana", ["English"], "F")
    assert_problem(Api(raw).post(f"/api/agents/{ana.agent_id}/available", {"version": 1}), 401)


def test_a_revoked_expired_token_is_not_told_apart_from_an_unknown_one(moto_db, supervisor):
    token, raw = ApiToken.issue(supervisor, "phone system", expires_at=timezone.now() - timedelta(days=1))
    ApiToken.objects.filter(pk=token.pk).update(revoked=True)
    body = assert_problem(Api(raw).get("/api/queues"), 401)
    assert "expired" not in body["message"]


def test_the_querysets_split_tokens_by_expiry(supervisor):
    now = timezone.now()
    live, _ = ApiToken.issue(supervisor, "live", expires_at=now + timedelta(days=1))
    forever, _ = ApiToken.issue(supervisor, "forever")
    old, _ = ApiToken.issue(supervisor, "old", expires_at=now - timedelta(days=1))
    assert set(ApiToken.objects.active()) == {live, forever}
    assert set(ApiToken.objects.expired()) == {old}


def test_the_command_makes_a_token_that_expires_in_so_many_days(moto_db, supervisor):
    out, err = StringIO(), StringIO()
    call_command(
        "create_api_token", supervisor.username, "--name", "phone", "--expires-in-days", "30", stdout=out, stderr=err
    )
    token = ApiToken.objects.get()
    assert timedelta(days=29, hours=23) < token.expires_at - timezone.now() <= timedelta(days=30)
    assert "expires" in err.getvalue() and token.prefix in err.getvalue()
    assert Api(out.getvalue().strip()).get("/api/queues").status_code == 200


def test_the_command_makes_a_token_that_never_expires_by_default(moto_db, supervisor):
    err = StringIO()
    call_command("create_api_token", supervisor.username, "--name", "phone", stdout=StringIO(), stderr=err)
    assert ApiToken.objects.get().expires_at is None
    assert "does not expire" in err.getvalue()


@pytest.mark.parametrize("days", ["0", "-3", "4000"])
def test_the_command_refuses_a_lifetime_out_of_range(supervisor, days):
    with pytest.raises(CommandError, match="expires-in-days"):
        call_command(
            "create_api_token", supervisor.username, "--expires-in-days", days, stdout=StringIO(), stderr=StringIO()
        )
    assert not ApiToken.objects.exists()


def test_the_admin_lists_the_expiry(client, staff, supervisor):
    moment = timezone.now() + timedelta(days=3)
    ApiToken.issue(supervisor, "phone system", expires_at=moment)
    client.force_login(staff)
    html = client.get("/admin/queues_app/apitoken/").content.decode()
    assert "Expires at" in html
    assert str(moment.year) in html


# --- which token made a change --------------------------------------------------------


def test_the_audit_trail_names_the_token_that_made_a_change(moto_db, api, supervisor, client):
    token = ApiToken.objects.get()
    ana = agent("Ana", ["English"], "F")
    assert api.available(ana.agent_id, HTTP_X_TRACE_ID="pbx-1").status_code == 200
    [entry] = AuditTrail().for_target(f"agent:{ana.agent_id}").entries
    assert entry.source == "api"
    assert entry.actor == f"{supervisor.username} via token phone system ({token.prefix})"
    assert entry.trace_id == "pbx-1"
    # The audit page shows it.
    client.force_login(supervisor)
    response = client.get("/audit/")
    assert response.status_code == 200
    assert f"phone system ({token.prefix})" in response.content.decode()


def test_every_kind_of_api_change_names_its_token(moto_db, api):
    token = ApiToken.objects.get()
    ana = agent("Ana", ["English"], "F")
    api.available(ana.agent_id)
    call = api.post("/api/calls", {"preferences": {}}).json()
    api.release(ana.agent_id, "offline")
    shipment = api.post("/api/shipments", {"data": {"to": "Oslo"}}).json()
    entries = [
        *AuditTrail().for_target(f"agent:{ana.agent_id}").entries,
        *AuditTrail().for_target(f"call:{call['call_id']}").entries,
        *AuditTrail().for_target(f"shipment:{shipment['shipment_id']}").entries,
    ]
    assert {e.action for e in entries} >= {"agent.available", "agent.release", "call.create", "shipment.enqueue"}
    # What the queues did on their own as a result (the matcher's assignment) is theirs.
    made = [e for e in entries if e.source != "system"]
    assert made and all(e.source == "api" for e in made)
    assert all(e.actor.endswith(f"via token phone system ({token.prefix})") for e in made)
    assert {e.actor for e in entries if e.source == "system"} <= {"matcher"}


def test_the_log_line_of_an_api_change_names_the_token(moto_db, api, caplog):
    token = ApiToken.objects.get()
    with caplog.at_level(logging.INFO, logger="queues_app.api"):
        response = api.post("/api/shipments", {"data": {}}, HTTP_X_TRACE_ID="pbx-2")
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("queues_app.api")]
    assert any(
        response.json()["shipment_id"] in line and f"via token phone system ({token.prefix})" in line for line in lines
    ), lines


def test_a_read_writes_no_change_line(moto_db, api, caplog):
    with caplog.at_level(logging.INFO, logger="queues_app.api"):
        api.get("/api/queues")
    assert not [r for r in caplog.records if r.name.startswith("queues_app.api")]


def test_a_token_never_begins_with_a_dash_that_a_command_line_would_take_for_an_option(supervisor, monkeypatch):
    from queues_app import models

    drawn = iter(["-starts-like-an-option", "Abc-def_ghi"])
    monkeypatch.setattr(models.secrets, "token_urlsafe", lambda size: next(drawn))
    token, raw = ApiToken.issue(supervisor, name="cli")
    assert raw == "Abc-def_ghi"
    assert ApiToken.find(raw) == token
