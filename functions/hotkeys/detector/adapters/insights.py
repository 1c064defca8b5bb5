"""Contributor Insights for DynamoDB through boto3: the throttled-keys rule of a table or index
(DynamoDB ``DescribeContributorInsights``) and its report (CloudWatch ``GetInsightRuleReport``).

Every failure becomes ``InsightsUnavailable`` with one line saying why (denied, no such table,
throttled, unreachable, or an endpoint that does not implement the call, such as moto), so a caller
can say it and go on. moto does not model these rules: tests drive this adapter with botocore's
``Stubber``, which validates each request and response against the service model.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from hotkeys.detector.throttling.throttle_sources import RuleStatus, Source
from hotkeys.detector.throttling.throttles import (
    MAX_CONTRIBUTORS,
    REPORT_METRICS,
    REPORT_ORDER_BY,
    REPORT_PERIOD_SECONDS,
    InsightsUnavailable,
    throttled_key_rule,
)

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient

DENIED = "access denied (needs dynamodb:DescribeContributorInsights and cloudwatch:GetInsightRuleReport)"
_DENIED = ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation")


def why(error: Exception, denied: str = DENIED, not_found: str = "no such table or index, or no such rule") -> str:
    """One line for a failed call (``denied`` and ``not_found``: what those errors mean for the call made)."""
    if isinstance(error, ClientError):
        code = str(error.response.get("Error", {}).get("Code", ""))
        if code in _DENIED:
            return denied
        if code == "ResourceNotFoundException":
            return not_found
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        message = str(error.response.get("Error", {}).get("Message", "")).split("\n")[0][:160]
        if status >= 500 and (not message or message.lstrip().startswith("<")):
            # A page, not a DynamoDB error: what a local emulator that lacks the call (moto) answers.
            return f"the endpoint answered HTTP {status} without an error code (it may not implement the call)"

        return f"{code or 'error'}: {message}" if message else code or "error"
    if isinstance(error, ParamValidationError):
        return f"request refused by the SDK ({str(error).splitlines()[-1].strip()[:160]})"
    if isinstance(error, NotImplementedError):
        return "the endpoint does not implement Contributor Insights"
    return f"unreachable: {str(error).splitlines()[0][:160] if str(error) else type(error).__name__}"


class CloudWatchInsights:
    """The ``throttles.InsightsPort`` on boto3 clients of DynamoDB and CloudWatch."""

    def __init__(self, dynamodb: DynamoDBClient, cloudwatch: CloudWatchClient) -> None:
        self._dynamodb = dynamodb
        self._cloudwatch = cloudwatch

    def rule_status(self, source: Source) -> RuleStatus:
        arguments = {"TableName": source.table, **({"IndexName": source.index} if source.index else {})}
        try:
            answer = self._dynamodb.describe_contributor_insights(**arguments)
        except (ClientError, BotoCoreError, NotImplementedError) as error:
            raise InsightsUnavailable(why(error)) from None
        return RuleStatus(
            source=source,
            status=str(answer.get("ContributorInsightsStatus") or "DISABLED"),
            mode=answer.get("ContributorInsightsMode"),
            rule=throttled_key_rule(answer.get("ContributorInsightsRuleList") or []),
        )

    def report(self, rule: str, start: int, end: int) -> Mapping[str, Any]:
        try:
            return dict(self._cloudwatch.get_insight_rule_report(**report_request(rule, start, end)))
        except (ClientError, BotoCoreError, NotImplementedError) as error:
            raise InsightsUnavailable(why(error)) from None

    def global_indexes(self, table: str) -> list[str]:
        """The table's global secondary indexes now (DescribeTable), in its order; ``InsightsUnavailable``
        (one line why) when it cannot be described."""
        try:
            described = self._dynamodb.describe_table(TableName=table)["Table"]
        except (ClientError, BotoCoreError, NotImplementedError) as error:
            raise InsightsUnavailable(
                why(error, denied="access denied (needs dynamodb:DescribeTable)", not_found="no such table")
            ) from None
        return [str(index["IndexName"]) for index in described.get("GlobalSecondaryIndexes") or []]


def report_request(rule: str, start: int, end: int) -> dict[str, Any]:
    """GetInsightRuleReport's arguments: one-minute periods over whole minutes covering ``start``..``end``."""
    first = start - start % REPORT_PERIOD_SECONDS
    last = end + (-end) % REPORT_PERIOD_SECONDS
    return {
        "RuleName": rule,
        "StartTime": datetime.fromtimestamp(first, tz=UTC),
        "EndTime": datetime.fromtimestamp(max(last, first + REPORT_PERIOD_SECONDS), tz=UTC),
        "Period": REPORT_PERIOD_SECONDS,
        "MaxContributorCount": MAX_CONTRIBUTORS,
        "Metrics": list(REPORT_METRICS),
        "OrderBy": REPORT_ORDER_BY,
    }
