"""The archive's spool: archive objects S3 refused, kept in the stats table until S3 takes them.

A TTL deletion's images exist nowhere else once DynamoDB deleted the item: when S3 refuses
its archive object, the object is written here instead, and the invocation succeeds. Without
it the batch would be retried, dead-lettered after the retries, and lost once the stream's 24 h
retention passed: an S3 outage of a day would lose expired items for good.

Items: PK ``SPOOL#<bucket>`` (the writing shard's stats bucket: an outage's spool writes spread
over ``STATS_BUCKETS`` partitions), SK ``<sha256 of the object key>#<part>``. The object's gzip
bytes are cut into parts that fit DynamoDB's 400 KB item limit; ``parts`` says how many make it
whole. Spooled items carry no ``expires_at``: they stay until drained. A marker item (PK
``SPOOL#MARK``) holds a counter every spool write raises, so that a container can learn that
something waits with one read, and a drain removes the marker only if no write came since.
Draining is idempotent: object keys are deterministic (a retried batch rebuilds the same bytes),
so putting an object twice leaves one object, and parts are deleted only after S3 took it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from hotkeys.detector.adapters.stats_schema import is_conditional_check_failure, query_all
from hotkeys.detector.archive import ObjectStore
from hotkeys.detector.names import SPOOL_PREFIX
from hotkeys.detector.snapshots import STATS_BUCKETS, bucket_of

MARKER_KEY = {"pk": f"{SPOOL_PREFIX}MARK", "sk": "-"}
# Body bytes per item: DynamoDB's item limit is 400 KB including names and the other attributes.
PART_BYTES = 350_000


def spool_pk(bucket: int) -> str:
    return f"{SPOOL_PREFIX}{bucket}"


class DynamoArchiveSpool:
    def __init__(self, table: Any) -> None:
        self._table = table

    def put(self, shard_id: str, key: str, body: bytes) -> None:
        """Keep one archive object until S3 takes it (parts first, then the marker)."""
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
        chunks = [body[offset : offset + PART_BYTES] for offset in range(0, len(body), PART_BYTES)] or [b""]
        for part, chunk in enumerate(chunks):
            self._table.put_item(
                Item={
                    "pk": spool_pk(bucket_of(shard_id)),
                    "sk": f"{digest}#{part:04d}",
                    "object_key": key,
                    "part": part,
                    "parts": len(chunks),
                    "body": chunk,
                }
            )
        self._table.update_item(
            Key=MARKER_KEY, UpdateExpression="ADD spooled :one", ExpressionAttributeValues={":one": 1}
        )

    def waiting(self) -> int | None:
        """The marker's counter if anything may be spooled, else None (one strongly consistent read)."""
        item = self._table.get_item(Key=MARKER_KEY, ConsistentRead=True).get("Item")
        return int(item["spooled"]) if item else None

    def drain(self, store: ObjectStore, limit: int, on_error: Callable[[str, Exception], None]) -> tuple[int, bool]:
        """Put at most ``limit`` spooled objects into S3 and delete them here; returns (objects put,
        whether the spool is now empty). An object S3 still refuses stays (``on_error`` is told)."""
        marker = self.waiting()
        if marker is None:
            return 0, True
        put = 0
        left = False
        for bucket in range(STATS_BUCKETS):
            objects: dict[str, list[dict[str, Any]]] = {}
            for item in self._items(spool_pk(bucket)):
                objects.setdefault(str(item["sk"]).split("#", 1)[0], []).append(item)
            for parts in objects.values():
                if put >= limit:
                    return put, False
                if len(parts) != int(parts[0]["parts"]):
                    left = True  # a spool write under way (or cut short: its batch was retried)
                    continue
                parts.sort(key=lambda item: int(item["part"]))
                key = str(parts[0]["object_key"])
                try:
                    store.put(key, b"".join(_bytes(item["body"]) for item in parts))
                except Exception as error:
                    on_error(key, error)
                    left = True
                    continue
                for item in parts:
                    self._table.delete_item(Key={"pk": item["pk"], "sk": item["sk"]})
                put += 1
        if not left:
            try:  # the marker goes only if nothing was spooled since it was read
                self._table.delete_item(
                    Key=MARKER_KEY,
                    ConditionExpression="spooled = :seen",
                    ExpressionAttributeValues={":seen": marker},
                )
            except ClientError as error:
                if not is_conditional_check_failure(error):
                    raise
                left = True
        return put, not left

    def _items(self, pk: str) -> list[dict[str, Any]]:
        return query_all(
            self._table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": pk},
            ConsistentRead=True,
        )


def _bytes(value: Any) -> bytes:
    return bytes(value.value) if hasattr(value, "value") else bytes(value)
