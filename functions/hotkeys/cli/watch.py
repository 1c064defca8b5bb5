"""``hotkeys watch``: a live top-keys view of a table's stream, read from your machine.

It follows every open shard (parents before children), folds records with the same
parsing, sizing and summary code as the Lambda, and shows the current windows' hottest
keys in the top-keys table's rows (``top.TopRow``), hottest first: the key's rate (and the most it can
be) and its share of the partition limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hotkeys.cli.common import partial_images_warning
from hotkeys.cli.rows import TopRow
from hotkeys.cli.top import hottest_first, key_row
from hotkeys.detector.adapters.key_schema import PartitionKeyResolver
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.snapshots import SegmentSnapshot, index_names, merge_window, snapshot_of
from hotkeys.detector.consumer.state import ShardState
from hotkeys.detector.domain.indexes import IndexSpec, specs_from_description
from hotkeys.detector.domain.records import MalformedRecord, parse_change
from hotkeys.detector.domain.summary import Counting
from hotkeys.emulator.streams import EMPTY_PAGES_LIMIT, ShardCursor, lineage_order, list_shards, stream_arn_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient
    from mypy_boto3_dynamodbstreams.literals import ShardIteratorTypeType
    from mypy_boto3_dynamodbstreams.type_defs import RecordTypeDef


class StreamWatcher:
    def __init__(
        self,
        dynamodb: DynamoDBClient,
        streams: DynamoDBStreamsClient,
        table: str,
        settings: Settings,
        start: ShardIteratorTypeType = "LATEST",
    ) -> None:
        self._streams = streams
        self._settings = settings
        self._start = start
        description = dynamodb.describe_table(TableName=table)
        self.arn = stream_arn_of(description["Table"], table)
        # The Lambda's own resolver: the chosen attribute, else the only key attribute, else the HASH
        # key of this description.
        self._resolve_key = PartitionKeyResolver(settings.partition_key_attribute, lambda _table: description)
        # The table's global secondary indexes, counted as the function counts them.
        self._indexes: tuple[IndexSpec, ...] = (
            specs_from_description(description, settings.proposals) if settings.count_indexes else ()
        )
        self._cursors: dict[str, ShardCursor] = {}
        self._states: dict[str, ShardState] = {}
        self.records = 0
        self.malformed = 0
        # Records without item images (a KEYS_ONLY, NEW_IMAGE or OLD_IMAGE stream): sizes are lower estimates.
        self.without_images = 0

    def _refresh_shards(self) -> list[ShardCursor]:
        for shard in lineage_order(list_shards(self._streams, self.arn)):
            if shard["ShardId"] not in self._cursors:
                self._cursors[shard["ShardId"]] = ShardCursor(shard["ShardId"], shard.get("ParentShardId"))
        return list(self._cursors.values())

    def poll(self) -> int:
        """One GetRecords per readable shard; returns how many records were read."""
        read = 0
        for cursor in self._refresh_shards():
            parent = self._cursors.get(cursor.parent_id or "")
            if cursor.closed or (parent is not None and not parent.closed):
                continue
            # (an open shard has no iterator only before its first read: a closed one was skipped above)
            if cursor.iterator is None:
                # Children of a shard we followed start at their beginning, so nothing is skipped.
                kind = "TRIM_HORIZON" if parent is not None else self._start
                cursor.iterator = self._streams.get_shard_iterator(
                    StreamArn=self.arn, ShardId=cursor.shard_id, ShardIteratorType=kind
                )["ShardIterator"]
                cursor.started = True
            response = self._streams.get_records(ShardIterator=cursor.iterator, Limit=1000)
            cursor.iterator = response.get("NextShardIterator")
            cursor.closed = cursor.iterator is None
            raws = response.get("Records", [])
            cursor.empty_pages = 0 if raws else cursor.empty_pages + 1
            read += self._fold(cursor.shard_id, raws)
        self.records += read
        return read

    def caught_up(self) -> bool:
        """Every readable shard is closed or answered EMPTY_PAGES_LIMIT empty pages in a row.

        One empty page is not the end: GetRecords may answer one where the shard holds more
        records (see ``streams.EMPTY_PAGES_LIMIT``). A child waits for its parent to close.
        """
        for cursor in self._cursors.values():
            parent = self._cursors.get(cursor.parent_id or "")
            if cursor.closed or (parent is not None and not parent.closed):
                continue
            if not cursor.started or cursor.empty_pages < EMPTY_PAGES_LIMIT:
                return False
        return True

    def _fold(self, shard_id: str, raws: list[RecordTypeDef]) -> int:
        from hotkeys.emulator.events import shape_stream_record

        state = self._states.setdefault(shard_id, ShardState())
        specs = self._indexes
        names = tuple(spec.name for spec in specs if not spec.local)
        for raw in raws:
            try:
                change = parse_change(shape_stream_record(raw, self.arn), self._resolve_key, None, lambda _t: specs)
            except MalformedRecord:
                self.malformed += 1
                continue
            self.without_images += change.partial
            if change.sequence > state.high_water:
                state.apply(change, self._settings.window_seconds, Counting.of(self._settings), names)
        return len(raws)

    def rows(self, limit: int, windows: int = 1) -> list[TopRow]:
        """The hottest keys of the latest windows, merged over shards as `top` merges them."""
        settings = self._settings
        by_window: dict[tuple[int, str], list[SegmentSnapshot]] = {}
        for shard_id, state in self._states.items():
            for (table, start), segment in state.segments.items():
                snapshot = snapshot_of(segment, shard_id, settings.window_seconds, Counting.of(settings))
                by_window.setdefault((start, table), []).append(snapshot)
        latest = sorted(by_window)[-windows:]
        figures = [merge_window(by_window[pair], index) for pair in latest for index in _views(by_window[pair])]
        # The windows are still open: rates run to the latest record read, not the window's end.
        rows = [key_row(window, key, entry) for window in figures for key, entry in window.ranked()]
        rows.sort(key=hottest_first)
        return rows[:limit]


def images_warning(watcher: StreamWatcher) -> str | None:
    """The warning for records that lack an item image, or None."""
    if not watcher.without_images:
        return None
    return partial_images_warning(watcher.without_images, watcher.records, " read")


def _views(snapshots: list[SegmentSnapshot]) -> list[str | None]:
    """The table's figures, then each counted index's."""
    return [None, *index_names(snapshots)]
