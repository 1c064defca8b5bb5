"""Contributor Insights in throttled-keys mode on a table and its GSIs (``Custom::ThrottledKeyInsights``).

The rules of who turns what on and off are ``insights_owners``' (docs/decisions.md §68); this module says
what each request does with them.

* Create: a new owner of the table (``insights_owners.claim``), under a physical id naming the table and
  the owner. A failure fails the deploy with the cause and the way out, after undoing its own work.
* Update: the same table keeps the id (and so what it owns: ``keeps``); another table, or an id written
  before §68, is a create under a new id, and CloudFormation's delete of the old id then releases the old one.
* Delete: ``insights_owners.release``. It never fails the stack (``delete``): whatever goes wrong (denied,
  throttled, no such table, no connection) is logged as one structured line and the delete succeeds.

The response's ``Data`` holds counts only (``Claimed``): a custom resource's response must stay under 4,096
bytes, and a list of index names would not (20 GSIs of long names). Nothing in the stack reads it.

GSIs added to a table after the deploy are not enabled by it (the resource runs only when its
properties change): ``hotkeys doctor`` names them with the command.
"""

from __future__ import annotations

from collections.abc import Callable

from hotkeys.detector.observability import logger
from hotkeys.detector.provisioning.insights_owners import OWNER_TAG, SwitchFailed, TableGone, held, release
from hotkeys.detector.provisioning.ports import InsightsSwitch
from hotkeys.detector.throttling.throttle_sources import Source, insights_command

__all__ = ["delete", "keeps"]


def keeps(resource_id: str, table: str) -> bool:
    """Whether an Update to ``table`` keeps the resource's id: it owns that same table already."""
    previous = held(resource_id)
    return previous is not None and previous.owner is not None and previous.table == table


def delete(switch: Callable[[], InsightsSwitch], resource_id: str) -> None:
    """Release what the resource owns; never raises: a teardown must not hang on Contributor Insights.
    ``switch`` is made inside, so that a failure to make it is logged too."""
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
