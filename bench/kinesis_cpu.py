"""The Kinesis cell: what Lambda bills per record for the same changes read from Kinesis Data Streams for
DynamoDB as from a DynamoDB stream (issue #49).

The same items (``bench.shapes``, mixed operations) are delivered three ways: as a Lambda DynamoDB
Streams event, and as a Lambda Kinesis event of the same changes at MICROSECOND precision (the
default) and at MILLISECOND precision (whose identity also serializes both images). Every event is a
tumbling-window invocation as Lambda sends it (``shardId``, ``eventSourceARN``, ``window``, ``state``),
batch size 1,000, cut at Lambda's 6 MB payload as the event source mapping cuts it: base64 makes a
Kinesis record a third larger, so a large item's Kinesis events hold fewer records.

Each delivery of each shape is measured in a fresh interpreter with the deployed wiring, as
``bench.lambda_process`` measures a matrix cell (the runtime's ``json.loads``, GC, the handler, the
state's round trip, the window's final invocation; medians of its passes). The three deliveries of a
shape run one after the other, in a rotated order, in each of several rounds; a ratio is Kinesis over
DynamoDB per round, and the report gives their median and the ratio of the best rounds.

    python -m bench.kinesis_cpu                  # make bench
    python -m bench.kinesis_cpu --records 2000 --rounds 1 --shapes 100B
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from statistics import median
from typing import Any, cast

from hotkeys.emulator.kinesis import Precision, decoded_change, lambda_record

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "kinesis-cpu-latest.json"
# The project's 1 KB cell, a small item, a 1 KB item of many typed attributes, a large nested one.
SHAPES = ("100B", "1KB-12", "1KB-30", "40KB-nested")
SOURCES = ("dynamodb", "kinesis-microsecond", "kinesis-millisecond")
PRECISIONS = {"kinesis-microsecond": ("MICROSECOND", 1_000_000), "kinesis-millisecond": ("MILLISECOND", 1_000)}
BATCH = 1000
# Issue #49's bound on the Kinesis path's CPU per record, as a ratio to the DynamoDB stream's.
TARGET = 1.15
PASSES = 3
KINESIS_ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/changes"
SHARD = "shardId-000000000000"
FIRST_SEQUENCE = 49_590_338_271_490_256_608_559_692_538_361_571_095_921_575_989_136_588_898


def kinesis_record(record: dict[str, Any], position: int, source: str) -> dict[str, Any]:
    """One record of a Lambda Kinesis event carrying ``record``'s change (the emulator's encoders: those of
    `hotkeys generate --source kinesis`); its time within its second follows its position (the benchmark's
    records are 1 ms apart)."""
    precision, per_second = PRECISIONS[source]
    second = int(record["dynamodb"]["ApproximateCreationDateTime"])
    created = second * per_second + (position % 1000) * per_second // 1000 + (position * 7) % (per_second // 1000)
    created_us = created * (1_000_000 // per_second)
    table = record["eventSourceARN"].split(":", 5)[5].split("/")[1]
    event_id = record["eventID"]
    uuid = f"{event_id[:8]}-{event_id[8:12]}-{event_id[12:16]}-{event_id[16:20]}-{event_id[20:32]}"
    change = decoded_change(record, table, created_us, cast(Precision, precision), uuid)
    keys = json.dumps(record["dynamodb"]["Keys"], sort_keys=True).encode()
    partition_key = hashlib.md5(keys, usedforsecurity=False).hexdigest().upper()
    arrival_ms = round((created / per_second + 0.05) * 1000)
    return lambda_record(change, partition_key, SHARD, str(FIRST_SEQUENCE + position * 1_000), arrival_ms, KINESIS_ARN)


def write_deliveries(folder: Path, records: list[dict[str, Any]], source: str) -> list[int]:
    """The records as ``source`` delivers them, in events of up to ``BATCH`` records cut at Lambda's
    payload limit (``event-NNNNN.json`` in ``folder``); returns each event's record count."""
    from hotkeys.emulator.lanes import PAYLOAD_LIMIT

    folder.mkdir(parents=True, exist_ok=True)
    shaped = (
        records if source == "dynamodb" else [kinesis_record(r, position, source) for position, r in enumerate(records)]
    )
    counts: list[int] = []
    batch: list[bytes] = []
    size = 0
    for record in shaped:
        text = json.dumps(record).encode()
        if batch and (len(batch) == BATCH or size + len(text) + 2 > PAYLOAD_LIMIT - 200):
            _write_event(folder, len(counts), batch)
            counts.append(len(batch))
            batch, size = [], 0
        batch.append(text)
        size += len(text) + 2
    if batch:
        _write_event(folder, len(counts), batch)
        counts.append(len(batch))
    return counts


def _write_event(folder: Path, number: int, records: list[bytes]) -> None:
    (folder / f"event-{number:05d}.json").write_bytes(b'{"Records": [' + b", ".join(records) + b"]}")


def source_arn(source: str) -> str:
    from bench.shapes import TABLE

    if source == "dynamodb":
        return f"arn:aws:dynamodb:us-east-1:123456789012:table/{TABLE}/stream/2026-12-01T00:00:00.000"
    return KINESIS_ARN


def child(source: str, folder: str) -> dict[str, Any]:
    """One delivery of one shape in this fresh process: ``PASSES`` passes (each a fresh window, its
    final invocation included) through the deployed handler; medians per record."""
    from bench.lambda_process import _invoke_all, deployed_handler

    handle, answers = deployed_handler()
    failures = [0]

    def counting(event: dict[str, Any], context: Any) -> dict[str, Any]:
        response: dict[str, Any] = handle(event, context)
        failures[0] += len(response.get("batchItemFailures", ()))
        return response

    paths = sorted(Path(folder).glob("event-*.json"))
    fields = {
        "shardId": SHARD if source != "dynamodb" else "shardId-00001796083200000-bench",
        "eventSourceARN": source_arn(source),
        "isWindowTerminatedEarly": False,
    }
    bills = [_invoke_all(counting, paths, final=True, fields=fields) for _ in range(PASSES)]
    per_record = 1e6 / bills[0].records
    return {
        "source": source,
        "records": bills[0].records,
        "events": len(paths),
        "parse_us": round(median(b.parse for b in bills) * per_record, 2),
        "gc_us": round(median(b.gc for b in bills) * per_record, 2),
        "handler_us": round(median(b.handler for b in bills) * per_record, 2),
        "total_us": round(median(b.parse + b.handler for b in bills) * per_record, 2),
        "failures": failures[0],
        "requests": dict(answers.requests),
    }


def _measure(source: str, folder: Path) -> dict[str, Any]:
    output = subprocess.run(
        [sys.executable, "-m", "bench.kinesis_cpu", "--child", source, str(folder)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return dict(json.loads(output.strip().splitlines()[-1]))


def rotated(round_: int) -> list[str]:
    """The deliveries' order in a round: each goes first, middle and last in turn (the later processes
    of a sequence have measured slower on this machine: bench.compare)."""
    shift = round_ % len(SOURCES)
    return [*SOURCES[shift:], *SOURCES[:shift]]


def measure_shape(shape: str, records: int, rounds: int) -> dict[str, Any]:
    """Every delivery of ``records`` items of ``shape`` in ``rounds`` rounds; the ratios to DynamoDB."""
    from bench.shapes import records as make_records

    items = make_records(shape, "mixed", records)
    runs: dict[str, list[dict[str, Any]]] = {source: [] for source in SOURCES}
    with tempfile.TemporaryDirectory() as scratch:
        folders = {source: Path(scratch, source) for source in SOURCES}
        sizes = {source: write_deliveries(folders[source], items, source) for source in SOURCES}
        del items
        for round_ in range(rounds):
            for source in rotated(round_):
                runs[source].append(_measure(source, folders[source]))
    base = [run["total_us"] for run in runs["dynamodb"]]
    cell: dict[str, Any] = {"shape": shape, "records": records, "rounds": rounds, "sources": {}}
    for source in SOURCES:
        totals = [run["total_us"] for run in runs[source]]
        last = runs[source][-1]
        cell["sources"][source] = {
            "records_per_event": round(records / len(sizes[source]), 1),
            "total_us": totals,
            "best_total_us": min(totals),
            "parse_us": median(run["parse_us"] for run in runs[source]),
            "gc_us": median(run["gc_us"] for run in runs[source]),
            "handler_us": median(run["handler_us"] for run in runs[source]),
            "failures": last["failures"],
            "requests": last["requests"],
        }
        if source != "dynamodb":
            cell["sources"][source]["ratio_median"] = round(median(k / d for k, d in zip(totals, base, strict=True)), 3)
            cell["sources"][source]["ratio_best"] = round(min(totals) / min(base), 3)
    return cell


def steps(shape: str, repeats: int = 30) -> dict[str, float]:
    """Where a Kinesis record's extra CPU goes: each step of reading 1,000 records of ``shape`` timed
    alone in this process, the steps interleaved ``repeats`` times, the least of each (µs per record);
    the carried memory of a busy shard (``MAX_SEEN`` identities) written and read back once per batch."""
    import binascii
    import gc
    import time

    from bench.shapes import records as make_records
    from hotkeys.detector.adapters.key_schema import PartitionKeyResolver
    from hotkeys.detector.consumer.seen import MAX_SEEN, SeenChanges
    from hotkeys.detector.domain import kinesis
    from hotkeys.detector.domain.records import parse_change

    items = make_records(shape, "mixed", BATCH)
    wrapped = [kinesis_record(record, position, "kinesis-microsecond") for position, record in enumerate(items)]
    plain, carried = json.dumps({"Records": items}).encode(), json.dumps({"Records": wrapped}).encode()
    resolve = PartitionKeyResolver(None, lambda name: {})
    datas = [record["kinesis"]["data"] for record in wrapped]
    texts = [binascii.a2b_base64(data).decode() for data in datas]
    unwrapped = [kinesis.unwrap(record) for record in wrapped]
    changes = [parse_change(u.record, resolve, 1, None, False, None) for u in unwrapped]
    full = SeenChanges()
    for index in range(MAX_SEEN):
        full.add(index // 1000, index.to_bytes(6, "big"), index)

    def carry() -> None:
        SeenChanges.from_text(full.to_text())

    measured: dict[str, Callable[[], object]] = {
        "DynamoDB event: runtime's json.loads": lambda: json.loads(plain),
        "Kinesis event: runtime's json.loads": lambda: json.loads(carried),
        "kinesis.data: base64 decode": lambda: [binascii.a2b_base64(data, strict_mode=True) for data in datas],
        "kinesis.data: json scan of the change": lambda: [kinesis._scan(text, 0) for text in texts],
        "unwrap (decode, scan, checks, binary search)": lambda: [kinesis.unwrap(record) for record in wrapped],
        "parse_change, DynamoDB record": lambda: [parse_change(r, resolve, 1, None, False, None) for r in items],
        "identity": lambda: [kinesis.identity(c, u) for c, u in zip(changes, unwrapped, strict=True)],
        "carried memory, full, written and read back": carry,
    }
    least = dict.fromkeys(measured, float("inf"))
    gc.disable()
    for _ in range(repeats):
        for name, step in measured.items():
            started = time.process_time()
            step()
            least[name] = min(least[name], time.process_time() - started)
    gc.enable()
    return {name: round(seconds * 1e6 / BATCH, 2) for name, seconds in least.items()}


def table(cells: list[dict[str, Any]]) -> list[str]:
    rows = [
        "| shape (mixed, batch 1,000) | delivery | records / event | parse µs | GC µs (parse or handler) | handler µs | "
        "total µs (best round) | Kinesis / DynamoDB, median of rounds | best / best |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for cell in cells:
        for source, figures in cell["sources"].items():
            ratios = f"{figures['ratio_median']:.3f} | {figures['ratio_best']:.3f}" if source != "dynamodb" else "1 | 1"
            rows.append(
                f"| {cell['shape']} | {source} | {figures['records_per_event']:g} | {figures['parse_us']:g} | "
                f"{figures['gc_us']:g} | {figures['handler_us']:g} | {figures['best_total_us']:g} | {ratios} |"
            )
    return rows


def steps_table(breakdown: dict[str, dict[str, float]]) -> list[str]:
    shapes = list(breakdown)
    rows = [f"| step, µs per record | {' | '.join(shapes)} |", "|---|" + "---:|" * len(shapes)]
    for name in breakdown[shapes[0]]:
        rows.append(f"| {name} | {' | '.join(f'{breakdown[shape][name]:g}' for shape in shapes)} |")
    return rows


def verdicts(cells: list[dict[str, Any]]) -> list[str]:
    """Issue #49's bound, judged on the default precision; the millisecond variant is reported only."""
    lines = []
    for cell in cells:
        figures = cell["sources"]["kinesis-microsecond"]
        ratio = figures["ratio_median"]
        mark = "met" if ratio <= TARGET else "**missed**"
        lines.append(f"- {cell['shape']}: Kinesis (MICROSECOND) / DynamoDB ≤ {TARGET:g}: {mark} ({ratio:.3f})")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", nargs=2, metavar=("SOURCE", "FOLDER"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--records", type=int, default=30_000, help="records per shape (40 KB items: a tenth; default 30000)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the three deliveries per shape")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated shapes (bench/shapes.py)")
    parser.add_argument("--out", type=Path, default=OUTPUT, help="the run's JSON (default: docs/)")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    from bench.measurements import append, command_line, commit

    cells = []
    for shape in args.shapes.split(","):
        count = max(args.records // 10, 100) if shape == "40KB-nested" else args.records
        cells.append(measure_shape(shape, count, args.rounds))
        print("\n".join(table(cells[-1:])), flush=True)
    breakdown = {shape: steps(shape) for shape in args.shapes.split(",") if shape != "40KB-nested"}
    typed = command_line("bench.kinesis_cpu", argv)
    lines = [*table(cells), "", *verdicts(cells), "", *steps_table(breakdown)]
    print("\n".join(lines))
    append(typed, lines=lines)
    result = {
        "date": f"{datetime.now(UTC):%Y-%m-%d}",
        "command": typed,
        "commit": commit(),
        "cells": cells,
        "steps": breakdown,
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    if args.out == OUTPUT:
        from bench.report import KINESIS_TITLE, refresh_section

        refresh_section(KINESIS_TITLE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
