"""The suite's cheaper moto (tests/helpers/fast_moto.py): its copies of items are deep
copies, equal to the item, sharing nothing with it, and not kept in moto's list of its
models; a cancelled transaction still changes nothing, though the tables are not copied."""

import copy

import pytest
from botocore.exceptions import ClientError
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType, Item

from tests.helpers import fast_moto


def test_a_copied_item_equals_its_original_and_shares_nothing_with_it():
    fast_moto.install()
    item = Item(
        DynamoType({"S": "AGENT#1"}),
        DynamoType({"S": "META"}),
        {
            "pk": {"S": "AGENT#1"},
            "sk": {"S": "META"},
            "skills": {"M": {"language": {"L": [{"S": "French"}, {"S": "English"}]}, "level": {"N": "3"}}},
            "tags": {"SS": ["a", "b"]},
            "blob": {"B": b"\x00\x01"},
            "on": {"BOOL": True},
            "gone": {"NULL": True},
        },
    )
    before = len(Item.instances)
    copied = copy.deepcopy(item)
    assert copied == item and copied is not item and copied.to_json() == item.to_json()
    assert len(Item.instances) == before

    copied.attrs["skills"].value["language"].value.append(DynamoType({"S": "Spanish"}))
    copied.attrs["tags"].value.append("c")
    copied.attrs["skills"].value["level"].value = "4"
    assert item.attrs["skills"].value["language"].value == [DynamoType({"S": "French"}), DynamoType({"S": "English"})]
    assert item.attrs["tags"].value == ["a", "b"] and item.attrs["skills"].value["level"].value == "3"
    assert copied != item


def test_a_cancelled_transaction_leaves_every_item_and_stream_as_it_was(moto_empty):
    client = moto_empty.client
    client.create_table(
        TableName="kept",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    client.create_table(
        TableName="flat",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.put_item(TableName="kept", Item={"pk": {"S": "a"}, "sk": {"S": "1"}, "n": {"N": "1"}})
    client.put_item(TableName="kept", Item={"pk": {"S": "a"}, "sk": {"S": "2"}, "n": {"N": "2"}})
    client.put_item(TableName="flat", Item={"id": {"S": "x"}, "n": {"N": "1"}})

    def everything() -> tuple:
        items = [client.scan(TableName=name, ConsistentRead=True)["Items"] for name in ("kept", "flat")]
        tables = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tables
        return items, len(tables["kept"].stream_shard.items)

    before = everything()
    changes = [
        {
            "Update": {
                "TableName": "kept",
                "Key": {"pk": {"S": "a"}, "sk": {"S": "1"}},
                "UpdateExpression": "SET n = :n",
                "ExpressionAttributeValues": {":n": {"N": "9"}},
            }
        },
        {"Delete": {"TableName": "kept", "Key": {"pk": {"S": "a"}, "sk": {"S": "2"}}}},
        {"Put": {"TableName": "kept", "Item": {"pk": {"S": "b"}, "sk": {"S": "1"}}}},
        {"Put": {"TableName": "flat", "Item": {"id": {"S": "y"}}}},
        {"Delete": {"TableName": "flat", "Key": {"id": {"S": "x"}}}},
    ]
    refused = {
        "ConditionCheck": {
            "TableName": "flat",
            "Key": {"id": {"S": "z"}},
            "ConditionExpression": "attribute_exists(id)",
        }
    }
    with pytest.raises(ClientError, match="TransactionCanceled"):
        client.transact_write_items(TransactItems=[*changes, refused])
    assert everything() == before

    client.transact_write_items(TransactItems=changes)
    (kept, flat), records = everything()
    assert [(i["pk"]["S"], i["sk"]["S"], i.get("n")) for i in kept] == [("a", "1", {"N": "9"}), ("b", "1", None)]
    assert flat == [{"id": {"S": "y"}}] and records == before[1] + 3


def test_each_answer_has_a_request_id_of_its_own(moto_empty):
    first, second = (moto_empty.client.list_tables()["ResponseMetadata"]["RequestId"] for _ in range(2))
    assert len(first) == len(second) == 52 and first != second
