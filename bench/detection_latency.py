"""Detection latency: from the moment a partition's merged write rate reaches the alert rate to the publish.

Over many generated schedules (seeded, reproducible), each a table with 1 to 8 stream shards
through the ESM emulation (``hotkeys.emulator.esm``: ``consume_lineage``, ``RandomFaults``'s lost
responses, about one in ten, and redelivered overlaps) and the real handler (``process_batch``, its
first alarm, and the judge on its schedule, on in-process moto), all shards side by side in emulated time (``bench.lanes``, whose
module doc states the time model: a batch is invoked when it fills, or when the batching window
after its first record ends; the publish time is the emulated time of the invocation that
published). Batch sizes are the mapping's, not ``RandomFaults``'s odd ones (those would invoke
earlier than the mapping does).

A schedule holds background writes on every shard and bursts at 85% to 200% of the partition
limit, 6 to 40 s long, starting anywhere in the first two windows:

* table-key bursts (a key's writes all on one shard);
* index-partition bursts (``by-status`` = PENDING, an ALL-projection GSI: inserts of new items
  spread over every shard, evenly or not);
* half of the shards roll over (a child shard carries on with a fresh state), mostly inside a burst.

The crossing is computed from the generated records only, with the rule the issue states and
independently of the detector: the first event second at which the partition's write units summed
over all shards reach the alert rate (``ALERT_THRESHOLD`` times the limit) over its heaviest aligned
``ALERT_MIN_SPAN_SECONDS`` bucket so far, or over its active span in the window (from its first
write in the window to that second, at least ``ALERT_MIN_SPAN_SECONDS``). Items are sized far from
a kilobyte boundary (~7.5 KB: 8 write units on the table and on the index entry however the
index's overhead is counted). Latency = publish time minus crossing second. Share-of-table alerts are
off (``SHARE_MIN_WCU`` out of reach): this measures the partition rule.

Each schedule runs with the judge's watchdog rule firing at several seconds of the minute (EventBridge
fires a rule "within that minute but not on the precise 0th second", at a phase fixed when the rule is
created): 0, 15, 37, 55 and one drawn per schedule. Every figure is given per phase, and the targets
hold at every phase.

    python -m bench.detection_latency                 # make bench: 24 schedules at 5 phases
    python -m bench.detection_latency --schedules 3   # a smoke run
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.lanes import moto_environment
from hotkeys.emulator.events import ItemChange, sequence_number, stream_record

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from hotkeys.detector.config import Settings

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "detection-latency-latest.json"
T0 = 1_796_083_200  # a window start (a multiple of 60)
TABLE = "orders"
INDEX = "by-status"
HOT_STATUS = "PENDING"
BIG_BODY = 7_400  # ~7.5 KB items: 8 write units
SMALL_BODY = 200  # background items: 1 write unit
BACKGROUND_PER_SHARD = 20  # records per second
DURATION = 150  # seconds of event time: two and a half windows


@dataclass
class Partition:
    """A partition's write units per event second, summed over all shards (the truth)."""

    index: str | None
    key: str
    seconds: dict[int, int] = field(default_factory=lambda: defaultdict(int))


@dataclass
class Schedule:
    seed: int
    shards: int
    lineages: list[list[tuple[str, list[dict[str, Any]]]]]
    partitions: dict[tuple[str | None, str], Partition]
    bursts: list[dict[str, Any]]
    # The table stops writing when its last burst ends (no background after it): the last flush comes
    # from the windows' final invocations, and the resolutions from the judge's clock alone.
    stops: bool = False


def _size(item: dict[str, str]) -> int:
    """DynamoDB's item size for string attributes: UTF-8 bytes of each name and value."""
    return sum(len(name.encode()) + len(value.encode()) for name, value in item.items())


def _units(item: dict[str, str]) -> int:
    return -(-_size(item) // 1024)


# Every this many schedules, one is a table that stops writing when its last burst ends.
STOPS_EVERY = 4


# A write of the schedule (event time, key, old image or None for an insert, new image), and what it
# counts towards a partition's truth (event second, index or None for the table, partition key, write units).
Write = tuple[float, str, dict[str, str] | None, dict[str, str]]
Counted = tuple[float, str | None, str, int]


def generate(seed: int, shards: int | None = None) -> Schedule:
    rng = random.Random(seed)
    shards = shards or rng.randint(1, 8)
    per_shard: list[list[Write]] = [[] for _ in range(shards)]
    counted: list[Counted] = []
    _background(rng, per_shard, counted)
    bursts = [_burst(rng, seed, number, per_shard, counted) for number in range(rng.choice([2, 3]))]
    stops = seed % STOPS_EVERY == STOPS_EVERY - 1
    if stops:
        last = max(T0 + burst["start"] + burst["seconds"] for burst in bursts)
        per_shard = [[write for write in writes if write[0] < last] for writes in per_shard]
        counted = [entry for entry in counted if entry[0] < last]
    partitions: dict[tuple[str | None, str], Partition] = {}
    for second, index, key, units in counted:
        partitions.setdefault((index, key), Partition(index, key)).seconds[int(second)] += units
    lineages = [_lineage(rng, shard, writes, bursts) for shard, writes in enumerate(per_shard)]
    return Schedule(seed, shards, lineages, partitions, bursts, stops)


def _background(rng: random.Random, per_shard: list[list[Write]], counted: list[Counted]) -> None:
    """Every shard, its own 50 keys, 8 statuses (an ALL projection: each update writes the index entry of
    its unchanged status once)."""
    for shard, writes in enumerate(per_shard):
        for i in range(BACKGROUND_PER_SHARD * DURATION):
            when = T0 + i / BACKGROUND_PER_SHARD
            key, status = f"user#{shard}#{rng.randrange(50)}", f"S{rng.randrange(8)}"
            old = {"pk": key, "status": status, "n": str(i), "body": "b" * SMALL_BODY}
            new = {**old, "n": str(i + 1)}
            writes.append((when, key, old, new))
            counted.append((int(when), None, key, _units(new)))
            counted.append((int(when), INDEX, status, _units(new)))


def _burst(
    rng: random.Random, seed: int, number: int, per_shard: list[list[Write]], counted: list[Counted]
) -> dict[str, Any]:
    """Burst ``number``'s writes: inserts of new items on the hot status of the index, spread over every
    shard (odd numbers), or updates of one table key on one shard; returns what the report says of it."""
    shards = len(per_shard)
    on_index = number % 2 == 1
    level = rng.uniform(0.85, 2.0)
    length = rng.randint(6, 40)
    start = T0 + rng.randint(5, DURATION - length - 20)
    rate = level * 1000 / 8  # writes per second of 8-unit items
    total = int(rate * length)
    weights = [rng.uniform(0.2, 1.0) for _ in range(shards)] if rng.random() < 0.5 else [1.0] * shards
    hot_key = f"hot#{seed}#{number}"
    owner = rng.randrange(shards)
    for i in range(total):
        when = start + i / rate
        if on_index:
            key = f"order#{seed}#{number}#{i}"
            new = {"pk": key, "status": HOT_STATUS, "body": "p" * BIG_BODY}
            shard = rng.choices(range(shards), weights)[0]
            per_shard[shard].append((when, key, None, new))
            counted.append((int(when), None, key, _units(new)))
            counted.append((int(when), INDEX, HOT_STATUS, _units(new)))
        else:
            old = {"pk": hot_key, "n": str(i), "body": "h" * BIG_BODY}
            new = {**old, "n": str(i + 1)}
            per_shard[owner].append((when, hot_key, old, new))
            counted.append((int(when), None, hot_key, _units(new)))
    return {
        "partition": f"{INDEX}={HOT_STATUS}" if on_index else hot_key,
        "level": round(level, 2),
        "seconds": length,
        "start": start - T0,
        **({} if on_index else {"shard": owner}),
    }


def _lineage(
    rng: random.Random, shard: int, writes: list[Write], bursts: list[dict[str, Any]]
) -> list[tuple[str, list[dict[str, Any]]]]:
    """The shard's records in time order; half of the shards roll over to a child at a second drawn inside
    a burst (a table key's burst the rollover divides is marked ``split_at``: a merged partition)."""
    writes.sort(key=lambda write: write[0])
    records = [
        stream_record(
            ItemChange(
                event_name="INSERT" if old is None else "MODIFY", keys={"pk": key}, new_image=new, old_image=old
            ),
            table=TABLE,
            sequence=sequence_number(shard, position),
            event_time=int(when),
        )
        for position, (when, key, old, new) in enumerate(writes)
    ]
    parent = f"shardId-{shard:04d}-parent"
    if rng.random() < 0.5 and records:
        burst = rng.choice(bursts)
        cut = T0 + burst["start"] + rng.randint(0, burst["seconds"])
        split = next((i for i, r in enumerate(records) if r["dynamodb"]["ApproximateCreationDateTime"] >= cut), 0)
        if 0 < split < len(records):
            for divided in bursts:
                if (
                    divided.get("shard") == shard
                    and divided["start"] < cut - T0 < divided["start"] + divided["seconds"]
                ):
                    divided["split_at"] = cut - T0
            return [(parent, records[:split]), (f"shardId-{shard:04d}-child", records[split:])]
    return [(parent, records)]


def crossing(partition: Partition, rate: float, span: int, window_seconds: int) -> int | None:
    """The first event second at which the partition's merged rate reaches ``rate`` (module doc)."""
    seconds = partition.seconds
    if not seconds:
        return None
    bucket_sum: dict[int, int] = defaultdict(int)
    window_sum: dict[int, int] = defaultdict(int)
    first_seen: dict[int, int] = {}
    for second in range(min(seconds), max(seconds) + 1):
        units = seconds.get(second, 0)
        window = second - second % window_seconds
        if units:
            first_seen.setdefault(window, second)
        bucket_sum[second - second % span] += units
        window_sum[window] += units
        if bucket_sum[second - second % span] >= rate * span:
            return second
        if window in first_seen and window_sum[window] / max(span, second - first_seen[window] + 1) >= rate:
            return second
    return None


class DeliveryFaults:
    """``RandomFaults``'s lost responses and redelivered overlaps, with the mapping's own batch cuts
    (``bench.lanes``): its odd batch sizes would invoke earlier than the mapping does."""

    @staticmethod
    def of(rng: random.Random) -> Any:
        from tests.esm_faults import RandomFaults

        class Faults(RandomFaults):
            def batch_size(self, limit: int) -> int:
                return limit

        return Faults(rng, lose_probability=0.1)


class TimedPublisher:
    """Keeps each alert with the emulated time of the invocation (or the judge's look) that published it."""

    def __init__(self, turns: Any) -> None:
        self._turns = turns
        self.alerts: list[tuple[float, Any]] = []

    def publish(self, alert: Any) -> str:
        self.alerts.append((self._turns.now, alert))
        return str(len(self.alerts))


def peak_of(partition: Partition, span: int) -> tuple[float, int] | None:
    """(the partition's heaviest aligned ``span`` bucket as a rate, the second that bucket ends), summed
    over every shard: the truth an incident's messages must reach."""
    buckets: dict[int, int] = defaultdict(int)
    for second, units in partition.seconds.items():
        buckets[second - second % span] += units
    if not buckets:
        return None
    start, units = max(buckets.items(), key=lambda item: (item[1], -item[0]))
    return units / span, start + span


# The watchdog's seconds of the minute every schedule runs at ("drawn": one per schedule, from its seed).
PHASES = ("0", "15", "37", "55", "drawn")


def phase_of(label: str, seed: int) -> float:
    return random.Random(f"phase-{seed}").uniform(0, 60) if label == "drawn" else float(label)


def run_schedule(schedule: Schedule, phase: float = 0.0) -> dict[str, Any]:
    from hotkeys.detector.config import Settings

    settings = Settings(
        stats_table_name=f"stats-{uuid.uuid4().hex[:8]}",
        alert_topic_arn="arn:aws:sns:us-east-1:123456789012:alerts",
        share_min_wcu=10**12,
    )
    publisher = _published(schedule, settings, phase)
    fired, messages = _partition_alerts(publisher)
    judged = _judged(schedule, settings, fired, messages)
    return {
        "seed": schedule.seed,
        "phase": round(phase, 1),
        "shards": schedule.shards,
        "stops": schedule.stops,
        "rollovers": sum(1 for lineage in schedule.lineages if len(lineage) > 1),
        "records": sum(len(records) for lineage in schedule.lineages for _s, records in lineage),
        "bursts": schedule.bursts,
        "latencies": [{**row, "seconds": row["published"] - row["crossed"]} for row in judged.rows],
        "truth": judged.truths,
        "resolutions": judged.resolutions,
        "missed": judged.missed,
        "fired_without_crossing": sorted(
            f"{index}={key}" if index else key for index, key in set(fired) - judged.crossed
        ),
    }


_Name = tuple[str | None, str]  # a partition: (its index, None for the table's, and its key)
_Messages = dict[_Name, list[tuple[float, Any]]]  # each partition's alerts with their publish times


@dataclass
class _Judged:
    """Per partition that crossed the alert rate: its name, and its latency, truth and resolution rows or its miss."""

    crossed: set[_Name] = field(default_factory=set)
    rows: list[dict[str, Any]] = field(default_factory=list)
    truths: list[dict[str, Any]] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    resolutions: list[dict[str, Any]] = field(default_factory=list)


def _published(schedule: Schedule, settings: Settings, phase: float) -> TimedPublisher:
    """The schedule through the emulated deployment on in-process moto: every alert with its publish time."""
    import boto3
    from moto import mock_aws

    from hotkeys.detector.adapters.aws import AwsClients
    from hotkeys.emulator.emulation import Deployment, Judging, emulate
    from hotkeys.emulator.lanes import EventSourceMapping, Turns
    from hotkeys.emulator.local import create_stats_table

    turns = Turns()
    publisher = TimedPublisher(turns)
    with mock_aws():
        client = boto3.client("dynamodb")
        create_stats_table(client, settings.stats_table_name)
        _create_source_table(client)
        rngs = [random.Random(schedule.seed * 1000 + lane) for lane in range(len(schedule.lineages))]
        emulate(
            Deployment(settings, AwsClients(), publisher),
            schedule.lineages,
            mapping=EventSourceMapping(deliveries=[DeliveryFaults.of(rng) for rng in rngs]),
            judge=Judging(tables=(TABLE,), phase=phase),
            turns=turns,
        )
    return publisher


def _partition_alerts(publisher: TimedPublisher) -> tuple[dict[_Name, float], _Messages]:
    """The partition-limit alerts: each partition's first firing time, and all its messages in order."""
    from hotkeys.detector.alerts.rules import Reason

    fired: dict[_Name, float] = {}
    messages: _Messages = defaultdict(list)
    for at, alert in publisher.alerts:
        if alert.reason == Reason.PARTITION_LIMIT:
            messages[(alert.index, alert.key)].append((at, alert))
            if alert.status == "firing":
                fired.setdefault((alert.index, alert.key), at)
    return fired, messages


def _judged(schedule: Schedule, settings: Settings, fired: dict[_Name, float], messages: _Messages) -> _Judged:
    from hotkeys.detector.domain.rate import alert_rate

    rate, span = alert_rate(settings), settings.alert_min_span_seconds
    judged = _Judged()
    last_write = max(second for partition in schedule.partitions.values() for second in partition.seconds)
    for name, partition in schedule.partitions.items():
        crossed = crossing(partition, rate, span, settings.window_seconds)
        if crossed is None:
            continue
        judged.crossed.add(name)
        label = f"{partition.index}={partition.key}" if partition.index else partition.key
        if name not in fired:
            judged.missed.append(label)
            continue
        split = any(burst["partition"] == label and "split_at" in burst for burst in schedule.bursts)
        kind = "index partition" if partition.index else "split table key" if split else "table key"
        judged.rows.append({"partition": label, "kind": kind, "crossed": crossed - T0, "published": fired[name] - T0})
        peak = peak_of(partition, span)
        if peak is not None:
            judged.truths.append(_truth(label, peak, messages[name], settings))
        resolved = next((at for at, alert in messages[name] if alert.status == "resolved"), None)
        judged.resolutions.append(
            {"partition": label, "resolved": None if resolved is None else resolved - T0, "last_write": last_write - T0}
        )
    return judged


def _truth(
    label: str, peak: tuple[float, int], messages: list[tuple[float, Any]], settings: Settings
) -> dict[str, Any]:
    """When the partition's messages first told its true peak."""
    from hotkeys.detector.alerts.incidents import ESCALATION
    from hotkeys.detector.domain.rate import suggested_shards

    value, reached = peak
    # The first message that tells the truth as the incident's rules keep it: a rate (its own, or
    # the incident's peak) an update would not follow (within ESCALATION of the true peak) and the
    # shard count the true peak calls for
    quoted = next(
        (
            at
            for at, alert in messages
            if (told := max(alert.wcu_per_second, alert.peak_wcu_per_second)) * ESCALATION >= value
            and suggested_shards(told, settings) >= suggested_shards(value, settings)
        ),
        None,
    )
    return {
        "partition": label,
        "peak": value,
        "peak_reached": reached - T0,
        "quoted": None if quoted is None else quoted - T0,
        "seconds": None if quoted is None else max(0.0, quoted - reached),
    }


def _create_source_table(client: DynamoDBClient) -> None:
    """The source table as DescribeTable shows it to the function: ``by-status`` projecting ALL."""
    client.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "status", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": INDEX,
                "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, -(-int(fraction * 1000) * len(ordered) // 1000))
    return ordered[min(rank, len(ordered)) - 1]


# The targets (issue #34): a table key's first alarm on its own shard, a partition merged across shards
# (an index's, or a key a rollover divides) by the judge, the truth (a message quoting the incident's peak)
# after the peak, and a table that stops writing resolved.
TABLE_KEY_TARGET = 6
MERGED_TARGET = 20
TRUTH_TARGET = 20
QUIET_RESOLUTION_TARGET = 300


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from hotkeys.deployment import EVENT_SOURCE
    from hotkeys.detector.config import default_of

    latencies = [entry["seconds"] for row in rows for entry in row["latencies"]]
    by_kind: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        for entry in row["latencies"]:
            by_kind[entry["kind"]].append(entry["seconds"])
    table_keys = by_kind.get("table key", [])
    merged = by_kind.get("index partition", []) + by_kind.get("split table key", [])
    truths = [entry["seconds"] for row in rows for entry in row["truth"] if entry["seconds"] is not None]
    untold = [(row["seed"], entry["partition"]) for row in rows for entry in row["truth"] if entry["seconds"] is None]
    quiet = [
        entry["resolved"] - entry["last_write"] if entry["resolved"] is not None else None
        for row in rows
        if row["stops"]
        for entry in row["resolutions"]
    ]

    def p99(values: list[float]) -> float | None:
        return percentile(values, 0.99) if values else None

    return {
        "schedules": len(rows),
        "crossings": len(latencies) + sum(len(row["missed"]) for row in rows),
        "published": len(latencies),
        "missed": [(row["seed"], name) for row in rows for name in row["missed"]],
        "fired_without_crossing": [(row["seed"], name) for row in rows for name in row["fired_without_crossing"]],
        "p50_seconds": statistics.median(latencies) if latencies else None,
        "p99_seconds": p99(latencies),
        "max_seconds": max(latencies) if latencies else None,
        "min_seconds": min(latencies) if latencies else None,
        "by_kind": {
            kind: {"count": len(values), "p50": statistics.median(values), "p99": p99(values), "max": max(values)}
            for kind, values in sorted(by_kind.items())
        },
        "table_key_p99_seconds": p99(table_keys),
        "merged_p99_seconds": p99(merged),
        "truth_p99_seconds": p99(truths),
        "truth_max_seconds": max(truths) if truths else None,
        "truth_untold": untold,
        "stopping_tables": sum(1 for row in rows if row["stops"]),
        "quiet_resolution_max_seconds": max((value for value in quiet if value is not None), default=None),
        "quiet_unresolved": sum(1 for value in quiet if value is None),
        "targets": {
            "table_key_p99_seconds": TABLE_KEY_TARGET,
            "merged_p99_seconds": MERGED_TARGET,
            "truth_p99_seconds": TRUTH_TARGET,
            "quiet_resolution_seconds": QUIET_RESOLUTION_TARGET,
        },
        "target_met": bool(latencies)
        and (p99(table_keys) or 0) <= TABLE_KEY_TARGET
        and (p99(merged) or 0) <= MERGED_TARGET
        and (p99(truths) or 0) <= TRUTH_TARGET
        and not untold
        and all(value is not None and value <= QUIET_RESOLUTION_TARGET for value in quiet),
        "batching_window_seconds": EVENT_SOURCE.max_batching_window_seconds,
        "flush_seconds": default_of("flush_seconds"),
    }


# What the summary repeats per phase.
PHASE_FIGURES = (
    "crossings",
    "missed",
    "table_key_p99_seconds",
    "merged_p99_seconds",
    "truth_p99_seconds",
    "truth_untold",
    "quiet_resolution_max_seconds",
    "quiet_unresolved",
    "target_met",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--schedules", type=int, default=24)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--shards", type=int, default=None, help="every schedule on this many shards (default: 1 to 8)")
    parser.add_argument("--out", default=str(OUTPUT))
    parser.add_argument(
        "--phases", default=",".join(PHASES), help="the watchdog's seconds of the minute, comma-separated ('drawn')"
    )
    args = parser.parse_args(argv)
    phases = [label.strip() for label in args.phases.split(",") if label.strip()]
    moto_environment()
    from hotkeys.detector.observability import logger

    logger.setLevel("CRITICAL")
    rows: dict[str, list[dict[str, Any]]] = {label: [] for label in phases}
    for seed in range(args.first_seed, args.first_seed + args.schedules):
        schedule = generate(seed, args.shards)
        for label in phases:
            row = run_schedule(schedule, phase_of(label, seed))
            rows[label].append(row)
            worst = max((entry["seconds"] for entry in row["latencies"]), default=None)
            print(
                f"seed {seed} phase {row['phase']}: {row['shards']} shards, {row['rollovers']} rollovers, "
                f"{row['records']:,} records, latencies {[entry['seconds'] for entry in row['latencies']]} "
                f"(worst {worst}), missed {row['missed']}",
                flush=True,
            )
    by_phase = {label: summarize(found) for label, found in rows.items()}
    every = [row for found in rows.values() for row in found]
    summary = {
        **summarize(every),
        "phases": phases,
        "by_phase": {label: {name: found[name] for name in PHASE_FIGURES} for label, found in by_phase.items()},
    }
    summary["target_met"] = all(found["target_met"] for found in by_phase.values())
    result = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "python": platform.python_version(),
        "command": "python -m bench.detection_latency"
        + (f" --schedules {args.schedules}" if args.schedules != 24 else ""),
        "summary": summary,
        "schedules": every,
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    if Path(args.out) == OUTPUT:
        from bench.report import LATENCY_TITLE, refresh_section

        refresh_section(LATENCY_TITLE)
    print(json.dumps(result["summary"]))
    from bench.measurements import append, command_line

    append(command_line("bench.detection_latency", argv), result["summary"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
