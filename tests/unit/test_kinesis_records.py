"""Kinesis Data Streams for DynamoDB records: what the consumer reads from one, and what tells a copy."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotkeys.detector.consumer.seen import (
    HORIZON_SECONDS,
    MAX_SEEN,
    Seen,
    SeenChanges,
    SeenError,
    max_seen_bytes,
    max_seen_chars,
    sequence_tag,
)
from hotkeys.detector.consumer.state import LAMBDA_STATE_LIMIT_BYTES, max_state_bytes
from hotkeys.detector.domain.kinesis import (
    MAX_KINESIS_SEQUENCE_DIGITS,
    identity,
    is_kinesis,
    kinesis_sequence,
    unwrap,
)
from hotkeys.detector.domain.records import MalformedRecord, key_text, parse_change
from hotkeys.emulator.events import ItemChange, sequence_number, stream_record
from tests.kinesis_wire import change_document, kinesis_record, sequence
from tests.support import ttl_record, write_record

T0 = 1_764_460_800


def resolve(table: str, keys: dict[str, Any]) -> str:
    return "pk"


def delivered(record: dict[str, Any], position: int = 0, **document: Any) -> dict[str, Any]:
    return kinesis_record(change_document(record, **document), sequence(position), arrival=T0 + 1.5)


def test_a_kinesis_record_reads_as_the_same_change_its_stream_record_is() -> None:
    # Given one write as DynamoDB Streams and as Kinesis deliver it (microseconds past its second)
    stream = write_record("hot", 0, T0 + 7, payload_bytes=1500)
    record = delivered(stream, fraction=123_456)
    # When both are parsed
    unwrapped = unwrap(record)
    from_kinesis = parse_change(unwrapped.record, resolve, int(kinesis_sequence(record)))
    from_stream = parse_change(stream, resolve)
    # Then they are the same change but for its sequence number, and the precise time is kept beside it
    assert is_kinesis(record) and not is_kinesis(stream)
    assert (from_kinesis.table, from_kinesis.key, from_kinesis.event_time, from_kinesis.wcu, from_kinesis.size) == (
        from_stream.table,
        from_stream.key,
        from_stream.event_time,
        from_stream.wcu,
        from_stream.size,
    )
    assert unwrapped.created_us == (T0 + 7) * 1_000_000 + 123_456


@pytest.mark.parametrize(
    ("precision", "fraction", "expected_us"),
    [
        ("MICROSECOND", 999_999, (T0 + 7) * 1_000_000 + 999_999),
        ("MILLISECOND", 999, (T0 + 7) * 1_000_000 + 999_000),
        # No precision named: milliseconds, as AWS's sample reads it
        (None, 999, (T0 + 7) * 1_000_000 + 999_000),
    ],
)
def test_the_time_unit_follows_the_records_precision(precision: str | None, fraction: int, expected_us: int) -> None:
    record = delivered(write_record("k", 0, T0 + 7), precision=precision, fraction=fraction)
    unwrapped = unwrap(record)
    assert unwrapped.created_us == expected_us
    # the window is that of the second it was made in, rounded down as DynamoDB Streams rounds it
    assert unwrapped.record["dynamodb"]["ApproximateCreationDateTime"] == T0 + 7


def test_a_microsecond_time_without_its_precision_is_still_read_as_microseconds() -> None:
    document = change_document(write_record("k", 0, T0 + 7), precision="MICROSECOND", fraction=5)
    del document["dynamodb"]["ApproximateCreationDateTimePrecision"]
    unwrapped = unwrap(kinesis_record(document, sequence(0), arrival=T0))
    assert unwrapped.created_us == (T0 + 7) * 1_000_000 + 5


def test_binary_values_encoded_twice_read_as_a_stream_carries_them() -> None:
    # Given an item with a binary partition key, a binary set and a binary value in a nested map
    raw = base64.b64encode(b"\x00\xffkey").decode("ascii")
    stream = stream_record(
        ItemChange(
            "INSERT",
            keys={"pk": {"B": raw}},
            new_image={"pk": {"B": raw}, "set": {"BS": [raw]}, "m": {"M": {"b": {"B": raw}}}},
            typed=True,
        ),
        table="orders",
        sequence=sequence_number(0, 0),
        event_time=T0,
    )
    # When its Kinesis record is read
    unwrapped = unwrap(delivered(stream))
    # Then each binary value is the stream's again: the key's text and the item's size agree
    assert unwrapped.record["dynamodb"]["Keys"] == stream["dynamodb"]["Keys"]
    assert unwrapped.record["dynamodb"]["NewImage"] == stream["dynamodb"]["NewImage"]
    change = parse_change(unwrapped.record, resolve, 1)
    assert change.key == key_text({"B": raw})
    assert change.size == parse_change(stream, resolve).size


def test_a_binary_value_encoded_only_once_is_malformed() -> None:
    raw = base64.b64encode(b"\x00\xff").decode("ascii")
    stream = stream_record(
        ItemChange("INSERT", keys={"pk": {"B": raw}}, new_image={"pk": {"B": raw}}, typed=True),
        table="orders",
        sequence=sequence_number(0, 0),
        event_time=T0,
    )
    document = change_document(stream)
    document["dynamodb"]["Keys"] = stream["dynamodb"]["Keys"]  # as a DynamoDB stream carries it
    with pytest.raises(MalformedRecord, match="twice"):
        unwrap(kinesis_record(document, sequence(0), arrival=T0))


def _with_data(data: Any) -> dict[str, Any]:
    record = delivered(write_record("k", 0, T0))
    record["kinesis"]["data"] = data
    return record


def test_whitespace_around_the_change_is_json_and_allowed() -> None:
    document = change_document(write_record("k", 0, T0))
    record = _with_data(base64.b64encode(b" \n" + json.dumps(document).encode() + b"\n ").decode())
    assert unwrap(record).record["tableName"] == "orders"


def _with_change(**fields: Any) -> dict[str, Any]:
    document = change_document(write_record("k", 0, T0))
    for name, value in fields.items():
        if name.startswith("dynamodb_"):
            document["dynamodb"][name.removeprefix("dynamodb_")] = value
        else:
            document[name] = value
    return kinesis_record(document, sequence(0), arrival=T0)


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        (_with_data(None), "not a string"),
        (_with_data("not base64!"), "base64 JSON"),
        (_with_data(base64.b64encode(b"{not json").decode()), "base64 JSON"),
        (_with_data(base64.b64encode(b"\xff\xfe").decode()), "base64 JSON"),
        (_with_data(base64.b64encode(json.dumps([1]).encode()).decode()), "change document"),
        (_with_data(base64.b64encode(b"").decode()), "base64 JSON"),
        (_with_data(base64.b64encode(b"  ").decode()), "base64 JSON"),
        (_with_data(base64.b64encode(b'{"a": 1} {"b": 2}').decode()), "more than one"),
        (_with_change(tableName=None), "tableName"),
        (_with_change(tableName=""), "tableName"),
        (_with_change(dynamodb=[]), "dynamodb section"),
        (_with_change(dynamodb_ApproximateCreationDateTime="1764460800"), "integer epoch"),
        (_with_change(dynamodb_ApproximateCreationDateTime=1.5e15), "integer epoch"),
        (_with_change(dynamodb_ApproximateCreationDateTime=True), "integer epoch"),
        (_with_change(dynamodb_ApproximateCreationDateTimePrecision="NANOSECOND"), "Precision"),
        (_with_change(dynamodb_ApproximateCreationDateTimePrecision=["MICROSECOND"]), "Precision"),
        (_with_change(dynamodb_ApproximateCreationDateTimePrecision={"M": 1}), "Precision"),
    ],
)
def test_a_record_that_cannot_be_read_says_why(record: dict[str, Any], reason: str) -> None:
    with pytest.raises(MalformedRecord, match=reason):
        unwrap(record)


@pytest.mark.parametrize("value", [None, 123, "", "12a", "²", "١٢٣", "1" * (MAX_KINESIS_SEQUENCE_DIGITS + 1)])
def test_a_record_without_a_kinesis_sequence_number_has_no_identifier(value: Any) -> None:
    record = delivered(write_record("k", 0, T0))
    record["kinesis"]["sequenceNumber"] = value
    with pytest.raises(MalformedRecord, match="sequenceNumber"):
        kinesis_sequence(record)


def _identity_of(record: dict[str, Any]) -> bytes:
    unwrapped = unwrap(record)
    return identity(parse_change(unwrapped.record, resolve, 1), unwrapped)


def test_a_copy_has_the_changes_identity_whatever_its_event_id_sequence_and_arrival() -> None:
    stream = write_record("hot", 0, T0 + 3)
    document = change_document(stream, fraction=42, event_id="a")
    original = kinesis_record(document, sequence(0), arrival=T0 + 3.1)
    copy = kinesis_record({**document, "eventID": "b"}, sequence(9), arrival=T0 + 9.9)
    assert _identity_of(original) == _identity_of(copy)


@pytest.mark.parametrize(
    "other",
    [
        # the same item a microsecond later
        lambda: change_document(write_record("hot", 0, T0 + 3), fraction=43, event_id="a"),
        # another item at the same time
        lambda: change_document(write_record("cold", 0, T0 + 3), fraction=42, event_id="a"),
        # another event on the item
        lambda: change_document(write_record("hot", 0, T0 + 3, event_name="INSERT"), fraction=42, event_id="a"),
        # a record of another size (another image)
        lambda: change_document(write_record("hot", 0, T0 + 3, payload_bytes=101), fraction=42, event_id="a"),
        # a TTL deletion is a REMOVE of its own
        lambda: change_document(ttl_record("hot", 0, T0 + 3), fraction=42, event_id="a"),
    ],
)
def test_another_change_has_another_identity(other: Any) -> None:
    original = change_document(write_record("hot", 0, T0 + 3), fraction=42, event_id="a")
    assert _identity_of(kinesis_record(original, sequence(0), arrival=T0)) != _identity_of(
        kinesis_record(other(), sequence(1), arrival=T0)
    )


def _counter(value: int, **document: Any) -> dict[str, Any]:
    """A counter item changed from ``value`` to ``value + 1``: every such change has the same sizes."""
    stream = stream_record(
        ItemChange(
            "MODIFY",
            keys={"pk": "post"},
            old_image={"pk": "post", "n": value},
            new_image={"pk": "post", "n": value + 1},
        ),
        table="orders",
        sequence=sequence_number(0, value),
        event_time=T0,
    )
    return kinesis_record(change_document(stream, **document), sequence(value), arrival=T0)


def test_at_millisecond_precision_two_changes_in_one_unit_are_told_apart_by_their_images() -> None:
    assert _identity_of(_counter(5, precision="MILLISECOND", fraction=1)) != _identity_of(
        _counter(6, precision="MILLISECOND", fraction=1)
    )
    # and a copy, whatever order its images' attributes come in, is still the change
    copy = _counter(5, precision="MILLISECOND", fraction=1, event_id="x")
    document = json.loads(base64.b64decode(copy["kinesis"]["data"]))
    document["dynamodb"]["NewImage"] = dict(reversed(list(document["dynamodb"]["NewImage"].items())))
    copy["kinesis"]["data"] = base64.b64encode(json.dumps(document).encode()).decode()
    assert _identity_of(copy) == _identity_of(_counter(5, precision="MILLISECOND", fraction=1))


def test_at_microsecond_precision_the_images_are_not_read_for_the_identity() -> None:
    # two changes of one item in the same microsecond with records of the same size are taken for one: the
    # bound docs/decisions.md §82 states (the images are not serialized at this precision: it is per-record CPU)
    assert _identity_of(_counter(5, fraction=1)) == _identity_of(_counter(6, fraction=1))


def test_another_table_gives_another_identity() -> None:
    original = change_document(write_record("hot", 0, T0 + 3), fraction=42, event_id="a")
    elsewhere = {**original, "tableName": "payments"}
    assert _identity_of(kinesis_record(original, sequence(0), arrival=T0)) != _identity_of(
        kinesis_record(elsewhere, sequence(1), arrival=T0)
    )


# -- the shard's memory of recent changes ---------------------------------------------------------------
def test_a_change_is_new_once_then_repeated_under_another_record_and_read_again_under_its_own() -> None:
    seen = SeenChanges()
    assert seen.check(T0, b"abcdef", 7) is Seen.NEW
    seen.add(T0, b"abcdef", 7)
    assert seen.check(T0, b"abcdef", 8) is Seen.REPEATED  # a copy: another sequence number
    assert seen.check(T0, b"abcdef", 7) is Seen.READ_AGAIN  # the record itself, read again
    assert seen.check(T0 + 1, b"abcdef", 8) is Seen.NEW  # its second is part of the identity's place
    # two records of one shard in the Lambda developer guide's examples: their low bits name the shard, the same
    first, second = (
        49590338271490256608559692538361571095921575989136588898,
        49590338271490256608559692540925702759324208523137515618,
    )
    assert first & 0xFFFFFFFF == second & 0xFFFFFFFF
    assert sequence_tag(first) != sequence_tag(second) and sequence_tag(first) == sequence_tag(first)


def test_a_memory_read_back_in_the_wrong_order_or_with_an_empty_second_is_refused() -> None:
    seen = SeenChanges()
    seen.add(T0, b"aaaaaa", 1)
    seen.add(T0 + 1, b"bbbbbb", 2)
    raw = seen.to_bytes()
    floor, first, second = raw[:8], raw[8 : 8 + 12 + 10], raw[8 + 12 + 10 :]
    for hostile in (
        floor + second + first,
        floor + first + first,
        floor + raw[8:20].replace(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00"),
    ):
        with pytest.raises(SeenError):
            SeenChanges.from_bytes(hostile)


def test_changes_older_than_the_horizon_are_forgotten_and_said_to_be_beyond_it() -> None:
    seen = SeenChanges()
    seen.add(T0, b"000001", 1)
    seen.add(T0 + HORIZON_SECONDS, b"000002", 2)
    # still held: the horizon reaches back exactly HORIZON_SECONDS
    assert seen.check(T0, b"000001", 9) is Seen.REPEATED
    seen.add(T0 + HORIZON_SECONDS + 1, b"000003", 3)
    assert seen.check(T0, b"000001", 9) is Seen.BEYOND_HORIZON
    assert seen.check(T0 + 1, b"000009", 9) is Seen.NEW
    assert seen.size == 2


def test_the_memory_holds_at_most_max_seen_changes_forgetting_the_oldest_seconds() -> None:
    seen = SeenChanges()
    for index in range(MAX_SEEN + 10):
        seen.add(T0 + index * HORIZON_SECONDS // (MAX_SEEN + 10), index.to_bytes(6, "big"), index)
    assert seen.size <= MAX_SEEN
    assert seen.floor is not None and seen.floor > T0
    assert seen.check(T0, (0).to_bytes(6, "big"), 0) is Seen.BEYOND_HORIZON


def test_one_second_alone_over_max_seen_is_forgotten_too_and_its_later_records_are_beyond_the_horizon() -> None:
    # (a throttled table caught up: many changes made in one second)
    seen = SeenChanges()
    for index in range(MAX_SEEN + 1):
        seen.add(T0, index.to_bytes(6, "big"), index)
    assert seen.size <= MAX_SEEN
    assert seen.check(T0, b"zzzzzz", 1) is Seen.BEYOND_HORIZON
    assert len(seen.to_bytes()) <= max_seen_bytes()


@given(
    st.lists(st.tuples(st.integers(0, 100), st.binary(min_size=6, max_size=6), st.integers(0, 2**32 - 1)), max_size=200)
)
def test_the_memory_reads_back_as_it_was_written(changes: list[tuple[int, bytes, int]]) -> None:
    seen = SeenChanges()
    for second, digest, tag in changes:
        seen.add(T0 + second, digest, tag)
    again = SeenChanges.from_text(seen.to_text())
    assert SeenChanges.from_bytes(seen.to_bytes()).entries() == again.entries()
    assert (again.entries(), again.floor, again.newest, again.size) == (
        seen.entries(),
        seen.floor,
        seen.newest,
        seen.size,
    )
    # a second read back stays packed until looked up, and is written back as it came
    assert again.to_bytes() == seen.to_bytes()


def test_a_full_memory_fits_its_bound_and_the_state_still_fits_lambdas_limit() -> None:
    seen = SeenChanges()
    for index in range(MAX_SEEN):
        seen.add(T0 + index % (HORIZON_SECONDS + 1), index.to_bytes(6, "big"), index)
    assert seen.size == MAX_SEEN
    assert len(seen.to_text()) <= max_seen_chars()
    assert len(seen.to_bytes()) <= max_seen_bytes() < 400 * 1024  # (one stats-table item)
    assert max_state_bytes() < LAMBDA_STATE_LIMIT_BYTES


def test_a_millisecond_identity_digests_the_documented_text_so_stored_memories_still_match() -> None:
    # (a shard's memory is stored across windows and deploys: the digest of one change must not move)
    import hashlib

    record = _counter(5, precision="MILLISECOND", fraction=1)
    stream = json.loads(base64.b64decode(record["kinesis"]["data"]))["dynamodb"]
    images = json.dumps(
        [stream["OldImage"], stream["NewImage"]], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    text = f"orders\x1fMODIFY\x1fpost\x1f\x1f{(T0 * 1_000 + 1) * 1_000}\x1f{stream['SizeBytes']}\x1f{images}"
    assert _identity_of(record) == hashlib.blake2b(text.encode(), digest_size=6).digest()


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
FIELDS = ["tableName", "eventName", "userIdentity", "dynamodb"]
SECTION = ["ApproximateCreationDateTime", "ApproximateCreationDateTimePrecision", "Keys", "NewImage", "OldImage"]


@given(st.sampled_from(FIELDS + SECTION), JSON_VALUES)
def test_any_value_in_any_field_is_read_or_refused_as_malformed_never_an_error(field: str, value: Any) -> None:
    # (a record that raised anything else would fail its whole invocation, not itself)
    document = change_document(write_record("k", 0, T0))
    if field in SECTION:
        document["dynamodb"][field] = value
    else:
        document[field] = value
    record = kinesis_record(document, sequence(0), arrival=T0)
    try:
        unwrapped = unwrap(record)
        change = parse_change(unwrapped.record, resolve, 1)
        identity(change, unwrapped)
    except MalformedRecord:
        pass
