"""The throttling picture in ``hotkeys top``, the replay and its report: each throttled key beside the
write units the stream saw land for it in the same window ("attempted vs landed").

Live (``hotkeys top``) it reads Contributor Insights (``adapters.insights``); a replay reads recorded
answers kept beside the events (``<folder>/insights/<table>.json``, ``RecordedInsights``), each passed
through botocore's ``Stubber`` so that the request the reader makes and the recorded response are both
validated against the service models, as a live call's would be. When Contributor Insights is off, or
the call is denied, the picture is one line saying so; it never fails the command.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rich.console import Console
from rich.table import Table

from hotkeys.cli.common import natural_width, partition_of, say, where_of
from hotkeys.detector.throttling.ports import InsightsPort, TableInsightsPort
from hotkeys.detector.throttling.throttle_sources import RuleStatus, Source
from hotkeys.detector.throttling.throttles import (
    THROTTLED_ONLY,
    InsightsUnavailable,
    Landed,
    join,
    landed_from_figures,
    read_throttles,
    sources_of,
    summary_line,
    throttled_key_rule,
    time_range,
)

if TYPE_CHECKING:
    from botocore.client import BaseClient

    from hotkeys.detector.adapters.aws import AwsClients

INSIGHTS_FOLDER = "insights"
_T = TypeVar("_T")
SHOWN_ROWS = 20


def picture(port: InsightsPort, landed: list[Landed], extra_sources: Iterable[Source] = ()) -> dict[str, Any] | None:
    """``{"rows": [...], "notes": [...], "line": str | None}`` for the windows of ``landed``; None when
    there are no windows to compare with."""
    span = time_range(landed)
    if span is None:
        return None
    found = read_throttles(port, [*sources_of(landed), *extra_sources], *span)
    return {
        "rows": [row.to_json() for row in join(landed, found.keys)],
        "notes": found.notes,
        "line": summary_line(found),
        "read": [source.where for source in found.read],
    }


def live_picture(aws: AwsClients, figures: list[Any]) -> dict[str, Any] | None:
    """``hotkeys top``'s picture: the tables of ``figures`` and every global secondary index of theirs."""
    from hotkeys.detector.adapters.insights import CloudWatchInsights

    port = CloudWatchInsights(aws.client("dynamodb"), aws.client("cloudwatch"))
    landed = landed_from_figures(figures)
    tables = dict.fromkeys(w.table for w in landed)
    indexes = [Source(table, index) for table in tables for index in _global_indexes(port, table)]
    return picture(port, landed, indexes)


def _global_indexes(port: TableInsightsPort, table: str) -> list[str]:
    """The table's GSIs; none when it cannot be described (the windows' own sources are still read)."""
    try:
        return port.global_indexes(table)
    except InsightsUnavailable:
        return []


def render(console: Console, found: Mapping[str, Any] | None) -> None:
    """The throttled keys beside their landed writes; or one line when there is nothing to show."""
    if found is None:
        return
    rows = found["rows"]
    if found.get("line"):
        say(console, found["line"])
    if not rows:
        if found.get("read"):
            console.print("Throttled keys: none in these windows (Contributor Insights, throttled keys).")
        return
    shown = rows[:SHOWN_ROWS]
    # Whole times, tables and keys, and the status text wrapped at its narrowest (its column, padding, border)
    if natural_width(_grid(shown, status=False)) + STATUS_MIN_WIDTH + 3 <= console.width:
        console.print(_grid(shown))
    else:
        # Too narrow for the table without splitting a time or a key: a block per row, the time and the
        # key first on their line.
        say(console, f"{TITLE}:")
        for row in shown:
            where = partition_of(row["table"], row.get("index"), row["key"])
            heading = f"  {row['window_start']}  {where}"
            if len(heading) > console.width:
                heading = f"  {row['window_start']}\n  {where}"
            console.print(heading, markup=False, highlight=False, soft_wrap=True)
            say(
                console,
                f"      landed {landed_text(row)} WCU, throttled {row['throttled_requests']:,} requests: "
                f"{status_text(row)}",
            )
        say(console, CAPTION)
    if len(rows) > SHOWN_ROWS:
        console.print(f"  ... and {len(rows) - SHOWN_ROWS} more throttled key-windows (--json lists them all)")


TITLE = "Throttled keys beside their landed writes (Contributor Insights; reads and writes together)"
CAPTION = "landed: write units from the stream; throttled: requests DynamoDB refused in the window's minutes"


STATUS_MIN_WIDTH = 12


def _grid(rows: list[Mapping[str, Any]], status: bool = True) -> Table:
    """The rows as a table whose times, tables and keys never wrap (only the status text may)."""
    grid = Table(title=TITLE, caption=CAPTION)
    for column in ("window (UTC)", "table", "key"):
        grid.add_column(column, no_wrap=True)
    for column in ("landed WCU", "throttled requests"):
        grid.add_column(column, justify="right", no_wrap=True)
    if status:
        grid.add_column("attempted vs landed", min_width=STATUS_MIN_WIDTH)
    for row in rows:
        cells = [
            row["window_start"],
            where_of(row["table"], row.get("index")),
            row["key"],
            landed_text(row),
            f"{row['throttled_requests']:,}",
        ]
        grid.add_row(*cells, *([status_text(row)] if status else []))
    return grid


def landed_text(row: Mapping[str, Any]) -> str:
    if row["landed_wcu"] is not None:
        return f"{row['landed_wcu']:,}"
    return "none" if not row.get("unlisted_bound") else f"≤ {row['unlisted_bound']:,}"


def status_text(row: Mapping[str, Any]) -> str:
    if row["status"] == THROTTLED_ONLY:
        return "throttled only: reads, or writes that never landed"
    return "throttled and landed: more was attempted than landed"


class RecordedInsights:
    """``throttles.InsightsPort`` on recorded answers (``insights/<table>.json`` beside the events).

    A file holds ``{"describe_contributor_insights": [response, ...], "get_insight_rule_report":
    {rule name: response}}``, responses in the API's shape as boto3 returns them (timestamps as ISO
    8601 text). Each call goes through a Stubber-backed client: the reader's request and the recorded
    response are validated against the DynamoDB and CloudWatch service models."""

    def __init__(self, recorded: Mapping[str, Mapping[str, Any]]) -> None:
        import boto3

        self._recorded = recorded
        session = boto3.session.Session(aws_access_key_id="recorded", aws_secret_access_key="recorded")
        self._dynamodb = session.client("dynamodb", region_name="us-east-1")
        self._cloudwatch = session.client("cloudwatch", region_name="us-east-1")

    @classmethod
    def from_folders(cls, folders: Mapping[str, Iterable[Path]]) -> RecordedInsights | None:
        """The recorded answers for the replayed tables (``folders``: table -> folders of its events)."""
        recorded: dict[str, Mapping[str, Any]] = {}
        for table, places in folders.items():
            found = next(
                (
                    p / INSIGHTS_FOLDER / f"{table}.json"
                    for p in places
                    if (p / INSIGHTS_FOLDER / f"{table}.json").is_file()
                ),
                None,
            )
            if found is not None:
                recorded[table] = json.loads(found.read_text())
        return cls(recorded) if recorded else None

    @property
    def tables(self) -> list[str]:
        return list(self._recorded)

    def rule_status(self, source: Source) -> RuleStatus:
        from hotkeys.detector.adapters.insights import CloudWatchInsights

        answers = self._recorded.get(source.table, {}).get("describe_contributor_insights", [])
        answer = next((a for a in answers if a.get("IndexName") == source.index), None)
        if answer is None:
            raise InsightsUnavailable("no recorded Contributor Insights answer")
        port = CloudWatchInsights(self._dynamodb, self._cloudwatch)
        return _validated(self._dynamodb, "describe_contributor_insights", answer, lambda: port.rule_status(source))

    def report(self, rule: str, start: int, end: int) -> Mapping[str, Any]:
        from hotkeys.detector.adapters.insights import CloudWatchInsights

        answer = next(
            (
                t["get_insight_rule_report"][rule]
                for t in self._recorded.values()
                if rule in t.get("get_insight_rule_report", {})
            ),
            None,
        )
        if answer is None or throttled_key_rule([rule]) is None:
            raise InsightsUnavailable(f"no recorded report for rule {rule}")
        port = CloudWatchInsights(self._dynamodb, self._cloudwatch)
        return _validated(self._cloudwatch, "get_insight_rule_report", answer, lambda: port.report(rule, start, end))


def _validated(client: BaseClient, operation: str, response: Mapping[str, Any], call: Callable[[], _T]) -> _T:
    """One call through a Stubber: the recorded response is checked against the service model when it is
    added, the reader's request when it is made (a mismatch is a note, never a traceback)."""
    from botocore.exceptions import ParamValidationError
    from botocore.stub import Stubber

    stubber = Stubber(client)
    try:
        stubber.add_response(operation, dict(_timestamps(response)))
    except ParamValidationError as error:
        first = str(error).splitlines()[1:2] or [str(error)]
        raise InsightsUnavailable(
            f"the recorded {operation} answer does not match the service model ({first[0].strip()})"
        ) from None
    with stubber:
        return call()


_TIMESTAMP_FIELDS = ("Timestamp", "LastUpdateDateTime")


def _timestamps(value: Any) -> Any:
    """Recorded ISO 8601 timestamps as the aware datetimes boto3's parser gives."""
    if isinstance(value, dict):
        return {
            k: datetime.fromisoformat(v.replace("Z", "+00:00"))
            if k in _TIMESTAMP_FIELDS and isinstance(v, str)
            else _timestamps(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_timestamps(v) for v in value]
    return value


def recorded_picture(table_folders: Mapping[str, Iterable[Path]], figures: list[Any]) -> dict[str, Any] | None:
    """A replay's picture, from the answers recorded beside its events; None when none were recorded
    for the replayed tables (the replay's output is then unchanged)."""
    port = RecordedInsights.from_folders(table_folders)
    if port is None:
        return None
    landed = [w for w in landed_from_figures(figures) if w.table in port.tables]
    return picture(port, landed)
