"""Data health's rules one by one: TTL verdicts against the documentation's reference, the size scale,
the stored form, and the findings' wording and quiet."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotkeys.detector.domain.health import (
    LARGE_ITEM_BYTES,
    NEAR_LIMIT_BYTES,
    Health,
    IndexCost,
    TtlVerdict,
    bucket_bound,
    findings,
    size_bucket,
    ttl_verdict,
)
from hotkeys.detector.domain.records import MalformedRecord, parse_change
from hotkeys.emulator.events import ItemChange, stream_record
from tests import reference_health

WRITTEN_AT = 1_796_083_200  # 2026-12-01
DAY = 86_400

values = st.one_of(
    st.none(),
    st.integers(min_value=-(10**16), max_value=10**16).map(lambda n: {"N": str(n)}),
    st.integers(min_value=WRITTEN_AT - 5 * 367 * DAY, max_value=WRITTEN_AT - 5 * 364 * DAY).map(
        lambda n: {"N": str(n)}
    ),
    st.sampled_from([10**11 - 1, 10**11, 10**14 - 1, 10**14]).map(lambda n: {"N": str(n)}),
    st.sampled_from([{"S": "1796083200"}, {"L": []}, {"M": {}}, {"NULL": True}, {"NS": ["1"]}, {"N": "1.7e9"}]),
)


@given(value=values)
def test_a_ttl_verdict_is_the_documentations_under_every_reading(value: Any) -> None:
    expected = reference_health.ttl_verdict({"t": value} if value is not None else {}, "t", WRITTEN_AT)
    got = ttl_verdict(value, WRITTEN_AT)
    if expected == "ambiguous":
        # between five years of 365 and of 366 days: AWS does not say; only the longest reading is "too old"
        assert got == TtlVerdict.OK
    else:
        assert TtlVerdict(got).label == expected


@pytest.mark.parametrize("value", [{"N": "0e"}, {"N": "1e5_"}, {"N": "NaN"}, {"N": 5}, {"N": "1", "S": "1"}, "1"])
def test_a_ttl_value_sizing_refuses_makes_its_record_malformed(value: Any) -> None:
    # Given a write whose TTL attribute holds a value no DynamoDB item can (a replayed or hand-made file)
    record = stream_record(
        ItemChange(
            event_name="INSERT", keys={"pk": {"S": "k"}}, new_image={"pk": {"S": "k"}, "expireAt": value}, typed=True
        ),
        table="orders",
        sequence="1",
        event_time=WRITTEN_AT,
    )
    # When the function parses it, judging its TTL: the record is malformed (dead-lettered), not a crash
    with pytest.raises(MalformedRecord):
        parse_change(record, lambda _table, _keys: "pk", ttl_attribute=lambda _table: "expireAt")


@given(size=st.integers(min_value=1, max_value=400 * 1024))
def test_a_sizes_bucket_bounds_it_within_an_eighth(size: int) -> None:
    bucket = size_bucket(size)
    assert bucket_bound(bucket) >= size
    assert bucket == 0 or bucket_bound(bucket - 1) < size
    assert bucket_bound(bucket) < max(65, size * 9 / 8)


@given(size=st.integers(min_value=1, max_value=2 * 400 * 1024 + 10))
def test_an_item_counts_in_its_sizes_bucket(size: int) -> None:
    # (Health.add inlines size_bucket: the per-record path)
    health = Health()
    health.add(size, 1, None)
    assert health.buckets.index(1) == size_bucket(min(size, 2 * 400 * 1024))


def test_the_stored_form_reads_back_and_merges() -> None:
    health = Health()
    for size, units, verdict in (
        (100, 1, TtlVerdict.OK),
        (NEAR_LIMIT_BYTES, 350, TtlVerdict.MILLISECONDS),
        (50, 1, None),
    ):
        health.add(size, units, verdict)
    health.attribute = "expireAt"  # (the attribute judged travels with the verdicts, to every reader)
    again = Health.from_json(health.to_json())
    assert again == health
    assert Health.from_json(Health().to_json()).attribute is None
    again.merge(health)
    assert again.attribute == "expireAt"
    again.merge(Health())
    assert (again.written, again.wcu, again.near_limit, again.large, again.large_wcu) == (6, 704, 2, 2, 700)
    assert again.ttl == {"ok": 2, "milliseconds": 2}
    assert again.percentile(1.0) == again.max_size == NEAR_LIMIT_BYTES
    assert Health().percentile(0.5) == 0


def test_a_healthy_table_says_nothing() -> None:
    health = Health()
    for _ in range(100):
        health.add(900, 1, TtlVerdict.OK)
    assert findings("orders", health, [IndexCost("by-status", 100, 100, 0.5, "ALL")]) == []


def test_items_written_without_the_attribute_are_told_only_beside_items_that_carry_it() -> None:
    never = Health()
    for _ in range(10):
        never.add(900, 1, TtlVerdict.MISSING)
    assert findings("orders", never, []) == []
    some = Health()
    for verdict in (TtlVerdict.MISSING, TtlVerdict.OK, TtlVerdict.MILLISECONDS, TtlVerdict.MILLISECONDS):
        some.add(900, 1, verdict)
    assert findings("orders", some, []) == [
        "orders: 1 of 4 items written (25.0%) do not carry the TTL attribute: TTL never deletes them; set it on every "
        "item that should expire",
        "orders: 2 of 4 items written (50.0%) hold the TTL attribute in milliseconds: TTL never deletes them; "
        "divide by 1,000: TTL reads epoch seconds",
    ]


def test_large_items_are_told_by_their_share_of_write_units_and_near_limit_ones_always() -> None:
    health = Health()
    for _ in range(98):
        health.add(1000, 1, TtlVerdict.OK)
    health.add(LARGE_ITEM_BYTES + 1, 11, TtlVerdict.OK)
    assert findings("orders", health, []) == []  # 11 of 109 units: under a quarter
    health.add(NEAR_LIMIT_BYTES, 350, TtlVerdict.OK)
    lines = findings("orders", health, [])
    assert lines[0].startswith("orders: 1 item written within 12.5% of DynamoDB's 400 KB item limit (largest 350.0 KB)")
    assert lines[1].startswith("orders: items over 10 KB are 2% of writes and 79% of write units")


def test_a_costly_index_is_told_only_when_its_partitions_stay_cold() -> None:
    busy = IndexCost("by-status", 900, 1000, 0.5, "ALL")
    cold = IndexCost("by-merchant", 1000, 1000, 0.02, "ALL")
    cheap = IndexCost("by-day", 100, 1000, 0.01, "KEYS_ONLY")
    assert findings("payments", Health(), [busy, cold, cheap]) == [
        "payments index by-merchant: 1,000 write units, 100% of the table's (projection ALL: every write copies "
        "the whole item), and its partitions stay cold (peak under 10% of a partition): if nothing reads it, drop "
        "it or project less (reads are not in the stream: check its read metrics)"
    ]
