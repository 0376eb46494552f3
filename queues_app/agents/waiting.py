"""The line of callers waiting for an agent, in order of priority then arrival."""

from __future__ import annotations

from collections.abc import Iterator

from queues_app.agents import keys
from queues_app.agents.calls import CallExists, call_to_item
from queues_app.agents.records import Call, CallStatus
from queues_app.agents.skills import ANY
from queues_app.agents.writes import CallCenterTable
from queues_app.ddb import errors
from queues_app.ddb.codec import marshal, unmarshal


class WaitingLine:
    """Callers nobody could take yet: one item each in the WAITING partition, keyed by
    priority then arrival, with the preferences as attributes a filter can match."""

    def __init__(self, table: CallCenterTable):
        self.table = table
        self.db = table.db
        self.catalog = table.catalog

    def start_waiting(self, call: Call) -> Call:
        wait_key = keys.waiting_caller(call.priority, call.arrived_at, call.call_id)
        call.wait_sk = wait_key["sk"]
        try:
            self.db.call(
                "transact_write_items",
                TransactItems=[
                    {
                        "Put": {
                            "TableName": self.table.name,
                            "Item": marshal(call_to_item(call)),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                    {"Put": {"TableName": self.table.name, "Item": marshal(self._wait_item(call, wait_key))}},
                ],
            )
        except errors.TransactionCancelled as exc:
            if exc.failed_indexes("ConditionalCheckFailed") == [0]:
                raise CallExists() from exc
            raise
        return call

    def waiting_records(self, call: Call) -> list[dict]:
        """A waiting call's two items (the call and its place in line), for bulk loads."""
        wait_key = keys.waiting_caller(call.priority, call.arrived_at, call.call_id)
        call.status, call.wait_sk = CallStatus.WAITING, wait_key["sk"]
        return [call_to_item(call), self._wait_item(call, wait_key)]

    @staticmethod
    def _wait_item(call: Call, wait_key: dict) -> dict:
        # Preferences as top-level attributes so that a FilterExpression can match them.
        prefs = {f"p_{name}": value for name, value in call.preferences.items() if value is not ANY}
        return {
            **wait_key,
            "type": "waiting",
            "call_id": call.call_id,
            "priority": call.priority,
            "arrived_at": call.arrived_at,
            "wait_q": keys.WAITING_PK,
            "wait_since": f"{call.arrived_at}#{call.call_id}",
            **prefs,
        }

    def waiting_calls_for(self, skills: dict[str, list[str]]) -> list[dict]:
        """Waiting callers the agent fits, in order, read with a filter on their preferences."""
        names, values, filters = {}, {":pk": {"S": keys.WAITING_PK}}, []
        for d, (name, _allowed) in enumerate(self.catalog.dimensions):
            names[f"#d{d}"] = f"p_{name}"
            placeholders = []
            for v, value in enumerate(skills.get(name, [])):
                values[f":d{d}v{v}"] = {"S": value}
                placeholders.append(f":d{d}v{v}")
            inside = f" OR #d{d} IN ({', '.join(placeholders)})" if placeholders else ""
            filters.append(f"(attribute_not_exists(#d{d}){inside})")
        pages = self.db.pages(
            "query",
            TableName=self.table.name,
            KeyConditionExpression="pk = :pk",
            FilterExpression=" AND ".join(filters),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ConsistentRead=True,
        )
        for page in pages:  # on until a page holds someone the agent fits
            found = [unmarshal(i) for i in page.get("Items", [])]
            if found:
                return found
        return []

    def everyone(self, page_size: int = 100) -> Iterator[dict]:
        """The whole waiting list in order, read a page at a time as it is consumed."""
        return self.db.items(
            "query",
            TableName=self.table.name,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": keys.WAITING_PK}},
            PaginationConfig={"PageSize": page_size},
        )

    def waiting_calls(self, *, limit: int = 50, cursor: dict | None = None) -> tuple[list[dict], dict | None]:
        """The waiting list in order (priority, then arrival), a page at a time."""
        params = {
            "TableName": self.table.name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": keys.WAITING_PK}},
            "Limit": limit,
        }
        if cursor:
            params["ExclusiveStartKey"] = cursor
        response = self.db.call("query", **params)
        return [unmarshal(i) for i in response.get("Items", [])], response.get("LastEvaluatedKey")

    def count_waiting(self, cap: int = 1000) -> tuple[int, bool]:
        """How many callers wait, counted with one COUNT query of at most `cap` items.
        Returns (count, more): `more` is True when there are at least `cap`."""
        response = self.db.call(
            "query",
            TableName=self.table.name,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": keys.WAITING_PK}},
            Select="COUNT",
            Limit=cap,
        )
        return response["Count"], bool(response.get("LastEvaluatedKey"))

    def longest_waiting_since(self) -> str | None:
        """When the caller who has waited longest arrived (one Limit-1 Query on the
        `waiting_by_arrival` index), or None when nobody waits."""
        response = self.db.call(
            "query",
            TableName=self.table.name,
            IndexName="waiting_by_arrival",
            Limit=1,
            KeyConditionExpression="wait_q = :q",
            ExpressionAttributeValues={":q": {"S": keys.WAITING_PK}},
        )
        items = response.get("Items", [])
        return unmarshal(items[0])["wait_since"].rsplit("#", 1)[0] if items else None

    def fill_waiting_index(self) -> int:
        """Waiting callers written before the `waiting_by_arrival` index existed lack its
        keys: add them (one Query per page of the waiting list, one update each)."""
        filled = 0
        missing = self.db.items(
            "query",
            TableName=self.table.name,
            KeyConditionExpression="pk = :pk",
            FilterExpression="attribute_not_exists(wait_q)",
            ExpressionAttributeValues={":pk": {"S": keys.WAITING_PK}},
        )
        for item in missing:
            try:
                self.db.call(
                    "update_item",
                    TableName=self.table.name,
                    Key=marshal({"pk": item["pk"], "sk": item["sk"]}),
                    UpdateExpression="SET wait_q = :q, wait_since = :since",
                    ConditionExpression="attribute_exists(pk)",
                    ExpressionAttributeValues=marshal(
                        {":q": keys.WAITING_PK, ":since": f"{item['arrived_at']}#{item['call_id']}"}
                    ),
                )
                filled += 1
            except errors.Conflict:
                continue  # assigned meanwhile
        return filled
