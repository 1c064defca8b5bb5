"""The ``hotkeys`` command line: each command's run (its arguments are declared in ``parser``).

User mistakes (a missing file, a wrong table name, no credentials, an endpoint
that does not answer) end with a one-line message and exit status 2, never a
traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError
from rich.console import Console

from hotkeys.cli.common import UserError, aws_clients, settings_from_args
from hotkeys.cli.parser import (
    DEFAULT_STACK,
    REDRIVE_SETTINGS,
    REPLAY_SETTINGS,
    TOP_SETTINGS,
    WATCH_SETTINGS,
    build_parser,
)
from hotkeys.detector.domain.summary import EncodingRetired
from hotkeys.detector.domain.windows import parse_iso_utc

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def cmd_top(args: argparse.Namespace, console: Console) -> int:
    from hotkeys.cli import top_view
    from hotkeys.cli.common import at_alert, possibly_hot
    from hotkeys.cli.health_view import table_health
    from hotkeys.cli.rows import TopRow
    from hotkeys.cli.throttle_view import live_picture
    from hotkeys.cli.top import (
        ALL_INDEXES,
        family_rows,
        readable_figures,
        selected,
        shown_rows,
        windows_in_range,
    )
    from hotkeys.detector.adapters.stats_store import DynamoStatsStore

    # top resolves no alert, so the hysteresis plays no part: 0, lest its default refuse a threshold
    # under it for a flag this command does not have.
    settings = settings_from_args(args, TOP_SETTINGS, stats_table_name=args.stats_table, alert_hysteresis=0.0)
    since = _parse_since(args.since)
    aws = aws_clients(args)
    _check_stats_table(aws.client("dynamodb"), args.stats_table)
    store = DynamoStatsStore(aws.resource("dynamodb").Table(args.stats_table))
    until = int(time.time()) + 86_400
    windows = windows_in_range(
        store, since=since, last=args.last if since is None else None, until=until, table=args.table
    )
    index = {"all": ALL_INDEXES, "table": None}.get(args.index, args.index)
    # Every view is read (a window's snapshots hold them all): the hot partitions --index leaves out are
    # counted, and data health covers the table's indexes whichever partitions are shown.
    read = readable_figures(store, windows, ALL_INDEXES)
    figures = [window for window in read.figures if selected(index, window.index)]
    outside = [window for window in read.figures if not selected(index, window.index)]

    def alerted(row: TopRow) -> bool:  # hot or possibly hot: both are alerted
        return at_alert(row, settings) or possibly_hot(row, settings)

    rows, left_out = shown_rows(figures, outside, args.limit, alerted)
    skipped = top_view.retired_line(read.retired)
    # The throttled keys beside them (issue #28) are read only when there are rows to put them beside.
    families = family_rows(figures, settings.partition_wcu_limit) if rows else []
    throttles = live_picture(aws, figures) if rows else None
    health = table_health(read.figures, settings.partition_wcu_limit)
    answer = top_view.TopAnswer(rows, families, throttles, health, left_out, skipped)
    if args.json:
        print(top_view.json_text(answer))
        if skipped:
            print(f"hotkeys: {skipped}", file=sys.stderr)
        return 0
    # No rows for a named table: the tables that have figures in the same range (a misspelt name).
    others = _tables_with_figures(store, since, until) if not rows and args.table is not None and not windows else []
    top_view.render(console, answer, settings, top_view.Selection(args.index, args.table, others))
    return 0


def _tables_with_figures(store: Any, since: int | None, until: int) -> list[str]:
    from hotkeys.cli.top import windows_in_range

    return sorted(
        {table for _start, table, _seconds in windows_in_range(store, since=since, last=None, until=until, table=None)}
    )


def _check_stats_table(dynamodb: DynamoDBClient, name: str) -> None:
    """An unknown table, or one that is not a stats table, is named in one line before any query."""
    from hotkeys.cli.top import not_a_stats_table

    try:
        description = dynamodb.describe_table(TableName=name)["Table"]
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code == "ResourceNotFoundException":
            raise UserError(
                f"--stats-table {name!r}: no such table in {dynamodb.meta.region_name} (the stack output "
                "StatsTableName; check --region and --endpoint-url)"
            ) from None
        if code == "AccessDeniedException":
            return  # reading the figures needs Query only: without DescribeTable, skip the check
        raise
    problem = not_a_stats_table(name, dict(description))
    if problem is not None:
        raise UserError(problem)


def _parse_since(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return parse_iso_utc(text)
    except ValueError:
        raise UserError(f"--since must be an ISO 8601 time such as 2026-11-30T10:00:00Z, got {text!r}") from None


def cmd_replay(args: argparse.Namespace, console: Console) -> int:
    from hotkeys.cli.replay_view import replay_and_show

    return replay_and_show(args, console, REPLAY_SETTINGS)


def cmd_generate(args: argparse.Namespace, console: Console) -> int:
    from hotkeys.cli import generate_kinesis, generate_tables, generate_view

    if not args.out.endswith((".json", ".json.gz")):
        raise UserError(f"--out: name a .json or .json.gz file (the event format it writes), got {args.out!r}")
    workloads = generate_tables.workloads(args)
    workload = workloads[0]  # (the only one, but on a Kinesis stream)
    kinesis = generate_kinesis.kinesis_options(args)
    paths = [args.out if workload.shards == 1 else _shard_path(args.out, index) for index in range(workload.shards)]
    try:
        if kinesis is not None:
            counts = [generate_kinesis.write_kinesis(workloads, kinesis, args.out, args.format == "decoded")]
        else:
            counts = _write_shards(workload, paths)
    except KeyboardInterrupt:
        # Each file is written under a temporary name and renamed when complete (``EventWriter``).
        _fail(f"interrupted: nothing was written to {', '.join(paths)} (the partial files were removed)")
        return 130
    written = [generate_view.Written(path, count) for path, count in zip(paths, counts, strict=True)]
    carried = generate_view.shard_overload(counts, workload.duration, workload.item_bytes, workload.shards)
    if carried is not None and kinesis is None:  # (a Kinesis shard is not a partition: --shards is refused)
        print(f"hotkeys: warning: {carried}", file=sys.stderr)
    if args.json:
        print(generate_view.json_text(written, workloads))
    else:
        generate_view.render(console, written)
    return 0


def _write_shards(workload: Any, paths: list[str]) -> list[int]:
    """Streams the workload into one event file per shard; returns the records written to each."""
    from hotkeys.cli.progress import progress_bar
    from hotkeys.emulator.generate import shard_id, stream
    from hotkeys.emulator.io import EventWriter

    with contextlib.ExitStack() as files:
        writers = []
        for index, path in enumerate(paths):
            folder = Path(path).parent
            if not folder.is_dir():  # a typo in the path is not a folder to make: say so
                raise UserError(f"--out: {str(folder)!r} is not a folder (create it first)")
            try:
                writers.append(files.enter_context(EventWriter(path, shard_id(index))))
            except OSError as error:
                raise UserError(f"--out: cannot write {path!r}: {error.strerror}") from None
        with progress_bar("generating", workload.record_count()) as advance:
            try:
                for shard, record in stream(workload):
                    writers[shard].write(record)
                    advance(1)
            except OSError as error:
                raise UserError(f"--out: cannot write: {error.strerror}") from None
        return [writer.records for writer in writers]


def _shard_path(path: str, index: int) -> str:
    for suffix in (".json.gz", ".json"):
        if path.endswith(suffix):
            return f"{path[: -len(suffix)]}-shard-{index}{suffix}"
    return f"{path}-shard-{index}"


def cmd_watch(args: argparse.Namespace, console: Console) -> int:
    from hotkeys.cli.watch_view import watch

    return watch(args, console, WATCH_SETTINGS)


def cmd_redrive(args: argparse.Namespace, console: Console) -> int:
    from hotkeys.cli.redrive_view import redrive

    return redrive(args, console, REDRIVE_SETTINGS, DEFAULT_STACK)


def cmd_cost(args: argparse.Namespace, console: Console) -> int:
    from hotkeys.cli import cost_view
    from hotkeys.cli.cost import CostInputs, estimate
    from hotkeys.cli.cost_kinesis import KinesisSource

    inputs = CostInputs(
        writes_per_second=args.writes_per_second,
        avg_item_kb=args.avg_item_kb,
        tables=args.tables,
        reads_per_second=args.reads_per_second,
        ttl_deletes_per_second=args.ttl_deletes_per_second,
        memory_mb=args.memory_mb,
        gsis=args.gsis,
        proposals=args.what_if,
        sort_keys=args.sort_keys,
        throttled_per_second=args.throttled_per_second,
        throttled_key_insights=args.throttled_key_insights,
        judge_memory_mb=args.judge_memory_mb,
        consumer_system_log_level=args.consumer_system_log_level,
        lean=args.lean,
        source=args.source,
        kinesis=KinesisSource(
            mode=args.kinesis_mode,
            enhanced_fan_out=args.enhanced_fan_out,
            stream_made_by_stack=args.stream_made_by_stack,
            shards=args.kinesis_shards,
            record_kb=args.kinesis_record_kb,
        ),
    )
    try:
        result = estimate(inputs)
    except ValueError as error:
        raise UserError(str(error)) from None
    if args.json:
        print(cost_view.json_text(result))
    else:
        cost_view.render(console, inputs, result)
    return 0


def cmd_doctor(args: argparse.Namespace, console: Console) -> int:
    from hotkeys.cli import doctor_view
    from hotkeys.cli.doctor import StackNotFound, clients_from, diagnose
    from hotkeys.detector.adapters.stats_store import DynamoStatsStore

    aws = aws_clients(args)
    clients = clients_from(aws)
    clients.stats = lambda name: DynamoStatsStore(aws.resource("dynamodb").Table(name))
    try:
        checks = diagnose(clients, args.stack)
    except StackNotFound as error:
        raise UserError(str(error)) from None
    if args.json:
        print(doctor_view.json_text(checks))
        return doctor_view.exit_status(checks)
    return doctor_view.render(console, checks)


COMMANDS = {
    "doctor": cmd_doctor,
    "top": cmd_top,
    "replay": cmd_replay,
    "generate": cmd_generate,
    "watch": cmd_watch,
    "redrive": cmd_redrive,
    "cost": cmd_cost,
}


class PipeConsole(Console):
    """Ends a command whose reader went away (`hotkeys replay | head`) as ``print`` does in the others:
    rich's own handling exits with status 1 (``Console.on_broken_pipe``); this raises BrokenPipeError,
    which ``main`` turns into the status a shell shows for SIGPIPE, the same for every command."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def _fail(message: str) -> int:
    # Plain print: one line, never wrapped or styled, whatever the terminal width.
    print(f"hotkeys: {message}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # a usage error (2, already reported in one line), --help or --version (0)
        return int(exit_.code or 0)
    # A pipe takes COLUMNS when it is set (rich reads it), 160 otherwise; a terminal its own width.
    console = PipeConsole(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit() else 160)
    try:
        return COMMANDS[args.command](args, console)
    except UserError as error:
        return _fail(str(error))
    except EncodingRetired:
        # Stored figures outlive a deploy by up to their 14-day expiry; an earlier layout is refused (§55).
        # The readers of stored windows (top, redrive) skip such windows and say so: this is a backstop.
        return _fail(
            "the stats table holds figures written by an earlier version of the detector, in a layout this "
            "version does not read (they expire 14 days after they were written)"
        )
    except (NoCredentialsError, NoRegionError) as error:
        return _fail(f"AWS is not configured ({error}); set credentials and --region")
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        message = error.response.get("Error", {}).get("Message", str(error))
        if code == "ResourceNotFoundException":
            message += " (check the table name, --region and --endpoint-url)"
        return _fail(f"AWS refused the request: {code}: {message}")
    except BotoCoreError as error:
        return _fail(f"cannot reach AWS: {error}")
    except KeyboardInterrupt:
        _fail("interrupted")
        return 130
    except BrokenPipeError:
        # The reader went away (`hotkeys top --json | head`): not an error worth a traceback. Python
        # would complain again when it flushes stdout at exit: point stdout at /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # what a shell reports for a process ended by SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
