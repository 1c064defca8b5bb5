"""Lambda entry point of the throttle explainer: a CloudWatch alarm action (``throttle_explainer``).

Environment: ``ALERT_TOPIC_ARN`` (where the alert goes), ``STATS_TABLE_NAME`` (the stream's open
incidents), ``KEY_DISPLAY``/``KEY_HASH_SALT`` (keys as the detector's alerts show them).
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.adapters.incident_store import DynamoIncidentStore
from hotkeys.detector.adapters.insights import CloudWatchInsights
from hotkeys.detector.config import ConfigError
from hotkeys.detector.observability import logger
from hotkeys.detector.throttle_explainer import NotAnAlarmEvent, handle_alarm


@cache
def _aws() -> AwsClients:
    return AwsClients()


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    topic = os.environ.get("ALERT_TOPIC_ARN", "").strip()
    stats = os.environ.get("STATS_TABLE_NAME", "").strip()
    if not topic or not stats:
        raise ConfigError("ALERT_TOPIC_ARN" if not topic else "STATS_TABLE_NAME", "is required (set by the stack)")
    aws = _aws()
    try:
        outcome = handle_alarm(
            event,
            CloudWatchInsights(aws.client("dynamodb"), aws.client("cloudwatch")),
            DynamoIncidentStore(aws.resource("dynamodb").Table(stats)),
            aws.client("sns").publish,
            topic,
            os.environ.get("KEY_DISPLAY", "raw"),
            os.environ.get("KEY_HASH_SALT", ""),
        )
    except NotAnAlarmEvent as error:
        logger.warning("not a CloudWatch alarm action's event", extra={"reason": str(error)})
        return {"published": 0, "why": str(error)}
    if outcome.get("why") or outcome.get("unread"):
        # An alarm whose table cannot be told (an unreadable query) is explained by nobody: say so loudly.
        logger.warning("throttle alarm not explained in full", extra=outcome)
    else:
        logger.info("throttle alarm explained", extra=outcome)
    return outcome
