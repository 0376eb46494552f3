"""The service package against DynamoDB Local: real conditions, cancellation reasons
and consumed capacity, which moto does not report faithfully."""

import pytest

from queues_app.agents.roster import Agents
from queues_app.centre import keys
from queues_app.ddb import errors, meter
from queues_app.ddb.codec import marshal


def test_tables_exist_and_agents_round_trip(local_db):
    agents = Agents()
    agent = agents.create("Lea", {"language": ["French"], "gender": ["F"]})
    assert agents.get(agent.agent_id).skills == {"language": ["French"], "gender": ["F"]}


def test_meter_counts_requests_and_capacity_per_operation(local_db):
    agents = Agents()
    with meter.measure() as measured:
        agent = agents.create("Ada", {"language": ["English"], "gender": ["F"]})
        agents.get(agent.agent_id)
        agents.list(limit=10)
    snapshot = measured.snapshot()
    assert measured.calls == 4
    assert snapshot["PutItem"]["calls"] == 1
    assert snapshot["PutItem"]["capacity"] >= 1.0
    assert snapshot["GetItem"]["capacity"] == pytest.approx(1.0)  # strongly consistent, < 4 KB
    assert snapshot["Query"]["calls"] == 1  # the name index's page
    assert snapshot["Query"]["capacity"] > 0
    assert snapshot["BatchGetItem"]["calls"] == 1  # the page's agents, whole
    assert snapshot["BatchGetItem"]["capacity"] == pytest.approx(0.5)  # eventually consistent, one agent


def test_conditional_failure_returns_the_item_as_it_was(local_db):
    agent = Agents().create("Bo", {"language": ["English"], "gender": ["M"]})
    with pytest.raises(errors.Conflict) as caught:
        local_db.call(
            "update_item",
            TableName=local_db.table("callcenter"),
            Key=marshal(keys.agent(agent.agent_id)),
            UpdateExpression="SET version = version + :one",
            ConditionExpression="version = :expected",
            ExpressionAttributeValues={":one": {"N": "1"}, ":expected": {"N": "99"}},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    assert caught.value.current["name"] == "Bo"
    assert caught.value.current["version"] == 1


def test_cancelled_transaction_reports_which_action_failed_and_why(local_db):
    agent = Agents().create("Cy", {"language": ["Spanish"], "gender": ["X"]})
    table = local_db.table("callcenter")
    with meter.measure() as measured, pytest.raises(errors.TransactionCancelled) as caught:
        local_db.call(
            "transact_write_items",
            TransactItems=[
                {"Put": {"TableName": table, "Item": marshal({"pk": "T", "sk": "1"})}},
                {
                    "ConditionCheck": {
                        "TableName": table,
                        "Key": marshal(keys.agent(agent.agent_id)),
                        "ConditionExpression": "#s = :queued",
                        "ExpressionAttributeNames": {"#s": "status"},
                        "ExpressionAttributeValues": {":queued": {"S": "queued"}},
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                },
            ],
        )
    cancelled = caught.value
    assert cancelled.failed_indexes() == [1]
    assert cancelled.reasons[1].code == "ConditionalCheckFailed"
    assert cancelled.reasons[1].item["status"] == "offline"
    assert not cancelled.lost_race
    assert measured.snapshot()["TransactWriteItems"]["cancellation_reasons"] == {"ConditionalCheckFailed": 1}
    # nothing of the cancelled transaction was written
    assert "Item" not in local_db.call("get_item", TableName=table, Key=marshal({"pk": "T", "sk": "1"}))


def test_missing_table_is_table_missing(local_db, settings):
    settings.DYNAMODB_TABLE_PREFIX = "absent-"
    with pytest.raises(errors.TableMissing) as caught:
        Agents().get("x")
    assert caught.value.table_name == "absent-callcenter"
