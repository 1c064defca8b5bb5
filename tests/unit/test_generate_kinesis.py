"""``hotkeys generate --source kinesis``: the same changes as the DynamoDB-stream workload of the seed, in
Kinesis' shapes, with the duplicates, lateness, shards and precision asked for (issue #49)."""

from __future__ import annotations

import base64
import collections
import hashlib
import itertools
import json
from typing import Any

import pytest

from hotkeys.emulator.generate import InjectedHotKey, Workload, stream
from hotkeys.emulator.kinesis import KinesisOptions, KinesisRecord, deliveries, shard_for

WORKLOAD = Workload(
    keys=40,
    rate=60,
    duration=20,
    ttl_fraction=0.1,
    seed=11,
    hot=(InjectedHotKey("event#42", 120.0, 5, 5),),
)
CHANGE_FIELDS = ("Keys", "NewImage", "OldImage", "SizeBytes")


def _delivered(options: KinesisOptions, workload: Workload = WORKLOAD) -> list[KinesisRecord]:
    return list(deliveries(workload, options))


def _as_stream_change(change: dict[str, Any]) -> str:
    """A decoded change as the DynamoDB stream record of the same change says it (its second, its images)."""
    body = change["dynamodb"]
    per_second = 1_000_000 if body["ApproximateCreationDateTimePrecision"] == "MICROSECOND" else 1_000
    identity = change["userIdentity"]
    seen = {
        "table": change["tableName"],
        "eventName": change["eventName"],
        "second": body["ApproximateCreationDateTime"] // per_second,
        "userIdentity": identity,
        **{name: body.get(name) for name in CHANGE_FIELDS},
    }
    return json.dumps(seen, sort_keys=True)


def _stream_changes(workload: Workload) -> collections.Counter[str]:
    found: collections.Counter[str] = collections.Counter()
    for _shard, record in stream(workload):
        body = record["dynamodb"]
        seen = {
            "table": workload.table,
            "eventName": record["eventName"],
            "second": body["ApproximateCreationDateTime"],
            "userIdentity": record.get("userIdentity"),
            **{name: body.get(name) for name in CHANGE_FIELDS},
        }
        found[json.dumps(seen, sort_keys=True)] += 1
    return found


@pytest.mark.parametrize("precision", ["MICROSECOND", "MILLISECOND"])
def test_decoded_the_records_are_the_dynamodb_stream_workloads_changes(precision: str) -> None:
    options = KinesisOptions(shards=3, duplicates=0.05, reorder=10, precision=precision)  # type: ignore[arg-type]
    records = _delivered(options)
    # The Lambda record's data is the decoded change, base64 of its JSON
    for record in records[:50]:
        event = record.lambda_record()
        assert event["eventSource"] == "aws:kinesis"
        assert json.loads(base64.b64decode(event["kinesis"]["data"])) == record.change
        assert event["eventID"] == f"shardId-{record.shard:012d}:{record.sequence}"
        assert "SequenceNumber" not in record.change["dynamodb"] and "StreamViewType" not in record.change["dynamodb"]
    originals = collections.Counter(_as_stream_change(r.change) for r in records if not r.duplicate)
    # ... the same changes, each in the second its stream record says (so the windows are the same)
    assert originals == _stream_changes(WORKLOAD)
    assert sum(record.change["userIdentity"] is not None for record in records) > 0  # TTL deletions kept


def test_the_same_seed_gives_the_same_records_and_another_seed_others() -> None:
    options = KinesisOptions(shards=2, duplicates=0.1, reorder=3)
    first = [(r.shard, r.sequence, r.arrival_ms, r.change) for r in _delivered(options)]
    assert first == [(r.shard, r.sequence, r.arrival_ms, r.change) for r in _delivered(options)]
    other = Workload(**{**WORKLOAD.__dict__, "seed": 12})
    assert first != [(r.shard, r.sequence, r.arrival_ms, r.change) for r in _delivered(options, other)]


@pytest.mark.parametrize("event_ids", ["new", "same"])
def test_that_share_of_the_changes_is_sent_again_as_a_retry_would(event_ids: str) -> None:
    options = KinesisOptions(shards=3, duplicates=0.05, duplicate_event_ids=event_ids, reorder=4)
    records = _delivered(options)
    again = [record for record in records if record.duplicate]
    assert len(again) == round(0.05 * WORKLOAD.record_count()) == len(records) - WORKLOAD.record_count()
    firsts = {_identity(r): r for r in records if not r.duplicate}
    for twin in again:
        first = firsts[_identity(twin)]
        assert {**twin.change, "eventID": ""} == {**first.change, "eventID": ""}  # the same payload
        assert (twin.change["eventID"] == first.change["eventID"]) is (event_ids == "same")
        assert twin.shard == first.shard and twin.partition_key == first.partition_key
        assert int(twin.sequence) > int(first.sequence)  # its own number, after the first copy's
        assert twin.arrival_ms >= first.arrival_ms
    assert _delivered(KinesisOptions(duplicates=0)) and not any(r.duplicate for r in _delivered(KinesisOptions()))


def _identity(record: KinesisRecord) -> str:
    body = record.change["dynamodb"]
    return json.dumps([record.change["eventName"], body["Keys"], body["ApproximateCreationDateTime"]])


@pytest.mark.parametrize("reorder", [0.0, 2.5, 10.0])
def test_records_arrive_within_the_reorder_bound_in_sequence_order_per_shard(reorder: float) -> None:
    records = _delivered(KinesisOptions(shards=3, duplicates=0.05, reorder=reorder))
    late = [record.arrival_ms * 1000 - record.created_us for record in records]
    # (arrival is in milliseconds, rounded up: at most a millisecond over the bound, never before the change)
    assert min(late) >= 0 and max(late) < reorder * 1_000_000 + 1000
    for shard in range(3):
        own = [record for record in records if record.shard == shard]
        assert own, "every shard gets records"
        assert all(len(record.sequence) == 56 and record.sequence.isdigit() for record in own)
        assert [int(r.sequence) for r in own] == sorted(int(r.sequence) for r in own)
        assert [r.arrival_ms for r in own] == sorted(r.arrival_ms for r in own)
    created = [record.created_us for record in records if not record.duplicate]
    shuffled = any(later < earlier for earlier, later in itertools.pairwise(created))
    assert shuffled is (reorder > 0)  # delivered out of creation order only when asked
    if reorder:  # and the lateness spreads over the bound
        assert max(late) > reorder * 1_000_000 * 0.9


def test_records_go_to_shards_by_the_md5_range_of_a_partition_key_of_the_item() -> None:
    records = _delivered(KinesisOptions(shards=4, duplicates=0.05, reorder=1))
    shards_of_item: dict[str, set[int]] = collections.defaultdict(set)
    keys_of_item: dict[str, set[str]] = collections.defaultdict(set)
    for record in records:
        item = record.change["dynamodb"]["Keys"]["pk"]["S"]
        shards_of_item[item].add(record.shard)
        keys_of_item[item].add(record.partition_key)
        digest = int(hashlib.md5(record.partition_key.encode(), usedforsecurity=False).hexdigest(), 16)
        assert digest * 4 // 2**128 == record.shard == shard_for(record.partition_key, 4)
    assert all(len(shards) == 1 for shards in shards_of_item.values())  # one item's changes share a shard
    assert all(len(keys) == 1 for keys in keys_of_item.values())
    assert len({key for keys in keys_of_item.values() for key in keys}) == len(keys_of_item)  # one key per item
    assert {record.shard for record in records} == {0, 1, 2, 3}
    # The partition key is opaque: not the item's key value itself
    assert not any(record.partition_key in json.dumps(record.change["dynamodb"]["Keys"]) for record in records)


def test_the_precision_is_that_of_approximate_creation_date_time() -> None:
    micro = _delivered(KinesisOptions())
    milli = _delivered(KinesisOptions(precision="MILLISECOND"))
    for fine, coarse in zip(micro, milli, strict=True):
        assert fine.change["dynamodb"]["ApproximateCreationDateTimePrecision"] == "MICROSECOND"
        assert coarse.change["dynamodb"]["ApproximateCreationDateTimePrecision"] == "MILLISECOND"
        assert fine.change["dynamodb"]["ApproximateCreationDateTime"] == fine.created_us
        assert coarse.change["dynamodb"]["ApproximateCreationDateTime"] == fine.created_us // 1000
    # one item's writes have times of their own, and microseconds say more than milliseconds do
    times = [(r.change["dynamodb"]["Keys"]["pk"]["S"], r.created_us) for r in micro]
    assert len(set(times)) == len(times)
    assert any(r.created_us % 1000 for r in micro)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (KinesisOptions(duplicates=1.5), "--duplicates must be between 0 and 1"),
        (KinesisOptions(reorder=-1), "--reorder must be between 0"),
        (KinesisOptions(shards=0), "--kinesis-shards must be between 1"),
        (KinesisOptions(duplicate_event_ids="maybe"), "--duplicate-event-ids must be one of"),
    ],
)
def test_options_out_of_range_are_refused(options: KinesisOptions, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        options.validate()


def test_binary_values_are_encoded_a_second_time_and_the_function_reads_them_back() -> None:
    from hotkeys.detector.domain.kinesis import unwrap
    from hotkeys.emulator.events import ItemChange, stream_record
    from hotkeys.emulator.kinesis import decoded_change, lambda_record, stream_arn

    item = {"pk": b"\x00\xff", "tags": {b"a", b"b"}, "nested": {"blob": b"\x01"}}
    record = stream_record(
        ItemChange("INSERT", {"pk": b"\x00\xff"}, new_image=item), table="t", sequence="1", event_time=1
    )
    change = decoded_change(record, "t", 1_000_000, "MICROSECOND", "id")
    once = record["dynamodb"]["NewImage"]
    assert change["dynamodb"]["Keys"]["pk"]["B"] == base64.b64encode(once["pk"]["B"].encode()).decode()
    assert change["dynamodb"]["NewImage"]["nested"]["M"]["blob"]["B"] != once["nested"]["M"]["blob"]["B"]
    unwrapped = unwrap(lambda_record(change, "K", "shardId-000000000000", "1", 1000, stream_arn()))
    assert (
        unwrapped.record["dynamodb"]["NewImage"] == once
        and unwrapped.record["dynamodb"]["Keys"] == record["dynamodb"]["Keys"]
    )


def test_the_heat_maps_stream_records_count_each_kinesis_change_once() -> None:
    from hotkeys.detector.domain.records import parse_change
    from hotkeys.emulator.kinesis import as_stream_record

    records = _delivered(KinesisOptions(shards=2, duplicates=0.2, reorder=2))
    seen: set[bytes] = set()
    shaped = [as_stream_record(record.lambda_record(), seen, lambda _table, _keys: "pk") for record in records]
    kept = [record for record in shaped if record is not None]
    assert len(kept) == WORKLOAD.record_count() == len(records) - sum(r.duplicate for r in records)
    changes = [parse_change(record, lambda _table, _keys: "pk", None) for record in kept]
    assert sum(change.key == "event#42" for change in changes) == 600


def test_the_heat_map_tells_an_items_changes_in_one_millisecond_apart_by_their_images_as_top_does() -> None:
    # At millisecond precision two changes of one item, of one size, in one millisecond share every field of
    # the identity but their images (domain.kinesis.identity): the consumer counts both, so must the heat map
    from hotkeys.cli.report import HeatMap
    from hotkeys.emulator.events import ItemChange, stream_record
    from hotkeys.emulator.kinesis import as_stream_record, decoded_change, lambda_record, shard_id, stream_arn

    def resolve(_table: str, _keys: object) -> str:
        return "pk"

    made = []
    for value in (1, 2):
        item = {"pk": "hot", "n": value}
        change = ItemChange("MODIFY", {"pk": "hot"}, old_image={**item, "n": value + 4}, new_image=item)
        made.append(stream_record(change, table="t", sequence=str(value), event_time=1_700_000_000))
    assert made[0]["dynamodb"]["SizeBytes"] == made[1]["dynamodb"]["SizeBytes"]
    changes = [decoded_change(record, "t", 1_700_000_000_123_456, "MILLISECOND", "id") for record in made]
    # (the second change sent again, under a new sequence number: a copy, counted once)
    sent = [*changes, changes[1]]
    arn = stream_arn()
    records = [
        lambda_record(change, "K", shard_id(0), str(at), 1_700_000_000_200, arn) for at, change in enumerate(sent)
    ]
    heat = HeatMap(resolve, 1)
    seen: set[bytes] = set()
    for record in records:
        shaped = as_stream_record(record, seen, heat.resolve_key)
        if shaped is not None:
            heat.add(shaped)
    (panel,) = heat.panels()
    (row,) = panel.rows
    assert row.key == "hot" and sum(row.wcu) == 2
