"""Least-privilege IAM policies, one per process role, from the one table definition.

Each role is what one kind of process does (`ROLES`); its grants are (IAM action, table,
index or stream) triples naming the tables of `tables.py` by their logical names, so that
`policy(role, prefix=...)` gives exact table, index and stream ARNs for one environment.
`tests/unit/test_iam.py` runs each role's code on moto with the request meter recording
the permission of every request, and checks that the policy allows all of them and
grants nothing the role never used.

`python manage.py dynamo_tables iam-policy --role ROLE` prints a document.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from queues_app.ddb.meter import Access
from queues_app.ddb.tables import (
    AGENTS_BY_NAME,
    AGENTS_BY_STATUS,
    AUDIT_BY_TARGET,
    SHIPMENTS_DLQ,
    SHIPMENTS_INVISIBLE,
    SHIPMENTS_READY,
    TABLES,
    TASKS_BY_STATUS,
    WAITING_BY_ARRIVAL,
    WAITING_BY_STEP,
    WAITING_TO_RELAX,
)

ROLE_DESCRIPTIONS: dict[str, str] = {
    "web": "the dashboard's pages and actions, the admin and the JSON API (the WSGI server)",
    "shipment-worker": "run_shipment_worker, plain or --fair",
    "task-processor": "run_task_processor: its lease, the tasks' stream, the sweeper",
    "collector": "collect_metrics",
    "escalator": "escalate_callers: relaxes waiting callers' preferences, runs the matcher, ends long wrap-ups",
    "matcher": "run_matcher: the matching dispatcher's lease, and every web worker's new callers matched",
    "callback-worker": "run_webhook_worker: delivers call events to the API tokens' callbacks",
    "admin-setup": "dynamo_tables create, describe and delete (one-off setup, by an administrator)",
}
ROLES: tuple[str, ...] = tuple(ROLE_DESCRIPTIONS)


def _table(name: str, actions: str = "", *, indexes: dict[str, str] | None = None, stream: str = "") -> set[Access]:
    """Grants on one table: `actions` on the table itself, per index and on its stream
    (space-separated DynamoDB action names)."""
    assert name in TABLES, name
    found = {Access(f"dynamodb:{a}", name) for a in actions.split()}
    for index, index_actions in (indexes or {}).items():
        assert index in {i.name for i in TABLES[name].indexes}, (name, index)
        found |= {Access(f"dynamodb:{a}", name, index) for a in index_actions.split()}
    if stream:
        assert TABLES[name].stream, name
        found |= {Access(f"dynamodb:{a}", name, stream=True) for a in stream.split()}
    return found


def _role(*tables: set[Access]) -> frozenset[Access]:
    return frozenset().union(*tables)


# Transactions (TransactWriteItems, TransactGetItems) are authorised by the actions of
# their items: PutItem, UpdateItem, DeleteItem, ConditionCheckItem, GetItem.
# DescribeTable and DescribeTimeToLive: the system page (web); the --until-empty checks.
_COUNTERS = _table("metrics", "UpdateItem")  # every process adds its counts every few seconds
_DESCRIBE = "DescribeTable DescribeTimeToLive"
# What the queues do on their own (dead-lettering, shedding, escalation) goes on the audit trail.
_SYSTEM_EVENTS = _table("audit", "PutItem")
# A change that answers, abandons or ends a call puts a call fact in its transaction, and
# the process counts its own facts at its next flush (an ended call's record is read back:
# callcenter BatchGetItem, which the roles that end calls have).
_CALL_FACTS = _table("metrics", "PutItem BatchGetItem DeleteItem UpdateItem")
# A change of a call whose token has a callback puts the event in the callbacks queue.
_CALL_EVENTS = _table("shipments", "PutItem")
# Consuming a shipment queue: receive, heartbeat, complete, fail (to the DLQ on its history).
_CONSUMING = _table(
    "shipments",
    "GetItem UpdateItem DescribeTable",
    indexes={SHIPMENTS_READY.name: "Query", SHIPMENTS_INVISIBLE.name: "Query"},
)

# The named shipment queues' settings: one partition of the callcenter table, read by a
# worker at most every few seconds (shipments/named.py).
_QUEUE_SETTINGS = _table("callcenter", "Query")

GRANTS: dict[str, frozenset[Access]] = {
    "web": _role(
        _table(
            "callcenter",
            f"GetItem BatchGetItem Query PutItem UpdateItem DeleteItem {_DESCRIBE}",
            indexes={
                AGENTS_BY_STATUS.name: "Query",
                AGENTS_BY_NAME.name: "Query",
                WAITING_BY_ARRIVAL.name: "Query",
            },
        ),
        _table(
            "shipments",
            f"GetItem BatchGetItem PutItem UpdateItem {_DESCRIBE}",
            indexes={SHIPMENTS_READY.name: "Query", SHIPMENTS_INVISIBLE.name: "Query", SHIPMENTS_DLQ.name: "Query"},
        ),
        _table("tasks", f"BatchGetItem {_DESCRIBE}", indexes={TASKS_BY_STATUS.name: "Query"}),
        # An action and what it brought about: several entries in one BatchWriteItem.
        _table("audit", f"PutItem BatchWriteItem Query {_DESCRIBE}", indexes={AUDIT_BY_TARGET.name: "Query"}),
        _table("metrics", f"Query UpdateItem {_DESCRIBE}"),
        _CALL_FACTS,
        {Access("dynamodb:ListTables", None)},  # the system page's check: which tables exist
    ),
    "shipment-worker": _role(_CONSUMING, _QUEUE_SETTINGS, _COUNTERS, _SYSTEM_EVENTS),
    "callback-worker": _role(_CONSUMING, _COUNTERS, _SYSTEM_EVENTS),
    "task-processor": _role(
        _table(
            "tasks",
            "UpdateItem DeleteItem DescribeTable",
            indexes={TASKS_BY_STATUS.name: "Query"},
            stream="DescribeStream GetShardIterator GetRecords",
        ),
        _COUNTERS,
        _SYSTEM_EVENTS,
    ),
    "collector": _role(
        _table(
            "callcenter",
            "BatchGetItem",
            indexes={AGENTS_BY_STATUS.name: "Query", WAITING_BY_ARRIVAL.name: "Query"},
        ),
        _table(
            "shipments",
            indexes={SHIPMENTS_READY.name: "Query", SHIPMENTS_INVISIBLE.name: "Query", SHIPMENTS_DLQ.name: "Query"},
        ),
        _table("tasks", "BatchGetItem", indexes={TASKS_BY_STATUS.name: "Query"}),
        _COUNTERS,
        _QUEUE_SETTINGS,  # each named shipment queue sampled
        # The sweep of the call facts nobody counted (the ended calls' records read back).
        _table("metrics", "Query DeleteItem UpdateItem"),
    ),
    "escalator": _role(
        _table(
            "callcenter",
            # BatchGetItem and the status index: the agents whose wrap-up reached its limit.
            "GetItem BatchGetItem Query PutItem UpdateItem DeleteItem",
            indexes={WAITING_TO_RELAX.name: "Query", WAITING_BY_STEP.name: "Query", AGENTS_BY_STATUS.name: "Query"},
        ),
        _CALL_EVENTS,
        _CALL_FACTS,
        _COUNTERS,
        _table("audit", "PutItem BatchWriteItem"),  # a relaxation and the assignment it brought
    ),
    "matcher": _role(
        _table("callcenter", "Query PutItem UpdateItem DeleteItem"),  # the lease, the queues, the assignment
        _CALL_EVENTS,
        _CALL_FACTS,
        _COUNTERS,  # and its heartbeat
    ),
    "admin-setup": _role(
        *(
            _table(
                name,
                f"CreateTable {_DESCRIBE} DeleteTable Scan" + (" UpdateTimeToLive" if spec.ttl_attribute else ""),
            )
            for name, spec in TABLES.items()
        ),
        # The indexes this version added to the callcenter table, and those they replaced.
        _table("callcenter", "UpdateTable"),
        # `create` moves items an earlier version wrote where this one reads them (callers
        # into their partitions, agents into the roster's, queue metadata into its shards),
        # reading and writing which upgrade steps the table has had (queues_app/upgrades).
        _table("callcenter", "GetItem BatchGetItem Query PutItem UpdateItem DeleteItem"),
        _table("audit", "Query PutItem"),  # the days of the trail that have entries, marked
    ),
}

KNOWN_ACTIONS = frozenset(
    f"dynamodb:{name}"
    for name in (
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "ConditionCheckItem",
        "BatchGetItem",
        "BatchWriteItem",
        "Query",
        "Scan",
        "DescribeTable",
        "DescribeTimeToLive",
        "CreateTable",
        "UpdateTable",
        "UpdateTimeToLive",
        "DeleteTable",
        "ListTables",
        "DescribeStream",
        "GetShardIterator",
        "GetRecords",
        "ListStreams",
    )
)


def grants(role: str) -> frozenset[Access]:
    if role not in GRANTS:
        raise KeyError(f"unknown role {role!r}; one of {', '.join(ROLES)}")
    return GRANTS[role]


def arn(access: Access, *, prefix: str, region: str = "*", account: str = "*") -> str:
    """The resource one grant is on: a table, one of its indexes, its stream, or `*`."""
    if access.table is None:
        return "*"
    base = f"arn:aws:dynamodb:{region}:{account}:table/{prefix}{access.table}"
    if access.stream:
        return f"{base}/stream/*"  # a stream's label changes whenever it is re-enabled
    if access.index:
        return f"{base}/index/{access.index}"
    return base


def policy(role: str, *, prefix: str, region: str = "*", account: str = "*") -> dict[str, Any]:
    """An IAM policy document for `role`: one statement per resource, its actions sorted."""
    by_resource: dict[str, set[str]] = defaultdict(set)
    for access in grants(role):
        by_resource[arn(access, prefix=prefix, region=region, account=account)].add(access.action)
    statements = []
    for resource in sorted(by_resource, key=_resource_order):
        statements.append(
            {
                "Sid": _sid(resource, prefix),
                "Effect": "Allow",
                "Action": sorted(by_resource[resource]),
                "Resource": [resource],
            }
        )
    return {"Version": "2012-10-17", "Statement": statements}


def _resource_order(resource: str) -> tuple[int, str]:
    return (1 if resource == "*" else 0, resource)


def _sid(resource: str, prefix: str) -> str:
    if resource == "*":
        return "Account"
    path = resource.split(":table/", 1)[1][len(prefix) :]
    return "".join(part.capitalize() for part in path.replace("*", "").replace("_", "/").split("/") if part)
