"""The harness every benchmark runs on; a benchmark module keeps only what it measures
(its workload, its checks, its figures and the rows of its report).

- the command line: `parser()` holds the options every benchmark takes (`--json`,
  `--endpoint`, `--warmup N` / `--no-warmup`, `--smoke`, and `--seed` and `--repeat`
  where the benchmark has them); `parse()` applies the benchmark's smallest sizes
  when `--smoke` is given (options given explicitly still win); `from_args()` builds
  a parameters dataclass from the options; `run_module()` runs a benchmark's command
  in a child process (tests);
- `execute()`: Django settings, a DynamoDB (`--endpoint`, or an in-memory DynamoDB
  Local started before the run and stopped after it), the run, then the report: the
  text tables and the wall time, or with `--json` one JSON object on stdout and the
  rest on stderr; exit status 1 when a check failed;
- `fresh_tables()`: the project's tables under a prefix of their own, dropped
  afterwards, in a process whose matchers and consumers have lost no races lately;
- `warm_up()`: rounds thrown away before measuring (DynamoDB Local's JVM is several
  times slower on its first few thousand requests); `run_variants()`: a warm-up, then
  one workload under each of its variants in turn;
- `metered()`: the DynamoDB requests and capacity units, by operation, of whatever
  runs in a block (any thread), from the request meter `queues_app.ddb.meter`;
  `unmetered()` for the benchmark's own reads inside such a block;
- figures: `medians()`, `percentile()`; report lines: `by_operation()`, `checks()`.

Run a benchmark from the repository root: `.venv/bin/python -m bench.matching --help`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from queues_app.ddb import meter, schema
from queues_app.ddb.client import Dynamo
from queues_app.ddb.local import DynamoDBLocal
from queues_app.routing import matching
from queues_app.shipments import consuming

IN_MEMORY = "in-memory DynamoDB Local"
ROOT = Path(__file__).resolve().parents[1]


# --- the command line ----------------------------------------------------------------------


def parser(
    doc: str, name: str, *, seed: int | None = None, repeat: int | None = None, warmup: int = 1
) -> argparse.ArgumentParser:
    """The benchmark's parser, the common options first; the benchmark adds its own."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("common to every benchmark")
    group.add_argument(
        "--json", action="store_true", help="print only one JSON object on stdout (progress and the rest go to stderr)"
    )
    group.add_argument(
        "--endpoint",
        metavar="URL",
        help="a running DynamoDB (Local); default: start an in-memory DynamoDB Local for the run",
    )
    group.add_argument(
        "--warmup",
        type=int,
        default=warmup,
        metavar="N",
        help=f"discarded warm-up rounds before measuring (default {warmup})",
    )
    group.add_argument("--no-warmup", dest="warmup", action="store_const", const=0, help="the same as --warmup 0")
    group.add_argument(
        "--smoke",
        action="store_true",
        help="the smallest sizes: shows that the benchmark runs and its checks pass, measures nothing",
    )
    if seed is not None:
        group.add_argument("--seed", type=int, default=seed, help=f"seed of the workload (default {seed})")
    if repeat is not None:
        group.add_argument(
            "--repeat",
            type=int,
            default=repeat,
            metavar="N",
            help=f"runs of every configuration; medians are reported (default {repeat})",
        )
    return argparse.ArgumentParser(prog=f"python -m bench.{name}", description=doc.split("\n\n")[0], parents=[common])


def parse(parser: argparse.ArgumentParser, argv: list[str] | None, *, smoke: dict[str, Any]) -> argparse.Namespace:
    """Parse `argv`; with `--smoke`, `smoke` replaces the defaults (of this parser only)."""
    args = parser.parse_args(argv)
    if args.smoke:
        parser.set_defaults(**smoke)
        args = parser.parse_args(argv)
    if args.warmup < 0 or getattr(args, "repeat", 1) < 1:
        parser.error("--warmup takes zero or more, --repeat a positive number")
    return args


def from_args[P](cls: type[P], args: argparse.Namespace) -> P:
    """A parameters dataclass from the options of the same names."""
    return cls(**{f.name: getattr(args, f.name) for f in fields(cls)})


def int_list(text: str) -> tuple[int, ...]:
    """An argparse type: comma-separated integers ('' is none)."""
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated integers expected, e.g. 1,4,16; not {text!r}") from None


def positive[N: (int, float)](kind: Callable[[str], N]) -> Callable[[str], N]:
    """An argparse type: a finite number (`int` or `float`) above 0."""

    def convert(text: str) -> N:
        try:
            number = kind(text)
        except ValueError:
            number = None
        if number is None or not (math.isfinite(number) and number > 0):
            raise argparse.ArgumentTypeError(f"a number above 0 expected, not {text!r}")
        return number

    return convert


def names(*allowed: str) -> Callable[[str], tuple[str, ...]]:
    """An argparse type: a comma-separated choice among `allowed`, at least one."""

    def convert(text: str) -> tuple[str, ...]:
        chosen = tuple(part.strip() for part in text.split(",") if part.strip())
        if not chosen or set(chosen) - set(allowed):
            raise argparse.ArgumentTypeError(f"takes {', '.join(allowed)} or several of them, comma-separated")
        return chosen

    return convert


def run_module(name: str, *args: str, timeout: float = 600.0) -> subprocess.CompletedProcess:
    """Run `python -m bench.<name> args...` from the repository root in a child process,
    as a person would (tests of the command line); stdout and stderr captured as text."""
    return subprocess.run(
        [sys.executable, "-m", f"bench.{name}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def progress(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


# --- one run of a benchmark's command ------------------------------------------------------


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "callcenter.settings")
    import django
    from django.conf import settings

    django.setup()
    # Processes the benchmark starts sign for each other (the matching dispatcher): one key,
    # even where the settings make one up per process.
    os.environ.setdefault("SECRET_KEY", settings.SECRET_KEY)


@contextmanager
def dynamodb_endpoint(endpoint: str | None) -> Iterator[str]:
    """`endpoint`, or an in-memory DynamoDB Local started for the block and stopped after it."""
    if endpoint:
        yield endpoint
        return
    server = DynamoDBLocal().start()
    try:
        yield server.endpoint
    finally:
        server.stop()


def execute[R](
    args: argparse.Namespace,
    run: Callable[[str], R],
    *,
    report: Callable[[R, str], str],
    as_json: Callable[[R], dict],
    problems: Callable[[R], list[str]] = lambda r: r.problems,
    json_notes: Callable[[R], Iterable[str]] = lambda r: (),
) -> int:
    """Run `run(endpoint)` and print its results: `report(results, where)` and the wall
    time, or with --json `as_json(results)` on stdout and `json_notes` and the failed
    checks on stderr. Returns the exit status: 1 when a check failed."""
    setup_django()
    began = time.perf_counter()
    with dynamodb_endpoint(args.endpoint) as endpoint:
        results = run(endpoint)
    elapsed = time.perf_counter() - began
    failed = problems(results)
    if args.json:
        print(json.dumps(as_json(results)), flush=True)
        for line in json_notes(results):
            print(line, file=sys.stderr)
        for problem in failed:
            print(f"CHECK FAILED: {problem}", file=sys.stderr)
    else:
        print(report(results, args.endpoint or IN_MEMORY))
        print(f"Whole run: {elapsed:.0f} s")
    return 1 if failed else 0


# --- tables, warm-up, meter ------------------------------------------------------------------


def reset_contention() -> None:
    """A process whose matchers and consumers have lost no races lately and hold no claims."""
    matching.reset_contention()
    consuming.reset_contention()


@contextmanager
def fresh_tables(endpoint: str, *labels: object, read_timeout: float = 30.0) -> Iterator[Dynamo]:
    """A `Dynamo` on the project's tables, created under a prefix of their own
    (`bench-<labels>-<random>-`) and dropped when the block ends; the process's
    contention gauges and claims start afresh."""
    name = "-".join(str(label) for label in labels)
    db = Dynamo(
        prefix=f"bench-{name}-{uuid.uuid4().hex[:8]}-",
        endpoint_url=endpoint,
        region="us-east-1",
        read_timeout=read_timeout,
    )
    schema.create_tables(db)
    reset_contention()
    try:
        yield db
    finally:
        schema.delete_tables(db)


def warm_up(rounds: int, one_round: Callable[[int], object]) -> None:
    """`one_round(i)` for i in range(rounds), results thrown away."""
    for index in range(rounds):
        one_round(index)
    if rounds:
        progress("warm-up done")


@dataclass
class Measurement:
    """What the request meter saw during a `metered()` block, and its wall time."""

    requests: int = 0
    capacity: float = 0.0
    operations: dict = field(default_factory=dict)  # {operation: {"calls", "capacity", "errors", ...}}
    seconds: float = 0.0

    def calls(self, operation: str) -> int:
        return self.operations.get(operation, {}).get("calls", 0)

    def errors(self, operation: str, code: str) -> int:
        return self.operations.get(operation, {}).get("errors", {}).get(code, 0)


@contextmanager
def metered() -> Iterator[Measurement]:
    """Meter the DynamoDB requests every thread makes while the block runs; the
    figures are filled in when it ends."""
    measurement = Measurement()
    began = time.perf_counter()
    with meter.measure() as live:
        try:
            yield measurement
        finally:
            measurement.seconds = time.perf_counter() - began
            measurement.requests, measurement.capacity = live.calls, live.capacity
            measurement.operations = live.snapshot()


@contextmanager
def unmetered() -> Iterator[None]:
    """Requests of this thread in the block are the benchmark's own (checking that a
    queue is empty, sampling a depth): `metered()` blocks do not count them."""
    with meter.housekeeping():
        yield


# --- variants of one workload, in turn ------------------------------------------------------


@dataclass
class Variants[P, T]:
    """One workload run under several variants in turn (the LIFO benchmark's orders, the
    backlog benchmark's modes): the parameters (a dataclass), each variant's run (with
    `metrics()` and `problems`), and the wall time of the lot, warm-up included."""

    parameters: P
    runs: dict[str, T]
    seconds: float = 0.0

    @property
    def problems(self) -> list[str]:
        return [f"{name}: {problem}" for name, run in self.runs.items() for problem in run.problems]

    def as_json(self, parameters_key: str = "parameters") -> dict:
        """{parameters_key: {...}, "<variant>": run.metrics(), ..., "seconds": ...}"""
        return {
            parameters_key: asdict(self.parameters),
            **{name: run.metrics() for name, run in self.runs.items()},
            "seconds": round(self.seconds, 1),
        }


def run_variants[P, T](
    names: Iterable[str],
    run_one: Callable[[str], T],
    parameters: P,
    *,
    warmup: int,
    warm_up_round: Callable[[int], object],
    progress: Callable[[str], None] | None = None,
    summary: Callable[[T], str] = str,
) -> Variants[P, T]:
    """`warmup` warm-up rounds, then `run_one(name)` for each variant, a summary line after each."""
    began = time.perf_counter()
    warm_up(warmup, warm_up_round)
    runs = {}
    for name in names:
        runs[name] = run_one(name)
        if progress:
            progress(summary(runs[name]))
    return Variants(parameters, runs, time.perf_counter() - began)


# --- figures and report lines ----------------------------------------------------------------


def medians(figures: list[dict], keys: Iterable[str], digits: int = 3) -> dict:
    """The median of each of `keys` over `figures` (one dict per run)."""
    return {key: round(statistics.median(f[key] for f in figures), digits) for key in keys}


def percentile(values: Iterable[float], p: float) -> float | None:
    """The value at rank int(p * n) of the sorted values (the largest for p near 1); None without values."""
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def by_operation(operations: dict, per: int, *, capacity: str | None = None) -> str:
    """ "Query 1.04, TransactWriteItems 1.00": requests per unit of work, by operation;
    with `capacity` (e.g. " CU"), each followed by its capacity units: "(1.00 CU)"."""
    per = max(per, 1)
    parts = []
    for name, stats in sorted(operations.items()):
        calls = stats["calls"] if isinstance(stats, dict) else stats
        part = f"{name} {calls / per:.2f}"
        if capacity is not None:
            part += f" ({stats['capacity'] / per:.2f}{capacity})"
        parts.append(part)
    return ", ".join(parts)


def checks(problems: list[str], title: str = "Checks") -> list[str]:
    """The report's last lines: whether every check passed, then each failure."""
    return [f"{title}: " + ("all passed" if not problems else f"{len(problems)} FAILED")] + [
        f"  {problem}" for problem in problems
    ]
