"""The Kinesis oracle's own rules (tests/reference_kinesis.py), each pinned by a test that fails when it changes.

Inputs are records in the shape AWS documents for Lambda's Kinesis event (the change document as
base64 ``kinesis.data``); the DynamoDB Streams records the oracle writes are handed to botocore's
parser (tests/stream_wire.py), so their shape is checked against the service model, not against
our own spelling.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import reference_kinesis as kinesis
from tests import stream_wire

TABLE = "orders"
REGION = "us-east-1"
STREAM_ARN = f"arn:aws:dynamodb:{REGION}:123456789012:table/{TABLE}/stream/2026-01-01T00:00:00.000"
KINESIS_ARN = f"arn:aws:kinesis:{REGION}:123456789012:stream/changes"
SECOND_US = 1_700_000_000_000_000  # an instant in microseconds


def document(
    key: str,
    created: int,
    *,
    event_name: str = "MODIFY",
    count: int = 1,
    precision: str | None = kinesis.MICROSECOND,
    identity: dict[str, str] | None = None,
    event_id: str = "e-0",
) -> dict[str, Any]:
    """A change document as Kinesis Data Streams for DynamoDB writes it (``count`` sets the images)."""
    keys = {"pk": {"S": key}}
    body: dict[str, Any] = {"ApproximateCreationDateTime": created, "Keys": keys, "SizeBytes": 20 + count}
    if event_name != "INSERT":
        body["OldImage"] = {**keys, "count": {"N": str(count - 1)}}
    if event_name != "REMOVE":
        body["NewImage"] = {**keys, "count": {"N": str(count)}}
    if precision is not None:
        body["ApproximateCreationDateTimePrecision"] = precision
    return {
        "awsRegion": REGION,
        "eventID": event_id,
        "eventName": event_name,
        "userIdentity": identity,
        "recordFormat": "application/json",
        "tableName": TABLE,
        "dynamodb": body,
        "eventSource": "aws:dynamodb",
    }


def delivered(doc: dict[str, Any], sequence: int, *, event_id: str | None = None) -> dict[str, Any]:
    """One record of a Lambda Kinesis event carrying ``doc``; ``event_id`` replaces the document's."""
    if event_id is not None:
        doc = {**doc, "eventID": event_id}
    number = f"{49_000_000_000_000_000_000 + sequence}"
    return {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": "0A1B2C",
            "sequenceNumber": number,
            "data": base64.b64encode(json.dumps(doc).encode()).decode(),
            "approximateArrivalTimestamp": 1_700_000_000.0 + sequence / 1000,
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": f"shardId-000000000000:{number}",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": "arn:aws:iam::123456789012:role/consumer",
        "awsRegion": REGION,
        "eventSourceARN": KINESIS_ARN,
    }


@pytest.mark.parametrize("same_event_id", [True, False])
def test_a_duplicate_with_a_new_sequence_number_is_one_change_whether_or_not_its_event_id_is_new(
    same_event_id: bool,
) -> None:
    doc = document("a", SECOND_US + 5)
    again = delivered(doc, 9, event_id=None if same_event_id else "e-other")
    changes = kinesis.distinct([delivered(doc, 1), again])
    assert changes == [kinesis.decode(doc)]


def test_two_changes_of_one_item_at_different_creation_times_are_two() -> None:
    first, second = document("a", SECOND_US + 5, count=1), document("a", SECOND_US + 6, count=2)
    changes = kinesis.distinct([delivered(second, 1), delivered(first, 2)])
    assert [change.created for change in changes] == [SECOND_US + 5, SECOND_US + 6]


def test_two_changes_of_one_item_in_one_millisecond_with_different_images_are_two() -> None:
    # The timestamp alone would merge them; the images say they are different modifications.
    at = SECOND_US // 1000 + 7
    first = document("a", at, count=1, precision=kinesis.MILLISECOND)
    second = document("a", at, count=2, precision=kinesis.MILLISECOND)
    changes = kinesis.distinct([delivered(second, 1), delivered(first, 2), delivered(second, 3, event_id="x")])
    assert sorted(change.new_image["count"]["N"] for change in changes if change.new_image) == ["1", "2"]


def test_identical_changes_of_one_item_in_one_instant_are_one_the_documented_blind_spot() -> None:
    doc = document("a", SECOND_US + 5, count=3)
    assert len(kinesis.distinct([delivered(doc, 1, event_id="x"), delivered(doc, 2, event_id="y")])) == 1


def test_changes_of_different_items_at_one_instant_are_two() -> None:
    changes = kinesis.distinct([delivered(document("b", SECOND_US), 1), delivered(document("a", SECOND_US), 2)])
    assert sorted(change.keys["pk"]["S"] for change in changes) == ["a", "b"]


@pytest.mark.parametrize(
    ("precision", "created", "expected_precision", "seconds"),
    [
        (kinesis.MICROSECOND, SECOND_US + 999_999, kinesis.MICROSECOND, SECOND_US // 1_000_000),
        (None, SECOND_US + 999_999, kinesis.MICROSECOND, SECOND_US // 1_000_000),  # the default
        (kinesis.MILLISECOND, SECOND_US // 1000 + 999, kinesis.MILLISECOND, SECOND_US // 1_000_000),
        (kinesis.MILLISECOND, SECOND_US // 1000 + 1000, kinesis.MILLISECOND, SECOND_US // 1_000_000 + 1),
    ],
)
def test_the_creation_time_keeps_its_precision_and_floors_to_seconds(
    precision: str | None, created: int, expected_precision: str, seconds: int
) -> None:
    change = kinesis.decode(delivered(document("a", created, precision=precision), 1))
    assert (change.created, change.precision, change.created_seconds) == (created, expected_precision, seconds)


def test_an_undocumented_precision_or_a_fractional_time_is_refused() -> None:
    with pytest.raises(ValueError, match="MILLISECOND or MICROSECOND"):
        kinesis.decode(document("a", SECOND_US, precision="NANOSECOND"))
    with pytest.raises(ValueError, match="integer"):
        kinesis.decode(document("a", SECOND_US + 0.5))  # type: ignore[arg-type]


def test_records_of_both_precisions_are_ordered_on_one_scale() -> None:
    millis = document("a", SECOND_US // 1000 + 1, precision=kinesis.MILLISECOND)  # 1,000 µs past the second
    micros = document("b", SECOND_US + 999, precision=kinesis.MICROSECOND)  # 999 µs past it
    changes = kinesis.distinct([delivered(millis, 1), delivered(micros, 2)])
    assert [change.keys["pk"]["S"] for change in changes] == ["b", "a"]


@pytest.mark.parametrize(
    ("identity", "ttl"),
    [
        ({"type": "Service", "principalId": "dynamodb.amazonaws.com"}, True),
        (None, False),
        ({"type": "Service", "principalId": "lambda.amazonaws.com"}, False),
        ({"type": "AssumedRole", "principalId": "dynamodb.amazonaws.com"}, False),
    ],
)
def test_a_ttl_deletion_is_the_dynamodb_service_identity(identity: dict[str, str] | None, ttl: bool) -> None:
    change = kinesis.decode(delivered(document("a", SECOND_US, event_name="REMOVE", identity=identity), 1))
    assert change.ttl is ttl


def test_a_ttl_deletion_and_a_user_deletion_at_one_instant_are_two_changes() -> None:
    service = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    by_ttl = document("a", SECOND_US, event_name="REMOVE", identity=service)
    by_user = document("a", SECOND_US, event_name="REMOVE")
    assert len(kinesis.distinct([delivered(by_ttl, 1), delivered(by_user, 2)])) == 2


def test_base64_and_decoded_inputs_agree() -> None:
    doc = document("a", SECOND_US + 3, event_name="INSERT")
    assert kinesis.decode(delivered(doc, 1)) == kinesis.decode(doc)
    assert kinesis.decode(doc).old_image is None


def test_a_kinesis_record_that_is_not_base64_or_not_from_kinesis_is_refused() -> None:
    record = delivered(document("a", SECOND_US), 1)
    with pytest.raises(ValueError, match="base64"):
        kinesis.decode({**record, "kinesis": {**record["kinesis"], "data": "not base64!"}})
    with pytest.raises(ValueError, match="aws:kinesis"):
        kinesis.decode({**record, "eventSource": "aws:sqs"})


@st.composite
def deliveries(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Distinct change documents, and a delivery of them: shuffled, some more than once, each copy
    with its own sequence number, a new or the same eventID, as base64 or as the decoded document."""
    moments = draw(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 3_000)), unique=True, max_size=12))
    docs = []
    for index, (key, offset) in enumerate(moments):
        precision = draw(st.sampled_from([kinesis.MICROSECOND, kinesis.MILLISECOND, None]))
        created = SECOND_US + offset if precision != kinesis.MILLISECOND else SECOND_US // 1000 + offset
        name = draw(st.sampled_from(sorted(kinesis.EVENT_NAMES)))
        docs.append(document(key, created, event_name=name, count=index, precision=precision, event_id=f"e-{index}"))
    copies = draw(st.lists(st.integers(1, 3), min_size=len(docs), max_size=len(docs)))
    sent: list[dict[str, Any]] = []
    for doc, times in zip(docs, copies, strict=True):
        for copy_number in range(times):
            new_id = f"{doc['eventID']}-again-{copy_number}" if draw(st.booleans()) else None
            as_kinesis = draw(st.booleans())
            sent.append(delivered(doc, len(sent), event_id=new_id) if as_kinesis else doc)
    return docs, draw(st.permutations(sent))


@settings(max_examples=150, deadline=None)
@given(deliveries())
def test_delivery_order_and_duplicates_do_not_change_the_distinct_changes(
    drawn: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    docs, sent = drawn
    changes = kinesis.distinct(sent)
    assert changes == kinesis.distinct(docs)
    assert sorted(change.identity for change in changes) == sorted(kinesis.decode(doc).identity for doc in docs)
    assert [change.created_micros for change in changes] == sorted(change.created_micros for change in changes)


def test_the_stream_record_is_what_botocore_parses_as_a_dynamodb_streams_record() -> None:
    change = kinesis.decode(delivered(document("a", SECOND_US + 999_999, count=2), 1))
    record = kinesis.as_stream_record(change, 4_200_000_000_000_000_000_001, STREAM_ARN)
    (parsed,) = stream_wire.as_get_records([record])
    assert record["eventSourceARN"] == STREAM_ARN
    assert parsed["eventSource"] == "aws:dynamodb"
    assert parsed["eventName"] == "MODIFY"
    assert parsed["awsRegion"] == REGION
    assert "userIdentity" not in parsed
    body = parsed["dynamodb"]
    assert body["ApproximateCreationDateTime"].astimezone(UTC).timestamp() == SECOND_US // 1_000_000
    assert body["SequenceNumber"] == "4200000000000000000001"
    assert body["StreamViewType"] == "NEW_AND_OLD_IMAGES"
    assert body["SizeBytes"] == change.size_bytes
    assert body["Keys"] == {"pk": {"S": "a"}}
    assert body["NewImage"]["count"] == {"N": "2"}
    assert body["OldImage"]["count"] == {"N": "1"}


def test_a_ttl_deletion_carries_the_service_identity_and_no_new_image() -> None:
    service = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    change = kinesis.decode(document("a", SECOND_US, event_name="REMOVE", identity=service))
    (parsed,) = stream_wire.as_get_records([kinesis.as_stream_record(change, 7, STREAM_ARN)])
    assert parsed["userIdentity"] == {"PrincipalId": "dynamodb.amazonaws.com", "Type": "Service"}
    assert "NewImage" not in parsed["dynamodb"]


def test_the_event_id_follows_the_change_not_the_delivery() -> None:
    doc = document("a", SECOND_US)
    first = kinesis.as_stream_record(kinesis.decode(delivered(doc, 1, event_id="x")), 1, STREAM_ARN)
    again = kinesis.as_stream_record(kinesis.decode(delivered(doc, 2, event_id="y")), 1, STREAM_ARN)
    other = kinesis.as_stream_record(kinesis.decode(document("a", SECOND_US + 1)), 1, STREAM_ARN)
    assert first["eventID"] == again["eventID"] != other["eventID"]


def test_a_stream_of_another_region_is_refused() -> None:
    change = kinesis.decode(document("a", SECOND_US))
    with pytest.raises(ValueError, match="eu-west-1"):
        kinesis.as_stream_record(change, 1, STREAM_ARN.replace(REGION, "eu-west-1"))
