"""Runs a replay on the chosen backend and shows what the detector would have said."""

from __future__ import annotations

import argparse
import contextlib
import gzip
import importlib.util
import json
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError
from rich.console import Console

from hotkeys.cli.common import (
    UserError,
    aws_clients,
    partial_images_warning,
    render_families,
    render_top,
    say,
    settings_from_args,
    where_of,
)
from hotkeys.cli.health_view import Projections, table_health
from hotkeys.cli.progress import progress_bar
from hotkeys.cli.replay import ReplayError, ReplayReport, create_resources, plan_replay, replay_settings, run_replay
from hotkeys.cli.rows import TopRow
from hotkeys.cli.throttle_view import recorded_picture
from hotkeys.cli.throttle_view import render as render_throttles
from hotkeys.cli.top import ALL_INDEXES, family_rows, top_rows, window_figures, windows_in_range
from hotkeys.cli.verdict import alerted_figures, verdict
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.alerts import what_if
from hotkeys.detector.alerts.incidents import Message
from hotkeys.detector.alerts.messages import short_fix
from hotkeys.detector.config import Settings
from hotkeys.detector.domain.indexes import specs_from_description
from hotkeys.emulator import kinesis

if TYPE_CHECKING:
    from hotkeys.cli.report import HeatMap
    from hotkeys.detector.consumer.snapshots import WindowFigures


@contextlib.contextmanager
def backend(endpoint_url: str | None) -> Iterator[None]:
    if endpoint_url:
        yield
        return
    try:
        from moto import mock_aws
    except ImportError:  # `make demo` installs it; a bare `pip install` does not
        raise UserError(
            "replay without --endpoint-url runs on in-process moto, which is not installed: "
            "pip install 'dynamodb-hotkeys[local]'"
        ) from None

    with mock_aws():
        yield


def collect(
    report: ReplayReport,
    per_window: int,
    aws: AwsClients,
) -> dict[str, Any]:
    from hotkeys.detector.adapters.stats_store import DynamoStatsStore

    store = DynamoStatsStore(aws.resource("dynamodb").Table(report.resources.stats_table))
    windows = windows_in_range(store, since=0, last=None, until=2**40, table=None)
    figures = window_figures(store, windows, ALL_INDEXES)
    alerts = drain_alerts(report.resources.alert_queue_url, aws)
    # Per window start, every table's and index's keys together, hottest first, ``per_window`` of them
    by_start: dict[int, list[WindowFigures]] = {}
    for window in figures:
        by_start.setdefault(window.window_start, []).append(window)
    top = [row.to_json() for start in sorted(by_start) for row in top_rows(by_start[start], per_window)]
    # Throttled keys recorded beside the events (insights/<table>.json), if any: issue #28.
    throttles = recorded_picture(report.table_folders, figures)
    return {
        "records": report.records,
        "counted": report.counted,
        "copies": report.copies,
        "not_counted": report.uncounted.to_json(),
        "without_images": report.without_images,
        "missing_files": report.missing_files,
        "shards": report.shards,
        "invocations": report.invocations,
        "top": top,
        "families": family_rows(figures, report.settings.partition_wcu_limit),
        "alerted_figures": alerted_figures(alerts, figures),
        "windows": [
            {
                "table": w.table,
                **({"index": w.index} if w.index is not None else {}),
                "window_start": w.window_start,
                "writes": w.writes,
                "wcu": w.wcu,
                "ttl_deletes": w.ttl_deletes,
                "error_bound": w.error_bound,
            }
            for w in figures
        ],
        "alerts": alerts,
        "what_if": [what_if.document(found) for found in what_if.findings(figures, report.settings)],
        "what_if_unseen": unseen_proposals(figures, report.settings, report.table_folders),
        "health": table_health(figures, report.settings.partition_wcu_limit, projections_of(aws)),
        "archived": archived_objects(report.resources.bucket, aws),
        "dead_letters": [letter.batch_info() for letter in report.dead_letters],
        **({"throttles": throttles} if throttles is not None else {}),
    }


def archived_objects(bucket: str | None, aws: AwsClients) -> list[dict[str, Any]]:
    """The TTL archive's objects: key and number of items (lines)."""
    if not bucket:
        return []
    s3 = aws.client("s3")
    found = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for entry in page.get("Contents", []):
            body = s3.get_object(Bucket=bucket, Key=entry["Key"])["Body"].read()
            lines = gzip.decompress(body).decode("utf-8").splitlines()
            found.append({"key": entry["Key"], "items": len(lines), "bytes": entry["Size"]})
    return sorted(found, key=lambda item: item["key"])


def drain_alerts(queue_url: str | None, aws: AwsClients) -> list[dict[str, Any]]:
    """The alerts the topic delivered to the replay's SQS subscriber (SNS envelope → subject + document),
    in the order they went out: an incident as its subscriber lived it (the emulation is in event time,
    so the order is the same every run)."""
    if not queue_url:
        return []
    sqs = aws.client("sqs")
    alerts = []
    while True:
        batch = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        messages = batch.get("Messages", [])
        if not messages:
            break
        for message in messages:
            envelope = json.loads(message["Body"])
            alerts.append({"subject": envelope.get("Subject"), **json.loads(envelope["Message"])})
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return alerts


# A DLQ listing longer than this is cut (``--json`` lists every entry).
DEAD_LETTERS_SHOWN = 10
# The reason ``records.table_from_arn`` gives for a record that names no stream.
_NO_SOURCE_ARN = "eventSourceARN is missing"


def input_problems(result: dict[str, Any]) -> list[str]:
    """What went wrong with the input, before any verdict: records not counted (how many, why, where
    they went) and records whose sizes are lower estimates because the stream carries no images."""
    lines = []
    missing = result["not_counted"]
    if missing["records"]:
        everything = missing["records"] == result["records"]
        lines.append(
            f"{'None' if everything else missing['records']} of the {result['records']} records could be counted"
            if everything
            else f"{missing['records']} of the {result['records']} records could not be counted"
        )
        lines[-1] += (
            f": the function rejected them and they went to the replay's DLQ "
            f"({missing['dlq_entries']} entr{'y' if missing['dlq_entries'] == 1 else 'ies'}, listed below). Why:"
        )
        for reason, count in missing["reasons"].items():
            lines.append(f"  {count}: {reason}")
        if any(reason.startswith(_NO_SOURCE_ARN) for reason in missing["reasons"]):
            lines.append(
                "  replay reads Lambda's event format: records from `aws dynamodbstreams get-records` have no "
                "eventSourceARN (and spell times and userIdentity differently); to read a live stream, use "
                "`hotkeys watch --table NAME --from trim-horizon --once`"
            )
    if result["without_images"]:
        lines.append(partial_images_warning(result["without_images"], result["records"]))
    missing = result.get("missing_files") or []
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        lines.append(
            f"A partial capture: {len(missing)} shard file{'s' if len(missing) > 1 else ''} of it beside the "
            f"ones given {'were' if len(missing) > 1 else 'was'} not given ({shown}): every total and share "
            "below is of the shards given only"
        )
    return lines


def projections_of(aws: AwsClients) -> Projections:
    """Each GSI's projection type, from the replay's source tables (None where a table has no schema)."""
    known: dict[str, dict[str, str]] = {}

    def projection(table: str, index: str) -> str | None:
        if table not in known:
            try:
                described = aws.client("dynamodb").describe_table(TableName=table)["Table"]
            except ClientError:
                described = {}
            known[table] = {spec.name: spec.projection for spec in specs_from_description(described) if not spec.local}
        return known[table].get(index)

    return projection


def unseen_proposals(figures: Iterable[WindowFigures], settings: Settings, tables: Iterable[str]) -> list[str]:
    """What each proposal that counted nothing was missing: its table in the input, or the attributes in
    every item written."""
    counted = {(window.table, window.index) for window in figures if window.writes}
    replayed = sorted(tables)
    lines = []
    for proposal in settings.proposals:
        if proposal.table is not None and proposal.table not in replayed:
            lines.append(f"{where_of(proposal.table, proposal.name)}: table {proposal.table} is not in the input")
            continue
        for table in replayed:
            if proposal.applies_to(table) and (table, proposal.name) not in counted:
                needed = " and ".join(repr(name) for name in (*proposal.partition_key, *proposal.sort_key))
                lines.append(f"{where_of(table, proposal.name)}: no item written carries {needed} (as a scalar)")
    return lines


def check_writable(path: Path, flag: str) -> None:
    """Refuses at once (one line) a path the command could not write its file to at the end.

    The path must not be a folder; its folder is made if it is missing (as ``mkdir -p``); then the file
    is opened for appending, which proves the permission (for root too, which ``os.access`` does not) and
    changes nothing in a file that exists (a file the probe created is removed)."""
    if path.is_dir():
        raise UserError(f"{flag}: {str(path)!r} is a folder; name a file in it, such as {str(path / 'report.html')!r}")
    folder = path.resolve().parent
    if not folder.is_dir():
        try:
            folder.mkdir(parents=True)
        except OSError as error:
            raise UserError(f"{flag}: cannot make the folder {str(path.parent)!r}: {error.strerror}") from None
    existed = path.exists()
    try:
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as error:
        raise UserError(f"{flag}: cannot write {str(path)!r}: {error.strerror}") from None
    if not existed:
        path.unlink()


def _heat_map(aws: AwsClients, chosen: Settings) -> HeatMap:
    from hotkeys.cli.report import HeatMap
    from hotkeys.detector.adapters.key_schema import PartitionKeyResolver, TableIndexes, describe_table_with

    # The replay's source tables (events/tables/*.json) tell composite keys apart and name the
    # indexes, as in the handler. Both read the table lazily: after the replay has created it.
    describe = describe_table_with(aws.client("dynamodb"))
    resolver = PartitionKeyResolver(chosen.partition_key_attribute, describe)
    return HeatMap(
        resolver,
        chosen.alert_min_span_seconds,
        TableIndexes(describe, proposals=chosen.proposals) if chosen.count_indexes else None,
    )


def _write_report(path: Path, result: dict[str, Any], heat: HeatMap, chosen: Settings) -> None:
    from hotkeys.cli.report import render, write

    alerted = {(a["table"], a.get("index") or "", a["key"]) for a in result["alerts"]}
    page = render(result, heat.panels(always=alerted), chosen, verdict=verdict(result, chosen))
    try:
        write(path, page)
    except OSError as error:
        raise UserError(f"--report: cannot write {str(path)!r}: {error.strerror}") from None


def replay_and_show(args: argparse.Namespace, console: Console, settings_names: tuple[str, ...]) -> int:
    # The function's settings as chosen (validated before anything runs); the resources come later.
    chosen = settings_from_args(args, settings_names, stats_table_name="-")
    report_path = Path(args.report) if args.report else None
    if report_path is not None:
        # Checked before the replay, which may take minutes, so that nothing is lost to a typo.
        check_writable(report_path, "--report")
        if importlib.util.find_spec("plotly") is None:
            raise UserError(
                "--report draws with plotly, which is not installed: pip install 'dynamodb-hotkeys[report]'"
            )
    result, resources = _replayed(args, chosen, report_path)
    # Nothing counted is no answer: the exit status says so (some records dead-lettered is the DLQ's job).
    status = 1 if result["records"] and not result["counted"] else 0
    if args.json:
        print(json.dumps(result, indent=2, default=str))
        return status
    for line in input_problems(result):
        console.print(line, markup=False, highlight=False, soft_wrap=True, style="bold red")
    headline = verdict(result, chosen) if not status else ["No verdict: nothing was counted."]
    for line in headline:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if args.endpoint_url:
        # These stay on the endpoint: say where, so `hotkeys top` and `redrive` can be pointed at them.
        say(
            console,
            f"Created on {args.endpoint_url}: stats table {resources.stats_table}, topic {resources.topic_arn}, "
            f"bucket {resources.bucket}, DLQ {resources.dlq_url}",
        )
    copies = f" ({result['copies']} copies of changes already counted)" if result.get("copies") else ""
    console.print(
        f"[bold]Replayed[/] {result['records']} records{copies} from {result['shards']} shard(s) "
        f"in {result['invocations']} invocations."
    )
    render_top(console, [TopRow.from_json(row) for row in result["top"]], chosen, "Top keys per window")
    render_families(console, result["families"])
    render_throttles(console, result.get("throttles"))
    _render_alerts(console, result["alerts"])
    _render_archive(console, result["archived"], resources.bucket)
    _render_dead_letters(console, result["dead_letters"])
    if args.report:
        from hotkeys.cli.report import plotly_script_name

        script = Path(args.report).parent / plotly_script_name()
        console.print(
            f"Report written to {args.report}, with the script it draws with beside it ({script}): "
            "move or send the two together",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    return status


def _replayed(args: argparse.Namespace, chosen: Settings, report_path: Path | None) -> tuple[dict[str, Any], Any]:
    """The replay of ``args.event_files`` on the chosen backend: what ``collect`` gathers, and the
    resources it created; the report written when asked for."""
    with backend(args.endpoint_url), _event_files(args.event_files) as paths:
        aws = aws_clients(args, default_region="us-east-1")
        try:
            plan = plan_replay(paths)
            if not plan.records:
                # No traffic is no verdict: "no hot key" would read as if traffic had been judged.
                files = ", ".join(args.event_files)
                raise ReplayError(f"no stream records in {files}: nothing to judge")
            resources = create_resources(aws)
            heat = _heat_map(aws, chosen) if report_path is not None else None
            changes: set[bytes] = set()  # the Kinesis changes the heat map has, by identity (not duplicates)
            with progress_bar("replaying", plan.records) as advance:

                def observe(record: Any) -> None:
                    if heat is not None and kinesis.source_of(record) == "kinesis":
                        record = kinesis.as_stream_record(record, changes, heat.resolve_key)
                    if heat is not None and record is not None:
                        heat.add(record)
                    advance(1)

                report = run_replay(plan, resources, aws, replay_settings(resources, chosen), observe)
        except ReplayError as error:
            message = str(error)
            for path, name in zip(paths, args.event_files, strict=True):
                message = message.replace(path, "standard input") if name == "-" else message
            raise UserError(message) from None
        result = collect(report, args.limit, aws)
    if report_path is not None and heat is not None:
        _write_report(report_path, result, heat, chosen)
    return result, report.resources


# A gzip file's first two bytes (RFC 1952, "ID1 = 31, ID2 = 139").
GZIP_MAGIC = b"\x1f\x8b"


@contextlib.contextmanager
def _event_files(given: list[str]) -> Iterator[list[str]]:
    """The event files, ``-`` read from standard input into a temporary file first (a replay reads its
    files twice: once to plan, once to replay), plain or gzipped JSON as it comes; removed afterwards."""
    if "-" not in given:
        yield given
        return
    if given.count("-") > 1:
        raise UserError("- (standard input) is given more than once; it can be read once")
    with tempfile.TemporaryDirectory(prefix="hotkeys-stdin-") as folder:
        # Copied as it comes, as the replay streams its files: memory does not grow with the input.
        head = sys.stdin.buffer.read(len(GZIP_MAGIC))
        spooled = Path(folder) / ("stdin.json.gz" if head == GZIP_MAGIC else "stdin.json")
        with spooled.open("wb") as copy:
            copy.write(head)
            shutil.copyfileobj(sys.stdin.buffer, copy)
        yield [str(spooled) if path == "-" else path for path in given]


def _render_alerts(console: Console, alerts: list[dict[str, Any]]) -> None:
    """Each alert as its subscriber received it, with the figures it was sent with."""
    if not alerts:
        console.print("No alerts were published.")
        return
    console.print(f"[bold]Alerts published[/] ({len(alerts)}):")
    for alert in alerts:
        say(console, f"  {alert['subject']}")
        if alert["status"] != Message.RESOLVED:
            say(
                console,
                f"      when sent: window {alert['window_start']}, up to {alert['wcu']:,} WCU so far, "
                f"{100 * alert['share']:.1f}% of the table's writes so far; fix: "
                + short_fix(alert["key"], alert["suggested_shards"], alert["share"], alert.get("index")),
            )


def _render_archive(console: Console, archived: list[dict[str, Any]], bucket: str | None) -> None:
    if not archived:
        console.print("No TTL deletions were archived.")
        return
    total = sum(item["items"] for item in archived)
    console.print(f"[bold]TTL archive[/]: {total:,} expired {_items(total)} in {len(archived)} object(s):")
    for item in archived:
        count = item["items"]
        say(console, f"  s3://{bucket}/{item['key']} ({count:,} {_items(count)}, {item['bytes']:,} bytes)")


def _items(count: int) -> str:
    return "item" if count == 1 else "items"


def _render_dead_letters(console: Console, letters: list[dict[str, Any]]) -> None:
    if not letters:
        console.print("Nothing was sent to the DLQ.")
        return
    console.print(
        "[bold red]Sent to the DLQ[/] (batch coordinates in the event files: fix those records and replay them):"
    )
    for letter in letters[:DEAD_LETTERS_SHOWN]:
        console.print(
            f"  {letter['shardId']}: {letter['startSequenceNumber']} .. "
            f"{letter['endSequenceNumber']} ({letter['batchSize']} record{'' if letter['batchSize'] == 1 else 's'})"
        )
    hidden = len(letters) - DEAD_LETTERS_SHOWN
    if hidden > 0:
        console.print(f"  ... and {hidden} more (--json lists them all)", markup=False, highlight=False)
