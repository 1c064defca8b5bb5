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
from hotkeys.detector.config import ConfigError, Settings, load_settings
from hotkeys.detector.observability import logger
from hotkeys.detector.throttling.throttle_explainer import NotAnAlarmEvent, Publication, handle_alarm


@cache
def _aws() -> AwsClients:
    return AwsClients()


# Once per container, as the consumer's: the schema parses and checks them (KEY_DISPLAY=hash needs its salt).
@cache
def _settings() -> tuple[Settings, str]:
    """The function's settings and its alert topic (required here, optional to the schema)."""
    settings = load_settings(os.environ)
    if not settings.alert_topic_arn:
        raise ConfigError("ALERT_TOPIC_ARN", "is required: the alert topic (set by the stack)")
    return settings, settings.alert_topic_arn


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings, topic = _settings()
    aws = _aws()
    try:
        outcome = handle_alarm(
            event,
            CloudWatchInsights(aws.client("dynamodb"), aws.client("cloudwatch")),
            DynamoIncidentStore(aws.resource("dynamodb").Table(settings.stats_table_name)),
            Publication(aws.client("sns").publish, topic, settings.key_display, settings.key_hash_salt),
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
