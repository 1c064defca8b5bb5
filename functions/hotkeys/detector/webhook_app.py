"""Optional Slack-compatible webhook subscriber of the alert topic (for teams without AWS Chatbot).

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

from hotkeys.detector.alerts.messages import RESOLVED, short_fix
from hotkeys.detector.config import ConfigError
from hotkeys.detector.diagnosis import SHARD_FAMILY
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


def slack_payload(subject: str, document: dict[str, Any]) -> dict[str, Any]:
    """Slack incoming-webhook JSON: a text fallback and one markdown section."""
    if document.get("status") == RESOLVED:
        detail = f"Back under the threshold for the whole window starting {document.get('window_start')}."
    else:
        index = document.get("index")
        fix = (
            str(document.get("remedy"))
            if document.get("pattern") == SHARD_FAMILY
            else short_fix(
                str(document.get("key")),
                int(document.get("suggested_shards") or 1),
                float(document.get("share") or 0),
                str(index) if index else None,
            )
        )
        detail = (
            f"*{document.get('wcu_per_second')} WCU/s* ({document.get('percent_of_limit')}% of the "
            f"{document.get('partition_limit_wcu')} WCU/s partition limit), "
            f"{100 * float(document.get('share', 0)):.1f}% of the table's writes in the window starting "
            f"{document.get('window_start')}.\nSuggested fix: {fix}."
        )
        if document.get("pattern"):
            detail += f"\nPattern: {document.get('pattern')}."
    return {
        "text": subject,
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": f"*{subject}*\n{detail}"}}],
    }


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
    secret_id = os.environ.get("WEBHOOK_SECRET_ARN", "").strip()
    if not secret_id:
        raise ConfigError("WEBHOOK_SECRET_ARN", "is required: the secret holding the webhook URL")
    url = webhook_url(secret_id)
    delivered = 0
    for record in event.get("Records", []):
        sns = record.get("Sns", {})
        document = json.loads(sns.get("Message", "{}"))
        post(url, slack_payload(str(sns.get("Subject") or "[hot key]"), document))
        delivered += 1
        logger.info("alert delivered to webhook", extra={"key": document.get("key"), "status": document.get("status")})
    return {"delivered": delivered}
