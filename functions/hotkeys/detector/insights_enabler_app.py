"""Deploy-time custom resource: Contributor Insights in throttled-keys mode on a table and its GSIs.

Used by the CDK provider framework (``on_event`` only: nothing waits for the rules to exist).
On create it describes the table, then for the table and each of its global secondary indexes
asks ``DescribeContributorInsights`` and calls ``UpdateContributorInsights`` (ENABLE,
``ContributorInsightsMode=THROTTLED_KEYS``) only where the status is DISABLED. Anything else is
left as it is: ENABLED in either mode (a table already in ACCESSED_AND_THROTTLED_KEYS mode is never
switched down), ENABLING/DISABLING (someone else is changing it), FAILED (``hotkeys doctor``
reports it).

What it enabled is written into the physical resource id (CloudFormation gives a delete request
nothing else of the resource's past), so a delete disables exactly that and nothing else, and
only where it is still on in throttled-keys mode (someone who switched it to the full mode since
owns it now). A delete never fails the stack's teardown: a target that cannot be disabled is
logged with the command that does it.

An update for the same table keeps the id (and so what it owns); an update to another table
enables that table under a new id, and CloudFormation's delete of the old id turns off what was
enabled on the old one. GSIs added to a table after the deploy are not enabled by it (the
resource runs only when its properties change): ``hotkeys doctor`` names them with the command.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from botocore.exceptions import ClientError

from hotkeys.detector.adapters.aws import AwsClients

MODE = "THROTTLED_KEYS"
FULL_MODE = "ACCESSED_AND_THROTTLED_KEYS"
ID_PREFIX = "throttled-insights"
TABLE_FLAG = "T"
LOGGER = logging.getLogger(__name__)


@cache  # one set of clients per container
def _clients() -> AwsClients:
    return AwsClients()


class InsightsError(RuntimeError):
    """Contributor Insights could not be enabled; the message names the table or index and the way out."""


@dataclass(frozen=True)
class Target:
    """The table itself (``index`` None) or one of its global secondary indexes."""

    table: str
    index: str | None = None

    @property
    def label(self) -> str:
        return self.table if self.index is None else f"{self.table} index {self.index}"

    def arguments(self) -> dict[str, str]:
        return {"TableName": self.table} | ({"IndexName": self.index} if self.index is not None else {})

    def cli(self, action: str) -> str:
        index = f" --index-name {self.index}" if self.index is not None else ""
        mode = f" --contributor-insights-mode {MODE}" if action == "ENABLE" else ""
        return (
            f"aws dynamodb update-contributor-insights --table-name {self.table}{index} "
            f"--contributor-insights-action {action}{mode}"
        )


def index_token(index: str) -> str:
    """A short, fixed-length stand-in for an index name (index names run to 255 characters; a physical id
    must stay under 1 KB whatever the table has)."""
    return hashlib.sha256(index.encode()).hexdigest()[:10]


def physical_id(table: str, enabled: Iterable[Target]) -> str:
    flags = [TABLE_FLAG if target.index is None else index_token(target.index) for target in enabled]
    return f"{ID_PREFIX}:{table}:{'.'.join(sorted(flags))}"


def owned(resource_id: str) -> tuple[str, set[str]] | None:
    """(table, flags) of a physical id this module wrote, None for any other (nothing to undo)."""
    parts = resource_id.split(":", 2)
    if len(parts) != 3 or parts[0] != ID_PREFIX:
        return None
    return parts[1], {flag for flag in parts[2].split(".") if flag}


def on_event(event: dict[str, Any], _context: Any = None, dynamodb: Any = None) -> dict[str, Any]:
    table = str(event["ResourceProperties"]["TableName"])
    kind = event["RequestType"]
    dynamodb = dynamodb or _clients().client("dynamodb")
    if kind == "Delete":
        resource_id = str(event.get("PhysicalResourceId", ""))
        disable_owned(dynamodb, resource_id)
        return {"PhysicalResourceId": resource_id}
    if kind == "Update":
        previous = owned(str(event.get("PhysicalResourceId", "")))
        if previous is not None and previous[0] == table:
            return {"PhysicalResourceId": str(event["PhysicalResourceId"])}
    enabled = enable_where_disabled(dynamodb, targets(dynamodb, table))
    return {
        "PhysicalResourceId": physical_id(table, enabled),
        "Data": {"Enabled": ",".join(t.label for t in enabled) or "none"},
    }


def targets(dynamodb: Any, table: str) -> list[Target]:
    """The table and each of its global secondary indexes (Contributor Insights does not apply to LSIs)."""
    try:
        description = dynamodb.describe_table(TableName=table)["Table"]
    except ClientError as error:
        if _code(error) == "ResourceNotFoundException":
            raise InsightsError(f"table {table!r} does not exist in this account and region") from None
        raise
    indexes = [str(index["IndexName"]) for index in description.get("GlobalSecondaryIndexes") or []]
    return [Target(table)] + [Target(table, name) for name in indexes]


def status_of(dynamodb: Any, target: Target) -> tuple[str, str | None]:
    """(ContributorInsightsStatus, ContributorInsightsMode); a mode-less ENABLED answer is the full mode
    (the only one there was before modes existed)."""
    answer = dynamodb.describe_contributor_insights(**target.arguments())
    status = str(answer.get("ContributorInsightsStatus", "DISABLED"))
    mode = answer.get("ContributorInsightsMode")
    if mode is None and status in ("ENABLED", "ENABLING"):
        mode = FULL_MODE
    return status, None if mode is None else str(mode)


def enable_where_disabled(dynamodb: Any, wanted: list[Target]) -> list[Target]:
    enabled = []
    for target in wanted:
        status, _mode = status_of(dynamodb, target)
        if status != "DISABLED":
            continue
        try:
            dynamodb.update_contributor_insights(
                **target.arguments(), ContributorInsightsAction="ENABLE", ContributorInsightsMode=MODE
            )
        except ClientError as error:
            raise InsightsError(
                f"cannot enable Contributor Insights ({MODE}) on {target.label}: {_code(error)}: "
                f"{error.response.get('Error', {}).get('Message', '')}. Fix the cause (a quota of Contributor "
                "Insights rules, a customer-managed key not in -c tableKmsKeyArns) or deploy with "
                "-c throttledKeyInsights=false"
            ) from None
        enabled.append(target)
    return enabled


def disable_owned(dynamodb: Any, resource_id: str) -> list[Target]:
    """Turn off what this resource turned on, where it is still on in throttled-keys mode."""
    mine = owned(resource_id)
    if mine is None:
        return []
    table, flags = mine
    try:
        candidates = [t for t in targets(dynamodb, table) if _flag(t) in flags]
    except InsightsError:
        return []  # the table is gone, and its rules with it
    disabled = []
    for target in candidates:
        try:
            status, mode = status_of(dynamodb, target)
            if status not in ("ENABLED", "ENABLING") or mode != MODE:
                continue
            dynamodb.update_contributor_insights(**target.arguments(), ContributorInsightsAction="DISABLE")
        except ClientError as error:
            # A teardown must not hang on this: say what was left on and how to turn it off.
            LOGGER.warning(
                "could not turn Contributor Insights off on %s (%s); run: %s",
                target.label,
                _code(error),
                target.cli("DISABLE"),
            )
            continue
        disabled.append(target)
    return disabled


def _flag(target: Target) -> str:
    return TABLE_FLAG if target.index is None else index_token(target.index)


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))
