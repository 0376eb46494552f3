"""A day played through the API against the production shape, and reconciled.

    .venv/bin/python -m bench.served_day [DAY] [--speed X] [--hours H] [--faults] [--json] [--endpoint URL]

`serve`'s processes on fresh tables (gunicorn with two workers, the matcher, the caller
escalation, the metrics collector), and the day (`weekday` by default, a day's name or a
day file) played against them by `simulate_day`'s player (`queues_app/simulation/player.py`):
callers placed through `POST /api/calls`, given up on, ended after their handle time, the
day's agents on shifts, breaks and wrap-up, at X times the day's clock (timers of the
centre are not scaled: the player's own tally of waits is in the day's seconds).

At the end, once every process has written what it counted: today's offered, answered and
abandoned calls in the interval report (`GET /api/reports/intervals`) and in /metrics equal
the player's tally (no caller lost, none counted twice), nobody waits or is on a call, and
`check_invariants` finds nothing wrong.

`--faults` adds, during the day: the matcher killed (SIGKILL) and started again, as a
process manager would, with the seconds until the new one holds the lease; a web worker
killed (gunicorn starts another); the collector stopped for five of the day's minutes
(at most a fifth of the play) and started again; half of every server's DynamoDB requests
throttled for a minute (at most a tenth of the play) by the meter between the servers and
DynamoDB, which also counts their requests and capacity units a caller.
`--answer-timeout S` turns offers on (ANSWER_TIMEOUT_SECONDS): the player picks each up, but
lets a share ring (`--missed-share`, or the day file's `offers.missed_share`), and the
agents' report's missed offers must equal those. `--flush-seconds S`: the servers'
COUNTS_FLUSH_SECONDS (10 by default, as deployed); the reconciliation waits twice that after
the play, for every process to have written what it counted. `--smoke`: a quarter of an hour
of the day at 30 times (30 s of play), offers on with a fifth let ring, counts written every 2 s.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench import harness
from bench.load import (
    LoggedChildren,
    free_port,
    meter_figures,
    prepare_database,
    serve_meter,
    wait_for_matcher,
    wait_until_up,
)
from queues_app.figures.counters import FLUSH_SECONDS

SMOKE = {"hours": 0.25, "speed": 30.0, "answer_timeout": 2.0, "missed_share": 0.2, "flush_seconds": 2.0}
WEB_WORKERS = 2
# The interval report's figure of today, and the player's for it.
RECONCILED = (
    ("offered", "offered"),
    ("answered", "answered"),
    ("abandoned", "abandoned"),
    ("callbacks_requested", "callbacks_asked"),
    ("callbacks_connected", "callbacks_reached"),
    ("overflowed", "overflowed"),
    ("refused", "refused"),
)
# The player's tally beside the agents' report's totals.
AGENTS_REPORT = (("answered", "answered"), ("calls_ended", "calls_handled"), ("offers_missed", "missed_offers"))
COLLECTOR = ["collect_metrics", "--every", "15"]
THROTTLE_SECONDS, THROTTLE_SHARE = 60.0, 0.5  # a minute of half the requests throttled (at most a tenth of the play)


@dataclass
class ServedDay:
    day: str
    speed: float
    hours: float
    tables_prefix: str = ""
    tally: dict = field(default_factory=dict)  # the player's
    report: dict = field(default_factory=dict)  # today's totals in the interval report
    lines: dict = field(default_factory=dict)  # on a day with lines: each line's report of today, in totals
    metrics: dict = field(default_factory=dict)  # today's in /metrics
    faults: list[dict] = field(default_factory=list)
    dynamodb: dict = field(default_factory=dict)  # the servers' requests and capacity units a caller
    problems: list[str] = field(default_factory=list)
    play_seconds: float = 0.0
    seconds: float = 0.0

    def as_json(self) -> dict:
        return asdict(self)


class Faults(threading.Thread):
    """The faults of `--faults` (`FAULTS`), at fractions of the play's `length` in real seconds."""

    def __init__(self, servers, db, length: float, speed: float):
        super().__init__(daemon=True, name="faults")
        self.servers, self.db, self.length, self.speed = servers, db, length, speed
        self.done: list[dict] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        began = time.monotonic()
        for share, name in FAULTS:
            if self.stopped.wait(max(0.0, began + share * self.length - time.monotonic())):
                return
            at = time.monotonic() - began
            try:
                self.done.append({"at_s": round(at, 1), **getattr(self, name)()})
            except Exception as exc:  # noqa: BLE001 - a fault that could not be made is a finding, not a crash
                self.done.append({"at_s": round(at, 1), "fault": name, "error": repr(exc)})

    def kill_matcher(self) -> dict:
        """Killed without a word (its lease runs out on its own), and started again at once."""
        from queues_app.routing import dispatch

        children = self.servers.children
        process = children.children.processes["run_matcher"]
        before = dispatch.current_holder(self.db)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        began = time.monotonic()
        children.start("run_matcher", [*self.servers.manage, "run_matcher"], self.servers.env)
        while True:
            holder = dispatch.current_holder(self.db)
            if holder and holder.live(time.time()) and (before is None or holder.holder != before.holder):
                break
            if time.monotonic() - began > 120:
                raise RuntimeError("no new matcher held the lease within 120 s")
            time.sleep(0.1)
        return {"fault": "matcher killed and started again", "lease_held_after_s": round(time.monotonic() - began, 1)}

    def kill_web_worker(self) -> dict:
        master = self.servers.children.children.processes["gunicorn"].pid
        workers = children_of(master)
        os.kill(workers[0], signal.SIGKILL)
        began = time.monotonic()
        while len([pid for pid in children_of(master) if pid != workers[0]]) < len(workers):
            if time.monotonic() - began > 60:
                raise RuntimeError("gunicorn did not start another worker within 60 s")
            time.sleep(0.1)
        return {"fault": "a web worker killed", "replaced_after_s": round(time.monotonic() - began, 1)}

    def pause_collector(self) -> dict:
        children = self.servers.children
        process = children.children.processes["collect_metrics"]
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
        pause = min(300 / self.speed, 0.2 * self.length)
        self.stopped.wait(pause)
        children.start("collect_metrics", [*self.servers.manage, *COLLECTOR], self.servers.env)
        return {"fault": "the collector stopped", "stopped_for_s": round(pause, 1)}

    def throttle(self) -> dict:
        """A share of every server's DynamoDB requests throttled, at the meter between them."""
        import httpx

        seconds = min(THROTTLE_SECONDS, 0.1 * self.length)
        asked = {"seconds": seconds, "share": THROTTLE_SHARE}
        httpx.get(f"{self.servers.meter_url}/__throttle__", params=asked, timeout=10).raise_for_status()
        self.stopped.wait(seconds)
        return {"fault": f"{THROTTLE_SHARE:.0%} of DynamoDB requests throttled", "for_s": round(seconds, 1)}


FAULTS = ((0.2, "kill_matcher"), (0.4, "kill_web_worker"), (0.6, "pause_collector"), (0.85, "throttle"))


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.parent.name))
    return sorted(found)


@dataclass
class Servers:
    children: LoggedChildren
    manage: list[str]
    env: dict[str, str]
    base_url: str
    meter_url: str
    meter: multiprocessing.Process


def start_servers(
    endpoint: str, prefix: str, workdir: Path, answer_timeout: float | None, flush_seconds: float
) -> Servers:
    """`serve`'s processes for the day (their DynamoDB through the meter, which can throttle)."""
    from queues_app.management.commands.serve import production_env

    children = LoggedChildren(workdir)
    manage = [sys.executable, str(harness.ROOT / "manage.py")]
    meter_port, port = free_port(), free_port()
    meter = multiprocessing.get_context("spawn").Process(
        target=serve_meter, args=(meter_port, endpoint, prefix), daemon=True, name="dynamodb-meter"
    )
    meter.start()
    env = production_env(dict(os.environ), secrets.token_urlsafe(50))
    env.update(
        STATIC_ROOT=str(workdir / "static"),
        CACHE_URL=f"filecache://{workdir / 'cache'}",
        DYNAMODB_ENDPOINT_URL=f"http://127.0.0.1:{meter_port}",
        DYNAMODB_TABLE_PREFIX=prefix,
        LOG_LEVEL="WARNING",
        ANSWER_TIMEOUT_SECONDS=f"{answer_timeout:g}" if answer_timeout else "",
        COUNTS_FLUSH_SECONDS=f"{flush_seconds:g}",
    )
    servers = Servers(children, manage, env, f"http://127.0.0.1:{port}", f"http://127.0.0.1:{meter_port}", meter)
    subprocess.run([*manage, "collectstatic", "--noinput", "-v", "0"], cwd=harness.ROOT, env=env, check=True)
    gunicorn = [sys.executable, "-m", "gunicorn", "callcenter.wsgi:application", "--bind", f"127.0.0.1:{port}"]
    gunicorn += ["--workers", str(WEB_WORKERS), "--no-control-socket", "--timeout", "60"]
    gunicorn += ["--config", str(harness.ROOT / "callcenter" / "gunicorn_config.py")]
    children.start("gunicorn", gunicorn, env)
    for name, args in (
        ("run_matcher", ["run_matcher"]),
        ("escalate_callers", ["escalate_callers", "--every", "5"]),
        ("collect_metrics", COLLECTOR),
    ):
        children.start(name, [*manage, *args], env)
    return servers


def serve_day(
    endpoint: str,
    day,
    speed: float,
    faults: bool,
    workdir: Path,
    *,
    answer_timeout: float | None = None,
    missed_share: float | None = None,
    flush_seconds: float = FLUSH_SECONDS,
    log=harness.progress,
) -> ServedDay:
    """Start the processes, play the day, reconcile; everything stopped at the end."""
    import httpx
    from django.conf import settings

    import switchboard_client as sc
    from queues_app.ddb import schema
    from queues_app.ddb.client import Dynamo
    from queues_app.simulation.player import Player

    run = ServedDay(day.name, speed, day.hours)
    began = time.perf_counter()
    prefix = run.tables_prefix = f"day-{uuid.uuid4().hex[:8]}-"
    db = Dynamo(prefix=prefix, endpoint_url=endpoint, region="us-east-1", read_timeout=60)
    schema.create_tables(db)
    token = prepare_database()
    servers = start_servers(endpoint, prefix, workdir, answer_timeout, flush_seconds)
    fault_thread = None
    try:
        wait_until_up(servers.base_url, servers.children)
        wait_for_matcher(db, servers.children)
        log(f"serving at {servers.base_url}; playing {day.name} ({day.hours:g} h) at {speed:g} times")
        others = {k: list(v) for k, v in settings.SWITCHBOARD_SKILLS.items() if k != "language"}
        with sc.Switchboard(servers.base_url, token, timeout=30, max_retries=8) as client:
            player = Player(day, client, speed=speed, log=log, other_skills=others, missed_share=missed_share)
            if faults:
                fault_thread = Faults(servers, db, day.hours * 3600 / speed, speed)
                fault_thread.start()
            started = time.time()
            run.tally = player.play().as_dict()
            run.play_seconds = round(time.time() - started, 1)
            if fault_thread is not None:
                fault_thread.stopped.set()
                fault_thread.join(timeout=180)
                run.faults = fault_thread.done
                run.problems += [f"{f['fault']}: {f['error']}" for f in run.faults if "error" in f]
                if len(run.faults) < len(FAULTS):
                    run.problems.append(f"{len(run.faults)} of the {len(FAULTS)} faults were made before the day ended")
            # A process's flushing thread looks every period and writes when a period has passed
            # since its last flush: what it counted is written within two periods.
            settle = 2 * flush_seconds + 1
            log(f"played in {run.play_seconds:.0f} s; waiting {settle:g} s for every count to be written")
            time.sleep(settle)
            _reconcile(run, client, servers.base_url, token, len(player.arrivals), list(day.lines))
            buckets = json.loads(httpx.get(f"{servers.meter_url}/__meter__", timeout=30).content)
            run.dynamodb = _per_call(meter_figures(buckets, started, time.time()), run.tally["offered"])
        run.problems += _invariants(servers.manage, servers.env)
        gone = servers.children.exited()
        if gone and not faults:
            run.problems.append(f"processes exited during the day: {', '.join(gone)}")
    finally:
        if fault_thread is not None:
            fault_thread.stopped.set()
        servers.children.stop()
        servers.meter.terminate()
    run.seconds = round(time.perf_counter() - began, 1)
    return run


def _per_call(metered: dict, calls: int) -> dict:
    """The servers' DynamoDB requests and capacity units over the play, per caller offered."""
    per = max(calls, 1)
    throttled = sum(n for op, (n, _) in metered["ops"].items() if op.endswith(" (throttled)"))
    requests = sum(n for n, _ in metered["ops"].values()) - throttled
    units = sum(metered["cu"].values()) + sum(metered["estimated"].values())
    return {
        "requests_per_call": round(requests / per, 1),
        "capacity_units_per_call": round(units / per, 1),
        "throttled_requests": throttled,
        "by_operation_per_call": {op: round(n / per, 1) for op, (n, _) in sorted(metered["ops"].items())},
    }


def _reconcile(run: ServedDay, client, base_url: str, token: str, arrivals: int, lines: list[str]) -> None:
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    tally = run.tally
    if tally["offered"] != arrivals:
        run.problems.append(f"{arrivals - tally['offered']} of the day's {arrivals} callers were never placed")
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        report = http.get("/api/reports/intervals").raise_for_status().json()
        exposition = http.get("/metrics").raise_for_status().text
        agents = http.get("/api/reports/agents").raise_for_status().json()["totals"]
        for line in lines:
            shown = http.get("/api/reports/intervals", params={"line": line}).raise_for_status().json()
            run.lines[line] = line_totals(shown)
    run.problems += line_problems(run.lines, run.tally.get("by_line", {}))
    totals = {name: 0 for name, _ in RECONCILED}
    for interval in report["intervals"]:
        if interval["combination"] == "all":
            for name, _ in RECONCILED:
                totals[name] += interval[name] or 0
    run.report = totals
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            name = sample.name.removeprefix("switchboard_calls_")
            if name in ("answered", "abandoned") and sample.labels == {"combination": "all", "window": "today"}:
                run.metrics[name] = sample.value
    for name, mine in RECONCILED:
        if totals[name] != tally[mine]:
            run.problems.append(f"today's {name}: {totals[name]} in the interval report, {tally[mine]} played")
    for name, value in run.metrics.items():
        if value != tally[name]:
            run.problems.append(f"today's {name}: {value} in /metrics, {tally[name]} played")
    if tally["left_at_the_end"]:
        run.problems.append(f"{tally['left_at_the_end']} calls never ended")
    # The agents' report: every call answered and ended by an agent, each offer let ring.
    for mine, theirs in AGENTS_REPORT:
        run.report[f"agents_{theirs}"] = agents.get(theirs)
        if agents.get(theirs) != tally[mine]:
            run.problems.append(f"agents' report: {theirs} {agents.get(theirs)}, {tally[mine]} played ({mine})")
    for status in ("waiting", "assigned"):
        left = list(client.iter_calls(status))
        if left:
            run.problems.append(f"{len(left)} calls still {status} after the day")


def line_totals(report: dict) -> dict[str, int]:
    """A line's report of today (`GET /api/reports/intervals?line=`) in totals: its callers
    offered, answered, abandoned (short abandons with them: the player counts every caller
    who hung up) and overflowed."""
    from queues_app.simulation.player import LINE_TALLY

    totals = dict.fromkeys(LINE_TALLY, 0)
    for interval in report["intervals"]:
        if interval["combination"] == "all":
            for name in LINE_TALLY:
                totals[name] += interval[name] or 0
            totals["abandoned"] += interval.get("short_abandoned") or 0
    return totals


def line_problems(reported: dict[str, dict[str, int]], played: dict[str, dict[str, int]]) -> list[str]:
    """Each line's totals in its report against the player's tally of the callers on it."""
    from queues_app.simulation.player import LINE_TALLY

    problems = []
    for line in sorted(set(reported) | set(played)):
        for name in LINE_TALLY:
            have, mine = reported.get(line, {}).get(name, 0), played.get(line, {}).get(name, 0)
            if have != mine:
                problems.append(f"line {line}: {name} {have} in its report, {mine} played")
    return problems


def _invariants(manage: list[str], env: dict) -> list[str]:
    checked = subprocess.run(
        [*manage, "check_invariants"], cwd=harness.ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    if checked.returncode != 0:
        return [f"check_invariants: {(checked.stdout + checked.stderr).strip()[-500:]}"]
    return []


def report(run: ServedDay, where: str) -> str:
    tally = run.tally
    lines = [
        f"{run.day}: {run.hours:g} h at {run.speed:g} times ({run.play_seconds:.0f} s of play), DynamoDB {where}",
        f"  played:          {tally.get('offered')} offered, {tally.get('answered')} answered, "
        f"{tally.get('abandoned')} gave up; service level {tally.get('service_level')} "
        f"(day's threshold), ASA {tally.get('asa_seconds')} s (day's seconds); "
        f"{tally.get('steps_put_off')} steps put off; {tally.get('offers_missed')} offers missed; "
        f"{tally.get('callbacks_reached')} of {tally.get('callbacks_asked')} callbacks reached",
        f"  the reports:     {run.report}",
        *(f"  line {line}:{' ' * max(1, 11 - len(line))}{totals}" for line, totals in run.lines.items()),
        f"  /metrics today:  {run.metrics}",
        f"  DynamoDB:        {run.dynamodb}",
    ]
    for fault in run.faults:
        lines.append(f"  fault: {fault}")
    lines += harness.checks(run.problems)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__ or "", "served_day", warmup=0)
    parser.add_argument("day", nargs="?", default="weekday", help="a day's name or a day file")
    parser.add_argument("--speed", type=harness.positive(float), default=20.0, help="times the day's clock")
    parser.add_argument("--hours", type=harness.positive(float), default=2.0, help="the first hours of the day")
    parser.add_argument(
        "--answer-timeout",
        type=harness.positive(float),
        default=None,
        help="ANSWER_TIMEOUT_SECONDS for the servers: calls are offered, and picked up",
    )
    parser.add_argument(
        "--missed-share", type=float, default=None, help="the share of offers let ring (default: the day file's)"
    )
    parser.add_argument(
        "--flush-seconds",
        type=harness.positive(float),
        default=FLUSH_SECONDS,
        help="COUNTS_FLUSH_SECONDS for the servers (1 to 300; the reconciliation waits twice that)",
    )
    parser.add_argument(
        "--faults", action="store_true", help="kill the matcher, a web worker; pause the collector; throttle DynamoDB"
    )
    args = harness.parse(parser, argv, smoke=SMOKE)
    if args.missed_share is not None and not 0 <= args.missed_share < 1:
        parser.error("--missed-share takes 0 or more and under 1")
    if not 1 <= args.flush_seconds <= 300:
        parser.error("--flush-seconds takes 1 to 300, as COUNTS_FLUSH_SECONDS does")
    from queues_app.simulation.day import find

    try:
        day = find(args.day, args.hours)
    except ValueError as exc:
        parser.error(str(exc))
    workdir = Path(tempfile.mkdtemp(prefix="switchboard-day-"))
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'django.sqlite3'}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "callcenter.settings"
    from queues_app.management.children import stop_on_sigterm

    stop_on_sigterm()
    try:
        return harness.execute(
            args,
            lambda endpoint: serve_day(
                endpoint,
                day,
                args.speed,
                args.faults,
                workdir,
                answer_timeout=args.answer_timeout,
                missed_share=args.missed_share,
                flush_seconds=args.flush_seconds,
            ),
            report=report,
            as_json=ServedDay.as_json,
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
