"""Batch writes (boto3's BatchWriter) and reads (BatchGetItem), on moto: chunks, what
DynamoDB leaves unprocessed, errors, and the meter seeing every request."""

import pytest

from queues_app.ddb import batch, errors, meter


def rows(n, prefix="r"):
    return [{"task_id": f"{prefix}-{i:03d}", "n": i, "data": {"i": i}} for i in range(n)]


def test_items_are_written_25_at_a_time_and_read_back(moto_db):
    table = moto_db.table("tasks")
    heard = []
    with meter.measure() as seen:
        assert batch.put_items(moto_db, table, iter(rows(60)), on_batch=heard.append) == 60
    assert heard == [25, 25, 10]
    assert seen.calls_of("BatchWriteItem") == 3
    with meter.measure() as seen:
        found = batch.get_items(moto_db, table, [{"task_id": f"r-{i:03d}"} for i in range(150)])
    assert seen.calls_of("BatchGetItem") == 2
    assert sorted(item["n"] for item in found) == list(range(60))
    assert found[0]["data"] == {"i": found[0]["n"]}


def test_nothing_to_write_sends_nothing(moto_db):
    with meter.measure() as seen:
        assert batch.put_items(moto_db, moto_db.table("tasks"), []) == 0
        assert batch.get_items(moto_db, moto_db.table("tasks"), []) == []
    assert seen.calls == 0


def test_items_left_unprocessed_are_sent_again_before_the_chunk_counts(moto_db, monkeypatch):
    client = moto_db.client
    real = client.batch_write_item
    sent = []

    def leaves_some(RequestItems, **kwargs):
        ((table, requests),) = RequestItems.items()
        sent.append(len(requests))
        if len(sent) == 1:  # DynamoDB writes the first ten and leaves the rest
            real(RequestItems={table: requests[:10]}, **kwargs)
            return {"UnprocessedItems": {table: requests[10:]}}
        return real(RequestItems=RequestItems, **kwargs)

    monkeypatch.setattr(client, "batch_write_item", leaves_some)
    heard = []
    assert batch.put_items(moto_db, moto_db.table("tasks"), rows(30), on_batch=heard.append) == 30
    assert sent == [25, 15, 5]
    assert heard == [25, 5]
    assert len(batch.get_items(moto_db, moto_db.table("tasks"), [{"task_id": r["task_id"]} for r in rows(30)])) == 30


def test_keys_left_unprocessed_are_asked_for_again(moto_db, monkeypatch):
    table = moto_db.table("tasks")
    batch.put_items(moto_db, table, rows(8))
    client = moto_db.client
    real = client.batch_get_item
    asked = []

    def leaves_some(RequestItems, **kwargs):
        spec = RequestItems[table]
        asked.append(len(spec["Keys"]))
        if len(asked) == 1:
            response = real(RequestItems={table: {**spec, "Keys": spec["Keys"][:3]}}, **kwargs)
            return {**response, "UnprocessedKeys": {table: {**spec, "Keys": spec["Keys"][3:]}}}
        return real(RequestItems=RequestItems, **kwargs)

    monkeypatch.setattr(client, "batch_get_item", leaves_some)
    monkeypatch.setattr(batch.time, "sleep", lambda seconds: None)
    found = batch.get_items(moto_db, table, [{"task_id": r["task_id"]} for r in rows(8)])
    assert asked == [8, 5]
    assert sorted(item["n"] for item in found) == list(range(8))


def test_keys_that_stay_unprocessed_are_throttled_after_the_last_round(moto_db, monkeypatch):
    table = moto_db.table("tasks")
    pauses = []

    def never(RequestItems, **kwargs):
        return {"Responses": {table: []}, "UnprocessedKeys": RequestItems}

    monkeypatch.setattr(moto_db.client, "batch_get_item", never)
    monkeypatch.setattr(batch.time, "sleep", pauses.append)
    with pytest.raises(errors.Throttled, match="2 keys stayed unprocessed"):
        batch.get_items(moto_db, table, [{"task_id": "a"}, {"task_id": "b"}], max_rounds=5)
    assert pauses == [0.05, 0.1, 0.2, 0.4, 0.8]


def test_writing_to_a_missing_table_is_a_domain_error(moto_db):
    with pytest.raises(errors.TableMissing):
        batch.put_items(moto_db, "test-nowhere", rows(3))
    with pytest.raises(errors.TableMissing):
        batch.get_items(moto_db, "test-nowhere", [{"task_id": "a"}])


def test_a_malformed_item_is_an_invalid_request(moto_db):
    with pytest.raises(errors.InvalidRequest):
        batch.put_items(moto_db, moto_db.table("tasks"), [{"n": 1}])  # no key
