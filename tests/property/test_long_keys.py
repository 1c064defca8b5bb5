"""Keys of every length and type DynamoDB allows, through the real handler on moto.

"The minimum length of a partition key value is 1 byte. The maximum length is 2048 bytes"; sort key
values 1 to 1,024 bytes; items at most 400 KB (DynamoDB developer guide, "Service, account, and
table quotas"). The detector names what it stores after the keys it sees (incidents, snapshots, the
window catalog), and a stored key over its limit fails the write: the invocation fails, Lambda
retries and finally dead-letters the batch, and the alert never goes out.

Each example makes one key hot, as a table's partition key or as a global secondary index's (with
index and table names up to 255 characters): S values of 1- to 4-byte UTF-8 characters, N values of
up to 38 digits, B values of up to 2,048 raw bytes (base64 text in the stream). The records run
through the deployed handler (``app.build_handler``) under the event source mapping emulation, over
three stream shards; the test reads what subscribers and ``hotkeys top`` see, and every item the
stats table holds.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hotkeys.cli.main import main
from hotkeys.cli.replay import FakeLambdaContext
from hotkeys.deployment import EventSourceSettings
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.config import load_settings
from hotkeys.detector.consumer.pipeline import Ports
from hotkeys.detector.domain.sizing import image_size, utf8_len, write_units
from hotkeys.detector.handlers.app import Container, build_handler
from hotkeys.emulator.emulation import Containers, Deployment, emulate
from hotkeys.emulator.esm import ShardRun
from hotkeys.emulator.events import ItemChange, sequence_number, stream_arn, stream_record, to_dynamodb_json
from hotkeys.emulator.lanes import EventSourceMapping
from hotkeys.emulator.local import create_stats_table
from tests.integration.test_alerts import delivered

T0 = 1_796_083_200
SHARDS = 3
# The partition limit scaled down (alerts at 8 WCU/s) keeps an example to a few hundred records.
PARTITION_LIMIT = 10
HOT_WRITES_PER_SECOND, HOT_SECONDS, HOT_START = 4, 15, 5
# Items of ~2.6 KB: 3 write units each, so the hot key writes 12 WCU/s on the table and on an index
# projecting ALL, whatever its own length.
ITEM_BYTES = 2_600
# DynamoDB's limits ("Service, account, and table quotas").
PARTITION_KEY_LIMIT, SORT_KEY_LIMIT, ITEM_LIMIT = 2048, 1024, 400 * 1024
INDEX_ATTRIBUTE = "gk"
NAME_CHARACTERS = string.ascii_letters + string.digits + "_.-"
# Code points of each UTF-8 width (surrogates are not characters).
WIDTHS = {1: (0x00, 0x7F), 2: (0x80, 0x7FF), 3: (0x800, 0xFFFF), 4: (0x10000, 0x10FFFF)}


@dataclass(frozen=True)
class Key:
    kind: str  # S, N or B
    value: str  # as the stream delivers it: B as base64 text
    size: int  # bytes, as DynamoDB counts a key's length

    @property
    def typed(self) -> dict[str, str]:
        return {self.kind: self.value}


@dataclass(frozen=True)
class Case:
    key: Key
    table: str
    index: str | None  # None: the key is the table's partition key; else this GSI's


def string_key(size: int, widths: frozenset[int], seed: int) -> Key:
    """``size`` bytes of UTF-8 in characters of the given widths (1-byte ones where no other fits)."""
    rng = random.Random(seed)
    characters, used = [], 0
    while used < size:
        width = rng.choice([w for w in sorted(widths) if w <= size - used] or [1])
        low, high = WIDTHS[width]
        code = rng.randint(low, high)
        while 0xD800 <= code <= 0xDFFF:
            code = rng.randint(low, high)
        characters.append(chr(code))
        used += width
    text = "".join(characters)
    assert len(text.encode("utf-8")) == size
    return Key("S", text, size)


def number_key(digits: int, point: int, negative: bool, seed: int) -> Key:
    """A number of ``digits`` significant digits (38 at most), in DynamoDB's canonical form."""
    rng = random.Random(seed)
    body = [str(rng.randint(1, 9))] + [str(rng.randint(0, 9)) for _ in range(digits - 2)]
    if digits > 1:
        body.append(str(rng.randint(1, 9)))  # a fraction never ends in zero
    text = "".join(body)
    if 0 < point < digits:
        text = f"{text[:point]}.{text[point:]}"
    text = ("-" if negative else "") + text
    return Key("N", text, len(text))


def binary_key(size: int, seed: int) -> Key:
    return Key("B", base64.b64encode(random.Random(seed).randbytes(size)).decode("ascii"), size)


lengths = st.one_of(st.integers(1, 2048), st.sampled_from([1, 1000, 1024, 1025, 2047, 2048]))
seeds = st.integers(0, 2**32)
keys = st.one_of(
    st.builds(string_key, lengths, st.frozensets(st.integers(1, 4), min_size=1), seeds),
    st.builds(number_key, st.integers(1, 38), st.integers(0, 38), st.booleans(), seeds),
    st.builds(binary_key, lengths, seeds),
)


def names(min_size: int = 3) -> st.SearchStrategy[str]:
    """Table and index names: 3 to 255 of [a-zA-Z0-9_.-] ("all" means every index to `hotkeys top`)."""
    long_ones = st.integers(200, 255).map(lambda n: "n" * n)
    short_ones = st.text(NAME_CHARACTERS, min_size=min_size, max_size=255)
    return st.one_of(short_ones, long_ones).filter(lambda name: name != "all")


cases = st.builds(Case, keys, names(), st.one_of(st.none(), names()))


def image_with(case: Case, pk: dict[str, str], position: int, hot: bool) -> dict[str, Any]:
    image: dict[str, Any] = {"pk": pk, "n": {"N": str(position)}}
    if hot:
        if case.index is not None:
            image[INDEX_ATTRIBUTE] = case.key.typed
        image["payload"] = {"S": "p" * max(0, ITEM_BYTES - case.key.size)}
    return image


def workload(case: Case) -> list[list[dict[str, Any]]]:
    """Per stream shard, in order: the key hot on shard 0 from second 5 to 20 (4 writes/s of 3 units,
    12 WCU/s); quiet writes on every shard for two windows (the second resolves the incident). An
    index key also gets a write every 20 s on the other shards (an index partition takes writes from
    every table partition)."""
    shards: list[list[tuple[float, str, dict[str, Any], bool]]] = [[] for _ in range(SHARDS)]
    hot_count = HOT_WRITES_PER_SECOND * HOT_SECONDS
    for i in range(hot_count):
        when = T0 + HOT_START + i / HOT_WRITES_PER_SECOND
        pk = case.key.typed if case.index is None else {"S": f"item#hot#{i}"}
        shards[0].append((when, "MODIFY" if case.index is None else "INSERT", pk, True))
    for shard in range(SHARDS):
        for second in range(0, 120, 10):
            shards[shard].append((T0 + second + 0.5, "MODIFY", {"S": f"quiet#{shard}#{second % 30}"}, False))
        if case.index is not None and shard:
            for second in range(0, 120, 20):
                shards[shard].append((T0 + second + 0.7, "INSERT", {"S": f"item#{shard}#{second}"}, True))
    records = []
    for shard, events in enumerate(shards):
        events.sort(key=lambda event: event[0])
        records.append(
            [
                stream_record(
                    ItemChange(
                        event_name=name,
                        keys={"pk": pk},
                        new_image=image_with(case, pk, position, hot),
                        old_image=None if name == "INSERT" else image_with(case, pk, position, hot),
                        typed=True,
                    ),
                    table=case.table,
                    sequence=sequence_number(shard, position),
                    event_time=int(when),
                )
                for position, (when, name, pk, hot) in enumerate(events)
            ]
        )
    return records


def create_source_table(case: Case) -> None:
    """The watched table (DescribeTable tells the function its indexes): keyed by ``pk`` of the key's
    type, or by an S ``pk`` with the index on ``gk`` of the key's type projecting ALL."""
    key_type = case.key.kind if case.index is None else "S"
    definitions = [{"AttributeName": "pk", "AttributeType": key_type}]
    indexes: dict[str, Any] = {}
    if case.index is not None:
        definitions.append({"AttributeName": INDEX_ATTRIBUTE, "AttributeType": case.key.kind})
        indexes["GlobalSecondaryIndexes"] = [
            {
                "IndexName": case.index,
                "KeySchema": [{"AttributeName": INDEX_ATTRIBUTE, "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ]
    boto3.client("dynamodb").create_table(
        TableName=case.table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=definitions,
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        **indexes,
    )


def alert_topic() -> dict[str, str]:
    sns, sqs, name = boto3.client("sns"), boto3.client("sqs"), uuid.uuid4().hex[:8]
    topic_arn = sns.create_topic(Name=f"hot-keys-{name}")["TopicArn"]
    queue_url = sqs.create_queue(QueueName=f"alert-copies-{name}")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn)
    return {"arn": topic_arn, "queue": queue_url}


def stored_size(name: str, value: Any) -> int:
    return utf8_len(name) + image_size(to_dynamodb_json({"v": value})) - 1


def assert_within_dynamodb_limits(item: dict[str, Any]) -> None:
    assert utf8_len(item["pk"]) <= PARTITION_KEY_LIMIT, item["pk"][:80]
    assert utf8_len(item["sk"]) <= SORT_KEY_LIMIT, item["sk"][:80]
    assert sum(stored_size(name, value) for name, value in item.items()) <= ITEM_LIMIT


@dataclass(frozen=True)
class Run:
    stats_table: str
    alert_queue: str
    shards: list[ShardRun]


def consume(case: Case) -> Run:
    """The key's workload through the deployed handler (``app.build_handler``, settings from its
    environment) under the deployment's emulation (every shard side by side, the judge on its schedule),
    into a stats table and an alert topic (with an SQS subscriber) of the example's own."""
    stats = f"hotkeys-stats-{uuid.uuid4().hex[:8]}"
    create_stats_table(boto3.client("dynamodb"), stats)
    topic = alert_topic()
    environment = {
        "STATS_TABLE_NAME": stats,
        "ALERT_TOPIC_ARN": topic["arn"],
        "PARTITION_WCU_LIMIT": str(PARTITION_LIMIT),
        "SHARE_MIN_WCU": str(10**9),
    }
    settings = load_settings(environment)

    def deployed(ports: Ports) -> Any:
        handler = build_handler(lambda: Container(settings, ports))
        return lambda event: handler(event, FakeLambdaContext())

    mapping = EventSourceSettings(batch_size=40, tumbling_window_seconds=60, retry_attempts=2)
    lineages = [
        [(f"shardId-{shard:020d}-{uuid.uuid4().hex[:8]}", records)] for shard, records in enumerate(workload(case))
    ]
    emulated = emulate(
        Deployment(settings, AwsClients()),
        lineages,
        mapping=EventSourceMapping(mapping, stream_arns=[stream_arn(case.table)] * len(lineages)),
        containers=Containers(handler=deployed),
    )
    shards = [run for runs in emulated.runs for run in runs]
    return Run(stats, topic["queue"], shards)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=cases)
# The incident of issue #23: a ~1,000-byte key, hot on its table ("partition_limit#" + key > 1,024 bytes).
@example(case=Case(Key("S", "k" * 1010, 1010), "tickets", None))
# The longest of each type, as a table key under the longest table name.
@example(case=Case(string_key(2048, frozenset({4}), 1), "t" * 255, None))
@example(case=Case(binary_key(2048, 2), "tickets", None))
@example(case=Case(number_key(38, 19, True, 3), "tickets", None))
# The longest index keys under the longest index and table names.
@example(case=Case(string_key(2048, frozenset({3}), 4), "t" * 255, "i" * 255))
@example(case=Case(binary_key(2048, 5), "orders", "i" * 255))
def test_a_hot_key_of_any_documented_length_alerts_and_is_stored(
    case: Case, aws: None, capsys: pytest.CaptureFixture
) -> None:
    # Given the watched table (one moto backend for all examples; each has its own tables and topic)
    create_source_table(case)
    try:
        # When the deployed handler consumes its three stream shards, the key hot on one of them
        run = consume(case)
    finally:
        boto3.client("dynamodb").delete_table(TableName=case.table)
    # Then no invocation failed and nothing went to the dead-letter queue
    assert [(shard.function_errors, len(shard.dead_letters)) for shard in run.shards] == [(0, 0)] * SHARDS
    # and subscribers got one firing and one resolved message naming the whole key
    alerts = delivered(run.alert_queue)
    assert Counter((a["index"], a["key"], a["status"]) for a in alerts) == Counter(
        {(case.index, case.key.value, "firing"): 1, (case.index, case.key.value, "resolved"): 1}
    )
    assert all(a["table"] == case.table and a["reason"] == "partition_limit" for a in alerts)
    # and the incident is stored once, resolved, with the whole key
    table = boto3.resource("dynamodb").Table(run.stats_table)
    incidents = table.query(KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": f"INC#{case.table}"})
    assert [(i["key"], i.get("index_name"), i["status"], "pending" in i) for i in incidents["Items"]] == [
        (case.key.value, case.index, "resolved", False)
    ]
    # and every item of the stats table (the incident, the layout, the snapshots) is within DynamoDB's limits
    items = table.scan()["Items"]
    kinds = Counter(str(item["pk"]).split("#", 1)[0] for item in items)
    assert kinds["INC"] == 1 and kinds["LAYOUT"] == 1 and kinds["SEG"] >= SHARDS
    for item in items:
        assert_within_dynamodb_limits(item)
    # and `hotkeys top` reads the key back whole, with all its writes in the burst's window
    capsys.readouterr()  # the handler's log lines
    # (names may start with "-": given as --table=NAME)
    index = [f"--index={case.index}"] if case.index is not None else []
    arguments = ["top", "--stats-table", run.stats_table, f"--table={case.table}", "--since", "2026-12-01", "--json"]
    assert main([*arguments, *index]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    hot = HOT_WRITES_PER_SECOND * HOT_SECONDS
    background = 0 if case.index is None else (SHARDS - 1) * 3  # seconds 0, 20 and 40 of window 0
    assert (rows[0]["key"], rows[0]["index"], rows[0]["writes"]) == (case.key.value, case.index, hot + background)
    assert rows[0]["window_start"] == "2026-12-01T00:00:00Z"


def test_the_examples_reach_the_documented_extremes() -> None:
    # The builders make what they say: 2,048 bytes of 4-byte characters, of raw binary, 38 digits
    assert string_key(2048, frozenset({4}), 1).value.encode("utf-8").__len__() == 2048
    assert len(string_key(2048, frozenset({4}), 1).value) == 512
    assert len(base64.b64decode(binary_key(2048, 2).value)) == 2048
    assert sum(c.isdigit() for c in number_key(38, 19, True, 3).value) == 38
    # and a hot item of the longest key is 3 write units, as the workload assumes
    case = Case(binary_key(2048, 2), "tickets", None)
    assert write_units(image_size(image_with(case, case.key.typed, 0, True))) == 3
    assert write_units(image_size(image_with(Case(Key("S", "k", 1), "t", None), {"S": "k"}, 0, True))) == 3
