"""Publishes alerts to the SNS topic (one publish, one form per subscriber kind)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from hotkeys.detector.alerts.messages import Alert, PublishOutcomeUnknown, PublishRefused, sns_publish_arguments

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient


class SnsPublisher:
    def __init__(self, client: SNSClient, topic_arn: str) -> None:
        self._client = client
        self._topic_arn = topic_arn

    def publish(self, alert: Alert) -> str:
        """The message id; PublishRefused if SNS answered with an error, PublishOutcomeUnknown if it did not answer."""
        try:
            response = self._client.publish(**sns_publish_arguments(self._topic_arn, alert))
        except ClientError as error:
            raise PublishRefused(str(error)) from error
        except BotoCoreError as error:
            raise PublishOutcomeUnknown(str(error)) from error
        return str(response.get("MessageId", ""))
