"""Every page form and every page's query parameters, fuzzed (hypothesis, on moto).

For each form (agent create and edit, the call form, the shipment actions, the bulk
actions and restore-by-filter, the agent actions, the audit trail's filter) and each
page's URL inputs (cursors, filters, view names, page sizes, `next`, item ids in the
path), hypothesis generates arbitrary values: text with unicode and control characters,
numbers far out of range, floats, lists (a key repeated), missing fields, unknown
fields, hostile `next` URLs, and (often) the valid values, so that the deeper paths run.
Every answer must be below 500 (moto is up: no 503 either), carry no traceback, and
link or redirect only to this site.

About a quarter of the cases are valid ones, as a supervisor's page sends them: the item in a state
the action fits (made when the case is sent), the version it was shown at, values the
form offers. Each of those must be taken (no 4xx, no error message), and each form and
page gets a few: pages refusing whatever they were sent would not pass.

One request per generated case, single-threaded (moto is not thread-safe). The budget:
`SWITCHBOARD_FUZZ_EXAMPLES` cases per form or page (default 50). At the end of the
module a line gives the number of cases run, how many were valid, and how many were
answered with a 5xx.
"""

from __future__ import annotations

import html
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

import pytest
from django.contrib import messages
from django.utils.http import url_has_allowed_host_and_scheme
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.centre.call_center import CallCenter
from queues_app.shipments.queue import ShipmentQueue
from tests.helpers.page_fuzz import page_world
from tests.helpers.seen import shipment_version, shown, ticked, ticked_shipment

EXAMPLES = int(os.environ.get("SWITCHBOARD_FUZZ_EXAMPLES", "50"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

TALLY: Counter[str] = Counter()  # cases run per kind, and 5xx answers

LANGUAGES = ["English", "French", "Spanish"]
GENDERS = ["F", "M", "X"]
HREF = re.compile(r'(?:href|action|hx-get|hx-post)="([^"]*)"')


@pytest.fixture(scope="module", autouse=True)
def report_the_tally(request):
    yield
    line = (
        f"page fuzz: {TALLY['form']} page-form cases, {TALLY['query']} query-parameter cases "
        f"({TALLY['valid']} of them valid, all taken), {TALLY['5xx']} answered with a 5xx "
        f"({EXAMPLES} per form or page)"
    )
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line("\n" + line)


# --- what is fuzzed -------------------------------------------------------------------

MISSING = object()

NASTY = [
    "",
    " ",
    "0",
    "-1",
    "9" * 40,
    "-" + "9" * 40,
    "1e309",
    "NaN",
    "inf",
    "-inf",
    "1.5",
    "0x10",
    "٣",  # an Arabic-Indic three: int() takes it
    "𝟗",  # a mathematical bold nine: int() takes it
    "\x00",
    "\r\n",
    "\u202e",
    "A" * 5000,
    "<script>alert(1)</script>",
    "' OR 1=1 --",
    "%00",
    "../../etc/passwd",
    "null",
    "[]",
    "{}",
    "javascript:alert(1)",
    "//evil.example",
    "https://evil.example/",
]

HOSTILE_NEXT = [
    "javascript:alert(1)",
    " javascript:alert(1)",
    "JaVaScRiPt:alert(document.cookie)",
    "java\nscript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "//evil.example",
    "///evil.example/",
    "\\\\evil.example",
    "/\\evil.example",
    "https://evil.example/agents/",
    "http://testserver@evil.example/",
    "\x01//evil.example",
    "0",  # not a URL: once taken for the name of a view
    "agents/",
    "/agents/",
    "/shipments/?view=dlq",
    "http://testserver/calls/",
]


def raw_value() -> st.SearchStrategy[str]:
    """One arbitrary form or query value."""
    return st.one_of(
        st.text(max_size=40),
        st.text(st.characters(codec="utf-8", categories=["Cc", "Cf", "Zs", "Zl", "Zp", "Nd", "So"]), max_size=20),
        st.integers(min_value=-(10**50), max_value=10**50).map(str),
        st.floats().map(str),
        st.sampled_from(NASTY),
        st.builds(lambda text, n: text * n, st.text(min_size=1, max_size=3), st.integers(100, 3000)),
    )


def field(valid: st.SearchStrategy | None = None) -> st.SearchStrategy:
    """A field: missing, one arbitrary value, a repeated key, or (twice as often) a valid value."""
    options = [st.just(MISSING), raw_value(), st.lists(raw_value(), min_size=2, max_size=3)]
    if valid is not None:
        options = [valid, valid, *options]
    return st.one_of(*options)


def form(**fields: st.SearchStrategy | None) -> st.SearchStrategy[dict]:
    """Form data with these fields (see `field`) and now and then an unknown one."""
    return st.builds(
        lambda known, extra: {**extra, **{k: v for k, v in known.items() if v is not MISSING}},
        st.fixed_dictionaries({name: field(valid) for name, valid in fields.items()}),
        st.dictionaries(st.text(min_size=1, max_size=8), raw_value(), max_size=2),
    )


def ints(low: int, high: int) -> st.SearchStrategy[str]:
    return st.integers(low, high).map(str)


def some_of(values: list[str]) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(values), min_size=1, max_size=len(values), unique=True)


def next_url() -> st.SearchStrategy:
    return field(st.sampled_from(HOSTILE_NEXT))


def item_id(ids: list[str]) -> st.SearchStrategy[str]:
    """An id in a URL: one that exists (mostly) or any text at all."""
    return st.one_of(st.sampled_from(ids), st.sampled_from(ids), raw_value())


def in_path(value: str) -> str:
    return quote(value, safe="")


# --- the data the pages show ----------------------------------------------------------


@pytest.fixture
def world(moto_db):
    return page_world()


def on_site(url: str) -> bool:
    """A link or redirect that stays here: a fragment, a path (Django's check refuses
    URLs longer than 2048 characters, which a page's own link with long filters can be),
    or a URL Django's check accepts."""
    if url == "" or url.startswith(("#", "?")):
        return True
    if url.startswith("/") and not url.startswith(("//", "/\\")):
        return True
    return url_has_allowed_host_and_scheme(url, allowed_hosts={"testserver"})


def check(kind: str, response) -> None:
    """No server error, no traceback, and every link and redirect stays on this site."""
    TALLY[kind] += 1
    status = response.status_code
    if status >= 500:
        TALLY["5xx"] += 1
    body = response.content.decode("utf-8", errors="replace")
    assert status < 500, (status, body[:800])
    assert "Traceback" not in body
    for header in ("Location", "HX-Redirect", "HX-Location"):
        if header in response:
            assert on_site(response[header]), (header, response[header])
    for link in HREF.findall(body):
        assert on_site(html.unescape(link)), link


def send(client, method: str, url: str, data: dict, htmx: bool):
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    if method == "post":
        return client.post(url, data, **headers)
    return client.get(url, data, **headers)


# --- page forms -----------------------------------------------------------------------

NAME = st.text(min_size=1, max_size=30)
VERSION = ints(0, 6)
PRIORITY = ints(0, 9)
CONFIRMED = st.just("1")


def agent_form():
    return form(name=NAME, skill_language=some_of(LANGUAGES), skill_gender=some_of(GENDERS), version=VERSION, next=None)


FORMS = {
    "agent create": lambda w: (st.just("/agents/new"), agent_form()),
    "agent edit": lambda w: (item_id(w["agents"]).map(lambda i: f"/agents/{in_path(i)}/"), agent_form()),
    "call form": lambda w: (
        st.just("/calls/"),
        form(
            skill_language=st.sampled_from(["any", *LANGUAGES]),
            skill_gender=st.sampled_from(["any", *GENDERS]),
            priority=PRIORITY,
            order=st.sampled_from(["fifo", "lifo"]),
        ),
    ),
    "shipment touch": lambda w: (
        item_id(w["shipments"]).map(lambda i: f"/shipments/{in_path(i)}/touch"),
        form(version=VERSION, next=st.sampled_from(HOSTILE_NEXT)),
    ),
    "shipment priority": lambda w: (
        item_id(w["shipments"]).map(lambda i: f"/shipments/{in_path(i)}/priority"),
        form(priority=PRIORITY, version=VERSION, next=st.sampled_from(HOSTILE_NEXT)),
    ),
    "shipment restore": lambda w: (
        item_id(w["shipments"]).map(lambda i: f"/shipments/{in_path(i)}/restore"),
        form(version=VERSION, next=st.sampled_from(HOSTILE_NEXT)),
    ),
    "shipment dlq": lambda w: (
        item_id(w["shipments"]).map(lambda i: f"/shipments/{in_path(i)}/dlq"),
        form(reason=NAME, version=VERSION, confirmed=CONFIRMED, next=st.sampled_from(HOSTILE_NEXT)),
    ),
    "shipment remove": lambda w: (
        item_id(w["shipments"]).map(lambda i: f"/shipments/{in_path(i)}/remove"),
        form(version=VERSION, confirmed=CONFIRMED, next=st.sampled_from(HOSTILE_NEXT)),
    ),
    "shipment bulk": lambda w: (
        st.just("/shipments/bulk"),
        form(
            action=st.sampled_from(["restore", "touch", "dlq"]),
            ids=some_of(w["shipments"]),
            confirmed=CONFIRMED,
            next=st.sampled_from(HOSTILE_NEXT),
        ),
    ),
    "shipment restore matching": lambda w: (
        st.just("/shipments/restore-matching"),
        form(
            reason_contains=st.sampled_from(["", "address", "unknown", "nothing like it"]),
            older_than_minutes=st.one_of(st.floats(0, 1e6).map(str), ints(0, 10**6)),
            queue=st.sampled_from(["live", "spillover"]),
            confirmed=CONFIRMED,
            next=st.sampled_from(HOSTILE_NEXT),
        ),
    ),
    "agent bulk": lambda w: (
        st.just("/agents/bulk"),
        form(
            action=st.sampled_from(["available", "release", "offline"]),
            ids=some_of(w["agents"]),
            confirmed=CONFIRMED,
            next=st.sampled_from(HOSTILE_NEXT),
        ),
    ),
    "agent available": lambda w: (
        item_id(w["agents"]).map(lambda i: f"/agents/{in_path(i)}/available"),
        form(next=st.sampled_from(HOSTILE_NEXT)),
    ),
    "agent release": lambda w: (
        item_id(w["agents"]).map(lambda i: f"/agents/{in_path(i)}/release"),
        form(then=st.sampled_from(["queue", "wrap_up", "offline"]), next=st.sampled_from(HOSTILE_NEXT)),
    ),
    "agent offline": lambda w: (
        item_id(w["agents"]).map(lambda i: f"/agents/{in_path(i)}/offline"),
        form(next=st.sampled_from(HOSTILE_NEXT)),
    ),
}


# --- valid cases ----------------------------------------------------------------------


@dataclass
class Valid:
    """A case a supervisor's page would send: `make(**drawn)` gives the URL and the form,
    from the items as they are when it is sent (made for it, in the state the action
    fits, and named at the version they are at)."""

    make: Callable[..., tuple[str, dict]]
    drawn: dict

    def __call__(self) -> tuple[str, dict]:
        return self.make(**self.drawn)

    def __repr__(self) -> str:
        return f"Valid({self.make.__name__}, {self.drawn})"


def valid(make: Callable[..., tuple[str, dict]], **drawn: st.SearchStrategy) -> st.SearchStrategy[Valid]:
    return st.fixed_dictionaries(drawn).map(lambda values: Valid(make, values))


def taken(response) -> bool:
    """The page took the request: no 4xx, and no error among the messages it added (an
    action refused without scripts redirects with an error message)."""
    if response.status_code >= 400:
        return False
    added = getattr(getattr(response.wsgi_request, "_messages", None), "_queued_messages", [])
    return all(message.level < messages.ERROR for message in added)


PLAIN_NAME = st.text(st.characters(categories=["Lu", "Ll"]), min_size=1, max_size=30)
OWN_NEXT = st.sampled_from(["/agents/", "/calls/", "/shipments/", "/shipments/?view=dlq", "/"])
SPANISH_F = {"language": ["Spanish"], "gender": ["F"]}


def new_agent(status: str) -> str:
    """An agent made now: offline, on a call ("attending"), or available but not on a
    call ("not attending": queued, or in wrap-up when a waiting caller took them)."""
    router = CallCenter()
    agent_id = Agents().create("Nia", SPANISH_F).agent_id
    if status == "offline":
        return agent_id
    router.make_available(agent_id)
    if status == "attending":
        while Agents().get(agent_id).status != AgentStatus.ATTENDING:
            router.create_call({"language": "Spanish", "gender": "F"})  # the longest queued who fits takes it
    if status == "not attending" and Agents().get(agent_id).status == AgentStatus.ATTENDING:
        router.release(agent_id, then="wrap_up")
    return agent_id


def new_shipment(dead: bool) -> str:
    """A shipment made now, queued or in the DLQ."""
    shipments = ShipmentQueue()
    shipment_id = shipments.submit({"destination": "Faro"}).shipment_id
    if dead:
        shipments.send_to_dlq(shipment_id, "address unknown")
    return shipment_id


def agent_created(name, languages, genders):
    return "/agents/new", {"name": name, "skill_language": languages, "skill_gender": genders}


def agent_edited(name, languages, genders):
    agent_id = new_agent("offline")  # skills change only off a call
    return f"/agents/{agent_id}/", {
        "name": name,
        "skill_language": languages,
        "skill_gender": genders,
        **shown(agent_id),
    }


def call_made(language, gender, priority, order):
    return "/calls/", {"skill_language": language, "skill_gender": gender, "priority": priority, "order": order}


def shipment_acted(action, dead, next, **fields):
    shipment_id = new_shipment(dead)
    return f"/shipments/{shipment_id}/{action}", {**shipment_version(shipment_id), "next": next, **fields}


def shipments_in_bulk(action, count, next):
    ids = [ticked_shipment(new_shipment(dead=action == "restore")) for _ in range(count)]
    return "/shipments/bulk", {"action": action, "ids": ids, "confirmed": "1", "next": next}


def restore_matching(reason_contains, older_than_minutes):
    new_shipment(dead=True)  # "address unknown": one at least matches
    return "/shipments/restore-matching", {
        "reason_contains": reason_contains,
        "older_than_minutes": older_than_minutes,
        "queue": "live",
    }


AGENT_STATE_FOR = {"available": "offline", "release": "attending", "offline": "not attending"}


def agents_in_bulk(action, count, next):
    ids = [ticked(new_agent(AGENT_STATE_FOR[action])) for _ in range(count)]
    return "/agents/bulk", {"action": action, "ids": ids, "confirmed": "1", "next": next}


def agent_acted(action, next, then="queue"):
    agent_id = new_agent(AGENT_STATE_FOR[action])
    if action == "release":
        return f"/agents/{agent_id}/release", {**shown(agent_id), "then": then, "confirmed": "1", "next": next}
    return f"/agents/{agent_id}/{action}", {**shown(agent_id), "next": next}


VALID_FORMS = {
    "agent create": lambda w: valid(
        agent_created, name=PLAIN_NAME, languages=some_of(LANGUAGES), genders=some_of(GENDERS)
    ),
    "agent edit": lambda w: valid(
        agent_edited,
        name=PLAIN_NAME,
        languages=some_of(LANGUAGES),
        genders=some_of(GENDERS),
    ),
    "call form": lambda w: valid(
        call_made,
        language=st.sampled_from(["any", *LANGUAGES]),
        gender=st.sampled_from(["any", *GENDERS]),
        priority=PRIORITY,
        order=st.sampled_from(["fifo", "lifo"]),
    ),
    "shipment touch": lambda w: valid(shipment_acted, action=st.just("touch"), dead=st.just(False), next=OWN_NEXT),
    "shipment priority": lambda w: valid(
        shipment_acted, action=st.just("priority"), dead=st.just(False), next=OWN_NEXT, priority=PRIORITY
    ),
    "shipment restore": lambda w: valid(shipment_acted, action=st.just("restore"), dead=st.just(True), next=OWN_NEXT),
    "shipment dlq": lambda w: valid(
        shipment_acted,
        action=st.just("dlq"),
        dead=st.just(False),
        next=OWN_NEXT,
        reason=PLAIN_NAME,
        confirmed=CONFIRMED,
    ),
    "shipment remove": lambda w: valid(
        shipment_acted, action=st.just("remove"), dead=st.just(False), next=OWN_NEXT, confirmed=CONFIRMED
    ),
    "shipment bulk": lambda w: valid(
        shipments_in_bulk, action=st.sampled_from(["restore", "touch", "dlq"]), count=st.integers(1, 3), next=OWN_NEXT
    ),
    "shipment restore matching": lambda w: valid(
        restore_matching,
        reason_contains=st.sampled_from(["", "address", "unknown"]),
        older_than_minutes=st.sampled_from(["", "0"]),
    ),
    "agent bulk": lambda w: valid(
        agents_in_bulk,
        action=st.sampled_from(["available", "release", "offline"]),
        count=st.integers(1, 3),
        next=OWN_NEXT,
    ),
    "agent available": lambda w: valid(agent_acted, action=st.just("available"), next=OWN_NEXT),
    "agent release": lambda w: valid(
        agent_acted, action=st.just("release"), next=OWN_NEXT, then=st.sampled_from(["queue", "wrap_up", "offline"])
    ),
    "agent offline": lambda w: valid(agent_acted, action=st.just("offline"), next=OWN_NEXT),
}


def fuzzed_or_valid(urls, data, valid_cases) -> st.SearchStrategy:
    """A fuzzed case (a URL and data), or a valid one (half the time)."""
    return st.one_of(st.tuples(urls, data), valid_cases)


def run(client, method: str, kind: str, case, htmx: bool, valid_sent: Counter) -> None:
    if isinstance(case, Valid):
        url, data = case()
        response = send(client, method, url, data, htmx)
        check(kind, response)
        TALLY["valid"] += 1
        valid_sent[url] += 1
        assert taken(response), (url, data, response.status_code, response.content.decode()[:800])
    else:
        check(kind, send(client, method, *case, htmx))


@pytest.mark.parametrize("name", list(FORMS))
def test_no_page_form_input_is_a_server_error(fuzz_client, world, name):
    urls, data = FORMS[name](world)
    valid_sent: Counter[str] = Counter()

    @FUZZ
    @given(case=fuzzed_or_valid(urls, data, VALID_FORMS[name](world)), htmx=st.booleans())
    def post(case, htmx):
        run(fuzz_client, "post", "form", case, htmx, valid_sent)

    post()
    assert valid_sent.total() >= 2  # and every one of them was taken


# --- query parameters -----------------------------------------------------------------


def query(w, own: list[dict] | None = None, **fields: st.SearchStrategy | None) -> st.SearchStrategy[dict]:
    """Query parameters: the page's own, a cursor, page sizes and `next`, any of them junk;
    half the time a valid combination of the page's own (`own`: a view and a cursor it
    handed out) on top. Cursors of every list are offered to every page: each list signs
    its cursors for itself, so another list's is refused like a forged one."""
    fuzzed = form(
        cursor=st.sampled_from(w["forged"] + sorted(w["cursors"].values())),
        limit=ints(0, 100),
        page_size=ints(0, 100),
        next=st.sampled_from(HOSTILE_NEXT),
        **fields,
    )
    if not own:
        return fuzzed
    return st.builds(lambda params, over: {**params, **over}, fuzzed, st.one_of(st.just({}), st.sampled_from(own)))


PAGES = {
    "overview panels": lambda w: (
        st.just("/"),
        form(panel=st.sampled_from(["calls", "shipments", "tasks", "grid", "history", "capacity"])),
    ),
    "agents": lambda w: (
        st.just("/agents/"),
        query(
            w,
            [{"cursor": w["cursors"]["agents"], "status": ""}],
            q=NAME,
            status=st.sampled_from(["", "offline", "queued", "attending", "wrap_up", "available"]),
            skill=st.sampled_from(["", "language:English", "gender:F", "language:Klingon"]),
            partial=st.just("table"),
        ),
    ),
    "agent detail": lambda w: (item_id(w["agents"]).map(lambda i: f"/agents/{in_path(i)}/"), query(w)),
    "calls": lambda w: (st.just("/calls/"), query(w, [{"cursor": w["cursors"]["calls"]}])),
    "call lookup": lambda w: (st.just("/calls/find"), form(call_id=st.sampled_from(w["calls"]))),
    "call detail": lambda w: (item_id(w["calls"]).map(lambda i: f"/calls/{in_path(i)}/"), query(w)),
    "queues": lambda w: (st.just("/queues/"), query(w)),
    "shipments": lambda w: (
        st.just("/shipments/"),
        query(
            w,
            [{"view": "queue", "cursor": w["cursors"]["queue"]}, {"view": "dlq", "cursor": w["cursors"]["dlq"]}],
            queue=st.sampled_from(["live", "spillover", " live "]),
            view=st.sampled_from(["queue", "in_flight", "delayed", "dlq"]),
        ),
    ),
    "shipment detail": lambda w: (item_id(w["shipments"]).map(lambda i: f"/shipments/{in_path(i)}/"), query(w)),
    "tasks": lambda w: (
        st.just("/tasks/"),
        query(
            w,
            [{"view": "PENDING", "cursor": w["cursors"]["tasks"]}],
            view=st.sampled_from(["PENDING", "TAKEN", "SUCCESS", "FAILURE", "pending", "failure"]),
        ),
    ),
    "audit trail": lambda w: (
        st.just("/audit/"),
        query(
            w,
            [
                {"cursor": w["cursors"]["audit"]},
                {"target": f"agent:{w['agents'][2]}", "cursor": w["cursors"]["audit of cid"]},
            ],
            target=st.sampled_from([f"agent:{w['agents'][2]}", f"shipment:{w['shipments'][0]}", "agent:"]),
        ),
    ),
    "system": lambda w: (st.just("/system/"), query(w)),
}


def viewed(url, params):
    return url, params


def own_or(own: list[dict], **fields: st.SearchStrategy) -> st.SearchStrategy[dict]:
    """A page's own query (a cursor it handed out, with its filters) or valid filters."""
    return st.one_of(st.sampled_from(own), st.fixed_dictionaries(fields))


def item_page(kind: str, ids: list[str]) -> st.SearchStrategy[Valid]:
    return valid(viewed, url=st.sampled_from(ids).map(lambda i: f"/{kind}/{in_path(i)}/"), params=st.just({}))


VALID_PAGES = {
    "overview panels": lambda w: valid(
        viewed,
        url=st.just("/"),
        params=st.one_of(
            st.just({}),
            st.fixed_dictionaries(
                {"panel": st.sampled_from(["calls", "shipments", "tasks", "grid", "history", "capacity"])}
            ),
        ),
    ),
    "agents": lambda w: valid(
        viewed,
        url=st.just("/agents/"),
        params=own_or(
            [{"cursor": w["cursors"]["agents"], "status": ""}],
            q=PLAIN_NAME,
            status=st.sampled_from(["", *AgentStatus.LABELS]),
            skill=st.sampled_from(["", "language:English", "gender:F"]),
        ),
    ),
    "agent detail": lambda w: item_page("agents", w["agents"]),
    "calls": lambda w: valid(
        viewed, url=st.just("/calls/"), params=st.sampled_from([{}, {"cursor": w["cursors"]["calls"]}])
    ),
    "call lookup": lambda w: valid(
        viewed, url=st.just("/calls/find"), params=st.sampled_from(w["calls"]).map(lambda i: {"call_id": i})
    ),
    "call detail": lambda w: item_page("calls", w["calls"]),
    "queues": lambda w: valid(viewed, url=st.just("/queues/"), params=st.just({})),
    "shipments": lambda w: valid(
        viewed,
        url=st.just("/shipments/"),
        params=own_or(
            [{"view": "queue", "cursor": w["cursors"]["queue"]}, {"view": "dlq", "cursor": w["cursors"]["dlq"]}],
            queue=st.sampled_from(["live", "spillover"]),
            view=st.sampled_from(["queue", "in_flight", "delayed", "dlq"]),
        ),
    ),
    "shipment detail": lambda w: item_page("shipments", w["shipments"]),
    "tasks": lambda w: valid(
        viewed,
        url=st.just("/tasks/"),
        params=own_or(
            [{"view": "PENDING", "cursor": w["cursors"]["tasks"]}],
            view=st.sampled_from(["PENDING", "TAKEN", "SUCCESS", "FAILURE", "pending", "failure"]),
        ),
    ),
    "audit trail": lambda w: valid(
        viewed,
        url=st.just("/audit/"),
        params=own_or(
            [
                {"cursor": w["cursors"]["audit"]},
                {"target": f"agent:{w['agents'][2]}", "cursor": w["cursors"]["audit of cid"]},
            ],
            target=st.sampled_from([f"agent:{w['agents'][2]}", f"shipment:{w['shipments'][0]}"]),
        ),
    ),
    "system": lambda w: valid(viewed, url=st.just("/system/"), params=st.just({})),
}


@pytest.mark.parametrize("name", list(PAGES))
def test_no_query_parameter_is_a_server_error(fuzz_client, world, name):
    urls, params = PAGES[name](world)
    valid_sent: Counter[str] = Counter()

    @FUZZ
    @given(case=fuzzed_or_valid(urls, params, VALID_PAGES[name](world)), htmx=st.booleans())
    def get(case, htmx):
        run(fuzz_client, "get", "query", case, htmx, valid_sent)

    get()
    assert valid_sent.total() >= 2  # and every one of them was taken
