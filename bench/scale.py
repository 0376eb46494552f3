"""Scale figures: the reads and writes of each piece of work, partition key by partition
key, and the call rate at which each partition key meets DynamoDB's per-partition limits
(1,000 WCU and 3,000 RCU a second). docs/scale.md is written from its output.

    .venv/bin/python -m bench.scale [--json] [--agents 60] [--rounds 40] [--target 1000]
                                    [--endpoint URL] [--smoke]

On fresh tables on DynamoDB Local, through the same code the API runs (`actions.Operations`,
so the audit trail and the admission checks are in), it measures, one at a time:

- `call`: a caller placed while agents are queued (assigned at once);
- `release`: an agent's call ended (`then` wrap_up);
- `available`: the agent made available again with nobody waiting (queued);
- `call_waits`: a caller placed while no agent fits (waiting);
- `available_takes`: an agent made available who takes that waiting caller;
- `shipment`: a shipment submitted, received by a worker and completed.

Every request is seen before it is sent and after it answers (botocore's events on the
client): each item it reads or writes is charged to its table's partition key as
DynamoDB charges it (a write 1 WCU per KB, a transaction's write or condition check 2;
a strongly consistent read 1 RCU per 4 KB, an eventually consistent one half, a
transaction's read 2; a Query what DynamoDB reported, to the partition it read), and each
index whose entry the write changes (the item is read around it, unmetered: an entry
changes when the item enters or leaves the index, or its keys or projected attributes
change) gets a write on that index key's partition, two when the entry moves (a delete
and a put). Partition keys are shown as patterns (`CALL#<id>`, `AUDIT#<day>#<n>`), with
the hottest value of each pattern; the shards of a spread (`AGENTS#<n>`, `QUEUES#<n>`,
`AUDIT#<day>#<n>`, a queue's sub-queues `Q#…@<n>`, a status's partitions of the status
index `<status>#<n>`) and the copies of a count (`WAITCOUNT#…@<copy>`) each with an even
share, as they take in the long run (`shards_of`).

Then, for a steady phone system at R calls a second where every call brings one agent
cycle (`release` + `available`) and a share `--waiting-share` of callers wait
(`call_waits` + `available_takes` in place of `call` + `available`), each partition
key's rate is its units per call times R: the call rate at which it meets 1,000 WCU or
3,000 RCU is printed, and whether it stays under half its limit at `--target` calls/s.
Time-driven writes (the metrics counters every process flushes every 10 s, heartbeats)
do not grow with the call rate and are worked out in docs/scale.md.
"""

from __future__ import annotations

import json
import math
import random
import re
import sys
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from bench import harness
from queues_app.agents.records import AgentStatus
from queues_app.centre import keys
from queues_app.figures import service_level
from queues_app.figures.counters import FLUSH_SECONDS

WCU_LIMIT, RCU_LIMIT = 1000.0, 3000.0
UNITS = ("call", "release", "available", "call_waits", "available_takes", "shipment")
# Written by every process every few seconds whatever the rate (docs/scale.md works them out).
TIME_DRIVEN = {
    ("metrics", key) for key in ("TOTAL", "CAPACITY", "SAMPLE#<queue>", "SERVICE#<n>", "SERVICE_DAY#<n>", "WORKER")
}
# The counting of call facts (figures/tally.py) is driven by the flushes, not by each call:
# every process counts what it wrote every FLUSH_SECONDS, in transactions of about
# FACTS_PER_TRANSACTION facts (a Delete each, and an Update per figure item), each adding
# to one item per combination in one shard of each figure partition (docs/scale.md,
# "Counting every call once"). Modelled here, at the target rate, for this many processes.
PROCESSES = 200
FACTS_PER_CALL = 2.2
FACTS_PER_TRANSACTION = 60
COMBINATIONS = 9
FIGURE_PARTITIONS = (
    "SERVICE",
    "SERVICE_DAY",
    "SERVICE_INTERVAL",
    "LINE_SERVICE",
    "LINE_SERVICE_DAY",
    "LINE_SERVICE_INTERVAL",
)


@dataclass
class ScaleParameters:
    agents: int = 60
    rounds: int = 40
    target: int = 1000
    waiting_share: float = 0.1
    seed: int = 7


SMOKE = dict(agents=8, rounds=4)


def item_size(item: dict | None) -> int:
    """Roughly DynamoDB's item size: names and values in bytes."""
    if not item:
        return 0
    return len(json.dumps(item, separators=(",", ":")).encode())


def shards_of(pattern: str) -> int | None:
    """How many shards a pattern's values are, when they are the shards of one spread (a
    random pick, or a hash of an id or token): in the long run each takes an even share,
    which a benchmark of a few dozen rounds does not show (its hottest shard is chance),
    so a shard's units are the pattern's divided by the count. Copies written together
    and read one at a time (`@<copy>`) divide the same way: each copy takes every write,
    and its share of the reads."""
    from queues_app.audit.store import AUDIT_SHARDS
    from queues_app.figures.agent_days import AGENT_DAYS
    from queues_app.figures.facts import FACTS, STATUS_FACTS

    fixed = {"AGENTS#<n>": keys.AGENT_SHARDS, "QUEUES#<n>": keys.QUEUE_META_SHARDS, "AUDIT#<day>#<n>": AUDIT_SHARDS}
    # The facts and the agents' days, by a hash of the call or the agent.
    fixed |= {f"{spread.base}#<n>": spread.count for spread in (FACTS, STATUS_FACTS, AGENT_DAYS)}
    fixed |= {f"{pk}#<n>": service_level.FIGURE_SHARDS for pk in FIGURE_PARTITIONS}
    if pattern in fixed:
        return fixed[pattern]
    if pattern.startswith(keys.WAIT_COUNT_PREFIX) and pattern.endswith("@<copy>"):
        return keys.WAIT_COUNT_COPIES
    if pattern.startswith(keys.QUEUE_PREFIX) and pattern.endswith("@<n>"):
        return keys.QUEUE_SPLIT
    if pattern.split("#")[0] in AgentStatus.ALL and pattern.endswith("#<n>"):
        return keys.STATUS_SHARDS
    return None


def pattern(key: str) -> str:
    """A partition key as a pattern: ids, days and shard numbers replaced, fixed names kept."""
    key = re.sub(r"^(AGENTS|QUEUES|FACT|AGENT_FACT|AGENT_DAY)#\d+$", r"\1#<n>", key)
    # The figure partitions' shards, the first under the partition's own name.
    key = re.sub(r"^((?:LINE_)?SERVICE(?:_DAY|_INTERVAL)?)(#\d+)?$", r"\1#<n>", key)
    key = re.sub(r"^(CALL#|AGENT#).+", r"\1<id>", key)
    key = re.sub(r"^RATE#.+", "RATE#<tenant>", key)
    # The audit day's shards apart from the unsharded day (entries written before sharding).
    key = re.sub(r"^AUDIT#[^#]+#\d+$", "AUDIT#<day>#<n>", key)
    key = re.sub(r"^AUDIT#[^#]+$", "AUDIT#<day>", key)
    key = re.sub(r"^SAMPLE#.+", "SAMPLE#<queue>", key)
    key = re.sub(r"^(WAITCOUNT#[^@]+)(@\d+)?$", r"\1@<copy>", key)
    key = re.sub(r"^(Q#[^@]+)@\d+$", r"\1@<n>", key)
    key = re.sub(r"^(offline|queued|attending|wrap_up)#\d+$", r"\1#<n>", key)  # the status index's spread
    key = re.sub(r"^(agent|call|shipment):.+", r"\1:<id>", key)
    key = re.sub(r"^[0-9a-z]{16,}$", "<id>", key)
    return key


@dataclass
class Charges:
    """Units by (table, index or '', partition key value) and by kind ('read'/'write')."""

    units: dict[tuple[str, str, str, str], float] = field(default_factory=lambda: defaultdict(float))
    requests: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, table: str, index: str, key: str, kind: str, units: float) -> None:
        self.units[(table, index, key, kind)] += units


class PartitionMeter:
    """Charges each request's items to their partitions (see the module's doc)."""

    def __init__(self, db, raw):
        from queues_app.ddb.tables import TABLES

        self.db, self.raw = db, raw
        self.specs = {db.table(name): spec for name, spec in TABLES.items()}
        self.local = threading.local()
        self.charges: Charges | None = None
        events = db.client.meta.events
        events.register("provide-client-params.dynamodb", self._before)
        events.register("after-call.dynamodb", self._after)

    # what an item is before and after a write
    def _get(self, table: str, key: dict) -> dict | None:
        return self.raw.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")

    def _key_of(self, table: str, item: dict) -> dict:
        spec = self.specs[table]
        return {name: item[name] for name in (spec.partition_key, spec.sort_key) if name and name in item}

    def _writes(self, operation: str, params: dict) -> list[tuple[str, str, dict, dict | None]]:
        """(kind, table, key, item put) of every item the request writes."""
        found = []
        if operation == "TransactWriteItems":
            for action in params.get("TransactItems", []):
                ((kind, body),) = action.items()
                item = body.get("Item")
                found.append((kind, body["TableName"], body.get("Key") or self._key_of(body["TableName"], item), item))
        elif operation == "BatchWriteItem":
            for table, requests in params.get("RequestItems", {}).items():
                for request in requests:
                    if "PutRequest" in request:
                        item = request["PutRequest"]["Item"]
                        found.append(("Put", table, self._key_of(table, item), item))
                    else:
                        found.append(("Delete", table, request["DeleteRequest"]["Key"], None))
        elif operation in ("PutItem", "UpdateItem", "DeleteItem"):
            item = params.get("Item")
            key = params.get("Key") or self._key_of(params["TableName"], item)
            found.append((operation.removesuffix("Item"), params["TableName"], key, item))
        return [w for w in found if w[1] in self.specs]

    def _before(self, params, model, **kwargs):
        if self.charges is None or getattr(self.local, "busy", False):
            return
        writes = self._writes(model.name, params)
        self.local.busy = True
        try:
            olds = [self._get(table, key) for _, table, key, _ in writes]
        finally:
            self.local.busy = False
        self.local.pending = (model.name, dict(params), writes, olds)

    def _after(self, http_response, parsed, model, **kwargs):
        pending = getattr(self.local, "pending", None)
        self.local.pending = None
        if self.charges is None or pending is None or pending[0] != model.name:
            return
        operation, params, writes, olds = pending
        charges = self.charges
        charges.requests[operation] += 1
        if (parsed.get("Error") or {}).get("Code") and operation != "TransactWriteItems":
            return  # a refused write charges 1 WCU on real DynamoDB; left out as rare here
        if (parsed.get("Error") or {}).get("Code"):
            writes = []  # a cancelled transaction wrote nothing
        self.local.busy = True
        try:
            news = [self._get(table, key) for _, table, key, _ in writes]
        finally:
            self.local.busy = False
        transactional = operation == "TransactWriteItems"
        for (kind, table, key, put), old, new in zip(writes, olds, news, strict=True):
            spec = self.specs[table]
            logical = spec.logical_name
            size = max(item_size(old), item_size(new), item_size(put), 1)
            units = math.ceil(size / 1024) * (2 if transactional else 1)
            charges.add(logical, "", key[spec.partition_key]["S"], "write", units)
            if kind == "ConditionCheck":
                continue
            for index in spec.indexes:
                before, after = index_entry(index, spec, old), index_entry(index, spec, new)
                if before == after:
                    continue  # neither its keys nor what it projects changed: DynamoDB writes nothing
                index_units = math.ceil(max(item_size(old), item_size(new), 1) / 1024)
                moved = before is not None and after is not None and _keys(index, before) != _keys(index, after)
                if before is not None and (after is None or moved):  # the old entry is deleted
                    charges.add(logical, index.name, index_key(index, old) or "", "write", index_units)
                if after is not None:
                    charges.add(logical, index.name, index_key(index, new) or "", "write", index_units)
        self._reads(operation, params, parsed)

    def _reads(self, operation: str, params: dict, parsed: dict) -> None:
        charges = self.charges
        assert charges is not None
        if operation == "GetItem" and params["TableName"] in self.specs:
            spec = self.specs[params["TableName"]]
            size = item_size(parsed.get("Item"))
            units = math.ceil(max(size, 1) / 4096) * (1 if params.get("ConsistentRead") else 0.5)
            charges.add(spec.logical_name, "", params["Key"][spec.partition_key]["S"], "read", units)
        elif operation == "BatchGetItem":
            for table, request in params.get("RequestItems", {}).items():
                spec = self.specs.get(table)
                for key in request.get("Keys", []) if spec else []:
                    units = 1 if request.get("ConsistentRead") else 0.5
                    charges.add(spec.logical_name, "", key[spec.partition_key]["S"], "read", units)
        elif operation == "TransactGetItems":
            for action in params.get("TransactItems", []):
                body = action["Get"]
                spec = self.specs.get(body["TableName"])
                if spec:
                    charges.add(spec.logical_name, "", body["Key"][spec.partition_key]["S"], "read", 2)
        elif operation in ("Query", "Scan") and params.get("TableName") in self.specs:
            spec = self.specs[params["TableName"]]
            index_name = params.get("IndexName") or ""
            index = next((i for i in spec.indexes if i.name == index_name), None)
            partition_key = index.partition_key if index else spec.partition_key
            capacity = parsed.get("ConsumedCapacity") or {}
            units = float(capacity.get("CapacityUnits") or 0)
            value = "(scan)" if operation == "Scan" else query_partition(params, partition_key)
            charges.add(spec.logical_name, index_name, value, "read", units)


def index_entry(index, spec, item: dict | None) -> dict | None:
    """What an index holds of an item (its keys, the table's keys, what it projects), or
    None when the item is not in it (sparse)."""
    if index_key(index, item) is None:
        return None
    assert item is not None
    kept = {index.partition_key, index.sort_key, spec.partition_key, spec.sort_key}
    if index.projection == "ALL":
        return dict(item)
    if index.projection == "INCLUDE":
        kept |= set(index.include)
    return {name: value for name, value in item.items() if name in kept}


def _keys(index, entry: dict) -> tuple:
    return entry.get(index.partition_key), entry.get(index.sort_key) if index.sort_key else None


def index_key(index, item: dict | None) -> str | None:
    """The index partition an item is in: None when it lacks either key attribute (sparse)."""
    if not item or (index.sort_key and index.sort_key not in item):
        return None
    return (item.get(index.partition_key) or {}).get("S")


def query_partition(params: dict, partition_key: str) -> str:
    """The partition key value a Query reads, from its key condition."""
    names = params.get("ExpressionAttributeNames") or {}
    values = params.get("ExpressionAttributeValues") or {}
    for name, placeholder in re.findall(r"([#\w]+)\s*=\s*(:\w+)", params.get("KeyConditionExpression", "")):
        if names.get(name, name) == partition_key and placeholder in values:
            return next(iter(values[placeholder].values()))
    return "?"


# --- the workload -------------------------------------------------------------------------------


@dataclass
class ScaleRun:
    parameters: ScaleParameters
    per_unit: dict[str, dict] = field(default_factory=dict)  # unit -> {"table|index|pattern": {...}}
    requests: dict[str, dict[str, float]] = field(default_factory=dict)
    limits: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def measure(endpoint: str, params: ScaleParameters) -> ScaleRun:
    import boto3

    from queues_app.agents.records import AgentStatus
    from queues_app.agents.roster import Agents
    from queues_app.operations import Operations
    from queues_app.shipments.queue import ShipmentQueue

    run = ScaleRun(params)
    rng = random.Random(params.seed)
    raw = boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    with harness.fresh_tables(endpoint, "scale") as db:
        meter = PartitionMeter(db, raw)
        ops = Operations("phone system via token load", "api", db=db)
        agents = Agents(db)
        dims = dict(agents.catalog.dimensions)
        built = []
        for index in range(params.agents):
            skills = {
                name: rng.sample(list(values), rng.randint(1, min(3, len(values))))
                if name.startswith("language")
                # one value of every other dimension
                else [rng.choice(list(values))]
                for name, values in dims.items()
            }
            built.append(agents.build(f"Agent {index}", skills, agent_id=f"a{index:04d}"))
        agents.create_many(built)
        for agent in built:
            ops.make_available(agent.agent_id)

        per_unit: dict[str, Charges] = {unit: Charges() for unit in UNITS}
        counts: dict[str, int] = defaultdict(int)

        def charged(unit: str, action):
            meter.charges = per_unit[unit]
            try:
                return action()
            finally:
                meter.charges = None
                counts[unit] += 1

        shipments = ShipmentQueue(db)
        for _ in range(params.rounds):
            # A caller who fits a queued agent: any language, any other dimension.
            call, _ = charged("call", lambda: ops.create_call({}))
            if call.status != "assigned":
                run.problems.append(f"call {call.call_id} was not assigned at once")
                continue
            charged("release", lambda a=call.agent_id: ops.release(a, then=AgentStatus.WRAP_UP))
            charged("available", lambda a=call.agent_id: ops.make_available(a))
            submitted = charged(
                "shipment", lambda: ops.submit_shipment({"to": "Porto", "parcels": 2}, tenant="acme").shipment
            )
            meter.charges = per_unit["shipment"]
            try:
                receipt = shipments.receive()
                if receipt is None or receipt.shipment.shipment_id != submitted.shipment_id:
                    run.problems.append("a submitted shipment was not the one received")
                else:
                    shipments.complete(receipt.shipment.shipment_id, receipt.receipt)
            finally:
                meter.charges = None

        # Callers who wait: every agent attending first, then one made available takes the caller.
        busy = []
        for _ in range(params.agents):
            call, _ = ops.create_call({})
            if call.status == "assigned":
                busy.append(call.agent_id)
        rounds = min(params.rounds, len(busy))
        for agent_id in busy[:rounds]:
            waiting, _ = charged("call_waits", lambda: ops.create_call({}))
            if waiting.status != "waiting":
                run.problems.append(f"call {waiting.call_id} did not wait")
            ops.release(agent_id, then=AgentStatus.WRAP_UP)
            agent, taken = charged("available_takes", lambda a=agent_id: ops.make_available(a))
            if not taken:
                run.problems.append(f"{agent_id} took no waiting caller")
        run.per_unit = {unit: summarise(per_unit[unit], counts[unit]) for unit in UNITS}
        run.requests = {
            unit: {op: round(n / max(counts[unit], 1), 2) for op, n in sorted(per_unit[unit].requests.items())}
            for unit in UNITS
        }
    run.limits = limits(run.per_unit, params)
    return run


def summarise(charges: Charges, count: int) -> dict:
    """Per unit of work: {"table|index|pattern": {"read", "write", "hottest", "hottest_read", "hottest_write"}}."""
    rows: dict[str, dict[str, Any]] = {}
    by_value: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: {"read": 0.0, "write": 0.0})
    for (table, index, key, kind), units in charges.units.items():
        by_value[(f"{table}|{index}|{pattern(key)}", key)][kind] += units
    for (row, key), units in by_value.items():
        entry = rows.setdefault(row, {"read": 0.0, "write": 0.0, "values": 0, "hottest": "", "hottest_units": 0.0})
        entry["read"] += units["read"] / count
        entry["write"] += units["write"] / count
        entry["values"] += 1
        weight = units["write"] / WCU_LIMIT + units["read"] / RCU_LIMIT
        if weight > entry["hottest_units"]:
            entry["hottest"], entry["hottest_units"] = key, weight
            entry["hottest_read"], entry["hottest_write"] = units["read"] / count, units["write"] / count
    for row, entry in rows.items():
        shards = shards_of(row.rsplit("|", 1)[-1])
        if shards:
            entry["values"], entry["hottest"] = shards, f"each of {shards} shards"
            entry["hottest_read"], entry["hottest_write"] = entry["read"] / shards, entry["write"] / shards
        for name in ("read", "write", "hottest_read", "hottest_write"):
            entry[name] = round(entry.get(name, 0.0), 3)
        entry.pop("hottest_units")
    return rows


def limits(per_unit: dict[str, dict], params: ScaleParameters) -> list[dict]:
    """Units per call of each partition key pattern's hottest value in a steady phone system,
    and the call rate where it meets a limit."""
    w = params.waiting_share
    calls = {"call": 1 - w, "call_waits": w, "release": 1.0, "available": 1 - w, "available_takes": w}
    by_call = _limits(per_unit, calls, params)
    counted = {row["partition"] for row in flush_rows(params)}
    by_call = [row for row in by_call if row["table"] != "metrics" or row["partition"] not in counted]
    return [{"per": "call", **row} for row in sorted([*by_call, *flush_rows(params)], key=_first_limit)] + [
        {"per": "shipment", **row} for row in _limits(per_unit, {"shipment": 1.0}, params)
    ]


def _first_limit(row: dict) -> float:
    return row["limit_at_per_s"] or math.inf


def flush_rows(params: ScaleParameters) -> list[dict]:
    """Each shard of the figure partitions at the target rate, from the flushes' model:
    transactions a second, each updating COMBINATIONS items at 2 WCU (a transaction's
    write), over the shards."""
    facts_per_flush = FACTS_PER_CALL * params.target * FLUSH_SECONDS / PROCESSES
    transactions = PROCESSES / FLUSH_SECONDS * math.ceil(facts_per_flush / FACTS_PER_TRANSACTION)
    wcu = transactions * COMBINATIONS * 2 / service_level.FIGURE_SHARDS
    per_call = wcu / params.target
    # Past the target the flushes' transactions grow with the facts: the limit where they meet it.
    at = round(WCU_LIMIT / per_call)
    return [
        {
            "table": "metrics",
            "index": None,
            "partition": f"{pk}#<n>",
            "wcu_per_unit": round(per_call, 3),
            "rcu_per_unit": 0.0,
            "limit_at_per_s": at,
            "limited_by": "WCU",
            "under_half_at_target": at >= 2 * params.target,
            "share_at_target": round(wcu / WCU_LIMIT, 3),
            "modelled": f"{PROCESSES} processes counting every {FLUSH_SECONDS:g} s, {transactions:g} transactions/s",
        }
        for pk in FIGURE_PARTITIONS
    ]


def _limits(per_unit: dict[str, dict], mix: dict[str, float], params: ScaleParameters) -> list[dict]:
    rows: dict[str, dict[str, float]] = defaultdict(lambda: {"read": 0.0, "write": 0.0})
    for unit, share in mix.items():
        for row, entry in per_unit[unit].items():
            # A pattern with one value (AGENTS, WAITING) takes all of it; a pattern of many
            # values (CALL#<id>, Q#..., AUDIT#<day>#<n>) only its hottest value's share.
            single = entry["values"] == 1
            rows[row]["read"] += share * (entry["read"] if single else entry["hottest_read"])
            rows[row]["write"] += share * (entry["write"] if single else entry["hottest_write"])
    found = []
    for row, units in rows.items():
        table, index, key = row.split("|")
        # One entity's own items (a call, a shipment, one agent's history): their rate is
        # that entity's, whatever the call rate.
        own = "<id>" in key or (table, key) in TIME_DRIVEN
        at_write = WCU_LIMIT / units["write"] if units["write"] and not own else math.inf
        at_read = RCU_LIMIT / units["read"] if units["read"] and not own else math.inf
        first = min(at_write, at_read)
        found.append(
            {
                "table": table,
                "index": index or None,
                "partition": key,
                "wcu_per_unit": round(units["write"], 3),
                "rcu_per_unit": round(units["read"], 3),
                "limit_at_per_s": None if first == math.inf else round(first),
                "limited_by": None if first == math.inf else ("WCU" if at_write <= at_read else "RCU"),
                "under_half_at_target": first == math.inf or first >= 2 * params.target,
                "share_at_target": None
                if own
                else round(
                    max(units["write"] * params.target / WCU_LIMIT, units["read"] * params.target / RCU_LIMIT), 3
                ),
            }
        )
    return sorted(found, key=lambda r: r["limit_at_per_s"] or math.inf)


def report(run: ScaleRun, where: str) -> str:
    lines = [f"Scale figures on {where} ({run.parameters.rounds} rounds, {run.parameters.agents} agents)", ""]
    for unit in UNITS:
        lines.append(f"{unit}: requests {run.requests.get(unit)}")
        for row, entry in sorted(run.per_unit[unit].items()):
            table, index, key = row.split("|")
            where_ = f"{table}{'/' + index if index else ''} {key}"
            lines.append(
                f"  {where_:<50} RCU {entry['read']:>6} WCU {entry['write']:>6}  ({entry['values']} values, "
                f"hottest {entry['hottest']})"
            )
        lines.append("")
    lines.append(
        f"Steady phone system ({run.parameters.waiting_share:.0%} of callers wait): per call, hottest value of each"
        " partition key, and the call rate at which it meets its limit"
    )
    for row in run.limits:
        if row["limit_at_per_s"] is None and not row["wcu_per_unit"] + row["rcu_per_unit"]:
            continue
        where_ = f"{row['table']}{'/' + row['index'] if row['index'] else ''} {row['partition']}"
        lines.append(
            f"  {row['per']:<9}{where_:<50} WCU {row['wcu_per_unit']:>6} RCU {row['rcu_per_unit']:>6}  "
            f"limit at {row['limit_at_per_s'] or '-':>6} {row['per']}s/s ({row['limited_by'] or '-'})"
            + (
                f", {row['share_at_target']:.0%} at {run.parameters.target}/s"
                if row["share_at_target"] is not None
                else ""
            )
            + ("" if row["under_half_at_target"] else "  over half")
            + (f"  [modelled: {row['modelled']}]" if row.get("modelled") else "")
        )
    lines += harness.checks(run.problems)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__ or "", "scale", seed=7, warmup=0)
    parser.add_argument("--agents", type=int, default=ScaleParameters.agents)
    parser.add_argument("--rounds", type=int, default=ScaleParameters.rounds)
    parser.add_argument("--target", type=int, default=ScaleParameters.target, help="calls/s to check against")
    parser.add_argument("--waiting-share", type=float, default=ScaleParameters.waiting_share)
    args = harness.parse(parser, argv, smoke=SMOKE)
    if args.agents < 2 or args.rounds < 1 or not 0 <= args.waiting_share <= 1:
        parser.error("--agents takes 2 or more, --rounds 1 or more, --waiting-share 0 to 1")
    params = harness.from_args(ScaleParameters, args)
    return harness.execute(
        args,
        lambda endpoint: measure(endpoint, params),
        report=report,
        as_json=lambda r: {
            "parameters": vars(params),
            "per_unit": r.per_unit,
            "requests": r.requests,
            "limits": r.limits,
            "problems": r.problems,
        },
    )


if __name__ == "__main__":
    sys.exit(main())
