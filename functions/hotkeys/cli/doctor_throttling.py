"""``hotkeys doctor``'s throttling checks of a watched table and each of its GSIs: Contributor Insights,
DynamoDB's throttle metrics, and capacity settings that cap a key below one partition."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from hotkeys.cli.doctor_model import OK, WARN, Check, Clients
from hotkeys.detector.throttling.throttle_sources import Source, insights_command
from hotkeys.throttling import (
    INDEX_DIMENSION,
    NAMESPACE,
    PARTITION_UNITS,
    TABLE_DIMENSION,
    THROTTLE_METRICS,
)

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch.type_defs import DimensionTypeDef, MetricDataQueryTypeDef

THROTTLED_KEYS, FULL_MODE = "THROTTLED_KEYS", "ACCESSED_AND_THROTTLED_KEYS"


@dataclass(frozen=True)
class _Scope:
    """A watched table (``index`` None) or one of its GSIs, with its DescribeTable description."""

    table: str
    index: str | None
    description: Mapping[str, Any]

    @property
    def label(self) -> str:
        return self.table if self.index is None else f"{self.table} index {self.index}"

    def arguments(self) -> dict[str, str]:
        return {"TableName": self.table} | ({"IndexName": self.index} if self.index is not None else {})

    def dimensions(self) -> list[DimensionTypeDef]:
        table: list[DimensionTypeDef] = [{"Name": TABLE_DIMENSION, "Value": self.table}]
        return table + ([{"Name": INDEX_DIMENSION, "Value": self.index}] if self.index is not None else [])


def throttling_checks(clients: Clients, table: str, now: float) -> list[Check]:
    try:
        description = clients.dynamodb.describe_table(TableName=table)["Table"]
    except ClientError:
        return []  # reported by the stream check
    scopes = [_Scope(table, None, description)] + [
        _Scope(table, str(index["IndexName"]), index) for index in description.get("GlobalSecondaryIndexes") or []
    ]
    provisioned = (description.get("BillingModeSummary") or {}).get("BillingMode") == "PROVISIONED" or (
        "BillingModeSummary" not in description
        and int((description.get("ProvisionedThroughput") or {}).get("WriteCapacityUnits") or 0) > 0
    )
    checks = []
    for scope in scopes:
        checks.append(_check_insights(clients, scope))
        checks.append(_check_throttle_events(clients, scope, now))
        checks.append(_check_headroom(scope, provisioned))
    return checks


def _check_insights(clients: Clients, scope: _Scope) -> Check:
    """Contributor Insights' status and mode (DescribeContributorInsights); off: the command that enables it."""
    name = f"contributor insights of {scope.label}"
    enable = insights_command(Source(scope.table, scope.index))
    try:
        answer = clients.dynamodb.describe_contributor_insights(**scope.arguments())
    except ClientError as error:
        return Check(name, WARN, f"cannot read it here: {error.response.get('Error', {}).get('Code', error)}")
    status = str(answer.get("ContributorInsightsStatus", "DISABLED"))
    # An answer without a mode predates modes: the full one was the only one.
    mode = str(answer.get("ContributorInsightsMode") or FULL_MODE)
    if status in ("ENABLED", "ENABLING"):
        if mode == THROTTLED_KEYS:
            return Check(name, OK, f"{status}, {THROTTLED_KEYS}: throttled reads and writes are named by key")
        return Check(name, OK, f"{status}, {mode}: every request is an event (billed), throttled keys included")
    if status == "FAILED":
        failure = answer.get("FailureException") or {}
        return Check(
            name,
            WARN,
            f"FAILED: {failure.get('ExceptionName', '?')}: {failure.get('ExceptionDescription', '')}".rstrip(": "),
            enable,
        )
    return Check(
        name,
        WARN,
        f"{status}: throttled keys of this {'index' if scope.index else 'table'} are not named "
        "(an index added after the deploy, -c throttledKeyInsights=false or lean=true, or left off by a stack whose "
        "keys are protected: -c tableKmsKeyArns or keyDisplay=hash, where its reports would show them in plaintext)",
        enable,
    )


def _check_throttle_events(clients: Clients, scope: _Scope, now: float) -> Check:
    """The last hour's sum of each throttle metric of this table or index (one GetMetricData call)."""
    name = f"throttles of {scope.label} (last hour)"
    end = datetime.fromtimestamp(now, tz=UTC)
    queries: list[MetricDataQueryTypeDef] = [
        {
            "Id": f"m{number}",
            "MetricStat": {
                "Metric": {"Namespace": NAMESPACE, "MetricName": metric.name, "Dimensions": scope.dimensions()},
                "Period": 3600,
                "Stat": "Sum",
            },
            "ReturnData": True,
        }
        for number, metric in enumerate(THROTTLE_METRICS)
    ]
    try:
        results = clients.cloudwatch.get_metric_data(
            MetricDataQueries=queries, StartTime=end - timedelta(hours=1), EndTime=end
        )["MetricDataResults"]
    except ClientError as error:
        return Check(name, WARN, f"cannot read DynamoDB's metrics here: {error.response.get('Error', {}).get('Code')}")
    by_id = {str(result["Id"]): sum(float(v) for v in result.get("Values", [])) for result in results}
    counts = [(metric, by_id.get(f"m{number}", 0.0)) for number, metric in enumerate(THROTTLE_METRICS)]
    seen = [(metric, count) for metric, count in counts if count > 0]
    if not seen:
        return Check(name, OK, "none")
    detail = "; ".join(
        f"{count:,.0f} {metric.operation.lower()} events: {metric.cause.meaning} ({metric.name})"
        for metric, count in seen
    )
    fixes = list(dict.fromkeys(metric.cause.fix for metric, _ in seen))
    return Check(name, WARN, detail, "; ".join(fixes))


def _check_headroom(scope: _Scope, provisioned: bool) -> Check:
    """Settings below one partition's throughput: the table or index throttles before any key reaches the
    partition limit the detector's alerts and advice measure against."""
    name = f"headroom of {scope.label}"
    what = "index" if scope.index is not None else "table"
    caps = []
    on_demand = scope.description.get("OnDemandThroughput") or {}
    warm = scope.description.get("WarmThroughput") or {}
    capacity = scope.description.get("ProvisionedThroughput") or {}
    for operation, unit in (("Write", "write"), ("Read", "read")):
        partition = PARTITION_UNITS[operation]
        maximum = int(on_demand.get(f"Max{operation}RequestUnits") or 0)
        if 0 < maximum < partition:  # -1 (or absent): no maximum
            caps.append(
                f"on-demand maximum of {maximum:,} {unit} request units a second, below one partition's "
                f"{partition:,}: the whole {what} throttles (…MaxOnDemandThroughputExceeded) before any key "
                "reaches the partition limit"
            )
        units = int(capacity.get(f"{operation}CapacityUnits") or 0)
        if provisioned and 0 < units < partition:
            caps.append(
                f"provisioned {units:,} {unit} capacity units, below one partition's {partition:,}: the {what} "
                "throttles (…ProvisionedThroughputExceeded) before any key reaches the partition limit"
            )
        warmed = int(warm.get(f"{operation}UnitsPerSecond") or 0)
        if 0 < warmed < partition:
            caps.append(
                f"warm throughput of {warmed:,} {unit} units a second, below one partition's {partition:,}: "
                "a burst above it can throttle while DynamoDB scales"
            )
    if caps:
        return Check(
            name,
            WARN,
            "; ".join(caps),
            "a key alert's percentages are of the partition limit; these settings bind first: raise them "
            f"(aws dynamodb update-table --table-name {scope.table} ...) or read alerts against them",
        )
    parts = []
    if on_demand:
        parts.append(
            "on-demand maximum "
            + ", ".join(
                f"{on_demand.get(f'Max{op}RequestUnits')} {op.lower()}"
                for op in ("Write", "Read")
                if f"Max{op}RequestUnits" in on_demand
            )
        )
    if warm:
        parts.append(f"warm {warm.get('WriteUnitsPerSecond')} write / {warm.get('ReadUnitsPerSecond')} read units/s")
    return Check(name, OK, (", ".join(parts) + ": " if parts else "") + "nothing caps a key below one partition")
