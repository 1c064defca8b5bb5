"""``make bench``: per-record cost and stats-table write cost, written to docs/benchmarks.md.

Timing compares work measured in the same process and run (ratios), since these
machines are shared and noisy; each figure is the median of several repeats.
Write counts come from real boto3 calls against in-process moto, counted with
botocore's event hooks.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import platform
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.lanes import moto_environment
from bench.naive import naive_handler
from bench.report import render
from bench.stubs import NullStats, NullTable
from hotkeys.emulator.generate import Workload, generate

ROOT = Path(__file__).resolve().parent.parent
WINDOW = {"start": "2026-12-01T00:00:00Z", "end": "2026-12-01T00:01:00Z"}


def zipf_records(rate: float, duration: int, seed: int = 1) -> list[dict[str, Any]]:
    workload = Workload(
        table="orders", keys=100_000, zipf=1.1, rate=rate, duration=duration, item_bytes=1000, seed=seed
    )
    return generate(workload)[0]


def _timed(action: Callable[[], Any]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def per_record_cost(records: list[dict[str, Any]], batch_size: int, repeats: int) -> dict[str, float]:
    """Median per-record microseconds and same-run ratios."""
    from hotkeys.detector.adapters.key_schema import PartitionKeyResolver
    from hotkeys.detector.config import Settings
    from hotkeys.detector.consumer.pipeline import Ports
    from hotkeys.detector.handlers.app import Container, build_handler

    ports = Ports(stats=NullStats(), resolve_key=PartitionKeyResolver(None, lambda name: {}))
    container = Container(Settings(stats_table_name="bench-stats"), ports)  # AWS calls stubbed
    handler = build_handler(lambda: container)
    texts = [json.dumps({"Records": records[i : i + batch_size]}) for i in range(0, len(records), batch_size)]

    class Context:
        function_name, memory_limit_in_mb, aws_request_id = "bench", 512, "bench"
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"

    def run_handler(events: list[dict[str, Any]]) -> None:
        state: dict[str, Any] = {}
        for event in events:
            event.update({"shardId": "shardId-1", "window": WINDOW, "state": state, "isFinalInvokeForWindow": False})
            response = handler(event, Context())  # type: ignore[arg-type]
            # The runtime serializes the returned state and parses it for the next call: our cost too.
            state = json.loads(json.dumps(response["state"]))

    def run_naive(events: list[dict[str, Any]]) -> None:
        table = NullTable()
        for event in events:
            naive_handler(event, table)

    def run_floor(events: list[dict[str, Any]]) -> None:
        counts: Counter[str] = Counter()
        for event in events:
            for record in event["Records"]:
                counts[record["dynamodb"]["Keys"]["pk"]["S"]] += 1

    def parse_all() -> list[dict[str, Any]]:
        return [json.loads(text) for text in texts]

    runners: dict[str, Callable[[list[dict[str, Any]]], Any]] = {
        "handler": run_handler,
        "naive": run_naive,
        "floor": run_floor,
    }
    samples: dict[str, list[float]] = {"loads": [], "handler": [], "naive": [], "floor": []}
    with contextlib.redirect_stdout(io.StringIO()):
        for _ in range(repeats):
            samples["loads"].append(_timed(parse_all))
            for name, runner in runners.items():
                events = parse_all()
                samples[name].append(_timed(functools.partial(runner, events)))
    n = len(records)

    def ratio(top: str, bottom: str) -> float:
        return statistics.median(a / b for a, b in zip(samples[top], samples[bottom], strict=True))

    result = {f"{name}_us": statistics.median(values) / n * 1e6 for name, values in samples.items()}
    result["handler_to_loads"] = ratio("handler", "loads")
    result["naive_to_handler"] = ratio("naive", "handler")
    result["floor_to_loads"] = ratio("floor", "loads")
    result["bytes_per_record"] = sum(len(t) for t in texts) / n
    return result


def _item_bytes(item: dict[str, Any]) -> int:
    """DynamoDB size of a resource-level item (plain Python values, bytes for binary, at any depth)."""
    from boto3.dynamodb.types import Binary, TypeSerializer

    from hotkeys.detector.domain.sizing import image_size

    serializer = TypeSerializer()

    def typed(value: Any) -> dict[str, Any]:
        if isinstance(value, bytes | bytearray | Binary):
            # (boto3's Binary keeps its bytes in `value`, which its stubs leave out)
            raw = bytes(value.value) if isinstance(value, Binary) else bytes(value)  # type: ignore[attr-defined]
            return {"S": "x" * len(raw)}  # binary counts its raw bytes, like a string of that length
        if isinstance(value, dict):
            return {"M": {name: typed(inner) for name, inner in value.items()}}
        return dict(serializer.serialize(value))

    return image_size({name: typed(value) for name, value in item.items()})


def stats_write_cost(records: list[dict[str, Any]], batch_size: int, tumbling: bool) -> dict[str, float]:
    """Stats-table write requests and write units per 1,000 source records, through the ESM emulation."""
    import boto3
    from moto import mock_aws

    from hotkeys.deployment import EventSourceSettings
    from hotkeys.detector.adapters.aws import AwsClients
    from hotkeys.detector.config import Settings
    from hotkeys.detector.consumer.pipeline import parse_event, process_batch
    from hotkeys.detector.domain.sizing import write_units
    from hotkeys.detector.handlers.wiring import build_ports
    from hotkeys.emulator.esm import ShardConsumer
    from hotkeys.emulator.local import create_stats_table

    counted = {"requests": 0, "wcu": 0}

    def count(params: dict[str, Any], **_: Any) -> None:
        counted["requests"] += 1
        counted["wcu"] += write_units(_item_bytes(params["Item"]))

    with mock_aws():
        name = f"bench-stats-{batch_size}-{tumbling}"
        create_stats_table(boto3.client("dynamodb", region_name="us-east-1"), name)
        settings = Settings(stats_table_name=name)
        aws = AwsClients()
        ports = build_ports(settings, aws)
        aws.resource("dynamodb").meta.client.meta.events.register("provide-client-params.dynamodb.PutItem", count)
        esm = EventSourceSettings(batch_size=batch_size, tumbling_window_seconds=60 if tumbling else 0)
        ShardConsumer(
            lambda event: process_batch(parse_event(event), settings, ports).response(), "shardId-1", esm
        ).consume(records)
        aws.resource("dynamodb").meta.client.meta.events.unregister("provide-client-params.dynamodb.PutItem", count)
    source_wcu = sum(_record_wcu(record) for record in records)
    n = len(records)
    return {
        "requests_per_1000": counted["requests"] * 1000 / n,
        "wcu_per_1000": counted["wcu"] * 1000 / n,
        "source_wcu_per_1000": source_wcu * 1000 / n,
    }


def _record_wcu(record: dict[str, Any]) -> int:
    from hotkeys.detector.domain.sizing import larger_image_size, write_units

    stream = record["dynamodb"]
    return write_units(larger_image_size(stream.get("OldImage"), stream.get("NewImage")))


def detection_quality(quick: bool) -> list[dict[str, Any]]:
    from moto import mock_aws

    from bench.detection import evaluate
    from hotkeys.detector.observability import logger

    logger.setLevel("CRITICAL")
    combos = [(1.1, 10_000)] if quick else [(s, k) for s in (0.8, 1.1, 1.5) for k in (10_000, 1_000_000)]
    rows = []
    with mock_aws():
        for zipf, keys in combos:
            print(f"detection quality: zipf {zipf}, {keys:,} keys ...", flush=True)
            rows.append(evaluate(zipf, keys))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller workloads (a smoke run)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks-latest.json"))
    args = parser.parse_args(argv)
    moto_environment()
    duration = 20 if args.quick else 120
    print(f"generating a Zipf(1.1) workload over 100,000 keys: 1,000 records/s for {duration} s ...", flush=True)
    records = zipf_records(rate=1000, duration=duration)
    results: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "records": len(records),
    }
    print("timing per-record cost (batch 1000) ...", flush=True)
    results["cost"] = per_record_cost(records[: 20_000 if args.quick else 50_000], 1000, 3 if args.quick else 5)
    print(json.dumps(results["cost"], indent=1), flush=True)
    results["writes"] = {}
    for batch_size in (100, 1000, 10_000):
        for tumbling in (True, False):
            label = f"batch {batch_size}, {'tumbling 60 s' if tumbling else 'no tumbling window'}"
            print(f"stats writes: {label} ...", flush=True)
            results["writes"][label] = stats_write_cost(records, batch_size, tumbling)
            print(json.dumps(results["writes"][label]), flush=True)
    results["detection"] = detection_quality(quick=args.quick)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    if not args.quick:
        (ROOT / "docs" / "benchmarks.md").write_text(render(results))
    print(f"results written to {args.out} and docs/benchmarks.md")
    from bench.measurements import append, command_line

    append(command_line("bench.run", argv), {key: results[key] for key in ("records", "cost", "writes")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
