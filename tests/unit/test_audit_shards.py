"""The audit trail's day spread over 16 partitions (`AUDIT#<day>#<n>`): where entries go,
and the trail read back across the shards and the unsharded day of older entries, newest
first, page after page, with filters, time ranges and signed cursors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from queues_app.audit.records import TrailEntry, TrailFilter
from queues_app.audit.store import AUDIT_SHARDS, DAY_PREFIX, DAYS_PK, RECENT_CURSOR, AuditTrail, day_shard
from queues_app.ddb import errors, meter, paging
from queues_app.ddb.codec import marshal, unmarshal

ACTORS = ("ana", "bo", "matcher")
ACTIONS = ("agent.update", "call.create", "shipment.submit")
SOURCES = ("page", "api", "system")
DAY_BEFORE, DAY = "2026-11-21", "2026-11-22"
DAYS_READ = 1  # a page's Query of the days that have entries


@pytest.fixture
def trail(moto_db, clock):
    clock.moment = datetime(2026, 11, 21, 23, 50, tzinfo=UTC)
    return AuditTrail(moto_db, clock=clock, retention_days=3)


def sk(entry: TrailEntry) -> str:
    return f"{entry.at}#{entry.entry_id}"


def stored(trail: AuditTrail) -> list[dict]:
    """Every entry (not the markers of the days that have entries)."""
    items = [unmarshal(item) for item in trail.db.call("scan", TableName=trail.table_name)["Items"]]
    return [item for item in items if item["pk"] != DAYS_PK]


def write(trail: AuditTrail, clock, count: int, *, unsharded_every: int = 0) -> None:
    """`count` entries 15 s apart (60 of them cross midnight), of varied actors, actions and
    sources, some two at a time; every `unsharded_every`-th put straight into the
    unsharded day, as written before sharding."""
    for n in range(count):
        clock.advance(15)
        fields = dict(
            actor=ACTORS[n % 3],
            source=SOURCES[(n // 3) % 3],
            action=ACTIONS[(n // 2) % 3],
            target=f"agent:a{n % 5}",
            summary=f"n{n}",
        )
        if unsharded_every and n % unsharded_every == 0:
            item = trail.entry_item(**fields)
            item["pk"] = DAY_PREFIX + item["at"][:10]
            trail.db.call("put_item", TableName=trail.table_name, Item=marshal(item))
        elif n % 4 == 1:
            trail.record_many([fields, {**fields, "summary": f"n{n}b"}])
        else:
            trail.record(**fields)


def expected(trail: AuditTrail, keep=lambda item: True) -> list[str]:
    return sorted((item["sk"] for item in stored(trail) if keep(item)), reverse=True)


def every_page(trail: AuditTrail, cursor: str | None = None, **kwargs) -> tuple[list[str], int]:
    """The sort keys of every entry the trail returns, following its cursors to the end."""
    seen: list[str] = []
    pages = 0
    while True:
        page = trail.recent(cursor=cursor, **kwargs)
        pages += 1
        seen += [sk(entry) for entry in page.entries]
        cursor = page.next_cursor
        if cursor is None:
            return seen, pages
        assert pages < 500, "the trail does not end"


def test_entries_of_a_day_spread_over_its_shards_and_never_the_unsharded_partition(trail, clock):
    write(trail, clock, 50)
    items = stored(trail)
    assert len(items) > 50
    partitions = {item["pk"] for item in items}
    assert len(partitions) > AUDIT_SHARDS // 2
    for item in items:
        day = item["at"][:10]
        assert item["pk"] == f"{DAY_PREFIX}{day}#{day_shard(item['entry_id'])}"
        assert item["pk"] != DAY_PREFIX + day
        assert item["sk"] == f"{item['at']}#{item['entry_id']}"
        assert "expires_at" in item


def test_an_entrys_shard_is_the_same_in_every_process():
    assert day_shard("0123456789ab") == day_shard("0123456789ab")
    assert {day_shard(f"{n:012x}") for n in range(200)} == set(range(AUDIT_SHARDS))


@pytest.mark.parametrize("limit", [4, 50])
def test_the_trail_pages_newest_first_across_shards_the_unsharded_day_and_midnight(trail, clock, limit):
    write(trail, clock, 60, unsharded_every=5)
    items = stored(trail)
    assert {item["at"][:10] for item in items} == {DAY_BEFORE, DAY}
    for day in (DAY_BEFORE, DAY):  # both days in shards and in the unsharded partition
        partitions = {item["pk"] for item in items if item["at"].startswith(day)}
        assert DAY_PREFIX + day in partitions and len(partitions) > AUDIT_SHARDS // 2
    seen, pages = every_page(trail, limit=limit)
    assert seen == expected(trail)
    assert len(set(seen)) == len(seen)
    assert pages >= len(seen) // limit


def write_into_one_shard(trail: AuditTrail, clock, count: int, shard: int = 3) -> None:
    """`count` entries in a row all in one shard (as an unlucky spread would put them)."""
    for n in range(count):
        clock.advance(2)
        item = trail.entry_item(actor=ACTORS[n % 2], source="page", action="agent.update", target="agent:s")
        item["pk"] = f"{DAY_PREFIX}{item['at'][:10]}#{shard}"
        trail.db.call("put_item", TableName=trail.table_name, Item=marshal(item))


def test_pages_that_stop_for_their_read_bound_carry_on_where_they_stopped(trail, clock):
    write(trail, clock, 50, unsharded_every=9)
    write_into_one_shard(trail, clock, 30)
    write(trail, clock, 30, unsharded_every=9)
    # One round a page: the shard whose share of the page ran out holds the page back, and
    # the next page carries on below where the reading stopped, on every partition.
    seen, pages = every_page(trail, limit=20, max_reads=1)
    assert seen == expected(trail) and pages > len(seen) / 20 + 1


def test_the_days_without_entries_of_the_retention_cost_nothing(moto_db, clock):
    """The trail followed to its end reads the days that have entries (one Query of their
    markers a page), not every day of the retention."""
    trail = AuditTrail(moto_db, clock=clock, retention_days=90)
    clock.moment = datetime(2026, 10, 1, 12, tzinfo=UTC)
    trail.record(actor="ana", source="page", action="agent.update", target="agent:a1", summary="October")
    clock.advance(30 * 24 * 3600)
    trail.record(actor="bo", source="api", action="call.create", target="call:c1", summary="November")
    with meter.measure() as seen:
        found, pages = every_page(trail, limit=50)
    assert [entry.split("#")[0][:10] for entry in found] == ["2026-10-31", "2026-10-01"]
    assert pages == 1 and seen.calls_of("Query") == DAYS_READ + 2 * (AUDIT_SHARDS + 1)


@pytest.mark.parametrize("max_reads", [1, 8])
@pytest.mark.parametrize("filters", [TrailFilter(), TrailFilter(actor="ana")], ids=["all", "actor"])
def test_a_shard_holding_more_than_its_share_of_a_page_is_read_again(trail, clock, max_reads, filters):
    write(trail, clock, 30)
    write_into_one_shard(trail, clock, 40)
    write(trail, clock, 10)
    with meter.measure() as seen:
        first = trail.recent(limit=20, max_reads=max_reads, filters=filters)
    # Its first Query ran out before the page was full: one round a page stops there (and the
    # next page carries on below where it stopped); more rounds read that shard again.
    if max_reads == 1:
        assert seen.calls_of("Query") == DAYS_READ + AUDIT_SHARDS + 1 and len(first.entries) < 20
    else:
        assert DAYS_READ + AUDIT_SHARDS + 1 < seen.calls_of("Query") <= DAYS_READ + max_reads * (AUDIT_SHARDS + 1)
        assert len(first.entries) == 20
    rest, _ = every_page(trail, cursor=first.next_cursor, limit=20, max_reads=max_reads, filters=filters)
    assert [sk(e) for e in first.entries] + rest == expected(trail, matches(filters))


def test_a_cursor_made_under_another_time_range_reads_only_inside_this_one(trail, clock):
    write(trail, clock, 60)
    inside = TrailFilter(
        since=datetime(2026, 11, 21, 23, 55, tzinfo=UTC), until=datetime(2026, 11, 21, 23, 58, tzinfo=UTC)
    )
    wanted = expected(trail, matches(inside))
    above = paging.encode_state({"day": DAY_BEFORE, "sk": f"{DAY_BEFORE}T23:59:30.000000Z#x"}, purpose=RECENT_CURSOR)
    assert every_page(trail, cursor=above, limit=5, filters=inside)[0] == wanted
    below = paging.encode_state({"day": DAY_BEFORE, "sk": f"{DAY_BEFORE}T23:51:00.000000Z#x"}, purpose=RECENT_CURSOR)
    assert every_page(trail, cursor=below, limit=5, filters=inside)[0] == []


FILTERS = {
    "actor": TrailFilter(actor="bo"),
    "action family": TrailFilter(action="call."),
    "source": TrailFilter(source="system"),
    "time range across midnight": TrailFilter(
        since=datetime(2026, 11, 21, 23, 55, tzinfo=UTC), until=datetime(2026, 11, 22, 0, 2, tzinfo=UTC)
    ),
    "actor in a time range": TrailFilter(actor="ana", since=datetime(2026, 11, 21, 23, 58, tzinfo=UTC)),
    "until only": TrailFilter(source="api", until=datetime(2026, 11, 21, 23, 59, tzinfo=UTC)),
}


def matches(filters: TrailFilter):
    def keep(item: dict) -> bool:
        moment = datetime.strptime(item["at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        return (
            (not filters.actor or item["actor"] == filters.actor)
            and item["action"].startswith(filters.action)
            and (not filters.source or item["source"] == filters.source)
            and (not filters.since or moment >= filters.since)
            and (not filters.until or moment <= filters.until)
        )

    return keep


@pytest.mark.parametrize(
    "name, max_reads", [(name, 8) for name in FILTERS] + [("source", 1), ("actor in a time range", 1)]
)
def test_filters_and_time_ranges_page_across_shards(trail, clock, name, max_reads):
    write(trail, clock, 60, unsharded_every=6)
    filters = FILTERS[name]
    wanted = expected(trail, matches(filters))
    assert 3 < len(wanted) < len(stored(trail))
    seen, _ = every_page(trail, limit=3, filters=filters, max_reads=max_reads)
    assert seen == wanted


def test_an_id_prefix_finds_its_entries_in_every_shard(trail, clock):
    write(trail, clock, 60, unsharded_every=7)
    seen, _ = every_page(trail, limit=6, target_prefixes=("agent:a3",))
    wanted = expected(trail, lambda item: item["target"] == "agent:a3")
    assert seen == wanted and len({day_shard(s.rsplit("#", 1)[1]) for s in seen}) > 1


def test_a_page_reads_each_partition_at_most_once_a_round(trail, clock):
    write(trail, clock, 40)
    with meter.measure() as seen:
        trail.recent(limit=10, max_reads=3, filters=TrailFilter(actor="nobody"))
    assert DAYS_READ + AUDIT_SHARDS + 1 <= seen.calls_of("Query") <= DAYS_READ + 3 * (AUDIT_SHARDS + 1)


def test_a_tampered_or_foreign_cursor_is_refused(trail, clock):
    write(trail, clock, 30)
    cursor = trail.recent(limit=5).next_cursor
    assert cursor
    i = len(cursor) // 3
    forged = [
        cursor[:i] + ("A" if cursor[i] != "A" else "B") + cursor[i + 1 :],
        cursor[: len(cursor) // 2],
        # Well signed, but a sort key of another day, or not a string.
        paging.encode_state({"day": DAY, "sk": f"{DAY_BEFORE}T10:00:00.000000Z#x"}, purpose=RECENT_CURSOR),
        paging.encode_state({"day": DAY, "sk": 5}, purpose=RECENT_CURSOR),
        # A cursor within a day of the unsharded trail (DynamoDB's key in one partition).
        paging.encode_state(
            {"day": DAY, "key": {"pk": {"S": DAY_PREFIX + DAY}, "sk": {"S": f"{DAY}T00:00:01.000000Z#x"}}},
            purpose=RECENT_CURSOR,
        ),
        paging.encode_state({"day": DAY, "sk": None}, purpose="audit-target"),
    ]
    for bad in forged:
        with pytest.raises(errors.InvalidRequest) as caught:
            trail.recent(cursor=bad)
        assert caught.value.message == paging.INVALID


def test_the_cursor_carries_the_day_and_the_sort_key_read_down_to(trail, clock):
    write(trail, clock, 30)
    page = trail.recent(limit=5)
    state = paging.decode_state(page.next_cursor, purpose=RECENT_CURSOR)
    assert state == {"day": page.entries[-1].at[:10], "sk": sk(page.entries[-1])}
    assert timedelta(0) < clock.moment - page.entries[-1].moment < timedelta(hours=1)
