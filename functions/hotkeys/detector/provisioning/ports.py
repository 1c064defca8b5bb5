"""The deploy-time custom resources' ports: what ``insights_owners`` calls on a table the stack does not own
(see ``consumer.ports``: each layer keeps its own). The stream mapping and the stream enabler take boto3's
clients themselves: their logic is what those APIs answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from hotkeys.detector.throttling.throttle_sources import RuleStatus, Source

__all__ = ["InsightsSwitch"]


class InsightsSwitch(Protocol):
    """Contributor Insights turned on and off on a table the stack does not own, and the table's tags that
    record who wants it on (``insights_owners``; ``adapters.insights_switch.DynamoInsightsSwitch``). Every
    method raises ``insights_owners.SwitchFailed`` when its call fails."""

    def sources(self, table: str) -> tuple[str, list[Source]]:
        """The table's ARN, and the table and each of its GSIs (``TableGone`` if it does not exist)."""
        ...

    def status(self, source: Source) -> RuleStatus: ...

    def enable(self, source: Source, mode: str) -> None: ...

    def disable(self, source: Source) -> None: ...

    def tags(self, table_arn: str) -> dict[str, str]: ...

    def tag(self, table_arn: str, tags: Mapping[str, str]) -> None: ...

    def untag(self, table_arn: str, keys: list[str]) -> None: ...
