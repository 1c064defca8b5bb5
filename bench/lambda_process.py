"""What a Lambda container pays per record: the runtime's parse, garbage collection and the handler.

Each measurement runs in a fresh interpreter that holds only what the function's container holds:
the handler's imports, its initialised clients, one event at a time (read from disk as bytes,
outside the timing), and the state carried between invocations. Per invocation it times
``json.loads`` of the event bytes (what the runtime does before calling the handler), the
handler, and the state's round trip; ``gc.callbacks`` add up the collector's share. Modes compare
the garbage-collection policy at initialisation: CPython's default, and ``gc.freeze()`` after
initialisation (what ``hotkeys.detector.app`` does).

    python -m bench.lambda_process            # 60,000 ~1 KB records (Zipf 1.1), batches of 1,000

Not covered yet: the deployed wiring (alerts and archive on), other item shapes and
batch sizes, and a parse the function owns.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MODES = ("default", "freeze")
WINDOW = {"start": "2026-12-01T00:00:00Z", "end": "2026-12-01T00:01:00Z"}


def child(mode: str, folder: str) -> dict[str, Any]:
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_REGION": "us-east-1",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_DISABLED": "true",
            "POWERTOOLS_LOG_LEVEL": "ERROR",
        }
    )
    from bench.stubs import NullStats
    from hotkeys.detector.adapters.key_schema import PartitionKeyResolver
    from hotkeys.detector.app import Container, build_handler
    from hotkeys.detector.config import Settings
    from hotkeys.detector.pipeline import Ports

    ports = Ports(stats=NullStats(), resolve_key=PartitionKeyResolver(None, lambda name: {}))
    container = Container(Settings(stats_table_name="bench-stats"), ports)  # AWS answered in-process
    handle = build_handler(lambda: container)
    gc.unfreeze()
    gc.collect()
    if mode == "freeze":
        gc.freeze()
    collector = {"seconds": 0.0, "collections": 0, "started": 0.0}

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collector["started"] = time.perf_counter()
        else:
            collector["seconds"] += time.perf_counter() - collector["started"]
            collector["collections"] += 1

    class Context:
        function_name, memory_limit_in_mb, aws_request_id = "bench", 512, "bench"
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"

    gc.callbacks.append(on_gc)
    parse = handler = 0.0
    records = 0
    state: dict[str, Any] = {}
    for path in sorted(Path(folder).glob("event-*.json")):
        body = path.read_bytes()
        started = time.process_time()
        event = json.loads(body)
        parsed = time.process_time()
        event.update({"shardId": "shardId-1", "window": WINDOW, "state": state, "isFinalInvokeForWindow": False})
        response = handle(event, Context())  # type: ignore[arg-type]
        state = json.loads(json.dumps(response["state"]))
        done = time.process_time()
        parse += parsed - started
        handler += done - parsed
        records += len(event["Records"])
        del event, response
    gc.callbacks.remove(on_gc)
    per_record = 1e6 / records
    return {
        "mode": mode,
        "records": records,
        "parse_us": round(parse * per_record, 1),
        "handler_us": round(handler * per_record, 1),
        "total_us": round((parse + handler) * per_record, 1),
        "gc_us": round(collector["seconds"] * per_record, 1),
        "collections": collector["collections"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--child", nargs=2, metavar=("MODE", "FOLDER"), help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=int, default=60, help="seconds of 1,000 records/s traffic (default 60)")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    from bench.run import zipf_records

    records = zipf_records(rate=1000, duration=args.seconds)
    with tempfile.TemporaryDirectory() as folder:
        for index in range(0, len(records), 1000):
            body = json.dumps({"Records": records[index : index + 1000]}).encode()
            Path(folder, f"event-{index // 1000:05d}.json").write_bytes(body)
        del records
        results = []
        for mode in MODES:
            output = subprocess.run(
                [sys.executable, "-m", "bench.lambda_process", "--child", mode, folder],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            results.append(json.loads(output.strip().splitlines()[-1]))
    for result in results:
        print(json.dumps(result))
    base, frozen = results
    print(f"total CPU per record, freeze / default: {frozen['total_us'] / base['total_us']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
