"""Runs ``hotkeys watch``: polls the stream and redraws the table (or prints JSON once)."""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict

from rich.console import Console
from rich.live import Live
from rich.table import Table

from hotkeys.cli.streams import StreamError
from hotkeys.cli.watch import LiveRow, StreamWatcher
from hotkeys.detector.config import Settings


def _table(rows: list[LiveRow], watcher: StreamWatcher) -> Table:
    grid = Table(
        title=f"{watcher.arn.split('/')[1]}: {watcher.records} records read "
        f"({watcher.malformed} malformed) — rate over each key's active time"
    )
    for column in ("window (UTC)", "key", "WCU/s", "% of partition", "share", "writes", "WCU"):
        grid.add_column(column, justify="left" if column in ("window (UTC)", "key") else "right")
    for row in rows:
        grid.add_row(
            row.window_start,
            row.key,
            f"{row.wcu_per_second:.1f}",
            f"{row.percent_of_limit:.0f}%",
            f"{100 * row.share:.1f}%",
            str(row.writes),
            str(row.wcu),
        )
    return grid


def watch(args: argparse.Namespace, console: Console) -> int:
    import boto3

    from hotkeys.cli.main import UserError, aws_target
    from hotkeys.detector.adapters.aws import SDK_CONFIG

    if args.json and not args.once:
        raise UserError("--json needs --once (a live view cannot be printed as one JSON document)")
    settings = Settings(
        stats_table_name="-", window_seconds=args.window_seconds, partition_wcu_limit=args.partition_limit
    )
    with aws_target(args.endpoint_url, args.region):
        dynamodb = boto3.client("dynamodb", config=SDK_CONFIG)
        streams = boto3.client("dynamodbstreams", config=SDK_CONFIG)
        try:
            watcher = StreamWatcher(
                dynamodb,
                streams,
                args.table,
                settings,
                start="TRIM_HORIZON" if args.start == "trim-horizon" else "LATEST",
            )
        except StreamError as error:
            raise UserError(str(error)) from None
        if args.once:
            while watcher.poll():
                pass
            rows = watcher.rows(args.limit)
            if args.json:
                print(json.dumps([asdict(row) for row in rows], indent=2))
            else:
                console.print(_table(rows, watcher))
            return 0
        deadline = time.monotonic() + args.duration if args.duration else None
        with Live(_table([], watcher), console=console, refresh_per_second=2) as live:
            while deadline is None or time.monotonic() < deadline:
                watcher.poll()
                live.update(_table(watcher.rows(args.limit), watcher))
                time.sleep(args.interval)
    return 0
