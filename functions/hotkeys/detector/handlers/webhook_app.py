"""Optional Slack-compatible webhook subscriber of the alert topic (for teams without AWS Chatbot).

The topic carries the detector's alerts and CloudWatch's notifications of the stack's alarms: each
message is told apart and posted in its own form (``alerts/inbound.py``); one that is neither is
posted as an unrecognised message, with its subject and the start of its body, and logged.

The incoming-webhook URL lives in Secrets Manager (the secret's string is the URL, or JSON with a
``url`` field), read through Powertools parameters and cached for five minutes. A delivery that
fails raises, so Lambda's asynchronous retries and then the function's DLQ keep the alert.
"""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any
from urllib.parse import urlparse

from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.typing import LambdaContext

from hotkeys.detector.alerts.inbound import (
    AlarmNotification,
    HotKeyAlert,
    Notification,
    ThrottleExplanation,
    classify,
    slack_payload,
)
from hotkeys.detector.config import ConfigError, required_setting
from hotkeys.detector.observability import logger

SECRET_CACHE_SECONDS = 300
TIMEOUT_SECONDS = 5
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class WebhookError(RuntimeError):
    """The webhook refused the message (it will be retried, then kept in the DLQ)."""


def webhook_url(secret_id: str) -> str:
    raw = str(parameters.get_secret(secret_id, max_age=SECRET_CACHE_SECONDS))
    url = raw.strip()
    if url.startswith("{"):
        url = str(json.loads(url).get("url", ""))
    parsed = urlparse(url)
    if parsed.scheme != "https" and not (parsed.scheme == "http" and parsed.hostname in _LOOPBACK):
        raise ConfigError(
            "WEBHOOK_SECRET_ARN", f"must name a secret holding an https:// webhook URL ({secret_id} does not)"
        )
    return url


def post(url: str, payload: dict[str, Any]) -> int:
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        raise WebhookError(f"webhook answered {error.code}") from None
    except OSError as error:
        raise WebhookError(f"webhook unreachable: {error}") from None


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    url = webhook_url(required_setting(os.environ, "webhook_secret_arn"))
    delivered = 0
    for record in event.get("Records", []):
        sns = record.get("Sns") if isinstance(record, dict) else None
        sns = sns if isinstance(sns, dict) else {}
        notification = classify(sns.get("Subject"), sns.get("Message"))
        post(url, slack_payload(notification))
        delivered += 1
        _log_delivery(notification, sns.get("MessageId"))
    return {"delivered": delivered}


def _log_delivery(notification: Notification, message_id: Any) -> None:
    if isinstance(notification, HotKeyAlert):
        fields = {"key": notification.document["key"], "status": notification.document["status"]}
        logger.info("alert delivered to webhook", extra=fields)
    elif isinstance(notification, AlarmNotification):
        fields = {"alarm": notification.name, "state": notification.new_state}
        logger.info("alarm notification delivered to webhook", extra=fields)
    elif isinstance(notification, ThrottleExplanation):
        fields = {"table": notification.document["table"], "alarm": notification.document.get("alarm")}
        logger.info("throttle explanation delivered to webhook", extra=fields)
    else:
        logger.warning(
            "unrecognised message on the alert topic, delivered to webhook as such",
            extra={
                "message_id": message_id,
                "subject": notification.subject,
                "reason": notification.why,
                "characters": len(notification.body),
                "body": notification.body[:2000],
            },
        )
