"""The stats table's items: what a shard persists per window, and how readers merge it.

Key design (see docs/decisions.md):

* segment snapshot  PK ``SEG#<table>#<window_start>#<bucket>``  SK ``<shard>#<origin>``
  A whole-segment snapshot, overwritten in place (idempotent). ``bucket`` spreads
  the shards of one window over ``STATS_BUCKETS`` partition keys, so the detector's
  own writes never concentrate on one partition; a window is read with that many Queries.
* catalog           PK ``CATALOG``  SK ``<window_start:012d>#<table>``
  Written once per segment, so readers find the windows of a time range in one Query.
* segment head      (in the snapshot item) ``head``; ``heads_pk`` ``<table>``,
                    ``heads_sk`` ``<window_start:012d>#<shard>#<origin>``
  The snapshot's heaviest ``HEAD_KEYS`` keys of the table and of each index, with their series,
  and its totals: copied by the ``window-heads`` index, so the alert desk reads a window (or a
  few consecutive ones), however many shards wrote it, with one Query (``head_of``,
  docs/decisions.md §34).

A snapshot also carries the sequence ranges its segment counted (``ranges_z``): the
fact ``hotkeys redrive`` uses to tell counted records from dead-lettered ones.
"""

from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass, field
from typing import Any

from hotkeys.detector import summary
from hotkeys.detector.items import SNAPSHOT_ITEM_KEYS, ItemStats, decode_aligned, encode_aligned, merged
from hotkeys.detector.state import IndexTally, Segment, decode_ranges, encode_ranges, padded_sequence, ranges_cover

STATS_BUCKETS = 8
CATALOG_PK = "CATALOG"
# Keys per summary in a segment's head: what the alert desk merges across a window's segments. A key
# left out of a head weighs at most that head's ``pruned`` there (the cut is added to it).
HEAD_KEYS = 32
# Encoded bytes of all of a head's summaries together (what the window-heads index copies per write).
HEAD_BYTES = 16_000
# Incident marks per head (16 hex characters each, ``state.mark_of``).
HEAD_MARKS = 64
MARK_CHARS = 16


def bucket_of(shard_id: str) -> int:
    return zlib.crc32(shard_id.encode("utf-8")) % STATS_BUCKETS


def segment_pk(table: str, start: int, bucket: int) -> str:
    return f"SEG#{table}#{start}#{bucket}"


def catalog_sk(start: int, table: str) -> str:
    return f"{start:012d}#{table}"


@dataclass(frozen=True)
class IndexSnapshot:
    """One global secondary index's figures in a stored segment."""

    writes: int
    wcu: int
    pruned: int
    entries: dict[str, list[int]]


@dataclass(frozen=True)
class SegmentSnapshot:
    table: str
    window_start: int
    window_seconds: int
    shard_id: str
    origin: str
    first_sequence: str
    last_sequence: str
    writes: int
    wcu: int
    ttl_deletes: int
    pruned: int
    first_event: int
    last_event: int
    entries: dict[str, list[int]]
    ranges: list[list[int]] = field(default_factory=list)
    indexes: dict[str, IndexSnapshot] = field(default_factory=dict)
    has_sort_key: bool = False
    pinned: bool = False  # the table has local secondary indexes (items.verdict)
    # Item figures of the heaviest keys (at most items.SNAPSHOT_ITEM_KEYS).
    items: dict[str, ItemStats] = field(default_factory=dict)
    # The length of the keys' burst buckets (summary.bump); 0 when written before they existed.
    bucket_seconds: int = 0
    # Written when its segment was done (sealed, completed, or at its Lambda window's end): another
    # instance of that Lambda window never writes over it unless they share records (IdentityTaken).
    final: bool = False
    # Head only: the incidents this segment's shard had handled in the window when it wrote the head
    # (``head_marks``): another shard that finds one of them hot skips its incident writes.
    marks: tuple[str, ...] = ()

    @property
    def bucket(self) -> int:
        return bucket_of(self.shard_id)

    def covers(self, sequence: int) -> bool:
        """Whether the invocations behind this snapshot folded this record (counted or skipped as bad)."""
        return ranges_cover(self.ranges, sequence)


class IdentityTaken(RuntimeError):
    """A segment's name is held by the final snapshot of an earlier instance of its Lambda window: the
    segment must take the next generation."""


def snapshot_of(
    segment: Segment,
    shard_id: str,
    window_seconds: int,
    capacity: int,
    bucket_seconds: int = 0,
    final: bool = False,
    marks: tuple[str, ...] = (),
) -> SegmentSnapshot:
    """The segment as stored; ``bucket_seconds``: the length of its keys' burst buckets (0: unknown);
    ``marks``: what its head carries of the shard's handled incidents (``head_marks``)."""
    entries, dropped = summary.compact(segment.entries, capacity)
    return SegmentSnapshot(
        table=segment.table,
        window_start=segment.window_start,
        window_seconds=window_seconds,
        shard_id=shard_id,
        origin=segment.origin,
        first_sequence=segment.first_sequence,
        last_sequence=str(segment.last_sequence),
        writes=segment.writes,
        wcu=segment.wcu,
        ttl_deletes=segment.ttl_deletes,
        pruned=segment.pruned + dropped,
        first_event=segment.first_event,
        last_event=segment.last_event,
        entries=entries,
        ranges=[list(pair) for pair in segment.ranges],
        indexes={name: _index_snapshot(tally, capacity) for name, tally in segment.indexes.items()},
        has_sort_key=segment.has_sort_key,
        pinned=segment.pinned,
        items=_heaviest_items(entries, segment.items),
        bucket_seconds=bucket_seconds,
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


def _heaviest_items(entries: dict[str, list[int]], items: dict[str, ItemStats]) -> dict[str, ItemStats]:
    if not items:
        return {}
    ranked = sorted((key for key in entries if key in items), key=lambda key: (-entries[key][summary.WCU], key))
    return {key: items[key] for key in ranked[:SNAPSHOT_ITEM_KEYS]}


def _index_snapshot(tally: IndexTally, capacity: int) -> IndexSnapshot:
    entries, dropped = summary.compact(tally.entries, capacity)
    return IndexSnapshot(writes=tally.writes, wcu=tally.wcu, pruned=tally.pruned + dropped, entries=entries)


def heads_sk(start: int, shard_id: str = "", origin: str = "") -> str:
    """A head's sort key in the window-heads index; with no shard, the prefix of a window's heads."""
    return f"{start:012d}#{shard_id}#{origin}" if shard_id else f"{start:012d}#"


def head_of(snapshot: SegmentSnapshot) -> SegmentSnapshot:
    """The snapshot as the alert desk reads it across a window: its totals, and each summary's heaviest
    ``HEAD_KEYS`` keys within an equal share of ``HEAD_BYTES`` (the bound on the rest added to its
    ``pruned``); no ranges, no item figures."""
    allotment = HEAD_BYTES // (1 + len(snapshot.indexes))
    entries, dropped = summary.compact(snapshot.entries, HEAD_KEYS, allotment)
    indexes = {}
    for name, index in snapshot.indexes.items():
        kept, cut = summary.compact(index.entries, HEAD_KEYS, allotment)
        indexes[name] = IndexSnapshot(index.writes, index.wcu, index.pruned + cut, kept)
    return dataclasses.replace(
        snapshot, entries=entries, pruned=snapshot.pruned + dropped, indexes=indexes, ranges=[], items={}
    )


def _head_item(snapshot: SegmentSnapshot) -> dict[str, Any]:
    head = head_of(snapshot)
    item: dict[str, Any] = {
        "origin": head.origin,
        "writes": head.writes,
        "wcu": head.wcu,
        "ttl_deletes": head.ttl_deletes,
        "pruned": head.pruned,
        "first_event": head.first_event,
        "last_event": head.last_event,
        "bucket_seconds": head.bucket_seconds,
        "entries_z": summary.encode_entries(head.entries),
    }
    if head.indexes:
        item["indexes"] = {name: _index_item(index) for name, index in head.indexes.items()}
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
        writes=int(head["writes"]),
        wcu=int(head["wcu"]),
        ttl_deletes=int(head["ttl_deletes"]),
        pruned=int(head["pruned"]),
        first_event=int(head["first_event"]),
        last_event=int(head["last_event"]),
        entries=summary.decode_entries(_binary(head["entries_z"])),
        indexes={str(name): _index_from_item(index) for name, index in (head.get("indexes") or {}).items()},
        bucket_seconds=int(head.get("bucket_seconds", 0)),
        final=bool(item.get("instance_closed", True)),
        marks=tuple(str(mark) for mark in head.get("marks") or ()),
    )


def _binary(value: Any) -> bytes:
    return bytes(value.value) if hasattr(value, "value") else bytes(value)


def to_item(snapshot: SegmentSnapshot, expires_at: int) -> dict[str, Any]:
    """The snapshot as a boto3 resource-style item (plain Python values)."""
    item = {
        "pk": segment_pk(snapshot.table, snapshot.window_start, snapshot.bucket),
        "sk": f"{snapshot.shard_id}#{snapshot.origin}",
        "table_name": snapshot.table,
        "window_start": snapshot.window_start,
        "window_seconds": snapshot.window_seconds,
        "shard_id": snapshot.shard_id,
        "first_sequence": snapshot.first_sequence,
        "hwm": padded_sequence(snapshot.last_sequence),
        "writes": snapshot.writes,
        "wcu": snapshot.wcu,
        "ttl_deletes": snapshot.ttl_deletes,
        "pruned": snapshot.pruned,
        "first_event": snapshot.first_event,
        "last_event": snapshot.last_event,
        "entry_count": len(snapshot.entries),
        "entries_z": summary.encode_entries(snapshot.entries),
        "ranges_z": zlib.compress(encode_ranges(snapshot.ranges).encode("ascii")),
        "expires_at": expires_at,
        "heads_pk": snapshot.table,
        "heads_sk": heads_sk(snapshot.window_start, snapshot.shard_id, snapshot.origin),
        "head": _head_item(snapshot),
    }
    if snapshot.indexes:
        item["indexes"] = {name: _index_item(index) for name, index in snapshot.indexes.items()}
    if snapshot.has_sort_key:
        item["has_sort_key"] = True
    if snapshot.pinned:
        item["pinned"] = True
    if snapshot.bucket_seconds:
        item["bucket_seconds"] = snapshot.bucket_seconds
    # Always written: a snapshot stored before the attribute existed (no such attribute) was not held
    # to the rule, and counts as finished (from_item).
    item["instance_closed"] = snapshot.final
    if snapshot.items:
        item["items_z"] = encode_aligned(snapshot.entries, snapshot.items)
    return item


def _index_item(index: IndexSnapshot) -> dict[str, Any]:
    return {
        "writes": index.writes,
        "wcu": index.wcu,
        "pruned": index.pruned,
        "entry_count": len(index.entries),
        "entries_z": summary.encode_entries(index.entries),
    }


def _index_from_item(item: dict[str, Any]) -> IndexSnapshot:
    return IndexSnapshot(
        writes=int(item["writes"]),
        wcu=int(item["wcu"]),
        pruned=int(item["pruned"]),
        entries=summary.decode_entries(_binary(item["entries_z"])),
    )


def from_item(item: dict[str, Any]) -> SegmentSnapshot:
    ranges = item.get("ranges_z")
    entries = summary.decode_entries(_binary(item["entries_z"]))
    items = item.get("items_z")
    return SegmentSnapshot(
        table=str(item["table_name"]),
        window_start=int(item["window_start"]),
        window_seconds=int(item["window_seconds"]),
        shard_id=str(item["shard_id"]),
        origin=str(item["sk"])[len(str(item["shard_id"])) + 1 :],  # the sort key is "<shard>#<origin>"
        first_sequence=str(item["first_sequence"]),
        last_sequence=str(item["hwm"]).lstrip("0") or "0",
        writes=int(item["writes"]),
        wcu=int(item["wcu"]),
        ttl_deletes=int(item["ttl_deletes"]),
        pruned=int(item["pruned"]),
        first_event=int(item["first_event"]),
        last_event=int(item["last_event"]),
        entries=entries,
        # Snapshots written before ranges existed cover their first-to-last span.
        ranges=decode_ranges(zlib.decompress(_binary(ranges)).decode("ascii"))
        if ranges is not None
        else [[int(item["first_sequence"]), int(str(item["hwm"]).lstrip("0") or "0")]],
        indexes={str(name): _index_from_item(index) for name, index in (item.get("indexes") or {}).items()},
        has_sort_key=bool(item.get("has_sort_key", False)),
        pinned=bool(item.get("pinned", False)),
        items=decode_aligned(entries, _binary(items)) if items is not None else {},
        bucket_seconds=int(item.get("bucket_seconds", 0)),
        final=bool(item.get("instance_closed", True)),
    )


@dataclass(frozen=True)
class WindowFigures:
    """A table's merged figures for one window, over all its shards' segments."""

    table: str
    window_start: int
    window_seconds: int
    writes: int
    wcu: int
    ttl_deletes: int
    error_bound: int
    keys: list[summary.KeyFigure]
    last_event: int = 0  # the latest event time any of its segments has seen
    index: str | None = None  # a global secondary index's figures (None: the table's own)
    has_sort_key: bool = False
    pinned: bool = False  # the table has local secondary indexes
    items: dict[str, ItemStats] = field(default_factory=dict)  # merged item figures of the heaviest keys
    bucket_seconds: int = 0  # the keys' burst buckets (their peak is per bucket); 0: unknown
    # Index figures only: some of the window's segments did not count the index (it was created
    # during the window), so its figures miss their part.
    partial: bool = False


def merge_window(snapshots: list[SegmentSnapshot], index: str | None = None) -> WindowFigures:
    """A window's figures over its segments: the table's, or one of its indexes' (``index``)."""
    if not snapshots:
        raise ValueError("no snapshots to merge")
    first = snapshots[0]
    if index is None:
        parts = [(snap.entries, snap.pruned, snap.writes, snap.wcu) for snap in snapshots]
    else:
        counted = [snap.indexes[index] for snap in snapshots if index in snap.indexes]
        parts = [(part.entries, part.pruned, part.writes, part.wcu) for part in counted]
    entries, pruned = summary.merge((part[0], part[1]) for part in parts)
    keys = [
        summary.KeyFigure(
            key=key,
            writes=e[summary.WRITES],
            wcu=e[summary.WCU],
            error_bound=pruned,
            first_seen=e[summary.FIRST_SEEN],
            peak_wcu=e[summary.PEAK],
        )
        for key, e in entries.items()
    ]
    keys.sort(key=lambda figure: (-figure.wcu, figure.key))
    return WindowFigures(
        table=first.table,
        window_start=first.window_start,
        window_seconds=first.window_seconds,
        writes=sum(part[2] for part in parts),
        wcu=sum(part[3] for part in parts),
        ttl_deletes=sum(snap.ttl_deletes for snap in snapshots) if index is None else 0,
        error_bound=pruned,
        keys=keys,
        last_event=max(snap.last_event for snap in snapshots),
        index=index,
        partial=index is not None and len(parts) < len(snapshots),
        has_sort_key=index is None and any(snap.has_sort_key for snap in snapshots),
        pinned=index is None and any(snap.pinned for snap in snapshots),
        items=_merged_items(snapshots) if index is None else {},
        bucket_seconds=max(snap.bucket_seconds for snap in snapshots),
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
