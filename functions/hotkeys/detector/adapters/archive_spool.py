"""The archive's spool: archive objects S3 refused, kept in the stats table until S3 takes them.

A TTL deletion's images exist nowhere else once DynamoDB deleted the item: when S3 refuses
its archive object, the object is written here instead, and the invocation succeeds. Without
it the batch would be retried, dead-lettered after the retries, and lost once the stream's 24 h
retention passed: an S3 outage of a day would lose expired items for good.

Items: PK ``SPOOL#<partition>`` (``spool_partition_of`` the writing shard: an outage's spool writes spread
over ``SPOOL_PARTITIONS`` partitions), SK ``<sha256 of the object key>#<part>``. The object's gzip
bytes are cut into parts that fit DynamoDB's 400 KB item limit; ``parts`` says how many make it
whole. Spooled items carry no ``expires_at``: they stay until drained. A marker item (PK
``SPOOL#MARK``) holds a token every spool write replaces, so that a container can learn that
something waits with one read, and a drain removes the marker only if no write came since.
Draining is idempotent: object keys are deterministic (a retried batch rebuilds the same bytes),
so putting an object twice leaves one object, and parts are deleted only after S3 took it.
"""

from __future__ import annotations

import hashlib
import uuid
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from hotkeys.detector.adapters.stats_schema import is_conditional_check_failure, query_all
from hotkeys.detector.consumer.ports import ObjectStore
from hotkeys.detector.names import SPOOL_PREFIX

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

# Partition keys a spool's objects spread over (a shard's objects stay under one).
SPOOL_PARTITIONS = 8
MARKER_KEY = {"pk": f"{SPOOL_PREFIX}MARK", "sk": "-"}
# Body bytes per item: DynamoDB's item limit is 400 KB including names and the other attributes.
PART_BYTES = 350_000


def spool_partition_of(shard_id: str) -> int:
    return zlib.crc32(shard_id.encode("utf-8")) % SPOOL_PARTITIONS


def spool_pk(partition: int) -> str:
    return f"{SPOOL_PREFIX}{partition}"


class DynamoArchiveSpool:
    def __init__(self, table: Table) -> None:
        self._table = table

    def put(self, shard_id: str, key: str, body: bytes) -> None:
        """Keep one archive object until S3 takes it (parts first, then the marker's new token)."""
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
        chunks = [body[offset : offset + PART_BYTES] for offset in range(0, len(body), PART_BYTES)] or [b""]
        for part, chunk in enumerate(chunks):
            self._table.put_item(
                Item={
                    "pk": spool_pk(spool_partition_of(shard_id)),
                    "sk": f"{digest}#{part:04d}",
                    "object_key": key,
                    "part": part,
                    "parts": len(chunks),
                    "body": chunk,
                }
            )
        # A token no write ever repeats: a drain that read an older one cannot delete this marker.
        self._table.update_item(
            Key=MARKER_KEY,
            UpdateExpression="SET #t = :t",
            ExpressionAttributeNames={"#t": "token"},
            ExpressionAttributeValues={":t": uuid.uuid4().hex},
        )

    def waiting(self) -> str | None:
        """The marker's token if anything may be spooled, else None (one strongly consistent read)."""
        item = self._table.get_item(Key=MARKER_KEY, ConsistentRead=True).get("Item")
        return str(item["token"]) if item else None

    def drain(
        self, store: ObjectStore, limit: int, on_error: Callable[[str, Exception], None], force: bool = False
    ) -> tuple[int, bool]:
        """Put at most ``limit`` spooled objects into S3 and delete them here; returns (objects put,
        whether the spool is now empty). Without a marker nothing is looked at unless ``force``. The first
        object S3 refuses ends the drain (``on_error`` is told): S3 is still down, and a drain on the
        invocation's path must stay short. An object whose parts are not all there (a write under way, or
        one cut short whose batch was retried under other object keys) is left alone."""
        token = self.waiting()
        if token is None and not force:
            return 0, True
        put = 0
        for partition in range(SPOOL_PARTITIONS):
            pk = spool_pk(partition)
            for digest, key in self._complete_objects(pk):
                if put >= limit:
                    return put, False
                parts = self._parts(pk, digest)
                try:
                    store.put(key, b"".join(_bytes(item["body"]) for item in parts))
                except Exception as error:
                    on_error(key, error)
                    return put, False
                for item in parts:
                    self._table.delete_item(Key={"pk": pk, "sk": item["sk"]})
                put += 1
        if token is not None:
            try:  # the marker goes only if nothing was spooled since it was read
                self._table.delete_item(
                    Key=MARKER_KEY,
                    ConditionExpression="#t = :seen",
                    ExpressionAttributeNames={"#t": "token"},
                    ExpressionAttributeValues={":seen": token},
                )
            except ClientError as error:
                if not is_conditional_check_failure(error):
                    raise
                return put, False
        return put, True

    def _complete_objects(self, pk: str) -> list[tuple[str, str]]:
        """(digest, object key) of the objects of one partition whose parts are all there (bodies unread)."""
        counts: dict[str, list[Any]] = {}
        for item in query_all(
            self._table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": pk},
            ProjectionExpression="sk, object_key, #n",
            ExpressionAttributeNames={"#n": "parts"},
            ConsistentRead=True,
        ):
            entry = counts.setdefault(str(item["sk"]).split("#", 1)[0], [0, int(item["parts"]), item["object_key"]])
            entry[0] += 1
        return [(digest, str(key)) for digest, (seen, parts, key) in counts.items() if seen == parts]

    def _parts(self, pk: str, digest: str) -> list[dict[str, Any]]:
        return query_all(
            self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :digest)",
            ExpressionAttributeValues={":pk": pk, ":digest": f"{digest}#"},
            ConsistentRead=True,
        )


def _bytes(value: Any) -> bytes:
    return bytes(value.value) if hasattr(value, "value") else bytes(value)
