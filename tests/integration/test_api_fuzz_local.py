"""The JSON API fuzzed from its OpenAPI document against DynamoDB Local, whose limits
(key and item sizes, numbers, nesting) are DynamoDB's own where moto may be lenient.
The harness and the budget (`API_FUZZ_CASES`) are those of tests/unit/test_api_fuzz.py
(tests/helpers/api_fuzz.py)."""

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
def local_world(local_db, supervisor, viewer, settings):
    yield from make_world(supervisor, viewer, settings)


def test_every_api_operation_answers_fuzzed_input_as_documented_on_dynamodb_local(wsgi_app, local_world, capsys):
    schema = load_schema(wsgi_app, local_world["tokens"]["supervisor"])
    report = run_and_report("dynamodb-local", schema, local_world, capsys)
    assert report.failures == [], "\n\n".join(report.failures)
    assert report.server_errors == 0
    assert len(report.cases) == len(OPERATIONS)  # every operation of the document was fuzzed
    assert min(report.cases.values()) >= cases_per_operation()
    assert_valid_cases_are_accepted(report)
