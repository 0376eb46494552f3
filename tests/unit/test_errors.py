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
    assert translated.table == "x-callcenter"
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
