"""Page cursors are signed: one that was tampered with, cut short, signed elsewhere or
for another purpose, or that has the wrong shape, is a clear 400 on every list page (and
as JSON), never a 500 or a 503; the cursors the pages hand out still page."""

from datetime import timedelta

import pytest
from django.core import signing
from django.urls import reverse

from queues_app.agents.roster import Agents
from queues_app.audit.store import RECENT_CURSOR, TARGET_CURSOR, AuditTrail
from queues_app.ddb import errors, paging
from queues_app.tasks.queue import TaskQueue, TaskStatus

KEY = {"pk": {"S": "AGENT#1"}, "sk": {"S": "AGENT"}}
INVALID = paging.INVALID


def tampered(cursor: str) -> str:
    """The cursor with one character of its payload changed."""
    i = len(cursor) // 3
    return cursor[:i] + ("A" if cursor[i] != "A" else "B") + cursor[i + 1 :]


def old_style(state) -> str:
    """A cursor as this project wrote them before they were signed: base64 JSON."""
    import base64
    import json

    raw = json.dumps(state, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# --- the encoding -----------------------------------------------------------------


def test_a_key_comes_back_as_it_went_in():
    key = {"pk": {"S": "SHIPMENT"}, "n": {"N": "12"}}
    cursor = paging.encode_cursor(key)
    assert cursor and "{" not in cursor
    assert paging.decode_cursor(cursor) == key
    assert paging.encode_cursor(None) is None and paging.decode_cursor(None) is None
    assert paging.decode_cursor("") is None


def test_a_state_comes_back_for_its_own_purpose_only():
    cursor = paging.encode_state({"day": "2026-11-21", "key": None}, purpose="one")
    assert paging.decode_state(cursor, purpose="one") == {"day": "2026-11-21", "key": None}
    with pytest.raises(errors.InvalidRequest, match="page link"):
        paging.decode_state(cursor, purpose="other")


def bad_cursors():
    good = paging.encode_cursor(KEY)
    assert good
    return {
        "tampered": tampered(good),
        "truncated": good[:-5],
        "payload only": good.split(":")[0],
        "unsigned base64 JSON": old_style(KEY),
        "garbage": "not-a-cursor!!",
        "other purpose": paging.encode_state(KEY, purpose="audit-recent"),
        "another secret": signing.Signer(key="someone-elses-secret", salt="switchboard.cursor.key").sign_object(KEY),
        "huge": "A" * 10_000,
    }


@pytest.mark.parametrize("name", list(bad_cursors()))
def test_a_cursor_that_is_not_ours_is_invalid(name):
    with pytest.raises(errors.InvalidRequest, match="page link") as caught:
        paging.decode_cursor(bad_cursors()[name])
    assert caught.value.message == INVALID


WRONG_SHAPES = {
    "unknown type": {"pk": {"ZZ": "x"}},
    "two types": {"pk": {"S": "x", "N": "1"}},
    "no type": {"pk": {}},
    "bare value": {"pk": "x"},
    "number not as text": {"pk": {"N": 5}},
    "list": {"pk": {"L": []}},
    "empty": {},
    "map value": {"pk": {"S": {"S": "x"}}},
}


@pytest.mark.parametrize("name", list(WRONG_SHAPES))
def test_a_signed_cursor_of_the_wrong_shape_is_invalid(name):
    cursor = paging.encode_state(WRONG_SHAPES[name], purpose=paging.KEY_PURPOSE)
    with pytest.raises(errors.InvalidRequest, match="page link"):
        paging.decode_cursor(cursor)


def test_a_signed_cursor_that_is_not_an_object_is_invalid():
    cursor = signing.Signer(salt="switchboard.cursor.key").sign_object(["pk", "S"])
    with pytest.raises(errors.InvalidRequest, match="page link"):
        paging.decode_cursor(cursor)


# --- every list page ----------------------------------------------------------------


LIST_PAGES = {
    "agents": (reverse("agents"), paging.KEY_PURPOSE),
    "agents by status": (reverse("agents") + "?status=offline", paging.KEY_PURPOSE),
    "calls": (reverse("calls"), paging.KEY_PURPOSE),
    "shipments queued": (reverse("shipments") + "?view=queue", paging.KEY_PURPOSE),
    "shipments in flight": (reverse("shipments") + "?view=in_flight", paging.KEY_PURPOSE),
    "shipments delayed": (reverse("shipments") + "?view=delayed", paging.KEY_PURPOSE),
    "shipments dlq": (reverse("shipments") + "?view=dlq", paging.KEY_PURPOSE),
    "tasks pending": (reverse("tasks") + "?view=pending", paging.KEY_PURPOSE),
    "tasks failed": (reverse("tasks") + "?view=failure", paging.KEY_PURPOSE),
    "audit": (reverse("audit"), RECENT_CURSOR),
    "audit of one item": (reverse("audit") + "?target=agent:a-1", TARGET_CURSOR),
}


def with_cursor(url: str, cursor: str) -> str:
    from urllib.parse import quote

    return url + ("&" if "?" in url else "?") + "cursor=" + quote(cursor, safe="")


def forged_cursors(purpose: str) -> dict[str, str]:
    """What someone editing the URL could send: a key of the wrong shape (signed with the
    right salt, as if the secret had leaked), a tampered and a cut-short cursor, and the
    unsigned form of the very key that used to give a 503."""
    if purpose == RECENT_CURSOR:
        signed = paging.encode_state({"day": "2026-11-21", "key": {"pk": {"ZZ": "x"}}}, purpose=purpose)
    else:
        signed = paging.encode_state({"pk": {"ZZ": "x"}}, purpose=purpose)
    valid = (
        paging.encode_state({"day": "2026-11-21", "key": None}, purpose=purpose)
        if purpose == RECENT_CURSOR
        else paging.encode_cursor(KEY, purpose=purpose)
    )
    assert valid
    return {
        "wrong shape": signed,
        "tampered": tampered(valid),
        "truncated": valid[: len(valid) // 2],
        "unsigned": old_style({"pk": {"ZZ": "x"}}),
        "other purpose": paging.encode_cursor(KEY, purpose="elsewhere") or "",
    }


@pytest.mark.parametrize("page", list(LIST_PAGES))
def test_a_forged_cursor_on_a_list_page_is_a_400_naming_the_problem(supervisor_client, moto_db, page):
    url, purpose = LIST_PAGES[page]
    for forged, cursor in forged_cursors(purpose).items():
        response = supervisor_client.get(with_cursor(url, cursor))
        assert response.status_code == 400, forged
        assert INVALID in response.content.decode(), forged


@pytest.mark.parametrize("page", list(LIST_PAGES))
def test_a_forged_cursor_asked_for_as_json_is_a_json_400(supervisor_client, moto_db, page):
    url, purpose = LIST_PAGES[page]
    response = supervisor_client.get(
        with_cursor(url, forged_cursors(purpose)["wrong shape"]), HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 400
    assert response.json()["message"] == INVALID


def test_an_audit_cursor_whose_day_is_not_a_date_is_a_400(supervisor_client, moto_db):
    states = [
        {"day": day, "key": None}
        for day in (5, "zzzz", ["2026-11-21"], None, "", "2026-13-45", "2026-11-21T00", {"d": 1})
    ]
    states += [{"key": None}, {"day": "2026-11-21", "key": "pk"}, {"day": "2026-11-21", "key": {"pk": {"ZZ": "x"}}}]
    for state in states:
        cursor = paging.encode_state(state, purpose=RECENT_CURSOR)
        response = supervisor_client.get(with_cursor(reverse("audit"), cursor))
        assert response.status_code == 400, state
        assert INVALID in response.content.decode(), state


@pytest.mark.parametrize("model", ["agententry", "shipmententry", "taskentry"])
def test_a_forged_cursor_in_the_admin_is_told_not_a_server_error(client, staff, moto_db, model):
    client.force_login(staff)
    url = reverse(f"admin:queues_app_{model}_changelist")
    response = client.get(with_cursor(url, forged_cursors(paging.KEY_PURPOSE)["wrong shape"]))
    assert response.status_code < 500
    assert INVALID in response.content.decode()


# --- the cursors the pages hand out still page ---------------------------------------------------


def test_the_agents_page_pages_with_its_own_cursor(supervisor_client, moto_db):
    agents = Agents()
    names = {agents.create(f"Agent {i:02d}", {"language": ["English"], "gender": ["X"]}).name for i in range(30)}
    first = supervisor_client.get(reverse("agents"))
    assert first.status_code == 200
    cursor = first.context["page"].next_cursor
    assert cursor
    second = supervisor_client.get(with_cursor(reverse("agents"), cursor))
    assert second.status_code == 200
    seen = [a.name for a in first.context["page"].items] + [a.name for a in second.context["page"].items]
    assert len(seen) == len(set(seen)) == 30 and set(seen) == names


def test_a_cursor_of_another_list_is_a_400(supervisor_client, moto_db):
    agents = Agents()
    for i in range(30):
        agents.create(f"Agent {i:02d}", {"language": ["English"], "gender": ["X"]})
    cursor = supervisor_client.get(reverse("agents")).context["page"].next_cursor
    for url in (
        reverse("agents") + "?status=offline",  # another index: agents of one status by name
        reverse("calls"),
        reverse("shipments") + "?view=dlq",
        reverse("tasks") + f"?view={TaskStatus.PENDING}",
    ):
        response = supervisor_client.get(with_cursor(url, cursor))
        assert response.status_code == 400, url
        assert paging.INVALID in response.content.decode(), url


def test_the_tasks_page_pages_with_its_own_cursor(supervisor_client, moto_db):
    tasks = TaskQueue()
    made = {tasks.create({"n": n}).task_id for n in range(30)}
    first = supervisor_client.get(reverse("tasks") + f"?view={TaskStatus.PENDING}")
    cursor = first.context["page"].next_cursor
    assert cursor
    second = supervisor_client.get(with_cursor(reverse("tasks") + f"?view={TaskStatus.PENDING}", cursor))
    assert second.status_code == 200
    seen = [t.task_id for t in first.context["page"].items] + [t.task_id for t in second.context["page"].items]
    assert len(seen) == len(set(seen)) and set(seen) == made


def test_the_audit_trail_pages_within_a_day_and_across_days(supervisor_client, moto_db, clock):
    trail = AuditTrail(moto_db, clock=clock)
    for n in range(60):
        trail.record(actor="sam", source="page", action="note", target=f"agent:a-{n}", summary=f"n{n}")
    clock.advance(-3 * 86_400)  # three days earlier, with two empty days between
    for n in range(5):
        trail.record(actor="sam", source="page", action="note", target=f"agent:b-{n}", summary=f"old{n}")
    clock.advance(3 * 86_400)
    newest = trail.recent(limit=50)
    assert [e.summary for e in newest.entries] == [f"n{n}" for n in range(59, 9, -1)]
    assert newest.next_cursor
    older = trail.recent(cursor=newest.next_cursor, limit=50)
    assert [e.summary for e in older.entries] == [f"n{n}" for n in range(9, -1, -1)] + [
        f"old{n}" for n in range(4, -1, -1)
    ]


def test_the_audit_page_follows_its_own_cursor(supervisor_client, moto_db):
    trail = AuditTrail(moto_db)
    for n in range(55):
        trail.record(actor="sam", source="page", action="note", target="agent:a-1", summary=f"n{n}")
    for url in (reverse("audit"), reverse("audit") + "?target=agent:a-1"):
        first = supervisor_client.get(url)
        cursor = first.context["page"].next_cursor
        assert cursor and len(first.context["page"].entries) == 50
        second = supervisor_client.get(with_cursor(url, cursor))
        assert second.status_code == 200
        assert [e.summary for e in second.context["page"].entries] == [f"n{n}" for n in range(4, -1, -1)]


def test_one_items_history_cursor_is_refused_for_the_whole_trail(supervisor_client, moto_db):
    trail = AuditTrail(moto_db)
    for _ in range(3):
        trail.record(actor="sam", source="page", action="note", target="agent:a-1")
    cursor = trail.for_target("agent:a-1", limit=1).next_cursor
    assert cursor
    assert supervisor_client.get(with_cursor(reverse("audit") + "?target=agent:a-1", cursor)).status_code == 200
    assert supervisor_client.get(with_cursor(reverse("audit"), cursor)).status_code == 400


def test_a_later_page_of_a_day_that_returns_more_than_fits_is_cut_and_carried_on(moto_db, clock, monkeypatch):
    """DynamoDB may end a page early (1 MB); the next page of the same day then asks with
    the first page's Limit. The trail keeps what fits and carries on after the last kept."""
    trail = AuditTrail(moto_db, clock=clock)
    for n in range(10):
        trail.record(actor="sam", source="page", action="note", target="agent:a", summary=f"n{n}")
    real_pages = moto_db.pages

    def early_first_page(operation, **params):
        pages = real_pages(operation, **params)
        first = next(pages)
        # As if the 1 MB limit had ended the first page after two items.
        items = first["Items"][:2]
        last = items[-1]
        yield {**first, "Items": items, "LastEvaluatedKey": {"pk": last["pk"], "sk": last["sk"]}}
        yield from real_pages(operation, **{**params, "ExclusiveStartKey": {"pk": last["pk"], "sk": last["sk"]}})

    monkeypatch.setattr(moto_db, "pages", early_first_page)
    page = trail.recent(limit=4)
    assert [e.summary for e in page.entries] == ["n9", "n8", "n7", "n6"]
    monkeypatch.undo()
    rest = trail.recent(cursor=page.next_cursor, limit=10)
    assert [e.summary for e in rest.entries] == [f"n{n}" for n in range(5, -1, -1)]


def test_a_stale_audit_cursor_ends_the_trail(moto_db, clock):
    trail = AuditTrail(moto_db, clock=clock, retention_days=2)
    day = (clock.moment - timedelta(days=5)).strftime("%Y-%m-%d")
    page = trail.recent(cursor=paging.encode_state({"day": day, "key": None}, purpose=RECENT_CURSOR))
    assert page.entries == [] and page.next_cursor is None
