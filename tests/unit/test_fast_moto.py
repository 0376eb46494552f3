"""The suite's cheaper copies of moto's items (tests/helpers/fast_moto.py) are deep copies:
equal to the item, sharing nothing with it, and not kept in moto's list of its models."""

import copy

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
