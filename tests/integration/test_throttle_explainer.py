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
from hotkeys.detector.alerts.rules import HotKey, Reason
from hotkeys.detector.throttling.throttle_explainer import (
    KEY_RANGE,
    Publication,
    handle_alarm,
    parse_alarm_event,
)
from hotkeys.throttling import CAUSE_BY_KEY
from tests.support import Routed

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "cloudwatch-alarm-lambda-action.json"
T0 = 1_796_083_200  # 2026-12-01T00:00:00Z, the first minute the fixture's alarm judged
RULE = "DynamoDBContributorInsights-PKT-tickets-1796000000000"


def _report_request(rule: str) -> dict[str, Any]:
    """The GetInsightRuleReport request the explainer makes for the alarm's three minutes."""
    return {
        "RuleName": rule,
        "StartTime": datetime.fromtimestamp(T0, tz=UTC),
        "EndTime": datetime.fromtimestamp(T0 + 180, tz=UTC),
        "Period": 60,
        "MaxContributorCount": 100,
        "Metrics": ["MaxContributorValue"],
        "OrderBy": "Sum",
    }


def _rule_report(contributors: Any) -> dict[str, Any]:
    """A GetInsightRuleReport answer: each (key, [(second, requests)]) as a contributor."""
    return {
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
    }


def alarm_event(metric: str = "WriteKeyRangeThroughputThrottleEvents", **dimensions: str) -> dict[str, Any]:
    event = copy.deepcopy(json.loads(FIXTURE.read_text()))
    described = event["alarmData"]["configuration"]["metrics"][0]["metricStat"]["metric"]
    described["name"] = metric
    described["dimensions"].update(dimensions)
    return dict(event)


@pytest.fixture
def cold_container(
    monkeypatch: pytest.MonkeyPatch, topic: tuple[str, str], stats_table_name: str
) -> Iterator[tuple[Any, Any]]:
    """The explainer's handler module as a new container sees it, with this test's topic and table: its
    settings and clients are cached once per container, so each test starts one and leaves none behind."""
    from hotkeys.detector.handlers import throttle_app

    def cold() -> None:
        throttle_app._aws.cache_clear()
        throttle_app._settings.cache_clear()

    monkeypatch.setenv("ALERT_TOPIC_ARN", topic[0])
    monkeypatch.setenv("STATS_TABLE_NAME", stats_table_name)
    cold()
    context = type("Context", (), {"function_name": "f", "memory_limit_in_mb": 128, "aws_request_id": "r"})()
    context.invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:f"
    yield throttle_app, context
    cold()


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
        _rule_report(contributors),
        _report_request(RULE),
    )
    ddb.activate()
    cw.activate()
    return CloudWatchInsights(dynamodb, cloudwatch)


def fire(store: DynamoIncidentStore, key: str, window_start: int, index: str | None = None) -> None:
    fire_on(store, "tickets", key, window_start, index)


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
    outcome = handle_alarm(alarm_event(), insights, store, Publication(boto3.client("sns").publish, topic[0]))
    assert outcome["published"] == 1
    ((subject, document),) = received(topic[1])
    assert subject == "[throttling, confirmed] tickets: key range limit, venue#7"
    assert [(k["key"], k["throttled_requests"], k["confirmed"]) for k in document["keys"]] == [
        ("venue#7", 5350, False),
        ("event#42", 2310, True),
    ]
    assert document["limits"] == [KEY_RANGE] and document["what_to_do"] == [CAUSE_BY_KEY["KeyRange"].what_to_do]


def test_a_throttle_before_the_stream_alerted_is_not_confirmation(
    stats_table_name: str, topic: tuple[str, str]
) -> None:
    store = DynamoIncidentStore(boto3.resource("dynamodb").Table(stats_table_name))
    fire(store, "event#42", T0 + 600)  # the stream's incident came ten minutes after these throttles
    insights = stubbed_insights([("event#42", [(T0, 2310.0)])])
    handle_alarm(alarm_event(), insights, store, Publication(boto3.client("sns").publish, topic[0]))
    ((subject, document),) = received(topic[1])
    assert subject.startswith("[throttling] ") and document["keys"][0]["confirmed"] is False


@pytest.mark.parametrize(
    ("metric", "limit", "says"),
    [
        ("ReadProvisionedThroughputThrottleEvents", "provisioned", "a capacity setting, not a key problem"),
        ("WriteMaxOnDemandThroughputThrottleEvents", "on-demand maximum", "a capacity setting, not a key problem"),
        ("WriteAccountLimitThrottleEvents", "account", "a quota, not a key problem"),
        ("ReadKeyRangeThroughputThrottleEvents", KEY_RANGE, "a key problem. Spread each hot key"),
    ],
)
def test_each_limit_is_named_with_what_to_do(
    stats_table_name: str, topic: tuple[str, str], metric: str, limit: str, says: str
) -> None:
    store = DynamoIncidentStore(boto3.resource("dynamodb").Table(stats_table_name))
    insights = stubbed_insights([("event#42", [(T0, 5.0)])])
    handle_alarm(alarm_event(metric), insights, store, Publication(boto3.client("sns").publish, topic[0]))
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
    handle_alarm(event, insights, store, Publication(boto3.client("sns").publish, topic[0]))
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
    assert (
        handle_alarm(event, stubbed_insights([]), store, Publication(boto3.client("sns").publish, topic[0]))[
            "published"
        ]
        == 0
    )
    other = alarm_event()
    other["alarmData"]["configuration"]["metrics"][0]["metricStat"]["metric"]["namespace"] = "AWS/Lambda"
    assert (
        handle_alarm(other, stubbed_insights([]), store, Publication(boto3.client("sns").publish, topic[0]))[
            "published"
        ]
        == 0
    )
    assert received(topic[1]) == []


def test_the_handler_on_an_endpoint_without_contributor_insights_still_alerts(
    topic: tuple[str, str], cold_container: tuple[Any, Any]
) -> None:
    throttle_app, context = cold_container
    assert throttle_app.handler(alarm_event(), context)["published"] == 1  # type: ignore[arg-type]
    ((subject, document),) = received(topic[1])
    assert subject == "[throttling] tickets: key range limit"
    assert document["notes"] == ["tickets: the endpoint does not implement Contributor Insights"]


def test_the_webhook_subscriber_recognises_the_explanation(stats_table_name: str, topic: tuple[str, str]) -> None:
    from hotkeys.detector.alerts.inbound import ThrottleExplanation, classify, slack_payload

    store = DynamoIncidentStore(boto3.resource("dynamodb").Table(stats_table_name))
    fire(store, "event#42", T0)
    handle_alarm(
        alarm_event(),
        stubbed_insights([("event#42", [(T0, 2310.0)])]),
        store,
        Publication(boto3.client("sns").publish, topic[0]),
    )
    (message,) = boto3.client("sqs").receive_message(QueueUrl=topic[1])["Messages"]
    envelope = json.loads(message["Body"])
    notice = classify(envelope["Subject"], envelope["Message"])
    assert isinstance(notice, ThrottleExplanation)
    text = slack_payload(notice)["blocks"][0]["text"]["text"]
    assert "`event#42`: 2310 throttled requests (confirmed: throttling)" in text and "a key problem" in text


# ---- an alarm on every GSI of a table the stack does not own (a Metrics Insights query, decisions §69) ----

QUERY_FIXTURE = FIXTURE.with_name("cloudwatch-alarm-lambda-action-metrics-insights.json")
STACKS_QUERY = (
    'SELECT SUM(WriteKeyRangeThroughputThrottleEvents) FROM SCHEMA("AWS/DynamoDB", GlobalSecondaryIndexName, '
    "TableName) WHERE TableName = 'orders'"
)
ENABLE = (
    "aws dynamodb update-contributor-insights --table-name orders --index-name {index} "
    "--contributor-insights-action ENABLE --contributor-insights-mode THROTTLED_KEYS"
)


def query_event(expression: str | None = None) -> dict[str, Any]:
    event = copy.deepcopy(json.loads(QUERY_FIXTURE.read_text()))
    if expression is not None:
        event["alarmData"]["configuration"]["metrics"][0]["expression"] = expression
    return dict(event)


def orders_table(*indexes: str) -> list[str]:
    """An `orders` table with these GSIs in moto; their names as moto's DescribeTable lists them."""
    dynamodb = boto3.client("dynamodb")
    dynamodb.create_table(
        TableName="orders",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            *({"AttributeName": f"{index}_pk", "AttributeType": "S"} for index in indexes),
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": index,
                "KeySchema": [{"AttributeName": f"{index}_pk", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
            for index in indexes
        ],
    )
    return [gsi["IndexName"] for gsi in dynamodb.describe_table(TableName="orders")["Table"]["GlobalSecondaryIndexes"]]


def index_rule(index: str) -> str:
    # AWS's examples name an index's rule after the table and the index (docs/decisions.md §54)
    return f"DynamoDBContributorInsights-PKT-orders-{index}-1796000000000"


def every_index_insights(listed: list[str], rules: dict[str, list[tuple[str, list[tuple[int, float]]]] | None]) -> Any:
    """Contributor Insights of each GSI of moto's table, in DescribeTable's order: ``rules[index]`` its
    report's contributors, None where Contributor Insights is off. DescribeTable is moto's; Contributor
    Insights calls go through a Stubber (moto models neither DescribeContributorInsights nor the rules)."""
    session = boto3.session.Session(aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1")
    dynamodb, cloudwatch = session.client("dynamodb"), session.client("cloudwatch")
    ddb, cw = Stubber(dynamodb), Stubber(cloudwatch)
    for index in listed:
        contributors = rules[index]
        if contributors is None:
            answer: dict[str, Any] = {
                "TableName": "orders",
                "IndexName": index,
                "ContributorInsightsStatus": "DISABLED",
            }
        else:
            answer = {
                "TableName": "orders",
                "IndexName": index,
                "ContributorInsightsStatus": "ENABLED",
                "ContributorInsightsMode": "THROTTLED_KEYS",
                "ContributorInsightsRuleList": [index_rule(index)],
            }
        ddb.add_response("describe_contributor_insights", answer, {"TableName": "orders", "IndexName": index})
        if contributors is None:
            continue
        cw.add_response(
            "get_insight_rule_report",
            _rule_report(contributors),
            _report_request(index_rule(index)),
        )
    ddb.activate()
    cw.activate()
    return CloudWatchInsights(Routed(boto3.client("dynamodb"), dynamodb), cloudwatch)


def fire_on(store: DynamoIncidentStore, table: str, key: str, window_start: int, index: str | None) -> None:
    hot = HotKey(
        table,
        key,
        Reason.PARTITION_LIMIT,
        window_start,
        60,
        900,
        900,
        900.0,
        0.9,
        window_start + 30,
        900.0,
        index=index,
    )
    assert store.start(started(hot, "shard-1", window_start + 30), window_start + 30)[0]


def test_the_documented_metrics_insights_event_names_the_table_and_every_gsi() -> None:
    change = parse_alarm_event(query_event())
    assert (change.state, change.start - T0, change.end - T0, change.unread) == ("ALARM", 0, 130, [])
    (metric,) = change.metrics
    assert (metric.name, metric.table, metric.index, metric.every_index, metric.period) == (
        "WriteKeyRangeThroughputThrottleEvents",
        "orders",
        None,
        True,
        60,
    )
    assert (metric.limit, metric.operation) == (KEY_RANGE, "writes")


@pytest.mark.parametrize(
    ("expression", "scopes"),
    [
        # the namespace alone: the table's own metric and every GSI's
        (
            "SELECT SUM(WriteKeyRangeThroughputThrottleEvents) FROM \"AWS/DynamoDB\" WHERE TableName = 'orders'",
            [("orders", None, False), ("orders", None, True)],
        ),
        # a SCHEMA without the index dimension: the table's own metric
        (
            'SELECT SUM(WriteKeyRangeThroughputThrottleEvents) FROM SCHEMA("AWS/DynamoDB", TableName) '
            "WHERE TableName = 'orders'",
            [("orders", None, False)],
        ),
        # a query naming its GSI: that GSI
        (
            STACKS_QUERY + " AND GlobalSecondaryIndexName = 'by-status'",
            [("orders", "by-status", False)],
        ),
        # another namespace, and metric math over other entries: nothing of DynamoDB's, and nothing unread
        ("SELECT SUM(Errors) FROM SCHEMA(\"AWS/Lambda\", FunctionName) WHERE FunctionName = 'f'", []),
        ("m1/m2", []),
    ],
)
def test_each_query_shape_is_read_as_the_table_gsi_or_every_gsi_it_sums(
    expression: str, scopes: list[tuple[str, str | None, bool]]
) -> None:
    change = parse_alarm_event(query_event(expression))
    assert [metric.scope for metric in change.metrics] == scopes and change.unread == []


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        (
            STACKS_QUERY.replace("WHERE TableName = 'orders'", "WHERE TableName = 'orders' OR TableName = 'users'"),
            "its WHERE clause joins conditions with OR",
        ),
        (STACKS_QUERY.replace("WHERE TableName = 'orders'", ""), "its WHERE clause names no single TableName"),
        (STACKS_QUERY.replace("'orders'", "'orders and more'"), "'orders and more' is not a DynamoDB table name"),
        (STACKS_QUERY.replace("'orders'", "'orders"), "an unterminated quote"),
    ],
)
def test_a_query_whose_table_cannot_be_told_is_one_line_and_publishes_nothing(
    stats_table_name: str, topic: tuple[str, str], expression: str, why: str
) -> None:
    store = DynamoIncidentStore(boto3.resource("dynamodb").Table(stats_table_name))
    outcome = handle_alarm(
        query_event(expression), stubbed_insights([]), store, Publication(boto3.client("sns").publish, topic[0])
    )
    assert outcome["published"] == 0
    assert outcome["why"].startswith(f"cannot tell the table from the alarm's query: {why}")
    assert "\n" not in outcome["why"] and "(query: SELECT SUM(WriteKeyRangeThroughputThrottleEvents)" in outcome["why"]
    assert received(topic[1]) == []


def test_an_every_gsi_alarm_names_each_throttled_gsi_with_its_keys_and_says_where_insights_is_off(
    stats_table_name: str, topic: tuple[str, str]
) -> None:
    # Given orders with three GSIs: two throttled, one with Contributor Insights off, and the stream's
    # incident on PENDING of by-status (a table key of the same text confirms nothing on an index)
    listed = orders_table("by-status", "by-venue", "by-customer")
    store = DynamoIncidentStore(boto3.resource("dynamodb").Table(stats_table_name))
    fire_on(store, "orders", "PENDING", T0, index="by-status")
    fire_on(store, "orders", "venue#7", T0, index=None)
    insights = every_index_insights(
        listed,
        {
            "by-status": [("PENDING", [(T0, 4100.0), (T0 + 60, 1250.0)]), ("SHIPPED", [(T0, 300.0)])],
            "by-venue": [("venue#7", [(T0 + 60, 40.0)])],
            "by-customer": None,
        },
    )
    sent: list[dict[str, Any]] = []

    def publish(**arguments: Any) -> Any:
        sent.append(arguments)
        return boto3.client("sns").publish(**arguments)

    # When the alarm on every GSI of orders fires
    outcome = handle_alarm(query_event(), insights, store, Publication(publish, topic[0]))
    # Then one alert names the GSIs that throttled, each key with its GSI, and the GSI it could not read
    assert outcome == {"alarm": query_event()["alarmData"]["alarmName"], "state": "ALARM", "published": 1}
    ((subject, document),) = received(topic[1])
    assert subject == "[throttling, confirmed] orders indexes by-status, by-venue: key range limit, PENDING"
    assert (document["table"], document["index"], document["every_index"]) == ("orders", None, True)
    assert document["indexes"] == [
        {"index": "by-status", "throttled_requests": 5650},
        {"index": "by-venue", "throttled_requests": 40},
    ]
    assert [(k["key"], k["index"], k["throttled_requests"], k["confirmed"]) for k in document["keys"]] == [
        ("PENDING", "by-status", 5350, True),
        ("SHIPPED", "by-status", 300, False),
        ("venue#7", "by-venue", 40, False),
    ]
    assert document["notes"] == [
        "Contributor Insights is disabled on orders index by-customer; to name its throttled keys: "
        + ENABLE.format(index="by-customer")
    ]
    email = json.loads(sent[0]["Message"])["email"]
    assert "Throttled requests per GSI (Contributor Insights): by-status 5,650, by-venue 40." in email
    assert "  'PENDING' on index by-status: 5,350 throttled requests in 2 minute(s) — confirmed" in email


def test_an_every_gsi_alarm_with_one_throttled_gsi_is_that_gsis_alert(
    stats_table_name: str, topic: tuple[str, str]
) -> None:
    listed = orders_table("by-status", "by-venue")
    store = DynamoIncidentStore(boto3.resource("dynamodb").Table(stats_table_name))
    insights = every_index_insights(listed, {"by-status": [("PENDING", [(T0, 2310.0)])], "by-venue": []})
    sent: list[dict[str, Any]] = []

    def publish(**arguments: Any) -> Any:
        sent.append(arguments)
        return boto3.client("sns").publish(**arguments)

    handle_alarm(query_event(), insights, store, Publication(publish, topic[0]))
    ((subject, document),) = received(topic[1])
    assert subject == "[throttling] orders index by-status: key range limit, PENDING"
    assert document["index"] == "by-status" and document["notes"] == []
    assert sent[0]["MessageAttributes"]["index"] == {"DataType": "String", "StringValue": "by-status"}
    email = json.loads(sent[0]["Message"])["email"]
    assert "by-status 2,310, by-venue none." in email
    assert "hotkeys top --stats-table <StatsTableName> --table orders --index by-status" in email


def test_gsis_that_cannot_be_listed_are_one_line_and_the_limit_is_still_named(
    stats_table_name: str, topic: tuple[str, str]
) -> None:
    session = boto3.session.Session(aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1")
    dynamodb, cloudwatch = session.client("dynamodb"), session.client("cloudwatch")
    with Stubber(dynamodb) as ddb, Stubber(cloudwatch):
        ddb.add_client_error(
            "describe_table", service_error_code="AccessDeniedException", http_status_code=400, expected_params=None
        )
        store = DynamoIncidentStore(boto3.resource("dynamodb").Table(stats_table_name))
        outcome = handle_alarm(
            query_event(),
            CloudWatchInsights(dynamodb, cloudwatch),
            store,
            Publication(boto3.client("sns").publish, topic[0]),
        )
        ddb.assert_no_pending_responses()
    assert outcome["published"] == 1
    ((subject, document),) = received(topic[1])
    assert subject == "[throttling] a GSI of orders: key range limit"
    assert document["limits"] == [KEY_RANGE] and document["keys"] == [] and document["indexes"] == []
    assert document["notes"][0] == (
        "the GSIs of orders could not be listed: access denied (needs dynamodb:DescribeTable); "
        "no GSI's throttled keys are named"
    )


def test_the_handler_lists_the_gsis_of_an_every_gsi_alarm_from_dynamodb(
    topic: tuple[str, str], cold_container: tuple[Any, Any]
) -> None:
    # moto answers DescribeTable; it does not implement Contributor Insights, which each GSI's note says
    orders_table("by-status", "by-venue")
    throttle_app, context = cold_container
    assert throttle_app.handler(query_event(), context)["published"] == 1  # type: ignore[arg-type]
    ((subject, document),) = received(topic[1])
    assert subject == "[throttling] a GSI of orders: key range limit"
    assert document["notes"][:2] == [
        "orders index by-status: the endpoint does not implement Contributor Insights",
        "orders index by-venue: the endpoint does not implement Contributor Insights",
    ]
