"""The stats table (DynamoDB): segment snapshots, the window catalog and alert incidents."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from hotkeys.detector.adapters.stats_schema import HEADS_INDEX, is_conditional_check_failure, query_all
from hotkeys.detector.observability import logger
from hotkeys.detector.snapshots import (
    CATALOG_PK,
    STATS_PARTITIONS,
    IdentityTaken,
    RetiredWindow,
    SegmentSnapshot,
    WindowRetired,
    catalog_sk,
    from_head_item,
    from_item,
    heads_sk,
    segment_pk,
    stats_partition_of,
    stored_ranges,
    to_item,
)
from hotkeys.detector.state import ranges_overlap
from hotkeys.detector.summary import EncodingRetired


class DynamoStatsStore:
    def __init__(self, table: Any) -> None:
        self._table = table

    # -- writes ---------------------------------------------------------------------------
    def save_segment(self, snapshot: SegmentSnapshot, expires_at: int) -> None:
        """Overwrite the segment's snapshot with what the carried state counted. A failed attempt may have
        stored more (records later retried, or dead-lettered: redrive must then find them uncovered);
        the state that carries on is the truth, so it overwrites whatever the stored sequence. The one
        exception: a snapshot written when its segment was done, and whose ranges share no record with
        this segment's, was written by another instance of that Lambda window (a window start opened
        again with a fresh state): both stand (``IdentityTaken``), and count apart. One that shares
        records is this segment's own (a retried invocation, or the same records read again by a new
        event source mapping): it is overwritten, as any other."""
        item = to_item(snapshot, expires_at)
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

    def save_catalog(self, table: str, start: int, window_seconds: int, expires_at: int) -> None:
        self._table.put_item(
            Item={
                "pk": CATALOG_PK,
                "sk": catalog_sk(start, table),
                "table_name": table,
                "window_start": start,
                "window_seconds": window_seconds,
                "expires_at": expires_at,
            }
        )

    # -- reads ----------------------------------------------------------------------------
    def window_segments(self, table: str, start: int) -> list[SegmentSnapshot]:
        """Every segment snapshot of a window. ``WindowRetired`` if any is in a retired layout (the rest
        are read first, so it names the latest expiry of those)."""
        snapshots: list[SegmentSnapshot] = []
        retired: list[int] = []
        for stats_partition in range(STATS_PARTITIONS):
            for item in self._query(
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": segment_pk(table, start, stats_partition)},
            ):
                try:
                    snapshots.append(from_item(item))
                except EncodingRetired:
                    retired.append(int(item["expires_at"]))
        if retired:
            raise WindowRetired(RetiredWindow(table, start, max(retired)))
        return snapshots

    def window_heads(self, table: str, start: int) -> list[SegmentSnapshot]:
        """The heads (``snapshots.head_of``) of every segment of a window, from the window-heads index:
        one Query (a page per MB of heads). The index is eventually consistent: a head written a moment
        ago may be missing, or older, in this answer."""
        return self._heads("heads_pk = :pk AND begins_with(heads_sk, :low)", table, heads_sk(start))

    def heads_between(self, table: str, first: int, last: int) -> list[SegmentSnapshot]:
        """The heads of every segment of the windows starting in [first, last]: one Query."""
        return self._heads(
            "heads_pk = :pk AND heads_sk BETWEEN :low AND :high", table, heads_sk(max(first, 0)), f"{last:012d}#\uffff"
        )

    def _heads(self, condition: str, table: str, low: str, high: str | None = None) -> list[SegmentSnapshot]:
        values = {":pk": table, ":low": low, **({":high": high} if high is not None else {})}
        items = self._query(IndexName=HEADS_INDEX, KeyConditionExpression=condition, ExpressionAttributeValues=values)
        return _readable(items, from_head_item)

    def shard_segments(self, table: str, start: int, shard_id: str) -> list[SegmentSnapshot]:
        """The snapshots one shard stored for a window: one Query (a shard's snapshots share its stats partition)."""
        items = self._query(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :shard)",
            ExpressionAttributeValues={
                ":pk": segment_pk(table, start, stats_partition_of(shard_id)),
                ":shard": f"{shard_id}#",
            },
            ConsistentRead=True,
        )
        return _readable(items, from_item)

    def catalog(self, since: int, until: int) -> list[tuple[int, str, int]]:
        """(window_start, table, window_seconds) of the windows starting in [since, until]."""
        items = self._query(
            KeyConditionExpression="pk = :pk AND sk BETWEEN :low AND :high",
            ExpressionAttributeValues={
                ":pk": CATALOG_PK,
                ":low": f"{max(since, 0):012d}#",
                ":high": f"{until:012d}#\uffff",
            },
        )
        return [(int(i["window_start"]), str(i["table_name"]), int(i["window_seconds"])) for i in items]

    def latest_window(self) -> int | None:
        page = self._table.query(
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": CATALOG_PK},
            ScanIndexForward=False,
            Limit=1,
        )
        items = page.get("Items", [])
        return int(items[0]["window_start"]) if items else None

    def _query(self, **kwargs: Any) -> list[dict[str, Any]]:
        return query_all(self._table, **kwargs)


def _readable(
    items: list[dict[str, Any]], decode: Callable[[dict[str, Any]], SegmentSnapshot]
) -> list[SegmentSnapshot]:
    """The Lambda's reads of stored figures (heads, a shard's snapshots): an item stored before the
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
