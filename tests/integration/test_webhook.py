"""The optional webhook subscriber: secret → URL → Slack-compatible POST, failures raised for retry."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import boto3
import pytest

from hotkeys.cli.replay import FakeLambdaContext
from hotkeys.detector.alerts.messages import Alert, sns_publish_arguments
from hotkeys.detector.config import ConfigError
from tests.support import ORDERS_ALERT


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


def sns_event(alert: Alert) -> dict[str, Any]:
    arguments = sns_publish_arguments("arn:aws:sns:us-east-1:123456789012:alerts", alert)
    message = json.loads(arguments["Message"])["lambda"]
    return {"Records": [{"EventSource": "aws:sns", "Sns": {"Subject": arguments["Subject"], "Message": message}}]}


ALERT = ORDERS_ALERT


def test_alert_is_posted_to_the_webhook_from_the_secret(
    aws: None, webhook: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    arn = boto3.client("secretsmanager").create_secret(
        Name="hotkeys/webhook", SecretString=json.dumps({"url": webhook})
    )["ARN"]
    monkeypatch.setenv("WEBHOOK_SECRET_ARN", arn)
    from hotkeys.detector.webhook_app import handler

    assert handler(sns_event(ALERT), FakeLambdaContext()) == {"delivered": 1}
    (payload,) = Receiver.received
    assert payload["text"] == "[hot key] orders: event#123 at 930 WCU/s (93% of partition limit)"
    assert "930.0 WCU/s" in payload["blocks"][0]["text"]["text"]
    assert "2 suffix" in payload["blocks"][0]["text"]["text"]


def test_a_refused_post_raises_so_lambda_retries(aws: None, webhook: str, monkeypatch: pytest.MonkeyPatch) -> None:
    arn = boto3.client("secretsmanager").create_secret(Name="hotkeys/webhook2", SecretString=webhook)["ARN"]
    monkeypatch.setenv("WEBHOOK_SECRET_ARN", arn)
    Receiver.status = 500
    from hotkeys.detector.webhook_app import WebhookError, handler

    with pytest.raises(WebhookError, match="500"):
        handler(sns_event(ALERT), FakeLambdaContext())


def test_plain_http_to_a_remote_host_is_refused(aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    arn = boto3.client("secretsmanager").create_secret(
        Name="hotkeys/webhook3", SecretString="http://hooks.example.com/x"
    )["ARN"]
    monkeypatch.setenv("WEBHOOK_SECRET_ARN", arn)
    from hotkeys.detector.webhook_app import handler

    with pytest.raises(ConfigError, match="https"):
        handler(sns_event(ALERT), FakeLambdaContext())
