"""`manage.py simulate_day`: a day played against the API (Django's own, in process, over
moto) as the phone system and the agents' clients would, on a clock the test moves."""

import io
import json
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

import switchboard_client as sc
from queues_app.agents.roster import Agents
from queues_app.audit.store import AuditTrail
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.management.commands import simulate_day
from queues_app.models import ApiToken
from queues_app.simulation import player as playing
from queues_app.simulation.day import Day, Shift, find
from queues_app.simulation.player import Player
from switchboard_client import Switchboard  # the class itself (the command's fixture replaces the name)
from tests.helpers.transport import DjangoTransport

OTHER_SKILLS = {"gender": ["F", "M", "X"]}


def small_day(**changes) -> Day:
    """Half an hour: 50 callers an hour on average, two agents all along (one with a break
    at 10 min), wrap-up, callers who give up."""
    values = dict(
        name="A small hour",
        start="09:00",
        interval_minutes=15,
        arrivals_per_hour=(50.0,),
        hours=0.5,
        languages={"English": 0.5, "French": 0.5},
        handle_mean=120.0,
        handle_spread=0.5,
        patience_mean=90.0,
        wrap_up_seconds=15.0,
        threshold_seconds=20.0,
        shifts=(
            Shift(1, 0.0, 1800.0, ("English", "French"), breaks=((600.0, 300.0),)),
            Shift(1, 0.0, 1800.0, ("English",)),
        ),
        seed=5,
    )
    values.update(changes)
    return Day(**values)  # type: ignore[arg-type]


class Clock:
    """The player's clock: sleeping moves it on at once."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def client(moto_db, supervisor):
    token = ApiToken.issue(supervisor, "phone system")[1]
    with sc.Switchboard("http://testserver", token, transport=DjangoTransport(), sleep=lambda s: None) as client:
        yield client


def play(client, day: Day, speed: float = 120.0) -> tuple[Player, Clock]:
    clock, said = Clock(), []
    player = Player(
        day, client, speed=speed, clock=clock, sleep=clock.sleep, log=said.append, other_skills=OTHER_SKILLS
    )
    player.tally_lines = said  # type: ignore[attr-defined]
    player.play()
    return player, clock


def test_a_day_is_played_through_the_api_every_caller_answered_or_gone_and_every_agent_off(client):
    day = small_day()
    player, clock = play(client, day)
    tally = player.tally

    center = CallCenter()
    calls = [center.get_call(call_id) for call_id in player.callers]
    assert tally.offered == len(player.arrivals) == len(calls) > 15
    # Every caller was answered (and the call ended) or gave up: none left waiting or on a call.
    assert tally.answered + tally.abandoned == tally.offered
    assert {c.status for c in calls} <= {CallStatus.ENDED, CallStatus.ABANDONED}
    assert tally.answered == sum(c.status == CallStatus.ENDED for c in calls) == tally.ended
    assert tally.abandoned == sum(c.status == CallStatus.ABANDONED for c in calls) > 0  # 2 agents, 50 an hour
    # The French callers went to the agent who speaks French, and each call went through wrap-up
    # but the last of each shift, which logged the agent off.
    for call in calls:
        if call.status == CallStatus.ENDED and call.preferences["language"] == "French":
            assert call.agent_id == "sim-1"
    assert {c.end_then for c in calls if c.status == CallStatus.ENDED} <= {"wrap_up", "offline"}
    assert sum(c.end_then == "wrap_up" for c in calls) > 5
    # The day's agents, hired by the player, took the break and ended the shift logged off.
    agents = {a.agent_id: a for a in Agents().list(limit=10).items}
    assert set(agents) == {"sim-1", "sim-2"}
    assert {a.status for a in agents.values()} == {"offline"}
    trail = AuditTrail().for_target("agent:sim-1").entries
    assert any(e.action == "agent.not_ready" for e in trail)
    # Played on its clock: half an hour at 120 times is 15 s, plus the calls in progress at the end.
    assert 15 <= clock.now < 15 + 10 * 120 / 120
    said = player.tally_lines  # type: ignore[attr-defined]
    assert said == [line for line in said if "again in" not in line]  # no trouble


def test_played_again_the_day_rehires_its_agents_and_sets_their_skills(client):
    play(client, small_day(arrivals_per_hour=(6.0,), hours=0.25))
    changed = small_day(arrivals_per_hour=(6.0,), hours=0.25, shifts=(Shift(2, 0.0, 900.0, ("French",)),))
    player, _ = play(client, changed)
    assert player.tally.offered == len(player.arrivals)
    agents = {a.agent_id: a for a in Agents().list(limit=10).items}
    assert agents["sim-2"].skills["language"] == ["French"]
    assert {a.status for a in agents.values()} == {"offline"}


def test_a_failure_of_the_site_puts_the_step_off_with_a_pause_that_doubles(client, monkeypatch):
    day = small_day(arrivals_per_hour=(6.0,), hours=0.25)
    # The site answers the agents' hiring, then three requests in a row fail (the first caller
    # is due at once: its step fails each time), then all is well.
    failures = iter([None] * 2 + [sc.Unavailable(503, {"title": "DynamoDB is unavailable"})] * 3)
    real = client._request

    def flaky(*args, **kwargs):
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return real(*args, **kwargs)

    monkeypatch.setattr(client, "_request", flaky)
    player, _ = play(client, day)
    assert player.tally.trouble == 3
    assert player.tally.offered == len(player.arrivals)  # nobody lost
    pauses = [line for line in player.tally_lines if "again in" in line]  # type: ignore[attr-defined]
    assert [line.rsplit("again in ", 1)[1] for line in pauses] == ["1 s", "2 s", "4 s"]


# --- the command -------------------------------------------------------------------------


@pytest.fixture
def command(moto_db, supervisor, monkeypatch):
    """The command with its client over the application in process and its clock moved by
    the test; the token's user is the demo supervisor."""
    token = ApiToken.issue(supervisor, "simulated day")[1]
    clock = Clock()
    monkeypatch.setattr(playing, "time", SimpleNamespace(monotonic=clock, sleep=clock.sleep))

    real = sc.Switchboard

    def switchboard(url, token, **options):
        return real(url, token, transport=DjangoTransport(), sleep=lambda s: None, **options)

    monkeypatch.setattr(simulate_day.sc, "Switchboard", switchboard)
    return token


def run(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("simulate_day", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


QUIET_HOUR = {
    "name": "A quiet hour",
    "start": "09:00",
    "hours": 1,
    "arrivals_per_hour": [10],
    "languages": {"English": 1.0},
    "handle": {"mean_seconds": 180},
    "agents": [{"count": 2}],
}


def test_the_command_plays_a_day_file_and_prints_its_tally(command, tmp_path):
    (tmp_path / "quiet.json").write_text(json.dumps(QUIET_HOUR))
    out, err = run(str(tmp_path / "quiet.json"), "--speed", "600", "--token", command, "--json")
    tally = json.loads(out)  # stdout holds the JSON line alone
    assert tally["day"] == "A quiet hour" and tally["offered"] > 3
    assert tally["answered"] == tally["offered"] and tally["abandoned"] == 0  # nobody gives up
    assert "10:00 " in err  # each hour of the day said (it starts at 09:00), on stderr
    assert tally["answered"] + tally["abandoned"] == tally["offered"]
    assert "done:" in err  # the progress on stderr, the JSON alone on stdout


def test_the_command_refuses_a_deployment_with_agents_of_its_own_unless_forced(command):
    Agents().create("Ana", {"language": ["English"], "gender": ["F"]})
    with pytest.raises(CommandError, match=r"has 1 agents of its own \('Ana'\).*--force"):
        run("weekday", "--token", command)
    assert [a.agent_id for a in Agents().list(limit=50).items if a.agent_id.startswith("sim-")] == []
    out, _ = run("weekday", "--hours", "0.05", "--speed", "60", "--token", command, "--force")
    assert "done:" in out


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (
            ["mondays", "--token", "t"],
            "no day 'mondays': one of callbacks, lines, steady-erlang-a, steady-erlang-c, weekday",
        ),
        (["weekday", "--token", "wrong"], "refused the token"),
        (["weekday"], "an API token is needed"),
        (["weekday", "--speed", "0", "--token", "t"], "argument --speed: expected a number above 0"),
    ],
)
def test_bad_input_is_one_clear_line(command, monkeypatch, args, problem):
    monkeypatch.delenv("SWITCHBOARD_TOKEN", raising=False)
    with pytest.raises(CommandError, match=problem):
        run(*args)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"name": "Mine"}', r"\(KeyError: 'start'\)"),
        ("[1, 2]", r"\(TypeError: list indices"),
        ("{not json", r"\(JSONDecodeError: "),
        (json.dumps({**QUIET_HOUR, "handle": {"mean_seconds": 0}}), r"handle.mean_seconds: above 0"),
        (json.dumps({**QUIET_HOUR, "arrivals_per_hour": [0]}), r"arrivals_per_hour: 0 to 100000 each, one at least"),
        (json.dumps({**QUIET_HOUR, "agents": [{"count": 5000}]}), r"agents: 1 to 1000 in all"),
        (json.dumps({**QUIET_HOUR, "start": "23:00", "hours": 2}), r"a day ends by midnight"),
        (json.dumps({**QUIET_HOUR, "callbacks": {"after_seconds": 60, "share": 2}}), r"callbacks.share: 0 to 1"),
        (json.dumps({**QUIET_HOUR, "callbacks": {"share": 0.5}}), r"callbacks.after_seconds: 0 to 86400 when"),
    ],
    ids=[
        "a field missing",
        "not an object",
        "not JSON",
        "no handle time",
        "no caller",
        "too many agents",
        "midnight",
        "callback share over 1",
        "callbacks with no time",
    ],
)
def test_a_day_file_that_cannot_be_played_says_what_is_wrong(tmp_path, text, problem):
    broken = tmp_path / "mine.json"
    broken.write_text(text)
    with pytest.raises(ValueError, match=r"mine.json: not a day file .*" + problem):
        find(str(broken))


@pytest.mark.parametrize(
    ("presence", "expected"), [(30.0, ["sim-1", "sim-2"] * 2), (None, ["sim-1"])], ids=["on", "off"]
)
def test_the_agents_clients_send_heartbeats_only_where_presence_is_checked(
    client, settings, monkeypatch, presence, expected
):
    settings.AGENT_PRESENCE_SECONDS = presence
    sent: list[tuple[str, float]] = []
    real = client.heartbeat
    monkeypatch.setattr(client, "heartbeat", lambda agent_id: sent.append(agent_id) or real(agent_id))
    # 3 minutes at 10 times: 18 s of the player's clock, a heartbeat round every 10 s (a third of 30).
    play(client, small_day(arrivals_per_hour=(1.0,), hours=0.05), speed=10.0)
    assert sent == expected  # off: asked once, and told presence is not checked


def test_a_site_failing_while_the_agents_are_hired_is_one_clear_line(command, monkeypatch):
    def failing(self, *args, **kwargs):
        raise sc.Unavailable(503, {"error": "Service unavailable", "message": "DynamoDB is unavailable."})

    monkeypatch.setattr(Switchboard, "create_agent", failing)
    with pytest.raises(CommandError, match=r"http://127.0.0.1:8000: 503 .*DynamoDB is unavailable"):
        run("weekday", "--token", command)


def test_a_site_that_does_not_answer_is_one_clear_line(monkeypatch):
    monkeypatch.setattr(simulate_day, "RETRIES", 0)
    with pytest.raises(CommandError, match=r"http://127.0.0.1:9 cannot be reached"):
        run("weekday", "--url", "http://127.0.0.1:9", "--token", "t")


def test_a_caller_the_centre_refuses_is_counted_and_the_day_still_ends(client, monkeypatch):
    # The centre ends the first caller at once (a line closed or full) and refuses the second.
    real, answers = client.create_call, iter(["ended", "conflict"])

    def refusing(*args, **kwargs):
        answer = next(answers, None)
        if answer == "conflict":
            raise sc.Conflict(409, {"title": "Conflict", "detail": "no"})
        if answer == "ended":
            return {"call_id": "ended-at-once", "status": "ended", "agent_id": None}
        return real(*args, **kwargs)

    monkeypatch.setattr(client, "create_call", refusing)
    day = small_day(arrivals_per_hour=(30.0,), hours=0.25, patience_mean=None)
    player, _ = play(client, day)
    tally = player.tally
    assert len(player.arrivals) > 3 and tally.refused == 2
    assert tally.offered == len(player.arrivals) - 1  # the one refused with a 409 made no call
    assert tally.answered + tally.abandoned + 1 == tally.offered


def test_calls_that_never_end_stop_the_player_hours_after_the_day(client, settings, monkeypatch):
    # Offers on and all but none let ring, with nobody to end an offer (no escalation process here)
    # and a ringing caller's hang-up refused: they never leave; the player stops four of the day's
    # hours after its end.
    settings.ANSWER_TIMEOUT_SECONDS = 30
    day = small_day(arrivals_per_hour=(12.0,), hours=0.25, patience_mean=None, missed_share=0.99)
    monkeypatch.setattr(playing, "POLL_EVERY", 600.0)  # a look every ten minutes: four hours in 26
    player, clock = play(client, day, speed=1.0)
    assert player.tally.missed > 0 and player.tally.left > 0
    assert clock.now == pytest.approx(900 + playing.DRAIN_SECONDS, abs=1)
    assert any("the day is over: stopped with" in line for line in player.tally_lines)  # type: ignore[attr-defined]


def test_an_offer_picked_up_after_it_ran_out_is_counted_missed_as_the_centre_counts_it(client, settings, monkeypatch):
    settings.ANSWER_TIMEOUT_SECONDS = 30
    answered, late = client.answered, []

    def answered_late_once(call_id, **kwargs):
        if not late:  # the first pick-up comes after the offer ran out: 409
            late.append(call_id)
            raise sc.Conflict(409, {"error": "Conflict", "message": "The offer ran out."})
        return answered(call_id, **kwargs)

    monkeypatch.setattr(client, "answered", answered_late_once)
    player, _ = play(client, small_day(arrivals_per_hour=(12.0,), hours=0.25, patience_mean=None))
    assert late and player.tally.missed == 1
    assert "1 offers missed" in str(player.tally)


def test_an_offer_that_ran_out_before_the_player_looked_is_counted_missed_when_it_sees_the_agent_not_ready(
    client, settings, monkeypatch
):
    # Under faults a look can come after an offer's whole life: the player never saw it ring,
    # and the centre counts it missed all the same (the agent not ready, `missed`).
    settings.ANSWER_TIMEOUT_SECONDS = 30
    center, unseen = CallCenter(), []
    monkeypatch.setattr(Player, "_taken", first_offer_runs_out_unseen(center, unseen))
    player, _ = play(client, small_day(arrivals_per_hour=(12.0,), hours=0.25, patience_mean=None))
    assert unseen and player.tally.missed == 1
    assert Agents().get(center.calls.find(unseen[0]).legs[0]["agent_id"]).status != "ringing"


def first_offer_runs_out_unseen(center, unseen: list, then=None):
    """`Player._taken` but for the first offer, which runs out before the player sees it
    (as the escalation's pass ends it), and `then(player, seat)` happens before any look."""
    taken = Player._taken

    def ran_out_unseen_once(player, call):
        if not unseen and call.get("status") == "offered":
            unseen.append(call["call_id"])
            stored = center.calls.find(call["call_id"])
            assert center.offers.miss_offer(stored.call_id, stored.offer_sk) is not None
            if then is not None:
                then(player, player.seats[call["agent_id"]])
            return
        taken(player, call)

    return ran_out_unseen_once


def test_an_offer_that_ran_out_unseen_just_before_the_agents_shift_ended_is_counted_missed(
    client, settings, monkeypatch
):
    # The offer rings out between two looks and the shift ends before the next: the player
    # logs the agent off from not ready (`missed`), which the centre counted as a missed offer.
    settings.ANSWER_TIMEOUT_SECONDS = 30
    center, unseen = CallCenter(), []
    monkeypatch.setattr(Player, "_taken", first_offer_runs_out_unseen(center, unseen, then=Player._leave))
    player, _ = play(client, small_day(arrivals_per_hour=(12.0,), hours=0.25, patience_mean=None))
    assert unseen and player.tally.missed == 1
    assert Agents().get(center.calls.find(unseen[0]).legs[0]["agent_id"]).status == "offline"


def test_a_day_the_site_refuses_midway_leaves_none_of_its_agents_taking_callers(client, monkeypatch):
    # A day without a line on a deployment whose lines have no `main`: its first caller is refused.
    refused = sc.InvalidInput(400, {"error": "Invalid request", "message": "say which line the caller is for"})
    monkeypatch.setattr(client, "create_call", lambda *a, **kw: (_ for _ in ()).throw(refused))
    with pytest.raises(sc.InvalidInput):
        play(client, small_day())
    hired = [a for a in Agents().list(limit=50).items if a.agent_id.startswith(simulate_day.SIMULATED)]
    assert len(hired) == 2 and {a.status for a in hired} == {"offline"}


def test_each_play_of_a_day_places_callers_of_its_own_whatever_the_seed(client):
    first, _ = play(client, small_day(hours=0.25))
    again, _ = play(client, small_day(hours=0.25))  # the same seed: the same callers, placed anew
    assert again.tally.offered == first.tally.offered > 0
    assert again.run != first.run and not set(first.callers) & set(again.callers)


def test_callers_who_ask_to_be_called_back_are_reached_at_their_turn_and_counted(client):
    # A quarter of an hour, one agent, 50 callers an hour who never give up: half of those still
    # holding at 20 s ask.
    day = small_day(
        hours=0.25,
        shifts=(Shift(1, 0.0, 900.0, ("English", "French")),),
        patience_mean=None,
        callback_after_seconds=20.0,
        callback_share=0.5,
    )
    player, _ = play(client, day)
    tally = player.tally
    calls = {call_id: CallCenter().get_call(call_id) for call_id in player.callers}
    asked = [c for c in calls.values() if c.callback_requested_at]
    reached = [c for c in asked if c.status == CallStatus.ENDED]
    assert tally.callbacks_asked == len(asked) > tally.callbacks_reached == len(reached) > 0
    # Each reached was dialled once and talked to; the others were still to be called back when the
    # day closed, and were cancelled (abandoned) with whoever still held.
    assert all([r["result"] for r in c.callback_results] == ["connected"] for c in reached)
    assert {c.status for c in asked} == {CallStatus.ENDED, CallStatus.ABANDONED}
    assert tally.answered + tally.abandoned == tally.offered and tally.answered == tally.ended
    assert f"{len(reached)} of {len(asked)} called back" in str(tally)


def test_a_day_with_a_line_puts_it_and_the_callers_it_turns_away_are_counted(client):
    # One agent, 100 callers an hour who never give up; the day's line holds two callers
    # waiting, and turns away any more (`full`: the overflow ends there).
    day = small_day(
        hours=0.25,
        arrivals_per_hour=(100.0,),
        patience_mean=None,
        shifts=(Shift(1, 0.0, 900.0, ("English", "French")),),
        lines={"day": {"max_waiting": 2, "overflow": {"end": "busy"}}},
    )
    player, _ = play(client, day)
    line = client.get_line("day")
    assert (line["max_waiting"], line["overflow"], line["service_level_seconds"]) == (2, {"end": "busy"}, 20)
    calls = [CallCenter().get_call(call_id) for call_id in player.callers]
    assert {c.line for c in calls} == {"day"}
    tally = player.tally
    assert tally.refused > 0 and tally.offered == len(calls) == len(player.arrivals) - tally.refused
    assert tally.answered + tally.abandoned == tally.offered  # those who waited: answered, or hung up at the close
    # Played again, the line is set to the day's settings from the version read (not refused as stale).
    playing.open_lines(client, day)
    assert client.get_line("day")["version"] == line["version"] + 1


def test_a_day_on_two_lines_places_each_caller_on_theirs_and_its_agents_serve_their_lines(client):
    # Support only, and sales first then support; played again without lines, they serve every line.
    day = small_day(
        hours=0.25,
        arrivals_per_hour=(40.0,),
        patience_mean=None,
        lines={"support": {"share": 0.5}, "sales": {"share": 0.5}},
        shifts=(
            Shift(1, 0.0, 900.0, ("English", "French"), lines=("support",)),
            Shift(1, 0.0, 900.0, ("English", "French"), lines=("sales", "support")),
        ),
    )
    player, _ = play(client, day)
    support_only, both = (client.get_agent(agent_id) for agent_id in player.seats)
    assert playing.served(support_only["lines"]) == {"support": 1}
    assert playing.served(both["lines"]) == {"sales": 1, "support": 2}
    calls = [CallCenter().get_call(call_id) for call_id in player.callers]
    assert {c.line for c in calls} == {"support", "sales"}
    answered = [c for c in calls if c.status == CallStatus.ENDED]
    assert answered and all(c.agent_id == both["agent_id"] for c in answered if c.line == "sales")
    # The player's tally of each line's callers, as the lines' reports will be held to it.
    for line in ("support", "sales"):
        on_line = [c for c in calls if c.line == line]
        counted = {
            "offered": len(on_line),
            "answered": sum(c.answered_at is not None for c in on_line),
            "abandoned": sum(c.status == CallStatus.ABANDONED for c in on_line),
            "overflowed": 0,
        }
        assert player.tally.by_line[line] == counted and counted["answered"] > 0
    assert player.tally.as_dict()["by_line"] == player.tally.by_line
    assert client.get_line("sales")["name"] == "A small hour (sales)"
    play(client, small_day(hours=0.25, arrivals_per_hour=(4.0,)))
    assert [client.get_agent(agent_id)["lines"] for agent_id in player.seats] == [{}, {}]  # every line


def test_a_lines_report_is_held_to_the_players_tally_of_its_callers():
    from bench.served_day import line_problems, line_totals

    report = {
        "intervals": [
            {"combination": "all", "offered": 5, "answered": 3, "abandoned": 1, "short_abandoned": 1, "overflowed": 0},
            {
                "combination": "all",
                "offered": 2,
                "answered": 2,
                "abandoned": 0,
                "short_abandoned": None,
                "overflowed": 0,
            },
        ]
    }
    totals = line_totals(report)
    assert totals == {"offered": 7, "answered": 5, "abandoned": 2, "overflowed": 0}  # short abandons are abandons
    assert line_problems({"sales": totals}, {"sales": dict(totals)}) == []
    played = {"sales": {**totals, "answered": 6}, "support": {"offered": 1}}
    assert line_problems({"sales": totals}, played) == [
        "line sales: answered 5 in its report, 6 played",
        "line support: offered 0 in its report, 1 played",
    ]


def test_each_missed_offer_is_counted_once_whether_the_player_decided_it_or_only_saw_the_agent_not_ready():
    missed = playing.MissedOffers()
    not_ready = {"agent_id": "sim-1", "status": "not_ready", "reason": "missed", "status_since": "09:00:10"}
    assert missed.decided("sim-1") == 1  # let ring: counted when decided
    assert missed.seen(not_ready) == 0  # then seen not ready for it: the same offer
    assert missed.seen(not_ready) == 0  # and seen again at the next look
    # Rang out unseen (on a break, at a shift's end, between two slow looks): counted when seen, once.
    later = {**not_ready, "status_since": "09:05:00"}
    assert missed.seen(later) == 1 and missed.seen(later) == 0
    assert missed.seen({**not_ready, "agent_id": "sim-2"}) == 1
