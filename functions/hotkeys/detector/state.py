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

Size: Lambda ends a window early when the state exceeds 1 MB per shard. The summary is
carried as one base64 string of ``summary.encode_entries`` (never JSON-escaped), within
``summary.MAX_SUMMARY_BYTES``; ranges are at most ``MAX_RANGES``; alert marks are hashes.
``max_state_bytes`` states the bound and a test checks it at the worst case.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any

from hotkeys.detector import summary
from hotkeys.detector.config import DEFAULT_SPAN_SECONDS
from hotkeys.detector.items import (
    MAX_ITEM_JSON,
    MAX_ITEM_KEYS,
    ItemStats,
    decode_aligned,
    encode_aligned,
    item_digest,
    sort_key_ordinal,
)
from hotkeys.detector.records import Change, Kind
from hotkeys.detector.windows import window_start

STATE_VERSION = 2
# Ranges one segment carries before it is sealed; ~82 bytes each at most (two 40-digit numbers).
MAX_RANGES = 256
# The longest sequence number DynamoDB Streams issues (21 to 40 digits).
MAX_SEQUENCE_DIGITS = 40
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
# Burst buckets when the caller names none: the default ALERT_MIN_SPAN_SECONDS.
DEFAULT_BUCKET_SECONDS = DEFAULT_SPAN_SECONDS
# "Already handled in this window" marks a shard carries; beyond it the desk re-checks (idempotently).
MAX_MARKS = 4 * summary.DEFAULT_CAPACITY
# Completed (table, window) pairs whose next generation a shard remembers (ShardState.reopened).
MAX_REOPENED = 64
# What an encoded summary holds beyond its entries' ``summary.entry_bytes``: "[-6," "]" and a newline.
SUMMARY_FRAME_BYTES = 8


@dataclass
class IndexTally:
    """One global secondary index's figures in a segment: its writes by index partition key."""

    entries: dict[str, list[int]] = field(default_factory=dict)
    pruned: int = 0
    writes: int = 0
    wcu: int = 0
    entry_bytes: int = 0

    def add(self, key: str, wcu: int, event_time: int, capacity: int, budget: int, bucket_seconds: int) -> None:
        self.writes += 1
        self.wcu += wcu
        pruned, self.entry_bytes = summary.count(
            self.entries, self.entry_bytes, key, wcu, event_time, capacity, budget, bucket_seconds
        )
        self.pruned += pruned

    def to_json(self) -> list[Any]:
        encoded = base64.b64encode(summary.encode_entries(self.entries, STATE_ZLIB_LEVEL)).decode("ascii")
        return [encoded, self.pruned, self.writes, self.wcu]

    @classmethod
    def from_json(cls, data: list[Any]) -> IndexTally:
        entries = summary.decode_entries(base64.b64decode(data[0]))
        return cls(entries, int(data[1]), int(data[2]), int(data[3]), summary.encoded_bytes(entries))


@dataclass
class Segment:
    """One shard's figures for one (table, window), from its first record on."""

    table: str
    window_start: int
    first_sequence: str
    # The segment's name within its shard (see the module doc); stable across retries.
    origin: str = ""
    generation: int = 0
    entries: dict[str, list[int]] = field(default_factory=dict)
    pruned: int = 0
    writes: int = 0
    wcu: int = 0
    ttl_deletes: int = 0
    first_event: int = 0
    last_event: int = 0
    last_sequence: int = -1
    flushed_at_event: int = -1
    catalogued: bool = False
    dirty: bool = True
    # [first, last] sequence numbers folded by each successful invocation, in order.
    ranges: list[list[int]] = field(default_factory=list)
    # Encoded size of ``entries`` (summary.entry_bytes), kept incrementally.
    entry_bytes: int = 0
    # The table's global secondary indexes counted in this segment, fixed when it starts (by name).
    indexes: dict[str, IndexTally] = field(default_factory=dict)
    # Tables with a sort key: how each tracked key's writes spread over its items (items.py).
    has_sort_key: bool = False
    items: dict[str, ItemStats] = field(default_factory=dict)
    # The table has local secondary indexes (an item collection cannot be split for heat).
    pinned: bool = False
    # Not carried: whether this invocation already opened its range.
    range_open: bool = field(default=False, compare=False)
    # Derived: the byte budget each of this segment's summaries gets (its indexes are fixed at its start).
    budget: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.budget = summary.allotment(1 + len(self.indexes))

    def apply(
        self,
        change: Change,
        capacity: int,
        bucket_seconds: int = DEFAULT_BUCKET_SECONDS,
        out_of_order: bool = False,
    ) -> None:
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
        self.last_event = max(self.last_event, event_time)
        self.last_sequence = max(self.last_sequence, sequence)
        self.dirty = True
        if change.kind is Kind.TTL_DELETE:
            self.ttl_deletes += 1
            return
        wcu = change.wcu
        self.writes += 1
        self.wcu += wcu
        if change.index_writes:
            self._count_indexes(change, capacity, self.budget, bucket_seconds)
        entries = self.entries
        pruned, self.entry_bytes = summary.count(
            entries, self.entry_bytes, change.key, wcu, event_time, capacity, self.budget, bucket_seconds
        )
        if pruned:
            self.pruned += pruned
            self.items = {key: stats for key, stats in self.items.items() if key in entries}
        if change.sort_key is not None:
            self._count_item(change)

    def _count_item(self, change: Change) -> None:
        assert change.sort_key is not None
        self.has_sort_key = True
        self.pinned = self.pinned or change.pinned
        stats = self.items.get(change.key)
        if stats is None:
            if len(self.items) >= MAX_ITEM_KEYS:
                return  # bounded: this key's items are not followed in this segment
            stats = self.items[change.key] = ItemStats()
        kind, raw = change.sort_key
        stats.add(item_digest(raw), sort_key_ordinal(kind, raw), change.wcu)

    def _count_indexes(self, change: Change, capacity: int, budget: int, bucket_seconds: int) -> None:
        for name, key, wcu in change.index_writes:
            tally = self.indexes.get(name)
            if tally is not None:  # an index created after the segment began counts from the next one
                tally.add(key, wcu, change.event_time, capacity, budget, bucket_seconds)

    @property
    def index(self) -> str | None:
        """The segment's own figures are the table's (``IndexView`` gives an index's)."""
        return None

    def views(self) -> list[Segment | IndexView]:
        """The table's figures and each counted index's, for the alert rules."""
        return [
            self,
            *(
                IndexView(
                    self.table,
                    name,
                    self.window_start,
                    self.last_event,
                    self.origin,
                    tally.entries,
                    tally.pruned,
                    tally.wcu,
                    tally.writes,
                )
                for name, tally in self.indexes.items()
            ),
        ]

    def next_generation(self) -> None:
        """Rename a tumbling-window segment to its next generation (its name is taken: IdentityTaken)."""
        self.generation += 1
        self.origin = f"{self.origin.rsplit('.', 1)[0]}.{self.generation}"

    @property
    def ranges_full(self) -> bool:
        return len(self.ranges) >= MAX_RANGES

    def covers(self, sequence: int) -> bool:
        return ranges_cover(self.ranges, sequence)

    def to_json(self) -> dict[str, Any]:
        return {
            "t": self.table,
            "w": self.window_start,
            "s": self.first_sequence,
            "o": self.origin,
            "g": self.generation,
            "k": base64.b64encode(summary.encode_entries(self.entries, STATE_ZLIB_LEVEL)).decode("ascii"),
            "p": self.pruned,
            "n": self.writes,
            "u": self.wcu,
            "x": self.ttl_deletes,
            "e0": self.first_event,
            "e1": self.last_event,
            "q": str(self.last_sequence),
            "f": self.flushed_at_event,
            "c": self.catalogued,
            "d": self.dirty,
            "r": encode_ranges(self.ranges),
            "ix": {name: tally.to_json() for name, tally in self.indexes.items()},
            "sk": self.has_sort_key,
            "pc": self.pinned,
            "it": encode_items(self.entries, self.items),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Segment:
        raw = data["k"]
        if isinstance(raw, dict):  # version 1 (before the encoded summary and ranges): upgrade in flight
            entries = {key: [int(v) for v in entry] for key, entry in raw.items()}
            data = {
                **data,
                "r": f"{data['s']}-{data['q']}" if int(data["q"]) >= 0 else "",
                "o": padded_sequence(str(data["s"])),  # the identity version 1 gave its snapshot
                "g": 0,
            }
        else:
            entries = summary.decode_entries(base64.b64decode(raw))
        return cls(
            table=data["t"],
            window_start=int(data["w"]),
            first_sequence=data["s"],
            origin=str(data["o"]),
            generation=int(data["g"]),
            entries=entries,
            pruned=int(data["p"]),
            writes=int(data["n"]),
            wcu=int(data["u"]),
            ttl_deletes=int(data["x"]),
            first_event=int(data["e0"]),
            last_event=int(data["e1"]),
            last_sequence=int(data["q"]),
            flushed_at_event=int(data["f"]),
            catalogued=bool(data["c"]),
            dirty=bool(data["d"]),
            ranges=decode_ranges(data["r"]),
            entry_bytes=summary.encoded_bytes(entries),
            indexes={name: IndexTally.from_json(tally) for name, tally in data.get("ix", {}).items()},
            has_sort_key=bool(data.get("sk", False)),
            pinned=bool(data.get("pc", False)),
            items=decode_items(entries, data.get("it", "")),
        )


@dataclass(frozen=True, slots=True)
class IndexView:
    """One index's figures in a segment, with the segment's window and event times: what the
    alert rules read of a segment, so an index partition is judged by the same rules.
    Taken after the batch is folded (``entries`` is the tally's own map, the rest copies)."""

    table: str
    index: str
    window_start: int
    last_event: int
    origin: str
    entries: dict[str, list[int]]
    pruned: int
    wcu: int
    writes: int
    # Items are followed for the table's keys only.
    has_sort_key: bool = False
    items: dict[str, ItemStats] = field(default_factory=dict)
    pinned: bool = False


SEQUENCE_WIDTH = 48


def padded_sequence(sequence: str) -> str:
    """Sequence numbers compare as integers; zero-padding makes string order agree."""
    return sequence.zfill(SEQUENCE_WIDTH)


def encode_items(entries: dict[str, list[int]], items: dict[str, ItemStats]) -> str:
    """The segment's item figures for the state: ``items.encode_aligned`` as base64 ("" if none)."""
    if not items:
        return ""
    return base64.b64encode(encode_aligned(entries, items, STATE_ZLIB_LEVEL)).decode("ascii")


def decode_items(entries: dict[str, list[int]], text: str) -> dict[str, ItemStats]:
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
    """An upper bound of one shard's serialized state (one segment: see ShardState).

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
    # Each index: its name and four counters in JSON.
    index_chars = MAX_COUNTED_INDEXES * (MAX_INDEX_NAME + 4 * 22 + 16)
    marks_chars = MAX_MARKS * 35  # ~35 characters of JSON each
    reopened_chars = MAX_REOPENED * (MAX_TABLE_NAME + 2 * 22 + 8)
    # Item figures of at most MAX_ITEM_KEYS keys, "0," for each other entry (at most twice the largest
    # SUMMARY_CAPACITY, 2,000), zlib'd and base64'd.
    item_raw = MAX_ITEM_KEYS * MAX_ITEM_JSON + 2 * (2 * 2000)
    items_chars = 4 * (item_raw * 1001 // 1000 + 64) // 3 + 4
    return summary_chars + ranges_chars + index_chars + marks_chars + reopened_chars + items_chars + 4_096


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

    def apply(
        self,
        change: Change,
        window_seconds: int,
        capacity: int,
        indexes: tuple[str, ...] = (),
        bucket_seconds: int = DEFAULT_BUCKET_SECONDS,
    ) -> Segment:
        """Fold one record; ``indexes`` names the table's counted GSIs (used when a segment starts),
        ``bucket_seconds`` the keys' burst buckets (the alert's minimum span). A record at or below the
        high-water mark must have been checked as not yet counted (``covers``); it is folded out of
        order."""
        event_time = change.event_time
        start = window_start(event_time, window_seconds)
        segment = self.segments.get((change.table, start))
        generation = self.reopened.get((change.table, start), 0)
        sealed = False
        if segment is not None and not segment.range_open and segment.ranges_full:
            self.sealed.append(segment)
            sealed = True
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
                # The sealed predecessor is saved (catalog first) before this one, in this invocation.
                catalogued=sealed,
                indexes={name: IndexTally() for name in indexes[:MAX_COUNTED_INDEXES]},
            )
            self.segments[(change.table, start)] = segment
        out_of_order = change.sequence <= self.high_water
        segment.apply(change, capacity, bucket_seconds, out_of_order)
        if not out_of_order:
            self.high_water = change.sequence
        return segment

    def complete(self, key: tuple[str, int]) -> None:
        """Drop a flushed segment that is done; the (table, window) remembers its next generation."""
        segment = self.segments.pop(key)
        self.reopened[key] = segment.generation + 1
        if len(self.reopened) > MAX_REOPENED:  # one table per stream: a few windows per Lambda window
            del self.reopened[min(self.reopened, key=lambda item: item[1])]

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
        }

    @classmethod
    def from_json(cls, data: Any) -> ShardState:
        if not data:
            return cls()
        if not isinstance(data, dict) or data.get("v") not in (1, STATE_VERSION):
            raise StateError("the tumbling-window state was not written by this version of the detector")
        segments = [Segment.from_json(item) for item in data.get("seg", [])]
        return cls(
            high_water=int(data.get("hwm", -1)),
            segments={(segment.table, segment.window_start): segment for segment in segments},
            notified={key: int(value) for key, value in data.get("ntf", {}).items()},
            reopened={(str(table), int(start)): int(generation) for table, start, generation in data.get("ro", [])},
        )
