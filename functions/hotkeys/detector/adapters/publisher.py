"""Publishes alerts to the SNS topic (one publish, one form per subscriber kind)."""

from __future__ import annotations

from typing import Any

from hotkeys.detector.alerts.messages import Alert, sns_publish_arguments


class SnsPublisher:
    def __init__(self, client: Any, topic_arn: str) -> None:
        self._client = client
        self._topic_arn = topic_arn

    def publish(self, alert: Alert) -> str:
        response = self._client.publish(**sns_publish_arguments(self._topic_arn, alert))
        return str(response.get("MessageId", ""))
