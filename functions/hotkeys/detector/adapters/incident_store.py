"""Incidents in the stats table (``alerts.incidents.Incident``): one codec, conditional writes.

Item: PK ``INC#<table>``, SK the incident's name (``rules.incident_key``: bounded whatever the key's
length), the key itself in ``key``. Every write but the first is conditional on the stored
``version`` the writer read, and bumps it: a writer that lost a race (a shard's first alarm and the
judge, two judge runs at once, a retry) gets the incident as it now stands and decides again, so each
transition, and the message it owes, happens once. ``expires_at`` lets DynamoDB's TTL drop incidents
left behind (a table no longer watched).

Incidents written before this layout (no ``version``) are read with their old fields mapped; the
first write replaces them under the same name.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from hotkeys.detector.adapters.stats_schema import is_conditional_check_failure, query_all
from hotkeys.detector.alerts.incidents import Incident, Message, Pending, Status
from hotkeys.detector.alerts.rules import Reason

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

INCIDENT_RETENTION_SECONDS = 2 * 86_400
_DESERIALIZER = TypeDeserializer()


def incident_pk(table: str) -> str:
    """A table's incidents share one partition key (its index keys' among them: one Query reads all)."""
    return f"INC#{table}"


def to_item(incident: Incident, version: int, now: float) -> dict[str, Any]:
    """The incident as stored (``from_item`` reads it back), at ``version``."""
    item: dict[str, Any] = {
        "pk": incident_pk(incident.table),
        "sk": incident.name,
        "table_name": incident.table,
        "key": incident.key,
        "reason": incident.reason.value,
        "status": incident.status.value,
        "fired_window": incident.fired_window,
        "fired_at": incident.fired_at,
        "fired_rate": _decimal(incident.fired_rate),
        "last_hot_window": incident.last_hot_window,
        "peak": _decimal(incident.peak),
        "peak_rate": _decimal(incident.peak_rate),
        "peak_window": incident.peak_window,
        "sized_at": _decimal(incident.sized_at),
        "notified_at": _decimal(incident.notified_at),
        "resolved_level": _decimal(incident.resolved_level),
        "version": version,
        "expires_at": int(now) + INCIDENT_RETENTION_SECONDS,
    }
    if incident.index is not None:
        item["index_name"] = incident.index
    if incident.resolved_window is not None:
        item["resolved_window"] = incident.resolved_window
    if incident.pending is not None:
        item["pending"] = {
            "message": incident.pending.message.value,
            "owner": incident.pending.owner,
            "claimed_at": _decimal(incident.pending.claimed_at),
        }
    return item


def from_item(item: dict[str, Any]) -> tuple[Incident, int]:
    """(the incident, its stored version). An incident of the earlier layout (no ``version``: 0) is mapped:
    its peak stands for every rate, and an unpublished firing or resolution is owed by its shard."""
    version = int(item.get("version", 0))
    status = Status(str(item["status"]))
    peak = float(item.get("peak", 0))
    pending = item.get("pending")
    owed: Pending | None = None
    if isinstance(pending, dict):
        owed = Pending(Message(str(pending["message"])), str(pending["owner"]), float(pending["claimed_at"]))
    elif not version:
        unpublished = (
            item.get("resolve_published") is False if status is Status.RESOLVED else item.get("published") is False
        )
        if unpublished:
            message = Message.RESOLVED if status is Status.RESOLVED else Message.FIRING
            owed = Pending(message, str(item.get("shard_id", "")), float(item.get("notified_at", 0)))
    last_hot = int(item["last_hot_window"])
    incident = Incident(
        table=str(item["table_name"]),
        name=str(item["sk"]),
        key=str(item["key"]),
        reason=Reason(str(item["reason"])),
        index=str(item["index_name"]) if item.get("index_name") is not None else None,
        status=status,
        fired_window=int(item["fired_window"]),
        fired_at=int(item.get("fired_at", item["fired_window"])),
        fired_rate=float(item.get("fired_rate", peak)),
        last_hot_window=last_hot,
        peak=peak,
        peak_rate=float(item.get("peak_rate", 0)),
        peak_window=int(item.get("peak_window", last_hot)),
        sized_at=float(item.get("sized_at", peak)),
        notified_at=float(item.get("notified_at", 0)),
        pending=owed,
        resolved_window=int(item["resolved_window"]) if item.get("resolved_window") is not None else None,
        resolved_level=float(item.get("resolved_level", 0)),
    )
    return incident, version


def _decimal(value: float) -> Decimal:
    return Decimal(str(round(value, 4)))


class DynamoIncidentStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def start(self, incident: Incident, now: float) -> tuple[bool, tuple[Incident, int] | None]:
        """Write a new incident unless one is firing, or was resolved on its window or a later one (a
        shard behind its siblings sees a window an incident was already judged on), or still owes a
        message. Returns whether this call started it and otherwise the incident as it stands (DynamoDB
        returns it with the failed condition), or None if it cannot be read."""
        written, stored = self._put_if(
            to_item(incident, 1, now),
            ConditionExpression=(
                "attribute_not_exists(pk) OR expires_at < :now OR "
                "(#s = :resolved AND resolved_window < :w AND attribute_not_exists(pending))"
            ),
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":resolved": Status.RESOLVED.value,
                ":w": incident.fired_window,
                ":now": int(now),
            },
        )
        if written or stored is not None:
            return written, stored
        return False, self.get(incident.table, incident.name)

    def update(self, incident: Incident, version: int, now: float) -> tuple[bool, tuple[Incident, int] | None]:
        """Replace the stored incident with ``incident`` if it is still at ``version``. Returns whether it
        was written and otherwise the incident as it stands (None: gone)."""
        item = to_item(incident, version + 1, now)
        condition = "version = :v" if version else "attribute_exists(pk) AND attribute_not_exists(version)"
        values = {":v": version} if version else {}
        return self._put_if(
            item, ConditionExpression=condition, **({"ExpressionAttributeValues": values} if values else {})
        )

    def _put_if(self, item: dict[str, Any], **condition: Any) -> tuple[bool, tuple[Incident, int] | None]:
        """Put ``item`` if ``condition`` holds: (True, None), else (False, the incident as DynamoDB returned it
        with the failed condition, or None when it returned none)."""
        try:
            self._table.put_item(Item=item, ReturnValuesOnConditionCheckFailure="ALL_OLD", **condition)
        except ClientError as error:
            if not is_conditional_check_failure(error):
                raise
            stored = error.response.get("Item")
            if isinstance(stored, dict) and stored:
                return False, from_item({name: _DESERIALIZER.deserialize(value) for name, value in stored.items()})
            return False, None
        return True, None

    def open_incidents(self, table: str) -> list[tuple[Incident, int]]:
        """The table's firing incidents and those that still owe a message, with their versions."""
        items = query_all(
            self._table,
            KeyConditionExpression="pk = :pk",
            FilterExpression="#s = :firing OR attribute_exists(pending) OR published = :no OR resolve_published = :no",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":pk": incident_pk(table), ":firing": Status.FIRING.value, ":no": False},
        )
        return [from_item(item) for item in items]

    def get(self, table: str, name: str) -> tuple[Incident, int] | None:
        item = self._table.get_item(Key={"pk": incident_pk(table), "sk": name}, ConsistentRead=True).get("Item")
        return from_item(item) if item else None
