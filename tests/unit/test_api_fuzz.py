"""The JSON API fuzzed from its own OpenAPI document (schemathesis) on moto.

Every operation gets cases that fit its schema (positive) and cases that do not
(negative), sent through Django's WSGI application in this process, one at a time
(moto is not thread-safe). Each answer must be no 5xx, a documented status with the
documented content type and headers, and a body that matches its schema; and a share
of the valid cases (positive, with a supervisor's token) must be taken (2xx), of the
writes too, so that an API refusing everything would not pass.

Path ids are drawn from agents, calls and shipments that exist (those made by the
fuzzing too) as well as made up, and the token from a supervisor's (mostly), a
viewer's, an unknown one or none, so that the cases reach past 401 and 404.

`API_FUZZ_CASES` sets how many cases each operation gets, half positive and half
negative: a small budget by default (the suite), 200 in `make fuzz-api`. The counts are
printed, and written to `var/api-fuzz-<name>.json`.
"""

from __future__ import annotations

import pytest

from tests.helpers.api import OPERATIONS
from tests.helpers.api_fuzz import (
    assert_valid_cases_are_accepted,
    cases_per_operation,
    load_schema,
    make_world,
    run_and_report,
)

pytestmark = pytest.mark.fuzz


@pytest.fixture
def fuzz_world(moto_db, supervisor, viewer, settings):
    yield from make_world(supervisor, viewer, settings)


def test_every_api_operation_answers_fuzzed_input_as_documented(wsgi_app, fuzz_world, capsys):
    schema = load_schema(wsgi_app, fuzz_world["tokens"]["supervisor"])
    operations = [result.ok().label for result in schema.get_all_operations()]
    assert len(operations) == len(OPERATIONS), operations  # the document's, as test_api_docs lists them
    report = run_and_report("moto", schema, fuzz_world, capsys)
    assert report.failures == [], "\n\n".join(report.failures)
    assert report.server_errors == 0
    assert set(report.cases) == set(operations)
    assert min(report.cases.values()) >= cases_per_operation()
    assert_valid_cases_are_accepted(report)
