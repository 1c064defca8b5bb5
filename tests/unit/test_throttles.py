"""The throttled-keys reader: rule names, report parsing and the join with the stream's writes.

AWS responses come through botocore's Stubber, which validates every request and response against the
service model (moto does not model Contributor Insights rules or GetInsightRuleReport)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from hotkeys.detector.adapters.insights import DENIED, CloudWatchInsights, report_request
from hotkeys.detector.throttling.throttle_sources import Source
from hotkeys.detector.throttling.throttles import (
    THROTTLED_AND_LANDED,
    THROTTLED_ONLY,
    Landed,
    join,
    parse_report,
    read_throttles,
    rule_arn_patterns,
    rule_kind,
    summary_line,
    throttled_key_rule,
)

T0 = 1_764_547_200  # 2025-12-01T00:00:00Z
PKT = "DynamoDBContributorInsights-PKT-tickets-1764000000000"


def _at(epoch: int) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


def clients() -> tuple[Any, Any]:
    session = boto3.session.Session(aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1")
    return session.client("dynamodb"), session.client("cloudwatch")


def report_response(
    contributors: list[tuple[str, list[tuple[int, float]]]], unique: int | None = None
) -> dict[str, Any]:
    return {
        "KeyLabels": ["PartitionKey"],
        "AggregationStatistic": "Sum",
        "AggregateValue": float(sum(v for _k, points in contributors for _t, v in points)),
        "ApproximateUniqueCount": unique if unique is not None else len(contributors),
        "Contributors": [
            {
                "Keys": [key],
                "ApproximateAggregateValue": float(sum(v for _t, v in points)),
                "Datapoints": [{"Timestamp": _at(t), "ApproximateValue": v} for t, v in points],
            }
            for key, points in contributors
        ],
        "MetricDatapoints": [{"Timestamp": _at(T0), "MaxContributorValue": 1.0}],
    }


def test_rule_names_follow_the_documented_format() -> None:
    names = [
        "DynamoDBContributorInsights-PKC-tickets-1764000000000",
        PKT,
        "DynamoDBContributorInsights-SKT-tickets-1764000000000",
        "DynamoDBContributorInsights-PKT-tickets-1763000000000",
    ]
    assert [rule_kind(n) for n in names] == ["PKC", "PKT", "SKT", "PKT"]
    assert rule_kind("SomeoneElses-PKT-tickets-1") is None
    assert rule_kind("DynamoDBContributorInsights-XYZ-tickets-1") is None
    # The newest PKT rule when two are listed; none without one.
    assert throttled_key_rule(names) == PKT
    assert throttled_key_rule(names[:1]) is None


def test_rule_arns_for_iam_cover_both_readings_of_an_index_resource_name() -> None:
    arns = rule_arn_patterns("aws-cn", "cn-north-1", "111122223333", "payments", ["by-status"])
    base = "arn:aws-cn:cloudwatch:cn-north-1:111122223333:insight-rule/DynamoDBContributorInsights-PKT-"
    assert arns == [f"{base}payments-*", f"{base}payments-by-status-*", f"{base}by-status-*"]


def test_a_report_becomes_throttled_requests_per_key_per_minute() -> None:
    response = report_response([("venue#7", [(T0, 4100.0), (T0 + 60, 1200.0)]), ("event#42", [(T0 + 5, 2310.0)])], 3)
    report = parse_report(Source("tickets"), response)
    assert [(k.key, k.minute - T0, k.requests) for k in report.keys] == [
        ("event#42", 0, 2310),
        ("venue#7", 0, 4100),
        ("venue#7", 60, 1200),
    ]
    assert report.unlisted == 1


def test_the_adapter_reads_the_rule_listed_by_dynamodb_and_asks_for_one_minute_points() -> None:
    dynamodb, cloudwatch = clients()
    with Stubber(dynamodb) as ddb, Stubber(cloudwatch) as cw:
        ddb.add_response(
            "describe_contributor_insights",
            {
                "TableName": "tickets",
                "ContributorInsightsRuleList": [PKT, "DynamoDBContributorInsights-SKT-tickets-1764000000000"],
                "ContributorInsightsStatus": "ENABLED",
                "ContributorInsightsMode": "THROTTLED_KEYS",
            },
            {"TableName": "tickets"},
        )
        cw.add_response(
            "get_insight_rule_report",
            report_response([("event#42", [(T0, 10.0)])]),
            {
                "RuleName": PKT,
                "StartTime": _at(T0),
                "EndTime": _at(T0 + 120),
                "Period": 60,
                "MaxContributorCount": 100,
                "Metrics": ["MaxContributorValue"],
                "OrderBy": "Sum",
            },
        )
        picture = read_throttles(CloudWatchInsights(dynamodb, cloudwatch), [Source("tickets")], T0 + 10, T0 + 90)
        ddb.assert_no_pending_responses()
        cw.assert_no_pending_responses()
    assert [(k.key, k.requests) for k in picture.keys] == [("event#42", 10)]
    assert picture.notes == []


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        ("DISABLED", None, "Contributor Insights is disabled on tickets"),
        (None, "AccessDeniedException", "tickets: access denied"),
    ],
)
def test_off_or_denied_is_one_line_never_an_error(status: str | None, code: str | None, expected: str) -> None:
    dynamodb, cloudwatch = clients()
    with Stubber(dynamodb) as ddb:
        if code:
            ddb.add_client_error("describe_contributor_insights", service_error_code=code, http_status_code=400)
        else:
            ddb.add_response(
                "describe_contributor_insights", {"TableName": "tickets", "ContributorInsightsStatus": status}
            )
        picture = read_throttles(CloudWatchInsights(dynamodb, cloudwatch), [Source("tickets")], T0, T0 + 60)
    assert picture.keys == []
    line = summary_line(picture)
    assert line is not None and expected in line and "\n" not in line


def test_a_denied_report_is_said_and_other_sources_still_read() -> None:
    dynamodb, cloudwatch = clients()
    with Stubber(dynamodb) as ddb, Stubber(cloudwatch) as cw:
        for source in ("a-table", "b-table"):
            ddb.add_response(
                "describe_contributor_insights",
                {
                    "TableName": source,
                    "ContributorInsightsStatus": "ENABLED",
                    "ContributorInsightsRuleList": [f"DynamoDBContributorInsights-PKT-{source}-1"],
                },
            )
        cw.add_client_error("get_insight_rule_report", service_error_code="AccessDenied", http_status_code=403)
        cw.add_response("get_insight_rule_report", report_response([("k", [(T0, 3.0)])]))
        picture = read_throttles(
            CloudWatchInsights(dynamodb, cloudwatch), [Source("a-table"), Source("b-table")], T0, T0 + 60
        )
    assert [(k.table, k.key) for k in picture.keys] == [("b-table", "k")]
    assert picture.notes == [f"a-table: {DENIED}"]


def test_report_request_covers_whole_minutes() -> None:
    request = report_request(PKT, T0 + 59, T0 + 61)
    assert (request["StartTime"], request["EndTime"]) == (_at(T0), _at(T0 + 120))


def test_join_puts_throttles_beside_landed_writes_and_marks_throttled_only_keys() -> None:
    landed = [
        Landed("tickets", None, T0, 60, {"event#42": 18_000, "user#1": 68}, 0),
        Landed("tickets", None, T0 + 60, 60, {"user#1": 63}, 5),
    ]
    response = report_response(
        [("venue#7", [(T0, 4100.0), (T0 + 60, 1200.0)]), ("event#42", [(T0, 2310.0)]), ("user#1", [(T0 + 60, 2.0)])]
    )
    rows = join(landed, parse_report(Source("tickets"), response).keys)
    got = [(r.key, r.window_start[-9:-1], r.landed_wcu, r.throttled_requests, r.status, r.unlisted_bound) for r in rows]
    assert got == [
        ("venue#7", "00:00:00", None, 4100, THROTTLED_ONLY, 0),
        ("event#42", "00:00:00", 18_000, 2310, THROTTLED_AND_LANDED, 0),
        ("venue#7", "00:01:00", None, 1200, THROTTLED_ONLY, 5),
        ("user#1", "00:01:00", 63, 2, THROTTLED_AND_LANDED, 0),
    ]


def test_join_sums_the_minutes_of_a_longer_window() -> None:
    landed = [Landed("t", None, T0, 300, {"k": 10}, 0)]
    rows = join(landed, parse_report(Source("t"), report_response([("k", [(T0, 1.0), (T0 + 240, 2.0)])])).keys)
    assert [(r.throttled_requests, r.throttled_minutes, r.landed_wcu) for r in rows] == [(3, 2, 10)]


def test_index_throttles_join_the_index_windows_not_the_table() -> None:
    landed = [Landed("payments", None, T0, 60, {"PENDING": 5}, 0), Landed("payments", "by-status", T0, 60, {}, 0)]
    keys = parse_report(Source("payments", "by-status"), report_response([("PENDING", [(T0, 7.0)])])).keys
    (row,) = join(landed, keys)
    assert (row.where, row.landed_wcu, row.status) == ("payments index by-status", None, THROTTLED_ONLY)
