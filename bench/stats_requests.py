"""Stats-table requests (reads included) per 1,000 stream records of a saturated shard, at 1 and 100 shards.

The deployed wiring (``build_ports``: stats table, alerts on an SNS topic, TTL archive on) for a table
with five GSIs (``bench.shapes.table_description``'s: every projection type), through the ESM
emulation (batch 1,000, 5 s batching window, 60 s tumbling window) against in-process moto, every
shard in its own container and all shards side by side in emulated time (``bench.lanes``), so each
window-heads Query answers with the heads the other shards had stored by then. Requests are counted
per operation with botocore's ``provide-client-params`` hook on each container's clients; a stats-table request
is any call naming the stats table (PutItem, UpdateItem, Query (each page), GetItem, DeleteItem).

A saturated shard writes 1,000 WCU/s (one partition's limit): 1,000 records/s of ~1 KB items.
The mixed operations of ``bench.shapes`` (30% inserts, 50% updates, 10% deletes, 10% TTL deletions)
over Zipf keys, each shard with its own keys (a table key lives on one shard). Index keys ``a0..a4``:

* ``spread``: each of 10,000 values, so no index partition nears its limit even at 100 shards;
* ``3 values``: ``bench.shapes``'s low-cardinality keys: at 1 shard each index partition takes a third
  of its index's writes (under the alert rate); at 100 shards every one of the 15 is far over its
  limit (a table that would throttle: the worst case for incident writes, every partition firing).

The detector's requests follow event time and relative thresholds, not record counts or sizes: a
flush per ``FLUSH_SECONDS`` (more after batches short of the batch size, which the scaled mapping scales
too), the judge's looks (a Query per bucket, per table), incident writes per incident; a partition is hot at ``ALERT_THRESHOLD`` of ``PARTITION_WCU_LIMIT``,
a share counts once the table's window reaches ``SHARE_MIN_WCU``. So a saturated shard can be scaled
down: the scaled runs write 10 records/s of the same ~1 KB items (1 WCU each) against a partition
limit of 10 WCU/s, with ``SHARE_MIN_WCU`` and the mapping's batch size scaled alike (batches still
fill in one second of event time). Every partition is then at the same fraction of its limit as on a
real saturated shard (index entries of every projection included), with the same flush cadence, at a
hundredth of the records. Requests are reported per shard-second, i.e. per 1,000 records of a
saturated shard at the real limit. The 1-shard runs measure both scales: their agreement is the check.
The 10- and 100-shard runs (``measure_processes``) spread the shards over ``--processes`` worker
processes, each shard its own container in its own thread, against one ``ThreadedMotoServer`` on
127.0.0.1; the processes take turns through the coordinator exactly as ``bench.lanes.Turns`` lanes do.
Not scaled: a summary's capacity (keys per shard and window before pruning) sees a hundredth of the
distinct keys, so the scaled runs prune less (their bounds are tighter).

    python -m bench.stats_requests             # make bench: the 1-shard runs (8 windows)
    python -m bench.stats_requests --wide      # and the 10- and 100-shard runs (scaled, worker processes)
    python -m bench.stats_requests --smoke     # one small run
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import logging
import os
import platform
import resource
import sys
import time
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.lanes import Lane, Turns, moto_environment
from bench.shapes import T0, TABLE
from bench.stats_requests_model import (
    WINDOW,
    Counting,
    Measured,
    Run,
    ScaledSettings,
    counted_clients,
    create_resources,
    function_sees,
    shard_records,
)

if TYPE_CHECKING:
    from hotkeys.detector.adapters.aws import AwsClients

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "stats-requests-latest.json"
TARGET = 0.2
STATS_OPERATIONS = ("PutItem", "UpdateItem", "Query", "GetItem", "DeleteItem", "BatchWriteItem", "BatchGetItem")
# The second of the minute the judge's watchdog fires at (any: its chain looks just after each boundary).
JUDGE_PHASE = 37.0

RUNS = (
    Run(1, 1000, "spread"),
    Run(1, 10, "spread"),
    Run(1, 1000, "3 values"),
    Run(1, 10, "3 values"),
)
WIDE = (Run(10, 10, "3 values"), Run(100, 10, "3 values"), Run(100, 10, "spread"))
# Worker processes of the wide runs: each holds its shards' containers (a process per shard would hold
# a Python, boto3 and the detector 100 times over).
PROCESSES = 20
# No message from any worker for this long: one of them died without saying so.
STALL_SECONDS = 600


def measure(run: Run) -> dict[str, Any]:
    """Every shard in one process, on in-process moto (the 1-shard runs and the smoke run): the deployment
    emulated (``hotkeys.emulator.emulation``), every container's and the judge's requests counted. The judge
    looks while the shards run and stops with them (the steady state: no quiet tail)."""
    import boto3
    from moto import mock_aws

    from hotkeys.emulator.emulation import Containers, Deployment, Judging, emulate
    from hotkeys.emulator.lanes import EventSourceMapping

    started = time.process_time()
    suffix = uuid.uuid4().hex[:8]
    lineages = [[(f"shardId-{shard:05d}", shard_records(run, shard))] for shard in range(run.shards)]
    with mock_aws():
        scaled = create_resources(run, suffix)
        counting = Counting(scaled.settings.stats_table_name)
        # One boto3 session for every container: each still has its own clients (and event hooks), but
        # the service models and endpoint data are parsed once, not once per container (tens of MB each).
        session = boto3.session.Session()
        emulated = emulate(
            Deployment(scaled.settings, counted_clients(session, counting)),
            lineages,
            mapping=EventSourceMapping(scaled.mapping),
            containers=Containers(aws_for=lambda _number: counted_clients(session, counting)),
            judge=Judging(tables=(TABLE,), tail_seconds=0),
        )
        incidents = _stored_incidents(scaled.settings.stats_table_name)
    records = sum(len(records) for lineage in lineages for _s, records in lineage)
    invocations = sum(len(lane.invocations) for lane in emulated.lanes)
    return _report(run, scaled, Measured(counting, incidents, records, invocations), started)


def _stored_incidents(stats_table: str) -> list[dict[str, Any]]:
    import boto3

    pages = boto3.client("dynamodb").get_paginator("scan").paginate(TableName=stats_table)
    return [item for page in pages for item in page["Items"] if "reason" in item]


def _report(run: Run, scaled: ScaledSettings, measured: Measured, started: float, processes: int = 1) -> dict[str, Any]:
    settings, mapping = scaled.settings, scaled.mapping
    counting, incidents, records = measured.counting, measured.incidents, measured.records
    shard_seconds = run.shards * run.windows * WINDOW
    total = sum(counting.stats.values())
    per_1000 = 1000 * total / records
    saturated = total / shard_seconds  # per shard-second = per 1,000 records at 1,000 records/s
    return {
        "run": run.name,
        "shards": run.shards,
        "processes": processes,
        "records_per_second_per_shard": run.rate,
        "item_bytes": run.body + 100,
        "partition_wcu_limit": settings.partition_wcu_limit,
        "share_min_wcu": settings.share_min_wcu,
        "batch_size": mapping.batch_size,
        "index_keys": run.indexes,
        "windows": run.windows,
        "records": records,
        "invocations": measured.invocations,
        "stats_requests": total,
        "stats_requests_per_1000_records": round(per_1000, 4),
        "stats_requests_per_1000_saturated": round(saturated, 4),
        "per_operation_per_1000_saturated": {
            operation: round(count / shard_seconds, 4) for operation, count in sorted(counting.stats.items())
        },
        "per_operation": dict(sorted(counting.stats.items())),
        "sources_per_1000_saturated": {
            source: round(count / shard_seconds, 4) for source, count in counting.sources.most_common()
        },
        "other_requests": dict(sorted(counting.other.items())),
        "incidents": len(incidents),
        "incidents_by_reason": dict(
            sorted(
                Counter(
                    item["reason"]["S"] + (f" ({item['index_name']['S']})" if "index_name" in item else "")
                    for item in incidents
                ).items()
            )
        ),
        "target": TARGET,
        "target_met": saturated <= TARGET,
        "cpu_seconds": round(time.process_time() - started, 1),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }


# -- many shards: a process per group of shards, one moto server --------------------------------------
class RemoteTurns(Turns):
    """``Turns`` across processes: a lane asks the coordinator (``measure_processes``) for its turn on a
    shared queue and waits on its own pipe."""

    def __init__(self, queue: Any, pipes: dict[int, Any]) -> None:
        super().__init__()
        self._queue = queue
        self._pipes = pipes

    def wait_turn(self, lane: int, at: float) -> None:
        self._queue.put(("wait", lane, at))
        self._pipes[lane].recv()
        self.now = at


def _worker(run: Run, lanes: list[int], endpoint: str, scaled: ScaledSettings, queue: Any, pipes: Any) -> None:
    """One process: its lanes (shards) in threads, each with its own container, taking turns with every
    other process's lanes, and, in the process holding lane ``run.shards``, the judge looking on its
    schedule while the shards run (their lag taken as none: they run in step); sends its counts back on
    ``queue``."""
    import threading

    function_sees(scaled.mapping)

    import boto3

    from hotkeys.detector.observability import logger

    moto_environment(POWERTOOLS_METRICS_DISABLED="true")
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    logger.setLevel("CRITICAL")
    counting = Counting(scaled.settings.stats_table_name)
    session = boto3.session.Session()
    worker = _WorkerLanes(run, scaled, session, counting, RemoteTurns(queue, pipes), queue)
    threads = [threading.Thread(target=worker.consume, args=(number,), daemon=True) for number in lanes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result = {
        "stats": dict(counting.stats),
        "sources": dict(counting.sources),
        "other": dict(counting.other),
        "invocations": sum(worker.invocations),
        "records": worker.records,
        "cpu_seconds": time.process_time(),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }
    queue.put(("result", -1, result))


@dataclass
class _WorkerLanes:
    """A worker process's lanes, each run by ``consume`` in its own thread: what they share, and what the
    shards' lanes add up."""

    run: Run
    scaled: ScaledSettings
    session: Any  # one boto3 session: each container still has its own clients
    counting: Counting
    turns: RemoteTurns
    queue: Any
    invocations: list[int] = field(default_factory=list)
    records: int = 0

    def consume(self, number: int) -> None:
        try:
            if number == self.run.shards:  # the judge's lane
                self._judge(number)
            else:
                self._shard(number)
        except BaseException as error:  # reported to the coordinator, which stops the run
            self.queue.put(("error", number, repr(error)))
        finally:
            self.queue.put(("done", number, 0.0))

    def _judge(self, number: int) -> None:
        """The judge looking on its schedule until the shards' last batching window has ended."""
        from hotkeys.detector.handlers.wiring import build_judge
        from hotkeys.emulator.emulation import judge_times
        from hotkeys.emulator.lanes import Ticker

        settings, mapping, turns = self.scaled.settings, self.scaled.mapping, self.turns
        judge = build_judge(
            settings,
            counted_clients(self.session, self.counting),
            clock=lambda: turns.now,
            lag=lambda _table: 0.0,
            tables=(TABLE,),
        )
        end = T0 + self.run.windows * WINDOW + mapping.max_batching_window_seconds + 1
        times = [
            at for at in itertools.takewhile(lambda at: at <= end, judge_times(T0, settings.flush_seconds, JUDGE_PHASE))
        ]
        Ticker(number, turns, times, lambda _at: judge.look()).run()

    def _shard(self, number: int) -> None:
        """Shard ``number``'s records through its own container, as its event source mapping delivers them."""
        from hotkeys.emulator.esm import Deliveries, consume_lineage

        mapping = self.scaled.mapping
        lineage = [(f"shardId-{number:05d}", shard_records(self.run, number))]
        lane = Lane(number, self.turns, lineage, Deliveries(), mapping)
        handler = _handler(self.scaled.settings, counted_clients(self.session, self.counting), self.turns)
        consume_lineage(lane.wrap(handler), lane.feeds(), mapping, lane)
        self.invocations.append(len(lane.invocations))
        self.records += sum(len(part) for _s, part in lineage)


def _handler(settings: Any, aws: AwsClients, turns: Any) -> Any:
    """A container of the consumer on emulated time (``RemoteTurns.now``)."""
    from hotkeys.detector.consumer.pipeline import parse_event, process_batch
    from hotkeys.detector.handlers.wiring import build_ports

    clock = lambda: turns.now  # noqa: E731
    ports = build_ports(settings, aws, clock=clock, wall_clock=clock)
    return lambda event: process_batch(parse_event(event), settings, ports).response()


def measure_processes(run: Run, processes: int) -> dict[str, Any]:
    """The run with its shards spread over ``processes`` processes (each shard its own container, in its
    own thread), against one moto server on 127.0.0.1, in emulated-time turns across all of them (only
    one invocation runs at a time, as in ``bench.lanes``)."""
    import multiprocessing
    import socket

    from moto.server import ThreadedMotoServer

    started = time.process_time()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the server's line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    # moto's backends are the process's: a run before this one (another server) left its tables there.
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")).close()
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    try:
        scaled = create_resources(run, uuid.uuid4().hex[:8])
        context = multiprocessing.get_context("spawn")
        queue = context.Queue()
        # Lane run.shards is the judge's (in the first process).
        groups = [list(range(run.shards))[number::processes] for number in range(min(processes, run.shards))]
        groups[0].append(run.shards)
        pipes = {lane: context.Pipe(duplex=False) for lane in range(run.shards + 1)}
        workers = [
            context.Process(
                target=_worker,
                args=(run, group, endpoint, scaled, queue, {lane: pipes[lane][0] for lane in group}),
                daemon=True,
            )
            for group in groups
        ]
        for worker in workers:
            worker.start()
        results = _coordinate(queue, {lane: sender for lane, (_receiver, sender) in pipes.items()}, len(workers))
        for worker in workers:
            worker.join()
        incidents = _stored_incidents(scaled.settings.stats_table_name)
    finally:
        os.environ.pop("AWS_ENDPOINT_URL", None)
        server.stop()
    counting = Counting(scaled.settings.stats_table_name)
    for result in results:
        counting.stats.update(result["stats"])
        counting.sources.update(result["sources"])
        counting.other.update(result["other"])
    records = sum(result["records"] for result in results)
    invocations = sum(result["invocations"] for result in results)
    measured = Measured(counting, incidents, records, invocations)
    report = _report(run, scaled, measured, started, processes=len(workers))
    report["cpu_seconds"] = round(report["cpu_seconds"] + sum(result["cpu_seconds"] for result in results), 1)
    report["peak_rss_mb"] = {
        "coordinator": report["peak_rss_mb"],
        "largest worker": max(result["peak_rss_mb"] for result in results),
    }
    return report


def _coordinate(queue: Any, pipes: dict[int, Any], workers: int) -> list[dict[str, Any]]:
    """Wakes the earliest waiting lane once every running lane waits (``bench.lanes.Turns``' rule)."""
    active = set(pipes)
    waiting: dict[int, float] = {}
    results: list[dict[str, Any]] = []
    errors: list[str] = []
    while len(results) < workers:
        kind, lane, payload = queue.get(timeout=STALL_SECONDS)
        if kind == "wait":
            waiting[lane] = payload
        elif kind == "done":
            active.discard(lane)
            waiting.pop(lane, None)
        elif kind == "error":
            errors.append(f"shard {lane}: {payload}")
        else:
            results.append(payload)
        if waiting and len(waiting) == len(active):
            _at, chosen = min((at, other) for other, at in waiting.items())
            del waiting[chosen]
            pipes[chosen].send(True)
    if errors:
        raise RuntimeError("; ".join(errors))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="one small run: 3 shards, 1 window")
    parser.add_argument("--wide", action="store_true", help="also the 10- and 100-shard runs (scaled: module doc)")
    parser.add_argument("--processes", type=int, default=PROCESSES, help="worker processes of the wide runs")
    parser.add_argument("--windows", type=int, default=8, help="windows per run")
    parser.add_argument("--shards", type=int, nargs="*", help="only the runs of these shard counts")
    parser.add_argument("--batch-seconds", type=int, default=1, help="seconds of records per batch (wide runs)")
    parser.add_argument("--out", default=str(OUTPUT))
    args = parser.parse_args(argv)
    moto_environment(POWERTOOLS_METRICS_DISABLED="true")
    from hotkeys.detector.observability import logger

    logger.setLevel("CRITICAL")
    if args.smoke:
        runs: tuple[Run, ...] = (Run(3, 10, "3 values", windows=1),)
    else:
        runs = tuple(
            dataclasses.replace(
                run, windows=args.windows, batch_seconds=args.batch_seconds if run.shards > 1 else run.batch_seconds
            )
            for run in RUNS + (WIDE if args.wide else ())
            if not args.shards or run.shards in args.shards
        )
    rows = []
    for run in runs:
        print(f"{run.name}, {run.windows} windows ...", flush=True)
        rows.append(measure(run) if run.shards == 1 or args.smoke else measure_processes(run, args.processes))
        print(json.dumps(rows[-1]), flush=True)
    command = "python -m bench.stats_requests" + (" --smoke" if args.smoke else "")
    if args.wide:
        command += f" --wide --processes {args.processes}"
    if args.windows != parser.get_default("windows"):
        command += f" --windows {args.windows}"
    if args.shards:
        command += " --shards " + " ".join(str(count) for count in args.shards)
    if args.batch_seconds != 1:
        command += f" --batch-seconds {args.batch_seconds}"
    result = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "python": platform.python_version(),
        "command": command,
        "runs": rows,
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    if Path(args.out) == OUTPUT:
        from bench.report import REQUESTS_TITLE, refresh_section

        refresh_section(REQUESTS_TITLE)
    from bench.measurements import append, command_line

    lines = [
        f"- {row['run']}, {row['windows']} windows: {row['stats_requests_per_1000_saturated']} stats-table requests "
        f"per 1,000 records of a saturated shard (target {row['target']}: {'met' if row['target_met'] else 'missed'})"
        for row in rows
    ]
    append(command_line("bench.stats_requests", argv), lines=lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
