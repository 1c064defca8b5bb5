"""``hotkeys cost --source kinesis``: what reading a Kinesis data stream (Kinesis Data Streams for DynamoDB)
costs the detector, beside the same model's Lambda, stats-table and CloudWatch lines.

On a shared stream the team already pays for the stream and for DynamoDB's change data capture units: the
detector's share is its reads (and, with ``--enhanced-fan-out``, its consumer). With
``--stream-made-by-stack`` (``-c enableKinesis=true``) the stack made the stream, so its hours and writes
are the detector's too. Prices are inputs, each dated with its source below; ``cost.PRICES`` holds the rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hotkeys.detector.consumer.seen import ENTRY_BYTES, HORIZON_SECONDS, MAX_SEEN, max_seen_bytes

MODES = ("on-demand", "provisioned")
# The stack's own stream (-c enableKinesis=true) is on-demand (docs/deploy.md).
STACK_STREAM_MODE = "on-demand"
HOURS_PER_MONTH = 30 * 24
SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600
# The pricing page counts a KB as 1,024 bytes ("rounded up to the nearest 1 KB (1,024 bytes)"); it does not
# define its GB, priced here as 1,024 of those KB times 1,024. A GB of 10^9 bytes would make every per-GB
# line larger by 1,024^3 / 10^9.
KB_BYTES = 1024
GB_BYTES = 1024**3

# Kinesis Data Streams prices, us-east-1, read 2026-12-07 (the AWS pricing page itself renders its price
# table from tokens the stored copies lack; each figure below names the page it was read from).
# On-demand (Standard): $0.04 per stream hour, $0.08 per GB written, and enhanced fan-out reads at $0.05 per
# GB per consumer: AWS Big Data Blog, "Kinesis On-demand Advantage saves 60%+ on streaming costs", 2026-03-09,
# "All prices displayed in this post are from the us-east-1 Region"
# (https://aws.amazon.com/blogs/big-data/kinesis-on-demand-advantage-saves-60-on-streaming-costs/).
# Data written is billed per record rounded up to 1 KB: "if your data records are 4.5 KB each, Kinesis Data
# Streams will count each record as 5 KB of data ingested" (https://aws.amazon.com/kinesis/data-streams/pricing/).
KINESIS_ON_DEMAND_STREAM_HOUR = 0.04
KINESIS_ON_DEMAND_WRITTEN_GB = 0.08
KINESIS_ON_DEMAND_FAN_OUT_READ_GB = 0.05
# On-demand reads through the shared throughput (GetRecords, a Lambda mapping's standard iterator): $0.04 per
# GB "(no rounding)"; provisioned shared reads "Free": Trek10, "Amazon Kinesis Data Streams On-demand vs.
# Provisioned Billing Mode Cost Comparison", 2023-09-21, "prices from us-east-1" (a third-party write-up, the
# only one found; https://www.trek10.com/blog/amazon-kinesis-data-streams-on-demand-vs.-provisioned-billing-mode-cost-comparison).
KINESIS_ON_DEMAND_SHARED_READ_GB = 0.04
KINESIS_PROVISIONED_SHARED_READ_GB = 0.0
# Provisioned enhanced fan-out: $0.015 per consumer-shard hour ("Enhanced fan-out $0.015 per shard-hour per
# consumer": https://awsnegotiations.com/kinesis-pricing-optimization.html, May 2026) and $0.013 per GB read
# (an infracost estimate quoted at https://code.seto.ovh/fd5ed7fd-0a12-4043-92e8-bfcc980b7771?page=3: "Enhanced
# Fan Out (EFO) Data retrieval 100 GB $1.30", "Enhanced Fan Out (EFO) 100 consumer-shard hour $1.50"). Both
# third-party, undated against AWS's page. The same estimate lists no consumer-shard hours for an on-demand
# stream, nor does the AWS blog above: an on-demand consumer pays per GB only.
KINESIS_PROVISIONED_FAN_OUT_CONSUMER_SHARD_HOUR = 0.015
KINESIS_PROVISIONED_FAN_OUT_READ_GB = 0.013
# DynamoDB's change data capture for Kinesis Data Streams: one unit per write of up to 1 KB, more for larger
# items (the larger of the before and after images, rounded up as write units are: DynamoDB developer guide,
# kds.html). Its price was not found in the documentation or pages searched on 2026-12-07: two third-party
# transcriptions in public repositories give $0.10 per million, one of them from before DynamoDB's November
# 2024 price change. Not priced: the units are counted and shown, their dollars left out of the totals.
DYNAMODB_KINESIS_CDC_UNIT: float | None = None

KINESIS_PRICES: dict[str, float | None] = {
    "kinesis_on_demand_stream_hour": KINESIS_ON_DEMAND_STREAM_HOUR,
    "kinesis_on_demand_written_gb": KINESIS_ON_DEMAND_WRITTEN_GB,  # each record rounded up to 1 KB
    "kinesis_on_demand_shared_read_gb": KINESIS_ON_DEMAND_SHARED_READ_GB,  # no rounding
    "kinesis_on_demand_fan_out_read_gb": KINESIS_ON_DEMAND_FAN_OUT_READ_GB,  # per consumer
    "kinesis_provisioned_shared_read_gb": KINESIS_PROVISIONED_SHARED_READ_GB,
    "kinesis_provisioned_fan_out_consumer_shard_hour": KINESIS_PROVISIONED_FAN_OUT_CONSUMER_SHARD_HOUR,
    "kinesis_provisioned_fan_out_read_gb": KINESIS_PROVISIONED_FAN_OUT_READ_GB,
    "dynamodb_kinesis_change_data_capture_unit": DYNAMODB_KINESIS_CDC_UNIT,  # not found: see docs/cost.md
}

# A change as DynamoDB writes it to Kinesis: JSON with both images (a MODIFY: an INSERT or REMOVE carries one,
# so this is the upper bound), each image's DynamoDB JSON DYNAMODB_JSON_FACTOR times the item's size by
# DynamoDB's rules, plus the record's own fields and keys. tests/unit/test_cost_kinesis.py builds such records
# from the benchmark's 1 KB, 12-attribute items (bench.shapes) and checks these figures against them; items of
# many small attributes grow more in JSON: give the stream's own figure with --kinesis-record-kb (its
# IncomingBytes over IncomingRecords).
KINESIS_IMAGES = 2
DYNAMODB_JSON_FACTOR = 1.2
KINESIS_RECORD_OVERHEAD_BYTES = 500
# A shard takes 1 MiB/s or 1,000 records/s of writes, and serves 5 GetRecords calls and 2 MiB/s of reads a
# second, shared by every consumer of the shard that is not an enhanced fan-out consumer (Kinesis developer
# guide, "Quotas and limits").
SHARD_WRITE_RECORDS = 1000
SHARD_WRITE_BYTES = 1024**2
SHARD_READ_CALLS = 5
SHARD_READ_BYTES = 2 * 1024**2
# Lambda polls each shard once per second ("AWS Lambda then polls the stream periodically (once per second)
# for new records", Lambda developer guide, with-kinesis): a floor, it polls again sooner when batches fill.
LAMBDA_GET_RECORDS_PER_SHARD_SECOND = 1
# An on-demand stream starts at 4 MiB/s of writes (4 shards) and scales to twice the peak write throughput of
# the last 30 days (Kinesis developer guide, on-demand mode; also the Trek10 write-up above).
ON_DEMAND_START_SHARDS = 4
ON_DEMAND_HEADROOM = 2


@dataclass(frozen=True)
class KinesisSource:
    """The Kinesis stream as `hotkeys cost` prices it; None fields take the defaults below."""

    mode: str | None = None  # on-demand (default) or provisioned
    enhanced_fan_out: bool = False
    stream_made_by_stack: bool = False
    shards: int | None = None  # the stream's open shards (default: what its writes need, see kinesis_shards)
    record_kb: float | None = None  # the stream's mean record size (default: record_bytes from the item size)

    @property
    def stream_mode(self) -> str:
        return self.mode or STACK_STREAM_MODE


def validate(source: str, kinesis: KinesisSource) -> None:
    """One line per mistake: a Kinesis flag without ``--source kinesis``, or a stack stream not on-demand."""
    if source not in ("dynamodb", "kinesis"):
        raise ValueError(f"--source is dynamodb or kinesis, got {source!r}")
    if source != "kinesis":
        given = [
            flag
            for flag, value in (
                ("--kinesis-mode", kinesis.mode),
                ("--enhanced-fan-out", kinesis.enhanced_fan_out or None),
                ("--stream-made-by-stack", kinesis.stream_made_by_stack or None),
                ("--kinesis-shards", kinesis.shards),
                ("--kinesis-record-kb", kinesis.record_kb),
            )
            if value is not None
        ]
        if given:
            raise ValueError(f"{', '.join(given)}: a Kinesis source's flag; add --source kinesis")
        return
    if kinesis.stream_mode not in MODES:
        raise ValueError(f"--kinesis-mode is on-demand or provisioned, got {kinesis.mode!r}")
    if kinesis.stream_made_by_stack and kinesis.stream_mode != STACK_STREAM_MODE:
        raise ValueError("--stream-made-by-stack: the stack's stream is on-demand; drop --kinesis-mode provisioned")
    if kinesis.shards is not None and kinesis.shards < 1:
        raise ValueError("--kinesis-shards must be at least 1")
    if kinesis.record_kb is not None and kinesis.record_kb <= 0:
        raise ValueError("--kinesis-record-kb must be positive")


def record_bytes(kinesis: KinesisSource, avg_item_kb: float) -> float:
    """A change record's bytes in the stream: the given figure, else both images' JSON and the fields."""
    if kinesis.record_kb is not None:
        return kinesis.record_kb * KB_BYTES
    return KINESIS_RECORD_OVERHEAD_BYTES + KINESIS_IMAGES * avg_item_kb * KB_BYTES * DYNAMODB_JSON_FACTOR


def billed_written_kb(record: float) -> int:
    """On-demand data written: each record rounded up to a whole KB of 1,024 bytes."""
    return math.ceil(record / KB_BYTES)


def kinesis_shards(kinesis: KinesisSource, writes_per_second: float, record: float) -> int:
    """The stream's shards: as given, else what its writes need (records or bytes, the larger), on-demand
    with its twice-the-peak headroom and never under its starting 4."""
    if kinesis.shards is not None:
        return kinesis.shards
    need = max(writes_per_second / SHARD_WRITE_RECORDS, writes_per_second * record / SHARD_WRITE_BYTES)
    if kinesis.stream_mode == "provisioned":
        return max(1, math.ceil(need))
    return max(ON_DEMAND_START_SHARDS, math.ceil(ON_DEMAND_HEADROOM * need))


def change_data_capture_units(writes_per_second: float, avg_item_kb: float, seconds: float) -> float:
    """DynamoDB's change data capture units: one per write per KB of the item, rounded up per write."""
    return writes_per_second * seconds * math.ceil(avg_item_kb)


@dataclass(frozen=True)
class Stream:
    """What the detector reads: ``records`` a month of ``record`` bytes each, over ``shards`` shards."""

    records: float
    record: float
    shards: int

    @property
    def gb(self) -> float:
        return self.records * self.record / GB_BYTES


def kinesis_cost(kinesis: KinesisSource, stream: Stream) -> dict[str, float]:
    """The month's Kinesis lines: the detector's reads (shared, or its enhanced fan-out consumer), and with
    ``stream_made_by_stack`` the stream's hours and writes. DynamoDB's change data capture is not priced
    (DYNAMODB_KINESIS_CDC_UNIT)."""
    on_demand = kinesis.stream_mode == "on-demand"
    if kinesis.enhanced_fan_out:
        # a consumer-shard hour for each shard the consumer is subscribed to (all of them), on provisioned only
        hours = 0 if on_demand else stream.shards * HOURS_PER_MONTH
        fan_out_price = KINESIS_ON_DEMAND_FAN_OUT_READ_GB if on_demand else KINESIS_PROVISIONED_FAN_OUT_READ_GB
        lines = {
            "kinesis_fan_out_reads": stream.gb * fan_out_price,
            "kinesis_fan_out_consumer_shard_hours": hours * KINESIS_PROVISIONED_FAN_OUT_CONSUMER_SHARD_HOUR,
        }
    else:
        shared_price = KINESIS_ON_DEMAND_SHARED_READ_GB if on_demand else KINESIS_PROVISIONED_SHARED_READ_GB
        lines = {"kinesis_shared_reads": stream.gb * shared_price}
    if kinesis.stream_made_by_stack:
        written_gb = stream.records * billed_written_kb(stream.record) * KB_BYTES / GB_BYTES
        lines["kinesis_stream_hours"] = HOURS_PER_MONTH * KINESIS_ON_DEMAND_STREAM_HOUR
        lines["kinesis_stream_writes"] = written_gb * KINESIS_ON_DEMAND_WRITTEN_GB
    return lines


def shared_read_use(kinesis: KinesisSource, stream: Stream, seconds: float) -> dict[str, float]:
    """The detector's share of each shard's shared read limits (none with enhanced fan-out)."""
    if kinesis.enhanced_fan_out:
        return {"get_records_per_second": 0, "mib_per_second": 0.0}
    per_shard = stream.records * stream.record / stream.shards / seconds
    return {
        "get_records_per_second": LAMBDA_GET_RECORDS_PER_SHARD_SECOND,
        "get_records_limit": SHARD_READ_CALLS,
        "mib_per_second": round(per_shard / 1024**2, 3),
        "mib_limit": SHARD_READ_BYTES / 1024**2,
    }


# A Kinesis shard's stored recent changes: its key (the stream's ARN and shard id) and attribute names.
SEEN_ITEM_OVERHEAD_BYTES = 200


def recent_changes_cost(
    writes_per_second: float, shard_count: int, window_seconds: int, write_unit: float, read_unit: float
) -> dict[str, float]:
    """Each Kinesis shard stores the identities of its recent changes at each window's end and the next
    window reads them back (strongly consistent): ``consumer.seen``, its size at the shard's rate."""
    held = min(MAX_SEEN, writes_per_second / shard_count * HORIZON_SECONDS)
    item = SEEN_ITEM_OVERHEAD_BYTES + max_seen_bytes() - MAX_SEEN * ENTRY_BYTES + held * ENTRY_BYTES
    windows = shard_count * SECONDS_PER_MONTH / window_seconds
    units = math.ceil(item / KB_BYTES) * write_unit + math.ceil(item / (4 * KB_BYTES)) * read_unit
    return {"stats_recent_changes": windows * units}
