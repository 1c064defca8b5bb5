"""The optional webhook subscriber: secret → URL → Slack-compatible POST, failures raised for retry.

The alert topic carries the detector's alerts and CloudWatch's notifications of the stack's alarms
(docs/decisions.md §42). Each event here is what SNS delivers: the message is published to a moto
topic, whose SQS subscriber receives SNS's envelope; Lambda's SNS event carries the same envelope
(``SigningCertUrl``/``UnsubscribeUrl`` spelled so, inside a record with ``EventSubscriptionArn``),
checked against Powertools' model of that event. CloudWatch's messages come from
``tests/fixtures/cloudwatch-alarm-*.json`` (built from AWS's documented sample of that payload).
"""

from __future__ import annotations

import io
import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.parser.models import SnsModel

from hotkeys.cli.replay import FakeLambdaContext
from hotkeys.detector.alerts.incidents import Message
from hotkeys.detector.alerts.messages import ALERT_FIELDS, Alert, sns_publish_arguments
from hotkeys.detector.config import ConfigError
from hotkeys.detector.observability import logger
from tests.support import ORDERS_ALERT

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


class Receiver(BaseHTTPRequestHandler):
    received: list[dict[str, Any]] = []
    status = 200

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        Receiver.received.append(json.loads(self.rfile.read(length)))
        self.send_response(Receiver.status)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[str]:
    Receiver.received, Receiver.status = [], 200
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/services/T000/B000/XXX"
    server.shutdown()


@pytest.fixture
def configured(aws: None, webhook: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The function's environment: a secret holding the receiver's URL."""
    arn = boto3.client("secretsmanager").create_secret(
        Name=f"hotkeys/webhook-{uuid.uuid4().hex[:8]}", SecretString=json.dumps({"url": webhook})
    )["ARN"]
    monkeypatch.setenv("WEBHOOK_SECRET_ARN", arn)


def lambda_sns_event(**publish: Any) -> dict[str, Any]:
    """The Lambda event of one message published to an SNS topic (``publish``: Publish's arguments)."""
    sns, sqs = boto3.client("sns"), boto3.client("sqs")
    name = f"alerts-{uuid.uuid4().hex[:8]}"
    topic = sns.create_topic(Name=name)["TopicArn"]
    queue = sqs.create_queue(QueueName=name)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    subscription = sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)["SubscriptionArn"]
    sns.publish(TopicArn=topic, **publish)
    (delivered,) = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
    envelope = json.loads(delivered["Body"])
    envelope["SigningCertUrl"] = envelope.pop("SigningCertURL")
    envelope["UnsubscribeUrl"] = envelope.pop("UnsubscribeURL")
    envelope.setdefault("Subject", None)
    envelope.setdefault("MessageAttributes", {})
    event = {
        "Records": [
            {"EventSource": "aws:sns", "EventVersion": "1.0", "EventSubscriptionArn": subscription, "Sns": envelope}
        ]
    }
    SnsModel.model_validate(event)
    return event


def alert_event(alert: Alert) -> dict[str, Any]:
    arguments = sns_publish_arguments("unused", alert)
    structure = json.loads(arguments["Message"])
    # The moto subscriber is a queue: it gets the "sqs" form, which is the form a Lambda subscriber gets
    assert structure["sqs"] == structure["lambda"]
    return lambda_sns_event(**{name: value for name, value in arguments.items() if name != "TopicArn"})


def alarm_fixture(state: str) -> dict[str, Any]:
    return dict(json.loads((FIXTURES / f"cloudwatch-alarm-{state}.json").read_text()))


def alarm_event(state: str) -> dict[str, Any]:
    """A CloudWatch alarm notification as CloudWatch publishes it: a subject, the JSON message, no
    message structure and no message attributes."""
    fixture = alarm_fixture(state)
    return lambda_sns_event(Subject=fixture["Subject"], Message=json.dumps(fixture["Message"]))


def posted_text(payload: dict[str, Any]) -> str:
    (block,) = payload["blocks"]
    return str(block["text"]["text"])


def log_lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.startswith("{")]


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    stream = io.StringIO()
    monkeypatch.setattr(logger.registered_handler, "stream", stream)
    return stream


ALERT = ORDERS_ALERT
ALARM_NAME = "HotKeyDetector-DetectorMonitoringIteratorAgeAlarm4C1E2B11-Q9ZK3W5YV6XA"


def test_alert_is_posted_to_the_webhook_from_the_secret(configured: None) -> None:
    from hotkeys.detector.handlers.webhook_app import handler

    assert handler(alert_event(ALERT), FakeLambdaContext()) == {"delivered": 1}
    (payload,) = Receiver.received
    assert payload["text"] == "[hot key] orders: event#123 at 930 WCU/s (93% of partition limit)"
    assert "*930.0 WCU/s* (93.0% of the 1000 WCU/s partition limit)" in posted_text(payload)
    assert "2 suffix" in posted_text(payload)


def test_a_resolved_alert_is_posted_as_resolved(configured: None) -> None:
    from dataclasses import replace

    from hotkeys.detector.handlers.webhook_app import handler

    handler(alert_event(replace(ALERT, status=Message.RESOLVED)), FakeLambdaContext())
    (payload,) = Receiver.received
    assert payload["text"].startswith("[resolved] orders: event#123")
    assert "Back under the threshold for the whole window starting 2026-12-01T00:00:00Z." in posted_text(payload)


def test_a_cloudwatch_alarm_is_posted_as_an_alarm_with_its_state_reason_and_console_link(
    configured: None, log: io.StringIO
) -> None:
    # Given the notification CloudWatch publishes when the stack's lag alarm goes from OK to ALARM
    from hotkeys.detector.handlers.webhook_app import handler

    message = alarm_fixture("alarm")["Message"]
    # When the webhook function receives it from the topic
    assert handler(alarm_event("alarm"), FakeLambdaContext()) == {"delivered": 1}
    # Then it is posted as an alarm: its name, new and old state, reason, metric, time, account and
    # region, and a link to it in the console of the region its ARN names
    (payload,) = Receiver.received
    assert payload["text"] == f"[CloudWatch alarm] {ALARM_NAME}: ALARM (was OK)"
    text = posted_text(payload)
    assert text.splitlines()[0] == f":rotating_light: *CloudWatch alarm {ALARM_NAME}: ALARM* (was OK)"
    assert "The detector lags its stream by more than 15 minutes" in text
    assert f"Reason: {message['NewStateReason'].replace('>', '&gt;')}" in text
    assert "Metric: AWS/Lambda IteratorAge (FunctionName=HotKeyDetector-DetectorConsumerFunction8E1B2C3D-" in text
    assert "When: 2026-11-30T10:05:43.123+0000 · Account: 111122223333 · Region: EU (Ireland)" in text
    assert (
        "<https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1"
        f"#alarmsV2:alarm/{ALARM_NAME}|Open the alarm in the CloudWatch console>"
    ) in text
    assert "not a hot-key alert" in text
    # and nothing of a hot-key alert's form
    assert "WCU/s" not in text and "None" not in text and "hot key]" not in payload["text"]
    assert [line["message"] for line in log_lines(log) if line["level"] == "INFO"][-1] == (
        "alarm notification delivered to webhook"
    )


def test_an_alarm_back_to_ok_is_posted_as_ok_without_a_description_it_does_not_have(configured: None) -> None:
    from hotkeys.detector.handlers.webhook_app import handler

    handler(alarm_event("ok"), FakeLambdaContext())
    (payload,) = Receiver.received
    assert payload["text"] == f"[CloudWatch alarm] {ALARM_NAME}: OK (was ALARM)"
    lines = posted_text(payload).splitlines()
    assert lines[0] == f":white_check_mark: *CloudWatch alarm {ALARM_NAME}: OK* (was ALARM)"
    # The null AlarmDescription leaves no line: the reason follows the title
    assert lines[1].startswith("Reason: Threshold Crossed: 5 out of the last 5 datapoints")
    assert "None" not in posted_text(payload) and "WCU/s" not in posted_text(payload)


@pytest.mark.parametrize(
    ("publish", "why"),
    [
        ({"Message": "disk <almost> full & " + "x" * 2000}, "not JSON"),
        ({"Subject": "hello", "Message": json.dumps({"hello": "world"})}, "neither"),
        ({"Subject": "a list", "Message": json.dumps([1, 2, 3])}, "neither"),
        # An alert document missing a field (another version's, or hand-made) is not taken for one
        ({"Subject": "[hot key] x", "Message": json.dumps({"table": "t", "key": "k", "status": "firing"})}, "neither"),
    ],
)
def test_anything_else_is_posted_as_an_unrecognised_message_and_logged(
    configured: None, log: io.StringIO, publish: dict[str, Any], why: str
) -> None:
    from hotkeys.detector.handlers.webhook_app import handler

    event = lambda_sns_event(**publish)
    assert handler(event, FakeLambdaContext()) == {"delivered": 1}
    # Then it is posted as unrecognised, with its subject and the start of its body, never as a hot key
    (payload,) = Receiver.received
    subject = publish.get("Subject") or "(no subject)"
    assert payload["text"] == f"[unrecognised message] {subject}".replace("<", "&lt;")
    text = posted_text(payload)
    assert text.startswith("*Unrecognised message on the hot-key alert topic* (")
    assert f"Subject: {subject}" in text
    body = publish["Message"]
    preview = body[:499] + "…" if len(body) > 500 else body
    assert f"```{preview.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')}```" in text
    assert f"({len(body):,} characters)" in text
    assert "WCU/s" not in text and "None" not in text
    # and a warning names its message id, subject, reason and length
    (warning,) = [line for line in log_lines(log) if line["level"] == "WARNING"]
    assert warning["message_id"] == event["Records"][0]["Sns"]["MessageId"]
    assert warning.get("subject") == publish.get("Subject")  # (the logger leaves out None)
    assert why in warning["reason"] and warning["characters"] == len(body)


def test_an_alert_document_has_exactly_the_fields_the_webhook_recognises() -> None:
    assert tuple(ALERT.document()) == ALERT_FIELDS


def test_a_refused_post_raises_so_lambda_retries(aws: None, webhook: str, monkeypatch: pytest.MonkeyPatch) -> None:
    arn = boto3.client("secretsmanager").create_secret(Name="hotkeys/webhook2", SecretString=webhook)["ARN"]
    monkeypatch.setenv("WEBHOOK_SECRET_ARN", arn)
    Receiver.status = 500
    from hotkeys.detector.handlers.webhook_app import WebhookError, handler

    with pytest.raises(WebhookError, match="500"):
        handler(alert_event(ALERT), FakeLambdaContext())


def test_plain_http_to_a_remote_host_is_refused(aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    arn = boto3.client("secretsmanager").create_secret(
        Name="hotkeys/webhook3", SecretString="http://hooks.example.com/x"
    )["ARN"]
    monkeypatch.setenv("WEBHOOK_SECRET_ARN", arn)
    from hotkeys.detector.handlers.webhook_app import handler

    with pytest.raises(ConfigError, match="https"):
        handler(alert_event(ALERT), FakeLambdaContext())
