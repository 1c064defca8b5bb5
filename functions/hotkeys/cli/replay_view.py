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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError
from rich.console import Console

from hotkeys.cli.common import (
    UserError,
    aws_clients,
    partial_images_warning,
    partition_of,
    render_families,
    render_top,
    say,
    settings_from_args,
    where_of,
)
from hotkeys.cli.health_view import Projections, health_lines, table_health
from hotkeys.cli.progress import progress_bar
from hotkeys.cli.replay import ReplayError, ReplayReport, create_resources, plan_replay, replay_settings, run_replay
from hotkeys.cli.throttle_view import recorded_picture
from hotkeys.cli.throttle_view import render as render_throttles
from hotkeys.cli.top import ALL_INDEXES, family_rows, top_rows, window_figures, windows_in_range
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.alerts import what_if
from hotkeys.detector.alerts.incidents import Message
from hotkeys.detector.alerts.messages import short_fix
from hotkeys.detector.alerts.rules import Reason
from hotkeys.detector.config import Settings
from hotkeys.detector.domain.diagnosis import SHARD_FAMILY
from hotkeys.detector.domain.indexes import specs_from_description
from hotkeys.detector.domain.rate import is_hot, percent_of_limit, shown, suggested_shards, whole
from hotkeys.detector.throttling.throttles import THROTTLED_ONLY

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
        "dead_letters": [letter.to_message()["DDBStreamBatchInfo"] for letter in report.dead_letters],
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


def alerted_figures(alerts: list[dict[str, Any]], figures: list[WindowFigures]) -> list[dict[str, Any]]:
    """The stored figures (``top_rows``: rate, share) of every key an alert named while
    hot, in every window whose merged figures list it: what the verdict reads, so that it and the
    top-keys table show one rate for one key and window."""
    named = {(a["table"], a.get("index"), a["key"]) for a in alerts if a["status"] != Message.RESOLVED}
    rows = [
        row.to_json()
        for window in figures
        if any((window.table, window.index, key) in named for key in window.entries)
        for row in top_rows([window], len(window.entries))
        if (row.table, row.index, row.key) in named
    ]
    rows.sort(key=lambda row: (row["table"], row["index"] or "", row["key"], row["window_start"]))
    return rows


@dataclass(frozen=True)
class _Incident:
    """One key's hot alerts (firing, reminders) in a replay and its stored figures."""

    table: str
    index: str | None
    key: str
    alerts: list[dict[str, Any]]
    rows: list[dict[str, Any]]  # alerted_figures of this key, one per window that lists it
    throttled: list[dict[str, Any]]  # the throttled-keys table's rows of this key, one per window

    @property
    def partition_limit(self) -> bool:
        return any(alert["reason"] == Reason.PARTITION_LIMIT for alert in self.alerts)

    @property
    def where(self) -> str:
        return partition_of(self.table, self.index, self.key)

    def possibly(self, settings: Settings) -> bool:
        """Possibly hot: every partition-limit alert said so, and no stored rate reached the threshold."""
        alerts = [alert for alert in self.alerts if alert["reason"] == Reason.PARTITION_LIMIT]
        row = self.figure()
        return (
            bool(alerts)
            and all(alert.get("possibly_hot", False) for alert in alerts)
            and (row is None or not is_hot(_peak(row), settings))
        )

    def reason_alerts(self) -> list[dict[str, Any]]:
        """The alerts of the incident's kind: partition-limit ones when there are any, else share ones."""
        reason = Reason.PARTITION_LIMIT if self.partition_limit else Reason.SHARE
        return [alert for alert in self.alerts if alert["reason"] == reason]

    def figure(self) -> dict[str, Any] | None:
        """The stored row the verdict names: the window of the key's highest rate (a hot key), or of its
        largest share among the windows a share alert named (a share of a table: a window under the
        share rule's minimum has shares of nothing)."""
        if self.partition_limit:
            rows = self.rows
            return max(rows, key=lambda row: (_peak(row), row["window_start"]), default=None)
        windows = {alert["window_start"] for alert in self.alerts}
        rows = [row for row in self.rows if row["window_start"] in windows]
        return max(rows, key=lambda row: (row["share"], row["window_start"]), default=None)


def _peak(row: dict[str, Any]) -> float:
    """The key's rate in the row's window (``TopRow.wcu_per_second``)."""
    return float(row["wcu_per_second"])


def verdict(result: dict[str, Any], settings: Settings) -> list[str]:
    """The answer first: which keys were hot (at or near the partition limit), how hot at their peak,
    and what to do; then the keys DynamoDB throttled that no alert named (Contributor Insights' throttled
    keys recorded beside the events); then, apart, the keys that took a heavy share of a table's writes
    while far from the limit (share-of-table alerts: a warning, not a hot key). Each key once.

    Every figure is the stored one the top-keys table shows (``alerted_figures``): the peak is the key's
    highest rate in a window (``rules.rate_of``), the share the whole window's; a throttled count is the
    throttled-keys table's. A key whose rate stayed under the threshold, and only its upper end (the
    summary's bound added) reached it, is possibly hot, listed apart with its range. The rate the first
    alert quoted (when it was sent) is named apart when it differs. A write-sharded family's line is the
    families line of that window."""
    grouped = _by_partition(alert for alert in result["alerts"] if alert["status"] != Message.RESOLVED)
    stored = _by_partition(result.get("alerted_figures", []))
    throttled = _by_partition((result.get("throttles") or {}).get("rows", []))
    incidents = [
        _Incident(*name, found, stored.get(name, []), throttled.get(name, [])) for name, found in grouped.items()
    ]
    ranked = sorted((i for i in incidents if i.partition_limit), key=lambda i: (-_rank(i), i.where))
    judged = [(incident, incident.possibly(settings)) for incident in ranked]
    hot = [incident for incident, possibly in judged if not possibly]
    possibly = [incident for incident, possibly in judged if possibly]
    shares = sorted((i for i in incidents if not i.partition_limit), key=lambda i: (-_rank(i), i.where))
    unalerted = {name: rows for name, rows in throttled.items() if name not in grouped}
    families = result.get("families", [])
    if hot:
        confirmed = sum(1 for incident in hot if incident.throttled)
        lines = [
            f"{len(hot)} hot key{'' if len(hot) == 1 else 's'} (at or near the partition limit"
            + (f"; DynamoDB throttled {confirmed} of them" if confirmed else "")
            + "):"
        ]
        lines.extend(_hot_line(incident, families, settings, possibly=False) for incident in hot)
    else:
        lines = ["No hot key: no partition key's rate reached the partition-limit alert threshold."]
    if possibly:
        many = len(possibly) > 1
        lines.append(
            f"{len(possibly)} key{'s' if many else ''} possibly hot (the rate stayed under the threshold; only its "
            "upper end, with what the summary may have left uncounted, reached it):"
        )
        lines.extend(_hot_line(incident, families, settings, possibly=True) for incident in possibly)
    lines.extend(what_if_lines(result.get("what_if", []), result.get("what_if_unseen", [])))
    if unalerted:
        many = len(unalerted) > 1
        lines.append(
            f"{len(unalerted)} key{'s' if many else ''} DynamoDB throttled that no alert named (Contributor "
            "Insights' throttled keys; the stream sees only the writes that landed):"
        )
        lines.extend(
            _throttled_line(name, rows)
            for name, rows in sorted(unalerted.items(), key=lambda item: (-_requests(item[1]), item[0][2]))
        )
    if shares:
        many = len(shares) > 1
        lines.append(
            f"{len(shares)} key{'s' if many else ''} with a heavy share of {'their' if many else 'its'} table's "
            f"writes (share-of-table alert{'s' if many else ''}; under the partition-limit threshold, not hot):"
        )
        lines.extend(_share_line(incident, families) for incident in shares)
    lines.extend(health_lines(result.get("health", {})))
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


def what_if_lines(found: list[dict[str, Any]], unseen: list[str] | None = None) -> list[str]:
    """Each proposal's hottest partition, apart from the real ones: when it would pass the alert rate,
    its peak and fix, else how far under it stays; and each proposal no write reached (a misspelt
    attribute or table)."""
    if not found and not unseen:
        return []
    lines = ["What-if (proposals counted from the same writes; never an incident, nobody paged):"]
    for row in found:
        where = where_of(row["table"], row["proposal"])
        peak = f"{_rate(row['wcu_per_second'])} WCU/s, {whole(row['percent_of_limit'])}% of limit"
        if row["hot"]:
            also = f" (also over the alert rate: {', '.join(row['also_hot'])})" if row["also_hot"] else ""
            lines.append(
                f"  {where}: {row['key']} would peak at {peak}, in the window starting {row['window_start']}{also}"
            )
            lines.append(f"      fix: {row['advice']}")
        else:
            lines.append(f"  {where}: no hot partition (hottest {row['key']} peaks at {peak})")
    lines.extend(f"  {line}" for line in unseen or [])
    return lines


def _rate(value: float) -> str:
    """A rate as the verdict shows it: whole units, one decimal under ten (never a 0 that is not)."""
    return whole(value) if value >= 10 or value == 0 else f"{shown(value):.1f}"


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


Partition = tuple[str, str | None, str]  # (table, index or None, key)


def _by_partition(rows: Iterable[dict[str, Any]]) -> dict[Partition, list[dict[str, Any]]]:
    """Alerts or rows of the result, by the partition they name, in their order."""
    found: dict[Partition, list[dict[str, Any]]] = {}
    for row in rows:
        found.setdefault((row["table"], row.get("index"), row["key"]), []).append(row)
    return found


def _requests(rows: list[dict[str, Any]]) -> int:
    return sum(int(row["throttled_requests"]) for row in rows)


def _throttled_text(rows: list[dict[str, Any]]) -> str:
    """ "4,100 requests in the window starting A and 1,250 in the window starting B": the table's counts."""
    ordered = sorted(rows, key=lambda row: row["window_start"])
    parts = [
        f"{row['throttled_requests']:,}{' requests' if i == 0 else ''} in the window starting {row['window_start']}"
        for i, row in enumerate(ordered)
    ]
    return " and ".join(parts)


def _throttled_line(name: Partition, rows: list[dict[str, Any]]) -> str:
    table, index, key = name
    where = partition_of(table, index, key)
    if all(row["status"] == THROTTLED_ONLY for row in rows):
        landed = (
            "none of its writes landed on the stream (throttled only: its reads, or writes that never landed); "
            "suggested fix: if these are reads, one partition serves 3,000 RCU/s: cache them or spread them over "
            f"copies of the item; if writes, write-shard the key ({key}#1..N) and retry with backoff"
        )
    else:
        wcu = sum(int(row["landed_wcu"] or 0) for row in rows)
        spread = (
            f"suffix the index key ({key}#1..N) or pick a higher-cardinality index key"
            if index is not None
            else f"write-shard the key ({key}#1..N)"
        )
        landed = (
            f"{wcu:,} of its write units landed, under the alert threshold: more was attempted than landed, in "
            f"bursts shorter than the alert's; suggested fix: {spread}"
        )
    return f"  {where}: DynamoDB throttled {_throttled_text(rows)}; {landed}"


def _rank(incident: _Incident) -> float:
    """Hottest first: the stored peak (a hot key) or share (a share of a table), else the alert's figure."""
    row = incident.figure()
    alerts = incident.reason_alerts()
    if incident.partition_limit:
        return _peak(row) if row else max(alert["wcu_per_second"] for alert in alerts)
    return float(row["share"]) if row else max(alert["share"] for alert in alerts)


def _hot_line(incident: _Incident, families: list[dict[str, Any]], settings: Settings, *, possibly: bool) -> str:
    """One hot (or, ``possibly``, possibly hot: ``_Incident.possibly``) key's line of the verdict."""
    alerts = incident.reason_alerts()
    # The rate the incident fired at (its firing message's), as its subscriber first read it
    firing = [alert for alert in alerts if alert["status"] == Message.FIRING]
    fired = firing[0] if firing else max(alerts, key=lambda alert: (alert["wcu_per_second"], alert["window_start"]))
    limit = int(fired["partition_wcu_limit"])
    alert_rate = float(fired["wcu_per_second"])
    row = incident.figure()
    if row is None:  # no stored figures under the alert's name (a hashed key display): the alert's own
        said = (
            f"alerted at {whole(alert_rate)} WCU/s ({whole(percent_of_limit(alert_rate, limit))}% of the partition "
            "limit; "
            f"no stored figures name the key) in the window starting {fired['window_start']}"
        )
        peak, share, window = alert_rate, max(alert["share"] for alert in incident.alerts), fired["window_start"]
    elif possibly:
        # Possibly hot: its rate stayed under the threshold; the most it could have been, as its stored row and
        # its alerts (on the figures of their time) bound it
        peak, share, window = _peak(row), float(row["share"]), row["window_start"]
        most = max(float(found["at_most_wcu_per_second"]) for found in [row, *alerts])
        said = (
            f"peaked at {whole(peak)} to at most {whole(most)} WCU/s ({whole(percent_of_limit(peak, limit))}-"
            f"{whole(percent_of_limit(most, limit))}% of the partition limit) in the window starting {window}"
        )
    else:
        # (never under what its messages said it peaked at: a rate quoted mid-window can exceed the window's
        # final one, docs/decisions.md §79)
        told = max(float(alert.get("peak_wcu_per_second") or 0.0) for alert in alerts)
        peak, share, window = max(_peak(row), told), float(row["share"]), row["window_start"]
        said = (
            f"peaked at {whole(peak)} WCU/s ({whole(percent_of_limit(peak, limit))}% of the partition limit) in the "
            "window "
            f"starting {window}{_alerted(alert_rate, peak, fired['window_start'], window)}"
        )
    # Never fewer suffixes than an alert asked for (a reminder's count follows the incident's highest rate).
    shards = max(
        suggested_shards(peak, settings),
        *(int(a["suggested_shards"]) for a in alerts),
    )
    return f"  {incident.where} {said}{_confirmed(incident)}{_fix(incident, families, window, shards, share)}"


def _share_line(incident: _Incident, families: list[dict[str, Any]]) -> str:
    alerts = incident.reason_alerts()
    fired = max(alerts, key=lambda alert: (alert["share"], alert["window_start"]))
    limit = int(fired["partition_wcu_limit"])
    row = incident.figure()
    if row is None:
        share, window = float(fired["share"]), fired["window_start"]
        said = (
            f"took {100 * share:.0f}% of the table's writes (at the alert; no stored figures name the key) "
            f"in the window starting {window}, alerted at {whole(fired['wcu_per_second'])} WCU/s"
        )
    else:
        share, window, peak = float(row["share"]), row["window_start"], _peak(row)
        at_alert = (
            f"; alerted at {100 * fired['share']:.0f}%" if round(100 * fired["share"]) != round(100 * share) else ""
        )
        said = (
            f"took {100 * share:.0f}% of the table's writes in the window starting {window}{at_alert} "
            f"(rate {whole(peak)} WCU/s, {whole(percent_of_limit(peak, limit))}% of the partition limit)"
        )
    return f"  {incident.where} {said}{_confirmed(incident)}{_fix(incident, families, window, 1, share)}"


def _confirmed(incident: _Incident) -> str:
    """ "; confirmed: DynamoDB throttled N requests in the window starting W" when it did."""
    return f"; confirmed: DynamoDB throttled {_throttled_text(incident.throttled)}" if incident.throttled else ""


def _alerted(alert_rate: float, peak: float, alert_window: str, window: str) -> str:
    """ ", first alerted at X WCU/s" when the rate the first alert quoted (its key's rate when it was sent)
    reads differently from the peak."""
    if alert_window != window:
        return f", first alerted at {whole(alert_rate)} WCU/s in the window starting {alert_window}"
    return f", first alerted at {whole(alert_rate)} WCU/s" if whole(alert_rate) != whole(peak) else ""


def _fix(incident: _Incident, families: list[dict[str, Any]], window: str, shards: int, share: float) -> str:
    pattern = next((a["pattern"] for a in incident.alerts if a.get("pattern")), None)
    shows = f" ({pattern})" if pattern else ""
    fix = short_fix(incident.key, shards, share, incident.index)
    if pattern == SHARD_FAMILY:  # one shard of a family: the family's verdict is the fix, as its line says it
        family = _family_of(incident, families, window)
        fix = family["verdict"] if family else next(a["remedy"] for a in incident.alerts if a.get("remedy"))
    return f"{shows}; suggested fix: {fix}"


def _family_of(incident: _Incident, families: list[dict[str, Any]], window: str) -> dict[str, Any] | None:
    for family in families:
        stem = family["stem"]
        if (
            (family["table"], family.get("index"), family["window_start"]) == (incident.table, incident.index, window)
            and incident.key.startswith(stem)
            and incident.key[len(stem) :].isdigit()
        ):
            return family
    return None


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
    console.print(
        f"[bold]Replayed[/] {result['records']} records from {result['shards']} shard(s) "
        f"in {result['invocations']} invocations."
    )
    render_top(console, result["top"], chosen, "Top keys per window")
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
            with progress_bar("replaying", plan.records) as advance:

                def observe(record: Any) -> None:
                    if heat is not None:
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
