"""The harness of the API fuzzers (tests/unit/test_api_fuzz.py on moto,
tests/integration/test_api_fuzz_local.py on DynamoDB Local): cases generated from the
OpenAPI document by schemathesis, sent through Django's WSGI application (the fixture
`wsgi_app` in tests/conftest.py), counted by operation and status."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from queues_app.admission import BackpressureGate
from queues_app.centre.call_center import CallCenter
from queues_app.models import ApiToken
from queues_app.shipments.queue import ShipmentQueue

DEFAULT_CASES_PER_OPERATION = 20
CHECKS = [
    not_a_server_error,
    negative_data_rejection,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
REPORTS = Path(__file__).resolve().parents[2] / "var"


def cases_per_operation() -> int:
    return int(os.environ.get("API_FUZZ_CASES", DEFAULT_CASES_PER_OPERATION))


@dataclass
class Report:
    """How many cases each operation got, their statuses, and what failed."""

    cases: Counter = field(default_factory=Counter)  # operation -> cases sent
    by_mode: Counter = field(default_factory=Counter)  # (operation, mode) -> cases sent
    statuses: Counter = field(default_factory=Counter)  # (operation, status) -> answers
    # Valid cases: positive ones (fitting the schema) sent with a supervisor's token; and
    # how many of them were answered with a 2xx (the rest name an id that is not there, a
    # version that is not the agent's, an address that may not be called back, ...).
    valid: Counter = field(default_factory=Counter)  # operation -> valid cases sent
    accepted: Counter = field(default_factory=Counter)  # operation -> valid cases answered 2xx
    server_errors: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.cases.values())

    def accepted_share(self, methods: tuple[str, ...] | None = None) -> float:
        """The share of the valid cases answered with a 2xx (of the operations of these
        HTTP methods, or of all)."""
        labels = [label for label in self.valid if methods is None or label.split()[0] in methods]
        return sum(self.accepted[label] for label in labels) / max(1, sum(self.valid[label] for label in labels))

    def as_json(self, name: str, budget: int, seconds: float) -> dict:
        return {
            "run": name,
            "cases_per_operation_asked": budget,
            "seconds": round(seconds, 1),
            "total_cases": self.total,
            "server_errors": self.server_errors,
            "failures": len(self.failures),
            "valid_cases": sum(self.valid.values()),
            "valid_cases_accepted": sum(self.accepted.values()),
            "operations": {
                label: {
                    "cases": count,
                    "positive": self.by_mode[(label, "positive")],
                    "negative": self.by_mode[(label, "negative")],
                    "valid": self.valid[label],
                    "valid_accepted": self.accepted[label],
                    "statuses": {str(s): n for (op, s), n in sorted(self.statuses.items()) if op == label},
                }
                for label, count in sorted(self.cases.items())
            },
        }


def make_world(supervisor, viewer, settings):
    """Tokens, and agents, calls and shipments for the path ids to name (on whatever
    tables the test's fixtures made)."""
    settings.SWITCHBOARD_FAIRNESS = {**settings.SWITCHBOARD_FAIRNESS, "depth_cache_seconds": 0}
    BackpressureGate.forget()
    router = CallCenter()
    agents = []
    for name, languages, gender in [
        ("Ana", ["English", "Spanish"], "F"),
        ("Bo", ["French"], "M"),
        ("Cy", ["English"], "X"),
        ("Di", ["Spanish", "French"], "F"),
    ]:
        agents.append(router.agents.create(name, {"language": languages, "gender": [gender]}).agent_id)
    router.make_available(agents[0])
    router.make_available(agents[1])
    calls = [
        router.create_call({"language": "English"})[0].call_id,
        router.create_call({"language": "French"})[0].call_id,
    ]
    shipments = [ShipmentQueue().submit({"to": "Porto"}).shipment_id]
    tokens = {
        "supervisor": ApiToken.issue(supervisor, "fuzz supervisor")[1],
        "viewer": ApiToken.issue(viewer, "fuzz viewer")[1],
    }
    yield {"agent_id": agents, "call_id": calls, "shipment_id": shipments, "tokens": tokens}
    BackpressureGate.forget()


def load_schema(wsgi_app, token: str):
    """The OpenAPI document as the API serves it, read with a token."""
    return schemathesis.openapi.from_wsgi("/api/openapi.json", wsgi_app, headers={"Authorization": f"Bearer {token}"})


WHO = st.sampled_from(["supervisor"] * 7 + ["viewer", "unknown", "none"])


def fuzz(schema, world: dict, budget: int) -> Report:
    """Every operation, `budget` cases: half positive, then half negative."""
    report = Report()
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                strategy = operation.as_strategy(generation_mode=mode)
            except Exception as exc:  # a schema with nothing to negate, for instance
                report.failures.append(f"{operation.label} {mode.value}: no strategy: {exc!r}")
                continue
            run_operation(operation, strategy, mode, world, (budget + 1) // 2, report)
    return report


def run_operation(operation, strategy, mode, world: dict, examples: int, report: Report) -> None:
    label = operation.label
    path_names = [p.name for p in operation.path_parameters]

    @given(case=strategy, who=WHO, pick=st.lists(st.integers(min_value=-1, max_value=10_000), min_size=2, max_size=2))
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    def one_case(case, who, pick):
        for name, index in zip(path_names, pick, strict=False):
            known = world.get(name) or []
            if index >= 0 and known and mode is GenerationMode.POSITIVE:
                case.path_parameters[name] = known[index % len(known)]
        headers = dict(case.headers or {})
        headers.pop("Authorization", None)
        if who in world["tokens"]:
            headers["Authorization"] = f"Bearer {world['tokens'][who]}"
        elif who == "unknown":
            headers["Authorization"] = "Bearer not-a-token"
        case.headers = headers
        response = case.call()
        report.cases[label] += 1
        report.by_mode[(label, mode.value)] += 1
        report.statuses[(label, response.status_code)] += 1
        if mode is GenerationMode.POSITIVE and who == "supervisor":
            report.valid[label] += 1
            report.accepted[label] += 200 <= response.status_code < 300
        if response.status_code >= 500:
            report.server_errors += 1
        remember_new_items(response, world)
        case.validate_response(response, checks=CHECKS)

    try:
        one_case()
    except Exception as exc:
        report.failures.append(f"{label} ({mode.value}): {exc}")


def remember_new_items(response, world: dict) -> None:
    if response.status_code != 201:
        return
    try:
        body = json.loads(response.content)
    except ValueError:
        return
    for key in ("call_id", "shipment_id"):
        if isinstance(body, dict) and isinstance(body.get(key), str):
            world[key].append(body[key])


def run_and_report(name: str, schema, world: dict, capsys) -> Report:
    budget = cases_per_operation()
    started = time.monotonic()
    report = fuzz(schema, world, budget)
    summary = report.as_json(name, budget, time.monotonic() - started)
    REPORTS.mkdir(exist_ok=True)
    (REPORTS / f"api-fuzz-{name}.json").write_text(json.dumps(summary, indent=2) + "\n")
    with capsys.disabled():
        print(
            f"\nAPI fuzzing ({name}): {summary['total_cases']} cases, {summary['server_errors']} 5xx, "
            f"{summary['failures']} failures, {summary['seconds']} s; {summary['valid_cases_accepted']} of "
            f"{summary['valid_cases']} valid cases answered 2xx "
            f"({report.accepted_share(('POST', 'PUT')):.0%} of the writes)"
        )
        for label, figures in summary["operations"].items():
            print(
                f"  {label}: {figures['cases']} cases ({figures['positive']} positive, "
                f"{figures['negative']} negative) statuses {figures['statuses']}, "
                f"{figures['valid_accepted']} of {figures['valid']} valid 2xx"
            )
    return report


# A valid case (one that fits the schema, sent with a supervisor's token) may still be
# refused: its path names an id nobody has, its version is not the agent's, its
# preferences name a skill nobody has. Most are taken all the same (about three in five;
# a quarter of the writes, POST and PUT). An API that refused whatever it was sent would
# answer none of the writes 2xx, and of the rest only what reads nothing of the request.
MIN_ACCEPTED_SHARE = 1 / 3
MIN_ACCEPTED_SHARE_OF_WRITES = 1 / 20


def assert_valid_cases_are_accepted(report: Report) -> None:
    valid = sum(report.valid.values())
    assert valid >= 10, report.valid
    assert report.accepted_share() >= MIN_ACCEPTED_SHARE, (report.accepted, report.valid)
    assert report.accepted_share(("POST", "PUT")) >= MIN_ACCEPTED_SHARE_OF_WRITES, (report.accepted, report.valid)
