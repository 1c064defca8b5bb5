"""``hotkeys doctor``'s checks of what the data shows: each table's TTL (setting, DynamoDB's deletions, what
the items written carry) and a recent window per watched table in the stats table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from hotkeys.cli.doctor_model import FAIL, OK, WARN, Check, Clients, StackView
from hotkeys.detector.adapters.stats_schema import HEADS_INDEX
from hotkeys.detector.consumer.layout import heads_pk
from hotkeys.detector.consumer.snapshots import LAYOUT_PK, WindowRetired, merged_health
from hotkeys.detector.domain.health import IGNORED, Health, TtlVerdict, ttl_problem
from hotkeys.throttling import NAMESPACE, TABLE_DIMENSION

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch.type_defs import MetricDataQueryTypeDef


def ttl_check(clients: Clients, table: str, written: Health | None, now: float) -> Check:
    """TTL on or off (DescribeTimeToLive), the items DynamoDB's TTL deleted in the last 24 h
    (``TimeToLiveDeletedItemCount``), beside the latest window's items written (``written``, if read)."""
    name = f"TTL of {table}"
    try:
        description = clients.dynamodb.describe_time_to_live(TableName=table).get("TimeToLiveDescription", {})
    except ClientError as error:
        return Check(name, WARN, f"cannot read it here: {error.response.get('Error', {}).get('Code', error)}")
    status = str(description.get("TimeToLiveStatus", "DISABLED"))
    attribute = description.get("AttributeName")
    if status not in ("ENABLED", "ENABLING") or not attribute:
        return Check(name, OK, f"{status}: no item expires (the TTL archive receives nothing from {table})")
    deleted = _ttl_deletions(clients, table, now)
    judged = sum(written.verdicts) if written is not None else 0
    ignored = {verdict: written.verdicts[verdict] for verdict in sorted(IGNORED)} if written is not None else {}
    if any(ignored.values()):
        parts = [f"{count:,} {ttl_problem(verdict, attribute)[0]}" for verdict, count in ignored.items() if count]
        fixes = [ttl_problem(verdict, attribute)[1] for verdict, count in ignored.items() if count]
        detail = f"on {attribute}; of {judged:,} items written in the latest window, " + ", ".join(parts)
        return Check(name, WARN, detail + ": TTL never deletes them", "; ".join(fixes))
    carried = judged - (written.verdicts[TtlVerdict.MISSING] if written is not None else 0)
    if written is not None and judged and not carried:
        return Check(
            name,
            WARN,
            f"on {attribute}, but none of the {judged:,} items written in the latest window carries it",
            f"set {attribute} (epoch seconds, a Number) on the items that should expire",
        )
    if deleted == 0 and carried:
        return Check(
            name,
            WARN,
            f"on {attribute} and items carry it, but DynamoDB's TTL deleted none in 24 h",
            "check that the values are epoch seconds in the past for expired items (TTL deletes within days)",
        )
    seen = "" if deleted is None else f"; {deleted:,.0f} items deleted by TTL in 24 h"
    return Check(name, OK, f"{status} on {attribute}{seen}")


def _ttl_deletions(clients: Clients, table: str, now: float) -> float | None:
    """The table's TimeToLiveDeletedItemCount over the last 24 h (None: not readable here)."""
    end = datetime.fromtimestamp(now, tz=UTC)
    query: MetricDataQueryTypeDef = {
        "Id": "ttl",
        "MetricStat": {
            "Metric": {
                "Namespace": NAMESPACE,
                "MetricName": "TimeToLiveDeletedItemCount",
                "Dimensions": [{"Name": TABLE_DIMENSION, "Value": table}],
            },
            "Period": 3600,
            "Stat": "Sum",
        },
        "ReturnData": True,
    }
    try:
        results = clients.cloudwatch.get_metric_data(
            MetricDataQueries=[query], StartTime=end - timedelta(hours=24), EndTime=end
        )["MetricDataResults"]
    except ClientError:
        return None
    return sum(float(value) for result in results for value in result.get("Values", []))


def latest_written(clients: Clients, stack: StackView, table: str) -> Health | None:
    """The items written to ``table`` in its latest stored window, merged over its shards (None: unread)."""
    stats = stack.outputs.get("StatsTableName")
    if clients.stats is None or not stats:
        return None
    reader = clients.stats(stats)
    try:
        latest = reader.latest_window(table)
        return None if latest is None else merged_health(reader.window_segments(table, latest))
    except (ClientError, WindowRetired):
        return None


# -- the stats table ----------------------------------------------------------------------------------
def check_recent_windows(
    clients: Clients, stack: StackView, tables: list[str], window_seconds: int, now: float
) -> list[Check]:
    stats = stack.outputs.get("StatsTableName")
    if not stats:
        return [Check("stats table", FAIL, "the stack has no StatsTableName output", "redeploy")]
    since = int(now) - 86_400
    checks = []
    for table in tables:
        name = f"recent figures for {table}"
        found = _latest_window(clients, stats, table)
        latest = {table: found} if found is not None and found >= since else {}
        if table not in latest:
            checks.append(
                Check(
                    name,
                    WARN,
                    "no window in the last 24 h: no writes since the deploy, or nothing is counted",
                    "write to the table, then run doctor again; if still nothing, check the mapping above",
                )
            )
            continue
        age = now - (latest[table] + window_seconds)
        verdict = OK if age <= 3600 else WARN
        checks.append(
            Check(
                name,
                verdict,
                f"latest window {datetime.fromtimestamp(latest[table], tz=UTC):%Y-%m-%dT%H:%M:%SZ} "
                f"({max(0, age) / 60:.0f} min ago)",
            )
        )
    return checks


def _latest_window(clients: Clients, stats: str, table: str) -> int | None:
    """The latest window with a head of ``table``: the window-heads index, newest first, in each of the
    table's head buckets (its layout item; one bucket without one)."""
    layout = clients.dynamodb.get_item(TableName=stats, Key={"pk": {"S": LAYOUT_PK}, "sk": {"S": table}}).get("Item")
    counts = [int(pair["L"][1]["N"]) for pair in layout["counts"]["L"]] if layout and "counts" in layout else [1]
    latest: int | None = None
    for bucket in range(max(counts)):
        page = clients.dynamodb.query(
            TableName=stats,
            IndexName=HEADS_INDEX,
            KeyConditionExpression="heads_pk = :pk",
            ExpressionAttributeValues={":pk": {"S": heads_pk(table, bucket)}},
            ScanIndexForward=False,
            Limit=1,
        )
        for item in page.get("Items", []):
            latest = max(latest or 0, int(item["window_start"]["N"]))
    return latest
