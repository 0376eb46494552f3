"""ClientError codes and botocore failures become the package's domain errors."""

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError
from botocore.stub import Stubber

from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo


def client_error(code, message="boom", **extra):
    return ClientError({"Error": {"Code": code, "Message": message}, **extra}, "TransactWriteItems")


def test_conditional_check_failure_is_a_conflict_carrying_the_old_item():
    exc = client_error("ConditionalCheckFailedException", Item={"pk": {"S": "AGENTS"}, "version": {"N": "3"}})
    translated = errors.translate(exc)
    assert type(translated) is errors.Conflict
    assert translated.current == {"pk": "AGENTS", "version": 3}


def test_cancelled_transaction_keeps_each_reason_in_order():
    exc = client_error(
        "TransactionCanceledException",
        CancellationReasons=[
            {"Code": "None"},
            {
                "Code": "ConditionalCheckFailed",
                "Message": "The conditional request failed",
                "Item": {"status": {"S": "attending"}},
            },
            {"Code": "None"},
        ],
    )
    translated = errors.translate(exc)
    assert isinstance(translated, errors.TransactionCancelled)
    assert isinstance(translated, errors.Conflict)
    assert translated.failed_indexes() == [1]
    assert translated.reasons[1].item == {"status": "attending"}
    assert not translated.lost_race


def test_transaction_conflict_alone_is_a_lost_race():
    exc = client_error(
        "TransactionCanceledException",
        CancellationReasons=[{"Code": "TransactionConflict"}, {"Code": "None"}],
    )
    translated = errors.translate(exc)
    assert isinstance(translated, errors.TransactionCancelled)
    assert translated.lost_race
    assert translated.failed_indexes("TransactionConflict") == [0]


def test_throttled_transaction_is_throttled_not_conflict():
    exc = client_error(
        "TransactionCanceledException",
        CancellationReasons=[{"Code": "ThrottlingError"}, {"Code": "None"}],
    )
    assert isinstance(errors.translate(exc), errors.Throttled)


@pytest.mark.parametrize(
    "code, expected",
    [
        ("ProvisionedThroughputExceededException", errors.Throttled),
        ("ThrottlingException", errors.Throttled),
        ("RequestLimitExceeded", errors.Throttled),
        ("ResourceNotFoundException", errors.TableMissing),
        ("InternalServerError", errors.Unavailable),
        ("UnrecognizedClientException", errors.Unavailable),
        ("ValidationException", errors.InvalidRequest),
        ("ResourceInUseException", errors.AlreadyExists),
    ],
)
def test_error_codes_map_to_domain_errors(code, expected):
    assert isinstance(errors.translate(client_error(code)), expected)


def test_missing_table_names_the_table():
    translated = errors.translate(client_error("ResourceNotFoundException"), table="x-callcenter")
    assert translated.table_name == "x-callcenter"
    assert "x-callcenter" in translated.message


def test_connection_failures_are_unavailable_with_the_endpoint():
    exc = EndpointConnectionError(endpoint_url="http://127.0.0.1:1")
    translated = errors.translate(exc, endpoint="http://127.0.0.1:1")
    assert isinstance(translated, errors.Unavailable)
    assert translated.endpoint == "http://127.0.0.1:1"
    assert isinstance(errors.translate(ReadTimeoutError(endpoint_url="x")), errors.Unavailable)


def test_translate_refuses_what_is_not_a_botocore_error():
    with pytest.raises(TypeError):
        errors.translate(ValueError("nope"))


def test_dynamo_call_translates_through_a_stubbed_client():
    client = boto3.client("dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    db = Dynamo(client, prefix="p-")
    with Stubber(client) as stub:
        stub.add_client_error(
            "transact_write_items",
            service_error_code="TransactionCanceledException",
            service_message="Transaction cancelled",
            http_status_code=400,
            modeled_fields={"CancellationReasons": [{"Code": "TransactionConflict"}]},
        )
        with pytest.raises(errors.TransactionCancelled) as caught:
            db.call(
                "transact_write_items",
                TransactItems=[
                    {
                        "ConditionCheck": {
                            "TableName": "p-callcenter",
                            "Key": {"pk": {"S": "a"}, "sk": {"S": "b"}},
                            "ConditionExpression": "attribute_exists(pk)",
                        }
                    }
                ],
            )
        assert isinstance(caught.value.__cause__, ClientError)
        assert caught.value.lost_race
        stub.add_client_error(
            "get_item", service_error_code="ProvisionedThroughputExceededException", http_status_code=400
        )
        with pytest.raises(errors.Throttled):
            db.call("get_item", TableName="p-callcenter", Key={"pk": {"S": "a"}, "sk": {"S": "b"}})


# --- what people are told: never ARNs, account ids, endpoints or stack traces ----------------

ROLE_ARN = "arn:aws:sts::123456789012:assumed-role/SwitchboardProd/i-0abc123"
TABLE_ARN = "arn:aws:dynamodb:eu-west-1:123456789012:table/switchboard-prod-callcenter"
ACCESS_DENIED = (
    f"User: {ROLE_ARN} is not authorized to perform: dynamodb:Query on resource: {TABLE_ARN} "
    "because no identity-based policy allows the dynamodb:Query action"
)
SECRETS = ("arn:aws", "123456789012", "SwitchboardProd", "amazonaws.com", "10.1.2.3", "AKIAIOSFODNN7EXAMPLE")


def access_denied():
    return errors.translate(client_error("AccessDeniedException", ACCESS_DENIED), endpoint="https://10.1.2.3:8000")


def shows_nothing_secret(text):
    for secret in SECRETS:
        assert secret not in text, secret


def test_access_denied_is_told_without_the_role_or_the_account_and_logged_in_full(caplog):
    from queues_app.http.errors import describe
    from queues_app.tracing import traced

    with traced("trace-ad-1"), caplog.at_level("WARNING", logger="queues_app.http.errors"):
        problem = describe(access_denied())
    assert problem.status == 503 and problem.title == "DynamoDB unavailable"
    told = " ".join([problem.message, problem.hint, str(problem.as_json()), problem.as_text()])
    shows_nothing_secret(told)
    assert "AccessDeniedException" in problem.message and "[ARN]" in problem.message  # still says what happened
    assert problem.trace_id == "trace-ad-1" and problem.as_json()["trace_id"] == "trace-ad-1"
    logged = caplog.text
    assert ROLE_ARN in logged and TABLE_ARN in logged and "https://10.1.2.3:8000" in logged
    assert "trace-ad-1" in logged


@pytest.mark.parametrize(
    "exc",
    [
        errors.Unavailable("DynamoDB cannot be reached.", endpoint="http://10.1.2.3:8000"),
        errors.translate(EndpointConnectionError(endpoint_url="https://dynamodb.eu-west-1.amazonaws.com")),
        errors.Unavailable("Could not connect to the endpoint URL: https://dynamodb.eu-west-1.amazonaws.com/"),
        errors.TableMissing("switchboard-prod-callcenter", endpoint="https://dynamodb.eu-west-1.amazonaws.com"),
        errors.InvalidRequest(f"DynamoDB rejected the request: {TABLE_ARN} is not valid"),
        errors.DynamoError("DynamoDB error AccessDenied: account 123456789012, key AKIAIOSFODNN7EXAMPLE"),
        errors.Conflict('Changed at 10.1.2.3:8000.\nTraceback (most recent call last):\n  File "x.py", line 1'),
    ],
    ids=["endpoint", "connection", "url in message", "table missing", "arn", "account and key", "traceback"],
)
def test_no_message_shown_carries_an_arn_an_account_an_endpoint_or_a_traceback(exc):
    from queues_app.http.errors import describe

    problem = describe(exc)
    told = " ".join([problem.message, problem.hint, problem.as_text()])
    shows_nothing_secret(told)
    assert "Traceback" not in told and 'File "' not in told


def test_the_configured_endpoint_is_not_shown_even_without_its_scheme(settings):
    from queues_app.http.errors import describe

    settings.DYNAMODB_ENDPOINT_URL = "http://dynamodb-local.internal:8000"
    problem = describe(errors.Unavailable("DynamoDB at dynamodb-local.internal:8000 refused the connection."))
    assert "dynamodb-local.internal" not in problem.message
    assert "DYNAMODB_ENDPOINT_URL" in problem.hint  # the setting is named, its value is not


def test_ids_and_numbers_that_are_not_secrets_are_left_alone():
    from queues_app.http.redact import scrub

    text = "No agent with id '1a2b3c4d5e6f'; shipment 0123-456789012345 has version 12; priority 9."
    assert scrub(text) == text


@pytest.fixture
def denied(monkeypatch):
    """Every read of the agent roster and the queues is refused by IAM."""
    from queues_app.agents.roster import Agents
    from queues_app.centre.call_center import CallCenter

    def refuse(*args, **kwargs):
        raise access_denied()

    monkeypatch.setattr(Agents, "list", refuse)
    monkeypatch.setattr(CallCenter, "queues", refuse)
    return refuse


def test_a_viewer_sees_no_arn_on_a_page_and_an_htmx_banner(viewer_client, moto_db, denied):
    for headers in ({}, {"HTTP_HX_REQUEST": "true"}, {"HTTP_ACCEPT": "application/json"}):
        response = viewer_client.get("/agents/", **headers)
        assert response.status_code == 503
        body = response.content.decode()
        shows_nothing_secret(body)
        assert "Traceback" not in body
        assert response["X-Trace-Id"] in body  # where the operators find the details


def test_a_token_holder_sees_no_arn_from_the_api(client, moto_db, viewer, denied):
    from queues_app.models import ApiToken

    token = ApiToken.issue(viewer, "phone")[1]
    response = client.get("/api/queues", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 503
    assert response["Content-Type"].startswith("application/json")
    shows_nothing_secret(response.content.decode())
    assert response.json()["error"] == "DynamoDB unavailable"
