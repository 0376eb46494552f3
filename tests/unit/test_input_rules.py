"""Each input rule (an item's id, a version, `then`, preferences, names) is one definition
in queues_app.inputs: the pages' forms, the API and the admin refuse the same bad value,
each with a clear message that names it (a 400 with `fields` on the API), change
nothing, and take the largest value the rule allows."""

import re
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse

from queues_app import inputs
from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.forms import AgentFilterForm, AgentForm, ReleaseForm, TransferForm
from queues_app.shipments.queue import ShipmentQueue
from tests.helpers.api import assert_problem
from tests.helpers.seen import shown, ticked

SKILLS = {"language": ["Spanish"], "gender": ["F"]}
TOO_LONG_ID = "c" * (inputs.ID_MAX + 1)
LONGEST_ID = "a" * inputs.ID_MAX
ADMIN_AGENTS = reverse("admin:queues_app_agententry_changelist")


@pytest.fixture
def admin_client(staff):
    client = Client()
    client.force_login(staff)
    return client


def attending(agent_id=None):
    ana = Agents().create("Ana", SKILLS, agent_id=agent_id)
    center = CallCenter()
    center.make_available(ana.agent_id)
    call, _ = center.create_call({"language": "Spanish", "gender": "any"})
    assert call.agent_id == ana.agent_id
    return ana, call


def page_text(response) -> str:
    return unescape(response.content.decode())


def admin_acts(client, action, tokens):
    """An admin bulk action, confirmed, and the page it comes back to."""
    body = {"action": action, "ids": tokens, "confirmed": "1"}
    return page_text(client.post(ADMIN_AGENTS, body, follow=True))


# --- one definition -------------------------------------------------------------------------


def test_the_forms_and_the_api_document_read_the_same_rules(supervisor_client):
    spec = supervisor_client.get("/api/openapi.json").json()
    schemas = spec["components"]["schemas"]
    path_id = spec["paths"]["/api/agents/{agent_id}"]["get"]["parameters"][0]["schema"]
    assert (path_id["maxLength"], path_id["pattern"]) == (inputs.ID_MAX, inputs.ID_PATTERN)
    assert schemas["ReleaseIn"]["properties"]["call_id"]["maxLength"] == inputs.ID_MAX
    assert ReleaseForm.base_fields["call_id"].max_length == inputs.ID_MAX
    assert TransferForm.base_fields["from_agent_id"].max_length == inputs.ID_MAX

    version = schemas["VersionIn"]["properties"]["version"]
    assert (version["minimum"], version["maximum"]) == (inputs.VERSION_MIN, inputs.VERSION_MAX)

    assert schemas["ReleaseIn"]["properties"]["then"]["enum"] == list(inputs.THEN)
    assert [value for value, _ in ReleaseForm.base_fields["then"].choices] == list(inputs.THEN)
    assert [value for value, _ in TransferForm.base_fields["then"].choices] == list(inputs.THEN)

    assert schemas["ShipmentIn"]["properties"]["tenant"]["anyOf"][0]["pattern"] == inputs.SHORT_NAME_PATTERN
    assert AgentForm.base_fields["name"].max_length == inputs.NAME_MAX
    assert AgentFilterForm.base_fields["q"].max_length == inputs.NAME_MAX


# --- an item's id ----------------------------------------------------------------------------


def test_an_id_one_character_too_long_is_refused_by_a_page_the_api_and_the_admin(
    supervisor_client, api, admin_client, moto_db
):
    ana, call = attending()
    page = page_text(
        supervisor_client.post(
            reverse("agent-release", args=[ana.agent_id]),
            shown(ana.agent_id, call_id=TOO_LONG_ID, confirmed="1"),
            follow=True,
        )
    )
    assert f"Call: {inputs.ID_PROBLEM}" in page
    transfer = page_text(
        supervisor_client.post(
            reverse("call-transfer", args=[call.call_id]),
            {"to": "agent", "agent_id": TOO_LONG_ID, "from_agent_id": ana.agent_id},
            follow=True,
        )
    )
    assert f"Agent id: {inputs.ID_PROBLEM}" in transfer

    body = assert_problem(api.post(f"/api/agents/{ana.agent_id}/release", {"call_id": TOO_LONG_ID}), 400)
    assert set(body["fields"]) == {"call_id"} and inputs.ID_RULE in body["fields"]["call_id"]
    body = assert_problem(api.get(f"/api/calls/{TOO_LONG_ID}"), 400)
    assert body["fields"] == {"call_id": inputs.ID_PROBLEM}

    assert "is not an id" in admin_acts(admin_client, "offline", [f"{TOO_LONG_ID}/1"])
    assert "is not an id" in admin_acts(admin_client, "release", [f"{ana.agent_id}/1/{TOO_LONG_ID}"])

    assert Agents().get(ana.agent_id).status == AgentStatus.ATTENDING
    assert CallCenter().get_call(call.call_id).status == CallStatus.ASSIGNED


@pytest.mark.parametrize("bad", ["a b", "a/b", "a\\b", "a\x07b"])
def test_an_id_with_a_space_slash_or_control_character_is_refused_alike(supervisor_client, api, moto_db, bad):
    ana, call = attending()
    page = page_text(
        supervisor_client.post(
            reverse("call-transfer", args=[call.call_id]),
            {"to": "preferences", "from_agent_id": bad, "skill_language": "any", "skill_gender": "any"},
            follow=True,
        )
    )
    assert f"From agent id: {inputs.ID_PROBLEM}" in page
    body = assert_problem(api.post(f"/api/calls/{call.call_id}/transfer", {"from_agent_id": bad}), 400)
    assert inputs.ID_RULE in body["fields"]["from_agent_id"]
    assert CallCenter().get_call(call.call_id).agent_id == ana.agent_id


def test_the_longest_id_is_taken_by_a_page_the_api_and_the_admin(supervisor_client, api, admin_client, moto_db):
    ana = Agents().create("Ana", SKILLS, agent_id=LONGEST_ID)
    page = page_text(
        supervisor_client.post(reverse("agent-available", args=[LONGEST_ID]), shown(LONGEST_ID), follow=True)
    )
    assert "Ana is queued." in page
    answer = api.post(f"/api/agents/{LONGEST_ID}/offline", {"version": Agents().get(LONGEST_ID).version})
    assert answer.status_code == 200, answer.content
    assert Agents().get(LONGEST_ID).status == AgentStatus.OFFLINE
    told = admin_acts(admin_client, "enqueue", [ticked(ana.agent_id)])
    assert "Enqueue the selected agents (make available): 1 made available" in told, told
    assert Agents().get(LONGEST_ID).status == AgentStatus.QUEUED


# --- an item's version -------------------------------------------------------------------------


def test_a_version_past_the_largest_is_refused_by_a_page_the_api_and_the_admin(
    supervisor_client, api, admin_client, moto_db
):
    ana = Agents().create("Ana", SKILLS)
    too_big = inputs.VERSION_MAX + 1
    page = page_text(
        supervisor_client.post(reverse("agent-available", args=[ana.agent_id]), {"version": too_big}, follow=True)
    )
    assert "The version sent with the form is not valid" in page

    body = assert_problem(api.post(f"/api/agents/{ana.agent_id}/available", {"version": too_big}), 400)
    assert set(body["fields"]) == {"version"} and inputs.VERSION_RANGE in body["fields"]["version"]

    told = admin_acts(admin_client, "enqueue", [f"{ana.agent_id}/{too_big}"])
    assert f"which version of each item you saw ({inputs.VERSION_RANGE})" in told
    assert Agents().get(ana.agent_id).status == AgentStatus.OFFLINE


@pytest.mark.parametrize("sent", ["0", "-1", "+1", "1.5", "٧", "²", "1_0", "x"])
def test_a_version_that_is_not_a_whole_number_from_1_is_refused_on_a_page_and_in_the_admin(
    supervisor_client, admin_client, moto_db, sent
):
    ana = Agents().create("Ana", SKILLS)
    page = page_text(
        supervisor_client.post(reverse("agent-available", args=[ana.agent_id]), {"version": sent}, follow=True)
    )
    assert "The version sent with the form is not valid" in page
    bulk = {"action": "available", "ids": [f"{ana.agent_id}/{sent}"], "confirmed": "1"}
    said = f"which version of each item you saw ({inputs.VERSION_RANGE})"
    assert said in page_text(supervisor_client.post(reverse("agent-bulk"), bulk, follow=True))
    assert said in admin_acts(admin_client, "enqueue", [f"{ana.agent_id}/{sent}"])
    assert Agents().get(ana.agent_id).status == AgentStatus.OFFLINE


def test_the_largest_version_is_taken_and_answered_as_changed_since(supervisor_client, api, admin_client, moto_db):
    """No agent is at that version, so each surface passes it to the change, which says
    the agent changed since (rather than refusing the value)."""
    ana = Agents().create("Ana", SKILLS)
    largest = inputs.VERSION_MAX
    page = page_text(
        supervisor_client.post(reverse("agent-available", args=[ana.agent_id]), {"version": largest}, follow=True)
    )
    assert "Conflict" in page and "not valid" not in page
    assert_problem(api.post(f"/api/agents/{ana.agent_id}/available", {"version": largest}), 409)
    assert "changed since you looked" in admin_acts(admin_client, "enqueue", [f"{ana.agent_id}/{largest}"])
    assert Agents().get(ana.agent_id).status == AgentStatus.OFFLINE


# --- then ---------------------------------------------------------------------------------------


def test_an_unknown_then_is_refused_by_the_pages_and_the_api_alike(supervisor_client, api, moto_db):
    """The admin has no `then` to send: its release always queues the agent again."""
    ana, call = attending()
    said = f"After the call: {inputs.THEN_PROBLEM}"
    posts = [
        (reverse("agent-release", args=[ana.agent_id]), shown(ana.agent_id, then="lunch", confirmed="1")),
        (reverse("call-end", args=[call.call_id]), {"then": "lunch", "confirmed": "1"}),
        (reverse("call-transfer", args=[call.call_id]), {"to": "preferences", "from_agent_id": ana.agent_id}),
    ]
    posts[2][1].update({"then": "lunch", "skill_language": "any", "skill_gender": "any"})
    for url, data in posts:
        assert said in page_text(supervisor_client.post(url, data, follow=True)), url
    for path, body in [
        (f"/api/agents/{ana.agent_id}/release", {"call_id": call.call_id, "then": "lunch"}),
        (f"/api/calls/{call.call_id}/end", {"then": "lunch"}),
        (f"/api/calls/{call.call_id}/transfer", {"from_agent_id": ana.agent_id, "then": "lunch"}),
    ]:
        assert assert_problem(api.post(path, body), 400)["fields"] == {"then": inputs.THEN_PROBLEM}, path
    assert CallCenter().get_call(call.call_id).status == CallStatus.ASSIGNED


def test_the_last_then_is_taken_by_a_page_and_the_api(supervisor_client, api, moto_db):
    last = list(inputs.THEN)[-1]
    ana, call = attending()
    supervisor_client.post(reverse("call-end", args=[call.call_id]), {"then": last, "confirmed": "1"})
    assert CallCenter().get_call(call.call_id).end_then == last
    bea, call = attending()
    assert api.post(f"/api/calls/{call.call_id}/end", {"then": last}).status_code == 200
    assert CallCenter().get_call(call.call_id).end_then == last


# --- preferences ----------------------------------------------------------------------------------


def test_an_unknown_preference_is_refused_by_the_page_and_the_api_in_the_same_words(supervisor_client, api, moto_db):
    body = assert_problem(api.post("/api/calls", {"preferences": {"language": "Klingon"}}), 400)
    said = body["fields"]["language"]
    assert said.startswith("unknown language 'Klingon'; allowed:")
    form = {"skill_language": "Klingon", "skill_gender": "any", "priority": 0, "order": "fifo"}
    response = supervisor_client.post(reverse("calls"), form)
    assert response.status_code == 400
    assert said in page_text(response)
    assert CallCenter().line.count_waiting()[0] == 0


@pytest.mark.parametrize("any_word", ["any", "", "*"])
def test_every_word_for_any_is_taken_by_the_page_and_the_api(supervisor_client, api, moto_db, any_word):
    answer = api.post("/api/calls", {"preferences": {"language": any_word}})
    assert answer.status_code == 201, answer.content
    form = {"skill_language": any_word, "skill_gender": "F", "priority": 0, "order": "fifo"}
    response = supervisor_client.post(reverse("calls"), form)
    assert response.status_code == 302, page_text(response)
    assert CallCenter().line.count_waiting()[0] == 2


# --- names -------------------------------------------------------------------------------------------


def test_a_name_past_the_longest_is_refused_on_the_pages_and_in_the_admin_and_the_longest_is_taken(
    supervisor_client, admin_client, moto_db
):
    Agents().create("a" * inputs.NAME_MAX, SKILLS)
    too_long = "a" * (inputs.NAME_MAX + 1)
    response = supervisor_client.get(reverse("agents"), {"q": too_long})
    assert response.status_code == 400
    assert "Name contains" in page_text(response)
    assert f"A search by name is {inputs.NAME_PROBLEM}" in page_text(admin_client.get(ADMIN_AGENTS, {"q": too_long}))

    longest = "a" * inputs.NAME_MAX
    assert supervisor_client.get(reverse("agents"), {"q": longest}).status_code == 200
    assert longest in page_text(admin_client.get(ADMIN_AGENTS, {"q": longest}))


def test_a_tenant_or_queue_that_is_not_a_short_name_is_refused_alike(supervisor_client, api, admin_client, moto_db):
    body = assert_problem(api.post("/api/shipments", {"data": {"to": "Porto"}, "tenant": "acme corp"}), 400)
    assert body["fields"] == {"tenant": inputs.SHORT_NAME_PROBLEM}
    page = page_text(supervisor_client.get(reverse("shipments"), {"tenant": "acme corp"}, follow=True))
    assert f"Tenant: must be {inputs.SHORT_NAME_PROBLEM}" in page
    queue = "q" * (inputs.SHORT_NAME_MAX + 1)
    said = f"A queue name is {inputs.SHORT_NAME_PROBLEM}."
    assert said in page_text(supervisor_client.get(reverse("shipments"), {"queue": queue}, follow=True))
    assert said in page_text(admin_client.get(reverse("admin:queues_app_shipmententry_changelist"), {"queue": queue}))

    longest = "t" * inputs.SHORT_NAME_MAX
    assert api.post("/api/shipments", {"data": {"to": "Porto"}, "tenant": longest}).status_code == 201
    assert supervisor_client.get(reverse("shipments"), {"tenant": longest}).status_code == 200


@pytest.mark.parametrize(
    "hidden, named",
    [
        ("\u202e", "U+202E RIGHT-TO-LEFT OVERRIDE"),
        ("\u2067", "U+2067 RIGHT-TO-LEFT ISOLATE"),
        ("\u200b", "U+200B ZERO WIDTH SPACE"),
        ("\x07", "U+0007 CONTROL CHARACTER"),
    ],
)
def test_a_name_or_reason_holding_a_hidden_character_is_refused_naming_it(supervisor_client, moto_db, hidden, named):
    """Text is data: a character that changes direction or cannot be seen would garble or
    spoof what a page says around it, so it is refused wherever a person types text."""
    typed = f"Eve{hidden}liam"
    with pytest.raises(ValueError, match=re.escape(named)):
        Agents().create(typed, SKILLS)
    page = supervisor_client.post(reverse("agent-create"), {"name": typed, **{k: v for k, v in SKILLS.items()}})
    assert f"It must not hold invisible or direction-changing characters ({named})." in page_text(page)
    ShipmentQueue().create({"to": "Porto"}, shipment_id="s-porto", ready=True)
    shipment = ShipmentQueue().enqueue("s-porto")
    response = supervisor_client.post(
        reverse("shipment-dlq", args=[shipment.shipment_id]),
        {"reason": typed, "version": shipment.version, "confirmed": "1"},
        follow=True,
    )
    assert f"The reason must not hold invisible or direction-changing characters ({named})." in page_text(response)
    assert Agents().list(limit=5).items == [] and ShipmentQueue().get(shipment.shipment_id).dlq_reason is None


def test_joiners_are_parts_of_words_and_are_kept(moto_db):
    """Zero-width (non-)joiners shape Persian and Indic names and emoji: allowed."""
    for name in ("Mi\u200cnoo", "Ann\u200d"):
        assert Agents().create(name, SKILLS).name == name
