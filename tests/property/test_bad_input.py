"""Hostile input never crashes a batch: good records are counted, bad ones reach the DLQ alone.

Records are generated with every DynamoDB type, deep nesting, 400 KB items, empty
strings, unicode and binary keys and 38-digit numbers; bad ones are good ones with a
single defect (missing fields, wrong types, unknown types, broken ARNs). Every record
carries a SequenceNumber, as Lambda guarantees: without one a failure cannot be
reported per item, and the handler fails the batch on purpose (tested elsewhere).
"""

from __future__ import annotations

import base64
import copy
import gzip
import uuid
from decimal import Decimal
from typing import Any

import boto3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotkeys.deployment import EventSourceSettings
from hotkeys.detector.adapters.archive_store import S3ObjectStore
from hotkeys.detector.adapters.key_schema import PartitionKeyResolver
from hotkeys.detector.adapters.stats_store import DynamoStatsStore
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.archive import TtlArchiver
from hotkeys.detector.consumer.pipeline import Ports, parse_event, process_batch
from hotkeys.emulator.esm import ShardConsumer
from hotkeys.emulator.events import ItemChange, sequence_number, stream_record
from hotkeys.emulator.local import create_stats_table
from tests import reference_sizing
from tests.support import layouts_of

T0 = 1_796_083_200

plain_scalars = st.one_of(
    st.text(max_size=30),
    st.integers(min_value=-(10**37), max_value=10**37).map(Decimal),
    st.decimals(allow_nan=False, allow_infinity=False, places=6, min_value=-(10**20), max_value=10**20),
    st.binary(max_size=30),
    st.booleans(),
    st.none(),
    st.sets(st.text(min_size=1, max_size=5), min_size=1, max_size=3),
)
plain_values = st.recursive(
    plain_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(min_size=1, max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
keys = st.one_of(
    st.text(min_size=1, max_size=40).map(lambda s: ("S", s)),
    st.integers(min_value=-(10**37), max_value=10**37).map(lambda i: ("N", str(i))),
    st.binary(min_size=1, max_size=30).map(lambda b: ("B", base64.b64encode(b).decode())),
)


@st.composite
def good_records(draw: st.DrawFn) -> dict[str, Any]:
    kind, key = draw(keys)
    attributes = draw(
        st.dictionaries(st.text(min_size=1, max_size=10).filter(lambda n: n != "pk"), plain_values, max_size=6)
    )
    big = draw(st.sampled_from([0, 0, 0, 1000, 399_000]))
    image: dict[str, Any] = {"pk": {kind: key}}
    new_image = {**image, **_typed(attributes), "blob": {"S": "é" * (big // 2)}}
    name = draw(st.sampled_from(["INSERT", "MODIFY", "REMOVE", "TTL"]))
    record = stream_record(
        ItemChange(
            event_name="REMOVE" if name == "TTL" else name,
            keys=image,
            new_image=None if name in ("REMOVE", "TTL") else new_image,
            old_image=None if name == "INSERT" else new_image,
            ttl_delete=name == "TTL",
            typed=True,
        ),
        table="hostile",
        sequence="0",
        event_time=T0 + draw(st.integers(min_value=0, max_value=119)),
    )
    return record


def _typed(attributes: dict[str, Any]) -> dict[str, Any]:
    from hotkeys.emulator.events import to_dynamodb_json

    return to_dynamodb_json(attributes)


DEFECTS = [
    lambda r: r.pop("dynamodb"),
    lambda r: r["dynamodb"].pop("Keys"),
    lambda r: r.update(eventName="UPSERT"),
    lambda r: r.update(eventSourceARN="arn:aws:sqs:us-east-1:1:queue"),
    lambda r: r.update(eventSourceARN=["arn:aws:dynamodb:us-east-1:1:table/t/stream/x"]),  # unhashable
    lambda r: r.update(eventSourceARN={"arn": "x"}),
    lambda r: r["dynamodb"].update(ApproximateCreationDateTime="yesterday"),
    lambda r: r["dynamodb"].update(Keys={"pk": {"BOOL": True}}),
    lambda r: r["dynamodb"].update(Keys={}),
    lambda r: r["dynamodb"].update(NewImage={"x": {"Q": "1"}}, OldImage=None),
    lambda r: r["dynamodb"].update(NewImage={"x": {"N": "twelve"}}),
    lambda r: r["dynamodb"].update(NewImage={"x": {"M": {"y": {"L": [{"SS": []}]}}}}),
    lambda r: r["dynamodb"].update(NewImage=["not", "a", "map"]),
    lambda r: r["dynamodb"].update(NewImage={"x": {"B": "%%%"}}),
    lambda r: r["dynamodb"].update(NewImage={"x": {"S": "a", "N": "1"}}),
]


@st.composite
def batches(draw: st.DrawFn) -> list[tuple[dict[str, Any], bool]]:
    items = []
    for position in range(draw(st.integers(min_value=1, max_value=25))):
        record = draw(good_records())
        bad = draw(st.booleans()) and draw(st.integers(min_value=0, max_value=3)) == 0
        if bad:
            record = copy.deepcopy(record)
            draw(st.sampled_from(DEFECTS))(record)
        sequence = sequence_number(0, position)
        record.setdefault("dynamodb", {})["SequenceNumber"] = sequence
        items.append((record, bad))
    return items


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(batch=batches(), archive=st.booleans())
def test_good_records_count_and_bad_ones_fail_alone(
    aws: None, batch: list[tuple[dict[str, Any], bool]], archive: bool
) -> None:
    # (With the archive on, a TTL deletion's images are validated by its archive line, not sized.)
    name = f"stats-{uuid.uuid4().hex[:8]}"
    create_stats_table(boto3.client("dynamodb"), name)
    archiver = None
    if archive:
        boto3.client("s3").create_bucket(Bucket=name)
        archiver = TtlArchiver(S3ObjectStore(boto3.client("s3"), name), "ttl/", lambda table: "expireAt")
    stats = DynamoStatsStore(boto3.resource("dynamodb").Table(name))
    ports = Ports(
        stats=stats,
        resolve_key=PartitionKeyResolver(None, lambda table: {}),
        archiver=archiver,
        layouts=layouts_of(stats),
    )
    records = [record for record, _ in batch]
    for record in records:  # in stream order, creation times never go back: keep this batch in one window
        stream = record.get("dynamodb")
        if isinstance(stream, dict) and isinstance(stream.get("ApproximateCreationDateTime"), int):
            stream["ApproximateCreationDateTime"] = T0 + 1
    config = Settings(stats_table_name=name)
    # When the event source mapping delivers it in one tumbling window (bisect on error, no retries)
    run = ShardConsumer(
        lambda event: process_batch(parse_event(event), config, ports).response(),
        "shardId-1",
        EventSourceSettings(batch_size=len(records), tumbling_window_seconds=60, retry_attempts=0),
    ).consume(records)
    # Then exactly the defective records reach the DLQ, each alone, and every good one is counted once
    bad = sorted(record["dynamodb"]["SequenceNumber"] for record, is_bad in batch if is_bad)
    assert sorted(letter.start_sequence for letter in run.dead_letters) == bad
    assert all(letter.start_sequence == letter.end_sequence for letter in run.dead_letters)
    good = [record for record, is_bad in batch if not is_bad]
    # (write units by the independent reading of the documented size rules)
    expected_wcu = sum(
        reference_sizing.write_units(r["dynamodb"].get("OldImage"), r["dynamodb"].get("NewImage"))
        for r in good
        if "userIdentity" not in r
    )
    stored = sum(
        int(item["wcu"])
        for item in boto3.resource("dynamodb").Table(name).scan()["Items"]
        if item["pk"].startswith("SEG#")
    )
    assert stored == expected_wcu
    if archive:  # and every good TTL deletion is archived, once
        archived = sum(
            len(gzip.decompress(boto3.client("s3").get_object(Bucket=name, Key=obj["Key"])["Body"].read()).splitlines())
            for obj in boto3.client("s3").list_objects_v2(Bucket=name).get("Contents", [])
        )
        assert archived == sum(1 for r in good if "userIdentity" in r)
