"""Deploy-time custom resource: Contributor Insights in throttled-keys mode on a table and its GSIs.

Used by the CDK provider framework (``on_event`` only: nothing waits for the rules to exist). The rules
of who turns what on and off are ``insights_owners``' (docs/decisions.md §68); this module reads the
request and answers it.

* Create: a new owner of the table (``insights_owners.claim``), under a physical id naming the table and
  the owner. A failure fails the deploy with the cause and the way out, after undoing its own work.
* Update: the same table keeps the id (and so what it owns); another table, or an id written before
  §68, is a create under a new id, and CloudFormation's delete of the old id then releases the old one.
* Delete: ``insights_owners.release``. It never fails the stack: whatever goes wrong (denied,
  throttled, no such table, no connection) is logged as one structured line and the delete succeeds.

The response's ``Data`` holds counts only: a custom resource's response must stay under 4,096 bytes,
and a list of index names would not (20 GSIs of long names). Nothing in the stack reads it.

GSIs added to a table after the deploy are not enabled by it (the resource runs only when its
properties change): ``hotkeys doctor`` names them with the command.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from functools import cache
from typing import Any

import boto3
from botocore.config import Config

from hotkeys.detector.adapters.aws import SDK_CONFIG
from hotkeys.detector.adapters.insights_switch import DynamoInsightsSwitch
from hotkeys.detector.observability import logger
from hotkeys.detector.throttling.insights_owners import (
    OWNER_TAG,
    InsightsError,
    SwitchFailed,
    TableGone,
    claim,
    held,
    new_owner,
    physical_id,
    release,
)
from hotkeys.detector.throttling.throttle_sources import Source, insights_command

__all__ = ["InsightsError", "on_event"]


# At deploy time no Lambda retry stands behind a call, and every watched table's resource runs at once
# against DynamoDB's account-wide tag rate ("You can call TagResource up to five times per second, per
# account", TagResource API reference): more attempts than the consumer's, paced by the adaptive mode,
# within the function's minute.
DEPLOY_RETRIES = Config(retries={"mode": "adaptive", "max_attempts": 5})


@cache  # one client per container
def _dynamodb() -> Any:
    return boto3.client("dynamodb", config=SDK_CONFIG.merge(DEPLOY_RETRIES))


def on_event(
    event: dict[str, Any],
    _context: Any = None,
    dynamodb: Any = None,
    pause: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    kind = event["RequestType"]
    if kind == "Delete":
        # Everything a delete does, the client included, is inside what it logs and never raises.
        resource_id = str(event.get("PhysicalResourceId", ""))
        _delete(lambda: DynamoInsightsSwitch(dynamodb or _dynamodb()), resource_id)
        return {"PhysicalResourceId": resource_id}
    table = str(event["ResourceProperties"]["TableName"])
    switch = DynamoInsightsSwitch(dynamodb or _dynamodb())
    if kind == "Update":
        previous = held(str(event.get("PhysicalResourceId", "")))
        if previous is not None and previous.owner is not None and previous.table == table:
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


def _delete(switch: Callable[[], DynamoInsightsSwitch], resource_id: str) -> None:
    mine = held(resource_id)
    where = {"physical_resource_id": resource_id, "table": mine.table if mine else None}
    try:
        released = release(switch(), resource_id)
    except TableGone as error:
        logger.info("table gone: nothing to turn off", extra=where | {"reason": str(error)})
        return
    except Exception as error:  # a teardown must not hang on Contributor Insights
        reason = str(error) if isinstance(error, SwitchFailed) else f"{type(error).__name__}: {error}"
        logger.warning(
            "Contributor Insights left as it was on delete",
            extra=where
            | {
                "reason": reason,
                "left": "on where this resource had turned it on, unless another stack still watches the table "
                "(its hotkeys:insights:owner:* tags)",
                "command": (
                    insights_command(Source(mine.table, None), "DISABLE") + " (and --index-name per GSI)"
                    if mine
                    else None
                ),
                # Its owner tag, if it stayed, keeps every later delete from turning anything off.
                "untag": (
                    f"aws dynamodb untag-resource --resource-arn $(aws dynamodb describe-table --table-name "
                    f"{mine.table} --query Table.TableArn --output text) --tag-keys {OWNER_TAG}{mine.owner}"
                    if mine and mine.owner
                    else None
                ),
            },
        )
        return
    logger.info(
        "Contributor Insights released",
        extra=where
        | {"disabled": released.disabled, "left_on": released.left_on, "other_owners": released.other_owners},
    )
