"""What the deployed function writes to CloudWatch Logs per 1,000 records of a saturated shard.

One window of a saturated shard (1,000 records/s for 60 s, batches of 1,000: 60 invocations a second
apart, on the container's metrics clock, and the window's final one) through the handler as the stack
deploys it (`bench.lambda_process.deployed_handler`:
stats table, alerts and TTL archive on, INFO logs in JSON, EMF metrics, active tracing; AWS answered
in-process), with names as long as real ones (a CDK-generated function name and ARN, a real shard id).
Everything the function prints is captured and sorted into: the EMF metrics line, the function's own
log lines (by message), and Lambda's platform records, which are not observable here and are taken
from the cost model's telemetry-schema shapes (`hotkeys.cli.cost.PLATFORM_RECORDS`), one set per
invocation. The figures are bytes ingested (each line plus its newline) per 1,000 records.

    python -m bench.log_volume        # writes docs/log-volume-latest.json
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().parent.parent / "docs" / "log-volume-latest.json"
COMMAND = "python -m bench.log_volume"
FUNCTION = "HotKeyDetector-DetectorFunction8C1F2A3B-AbCdEfGhIjKl"
SHARD = "shardId-00000001796083200000-7f3a9c1e"
WINDOW = {"start": "2026-12-01T00:00:00Z", "end": "2026-12-01T00:01:00Z"}
RECORDS, BATCH = 60_000, 1000
# (shape, mix, counted GSIs): the mixed traffic the CPU benchmark's saturated-shard cells use
SCENARIOS = (("1KB-12", "mixed", 0), ("1KB-12", "mixed", 5))


class _Context:
    function_name, memory_limit_in_mb = FUNCTION, 512
    invoked_function_arn = f"arn:aws:lambda:eu-central-1:123456789012:function:{FUNCTION}"
    aws_request_id = "8f507cfc-1a2b-4697-b07a-ac58fc914c95"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def _kind(line: str) -> str:
    """The EMF line, or the function's log line named by its message."""
    if '"_aws"' in line:
        return "emf metrics line"
    try:
        return f"log: {json.loads(line).get('message', '?')}"
    except ValueError:
        return "other output"


def measure(shape: str, mix: str, indexes: int) -> dict[str, Any]:
    from bench.lambda_process import deployed_handler, write_events
    from bench.shapes import records as make_records
    from hotkeys.cli.cost import PLATFORM_BYTES_PER_INVOCATION
    from hotkeys.detector.observability import logger

    seconds = [0.0]  # a saturated shard's batches come a second apart (the metrics buffer's clock)
    handle, _answers = deployed_handler(indexes=indexes, clock=lambda: seconds[0])
    output = io.StringIO()
    logger.registered_handler.stream = output  # type: ignore[attr-defined]  # kept from import time
    bytes_by_kind: Counter[str] = Counter()
    lines_by_kind: Counter[str] = Counter()
    invocations = 0
    with tempfile.TemporaryDirectory() as folder:
        write_events(folder, make_records(shape, mix, RECORDS), BATCH)
        bodies = [path.read_bytes() for path in sorted(Path(folder).glob("event-*.json"))]
    state: dict[str, Any] = {}
    for body, final in [*((body, False) for body in bodies), (b'{"Records": []}', True)]:
        event = json.loads(body)
        event.update({"shardId": SHARD, "window": WINDOW, "state": state, "isFinalInvokeForWindow": final})
        with contextlib.redirect_stdout(output):  # the EMF line is printed
            state = handle(event, _Context()).get("state", {})
        invocations += 1
        seconds[0] += 1.0
    for line in output.getvalue().splitlines():
        if line.strip():
            bytes_by_kind[_kind(line)] += len(line.encode()) + 1
            lines_by_kind[_kind(line)] += 1
    bytes_by_kind["lambda platform records (modelled)"] = invocations * PLATFORM_BYTES_PER_INVOCATION
    lines_by_kind["lambda platform records (modelled)"] = invocations * 2
    per_1000 = {kind: round(1000 * size / RECORDS, 1) for kind, size in sorted(bytes_by_kind.items())}
    return {
        "scenario": f"{shape} {mix}, {indexes} GSIs, batch {BATCH}, one window of a saturated shard",
        "records": RECORDS,
        "invocations": invocations,
        "gsis": indexes,
        "lines": dict(sorted(lines_by_kind.items())),
        "bytes_per_1000_records": per_1000,
        "total_bytes_per_1000_records": round(sum(per_1000.values()), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-write", action="store_true", help="print only; leave the committed output alone")
    args = parser.parse_args(argv)
    results = [measure(*scenario) for scenario in SCENARIOS]
    text = json.dumps({"command": COMMAND, "scenarios": results}, indent=1) + "\n"
    sys.stdout.write(text)
    if not args.no_write:
        OUTPUT.write_text(text)
        from bench.measurements import append, command_line

        lines = [
            f"- {r['scenario']}: {r['total_bytes_per_1000_records']:,} log bytes per 1,000 records "
            f"({', '.join(f'{kind} {size:,}' for kind, size in r['bytes_per_1000_records'].items())})"
            for r in results
        ]
        append(command_line("bench.log_volume", argv), lines=lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
