"""Telling the alert topic's messages apart: the parts the webhook tests do not reach.

Messages follow the documented CloudWatch alarm payload (alerts/inbound.py cites it); the
metric-math form is its ``Trigger.Metrics`` variant.
"""

from __future__ import annotations

import json

from hotkeys.detector.alerts.inbound import AlarmNotification, Unrecognised, classify, slack_payload

METRIC_MATH = {
    "AlarmName": "writes-per-item",
    "AlarmDescription": "Writes per item above 3",
    "AWSAccountId": "111122223333",
    "NewStateValue": "INSUFFICIENT_DATA",
    "NewStateReason": "Insufficient Data: 1 datapoint was unknown.",
    "StateChangeTime": "2026-11-30T10:05:43.123+0000",
    "Region": "US East (N. Virginia)",
    "AlarmArn": "arn:aws:cloudwatch:us-east-1:111122223333:alarm:writes-per-item",
    "OldStateValue": "OK",
    "Trigger": {
        "Period": 60,
        "EvaluationPeriods": 1,
        "ComparisonOperator": "GreaterThanThreshold",
        "Threshold": 3.0,
        "Metrics": [
            {"Expression": "m1/m2", "Id": "e1", "Label": "per item", "ReturnData": True},
            {
                "Id": "m1",
                "MetricStat": {
                    "Metric": {
                        "Dimensions": [{"value": "orders", "name": "TableName"}],
                        "MetricName": "ConsumedWriteCapacityUnits",
                        "Namespace": "AWS/DynamoDB",
                    },
                    "Period": 60,
                    "Stat": "Sum",
                },
                "ReturnData": False,
            },
        ],
    },
}


def test_a_metric_math_alarm_names_its_expression_and_metrics() -> None:
    alarm = classify('INSUFFICIENT_DATA: "writes-per-item" in US East (N. Virginia)', json.dumps(METRIC_MATH))
    assert isinstance(alarm, AlarmNotification)
    assert alarm.metric == "per item = m1/m2; AWS/DynamoDB ConsumedWriteCapacityUnits (TableName=orders)"
    text = slack_payload(alarm)["blocks"][0]["text"]["text"]
    assert text.splitlines()[0] == ":grey_question: *CloudWatch alarm writes-per-item: INSUFFICIENT_DATA* (was OK)"
    link = "<https://us-east-1.console.aws.amazon.com/cloudwatch/home?region=us-east-1#alarmsV2:alarm/writes-per-item|"
    assert link in text


def test_a_console_link_only_for_an_arn_of_a_commercial_region() -> None:
    for arn in (
        "arn:aws:cloudwatch:REGION:ACCOUNT_NUMBER:alarm:EXAMPLE",  # the documented sample's placeholders
        "arn:aws-cn:cloudwatch:cn-north-1:111122223333:alarm:x",
        "not an arn",
    ):
        alarm = classify(None, json.dumps({**METRIC_MATH, "AlarmArn": arn}))
        assert isinstance(alarm, AlarmNotification) and alarm.console_url is None
        assert "console" not in slack_payload(alarm)["blocks"][0]["text"]["text"]


def test_names_and_links_cannot_break_out_of_slack_markup() -> None:
    name = "lag > 15 min <!channel> & more"
    alarm = classify(None, json.dumps({**METRIC_MATH, "AlarmName": name, "AlarmArn": METRIC_MATH["AlarmArn"] + "|x>"}))
    assert isinstance(alarm, AlarmNotification)
    payload = slack_payload(alarm)
    assert "lag &gt; 15 min &lt;!channel&gt; &amp; more" in payload["text"]
    assert "<!channel>" not in json.dumps(payload)
    assert "alarm/writes-per-item%7Cx%3E|Open" in payload["blocks"][0]["text"]["text"]


def test_a_message_without_text_is_unrecognised_not_dropped() -> None:
    for message in (None, {"AlarmName": "x"}, "", "[" * 100_000):
        assert isinstance(classify("s", message), Unrecognised)
    # An alarm needs its name and its new state
    assert isinstance(classify(None, json.dumps({"AlarmName": "x"})), Unrecognised)
    assert isinstance(classify(None, json.dumps({"NewStateValue": "OK"})), Unrecognised)
