"""The stats table's items: what a shard persists per window, and how readers merge it.

Key design (see docs/decisions.md §6):

* segment snapshot  PK ``SEG#<table>#<window_start>#<stats_partition>``  SK ``<shard>#<origin>``
  A whole-segment snapshot, overwritten in place (idempotent). ``stats_partition`` (``stats_partition_of``
  its shard) spreads the shards of one window over ``STATS_PARTITIONS`` partition keys, so the detector's
  own writes never concentrate on one partition; a window is read with that many Queries. (Not a
  burst bucket: those are ``alert_min_span_seconds`` of event time, ``summary.Entry.bump``.)
* catalog           PK ``CATALOG``  SK ``<window_start:012d>#<table>``
  Written once per segment, so readers find the windows of a time range in one Query.
* segment head      (in the snapshot item) ``head``; ``heads_pk`` ``<table>``,
                    ``heads_sk`` ``<window_start:012d>#<shard>#<origin>``
  The snapshot's heaviest ``HEAD_KEYS`` keys of the table and of each index, with their series,
  and its totals: copied by the ``window-heads`` index, so the alert desk reads a window (or a
  few consecutive ones), however many shards wrote it, with one Query (``head_of``,
  docs/decisions.md §49).

A snapshot also carries the sequence ranges its segment counted (``ranges_z``): the
fact ``hotkeys redrive`` uses to tell counted records from dead-lettered ones.

Each summary (the table's at the item's top level, each index's under ``indexes``, and the head's) is
stored by ``summary.pack``, the codec the carried state uses too.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace
from typing import Any

from hotkeys.detector import summary
from hotkeys.detector.items import SNAPSHOT_ITEM_KEYS, ItemStats, decode_aligned, encode_aligned, merged
from hotkeys.detector.state import Segment, decode_ranges, encode_ranges, padded_sequence, ranges_cover
from hotkeys.detector.summary import Counting, Entry, Summary

STATS_PARTITIONS = 8
CATALOG_PK = "CATALOG"
# Keys per summary in a segment's head: what the alert desk merges across a window's segments. A key
# left out of a head weighs at most that head's ``pruned`` there (the cut is added to it).
HEAD_KEYS = 32
# Encoded bytes of all of a head's summaries together (what the window-heads index copies per write).
HEAD_BYTES = 16_000
# Incident marks per head (16 hex characters each, ``state.mark_of``).
HEAD_MARKS = 64
MARK_CHARS = 16


def stats_partition_of(shard_id: str) -> int:
    """Which of the ``STATS_PARTITIONS`` partition keys of a window a shard's snapshots are stored under."""
    return zlib.crc32(shard_id.encode("utf-8")) % STATS_PARTITIONS


def segment_pk(table: str, start: int, stats_partition: int) -> str:
    return f"SEG#{table}#{start}#{stats_partition}"


def catalog_sk(start: int, table: str) -> str:
    return f"{start:012d}#{table}"


@dataclass(frozen=True)
class SegmentSnapshot:
    """A segment as stored: its identity, its summaries (the table's and each counted index's, as
    ``compact`` left them), its coverage and its event times."""

    table: str
    window_start: int
    window_seconds: int
    shard_id: str
    origin: str
    first_sequence: str
    last_sequence: str
    summary: Summary
    ttl_deletes: int
    first_event: int
    last_event: int
    # The length of the keys' burst buckets (``summary.Entry.bump``).
    alert_min_span_seconds: int
    ranges: list[list[int]] = field(default_factory=list)
    indexes: dict[str, Summary] = field(default_factory=dict)
    has_sort_key: bool = False
    has_local_indexes: bool = False  # the table has local secondary indexes (items.verdict)
    # Item figures of the heaviest keys (at most items.SNAPSHOT_ITEM_KEYS).
    items: dict[str, ItemStats] = field(default_factory=dict)
    # Written when its segment was done (sealed, completed, or at its Lambda window's end): another
    # instance of that Lambda window never writes over it unless they share records (IdentityTaken).
    final: bool = False
    # Head only: the incidents this segment's shard had handled in the window when it wrote the head
    # (``head_marks``): another shard that finds one of them hot skips its incident writes.
    marks: tuple[str, ...] = ()

    @property
    def stats_partition(self) -> int:
        """The stats-table partition this snapshot is stored under (``stats_partition_of`` its shard)."""
        return stats_partition_of(self.shard_id)

    def covers(self, sequence: int) -> bool:
        """Whether the invocations behind this snapshot folded this record (counted or skipped as bad)."""
        return ranges_cover(self.ranges, sequence)


@dataclass(frozen=True)
class RetiredWindow:
    """A stored window of a table holding snapshots in a layout this version does not read
    (``summary.EncodingRetired``: written before an upgrade, kept until they expire). Its figures
    cannot be merged without them, so readers leave the window out whole."""

    table: str
    window_start: int
    # The latest expiry (the items' ``expires_at``, epoch seconds) of its unreadable snapshots.
    expires_at: int


class WindowRetired(summary.EncodingRetired):
    """Reading a window found snapshots in a retired layout (``RetiredWindow``)."""

    def __init__(self, window: RetiredWindow) -> None:
        super().__init__(f"{window.table} at {window.window_start}: stored by an earlier version of the detector")
        self.window = window


class IdentityTaken(RuntimeError):
    """A segment's name is held by the final snapshot of an earlier instance of its Lambda window: the
    segment must take the next generation."""


def snapshot_of(
    segment: Segment,
    shard_id: str,
    window_seconds: int,
    counting: Counting,
    final: bool = False,
    marks: tuple[str, ...] = (),
) -> SegmentSnapshot:
    """The segment as stored: each summary's ``counting.capacity`` heaviest keys; ``marks``: what its
    head carries of the shard's handled incidents (``head_marks``)."""
    own = segment.summary.compact(counting.capacity)
    return SegmentSnapshot(
        table=segment.table,
        window_start=segment.window_start,
        window_seconds=window_seconds,
        shard_id=shard_id,
        origin=segment.origin,
        first_sequence=segment.first_sequence,
        last_sequence=str(segment.last_sequence),
        summary=own,
        ttl_deletes=segment.ttl_deletes,
        first_event=segment.first_event,
        last_event=segment.last_event,
        alert_min_span_seconds=counting.alert_min_span_seconds,
        ranges=[list(pair) for pair in segment.ranges],
        indexes={name: index.compact(counting.capacity) for name, index in segment.indexes.items()},
        has_sort_key=segment.has_sort_key,
        has_local_indexes=segment.has_local_indexes,
        items=_heaviest_items(own.entries, segment.items),
        final=final,
        marks=marks,
    )


def head_marks(notified: dict[str, int], window_start: int) -> tuple[str, ...]:
    """The incidents a head of ``window_start`` carries: the shard's marks (``state.mark_of``: handled
    in that window, ``ShardState.notified``) of that window only, at most ``HEAD_MARKS``. A mark of
    another window would tell readers an incident was marked hot in this one when it was not; a mark
    left out costs a reader one request. Entries that are not plain marks (a name with a suffix, such
    as the desk's "claimed by another shard, not yet published") are never carried."""
    found = sorted(mark for mark, window in notified.items() if window == window_start and _plain(mark))
    return tuple(found[:HEAD_MARKS])


def _plain(mark: str) -> bool:
    return len(mark) == MARK_CHARS and all(char in "0123456789abcdef" for char in mark)


def _heaviest_items(entries: dict[str, summary.Entry], items: dict[str, ItemStats]) -> dict[str, ItemStats]:
    if not items:
        return {}
    ranked = sorted((key for key in entries if key in items), key=lambda key: (-entries[key].wcu, key))
    return {key: items[key] for key in ranked[:SNAPSHOT_ITEM_KEYS]}


def heads_sk(start: int, shard_id: str = "", origin: str = "") -> str:
    """A head's sort key in the window-heads index; with no shard, the prefix of a window's heads."""
    return f"{start:012d}#{shard_id}#{origin}" if shard_id else f"{start:012d}#"


def head_of(snapshot: SegmentSnapshot) -> SegmentSnapshot:
    """The snapshot as the alert desk reads it across a window: its totals, and each summary's heaviest
    ``HEAD_KEYS`` keys within an equal share of ``HEAD_BYTES`` (the bound on the rest added to its
    ``pruned``); no ranges, no item figures."""
    allotment = HEAD_BYTES // (1 + len(snapshot.indexes))
    return replace(
        snapshot,
        summary=snapshot.summary.compact(HEAD_KEYS, allotment),
        indexes={name: index.compact(HEAD_KEYS, allotment) for name, index in snapshot.indexes.items()},
        ranges=[],
        items={},
    )


def _head_item(snapshot: SegmentSnapshot) -> dict[str, Any]:
    head = head_of(snapshot)
    item: dict[str, Any] = {
        "origin": head.origin,
        "ttl_deletes": head.ttl_deletes,
        "first_event": head.first_event,
        "last_event": head.last_event,
        "bucket_seconds": head.alert_min_span_seconds,
        **summary.pack(head.summary),
    }
    if head.indexes:
        item["indexes"] = {name: summary.pack(index) for name, index in head.indexes.items()}
    if head.marks:
        item["marks"] = list(head.marks)
    return item


def from_head_item(item: dict[str, Any]) -> SegmentSnapshot:
    """A segment's head as the window-heads index returns it (``head_of``'s figures)."""
    head = item["head"]
    return SegmentSnapshot(
        table=str(item["table_name"]),
        window_start=int(item["window_start"]),
        window_seconds=int(item["window_seconds"]),
        shard_id=str(item["shard_id"]),
        origin=str(head["origin"]),
        first_sequence="",
        last_sequence="",
        summary=summary.unpack(head),
        ttl_deletes=int(head["ttl_deletes"]),
        first_event=int(head["first_event"]),
        last_event=int(head["last_event"]),
        alert_min_span_seconds=int(head["bucket_seconds"]),
        indexes={str(name): summary.unpack(index) for name, index in (head.get("indexes") or {}).items()},
        final=bool(item["instance_closed"]),
        marks=tuple(str(mark) for mark in head.get("marks") or ()),
    )


def _binary(value: Any) -> bytes:
    return bytes(value.value) if hasattr(value, "value") else bytes(value)


def to_item(snapshot: SegmentSnapshot, expires_at: int) -> dict[str, Any]:
    """The snapshot as a boto3 resource-style item (plain Python values); ``from_item`` reads it back.

    Stored names that are not the field's (the stored ones stay, so stored snapshots read as they are):
    ``pk``'s last part is ``stats_partition``; ``hwm`` is ``last_sequence`` (zero-padded); ``sk`` is
    ``<shard_id>#<origin>``; ``bucket_seconds`` (here and in ``head``) is ``alert_min_span_seconds``;
    ``pinned`` is ``has_local_indexes``; ``instance_closed`` is ``final``; ``ranges_z`` and ``items_z``
    are ``ranges`` and ``items``, compressed; the table's summary is ``summary.pack``'s attributes at the
    item's top level."""
    item = {
        "pk": segment_pk(snapshot.table, snapshot.window_start, snapshot.stats_partition),
        "sk": f"{snapshot.shard_id}#{snapshot.origin}",
        "table_name": snapshot.table,
        "window_start": snapshot.window_start,
        "window_seconds": snapshot.window_seconds,
        "shard_id": snapshot.shard_id,
        "first_sequence": snapshot.first_sequence,
        "hwm": padded_sequence(snapshot.last_sequence),
        "ttl_deletes": snapshot.ttl_deletes,
        "first_event": snapshot.first_event,
        "last_event": snapshot.last_event,
        **summary.pack(snapshot.summary),
        "ranges_z": zlib.compress(encode_ranges(snapshot.ranges).encode("ascii")),
        "expires_at": expires_at,
        "heads_pk": snapshot.table,
        "heads_sk": heads_sk(snapshot.window_start, snapshot.shard_id, snapshot.origin),
        "head": _head_item(snapshot),
        "bucket_seconds": snapshot.alert_min_span_seconds,
        # Whether another instance of its Lambda window may write over it (see ``SegmentSnapshot.final``).
        "instance_closed": snapshot.final,
    }
    if snapshot.indexes:
        item["indexes"] = {name: summary.pack(index) for name, index in snapshot.indexes.items()}
    if snapshot.has_sort_key:
        item["has_sort_key"] = True
    if snapshot.has_local_indexes:
        item["pinned"] = True
    if snapshot.items:
        item["items_z"] = encode_aligned(snapshot.summary.entries, snapshot.items)
    return item


def stored_ranges(item: dict[str, Any]) -> list[list[int]]:
    """The sequence ranges a stored snapshot counted (without decoding its summaries)."""
    return decode_ranges(zlib.decompress(_binary(item["ranges_z"])).decode("ascii"))


def from_item(item: dict[str, Any]) -> SegmentSnapshot:
    table = summary.unpack(item)
    items = item.get("items_z")
    return SegmentSnapshot(
        table=str(item["table_name"]),
        window_start=int(item["window_start"]),
        window_seconds=int(item["window_seconds"]),
        shard_id=str(item["shard_id"]),
        origin=str(item["sk"])[len(str(item["shard_id"])) + 1 :],  # the sort key is "<shard>#<origin>"
        first_sequence=str(item["first_sequence"]),
        last_sequence=str(item["hwm"]).lstrip("0") or "0",
        summary=table,
        ttl_deletes=int(item["ttl_deletes"]),
        first_event=int(item["first_event"]),
        last_event=int(item["last_event"]),
        alert_min_span_seconds=int(item["bucket_seconds"]),
        ranges=stored_ranges(item),
        indexes={str(name): summary.unpack(index) for name, index in (item.get("indexes") or {}).items()},
        has_sort_key=bool(item.get("has_sort_key", False)),
        has_local_indexes=bool(item.get("pinned", False)),
        items=decode_aligned(table.entries, _binary(items)) if items is not None else {},
        final=bool(item["instance_closed"]),
    )


@dataclass(frozen=True)
class WindowFigures:
    """A table's (or one index's) figures in one window, merged over all its shards' segments: a view over
    the merged ``summary.Summary`` (its entries, ``pruned``, writes and write units) with the window's
    identity and the few facts that are the window's, not the summary's. Per-key figures are the
    summary's entries (``ranked``), never a second copy."""

    table: str
    window_start: int
    window_seconds: int
    summary: Summary  # merged over the window's segments (``summary.merged``)
    ttl_deletes: int = 0
    last_event: int = 0  # the latest event time any of its segments has seen
    index: str | None = None  # a global secondary index's figures (None: the table's own)
    has_sort_key: bool = False
    has_local_indexes: bool = False  # the table has local secondary indexes (``items.verdict``)
    items: dict[str, ItemStats] = field(default_factory=dict)  # merged item figures of the heaviest keys
    alert_min_span_seconds: int = 0  # the length of the keys' burst buckets (their peak is per bucket)
    # Index figures only: some of the window's segments did not count the index (it was created
    # during the window), so its figures miss their part.
    partial: bool = False

    @property
    def entries(self) -> dict[str, Entry]:
        return self.summary.entries

    @property
    def writes(self) -> int:
        return self.summary.writes

    @property
    def wcu(self) -> int:
        return self.summary.wcu

    @property
    def error_bound(self) -> int:
        """The summary's ``pruned``: how far below its true write units a listed key's count may be, and
        the most an unlisted key can have written in the window."""
        return self.summary.pruned

    def ranked(self) -> list[tuple[str, Entry]]:
        """The merged entries as (key, entry), heaviest first (write units, then key)."""
        return sorted(self.summary.entries.items(), key=lambda pair: (-pair[1].wcu, pair[0]))


def merge_window(snapshots: list[SegmentSnapshot], index: str | None = None) -> WindowFigures:
    """A window's figures over its segments: the table's, or one of its indexes' (``index``)."""
    if not snapshots:
        raise ValueError("no snapshots to merge")
    first = snapshots[0]
    parts = (
        [snap.summary for snap in snapshots]
        if index is None
        else [snap.indexes[index] for snap in snapshots if index in snap.indexes]
    )
    return WindowFigures(
        table=first.table,
        window_start=first.window_start,
        window_seconds=first.window_seconds,
        summary=summary.merged(parts),
        ttl_deletes=sum(snap.ttl_deletes for snap in snapshots) if index is None else 0,
        last_event=max(snap.last_event for snap in snapshots),
        index=index,
        partial=index is not None and len(parts) < len(snapshots),
        has_sort_key=index is None and any(snap.has_sort_key for snap in snapshots),
        has_local_indexes=index is None and any(snap.has_local_indexes for snap in snapshots),
        items=_merged_items(snapshots) if index is None else {},
        alert_min_span_seconds=max(snap.alert_min_span_seconds for snap in snapshots),
    )


def _merged_items(snapshots: list[SegmentSnapshot]) -> dict[str, ItemStats]:
    parts: dict[str, list[ItemStats]] = {}
    for snap in snapshots:
        for key, stats in snap.items.items():
            parts.setdefault(key, []).append(stats)
    return {key: merged(stats) for key, stats in parts.items()}


def index_names(snapshots: list[SegmentSnapshot]) -> list[str]:
    """The global secondary indexes any of these segments counted, by name."""
    return sorted({name for snap in snapshots for name in snap.indexes})
