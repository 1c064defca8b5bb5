"""The throttle picture's ports: every Protocol ``throttles`` and ``throttle_explainer`` call for I/O (see
``consumer.ports``: each layer keeps its own)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from hotkeys.detector.alerts.incidents import Incident
from hotkeys.detector.throttling.throttle_sources import RuleStatus, Source

__all__ = ["IncidentReader", "InsightsPort", "Publish", "TableInsightsPort"]


# -- the throttle picture's and the throttle explainer's (throttles, throttle_explainer) ------------
class InsightsPort(Protocol):
    """Contributor Insights as the throttle picture reads it (``adapters.insights.CloudWatchInsights``)."""

    def rule_status(self, source: Source) -> RuleStatus: ...

    def report(self, rule: str, start: int, end: int) -> Mapping[str, Any]: ...


class TableInsightsPort(InsightsPort, Protocol):
    """``InsightsPort`` and the GSIs a table has now, for an alarm that names no index (a Metrics Insights
    query over every GSI of a table the stack does not own): ``adapters.insights.CloudWatchInsights``."""

    def global_indexes(self, table: str) -> list[str]:
        """DescribeTable's GSI names; raises ``throttles.InsightsUnavailable`` (one line why) when it fails."""
        ...


class IncidentReader(Protocol):
    """The stream's open incidents of a table (the explainer's "confirmed: throttling")."""

    def open_incidents(self, table: str) -> list[tuple[Incident, int]]: ...


class Publish(Protocol):
    """SNS ``Publish`` as the explainer calls it (a bound ``client.publish``)."""

    # `*args: Any` too: a typed client's publish takes only its request's keywords, which `**Any` alone rejects.
    def __call__(self, *args: Any, **arguments: Any) -> Mapping[str, Any]: ...
