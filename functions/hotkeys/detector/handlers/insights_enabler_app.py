"""Deploy-time custom resource (``Custom::ThrottledKeyInsights``): Contributor Insights in throttled-keys mode
on a table and its GSIs.

Used by the CDK provider framework (``on_event`` only: nothing waits for the rules to exist). This handler
reads the request, makes the client and answers; what each request does, and why, is
``provisioning.insights_enabler``'s (and ``insights_owners``').
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from hotkeys.detector.adapters.aws import SDK_CONFIG
from hotkeys.detector.adapters.insights_switch import DynamoInsightsSwitch
from hotkeys.detector.provisioning.insights_enabler import delete, keeps
from hotkeys.detector.provisioning.insights_owners import claim, new_owner, physical_id

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["on_event"]


# At deploy time no Lambda retry stands behind a call, and every watched table's resource runs at once
# against DynamoDB's account-wide tag rate ("You can call TagResource up to five times per second, per
# account", TagResource API reference): more attempts than the consumer's, paced by the adaptive mode,
# within the function's minute.
DEPLOY_RETRIES = Config(retries={"mode": "adaptive", "max_attempts": 5})


@cache  # one client per container
def _dynamodb() -> DynamoDBClient:
    return boto3.client("dynamodb", config=SDK_CONFIG.merge(DEPLOY_RETRIES))


def on_event(
    event: dict[str, Any],
    _context: Any = None,
    dynamodb: DynamoDBClient | None = None,
    pause: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    kind = event["RequestType"]
    if kind == "Delete":
        # Everything a delete does, the client included, is inside what it logs and never raises.
        resource_id = str(event.get("PhysicalResourceId", ""))
        delete(lambda: DynamoInsightsSwitch(dynamodb or _dynamodb()), resource_id)
        return {"PhysicalResourceId": resource_id}
    table = str(event["ResourceProperties"]["TableName"])
    switch = DynamoInsightsSwitch(dynamodb or _dynamodb())
    if kind == "Update" and keeps(str(event.get("PhysicalResourceId", "")), table):
        return {"PhysicalResourceId": str(event["PhysicalResourceId"])}
    owner = new_owner(
        str(event.get("StackId", "")),
        str(event.get("LogicalResourceId", "")),
        str(event.get("RequestId") or uuid.uuid4()),
    )
    claimed = claim(switch, table, owner, pause)
    return {
        "PhysicalResourceId": physical_id(table, claimed.owner),
        "Data": {"Targets": str(claimed.targets), "Enabled": str(claimed.enabled)},
    }
