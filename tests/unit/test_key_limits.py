"""What the detector derives from users' keys and names fits the limits of where it goes, for every
key DynamoDB allows (partition key values of 1 to 2,048 bytes: S text, N numbers, B as base64 text)
and every table and index name (up to 255 characters).

* Stats-table items: partition key at most 2,048 bytes, sort key at most 1,024 bytes, item at most
  400 KB ("Service, account, and table quotas" in the DynamoDB developer guide).
* SNS Publish: a message of at most 256 KB (262,144 bytes); a subject of printable text "with no line
  breaks or control characters, and less than 100 characters long".
* CloudWatch: a metric name of at most 255 characters.

``tests/property/test_long_keys.py`` drives such keys through the handler on moto; these tests pin
each bound at its worst case.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotkeys.detector.alerts.incidents import Message
from hotkeys.detector.alerts.messages import (
    Alert,
    sns_publish_arguments,
    subject,
)
from hotkeys.detector.alerts.rules import Reason, incident_key
from hotkeys.detector.consumer.layout import MAX_BUCKETS
from hotkeys.detector.consumer.snapshots import Written, snapshot_of, to_item
from hotkeys.detector.consumer.state import MAX_INDEX_NAME, MAX_RANGES
from hotkeys.detector.domain import summary
from hotkeys.detector.domain.diagnosis import Family, classify
from hotkeys.detector.domain.items import SPREAD, verdict
from hotkeys.detector.domain.sizing import image_size, utf8_len
from hotkeys.detector.handlers.app import index_metric_name
from hotkeys.detector.names import MAX_METRIC_NAME
from hotkeys.emulator.events import to_dynamodb_json
from tests.unit.test_state_size import INDEX_NAMES, fill
from tests.unit.test_summary import worst_case_keys

PARTITION_KEY_LIMIT, SORT_KEY_LIMIT, ITEM_LIMIT = 2048, 1024, 400_000
SNS_MESSAGE_LIMIT = 262_144
LONGEST_NAME = "n" * MAX_INDEX_NAME
KINDS = ["binary", "cjk", "emoji", "control"]


def item_size(item: dict[str, object]) -> int:
    """An item's size by DynamoDB's rules (names and values), from the plain values boto3 is given."""
    return image_size(to_dynamodb_json(item))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("index", [None, LONGEST_NAME])
@pytest.mark.parametrize("reason", [Reason.PARTITION_LIMIT, Reason.SHARE])
def test_an_incident_is_named_within_a_sort_key_whatever_its_key(kind: str, index: str | None, reason: str) -> None:
    # Given the longest keys of a kind (binary: 2,732 characters of base64)
    (key,) = worst_case_keys(kind, 1)
    # Then the incident's sort key fits DynamoDB's 1,024 bytes, its partition key (INC#<table>) 2,048
    name = incident_key(reason, key, index)
    assert utf8_len(name) <= SORT_KEY_LIMIT
    assert utf8_len(f"INC#{LONGEST_NAME}") <= PARTITION_KEY_LIMIT
    # and it names the index and the reason where a reader of the table would look for them
    assert name.startswith(f"index#{index}#{reason}#" if index else f"{reason}#")


@settings(max_examples=200, deadline=None)
@given(
    key=st.text(min_size=1, max_size=700),
    other=st.text(min_size=1, max_size=700),
    index=st.one_of(st.none(), st.text("abc_.-", min_size=3, max_size=255)),
)
def test_an_incident_name_is_one_per_key_reason_and_index(key: str, other: str, index: str | None) -> None:
    # The same incident always gets the same item (the conditional writes rely on it) ...
    assert incident_key(Reason.PARTITION_LIMIT, key, index) == incident_key(Reason.PARTITION_LIMIT, key, index)
    # ... and different keys, reasons or partitions (table or index) never share one, even when the
    # keys agree on their first kilobyte
    long_key, long_other = "x" * 1024 + key, "x" * 1024 + other
    assert (
        incident_key(Reason.PARTITION_LIMIT, long_key, index) == incident_key(Reason.PARTITION_LIMIT, long_other, index)
    ) == (key == other)
    assert incident_key(Reason.PARTITION_LIMIT, key, index) != incident_key(Reason.SHARE, key, index)
    assert incident_key(Reason.PARTITION_LIMIT, key) != incident_key(Reason.PARTITION_LIMIT, key, index or "idx")


def worst_alert(kind: str, status: str, index: str | None) -> Alert:
    """An alert that repeats a 2,048-byte key as often as the messages can: a write-sharded family whose
    stem and hottest shard are such keys (the remedy quotes both), under the longest names."""
    (key,) = worst_case_keys(kind, 1)
    stem = key[:-3] + "#"
    member = f"{stem}7"
    family = Family(stem, 10, 10**12, member, 10**11).verdict(60, 1000)
    items = verdict(None, True, True)
    assert items is None or items[0] != SPREAD  # the item verdict quotes no key
    return Alert(
        table=LONGEST_NAME,
        key=member,
        window_start=1_796_083_200,
        window_seconds=900,
        wcu=10**15,
        wcu_per_second=10**12,
        partition_wcu_limit=1000,
        alert_wcu_per_second=800.0,
        share=1.0,
        reason=Reason.PARTITION_LIMIT,
        status=status,
        peak_wcu_per_second=10**12,
        suggested_shards=10**9,
        started=1_796_083_200,
        lasted_seconds=10**6,
        index=index,
        pattern="write-sharded family",
        remedy=family,
        items="hot collection",
        items_advice="i" * 400,
    )


def publish_bytes(arguments: dict[str, object]) -> int:
    """What SNS counts toward its limit: the message and its attributes (names, types and values)."""
    attributes = arguments["MessageAttributes"]
    assert isinstance(attributes, dict)
    size = len(str(arguments["Message"]).encode("utf-8"))
    for name, value in attributes.items():
        size += len(name.encode()) + len(value["DataType"].encode()) + len(value["StringValue"].encode())
    return size


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("index", [None, LONGEST_NAME])
@pytest.mark.parametrize("status", list(Message))
def test_the_longest_alert_fits_one_sns_message(kind: str, index: str | None, status: str) -> None:
    alert = worst_alert(kind, status, index)
    arguments = sns_publish_arguments("arn:aws:sns:us-east-1:123456789012:hot-keys", alert)
    # The whole publish is within SNS's 256 KB, and every form still carries the whole key
    assert publish_bytes(arguments) <= SNS_MESSAGE_LIMIT
    structure = json.loads(str(arguments["Message"]))
    for form in ("default", "sqs", "lambda", "email-json"):
        assert json.loads(structure[form])["key"] == alert.key
    # and the subject is printable ASCII, shorter than 100 characters
    title = str(arguments["Subject"])
    assert len(title) < 100 and all(" " <= c <= "~" for c in title), title


@pytest.mark.parametrize("kind", KINDS)
def test_the_remedies_quote_a_long_key_by_its_start(kind: str) -> None:
    # A time-bucket key, and a shard family, of 2,048 bytes: their remedies stay a few hundred characters
    (key,) = worst_case_keys(kind, 1)
    dated = key[:-11] + "#2026-12-01"
    found = classify(dated, 0.5, 100)
    assert found is not None and found.pattern == "time bucket"
    assert len(found.remedy) < 600 and dated[:200] in found.remedy
    family = Family(key[:-1] + "#", 10, 100, key[:-1] + "#3", 30).verdict(60, 1000)
    assert len(family) < 700 and key[:200] in family


@pytest.mark.parametrize("text", ["line\nbreak", "bell\x07", "caf\u00e9", "\U0001f525 fire", "x" * 300, ""])
def test_a_subject_is_printable_ascii_under_100_characters(text: str) -> None:
    for index in (None, LONGEST_NAME):
        for status in tuple(Message):
            alert = worst_alert("binary", status, index)
            title = subject(Alert(**{**alert.__dict__, "key": text or "k", "table": "orders"}))
            assert len(title) < 100 and all(" " <= c <= "~" for c in title), title
    # and the key shows, escaped where it must be
    plain = subject(
        Alert(**{**worst_alert("binary", Message.FIRING, None).__dict__, "key": "line\nbreak", "table": "t"})
    )
    assert "line\\nbreak" in plain


def ascii_keys(count: int) -> list[str]:
    """2,048 random characters of 0x00-0x7F: 7 bits of entropy per byte, so zlib saves little."""
    rng = random.Random(7)
    return ["".join(chr(rng.randrange(128)) for _ in range(2048)) for _ in range(count)]


@pytest.mark.parametrize(
    ("kind", "count", "indexes", "items"),
    # Key counts that leave each summary just under its byte budget (one more key prunes it).
    [("ascii", 153, 0, 3), ("ascii", 107, 20, 3), ("binary", 116, 0, 3), ("emoji", 175, 20, 0)],
)
def test_a_snapshot_of_the_fullest_segment_fits_one_item(kind: str, count: int, indexes: int, items: int) -> None:
    # Given a segment filled to its byte budget with 2,048-byte keys, under the longest table name, with
    # indexes of 255-character names sharing the budget, and item figures of the heaviest keys
    keys = ascii_keys(count) if kind == "ascii" else worst_case_keys(kind, count)
    state = fill(keys, invocations=MAX_RANGES + 40, indexes=INDEX_NAMES[:indexes], items=items)
    (segment,) = state.segments.values()
    used = segment.summary.used_bytes + sum(index.used_bytes for index in segment.indexes.values())
    assert used > 0.9 * summary.MAX_SUMMARY_BYTES  # not vacuous: the summaries are near their budget
    shard = "shardId-" + "0" * 57  # the longest ShardId (65 characters)
    # When it is stored as one item (its head in the last of the most buckets a layout has)
    snapshot = snapshot_of(segment, shard, 900, summary.Counting(2000, 10), Written(at=2**40 + 0.5))
    item = to_item(snapshot, expires_at=2**40, bucket=MAX_BUCKETS - 1)
    # Then its keys and its size are within DynamoDB's limits (400 KB read as 400,000 bytes, the stricter)
    assert utf8_len(item["pk"]) <= PARTITION_KEY_LIMIT and utf8_len(item["sk"]) <= SORT_KEY_LIMIT
    assert item_size(item) <= ITEM_LIMIT


def test_index_metric_names_fit_cloudwatch_and_stay_apart() -> None:
    # A short pair keeps its readable name
    assert index_metric_name("orders", "by-status") == "IndexWriteUnits/orders/by-status"
    # The longest pairs are cut to CloudWatch's 255 characters, keep the prefix, and stay distinct
    names = {index_metric_name(LONGEST_NAME, f"{i:02d}".ljust(MAX_INDEX_NAME, "i")) for i in range(20)}
    assert len(names) == 20
    assert all(len(name) == MAX_METRIC_NAME and name.startswith("IndexWriteUnits/") for name in names)
    # and the same pair always gets the same name
    assert index_metric_name(LONGEST_NAME, LONGEST_NAME) == index_metric_name(LONGEST_NAME, LONGEST_NAME)


@pytest.mark.parametrize(
    ("reason", "status", "tag"),
    [
        (Reason.PARTITION_LIMIT, Message.FIRING, "[hot key] "),
        (Reason.PARTITION_LIMIT, Message.REMINDER, "[hot key, still] "),
        (Reason.PARTITION_LIMIT, Message.ESCALATED, "[escalated] "),
        (Reason.PARTITION_LIMIT, Message.RESOLVED, "[resolved] "),
        (Reason.SHARE, Message.FIRING, "[heavy share] "),
        (Reason.SHARE, Message.REMINDER, "[heavy share, still] "),
        (Reason.SHARE, Message.ESCALATED, "[escalated] "),
        (Reason.SHARE, Message.RESOLVED, "[resolved] "),
    ],
)
def test_a_subject_calls_a_share_of_table_alert_a_heavy_share_not_a_hot_key(
    reason: Reason, status: Message, tag: str
) -> None:
    # A share-of-table key is under its partition's limit: the verdict and top say "not hot"; so does the subject
    alert = Alert(
        table="profiles",
        key="celebrity#1",
        window_start=1_796_083_200,
        window_seconds=60,
        wcu=960,
        wcu_per_second=16.0,
        partition_wcu_limit=1000,
        alert_wcu_per_second=800.0,
        share=0.14,
        reason=reason,
        status=status,
        peak_wcu_per_second=16.0,
    )
    assert subject(alert).startswith(tag)
