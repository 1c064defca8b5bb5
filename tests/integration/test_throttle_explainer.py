"""The throttle explainer: a throttle alarm's Lambda action names the keys throttled in the alarm's minutes,
says which limit was hit, marks keys the stream alerted on first ("confirmed: throttling"), and publishes one
alert on the alert topic in the detector's shapes.

The alarm event is AWS's documented Lambda-action payload (``tests/fixtures/README.md``); Contributor Insights
answers come through botocore's Stubber (validated against the service models; moto does not model them);
the incidents table, the topic and its SQS subscriber are moto's."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from hotkeys.detector.adapters.incident_store import DynamoIncidentStore
from hotkeys.detector.adapters.insights import CloudWatchInsights
from hotkeys.detector.alerts.incidents import started
from hotkeys.detector.alerts.rules import PARTITION_LIMIT, HotKey
from hotkeys.detector.throttle_explainer import (
    ACCOUNT,
    KEY_RANGE,
    ON_DEMAND_MAXIMUM,
    PROVISIONED,
    WHAT_TO_DO,
    handle_alarm,
    parse_alarm_event,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "cloudwatch-alarm-lambda-action.json"
T0 = 1_796_083_200  # 2026-12-01T00:00:00Z, the first minute the fixture's alarm judged
RULE = "DynamoDBContributorInsights-PKT-tickets-1796000000000"


def alarm_event(metric: str = "WriteKeyRangeThroughputThrottleEvents", **dimensions: str) -> dict[str, Any]:
    event = copy.deepcopy(json.loads(FIXTURE.read_text()))
    described = event["alarmData"]["configuration"]["metrics"][0]["metricStat"]["metric"]
    described["name"] = metric
    described["dimensions"].update(dimensions)
    return dict(event)


@pytest.fixture
def topic(stats_table_name: str) -> Iterator[tuple[str, str]]:
    sns, sqs = boto3.client("sns"), boto3.client("sqs")
    arn = sns.create_topic(Name="alerts")["TopicArn"]
    queue = sqs.create_queue(QueueName="alert-copies")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=arn, Protocol="sqs", Endpoint=queue_arn)
    yield arn, queue


def received(queue: str) -> list[tuple[str, dict[str, Any]]]:
    """(subject, the JSON form) of each message the topic delivered to its SQS subscriber."""
    messages = boto3.client("sqs").receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
    envelopes = [json.loads(m["Body"]) for m in messages]
    return [(e["Subject"], json.loads(e["Message"])) for e in envelopes]


def stubbed_insights(contributors: list[tuple[str, list[tuple[int, float]]]], index: str | None = None) -> Any:
    session = boto3.session.Session(aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1")
    dynamodb, cloudwatch = session.client("dynamodb"), session.client("cloudwatch")
    ddb, cw = Stubber(dynamodb), Stubber(cloudwatch)
    ddb.add_response(
        "describe_contributor_insights",
        {"TableName": "tickets", "ContributorInsightsStatus": "ENABLED", "ContributorInsightsRuleList": [RULE]},
        {"TableName": "tickets", **({"IndexName": index} if index else {})},
    )
    cw.add_response(
        "get_insight_rule_report",
        {
            "Contributors": [
                {
                    "Keys": [key],
                    "ApproximateAggregateValue": sum(v for _t, v in points),
                    "Datapoints": [
                        {"Timestamp": datetime.fromtimestamp(t, tz=UTC), "ApproximateValue": v} for t, v in points
                    ],
                }
                for key, points in contributors
            ]
        },
        {
            "RuleName": RULE,
            "StartTime": datetime.fromtimestamp(T0, tz=UTC),
            "EndTime": datetime.fromtimestamp(T0 + 180, tz=UTC),
            "Period": 60,
            "MaxContributorCount": 100,
            "Metrics": ["MaxContributorValue"],
            "OrderBy": "Sum",
        },
    )
    ddb.activate()
    cw.activate()
    return CloudWatchInsights(dynamodb, cloudwatch)


def fire(store: DynamoIncidentStore, key: str, window_start: int, index: str | None = None) -> None:
    hot = HotKey(
        "tickets", key, PARTITION_LIMIT, window_start, 60, 900, 900, 900.0, 0.9, window_start + 30, 900.0, index=index
    )
    assert store.start(started(hot, "shard-1", window_start + 30), window_start + 30)[0]


def test_the_documented_event_gives_the_alarm_minutes_and_metric() -> None:
    change = parse_alarm_event(alarm_event())
    assert (change.state, change.start - T0, change.end - T0) == ("ALARM", 0, 130)
    (metric,) = change.metrics
    assert (metric.table, metric.index, metric.limit, metric.operation) == ("tickets", None, KEY_RANGE, "writes")


def test_a_key_range_alarm_names_the_keys_and_confirms_the_one_the_stream_alerted_on(
    stats_table_name: str, topic: tuple[str, str]
) -> None:
    store = DynamoIncidentStore(boto3.resource("dynamodb").Table(stats_table_name))
    fire(store, "event#42", T0)
    fire(store, "venue#7", T0, index="by-venue")  # an index's incident does not confirm a table key
    insights = stubbed_insights([("venue#7", [(T0, 4100.0), (T0 + 60, 1250.0)]), ("event#42", [(T0, 2310.0)])])
    outcome = handle_alarm(alarm_event(), insights, store, boto3.client("sns").publish, topic[0])
    assert outcome["published"] == 1
    ((subject, document),) = received(topic[1])
    assert subject == "[throttling, confirmed] tickets: key range limit, venue#7"
    assert [(k["key"], k["throttled_requests"], k["confirmed"]) for k in document["keys"]] == [
        ("venue#7", 5350, False),
        ("event#42", 2310, True),
    ]
    assert document["limits"] == [KEY_RANGE] and document["what_to_do"] == [WHAT_TO_DO[KEY_RANGE]]


def test_a_throttle_before_the_stream_alerted_is_not_confirmation(
    stats_table_name: str, topic: tuple[str, str]
) -> None:
    store = DynamoIncidentStore(boto3.resource("dynamodb").Table(stats_table_name))
    fire(store, "event#42", T0 + 600)  # the stream's incident came ten minutes after these throttles
    insights = stubbed_insights([("event#42", [(T0, 2310.0)])])
    handle_alarm(alarm_event(), insights, store, boto3.client("sns").publish, topic[0])
    ((subject, document),) = received(topic[1])
    assert subject.startswith("[throttling] ") and document["keys"][0]["confirmed"] is False


@pytest.mark.parametrize(
    ("metric", "limit", "says"),
    [
        ("ReadProvisionedThroughputThrottleEvents", PROVISIONED, "a capacity setting, not a key problem"),
        ("WriteMaxOnDemandThroughputThrottleEvents", ON_DEMAND_MAXIMUM, "a capacity setting, not a key problem"),
        ("WriteAccountLimitThrottleEvents", ACCOUNT, "a quota, not a key problem"),
        ("ReadKeyRangeThroughputThrottleEvents", KEY_RANGE, "a key problem. Spread each key"),
    ],
)
def test_each_limit_is_named_with_what_to_do(
    stats_table_name: str, topic: tuple[str, str], metric: str, limit: str, says: str
) -> None:
    store = DynamoIncidentStore(boto3.resource("dynamodb").Table(stats_table_name))
    insights = stubbed_insights([("event#42", [(T0, 5.0)])])
    handle_alarm(alarm_event(metric), insights, store, boto3.client("sns").publish, topic[0])
    ((subject, document),) = received(topic[1])
    assert document["limits"] == [limit] and says in document["what_to_do"][0]
    assert f"{limit} limit" in subject
    assert document["operations"] == (["reads"] if metric.startswith("Read") else ["writes"])


def test_an_index_write_alarm_without_keys_points_to_the_stream_index_count(
    stats_table_name: str, topic: tuple[str, str]
) -> None:
    store = DynamoIncidentStore(boto3.resource("dynamodb").Table(stats_table_name))
    fire(store, "PENDING", T0, index="by-status")
    insights = stubbed_insights([], index="by-status")
    event = alarm_event(GlobalSecondaryIndexName="by-status")
    handle_alarm(event, insights, store, boto3.client("sns").publish, topic[0])
    ((_subject, document),) = received(topic[1])
    assert document["index"] == "by-status" and document["keys"] == []
    assert document["notes"] == [
        "Contributor Insights does not measure write throttling caused by an index (GSI back-pressure); "
        "the stream's index count names PENDING"
    ]


def test_ok_and_unrelated_alarms_publish_nothing(stats_table_name: str, topic: tuple[str, str]) -> None:
    store = DynamoIncidentStore(boto3.resource("dynamodb").Table(stats_table_name))
    event = alarm_event()
    event["alarmData"]["state"]["value"] = "OK"
    assert handle_alarm(event, stubbed_insights([]), store, boto3.client("sns").publish, topic[0])["published"] == 0
    other = alarm_event()
    other["alarmData"]["configuration"]["metrics"][0]["metricStat"]["metric"]["namespace"] = "AWS/Lambda"
    assert handle_alarm(other, stubbed_insights([]), store, boto3.client("sns").publish, topic[0])["published"] == 0
    assert received(topic[1]) == []


def test_the_handler_on_an_endpoint_without_contributor_insights_still_alerts(
    stats_table_name: str, topic: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hotkeys.detector import throttle_app

    throttle_app._aws.cache_clear()
    monkeypatch.setenv("ALERT_TOPIC_ARN", topic[0])
    monkeypatch.setenv("STATS_TABLE_NAME", stats_table_name)
    context = type("Context", (), {"function_name": "f", "memory_limit_in_mb": 128, "aws_request_id": "r"})()
    context.invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:f"  # type: ignore[attr-defined]
    assert throttle_app.handler(alarm_event(), context)["published"] == 1  # type: ignore[arg-type]
    ((subject, document),) = received(topic[1])
    assert subject == "[throttling] tickets: key range limit"
    assert document["notes"] == ["tickets: the endpoint does not implement Contributor Insights"]


def test_the_webhook_subscriber_recognises_the_explanation(stats_table_name: str, topic: tuple[str, str]) -> None:
    from hotkeys.detector.alerts.inbound import ThrottleExplanation, classify, slack_payload

    store = DynamoIncidentStore(boto3.resource("dynamodb").Table(stats_table_name))
    fire(store, "event#42", T0)
    handle_alarm(
        alarm_event(), stubbed_insights([("event#42", [(T0, 2310.0)])]), store, boto3.client("sns").publish, topic[0]
    )
    (message,) = boto3.client("sqs").receive_message(QueueUrl=topic[1])["Messages"]
    envelope = json.loads(message["Body"])
    notice = classify(envelope["Subject"], envelope["Message"])
    assert isinstance(notice, ThrottleExplanation)
    text = slack_payload(notice)["blocks"][0]["text"]["text"]
    assert "`event#42`: 2310 throttled requests (confirmed: throttling)" in text and "a key problem" in text
