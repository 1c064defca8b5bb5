"""`hotkeys doctor` per watched table and GSI: Contributor Insights' mode, the last hour's throttles by cause,
and capacity settings that cap a key below one partition.

moto backs the tables (with their GSIs and warm throughput) and CloudWatch's metrics (GetMetricData keeps the
documented dimension semantics: a table's metric is not its GSIs'). moto 5.2 models neither Contributor
Insights nor OnDemandThroughput: those answers go through botocore's Stubber, validated against DynamoDB's
service model.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from hotkeys.cli.doctor import OK, WARN, Check, Clients, throttling_checks
from tests.integration.test_doctor import THROTTLED_KEYS_ON, insights_answers
from tests.support import create_source_table

NOW = time.time()


def clients(dynamodb: Any) -> Clients:
    return Clients(
        cloudformation=None,
        dynamodb=dynamodb,
        streams=None,
        lambda_=None,
        cloudwatch=boto3.client("cloudwatch"),
        sqs=None,
        sns=None,
        ssm=None,
    )


def throttled(metric: str, value: float, *, index: str | None = None, seconds_ago: int = 600) -> None:
    dimensions = [{"Name": "TableName", "Value": "orders"}]
    if index:
        dimensions.append({"Name": "GlobalSecondaryIndexName", "Value": index})
    boto3.client("cloudwatch").put_metric_data(
        Namespace="AWS/DynamoDB",
        MetricData=[
            {
                "MetricName": metric,
                "Dimensions": dimensions,
                "Timestamp": datetime.fromtimestamp(NOW - seconds_ago, tz=UTC),
                "Value": value,
            }
        ],
    )


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {check.name: check for check in checks}


def test_each_table_and_gsi_reports_its_insights_mode_and_an_index_left_off_gets_the_command(aws: None) -> None:
    # Given a table in throttled-keys mode whose GSI (added after the deploy, say) has Contributor Insights off
    create_source_table("orders", status_index=True)
    dynamodb, stub = insights_answers(
        {None: THROTTLED_KEYS_ON, "by-status": {"IndexName": "by-status", "ContributorInsightsStatus": "DISABLED"}}
    )
    # When the doctor looks
    checks = by_name(throttling_checks(clients(dynamodb), "orders", NOW))
    stub.assert_no_pending_responses()
    # Then the table is fine and the index is named with the command that turns throttled-keys mode on
    assert checks["contributor insights of orders"].verdict == OK
    assert "THROTTLED_KEYS" in checks["contributor insights of orders"].detail
    index = checks["contributor insights of orders index by-status"]
    assert index.verdict == WARN and index.detail.startswith("DISABLED")
    assert index.fix == (
        "aws dynamodb update-contributor-insights --table-name orders --index-name by-status "
        "--contributor-insights-action ENABLE --contributor-insights-mode THROTTLED_KEYS"
    )


@pytest.mark.parametrize(
    ("answer", "verdict", "says"),
    [
        (
            {"ContributorInsightsStatus": "ENABLED", "ContributorInsightsMode": "ACCESSED_AND_THROTTLED_KEYS"},
            OK,
            "billed",
        ),
        ({"ContributorInsightsStatus": "ENABLED"}, OK, "ACCESSED_AND_THROTTLED_KEYS"),  # before modes existed
        (
            {
                "ContributorInsightsStatus": "FAILED",
                "FailureException": {"ExceptionName": "LimitExceededException", "ExceptionDescription": "rules"},
            },
            WARN,
            "LimitExceededException",
        ),
    ],
)
def test_the_full_mode_and_a_failure_are_reported_as_such(
    aws: None, answer: dict[str, Any], verdict: str, says: str
) -> None:
    create_source_table("orders")
    dynamodb, _ = insights_answers({None: answer})
    check = by_name(throttling_checks(clients(dynamodb), "orders", NOW))["contributor insights of orders"]
    assert check.verdict == verdict and says in check.detail


def test_the_last_hours_throttles_are_reported_by_cause_for_the_table_and_each_gsi(aws: None) -> None:
    # Given, in the last hour, 3 reads throttled by the table's on-demand maximum and 12 GSI writes throttled
    # on a key range (GSI back-pressure); and 50 table key-range write throttles two hours ago
    create_source_table("orders", status_index=True)
    throttled("ReadMaxOnDemandThroughputThrottleEvents", 3)
    throttled("WriteKeyRangeThroughputThrottleEvents", 5, index="by-status")
    throttled("WriteKeyRangeThroughputThrottleEvents", 7, index="by-status", seconds_ago=1200)
    throttled("WriteKeyRangeThroughputThrottleEvents", 50, seconds_ago=7200)
    dynamodb, _ = insights_answers({None: THROTTLED_KEYS_ON, "by-status": THROTTLED_KEYS_ON})
    # When the doctor looks
    checks = by_name(throttling_checks(clients(dynamodb), "orders", NOW))
    # Then the table shows the on-demand maximum (a setting, not a key), and not the GSI's events nor old ones
    table = checks["throttles of orders (last hour)"]
    assert table.verdict == WARN
    assert table.detail.startswith("3 read events") and "ReadMaxOnDemandThroughputThrottleEvents" in table.detail
    assert "KeyRange" not in table.detail and "not a key problem" in table.fix
    # and the GSI its key-range write throttles, summed over the hour, with the partition advice
    index = checks["throttles of orders index by-status (last hour)"]
    assert index.verdict == WARN and index.detail.startswith("12 write events")
    assert "WriteKeyRangeThroughputThrottleEvents" in index.detail and "partition advice" in index.fix


def test_no_throttles_is_ok(aws: None) -> None:
    create_source_table("orders")
    dynamodb, _ = insights_answers({None: THROTTLED_KEYS_ON})
    check = by_name(throttling_checks(clients(dynamodb), "orders", NOW))["throttles of orders (last hour)"]
    assert (check.verdict, check.detail) == (OK, "none")


def described(on_demand: dict[str, int], index_on_demand: dict[str, int] | None = None) -> Any:
    """A DynamoDB client whose DescribeTable answer (stubbed: moto does not keep OnDemandThroughput) has these
    on-demand maximums, and whose Contributor Insights is on."""
    client = boto3.client("dynamodb", region_name="us-east-1")
    stub = Stubber(client)
    table: dict[str, Any] = {
        "TableName": "orders",
        "TableStatus": "ACTIVE",
        "BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"},
        "OnDemandThroughput": on_demand,
        "WarmThroughput": {"ReadUnitsPerSecond": 12000, "WriteUnitsPerSecond": 4000, "Status": "ACTIVE"},
    }
    if index_on_demand is not None:
        table["GlobalSecondaryIndexes"] = [
            {
                "IndexName": "by-status",
                "IndexStatus": "ACTIVE",
                "OnDemandThroughput": index_on_demand,
                "WarmThroughput": {"ReadUnitsPerSecond": 12000, "WriteUnitsPerSecond": 4000, "Status": "ACTIVE"},
            }
        ]
    stub.add_response("describe_table", {"Table": table}, {"TableName": "orders"})
    stub.add_response(
        "describe_contributor_insights", {"TableName": "orders", **THROTTLED_KEYS_ON}, {"TableName": "orders"}
    )
    if index_on_demand is not None:
        stub.add_response(
            "describe_contributor_insights",
            {"TableName": "orders", "IndexName": "by-status", **THROTTLED_KEYS_ON},
            {"TableName": "orders", "IndexName": "by-status"},
        )
    stub.activate()
    return client


def test_an_on_demand_maximum_below_one_partition_is_named_as_the_cap(aws: None) -> None:
    # Given an on-demand table capped at 500 write units a second, and its GSI at 2,000 reads
    dynamodb = described(
        {"MaxReadRequestUnits": -1, "MaxWriteRequestUnits": 500},
        {"MaxReadRequestUnits": 2000, "MaxWriteRequestUnits": -1},
    )
    checks = by_name(throttling_checks(clients(dynamodb), "orders", NOW))
    # Then each says its setting binds before any key reaches the partition limit
    table = checks["headroom of orders"]
    assert table.verdict == WARN
    assert "on-demand maximum of 500 write request units a second, below one partition's 1,000" in table.detail
    assert "read request units" not in table.detail  # no read maximum (-1)
    index = checks["headroom of orders index by-status"]
    assert index.verdict == WARN and "2,000 read request units a second, below one partition's 3,000" in index.detail


@pytest.mark.parametrize("maximum", [-1, 1000, 40000])
def test_no_maximum_or_one_at_a_partitions_throughput_leaves_the_headroom(aws: None, maximum: int) -> None:
    dynamodb = described({"MaxReadRequestUnits": -1, "MaxWriteRequestUnits": maximum})
    check = by_name(throttling_checks(clients(dynamodb), "orders", NOW))["headroom of orders"]
    assert check.verdict == OK and "nothing caps a key" in check.detail


def test_provisioned_capacity_below_one_partition_is_named(aws: None) -> None:
    # Given a provisioned table (moto keeps its capacity) of 400 WCU and 5,000 RCU
    boto3.client("dynamodb").create_table(
        TableName="orders",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 5000, "WriteCapacityUnits": 400},
    )
    dynamodb, _ = insights_answers({None: THROTTLED_KEYS_ON})
    check = by_name(throttling_checks(clients(dynamodb), "orders", NOW))["headroom of orders"]
    assert check.verdict == WARN and "provisioned 400 write capacity units" in check.detail
    assert "read capacity" not in check.detail
