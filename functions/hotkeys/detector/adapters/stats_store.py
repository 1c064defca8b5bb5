"""The stats table (DynamoDB): segment snapshots and their heads, the tables' layouts, and the reports of
shards that are behind."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import Binary
from botocore.exceptions import ClientError

from hotkeys.detector.adapters.stats_schema import (
    HEADS_INDEX,
    is_conditional_check_failure,
    query_all,
    stored_number,
    stored_seconds,
)
from hotkeys.detector.consumer.lag import LagReport
from hotkeys.detector.consumer.layout import Layout, heads_pk
from hotkeys.detector.consumer.snapshots import (
    LAYOUT_PK,
    IdentityTaken,
    RetiredWindow,
    SegmentSnapshot,
    WindowRetired,
    from_head_item,
    from_item,
    heads_sk,
    segment_pk,
    stored_ranges,
    to_item,
)
from hotkeys.detector.consumer.state import ranges_overlap
from hotkeys.detector.domain.summary import EncodingRetired
from hotkeys.detector.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table
    from mypy_boto3_dynamodb.type_defs import TableAttributeValueTypeDef

# BatchGetItem takes at most 100 keys per request.
BATCH_GET_KEYS = 100
# The key layout before docs/decisions.md §64 (a window's snapshots under 8 partition keys, found through
# a catalog): its windows are reported as retired until they expire, never read.
RETIRED_CATALOG_PK = "CATALOG"
RETIRED_PARTITIONS = 8
# A lag report is kept a day (DynamoDB's TTL removes it after; it holds for minutes: consumer.lag).
LAG_RETENTION_SECONDS = 86_400


SEEN_SK = "SEEN"


def seen_pk(name: str) -> str:
    """The partition of a Kinesis shard's recent changes (``name``: its stream's ARN and shard id)."""
    return f"SEEN#{name}"


def lag_pk(table: str) -> str:
    """The partition of a table's lag reports (a shard's item at most once a minute, only while behind)."""
    return f"LAG#{table}"


class DynamoStatsStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    # -- writes ---------------------------------------------------------------------------
    def save_segment(self, snapshot: SegmentSnapshot, expires_at: int, bucket: int = 0) -> None:
        """Overwrite the segment's snapshot with what the carried state counted. A failed attempt may have
        stored more (records later retried, or dead-lettered: redrive must then find them uncovered);
        the state that carries on is the truth, so it overwrites whatever the stored sequence. The one
        exception: a snapshot written when its segment was done, and whose ranges share no record with
        this segment's, was written by another instance of that Lambda window (a window start opened
        again with a fresh state): both stand (``IdentityTaken``), and count apart. One that shares
        records is this segment's own (a retried invocation, or the same records read again by a new
        event source mapping): it is overwritten, as any other."""
        item = to_item(snapshot, expires_at, bucket)
        try:
            self._table.put_item(
                Item=item,
                ConditionExpression="attribute_not_exists(pk) OR instance_closed = :open",
                ExpressionAttributeValues={":open": False},
            )
            return
        except ClientError as error:
            if not is_conditional_check_failure(error):
                raise
        stored = self._table.get_item(Key={"pk": item["pk"], "sk": item["sk"]}, ConsistentRead=True).get("Item")
        if stored is not None and not ranges_overlap(stored_ranges(stored), snapshot.ranges):
            raise IdentityTaken(f"{item['pk']} {item['sk']} is a closed window instance's")
        self._table.put_item(Item=item)

    def save_lag(self, report: LagReport) -> None:
        self._table.put_item(
            Item={
                "pk": lag_pk(report.table),
                "sk": report.shard_id,
                "behind": stored_seconds(report.behind),
                "at": stored_seconds(report.at),
                "expires_at": int(report.at) + LAG_RETENTION_SECONDS,
            }
        )

    def save_seen(self, name: str, data: bytes, expires_at: int) -> None:
        """A Kinesis shard's recent changes: one item per shard, written at each window's end (its own
        partition key, so no shard's item is another's hot key), binary: a write unit per KB of them."""
        self._table.put_item(Item={"pk": seen_pk(name), "sk": SEEN_SK, "changes": data, "expires_at": expires_at})

    def load_seen(self, name: str) -> bytes | None:
        item = self._table.get_item(Key={"pk": seen_pk(name), "sk": SEEN_SK}, ConsistentRead=True).get("Item")
        if item is None:
            return None
        stored = item["changes"]
        if isinstance(stored, Binary):
            return bytes(stored.value)
        if isinstance(stored, bytes | bytearray):
            return bytes(stored)
        raise ValueError(f"{seen_pk(name)}: its changes are not binary")

    def lag_reports(self, table: str) -> list[LagReport]:
        items = self._query(KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": lag_pk(table)})
        return [LagReport(table, str(item["sk"]), float(item["behind"]), float(item["at"])) for item in items]

    # -- layouts --------------------------------------------------------------------------
    def layouts(self) -> list[Layout]:
        return [
            _layout_of(item)
            for item in query_all(
                self._table, KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": LAYOUT_PK}
            )
        ]

    def layout(self, table: str) -> Layout | None:
        item = self._table.get_item(Key={"pk": LAYOUT_PK, "sk": table}).get("Item")
        return _layout_of(item) if item else None

    def save_layout(self, before: Layout | None, after: Layout) -> bool:
        item: dict[str, TableAttributeValueTypeDef] = {
            "pk": LAYOUT_PK,
            "sk": after.table,
            "window_seconds": after.window_seconds,
            "counts": [[start, count] for start, count in after.counts],
        }
        condition = (
            {"ConditionExpression": "attribute_not_exists(pk)"}
            if before is None
            else {
                "ConditionExpression": "#c = :before",
                "ExpressionAttributeNames": {"#c": "counts"},
                "ExpressionAttributeValues": {":before": [[start, count] for start, count in before.counts]},
            }
        )
        try:
            self._table.put_item(Item=item, **condition)
        except ClientError as error:
            if is_conditional_check_failure(error):
                return False
            raise
        return True

    # -- reads ----------------------------------------------------------------------------
    def heads_since(self, table: str, first_window: int, buckets: int) -> list[SegmentSnapshot]:
        """The heads of the table's windows from ``first_window`` on: one Query per bucket (a page per MB).
        The index is eventually consistent: a head written a moment ago may be missing, or older."""
        items: list[dict[str, Any]] = []
        for bucket in range(buckets):
            items += self._query(
                IndexName=HEADS_INDEX,
                KeyConditionExpression="heads_pk = :pk AND heads_sk >= :low",
                ExpressionAttributeValues={":pk": heads_pk(table, bucket), ":low": heads_sk(max(first_window, 0))},
            )
        return _readable(items, from_head_item)

    def latest_window(self, table: str | None = None, buckets: int | None = None) -> int | None:
        """The latest window with a head: of ``table``, or of any watched table."""
        found: list[int] = []
        layouts = {layout.table: layout for layout in self.layouts()} if buckets is None or table is None else {}
        names = [table] if table is not None else sorted(layouts)
        for name in names:
            count = buckets if buckets is not None else _buckets(layouts.get(name), 0)
            for bucket in range(count):
                page = self._table.query(
                    IndexName=HEADS_INDEX,
                    KeyConditionExpression="heads_pk = :pk",
                    ExpressionAttributeValues={":pk": heads_pk(name, bucket)},
                    ScanIndexForward=False,
                    Limit=1,
                )
                found += [int(stored_number(item["window_start"])) for item in page.get("Items", [])]
        return max(found, default=None)

    def tables(self) -> dict[str, int]:
        return {layout.table: layout.window_seconds for layout in self.layouts()}

    def windows(self, table: str, since: int, until: int) -> list[tuple[int, int]]:
        """(start, length) of the table's stored windows starting in [since, until], from their heads."""
        layout = next((found for found in self.layouts() if found.table == table), None)
        found: set[tuple[int, int]] = set()
        for bucket in range(_buckets(layout, since)):
            for item in self._query(
                IndexName=HEADS_INDEX,
                KeyConditionExpression="heads_pk = :pk AND heads_sk BETWEEN :low AND :high",
                ExpressionAttributeValues={
                    ":pk": heads_pk(table, bucket),
                    ":low": heads_sk(max(since, 0)),
                    ":high": f"{until:012d}#\uffff",
                },
                ProjectionExpression="window_start, window_seconds",
            ):
                found.add((int(item["window_start"]), int(item["window_seconds"])))
        for item in self._query(
            KeyConditionExpression="pk = :pk AND sk BETWEEN :low AND :high",
            ExpressionAttributeValues={
                ":pk": RETIRED_CATALOG_PK,
                ":low": f"{max(since, 0):012d}#",
                ":high": f"{until:012d}#\uffff",
            },
        ):
            if item.get("table_name") == table:
                found.add((int(item["window_start"]), int(item["window_seconds"])))
        return sorted(found)

    def window_segments(self, table: str, start: int) -> list[SegmentSnapshot]:
        """Every segment snapshot of a window: its shards from the window-heads index, then their snapshots
        (a BatchGetItem per 100). ``WindowRetired`` if any is in a retired layout (the rest are read first,
        so it names the latest expiry of those)."""
        layout = next((found for found in self.layouts() if found.table == table), None)
        keys: list[dict[str, str]] = []
        for bucket in range(_buckets(layout, start)):
            for item in self._query(
                IndexName=HEADS_INDEX,
                KeyConditionExpression="heads_pk = :pk AND begins_with(heads_sk, :window)",
                ExpressionAttributeValues={":pk": heads_pk(table, bucket), ":window": heads_sk(start)},
                ProjectionExpression="pk, sk",
            ):
                keys.append({"pk": str(item["pk"]), "sk": str(item["sk"])})
        snapshots: list[SegmentSnapshot] = []
        retired = self._retired_layout(table, start)
        for item in self._batch_get(keys):
            try:
                snapshots.append(from_item(item))
            except EncodingRetired:
                retired.append(int(item["expires_at"]))
        if retired:
            raise WindowRetired(RetiredWindow(table, start, max(retired)))
        return sorted(snapshots, key=lambda snapshot: (snapshot.shard_id, snapshot.origin))

    def _retired_layout(self, table: str, start: int) -> list[int]:
        """The expiry of each snapshot of the window stored in the key layout before §64 (the window is
        then read by neither layout: merged without them its keys would be understated)."""
        listed = self._table.get_item(Key={"pk": RETIRED_CATALOG_PK, "sk": f"{start:012d}#{table}"}).get("Item")
        if not listed:
            return []
        return [
            int(item["expires_at"])
            for partition in range(RETIRED_PARTITIONS)
            for item in self._query(
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": f"SEG#{table}#{start}#{partition}"},
                ProjectionExpression="expires_at",
            )
        ]

    def shard_segments(self, table: str, start: int, shard_id: str) -> list[SegmentSnapshot]:
        """The snapshots one shard stored for a window: one Query (its own partition key)."""
        items = self._query(
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": segment_pk(table, start, shard_id)},
            ConsistentRead=True,
        )
        return _readable(items, from_item)

    def _batch_get(self, keys: list[dict[str, str]]) -> list[dict[str, Any]]:
        client = self._table.meta.client  # the resource's client: plain Python values in and out
        name = self._table.name
        found: list[dict[str, Any]] = []
        unique = list({(key["pk"], key["sk"]): key for key in keys}.values())
        for first in range(0, len(unique), BATCH_GET_KEYS):
            pending: dict[str, Any] = {name: {"Keys": unique[first : first + BATCH_GET_KEYS], "ConsistentRead": True}}
            while pending:
                answer = client.batch_get_item(RequestItems=pending)
                found += answer.get("Responses", {}).get(name, [])
                pending = answer.get("UnprocessedKeys") or {}
        return found

    def _query(self, **kwargs: Any) -> list[dict[str, Any]]:
        return query_all(self._table, **kwargs)


def _buckets(layout: Layout | None, since: int) -> int:
    return layout.most_since(since) if layout is not None else 1


def _layout_of(item: dict[str, Any]) -> Layout:
    counts = tuple((int(start), int(count)) for start, count in item.get("counts") or [[0, 1]])
    return Layout(str(item["sk"]), int(item["window_seconds"]), counts)


def _readable(
    items: list[dict[str, Any]], decode: Callable[[dict[str, Any]], SegmentSnapshot]
) -> list[SegmentSnapshot]:
    """The Lambdas' reads of stored figures (heads, a shard's snapshots): an item stored before the
    upgrade, in a retired layout, is left out with a warning. Raising would fail the invocation, and
    Lambda would retry it until its records were dead-lettered; left out, it costs what docs/decisions.md
    §55 accepts at such a deploy: the figures the old version had stored of the windows in progress (it
    can be no segment the carried state finished: those were stored by this version)."""
    readable = []
    for item in items:
        try:
            readable.append(decode(item))
        except EncodingRetired:
            logger.warning(
                "stored figures in a retired layout left out",
                extra={"pk": str(item.get("pk", "")), "sk": str(item.get("sk", ""))},
            )
    return readable
