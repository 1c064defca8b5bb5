"""The stats table's items: what a shard persists per window, and how readers merge it.

Key design (see docs/decisions.md §6, §64):

* segment snapshot  PK ``SEG#<table>#<window_start>#<shard>``  SK ``<origin>``
  A whole-segment snapshot, overwritten in place (idempotent). Each shard's snapshots of a window
  have a partition key of their own, so however many shards flush at the same moment (they flush at
  the same epoch-aligned boundaries), no partition key takes more than one shard's writes.
* segment head      (in the snapshot item) ``head``; ``heads_pk`` ``<table>#<bucket>`` (``layout``),
                    ``heads_sk`` ``<window_start:012d>#<shard>#<origin>``
  The snapshot's heaviest ``HEAD_KEYS`` keys of the table and of each index, with their series and
  the item figures of its table keys, its totals, and when it was written: copied by the
  ``window-heads`` index, so the judge reads a table's recent windows, however many shards wrote
  them, with one Query per bucket (``head_of``, docs/decisions.md §49, §64). Readers find a window's
  shards there too (``hotkeys top``).
* layout            PK ``LAYOUT``  SK ``<table>``: the table's head buckets over time (``layout.Layout``),
  and the registry of watched tables.

A snapshot also carries the sequence ranges its segment counted (``ranges_z``): the
fact ``hotkeys redrive`` uses to tell counted records from dead-lettered ones.

Each summary (the table's at the item's top level, each index's under ``indexes``, and the head's) is
stored by ``summary.pack``, the codec the carried state uses too.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from hotkeys.detector.consumer.layout import heads_pk
from hotkeys.detector.consumer.state import Segment, decode_ranges, encode_ranges, padded_sequence, ranges_cover
from hotkeys.detector.domain import summary
from hotkeys.detector.domain.health import Health
from hotkeys.detector.domain.items import SNAPSHOT_ITEM_KEYS, ItemStats, decode_aligned, encode_aligned, merged
from hotkeys.detector.domain.summary import Counting, Entry, Summary

LAYOUT_PK = "LAYOUT"
# Keys per summary in a segment's head: what the judge merges across a window's segments. A key
# left out of a head weighs at most that head's ``pruned`` there (the cut is added to it).
HEAD_KEYS = 32
# Encoded bytes of all of a head's summaries together (what the window-heads index copies per write).
HEAD_BYTES = 16_000
# Table keys whose item figures a head carries (hot item or hot collection, in the judge's alerts).
HEAD_ITEM_KEYS = 8


def segment_pk(table: str, start: int, shard_id: str) -> str:
    """The partition key of one shard's snapshots of one window."""
    return f"SEG#{table}#{start}#{shard_id}"


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
    # When it was written (the consumer's clock): how the judge tells a shard that went quiet.
    written_at: float = 0.0
    # Head only: the bytes of its summaries as stored (what its window-heads index entry weighs).
    head_bytes: int = 0
    # Final, and written before its window's end: its shard ended (nothing more will come from it).
    closed_early: bool = False
    # The items its writes left (domain.health); not in heads (the judge does not read it).
    health: Health = field(default_factory=Health)

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


@dataclass(frozen=True, slots=True)
class Written:
    """How a snapshot is written (``SegmentSnapshot``'s fields of the same names): ``at`` the consumer's
    clock, ``final`` its segment done, ``closed_early`` done before its window's end (its shard ended)."""

    at: float = 0.0
    final: bool = False
    closed_early: bool = False


# A snapshot made to be read, not stored (``hotkeys watch``, tests).
UNWRITTEN = Written()


def snapshot_of(
    segment: Segment, shard_id: str, window_seconds: int, counting: Counting, written: Written = UNWRITTEN
) -> SegmentSnapshot:
    """The segment as stored: each summary's ``counting.capacity`` heaviest keys."""
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
        final=written.final,
        written_at=written.at,
        closed_early=written.closed_early,
        health=segment.health.copy(),
    )


def _heaviest_items(
    entries: dict[str, summary.Entry], items: dict[str, ItemStats], limit: int = SNAPSHOT_ITEM_KEYS
) -> dict[str, ItemStats]:
    if not items:
        return {}
    ranked = sorted((key for key in entries if key in items), key=lambda key: (-entries[key].wcu, key))
    return {key: items[key] for key in ranked[:limit]}


def heads_sk(start: int, shard_id: str = "", origin: str = "") -> str:
    """A head's sort key in the window-heads index; with no shard, the prefix of a window's heads."""
    return f"{start:012d}#{shard_id}#{origin}" if shard_id else f"{start:012d}#"


def head_of(snapshot: SegmentSnapshot) -> SegmentSnapshot:
    """The snapshot as the judge reads it across a window: its totals, each summary's heaviest
    ``HEAD_KEYS`` keys within an equal share of ``HEAD_BYTES`` (the bound on the rest added to its
    ``pruned``), and the item figures of its ``HEAD_ITEM_KEYS`` heaviest table keys; no ranges."""
    allotment = HEAD_BYTES // (1 + len(snapshot.indexes))
    own = snapshot.summary.compact(HEAD_KEYS, allotment)
    return replace(
        snapshot,
        summary=own,
        indexes={name: index.compact(HEAD_KEYS, allotment) for name, index in snapshot.indexes.items()},
        ranges=[],
        items=_heaviest_items(own.entries, snapshot.items, HEAD_ITEM_KEYS),
    )


def _head_item(snapshot: SegmentSnapshot) -> dict[str, Any]:
    head = head_of(snapshot)
    packed = summary.pack(head.summary)
    indexes = {name: summary.pack(index) for name, index in head.indexes.items()}
    items = encode_aligned(head.summary.entries, head.items) if head.items else None
    weight = sum(len(part["entries_z"]) + len(name) + 64 for name, part in (("", packed), *indexes.items()))
    item: dict[str, Any] = {
        "origin": head.origin,
        "ttl_deletes": head.ttl_deletes,
        "first_event": head.first_event,
        "last_event": head.last_event,
        "bucket_seconds": head.alert_min_span_seconds,
        "written_at": Decimal(str(round(head.written_at, 3))),
        "bytes": weight + (len(items) if items else 0),
        "closed_early": head.closed_early,
        **packed,
    }
    if indexes:
        item["indexes"] = indexes
    if items:
        item["items_z"] = items
    if head.has_sort_key:
        item["has_sort_key"] = True
    if head.has_local_indexes:
        item["pinned"] = True
    return item


def from_head_item(item: dict[str, Any]) -> SegmentSnapshot:
    """A segment's head as the window-heads index returns it (``head_of``'s figures)."""
    head = item["head"]
    # (a head is read to be merged, never counted into: its summaries are not sized)
    table = summary.unpack(head, sized=False)
    items = head.get("items_z")
    return SegmentSnapshot(
        table=str(item["table_name"]),
        window_start=int(item["window_start"]),
        window_seconds=int(item["window_seconds"]),
        shard_id=str(item["shard_id"]),
        origin=str(head["origin"]),
        first_sequence="",
        last_sequence="",
        summary=table,
        ttl_deletes=int(head["ttl_deletes"]),
        first_event=int(head["first_event"]),
        last_event=int(head["last_event"]),
        alert_min_span_seconds=int(head["bucket_seconds"]),
        indexes={str(name): summary.unpack(index, sized=False) for name, index in (head.get("indexes") or {}).items()},
        has_sort_key=bool(head.get("has_sort_key", False)),
        has_local_indexes=bool(head.get("pinned", False)),
        items=decode_aligned(table.entries, _binary(items)) if items is not None else {},
        final=bool(item["instance_closed"]),
        written_at=float(head.get("written_at", 0)),
        head_bytes=int(head.get("bytes", 0)),
        closed_early=bool(head.get("closed_early", False)),
    )


def _binary(value: Any) -> bytes:
    return bytes(value.value) if hasattr(value, "value") else bytes(value)


def to_item(snapshot: SegmentSnapshot, expires_at: int, bucket: int = 0) -> dict[str, Any]:
    """The snapshot as a boto3 resource-style item (plain Python values); ``from_item`` reads it back.
    ``bucket``: its head's bucket of the window-heads index (``layout.Layout.bucket_of``).

    Stored names that are not the field's (the stored ones stay, so stored snapshots read as they are):
    ``hwm`` is ``last_sequence`` (zero-padded); ``sk`` is ``origin``;
    ``bucket_seconds`` (here and in ``head``) is ``alert_min_span_seconds``;
    ``pinned`` is ``has_local_indexes``; ``instance_closed`` is ``final``; ``ranges_z`` and ``items_z``
    are ``ranges`` and ``items``, compressed; the table's summary is ``summary.pack``'s attributes at the
    item's top level."""
    item = {
        "pk": segment_pk(snapshot.table, snapshot.window_start, snapshot.shard_id),
        "sk": snapshot.origin,
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
        "heads_pk": heads_pk(snapshot.table, bucket),
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
    if snapshot.health.written:
        item["health"] = json.dumps(snapshot.health.to_json(), separators=(",", ":"))
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
        origin=str(item["sk"]),
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
        health=Health.from_json(json.loads(str(item["health"]))) if "health" in item else Health(),
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
    # The table's figures only: the items its writes left, merged over its segments.
    health: Health = field(default_factory=Health)

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

    def bound(self, key: str) -> int:
        """``rules.Figures``: every key's bound is the window's ``error_bound`` (full snapshots, not heads)."""
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
        health=merged_health(snapshots) if index is None else Health(),
    )


def merged_health(snapshots: list[SegmentSnapshot]) -> Health:
    """The items the snapshots' writes left, merged (a window's, over its shards)."""
    merged_health = Health()
    for snap in snapshots:
        merged_health.merge(snap.health)
    return merged_health


def _merged_items(snapshots: list[SegmentSnapshot]) -> dict[str, ItemStats]:
    parts: dict[str, list[ItemStats]] = {}
    for snap in snapshots:
        for key, stats in snap.items.items():
            parts.setdefault(key, []).append(stats)
    return {key: merged(stats) for key, stats in parts.items()}


def index_names(snapshots: list[SegmentSnapshot]) -> list[str]:
    """The global secondary indexes any of these segments counted, by name."""
    return sorted({name for snap in snapshots for name in snap.indexes})
