"""What ``hotkeys.throttle_hook`` costs an application per DynamoDB request (issue #28).

A boto3 DynamoDB client answers ``GetItem`` from botocore's Stubber (no network: the SDK's own work
only: parameter validation, serialization, events), with and without the hook, interleaved, the lowest
of ``--repeats`` runs each; the difference per call is the hook's cost on a request that is not
throttled (every request pays it), and since it drowns in the SDK's own variation, the two handlers are
also timed alone on such a request. A throttled request also builds and writes one EMF line: measured
as the hook's handler alone on a parsed throttle error, written to a no-op.

Like every benchmark here, it prints its figures and appends them, dated, to the measurement log
(docs/measurements.md, ``bench/measurements.py``), and says so; ``--no-write`` prints only.

    python -m bench.throttle_hook [--calls 20000] [--repeats 5] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from botocore.stub import Stubber

from hotkeys.throttle_hook import register

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def _client() -> DynamoDBClient:
    session = boto3.session.Session(aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1")
    return session.client("dynamodb")


def _per_call(client: DynamoDBClient, calls: int) -> float:
    """Seconds per GetItem on a stubbed client."""
    stubber = Stubber(client)
    for _ in range(calls):
        stubber.add_response("get_item", {"Item": {"pk": {"S": "event#42"}}})
    key = {"pk": {"S": "event#42"}}
    with stubber:
        start = time.perf_counter()
        for _ in range(calls):
            client.get_item(TableName="orders", Key=key)
        return (time.perf_counter() - start) / calls


def _per_throttle(calls: int) -> float:
    """Seconds per throttled request in the hook's handler (the line built and written to a no-op)."""
    client = _client()
    hook = register(client, partition_keys={"orders": "pk"}, emit=lambda line: None)
    parsed = {
        "Error": {"Code": "ProvisionedThroughputExceededException", "Message": "throttled"},
        "ThrottlingReasons": [{"reason": "TableReadKeyRangeThroughputExceeded", "resource": "arn:aws:dynamodb:"}],
    }
    context = {"hotkeys.throttle_hook.params": {"TableName": "orders", "Key": {"pk": {"S": "event#42"}}}}
    start = time.perf_counter()
    for _ in range(calls):
        hook.after_call(parsed=parsed, context=context)
    return (time.perf_counter() - start) / calls


def _per_success(calls: int) -> float:
    """Seconds per request in the hook's two handlers on a request that was not throttled."""
    hook = register(_client(), emit=lambda line: None)
    params = {"TableName": "orders", "Key": {"pk": {"S": "event#42"}}}
    parsed = {"Item": {"pk": {"S": "event#42"}}, "ResponseMetadata": {"HTTPStatusCode": 200}}
    start = time.perf_counter()
    for _ in range(calls):
        context: dict[str, Any] = {}
        hook.remember(params=params, context=context)
        hook.after_call(parsed=parsed, context=context)
    return (time.perf_counter() - start) / calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--no-write",
        action="store_true",
        help="print only (by default the figures are appended to docs/measurements.md)",
    )
    args = parser.parse_args(argv)
    plain, hooked = _client(), _client()
    register(hooked, partition_keys={"orders": "pk"}, emit=lambda line: None)
    _per_call(plain, 1000), _per_call(hooked, 1000)  # warm both clients (loaders, caches)
    without, with_hook = [], []
    for _ in range(args.repeats):
        without.append(_per_call(plain, args.calls))
        with_hook.append(_per_call(hooked, args.calls))
    throttle = min(_per_throttle(args.calls) for _ in range(args.repeats))
    handlers = min(_per_success(args.calls) for _ in range(args.repeats))
    base, hooked_best = min(without), min(with_hook)
    lines = [
        f"GetItem on a stubbed client, {args.calls:,} calls, best of {args.repeats}:",
        f"  without the hook   {1e6 * base:8.2f} µs per call",
        f"  with the hook      {1e6 * hooked_best:8.2f} µs per call",
        f"  hook, not throttled {1e6 * (hooked_best - base):7.2f} µs per call ({100 * (hooked_best / base - 1):.1f}%)",
        f"  hook's handlers alone, not throttled {1e6 * handlers:.2f} µs per call"
        " (the end-to-end difference varies more than this run to run)",
        f"  hook, throttled    {1e6 * throttle:8.2f} µs per throttled request (EMF line built, written to a no-op)",
    ]
    print("\n".join(lines))
    if not args.no_write:
        from bench.measurements import LOG, LOG_VARIABLE, ROOT, append, command_line

        log = Path(os.environ.get(LOG_VARIABLE) or LOG)
        append(command_line("bench.throttle_hook", argv), lines=[f"- {line.strip()}" for line in lines], log=log)
        shown = log.relative_to(ROOT) if log.is_relative_to(ROOT) else log
        print(f"(figures appended to {shown}; --no-write prints only)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
