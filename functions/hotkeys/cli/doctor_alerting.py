"""``hotkeys doctor``'s checks of where failures and alerts go: the dead-letter and undelivered-alert
queues, and the alert topic (CloudWatch may publish to it, someone is subscribed)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from hotkeys.cli.doctor_model import FAIL, OK, WARN, Check, Clients, StackView, as_list

if TYPE_CHECKING:
    from mypy_boto3_sns.type_defs import SubscriptionTypeDef


def _queue_depth(clients: Clients, url: str) -> int:
    attributes = clients.sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes.get("ApproximateNumberOfMessages", 0)) + int(
        attributes.get("ApproximateNumberOfMessagesNotVisible", 0)
    )


def check_queues(clients: Clients, stack: StackView) -> list[Check]:
    dlq = stack.outputs.get("DeadLetterQueueUrl")
    checks = []
    for logical, url in stack.of_type("AWS::SQS::Queue"):
        depth = _queue_depth(clients, url)
        stream_dlq = url == dlq
        name = "stream DLQ" if stream_dlq else f"undelivered alerts ({logical})"
        if not depth:
            checks.append(Check(name, OK, "empty"))
        elif stream_dlq:
            checks.append(
                Check(
                    name,
                    FAIL,
                    f"{depth} batches given up on (their records are not counted)",
                    f"hotkeys redrive --stack {stack.name} (within the stream's 24 h)",
                )
            )
        else:
            checks.append(
                Check(
                    name,
                    FAIL,
                    f"{depth} alert messages could not be delivered",
                    "check the subscriber; the messages keep the alerts",
                )
            )
    return checks


def _allows_cloudwatch(policy: dict[str, Any]) -> bool:
    for statement in as_list(policy.get("Statement")):
        principal = statement.get("Principal", {})
        services = as_list(principal.get("Service")) if isinstance(principal, dict) else []
        if (
            statement.get("Effect") == "Allow"
            and "cloudwatch.amazonaws.com" in services
            and {"sns:Publish", "SNS:Publish", "sns:*"} & set(as_list(statement.get("Action")))
        ):
            return True
    return False


def check_topic(clients: Clients, stack: StackView) -> list[Check]:
    topic = stack.outputs.get("AlertTopicArn")
    if not topic:
        return [Check("alert topic", FAIL, "the stack has no AlertTopicArn output", "redeploy")]
    attributes = clients.sns.get_topic_attributes(TopicArn=topic)["Attributes"]
    policy = json.loads(attributes.get("Policy") or "{}")
    checks = []
    if _allows_cloudwatch(policy):
        checks.append(Check("alarms → topic", OK, "CloudWatch may publish to the alert topic"))
    else:
        checks.append(
            Check(
                "alarms → topic",
                FAIL,
                "the topic policy does not allow cloudwatch.amazonaws.com to publish: alarm actions fail",
                "redeploy this version of the stack (it adds the Allow statement)",
            )
        )
    subscriptions = _subscriptions(clients, topic)
    confirmed = [s for s in subscriptions if s.get("SubscriptionArn", "").startswith("arn:")]
    pending = len(subscriptions) - len(confirmed)
    if confirmed:
        protocols = sorted({str(s.get("Protocol")) for s in confirmed})
        detail = f"{len(confirmed)} confirmed ({', '.join(protocols)})" + (f", {pending} pending" if pending else "")
        checks.append(Check("alert subscribers", OK, detail))
    else:
        checks.append(
            Check(
                "alert subscribers",
                WARN if pending else FAIL,
                f"no confirmed subscription ({pending} pending confirmation)" if pending else "nobody is subscribed",
                "confirm the e-mail AWS sent, or deploy with -c alertEmails=... / -c slackWorkspaceId=...",
            )
        )
    return checks


def _subscriptions(clients: Clients, topic: str) -> list[SubscriptionTypeDef]:
    pages = clients.sns.get_paginator("list_subscriptions_by_topic").paginate(TopicArn=topic)
    return [subscription for page in pages for subscription in page.get("Subscriptions", [])]
