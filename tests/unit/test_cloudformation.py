"""The CloudFormation template generated from tables.py: valid for cfn-lint, and the
tables it creates are the ones `dynamo_tables create` makes."""

import boto3
import pytest
import yaml

from queues_app.ddb import cloudformation, schema
from queues_app.ddb.tables import TABLES


def test_every_table_is_in_the_template_with_its_settings():
    resources = cloudformation.template()["Resources"]
    assert set(resources) == {cloudformation.resource_name(spec) for spec in TABLES.values()}
    for spec in TABLES.values():
        table = resources[cloudformation.resource_name(spec)]
        assert table["DeletionPolicy"] == "Retain"
        properties = table["Properties"]
        assert properties["TableName"] == {"Fn::Sub": "${TablePrefix}" + spec.logical_name}
        assert properties["BillingMode"] == "PAY_PER_REQUEST"
        assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
        assert properties["DeletionProtectionEnabled"] is True
        assert {i["IndexName"] for i in properties.get("GlobalSecondaryIndexes", [])} == {
            index.name for index in spec.indexes
        }
        assert ("TimeToLiveSpecification" in properties) == bool(spec.ttl_attribute)
        assert ("StreamSpecification" in properties) == spec.stream


def test_provisioned_billing_sets_throughput_on_tables_and_indexes():
    resources = cloudformation.template(provisioned=True, read_capacity=7, write_capacity=3)["Resources"]
    for table in resources.values():
        properties = table["Properties"]
        assert properties["BillingMode"] == "PROVISIONED"
        assert properties["ProvisionedThroughput"] == {"ReadCapacityUnits": 7, "WriteCapacityUnits": 3}
        for index in properties.get("GlobalSecondaryIndexes", []):
            assert index["ProvisionedThroughput"] == {"ReadCapacityUnits": 7, "WriteCapacityUnits": 3}


@pytest.mark.parametrize("provisioned", [False, True])
def test_cfn_lint_passes_on_the_template(tmp_path, provisioned):
    path = tmp_path / "tables.yaml"
    path.write_text(cloudformation.to_yaml(cloudformation.template(provisioned=provisioned)))
    from cfnlint.api import lint_file

    assert [str(match) for match in lint_file(path)] == []


def _describe(client, name: str) -> dict:
    """What matters of a table, in a form both creation paths can be compared by. (TTL is
    compared apart: moto's CloudFormation does not apply TimeToLiveSpecification.)"""
    table = client.describe_table(TableName=name)["Table"]
    return {
        "keys": table["KeySchema"],
        "attributes": sorted(table["AttributeDefinitions"], key=lambda a: a["AttributeName"]),
        "indexes": sorted(
            (
                {"name": i["IndexName"], "keys": i["KeySchema"], "projection": i["Projection"]}
                for i in table.get("GlobalSecondaryIndexes", [])
            ),
            key=lambda i: i["name"],
        ),
        "stream": (table.get("StreamSpecification") or {}).get("StreamViewType"),
    }


def test_the_stack_creates_the_tables_dynamo_tables_create_makes(moto_empty):
    """Deployed into moto's CloudFormation under one prefix and created by the command's
    code under another, every table has the same keys, attributes, indexes with their
    projections, TTL and stream."""
    client = moto_empty.client
    schema.create_tables(moto_empty)  # prefix "test-"
    body = yaml.safe_load(cloudformation.to_yaml(cloudformation.template()))
    cfn = boto3.client("cloudformation", region_name="us-east-1")
    cfn.create_stack(
        StackName="switchboard-tables",
        TemplateBody=yaml.safe_dump(body),
        Parameters=[{"ParameterKey": "TablePrefix", "ParameterValue": "stack-"}],
    )
    outputs = {o["OutputKey"]: o["OutputValue"] for o in cfn.describe_stacks()["Stacks"][0].get("Outputs", [])}
    for spec in TABLES.values():
        from_stack = _describe(client, f"stack-{spec.logical_name}")
        from_code = _describe(client, f"test-{spec.logical_name}")
        assert from_stack == from_code, spec.logical_name
        ttl = client.describe_time_to_live(TableName=f"test-{spec.logical_name}")["TimeToLiveDescription"]
        in_template = body["Resources"][cloudformation.resource_name(spec)]["Properties"].get("TimeToLiveSpecification")
        assert (in_template or {}).get("AttributeName") == ttl.get("AttributeName"), spec.logical_name
        assert outputs[f"{cloudformation.resource_name(spec)}Name"] == f"stack-{spec.logical_name}"


def test_dynamo_tables_template_prints_the_template(capsys):
    from django.core.management import call_command

    call_command("dynamo_tables", "template", "--provisioned", "--read-capacity", "9")
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed == yaml.safe_load(cloudformation.to_yaml(cloudformation.template(provisioned=True, read_capacity=9)))


def test_provisioned_means_nothing_to_the_other_actions(moto_db):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="--provisioned"):
        call_command("dynamo_tables", "describe", "--provisioned")
