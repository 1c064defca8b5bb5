"""Lambda entry point of the judge: one look per invocation (``alerts.look_chain``).

Two things wake it: a message on its queue, which the previous look sent for the next look due
(``{"due": <epoch seconds>, "sent_at": <when the look before ended>}``, delivered by an SQS event source
mapping), and the minute rule, its
watchdog, whose event (``{"source": "aws.events", ...}``) carries nothing the judge needs. Either claims
its look, makes it (``alerts.judge``) and sends the next message; a wake-up whose look another has
claimed, a stale message, or a watchdog run while the chain is alive returns at once, and a queue
message the judge did not write does nothing.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from hotkeys.deployment import JUDGE_TIMEOUT_SECONDS
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.adapters.look_chain_store import DynamoLookClaims, SqsNextLook, look_message
from hotkeys.detector.alerts import look_chain
from hotkeys.detector.alerts.judge import Judge
from hotkeys.detector.alerts.look_chain import Wake
from hotkeys.detector.alerts.ports import LookClaims, NextLook
from hotkeys.detector.config import ConfigError, Settings, load_settings
from hotkeys.detector.handlers.wiring import build_judge
from hotkeys.detector.observability import logger, metrics


@dataclass(frozen=True)
class Container:
    """What a judge container builds once: its settings, its judge (with its memory of the tables) and
    the chain's claims and queue."""

    settings: Settings
    judge: Judge
    claims: LookClaims
    send: NextLook


class NoLookMessage(ValueError):
    """A queue event that carries no look message of the judge's (nothing to do)."""


def woken_for(event: dict[str, Any]) -> tuple[int, float] | None:
    """The look a chain message was sent for and when, or None for the watchdog's rule (an event without
    SQS records). NoLookMessage for queue records of which none is a look message (never a watchdog run)."""
    records = [r for r in event.get("Records") or [] if isinstance(r, dict) and r.get("eventSource") == "aws:sqs"]
    if not records:
        return None
    found = []
    for record in records:
        try:
            found.append(look_message(str(record.get("body", ""))))
        except ValueError as error:
            logger.warning("judge queue message ignored", extra={"error": str(error)})
    if not found:
        raise NoLookMessage("no look message in the queue's records")
    return max(found)


def wake(container: Container, message: tuple[int, float] | None) -> Wake:
    """One wake-up with the deployed clock."""
    chain = look_chain.LookChain(
        container.claims, container.send, time.time, time.sleep, container.settings.flush_seconds, JUDGE_TIMEOUT_SECONDS
    )
    return chain.wake(container.judge.look, message)


def publish_metrics(woke: Wake) -> None:
    """Every look writes its count and lateness (the dashboard's and the not-looking alarm's figures);
    the rest only when something happened (a custom metric is billed per hour in which it is written)."""
    outcome = woke.outcome
    if outcome is None:
        return
    metrics.add_metric(name="JudgeLooks", unit=MetricUnit.Count, value=outcome.tables)
    metrics.add_metric(name="JudgeLookSeconds", unit=MetricUnit.Seconds, value=round(woke.late, 3))
    rare = {
        "JudgeAlertsPublished": outcome.published,
        "JudgeLooksFailed": outcome.failed,
        "JudgeWhatIfNotices": outcome.what_ifs,
        "JudgeChainRestarts": int(woke.restarted),
    }
    for name, value in rare.items():
        if value:
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


@cache
def _container() -> Container:
    settings = load_settings(os.environ)
    if not settings.judge_queue_url:
        raise ConfigError(
            "JUDGE_QUEUE_URL", "is required: each look sends the next look its message (set by the stack)"
        )
    aws = AwsClients()
    judge = build_judge(settings, aws)
    claims = DynamoLookClaims(aws.resource("dynamodb").Table(settings.stats_table_name))
    return Container(settings, judge, claims, SqsNextLook(aws.client("sqs"), settings.judge_queue_url))


@logger.inject_lambda_context(log_event=False, clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        message = woken_for(event)
    except NoLookMessage:
        return {"looked": False}
    woke = wake(_container(), message)
    publish_metrics(woke)
    outcome = vars(woke.outcome) if woke.outcome is not None else {}
    logger.info(
        "judge look" if woke.looked else "judge look made by another wake-up",
        extra={"due": woke.due, "late": round(woke.late, 3), "restarted": woke.restarted, **outcome},
    )
    return {"due": woke.due, "looked": woke.looked, **outcome}
