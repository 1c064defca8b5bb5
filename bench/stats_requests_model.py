"""The counting model of ``bench.stats_requests``: a run's shape and its shards' records, the deployment
it runs against (scaled with the run), and the count of a container's requests per operation and source."""

from __future__ import annotations

import dataclasses
import os
import random
import sys
from collections import Counter
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any

from bench.shapes import T0, TABLE, zipf_key
from hotkeys.emulator.events import ItemChange, sequence_number, stream_record, to_dynamodb_json

if TYPE_CHECKING:
    import boto3

    from hotkeys.deployment import EventSourceSettings
    from hotkeys.detector.adapters.aws import AwsClients
    from hotkeys.detector.config import Settings

WINDOW = 60
PARTITION_LIMIT = 1000  # WCU/s one partition serves: the detector's default


@dataclass(frozen=True)
class Run:
    shards: int
    rate: int  # records per second per shard
    indexes: str  # "spread" or "3 values"
    windows: int = 3
    body: int = 850  # bytes of the items' filler: ~1 KB items, 1 WCU each
    # Seconds of records per batch: 1 as a saturated shard's batches of 1,000 fill; more (up to the 5 s
    # batching window) cuts the invocations a wide run takes turns for, not the requests (they follow
    # flushes, in event time).
    batch_seconds: int = 1

    @property
    def limit(self) -> int:
        """The partition limit the detector runs with: the shard's write units per second (saturated).
        1,000 (the real one) at 1,000 records/s of ~1 KB; scaled down with the rate (module doc)."""
        return self.rate

    @property
    def scale(self) -> float:
        return self.limit / PARTITION_LIMIT

    @property
    def name(self) -> str:
        scaled = "" if self.limit == PARTITION_LIMIT else f" (scaled: limit {self.limit} WCU/s)"
        if self.batch_seconds != 1:
            scaled += f", batches of {self.batch_seconds} s"
        return (
            f"{self.shards} shard{'s' if self.shards > 1 else ''}, {self.rate:,} records/s of ~1 KB{scaled}, "
            f"index keys: {self.indexes}"
        )


def shard_records(run: Run, shard: int, seed: int = 1) -> list[dict[str, Any]]:
    """The shard's records. Images are DynamoDB JSON whose attribute values are shared between records
    (read-only, as the handler reads them): a 100-shard run holds 180,000 records at once, and one
    typed-value dict per attribute and record would be most of the benchmark's memory."""
    rng = random.Random(seed * 1000 + shard)
    body = "x" * run.body
    values: dict[Any, dict[str, Any]] = {}

    def typed(image: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for name, value in image.items():
            shared = values.get(value)
            if shared is None:
                shared = values[value] = to_dynamodb_json({name: value})[name]
            out[name] = shared
        return out

    out = []
    for position in range(run.rate * WINDOW * run.windows):
        key = f"s{shard}#{zipf_key(rng)}"
        item: dict[str, Any] = {"pk": key, "body": body, "ts": str(T0 + position)}
        for number in range(5):
            item[f"a{number}"] = (
                rng.choice(("alpha", "beta", "gamma")) if run.indexes == "3 values" else f"v{rng.randrange(10_000)}"
            )
        draw = rng.random()
        if draw < 0.3:
            name, new, old, ttl = "INSERT", item, None, False
        elif draw < 0.8:
            name, new, old, ttl = "MODIFY", item, {**item, "ts": str(T0)}, False
        elif draw < 0.9:
            name, new, old, ttl = "REMOVE", None, item, False
        else:
            name, new, old, ttl = "REMOVE", None, {**item, "expireAt": T0 - 3600}, True
        out.append(
            stream_record(
                ItemChange(
                    event_name=name,
                    keys=typed({"pk": key}),
                    new_image=typed(new) if new is not None else None,
                    old_image=typed(old) if old is not None else None,
                    ttl_delete=ttl,
                    typed=True,
                ),
                table=TABLE,
                sequence=sequence_number(shard, position),
                event_time=T0 + position // run.rate,
            )
        )
    values.clear()
    return out


class Counting:
    """Requests per operation, from botocore's provide-client-params hook on a container's clients."""

    def __init__(self, stats_table: str) -> None:
        self.stats_table = stats_table
        self.stats: Counter[str] = Counter()  # operation (and index for Query) → requests
        self.other: Counter[str] = Counter()
        self.sources: Counter[str] = Counter()  # "operation: adapter method ← its caller" → requests

    def attach(self, aws: AwsClients) -> None:
        for client in (
            aws.resource("dynamodb").meta.client,
            aws.client("dynamodb"),
            aws.client("sns"),
            aws.client("s3"),
        ):
            client.meta.events.register("provide-client-params.*.*", self._count)

    def _count(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        if params.get("TableName") == self.stats_table:
            index = params.get("IndexName")
            self.stats[f"{model.name} ({index})" if index else model.name] += 1
            self.sources[f"{model.name}: {_source()}"] += 1
        else:
            self.other[model.name] += 1


def _source() -> str:
    """The detector's adapter method that made the request, and the detector function that called it."""
    frame: FrameType | None = sys._getframe(2)
    adapter = caller = None
    while frame is not None:
        path = frame.f_code.co_filename.replace(os.sep, "/")
        if "hotkeys/detector/" in path and not path.endswith("stats_schema.py"):
            name = frame.f_code.co_qualname
            if adapter is None and "/adapters/" in path:
                adapter = name
            elif adapter is not None and "/adapters/" not in path:
                caller = name
                break
        frame = frame.f_back
    return f"{adapter} ← {caller}"


@dataclass(frozen=True)
class ScaledSettings:
    """The detector's settings and its event source mapping's, both scaled with the run (module doc)."""

    settings: Settings
    mapping: EventSourceSettings


@dataclass(frozen=True)
class Measured:
    """What a run counted: the requests, the incidents stored, the records and the invocations."""

    counting: Counting
    incidents: list[dict[str, Any]]
    records: int
    invocations: int


def create_resources(run: Run, suffix: str) -> ScaledSettings:
    """The stats table, the source table (five GSIs), the alert topic and the archive bucket on the current
    endpoint; returns the detector's settings and the mapping's (both scaled with the run)."""
    import boto3

    from bench.shapes import table_description
    from hotkeys.deployment import EVENT_SOURCE
    from hotkeys.detector.config import Settings, default_of
    from hotkeys.emulator.local import create_stats_table

    dynamodb = boto3.client("dynamodb")
    create_stats_table(dynamodb, f"stats-{suffix}")
    description = table_description([{"AttributeName": "pk", "KeyType": "HASH"}], 5)["Table"]
    dynamodb.create_table(
        TableName=TABLE,
        KeySchema=description["KeySchema"],
        AttributeDefinitions=description["AttributeDefinitions"],
        GlobalSecondaryIndexes=[
            {"IndexName": index["IndexName"], "KeySchema": index["KeySchema"], "Projection": index["Projection"]}
            for index in description["GlobalSecondaryIndexes"]
        ],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    topic = boto3.client("sns").create_topic(Name=f"alerts-{suffix}")["TopicArn"]
    boto3.client("s3").create_bucket(Bucket=f"archive-{suffix}")
    settings = Settings(
        stats_table_name=f"stats-{suffix}",
        alert_topic_arn=topic,
        archive_bucket_name=f"archive-{suffix}",
        ttl_attribute="expireAt",
        partition_wcu_limit=run.limit,
        share_min_wcu=round(default_of("share_min_wcu") * run.scale),
    )
    # The mapping's batches fill in as much event time as a saturated shard's 1,000 records do.
    batch = max(1, round(EVENT_SOURCE.batch_size * run.scale)) * run.batch_seconds
    mapping = dataclasses.replace(EVENT_SOURCE, batch_size=batch)
    function_sees(mapping)
    return ScaledSettings(settings, mapping)


def function_sees(mapping: Any) -> None:
    """The function knows the deployed mapping's batch size (a batch short of it was cut by the batching
    window: ``pipeline._flush_due``): in a scaled run, the scaled one."""
    import hotkeys.detector.consumer.pipeline

    hotkeys.detector.consumer.pipeline.EVENT_SOURCE = mapping  # type: ignore[attr-defined]


def counted_clients(session: boto3.session.Session, counting: Counting) -> AwsClients:
    """A container's AWS clients (its own, on the shared session), counted."""
    from hotkeys.detector.adapters.aws import AwsClients

    aws = AwsClients(session=session)
    counting.attach(aws)
    return aws
