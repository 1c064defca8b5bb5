"""Runs ``hotkeys watch``: polls the stream and redraws the table (or prints JSON once)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from hotkeys.cli.common import UserError, aws_clients, settings_from_args
from hotkeys.cli.streams import StreamError
from hotkeys.cli.watch import LiveRow, StreamWatcher, images_warning


def _view(rows: list[LiveRow], watcher: StreamWatcher) -> Group:
    """The table, under the warning for records without images when some were read."""
    warning = images_warning(watcher)
    return Group(*([Text(warning, style="bold red")] if warning else []), _table(rows, watcher))


def _table(rows: list[LiveRow], watcher: StreamWatcher) -> Table:
    grid = Table(
        title=f"{watcher.arn.split('/')[1]}: {watcher.records} records read "
        f"({watcher.malformed} malformed) — alert rate: active-time rate or peak 10 s, the higher"
    )
    columns = (
        "window (UTC)",
        "key",
        "alert rate WCU/s",
        "peak WCU/s",
        "alert rate % of limit",
        "share",
        "writes",
        "WCU",
    )
    for column in columns:
        grid.add_column(column, justify="left" if column in ("window (UTC)", "key") else "right")
    for row in rows:
        grid.add_row(
            row.window_start,
            row.key if row.index is None else f"index {row.index}: {row.key}",
            f"{row.wcu_per_second:.1f}",
            f"{row.peak_wcu_per_second:.1f}",
            f"{row.percent_of_limit:.0f}%",
            f"{100 * row.share:.1f}%",
            str(row.writes),
            str(row.wcu),
        )
    return grid


def watch(args: argparse.Namespace, console: Console, settings_names: tuple[str, ...]) -> int:
    if args.json and not args.once:
        raise UserError("--json needs --once (a live view cannot be printed as one JSON document)")
    # Nothing is stored: the stats table is not used.
    settings = settings_from_args(args, settings_names, stats_table_name="-")
    aws = aws_clients(args)
    dynamodb = aws.client("dynamodb")
    streams = aws.client("dynamodbstreams")
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
        watcher.poll()
        while not watcher.caught_up():
            watcher.poll()
        rows = watcher.rows(args.limit)
        if args.json:
            warning = images_warning(watcher)
            if warning:
                print(f"hotkeys: {warning}", file=sys.stderr)
            print(json.dumps([asdict(row) for row in rows], indent=2))
        else:
            console.print(_view(rows, watcher))
        return 0
    deadline = time.monotonic() + args.duration if args.duration else None
    with Live(_view([], watcher), console=console, refresh_per_second=2) as live:
        while deadline is None or time.monotonic() < deadline:
            watcher.poll()
            live.update(_view(watcher.rows(args.limit), watcher))
            time.sleep(args.interval)
    return 0
