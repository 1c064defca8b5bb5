"""Alert incidents in the stats table: conditional writes make "one firing per incident" hold
across retries, duplicate deliveries and concurrent containers.

Item: PK ``INC#<table>``, SK ``<reason>#<digest of the key>`` (``rules.incident_key``: bounded
whatever the key's length), the key itself in ``key``. Times are event times (seconds), so a
replayed backlog alerts as it would have live; ``expires_at`` lets DynamoDB's TTL drop
incidents whose shard went away without resolving them.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import BotoCoreError, ClientError

from hotkeys.detector.adapters.stats_schema import is_conditional_check_failure, query_all
from hotkeys.detector.alerts.messages import FIRING, RESOLVED
from hotkeys.detector.alerts.rules import HotKey

INCIDENT_RETENTION_SECONDS = 2 * 86_400
_DESERIALIZER = TypeDeserializer()


class DynamoIncidentStore:
    def __init__(self, table: Any) -> None:
        self._table = table

    @staticmethod
    def _key(table: str, incident_key: str) -> dict[str, str]:
        """A table's incidents share one partition key (its index keys' among them: one Query reads all)."""
        return {"pk": f"INC#{table}", "sk": incident_key}

    def _update_if(self, table: str, incident_key: str, **update: Any) -> bool:
        """One conditional UpdateItem of an incident: False if its condition failed (another write
        got there first, or there is nothing to do); any other error raises."""
        try:
            self._table.update_item(Key=self._key(table, incident_key), **update)
        except ClientError as error:
            if is_conditional_check_failure(error):
                return False
            raise
        return True

    def claim_firing(self, hot: HotKey, shard_id: str) -> tuple[bool, dict[str, Any]]:
        """Start an incident unless one is already firing, or one was resolved on this window or a later
        one (a shard behind its siblings sees a window its incident was already judged on). Returns
        whether this call started it, and otherwise the incident as it stands: DynamoDB returns it with
        the failed condition (``ReturnValuesOnConditionCheckFailure``), so every shard that finds a
        partition hot pays one request for an incident already handled in the window."""
        try:
            self._table.put_item(
                Item={
                    **self._key(hot.table, hot.incident_key),
                    "status": FIRING,
                    "published": False,
                    "table_name": hot.table,
                    **({"index_name": hot.index} if hot.index is not None else {}),
                    "key": hot.key,
                    "reason": hot.reason,
                    "shard_id": shard_id,
                    "fired_window": hot.window_start,
                    "last_hot_window": hot.window_start,
                    "notified_at": hot.event_time,
                    "peak": Decimal(str(hot.wcu_per_second)),
                    "expires_at": hot.event_time + INCIDENT_RETENTION_SECONDS,
                },
                ConditionExpression=(
                    "attribute_not_exists(pk) OR (#s = :resolved AND resolved_window < :w) OR expires_at < :now"
                ),
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":resolved": RESOLVED, ":w": hot.window_start, ":now": hot.event_time},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if not is_conditional_check_failure(error):
                raise
            stored = error.response.get("Item")
            if isinstance(stored, dict) and stored:
                return False, {name: _DESERIALIZER.deserialize(value) for name, value in stored.items()}
            return False, self.get(hot.table, hot.incident_key) or {}
        return True, {}

    def claim_reminder(self, hot: HotKey, shard_id: str, reminder_seconds: int) -> dict[str, Any] | None:
        """Mark a reminder due; returns the incident's previous values if this call claimed it."""
        try:
            response = self._table.update_item(
                Key=self._key(hot.table, hot.incident_key),
                UpdateExpression="SET notified_at = :now, last_hot_window = :w, shard_id = :shard, expires_at = :exp",
                ConditionExpression="#s = :firing AND notified_at <= :due",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={
                    ":now": hot.event_time,
                    ":w": hot.window_start,
                    ":shard": shard_id,
                    ":exp": hot.event_time + INCIDENT_RETENTION_SECONDS,
                    ":firing": FIRING,
                    ":due": hot.event_time - reminder_seconds,
                },
                ReturnValues="ALL_OLD",
            )
        except ClientError as error:
            if is_conditional_check_failure(error):
                return None
            raise
        return dict(response.get("Attributes", {}))

    def release_reminder(self, hot: HotKey, previous_notified_at: int) -> None:
        self._update_if(
            hot.table,
            hot.incident_key,
            UpdateExpression="SET notified_at = :old",
            ConditionExpression="notified_at = :now",
            ExpressionAttributeValues={":old": previous_notified_at, ":now": hot.event_time},
        )

    def mark_hot(self, hot: HotKey, shard_id: str, peak: float) -> None:
        """The key is still hot in this window: it must not resolve at the window's end. Raises the peak
        to ``peak`` in the same write, unless another write raised it higher meanwhile (then only marks)."""
        values: dict[str, Any] = {
            ":w": hot.window_start,
            ":shard": shard_id,
            ":exp": hot.event_time + INCIDENT_RETENTION_SECONDS,
            ":firing": FIRING,
        }
        try:
            self._table.update_item(
                Key=self._key(hot.table, hot.incident_key),
                UpdateExpression="SET last_hot_window = :w, shard_id = :shard, expires_at = :exp, peak = :peak",
                ConditionExpression="#s = :firing AND peak <= :peak",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={**values, ":peak": Decimal(str(peak))},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            return
        except ClientError as error:
            stored = error.response.get("Item") if is_conditional_check_failure(error) else None
            status = stored.get("status") if isinstance(stored, dict) else None
            if status is None or _DESERIALIZER.deserialize(status) != FIRING:
                raise  # not firing (resolved meanwhile, or gone): the retry judges it again
        self._table.update_item(
            Key=self._key(hot.table, hot.incident_key),
            UpdateExpression="SET last_hot_window = :w, shard_id = :shard, expires_at = :exp",
            ConditionExpression="#s = :firing",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues=values,
        )

    def raise_peak(self, hot: HotKey) -> None:
        """Keep the incident's peak rate (it sizes the sharding advice in later messages)."""
        self._update_if(
            hot.table,
            hot.incident_key,
            UpdateExpression="SET peak = :rate",
            ConditionExpression="attribute_exists(pk) AND peak < :rate",
            ExpressionAttributeValues={":rate": Decimal(str(hot.wcu_per_second))},
        )

    def open_incidents(self, table: str) -> list[dict[str, Any]]:
        """The table's firing incidents and the resolved ones whose message may not have gone out,
        whichever shard owns them (a key moves to a child shard when its shard ends)."""
        return query_all(
            self._table,
            KeyConditionExpression="pk = :pk",
            FilterExpression="#s = :firing OR resolve_published = :no",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":pk": f"INC#{table}", ":firing": FIRING, ":no": False},
        )

    def resolve(self, table: str, incident_key: str, window_start: int, shard_id: str) -> bool:
        """Close the incident unless it was hot in this window. True if this call closed it; the
        closing shard becomes the owner (only it re-sends an unconfirmed resolved message)."""
        return self._update_if(
            table,
            incident_key,
            UpdateExpression="SET #s = :resolved, resolved_window = :w, resolve_published = :no, shard_id = :shard",
            ConditionExpression="#s = :firing AND last_hot_window < :w",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues=_resolution_values(window_start, shard_id),
        )

    def reopen(self, table: str, incident_key: str, window_start: int, shard_id: str) -> None:
        """Undo this shard's resolution of ``window_start`` whose message SNS refused (nothing went out):
        the incident is firing again, for whichever shard resolves next. No-op if anything changed since."""
        self._update_if(
            table,
            incident_key,
            UpdateExpression="SET #s = :firing REMOVE resolved_window, resolve_published",
            ConditionExpression="#s = :resolved AND resolved_window = :w AND shard_id = :shard "
            "AND resolve_published = :no",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues=_resolution_values(window_start, shard_id),
        )

    def get(self, table: str, incident_key: str) -> dict[str, Any] | None:
        item = self._table.get_item(Key=self._key(table, incident_key), ConsistentRead=True).get("Item")
        return dict(item) if item else None

    def mark_published(self, table: str, incident_key: str, flag: str) -> bool:
        """Record that the firing (``published``) or resolved (``resolve_published``) message went out.

        False if it could not be recorded (the caller remembers the message instead)."""
        try:
            self._table.update_item(
                Key=self._key(table, incident_key),
                UpdateExpression="SET #f = :yes",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeNames={"#f": flag},
                ExpressionAttributeValues={":yes": True},
            )
        except (ClientError, BotoCoreError):
            return False
        return True


def _resolution_values(window_start: int, shard_id: str) -> dict[str, Any]:
    """The values a resolution and its undoing both name: the window it judged, and its shard."""
    return {":resolved": RESOLVED, ":firing": FIRING, ":w": window_start, ":no": False, ":shard": shard_id}
