"""`SortedMerge`, the one merge every reader of a spread key uses (the status index's
partitions, a queue's sub-queues, the waiting line, a day of the audit trail): for any
contents of the partitions and any page sizes, forward and backward, every item comes
exactly once and in order (sort key, then partition), and a page that stops says where
every partition is read up to, so the next one loses nothing (hypothesis, on moto)."""

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queues_app.ddb.codec import marshal, unmarshal
from queues_app.ddb.merge import SortedMerge

# Up to five partitions, each a set of sort keys (few letters, so equal keys across
# partitions are common: they are merged by partition).
KEYS = st.text(alphabet="abcde", min_size=1, max_size=3)
PARTITIONS = st.lists(st.sets(KEYS, max_size=12), min_size=1, max_size=5)
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def stored(db, partitions):
    """The partitions written to the callcenter table under fresh keys: (table, pks)."""
    table = db.table("callcenter")
    run = uuid.uuid4().hex[:8]
    pks = [f"MERGE#{run}#{n}" for n in range(len(partitions))]
    for pk, keys in zip(pks, partitions, strict=True):
        for sk in keys:
            db.call("put_item", TableName=table, Item=marshal({"pk": pk, "sk": sk}))
    return table, pks


def queries(table, pks, *, descending=False, condition="", values=None):
    return [
        {
            "TableName": table,
            "KeyConditionExpression": "pk = :pk" + (f" AND {condition}" if condition else ""),
            "ExpressionAttributeValues": {":pk": {"S": pk}, **(values or {})},
            "ScanIndexForward": not descending,
        }
        for pk in pks
    ]


def expected(partitions, descending):
    order = sorted(((sk, n) for n, keys in enumerate(partitions) for sk in keys), reverse=descending)
    return [(sk, f"#{n}") for sk, n in order]


def seen(items):
    return [(item["sk"], "#" + item["pk"].rsplit("#", 1)[1]) for item in items]


@SETTINGS
@given(partitions=PARTITIONS, page_size=st.integers(1, 7), descending=st.booleans())
def test_every_item_comes_once_in_order_whatever_the_page_size(moto_db, partitions, page_size, descending):
    table, pks = stored(moto_db, partitions)
    merge = SortedMerge(moto_db, queries(table, pks, descending=descending), sort_key="sk", descending=descending)
    assert seen(merge.each(page_size)) == expected(partitions, descending)
    assert not merge.more


@SETTINGS
@given(partitions=PARTITIONS, limit=st.integers(1, 7), page=st.integers(1, 9), descending=st.booleans())
def test_pages_taken_as_the_merge_allows_lose_and_repeat_nothing(moto_db, partitions, limit, page, descending):
    """Pages of at most `page` items, each partition read `limit` items a Query, and only
    the partitions that may hold the page's next items read again (as the roster does)."""
    table, pks = stored(moto_db, partitions)
    merge = SortedMerge(moto_db, queries(table, pks, descending=descending), sort_key="sk", descending=descending)
    found = []
    for _ in range(1000):
        due = merge.due(page)
        if due:
            merge.read(due, limit)
        taken = merge.take(page)
        assert len(taken) <= page
        found += taken
        if not taken and not due:
            break
    assert seen(found) == expected(partitions, descending)


@SETTINGS
@given(
    partitions=st.lists(st.sets(KEYS, max_size=12), min_size=1, max_size=5).filter(
        lambda parts: sum(map(len, parts)) == len(set().union(*parts))  # sort keys unique across partitions
    ),
    page=st.integers(1, 9),
    limit=st.integers(1, 7),
    rounds=st.integers(1, 3),
    descending=st.booleans(),
)
def test_a_page_carries_on_from_where_it_stopped_without_loss(moto_db, partitions, page, limit, rounds, descending):
    """As the audit trail pages: at most `rounds` rounds a page; a full page carries on after
    its last item, a page whose rounds ran out from where every partition is read up to
    (its stop), each by a key condition on every partition."""
    table, pks = stored(moto_db, partitions)
    found, resume = [], None
    for _ in range(500):
        condition, values = "", None
        if resume is not None:
            condition, values = f"sk {'<' if descending else '>'} :at", {":at": {"S": resume}}
        merge = SortedMerge(
            moto_db,
            queries(table, pks, descending=descending, condition=condition, values=values),
            sort_key="sk",
            descending=descending,
        )
        taken: list[dict] = []
        for _ in range(rounds):
            due = merge.due(page - len(taken))
            if not due or len(taken) >= page:
                break
            merge.read(due, limit)
            taken += merge.take(page - len(taken))
        found += taken
        if not merge.more:
            break
        if len(taken) >= page:
            resume = taken[-1]["sk"]
            continue
        stop = merge.stop()
        assert stop is not None  # not read to the end, the page not full: it says where to carry on
        resume = unmarshal(stop)["sk"]
        # Everything up to the stop was taken: what is pending lies beyond it.
        assert all((item["sk"] > resume) != descending for p in merge.partitions for item in p.pending)
    assert seen(found) == expected(partitions, descending)
