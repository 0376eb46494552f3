"""Call facts: every way a call is answered, abandoned or ended writes its fact in the
change's own transaction, and the fact is counted into the service level exactly once,
whoever counts it (the process that wrote it, or the sweep after that process died) and
however the counters race. The multi-process version, with a SIGKILL, runs on DynamoDB
Local: tests/integration/test_counting_reconciles.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from queues_app.agents.roster import Agents
from queues_app.calls.records import Call, CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import errors
from queues_app.ddb.clock import to_iso
from queues_app.figures import counters, facts
from queues_app.figures.counters import MetricsStore
from queues_app.figures.service_level import ServiceLevelReader
from queues_app.figures.tally import Fact, Tally
from queues_app.routing.escalation import EscalationPolicy
from tests.helpers import figures as seeded

SPANISH_F = {"language": "Spanish", "gender": "F"}


@pytest.fixture
def router(moto_db, clock):
    clock.moment = datetime(2026, 11, 25, 14, 0, 5, tzinfo=UTC)
    return CallCenter(moto_db, clock=clock, escalation=EscalationPolicy(after_seconds=60, order=("gender", "language")))


def waiting_facts(db) -> list[dict]:
    return [item for pk in facts.FACTS.partitions() for item in db.partition_items(db.table("metrics"), pk)]


def kinds(db) -> list[tuple[str, str]]:
    return sorted((item["call_id"], item["kind"]) for item in waiting_facts(db))


def today(router):
    return ServiceLevelReader(router.db, clock=router.clock).read().today


def agent(router, name, languages=("Spanish",), gender="F"):
    return Agents(router.db, router.catalog).create(name, {"language": list(languages), "gender": [gender]})


def test_each_way_of_answering_abandoning_and_ending_writes_one_fact_in_its_change(router, clock):
    ana, bea, cid = agent(router, "Ana"), agent(router, "Bea"), agent(router, "Cid", ("English",), "M")
    router.make_available(ana.agent_id)
    at_once, _ = router.create_call(SPANISH_F)  # answered at once
    from_line, _ = router.create_call(SPANISH_F)  # waits
    hangs_up, _ = router.create_call({"language": "French", "gender": "X"})
    relaxed, _ = router.create_call({"language": "English", "gender": "F"})
    seeded = Call(call_id="seeded-caller", status=CallStatus.WAITING, preferences={}, arrived_at=to_iso(clock()))
    router.line.load([seeded])  # the demo data's way into the line
    clock.advance(30)
    router.make_available(bea.agent_id)  # takes the longest-waiting caller she fits
    router.abandon(hangs_up.call_id)
    router.release(ana.agent_id, then="queue")  # ends the call, takes the seeded caller
    router.make_available(cid.agent_id)
    clock.advance(61)
    router.escalate()  # gender relaxed: Cid takes the English caller

    entered = [at_once, from_line, hangs_up, relaxed, seeded]  # each entered the line once
    assert kinds(router.db) == sorted(
        [
            *((call.call_id, "offered") for call in entered),
            (at_once.call_id, "answered"),
            (at_once.call_id, "ended"),
            (from_line.call_id, "answered"),
            (hangs_up.call_id, "abandoned"),
            ("seeded-caller", "answered"),
            (relaxed.call_id, "answered"),
        ]
    )
    by_call = {(item["call_id"], item["kind"]): item for item in waiting_facts(router.db)}
    assert by_call[(from_line.call_id, "answered")]["seconds"] == 30.0
    assert by_call[(from_line.call_id, "answered")]["combination"] == "Spanish#F"
    assert by_call[(relaxed.call_id, "answered")]["combination"] == "English#F"  # as asked, not as relaxed
    assert by_call[(hangs_up.call_id, "abandoned")]["seconds"] == 30.0
    assert "seconds" not in by_call[(at_once.call_id, "ended")]  # read from the call when counted

    MetricsStore(router.db).flush()
    assert waiting_facts(router.db) == []
    figures = today(router).overall
    assert (figures.offered, figures.answered, figures.abandoned, figures.handled) == (5, 4, 1, 1)
    assert figures.handle_sum == 30.0  # answered at 14:00:05, ended 30 s later
    assert figures.wait_sum == 0 + 30 + 30 + 91  # at once, from the line, seeded, escalated
    assert figures.answered_within == 1  # only the caller answered at once waited 20 s or less


def test_a_change_that_fails_leaves_no_fact(router):
    router.make_available(agent(router, "Ana").agent_id)
    call, _ = router.create_call(SPANISH_F)
    MetricsStore(router.db).flush()
    with pytest.raises(errors.Conflict):
        router.abandon(call.call_id)  # answered already: refused
    assert waiting_facts(router.db) == []
    MetricsStore(router.db).flush()
    assert (today(router).overall.answered, today(router).overall.abandoned) == (1, 0)


def test_the_facts_of_a_process_that_died_are_counted_by_the_sweep_once(router):
    router.make_available(agent(router, "Ana").agent_id)
    router.create_call(SPANISH_F)
    router.create_call(SPANISH_F)
    expected = counters.recorder.take_facts()  # the process dies before its flush
    assert len(waiting_facts(router.db)) == 3  # two callers entered the line, one was answered

    report = Tally(router.db).sweep()
    # The three, and the agent's two changes of status (queued, then attending)
    assert (report.counted, report.already, report.left) == (5, 0, [])
    # The same fact, had the process lived to count it: nothing left, nothing twice.
    assert Tally(router.db).count_expected(sorted(expected)) == sorted(expected)
    assert Tally(router.db).sweep().counted == 0
    assert (today(router).overall.offered, today(router).overall.answered) == (2, 1)


def test_two_counters_racing_over_the_same_facts_count_each_once(router):
    router.make_available(agent(router, "Ana").agent_id)
    router.create_call(SPANISH_F)
    router.abandon(router.create_call(SPANISH_F)[0].call_id)
    read = [Fact.from_item(item) for item in waiting_facts(router.db)]
    first = Tally(router.db).count(read)
    second = Tally(router.db).count(read)  # read before the first counted them
    assert (first.counted, second.counted, second.already) == (4, 0, 4)  # two offered, one answered, one abandoned
    figures = today(router).overall
    assert (figures.answered, figures.abandoned) == (1, 1)


def test_a_counter_that_loses_a_race_leaves_the_facts_for_the_next_flush(router, monkeypatch):
    router.make_available(agent(router, "Ana").agent_id)
    router.create_call(SPANISH_F)
    real = router.db.call
    lost = []

    def conflict_once(operation, **params):
        if operation == "transact_write_items" and not lost:
            lost.append(operation)
            reason = errors.CancellationReason(index=0, code="TransactionConflict")
            raise errors.TransactionCancelled("conflict", [reason])
        return real(operation, **params)

    monkeypatch.setattr(router.db, "call", conflict_once)
    MetricsStore(router.db).flush()
    assert lost and len(waiting_facts(router.db)) == 2  # offered and answered: not counted, not lost
    assert today(router).overall.answered == 0
    MetricsStore(router.db).flush()  # given back: the next flush counts it
    assert waiting_facts(router.db) == []
    assert today(router).overall.answered == 1


def test_a_fact_not_there_yet_is_kept_for_a_while_then_left_to_the_sweep(router, monkeypatch):
    pk_sk = (facts.partition("on-its-way"), "on-its-way#answered")
    counters.recorder.expect_fact(*pk_sk)  # its transaction has not landed
    MetricsStore(router.db).flush()
    assert pk_sk in counters.recorder.take_facts()  # kept for the next flush

    counters.recorder.expect_fact(*pk_sk)
    monkeypatch.setattr(counters, "FACT_PATIENCE_SECONDS", -1.0)
    MetricsStore(router.db).flush()
    assert counters.recorder.take_facts() == {}  # given up: the sweep finds it if it lands


def test_many_facts_are_counted_in_as_few_transactions_as_fit(moto_db, clock):
    from queues_app.ddb import meter

    start = datetime(2026, 11, 25, 14, 0, tzinfo=UTC)
    for n in range(150):  # 9 combinations, over 5 minutes
        combination = (["English", "French", "Spanish"][n % 3], ["F", "M", "X"][n // 3 % 3])
        # Answered at hh:mm:45 after waits under 40 s: each caller entered the line that minute.
        seeded.answered(moto_db, n % 40, combination, moment=start.replace(minute=n % 5, second=45))
    with meter.measure() as seen:
        Tally(moto_db).sweep()
    sent = seen.calls_of("TransactWriteItems")
    # Each transaction holds at most 100 actions. 300 facts (150 offered, 150 answered), 60 a
    # minute; a transaction spanning two minutes counts 18 minute items, 9 day and 9
    # quarter-hour items, leaving room for 64 fact deletes: 300 facts take 5 transactions.
    assert sent == 5
    clock.moment = start.replace(minute=5)
    figures = ServiceLevelReader(moto_db, clock=clock).read().today.overall
    assert figures.answered == 150 and figures.wait_sum == sum(n % 40 for n in range(150))
