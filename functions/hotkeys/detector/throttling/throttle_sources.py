"""What a throttle reading is about: a table or one of its GSIs, and what DescribeContributorInsights says
of it. Value types only, so the ports modules can name them (``throttling.ports.InsightsPort``,
``provisioning.ports.InsightsSwitch``) without importing the logic in ``throttles`` that takes those ports."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    """A table (``index`` None) or one of its global secondary indexes."""

    table: str
    index: str | None = None

    @property
    def where(self) -> str:
        return self.table if self.index is None else f"{self.table} index {self.index}"


@dataclass(frozen=True)
class RuleStatus:
    """What DescribeContributorInsights says of one table or index."""

    source: Source
    status: str  # ENABLING | ENABLED | DISABLING | DISABLED | FAILED
    mode: str | None
    rule: str | None  # the PKT rule's name

    def unreadable(self) -> str | None:
        """Why its throttled keys cannot be read, or None when they can. Off: with the command that turns
        it on, so a reader can act on the line (a GSI added after the deploy has it off, decisions §53)."""
        if self.status == "DISABLED":
            return (
                f"Contributor Insights is disabled on {self.source.where}; "
                f"to name its throttled keys: {insights_command(self.source)}"
            )
        if self.status != "ENABLED":
            return f"Contributor Insights is {self.status.lower()} on {self.source.where}"
        if self.rule is None:
            return f"Contributor Insights on {self.source.where} lists no throttled-keys rule"
        return None


def insights_command(source: Source, action: str = "ENABLE") -> str:
    """The AWS CLI command that turns Contributor Insights on (throttled-keys mode) or off (``DISABLE``) for
    a table or one GSI."""
    index = f" --index-name {source.index}" if source.index is not None else ""
    mode = " --contributor-insights-mode THROTTLED_KEYS" if action == "ENABLE" else ""
    return (
        f"aws dynamodb update-contributor-insights --table-name {source.table}{index} "
        f"--contributor-insights-action {action}{mode}"
    )
