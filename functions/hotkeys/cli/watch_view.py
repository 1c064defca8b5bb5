"""Runs ``hotkeys watch``: polls the stream and redraws the table (or prints JSON once)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from hotkeys.cli.common import UserError, aws_clients, settings_from_args, top_table
from hotkeys.cli.rows import TopRow
from hotkeys.cli.watch import StreamWatcher, images_warning
from hotkeys.detector.config import Settings
from hotkeys.emulator.streams import StreamError


def _view(rows: list[TopRow], watcher: StreamWatcher, settings: Settings, width: int) -> Group:
    """The top-keys table, under the warning for records without images when some were read."""
    warning = images_warning(watcher)
    title = (
        f"{watcher.arn.split('/')[1]}: {watcher.records} records read ({watcher.malformed} malformed), hottest first"
    )
    table = top_table(rows, settings, title, width)
    return Group(*([Text(warning, style="bold red")] if warning else []), table)


def watch(args: argparse.Namespace, console: Console, settings_names: tuple[str, ...]) -> int:
    if args.json and not args.once:
        raise UserError("--json needs --once (a live view cannot be printed as one JSON document)")
    # Nothing is stored: the stats table is not used.
    # Nothing is resolved either: the hysteresis plays no part (0, lest its default refuse a low threshold).
    settings = settings_from_args(args, settings_names, stats_table_name="-", alert_hysteresis=0.0)
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
            # (`top --json`'s shape: an object whose rows are `top`'s rows)
            print(json.dumps({"rows": [row.to_json() for row in rows]}, indent=2))
        else:
            console.print(_view(rows, watcher, settings, console.width))
        return 0
    deadline = time.monotonic() + args.duration if args.duration else None
    with Live(_view([], watcher, settings, console.width), console=console, refresh_per_second=2) as live:
        while deadline is None or time.monotonic() < deadline:
            watcher.poll()
            live.update(_view(watcher.rows(args.limit), watcher, settings, console.width))
            time.sleep(args.interval)
    return 0
