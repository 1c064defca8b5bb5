"""The ``ports.InsightsSwitch`` on a boto3 DynamoDB client: DescribeTable, Describe/UpdateContributorInsights,
and the table's tags (ListTagsOfResource, TagResource, UntagResource).

Every failed call, a service error or the SDK's own (no connection, a timeout), becomes
``insights_owners.SwitchFailed`` with one line saying why, so the logic decides what a failure means
(a create undoes its work and fails; a delete logs it and succeeds) without knowing botocore. moto does
not model Contributor Insights: tests route those calls to a client under botocore's ``Stubber``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Required, TypedDict, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from hotkeys.detector.provisioning.insights_owners import SwitchFailed, TableGone
from hotkeys.detector.throttling.throttle_sources import RuleStatus, Source
from hotkeys.detector.throttling.throttles import throttled_key_rule

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.literals import ContributorInsightsModeType
    from mypy_boto3_dynamodb.type_defs import ListTagsOfResourceInputTypeDef

T = TypeVar("T")

# The port passes a mode as text; the SDK's request takes one of these literals.
_MODES: dict[str, ContributorInsightsModeType] = {
    "THROTTLED_KEYS": "THROTTLED_KEYS",
    "ACCESSED_AND_THROTTLED_KEYS": "ACCESSED_AND_THROTTLED_KEYS",
}


class _Where(TypedDict, total=False):
    TableName: Required[str]
    IndexName: str


def why(error: Exception) -> str:
    """One line for a failed call: the service's code and message, or the SDK's first line."""
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        code = str(details.get("Code") or "error")
        message = str(details.get("Message") or "").split("\n")[0][:200]
        return f"{code}: {message}" if message else code
    return f"{type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else 'no detail'}"


def _call(action: Callable[[], T]) -> T:
    try:
        return action()
    except (ClientError, BotoCoreError) as error:
        raise SwitchFailed(why(error)) from None


def _arguments(source: Source) -> _Where:
    where: _Where = {"TableName": source.table}
    if source.index is not None:
        where["IndexName"] = source.index
    return where


class DynamoInsightsSwitch:
    def __init__(self, dynamodb: DynamoDBClient) -> None:
        self._dynamodb = dynamodb

    def sources(self, table: str) -> tuple[str, list[Source]]:
        try:
            described = self._dynamodb.describe_table(TableName=table)["Table"]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                raise TableGone(why(error)) from None
            raise SwitchFailed(why(error)) from None
        except BotoCoreError as error:
            raise SwitchFailed(why(error)) from None
        # Contributor Insights applies to the table and its GSIs, not to LSIs.
        indexes = [str(index["IndexName"]) for index in described.get("GlobalSecondaryIndexes") or []]
        return str(described["TableArn"]), [Source(table)] + [Source(table, name) for name in indexes]

    def status(self, source: Source) -> RuleStatus:
        answer = _call(lambda: self._dynamodb.describe_contributor_insights(**_arguments(source)))
        return RuleStatus(
            source=source,
            status=str(answer.get("ContributorInsightsStatus") or "DISABLED"),
            mode=answer.get("ContributorInsightsMode"),
            rule=throttled_key_rule(answer.get("ContributorInsightsRuleList") or []),
        )

    def enable(self, source: Source, mode: str) -> None:
        known = _MODES.get(mode)
        if known is None:
            raise SwitchFailed(f"unknown Contributor Insights mode {mode!r}")
        _call(
            lambda: self._dynamodb.update_contributor_insights(
                **_arguments(source), ContributorInsightsAction="ENABLE", ContributorInsightsMode=known
            )
        )

    def disable(self, source: Source) -> None:
        _call(
            lambda: self._dynamodb.update_contributor_insights(
                **_arguments(source), ContributorInsightsAction="DISABLE"
            )
        )

    def tags(self, table_arn: str) -> dict[str, str]:
        found: dict[str, str] = {}
        page: ListTagsOfResourceInputTypeDef = {"ResourceArn": table_arn}
        while True:
            answer = _call(partial(self._dynamodb.list_tags_of_resource, **page))
            found.update({str(tag["Key"]): str(tag.get("Value", "")) for tag in answer.get("Tags") or []})
            if not answer.get("NextToken"):
                return found
            page = {"ResourceArn": table_arn, "NextToken": answer["NextToken"]}

    def tag(self, table_arn: str, tags: Mapping[str, str]) -> None:
        _call(
            lambda: self._dynamodb.tag_resource(
                ResourceArn=table_arn, Tags=[{"Key": key, "Value": value} for key, value in tags.items()]
            )
        )

    def untag(self, table_arn: str, keys: list[str]) -> None:
        _call(lambda: self._dynamodb.untag_resource(ResourceArn=table_arn, TagKeys=list(keys)))
