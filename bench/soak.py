"""``make soak``: a long run at production scale, through the real pipeline, against moto.

A 50,000 WCU/s table has at least 50 partitions, each at most 1,000 WCU/s, and a stream
shard per partition; shards are processed independently (one invocation at a time each).
The soak drives SHARDS shards at 1,000 records/s (~1 KB items, Zipf keys) for MINUTES
simulated minutes, window by window as the event source mapping would (batches of 1,000,
tumbling-window state carried, a final invocation per window), and records per window:
CPU per record, resident memory, carried-state size, summary size and stats writes.
Summary and state sizes are sampled after every batch and reported as ranges (min, max).
Then one window with over a million distinct keys (counted) shows the summary (and memory) stay bounded.
Results: docs/soak-latest.json and the "Soak" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import os
import random
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hotkeys.emulator.events import ItemChange, sequence_number, stream_record

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_796_083_200


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@dataclass(frozen=True)
class Traffic:
    """A shard's writes: ``rate`` records a second for ``seconds`` from ``start``, over ``keys`` keys drawn
    Zipf(1.1), or (``unique_keys``) each record a key of its own."""

    rate: int
    seconds: int
    keys: int
    start: int = T0
    unique_keys: bool = False


def fast_records(shard: int, traffic: Traffic, seed: int) -> Iterator[dict[str, Any]]:
    """Records with images built straight in DynamoDB JSON (TypeSerializer is too slow for millions)."""
    rng = random.Random(seed)
    weights = list(itertools.accumulate(1 / (rank**1.1) for rank in range(1, traffic.keys + 1)))
    total = weights[-1]
    start, unique_keys = traffic.start, traffic.unique_keys
    position = 0
    for second in range(traffic.seconds):
        for _ in range(traffic.rate):
            key = f"key#{position}" if unique_keys else f"user#{bisect.bisect_left(weights, rng.random() * total)}"
            note = {"S": "n" * rng.randint(500, 900)}
            new = {
                "pk": {"S": key},
                "status": {"S": "PAID"},
                "updatedAt": {"N": str(start + second)},
                "amount": {"N": "123.45"},
                "currency": {"S": "EUR"},
                "version": {"N": str(position % 50)},
                "address": {"M": {"city": {"S": "Lyon"}, "zip": {"S": "69001"}}},
                "lines": {"L": [{"M": {"sku": {"S": "SKU-1"}, "qty": {"N": "2"}}}]},
                "note": note,
            }
            old = dict(new, status={"S": "NEW"}, version={"N": str(position % 50 + 1)})
            yield stream_record(
                ItemChange(event_name="MODIFY", keys={"pk": {"S": key}}, new_image=new, old_image=old, typed=True),
                table="soak",
                sequence=sequence_number(shard, position),
                event_time=start + second,
            )
            position += 1


def soak_shard(shard: int, minutes: int, settings: Any, ports: Any, counter: dict[str, int]) -> list[dict[str, Any]]:
    from hotkeys.detector.consumer.pipeline import StreamBatch, process_batch

    rows = []
    records = fast_records(shard, Traffic(rate=1000, seconds=minutes * 60, keys=100_000), seed=shard)
    for minute in range(minutes):
        start = T0 + minute * 60
        state: dict[str, Any] = {}
        cpu = 0.0
        writes_before = counter["requests"]
        sizes: list[int] = []  # carried state after each batch: what Lambda stores between invocations
        summaries: list[int] = []
        for _ in range(60):  # 60 batches of 1,000 records = one minute at 1,000 records/s
            batch = list(itertools.islice(records, 1000))
            began = time.process_time()
            outcome = process_batch(StreamBatch(batch, f"shardId-{shard}", (start, start + 60), state), settings, ports)
            state = json.loads(json.dumps(outcome.state))
            cpu += time.process_time() - began
            sizes.append(len(json.dumps(state)))
            summaries.append(_summary_keys(state))
        process_batch(StreamBatch([], f"shardId-{shard}", (start, start + 60), state, is_final=True), settings, ports)
        rows.append(
            {
                "shard": shard,
                "minute": minute,
                "us_per_record": cpu / 60_000 * 1e6,
                "rss_mb": round(_rss_mb(), 1),
                "state_kb_min": round(min(sizes) / 1024, 1),
                "state_kb_max": round(max(sizes) / 1024, 1),
                "summary_keys_min": min(summaries),
                "summary_keys_max": max(summaries),
                "stats_writes": counter["requests"] - writes_before,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def _summary_keys(state: dict[str, Any]) -> int:
    """Keys in the largest summary the carried state holds (decoded: the state stores them compressed)."""
    from hotkeys.detector.consumer.state import Segment

    return max((len(Segment.from_json(seg).summary.entries) for seg in state.get("seg", [])), default=0)


def ranges(rows: list[dict[str, Any]]) -> dict[str, list[float]]:
    """[min, max] over the whole run of each figure the rows sample."""
    return {
        "us_per_record": [
            round(min(r["us_per_record"] for r in rows), 1),
            round(max(r["us_per_record"] for r in rows), 1),
        ],
        "rss_mb": [min(r["rss_mb"] for r in rows), max(r["rss_mb"] for r in rows)],
        "state_kb": [min(r["state_kb_min"] for r in rows), max(r["state_kb_max"] for r in rows)],
        "summary_keys": [min(r["summary_keys_min"] for r in rows), max(r["summary_keys_max"] for r in rows)],
        "stats_writes_per_minute": [min(r["stats_writes"] for r in rows), max(r["stats_writes"] for r in rows)],
    }


def million_keys(settings: Any, ports: Any) -> dict[str, Any]:
    """One 900 s window (the longest Lambda allows) holding over a million distinct keys: the summary,
    the state and the traced memory stay bounded. The distinct keys are counted, not assumed."""
    from hotkeys.detector.consumer.pipeline import StreamBatch, process_batch

    rate, seconds = 1112, 900  # 1,000,800 records, every one in the window, each key written once
    records = fast_records(99, Traffic(rate, seconds, keys=10, unique_keys=True), seed=99)
    state: dict[str, Any] = {}
    tracemalloc.start()
    peak_batch = 0
    summaries: list[int] = []
    keys_seen: set[int] = set()  # hashes, not the strings: a set of a million keys would dwarf the detector
    in_window = 0
    while batch := list(itertools.islice(records, rate)):
        for record in batch:
            if T0 <= record["dynamodb"]["ApproximateCreationDateTime"] < T0 + 900:
                in_window += 1
                keys_seen.add(hash(record["dynamodb"]["Keys"]["pk"]["S"]))
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        outcome = process_batch(StreamBatch(batch, "shardId-99", (T0, T0 + 900), state), settings, ports)
        peak_batch = max(peak_batch, tracemalloc.get_traced_memory()[1] - base)
        state = outcome.state or {}
        summaries.append(_summary_keys(state))
    tracemalloc.stop()
    return {
        "records_in_window": in_window,
        "distinct_keys_in_window": len(keys_seen),
        "state_kb": round(len(json.dumps(state)) / 1024, 1),
        "summary_keys": [min(summaries), max(summaries)],
        "peak_traced_mb_per_batch": round(peak_batch / 2**20, 1),
        "rss_mb": round(_rss_mb(), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--minutes", type=int, default=30)
    args = parser.parse_args(argv)
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "soak",
            "AWS_SECRET_ACCESS_KEY": "soak",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "POWERTOOLS_TRACE_DISABLED": "true",
        }
    )
    import boto3
    from moto import mock_aws

    from hotkeys.detector.adapters.aws import AwsClients
    from hotkeys.detector.config import Settings
    from hotkeys.detector.handlers.wiring import build_ports
    from hotkeys.emulator.local import create_stats_table

    counter = {"requests": 0}
    with mock_aws():
        create_stats_table(boto3.client("dynamodb"), "soak-stats")
        settings = Settings(stats_table_name="soak-stats")
        aws = AwsClients()
        ports = build_ports(settings, aws)
        aws.resource("dynamodb").meta.client.meta.events.register(
            "provide-client-params.dynamodb.PutItem",
            lambda **_: counter.__setitem__("requests", counter["requests"] + 1),
        )
        rows = [
            row for shard in range(args.shards) for row in soak_shard(shard, args.minutes, settings, ports, counter)
        ]
        wide = million_keys(Settings(stats_table_name="soak-stats", window_seconds=900), ports)
    print(json.dumps(wide))
    results = {
        "shards": args.shards,
        "minutes": args.minutes,
        "ranges": ranges(rows),
        "rows": rows,
        "million_keys": wide,
    }
    (ROOT / "docs" / "soak-latest.json").write_text(json.dumps(results, indent=1) + "\n")
    from bench.measurements import append, command_line

    append(command_line("bench.soak", argv), {key: value for key, value in results.items() if key != "rows"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
