"""A shard's in-flight figures, carried between invocations in Lambda's tumbling-window state.

Lambda hands each invocation the state the previous successful invocation of the same
shard and window returned. The state holds, per (table, window) segment, the exact
totals, the bounded heavy-hitter summary and the sequence ranges it counted, plus the
high-water mark: the highest sequence number already folded in. Records at or below it
are skipped, so a redelivered record is never counted twice, whatever Lambda re-sends.

Coverage: each invocation that folds new records of a segment opens a new sequence
range (first and last record it folded). Ranges of different invocations are never
joined, because the function cannot see whether Lambda sent a batch to the on-failure
destination in between; ``hotkeys redrive`` counts exactly what no range covers. A
segment whose range list is full is sealed (flushed as it is) and a new segment of the
same shard and window starts, so the state stays bounded.

Identity: a segment is named by its shard, Lambda's window start and a generation
(``origin``), never by its first record. A failed invocation may already have flushed
a snapshot; whatever Lambda does next (retry, bisect, dead-letter the batch that began
the segment), the state it carries on with writes the same identity, so the stale
snapshot is overwritten by what the carried state counted (whatever sequence the stale
one reached: records it claimed and the state lacks are retried, or dead-lettered and
then uncovered for redrive). A (table, window) completed and opened again in the same
Lambda window takes its next generation (``reopened``); a Lambda window opened again
with a fresh state never writes over the snapshots marked done by the first instance
(``snapshots.IdentityTaken``).

Format: ``STATE_VERSION`` marks the layout. A state of any other version (written by an earlier
release, alive for at most one tumbling window) is not read: ``ShardState.from_json`` raises
``StateError`` and the pipeline starts the shard afresh, with a warning and the ``StatesDiscarded``
metric (docs/decisions.md, "One value type for a summary").

Size: Lambda ends a window early when the state exceeds 1 MB per shard. Each summary is
carried by ``summary.pack`` as one base64 string of ``summary.encode_entries`` (never JSON-escaped), within
``summary.MAX_SUMMARY_BYTES``; ranges are at most ``MAX_RANGES``; alert marks are hashes.
``max_state_bytes`` states the bound and a test checks it at the worst case.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any

from hotkeys.detector.consumer.seen import SeenChanges, SeenError, max_seen_chars
from hotkeys.detector.domain import summary
from hotkeys.detector.domain.health import ITEM_LIMIT_BYTES, Health, TtlVerdict, size_bucket
from hotkeys.detector.domain.items import (
    MAX_ITEM_JSON,
    MAX_ITEM_KEYS,
    ItemStats,
    decode_aligned,
    encode_aligned,
    item_digest,
    sort_key_ordinal,
)
from hotkeys.detector.domain.kinesis import MAX_KINESIS_SEQUENCE_DIGITS
from hotkeys.detector.domain.records import Change, ChangeKind
from hotkeys.detector.domain.summary import Counting, Entry, Summary

STATE_VERSION = 4
# Ranges one segment carries before it is sealed (each two sequence numbers: MAX_SEQUENCE_DIGITS).
MAX_RANGES = 256
# The longest sequence number a source issues (DynamoDB Streams: 21 to 40 digits; Kinesis: up to 129).
MAX_SEQUENCE_DIGITS = MAX_KINESIS_SEQUENCE_DIGITS
# Lambda's limit on the tumbling-window state ("a maximum of 1 MB per shard").
LAMBDA_STATE_LIMIT_BYTES = 1_000_000
# zlib level for the carried summary: level 1 is the cheapest and the state is transient (docs/measurements.md).
STATE_ZLIB_LEVEL = 1
# Global secondary indexes counted per table: DynamoDB's default quota (more are left uncounted).
MAX_COUNTED_INDEXES = 20
# The longest index name DynamoDB accepts.
MAX_INDEX_NAME = 255
# The longest table name DynamoDB accepts.
MAX_TABLE_NAME = 255
# "Already handled in this window" marks a shard carries; beyond it its first alarm asks the incident store
# again (idempotently).
MAX_MARKS = 4 * summary.DEFAULT_CAPACITY
# Completed (table, window) pairs whose next generation a shard remembers (ShardState.reopened).
MAX_REOPENED = 64
# What an encoded summary holds beyond its entries' ``summary.entry_bytes``: "[-7," "]" and a newline.
SUMMARY_FRAME_BYTES = 8


@dataclass
class Segment:
    """One shard's figures for one (table, window), from its first record on: the table's summary, one
    per counted global secondary index, and the sequence ranges it folded."""

    table: str
    window_start: int
    first_sequence: str
    # The segment's name within its shard (see the module doc); stable across retries.
    origin: str = ""
    generation: int = 0
    # The table's keys: every write except TTL deletions (those count in ``ttl_deletes``).
    summary: Summary = field(default_factory=Summary)
    ttl_deletes: int = 0
    first_event: int = 0
    last_event: int = 0
    last_sequence: int = -1
    flushed_at_event: int = -1
    dirty: bool = True
    # [first, last] sequence numbers folded by each successful invocation, in order.
    ranges: list[list[int]] = field(default_factory=list)
    # The table's global secondary indexes counted in this segment, fixed when it starts (by name): each
    # one's writes by index partition key.
    indexes: dict[str, Summary] = field(default_factory=dict)
    # Tables with a sort key: how each tracked key's writes spread over its items (items.py).
    has_sort_key: bool = False
    items: dict[str, ItemStats] = field(default_factory=dict)
    # The table has local secondary indexes (an item collection cannot be split for heat).
    has_local_indexes: bool = False
    # The items its writes left: TTL verdicts and sizes (domain.health).
    health: Health = field(default_factory=Health)
    # Not carried: whether this invocation already opened its range.
    range_open: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        # The summaries share the byte budget (their indexes are fixed at the segment's start).
        budget = summary.allotment(1 + len(self.indexes))
        for part in (self.summary, *self.indexes.values()):
            part.max_bytes = budget

    @property
    def budget(self) -> int:
        """The byte budget each of this segment's summaries gets."""
        return self.summary.max_bytes

    def apply(self, change: Change, counting: Counting, out_of_order: bool = False) -> None:
        """Fold one record. ``out_of_order``: it lies below records already folded (a redelivery out of
        sequence order): it gets a range of its own, and the range after it starts anew, so no range
        ever spans records that were not folded (a dead-lettered batch between them)."""
        sequence = change.sequence
        if out_of_order:
            self.ranges.append([sequence, sequence])
            self.range_open = False
        elif self.range_open:
            self.ranges[-1][1] = sequence
        else:
            self.ranges.append([sequence, sequence])
            self.range_open = True
        event_time = change.event_time
        # (per record: comparisons cost less than max())
        if event_time > self.last_event:  # noqa: PLR1730
            self.last_event = event_time
        if sequence > self.last_sequence:  # noqa: PLR1730
            self.last_sequence = sequence
        self.dirty = True
        if change.kind is ChangeKind.TTL_DELETE:
            self.ttl_deletes += 1
            return
        if change.size:
            self.health.add(change.size, change.wcu, change.ttl)
        if change.index_writes:
            self._count_indexes(change, counting)
        if self.summary.count(change.key, change.wcu, event_time, counting):
            entries = self.summary.entries
            self.items = {key: stats for key, stats in self.items.items() if key in entries}
        if change.sort_key is not None:
            self._count_item(change)

    def _count_item(self, change: Change) -> None:
        assert change.sort_key is not None
        self.has_sort_key = True
        self.has_local_indexes = self.has_local_indexes or change.has_local_indexes
        stats = self.items.get(change.key)
        if stats is None:
            if len(self.items) >= MAX_ITEM_KEYS:
                return  # bounded: this key's items are not followed in this segment
            stats = self.items[change.key] = ItemStats()
        kind, raw = change.sort_key
        stats.add(item_digest(raw), sort_key_ordinal(kind, raw), change.wcu)

    def _count_indexes(self, change: Change, counting: Counting) -> None:
        for name, key, wcu in change.index_writes:
            index = self.indexes.get(name)
            if index is not None:  # an index created after the segment began counts from the next one
                index.count(key, wcu, change.event_time, counting)

    def views(self) -> list[View]:
        """The table's figures and each counted index's, for the alert rules."""
        own = View(
            self.table,
            None,
            self.window_start,
            self.last_event,
            self.origin,
            self.summary,
            self.has_sort_key,
            self.items,
            self.has_local_indexes,
        )
        indexes = (
            View(self.table, name, self.window_start, self.last_event, self.origin, index)
            for name, index in self.indexes.items()
        )
        return [own, *indexes]

    def next_generation(self) -> None:
        """Rename a tumbling-window segment to its next generation (its name is taken: IdentityTaken)."""
        self.generation += 1
        self.origin = f"{self.origin.rsplit('.', 1)[0]}.{self.generation}"

    def size(self) -> int:
        """Its summaries' entries, the measure of what it weighs in the carried state."""
        return len(self.summary.entries) + sum(len(index.entries) for index in self.indexes.values())

    @property
    def ranges_full(self) -> bool:
        return len(self.ranges) >= MAX_RANGES

    def covers(self, sequence: int) -> bool:
        return ranges_cover(self.ranges, sequence)

    def to_json(self) -> dict[str, Any]:
        """The segment as carried in the state (``from_json`` reads it back). Stored name → field:
        ``t`` table, ``w`` window_start, ``s`` first_sequence, ``o`` origin, ``g`` generation, ``sum``
        summary (``summary.pack``), ``x`` ttl_deletes, ``e0`` first_event, ``e1`` last_event, ``q``
        last_sequence, ``f`` flushed_at_event, ``d`` dirty, ``r`` ranges, ``ix`` indexes
        (each ``summary.pack``), ``sk`` has_sort_key, ``pc`` has_local_indexes (named ``pinned`` before:
        the stored name stays), ``it`` items, ``hl`` health (``Health.to_json``)."""
        return {
            "t": self.table,
            "w": self.window_start,
            "s": self.first_sequence,
            "o": self.origin,
            "g": self.generation,
            "sum": summary.pack(self.summary, STATE_ZLIB_LEVEL, text=True),
            "x": self.ttl_deletes,
            "e0": self.first_event,
            "e1": self.last_event,
            "q": str(self.last_sequence),
            "f": self.flushed_at_event,
            "d": self.dirty,
            "r": encode_ranges(self.ranges),
            "ix": {name: summary.pack(index, STATE_ZLIB_LEVEL, text=True) for name, index in self.indexes.items()},
            "sk": self.has_sort_key,
            "pc": self.has_local_indexes,
            "it": encode_items(self.summary.entries, self.items),
            "hl": self.health.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Segment:
        table = summary.unpack(data["sum"])
        return cls(
            table=data["t"],
            window_start=int(data["w"]),
            first_sequence=data["s"],
            origin=str(data["o"]),
            generation=int(data["g"]),
            summary=table,
            ttl_deletes=int(data["x"]),
            first_event=int(data["e0"]),
            last_event=int(data["e1"]),
            last_sequence=int(data["q"]),
            flushed_at_event=int(data["f"]),
            dirty=bool(data["d"]),
            ranges=decode_ranges(data["r"]),
            indexes={name: summary.unpack(index) for name, index in data["ix"].items()},
            has_sort_key=bool(data["sk"]),
            has_local_indexes=bool(data["pc"]),
            items=decode_items(table.entries, data["it"]),
            health=Health.from_json(data.get("hl")),  # (absent from a state an older version carried)
        )


@dataclass(frozen=True, slots=True)
class View:
    """A segment's figures as the alert rules read them (``rules.Figures``): the table's (``index`` None)
    or one counted index's summary, with the segment's window and event times, so an index partition is
    judged by the same rules. A view over the live summary (taken after the batch is folded)."""

    table: str
    index: str | None
    window_start: int
    last_event: int
    origin: str
    summary: Summary
    # Items are followed for the table's keys only.
    has_sort_key: bool = False
    items: dict[str, ItemStats] = field(default_factory=dict)
    has_local_indexes: bool = False

    @property
    def entries(self) -> dict[str, Entry]:
        return self.summary.entries

    @property
    def pruned(self) -> int:
        return self.summary.pruned

    @property
    def wcu(self) -> int:
        return self.summary.wcu

    def bound(self, key: str) -> int:
        """A shard's own summary: every key's count is within ``pruned`` of the truth (``rules.Figures``)."""
        return self.summary.pruned


SEQUENCE_WIDTH = 48


def padded_sequence(sequence: str) -> str:
    """Sequence numbers compare as integers; zero-padding makes string order agree."""
    return sequence.zfill(SEQUENCE_WIDTH)


def encode_items(entries: dict[str, Entry], items: dict[str, ItemStats]) -> str:
    """The segment's item figures for the state: ``items.encode_aligned`` as base64 ("" if none)."""
    if not items:
        return ""
    return base64.b64encode(encode_aligned(entries, items, STATE_ZLIB_LEVEL)).decode("ascii")


def decode_items(entries: dict[str, Entry], text: str) -> dict[str, ItemStats]:
    return decode_aligned(entries, base64.b64decode(text)) if text else {}


def ranges_cover(ranges: list[list[int]], sequence: int) -> bool:
    """Whether a record was folded by one of the invocations behind these ranges."""
    return any(first <= sequence <= last for first, last in ranges)


def ranges_overlap(some: list[list[int]], others: list[list[int]]) -> bool:
    """Whether a record lies in a range of both (a range claims every record from its first to its last)."""
    return any(first <= high and low <= last for first, last in some for low, high in others)


def encode_ranges(ranges: list[list[int]]) -> str:
    """``first-last,first-last``: sequence numbers stay text (they exceed 2**53)."""
    return ",".join(f"{first}-{last}" for first, last in ranges)


def decode_ranges(text: str) -> list[list[int]]:
    if not text:
        return []
    return [[int(part) for part in item.split("-")] for item in text.split(",")]


def mark_of(table: str, incident_key: str) -> str:
    """A short, fixed-size name for "this key was already handled in this window" (keys can be 2 KB)."""
    return hashlib.blake2b(f"{table}|{incident_key}".encode(), digest_size=8).hexdigest()


def max_state_bytes() -> int:
    """An upper bound of one shard's serialized state of one segment; a state of several (tables, or
    windows) is kept within it by sealing (``pipeline._ShardInvocation.fitted_state``).

    The table's summary and one per counted index share ``MAX_SUMMARY_BYTES`` (``summary.allotment``)
    and each stays within its allotment before compression, whatever its keys: every key text is at
    most ``MAX_KEY_TEXT_BYTES`` UTF-8 bytes (table keys: ``records.key_text``; index keys, multi-attribute
    ones of 4-byte characters included: ``indexes.bounded_key_text``), so every entry is at most
    ``MAX_ENTRY_BYTES`` and a prune leaves room for one more (``summary.keep_floor``). Each blob adds
    its list's brackets, mark and newline, zlib's worst-case growth and base64's 4/3; the state's other
    strings are ASCII (names, hex, digits), which the runtime's JSON does not escape.
    """
    blobs = 1 + MAX_COUNTED_INDEXES  # the table's summary and one per index share MAX_SUMMARY_BYTES
    raw = summary.MAX_SUMMARY_BYTES + blobs * SUMMARY_FRAME_BYTES
    summary_chars = 4 * (raw * 1001 // 1000 + blobs * 64) // 3 + blobs * 4
    ranges_chars = MAX_RANGES * (2 * MAX_SEQUENCE_DIGITS + 2)
    # Each index: its name, and ``summary.pack``'s four counters with their names, in JSON.
    index_chars = MAX_COUNTED_INDEXES * (MAX_INDEX_NAME + 4 * (22 + 16) + 32)
    marks_chars = MAX_MARKS * 35  # ~35 characters of JSON each
    reopened_chars = MAX_REOPENED * (MAX_TABLE_NAME + 2 * 22 + 8)
    # Health: every size bucket with a count, the TTL verdicts and its counters, in JSON.
    health_chars = (size_bucket(ITEM_LIMIT_BYTES) + 1) * (2 * 22 + 4) + len(TtlVerdict) * (16 + 22) + 8 * 32
    # Item figures of at most MAX_ITEM_KEYS keys, "0," for each other entry (at most twice the largest
    # SUMMARY_CAPACITY, 2,000), zlib'd and base64'd.
    item_raw = MAX_ITEM_KEYS * MAX_ITEM_JSON + 2 * (2 * 2000)
    items_chars = 4 * (item_raw * 1001 // 1000 + 64) // 3 + 4
    fixed = summary_chars + ranges_chars + index_chars + marks_chars + reopened_chars + items_chars + health_chars
    fixed += max_seen_chars() + 8  # a Kinesis shard's recent changes, and their name
    return fixed + 4_096


class StateError(ValueError):
    """The carried state is not one this version wrote."""


@dataclass
class ShardState:
    """What one shard carries from one invocation to the next within a window.

    The returned state holds one segment per table: a segment of an earlier window is
    completed (flushed and dropped) as soon as a later window appears.
    """

    high_water: int = -1
    segments: dict[tuple[str, int], Segment] = field(default_factory=dict)
    notified: dict[str, int] = field(default_factory=dict)
    # The next generation of each (table, window) whose segment was completed in this Lambda window: it
    # may open again (event time is not documented as monotonic: it can step back across a window
    # edge), and must then be named apart from the snapshot already stored. Kept per (table, window),
    # not as one counter: a retried or bisected batch must give each segment the name the failed
    # attempt gave it, whatever order its segments open in.
    reopened: dict[tuple[str, int], int] = field(default_factory=dict)
    # Segments whose range list filled up in this invocation: flushed, never carried.
    sealed: list[Segment] = field(default_factory=list)
    # Not carried: the start of Lambda's window (tumbling mode), which names new segments.
    lambda_window: int | None = None
    # A Kinesis shard's recent changes (seen.py); None: a DynamoDB stream's shard, which needs none.
    seen: SeenChanges | None = None

    def apply(
        self,
        change: Change,
        window_seconds: int,
        counting: Counting,
        indexes: tuple[str, ...] = (),
    ) -> Segment:
        """Fold one record; ``indexes`` names the table's counted GSIs (used when a segment starts),
        ``counting`` how its summaries count (``summary.Counting.of(settings)``). A record at or below the
        high-water mark must have been checked as not yet counted (``covers``); it is folded out of
        order."""
        event_time = change.event_time
        start = event_time - event_time % window_seconds  # (window_start, inlined: per record)
        key = (change.table, start)
        segment = self.segments.get(key)
        if segment is None:
            generation = self.reopened.get(key, 0)
        elif not segment.range_open and segment.ranges_full:
            self.sealed.append(segment)
            generation = segment.generation + 1
            segment = None
        if segment is None:
            first = str(change.sequence)
            segment = Segment(
                table=change.table,
                window_start=start,
                first_sequence=first,
                # Without a tumbling window each batch is its own segment, named by its first record.
                origin=f"{self.lambda_window:012d}.{generation}"
                if self.lambda_window is not None
                else padded_sequence(first),
                generation=generation,
                first_event=change.event_time,
                last_event=change.event_time,
                indexes={name: Summary() for name in indexes[:MAX_COUNTED_INDEXES]},
            )
            self.segments[key] = segment
        out_of_order = change.sequence <= self.high_water
        segment.apply(change, counting, out_of_order)
        if not out_of_order:
            self.high_water = change.sequence
        return segment

    def seal(self, key: tuple[str, int]) -> None:
        """Seal a carried segment before its range list is full (the state would be too large): it is
        flushed as it is, and the (table, window) goes on in its next generation."""
        segment = self.segments.pop(key)
        self.sealed.append(segment)
        self.reopened[key] = segment.generation + 1

    def complete(self, key: tuple[str, int]) -> None:
        """Drop a flushed segment that is done; the (table, window) remembers its next generation."""
        segment = self.segments.pop(key)
        self.reopened[key] = segment.generation + 1
        if len(self.reopened) > MAX_REOPENED:  # one table per stream: a few windows per Lambda window
            del self.reopened[min(self.reopened, key=lambda item: item[1])]

    def handled(self, mark: str, window: int) -> bool:
        """Whether this shard's first alarm already handled the incident ``mark`` in ``window``."""
        return self.notified.get(mark) == window

    def remember_handled(self, mark: str, window: int) -> None:
        """The incident ``mark`` handled in ``window``, while there is room (``MAX_MARKS``): beyond it,
        later invocations ask the incident store again, which is idempotent."""
        if mark in self.notified or len(self.notified) < MAX_MARKS:
            self.notified[mark] = window

    def covers(self, sequence: int) -> bool:
        """Whether a segment this state holds (of any table or window) already folded this record."""
        return any(segment.covers(sequence) for segment in (*self.segments.values(), *self.sealed))

    def finished(self, table: str, start: int, origin: str) -> bool:
        """Whether the stored snapshot of this name belongs to a segment that is done: of an earlier Lambda
        window, or of a generation of this window that was completed or sealed before the segment this
        state carries for it. Its last write came from a successful invocation, so its ranges are what
        was counted; any other may be a failed attempt's."""
        window, _, generation = origin.rpartition(".")
        if not window.isdigit() or not generation.isdigit() or self.lambda_window is None:
            return False
        if int(window) != self.lambda_window:
            return True
        if any(
            sealed.table == table and sealed.window_start == start and sealed.origin == origin for sealed in self.sealed
        ):
            return False  # sealed by this invocation, not yet written by it: what is stored is an earlier attempt's
        carried = self.segments.get((table, start))
        done = max(self.reopened.get((table, start), 0), carried.generation if carried is not None else 0)
        return int(generation) < done

    def to_json(self) -> dict[str, Any]:
        if self.sealed:
            raise StateError("sealed segments must be flushed before the state is returned")
        return {
            "v": STATE_VERSION,
            "hwm": str(self.high_water),
            "seg": [segment.to_json() for segment in self.segments.values()],
            "ntf": self.notified,
            "ro": [[table, start, generation] for (table, start), generation in self.reopened.items()],
            **({"dd": self.seen.to_text()} if self.seen is not None else {}),
        }

    @classmethod
    def from_json(cls, data: Any) -> ShardState:
        if not data:
            return cls()
        if not isinstance(data, dict) or data.get("v") != STATE_VERSION:
            raise StateError("the tumbling-window state was not written by this version of the detector")
        segments = [Segment.from_json(item) for item in data["seg"]]
        return cls(
            high_water=int(data["hwm"]),
            segments={(segment.table, segment.window_start): segment for segment in segments},
            notified={key: int(value) for key, value in data["ntf"].items()},
            reopened={(str(table), int(start)): int(generation) for table, start, generation in data["ro"]},
            seen=_seen_of(data.get("dd")),
        )


def _seen_of(text: Any) -> SeenChanges | None:
    if text is None:
        return None
    try:
        return SeenChanges.from_text(str(text))
    except SeenError as error:
        raise StateError(str(error)) from None
