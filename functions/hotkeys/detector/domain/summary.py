"""A bounded heavy-hitter summary of one shard's writes in one window.

The summary is a weighted Misra-Gries sketch with amortized pruning:

* every write adds its weight (write units) to its key's counter, exactly, while
  fewer than ``2 * capacity`` keys are tracked and their encoded size stays under
  ``MAX_SUMMARY_BYTES``;
* when a new key would break either limit, the ``(k + 1)``-th largest counter value
  ``c`` is subtracted from every counter and the counters that reach zero are
  dropped. ``pruned`` accumulates ``c``. ``k`` is ``capacity`` unless the top
  ``capacity`` keys are too large to fit half the byte budget; then it is the largest
  count that fits, but never below ``MIN_KEEP``.

Guarantees (W = the shard-window's total weight, which is kept exactly):

* a tracked key's counter is at most its true weight and at least true - pruned;
* an untracked key's true weight is at most ``pruned``;
* ``pruned <= W / (k_min + 1)`` where ``k_min`` is the smallest ``k`` of any prune:
  each prune removes ``c`` from at least ``k + 1`` counters, and counters never go
  below zero. ``k_min`` is ``capacity`` (200: ``W / 201``) unless keys average more
  than ``MAX_SUMMARY_BYTES / (2 * capacity)`` bytes; it is never below ``MIN_KEEP``
  (100: ``W / 101``), so every key above 1% of its shard's window is always reported.

The byte budget exists because the summary travels in Lambda's tumbling-window state
(at most 1 MB per shard, or Lambda ends the window early) and in a stats-table item
(at most 400 KB). Keys are measured as they are encoded (``encode_entries``: raw UTF-8,
never JSON-escaped), so 2,048-byte partition keys of any type fit: binary keys are
2,732 characters of base64, and ``MIN_KEEP`` of those take 281 KB.

The bound is in bytes and holds for every key text of at most ``MAX_KEY_TEXT_BYTES`` UTF-8
bytes, that is every entry of at most ``MAX_ENTRY_BYTES``: a summary's encoded size never
exceeds its ``max_bytes`` (a prune that stops at the floor leaves room for one more entry of
the largest size, ``keep_floor``). Callers bound their keys: a table key longer than that is
malformed (``records.key_text``); an index key text, which for a multi-attribute key is a
JSON list of up to four values, is cut to a prefix and a digest (``indexes.bounded_key_text``,
in bytes: four values of 4-byte characters would otherwise make entries of 4 KB).

Each entry (``Entry``) also carries its key's series: its write units per burst bucket (``Entry.bump``),
at most ``MAX_SERIES_PAIRS`` buckets, counted in its size. Summaries merge by adding counters,
series (bucket by bucket: a merged key's peak is the heaviest bucket of the sum) and
``pruned`` (the bounds add).

Global secondary indexes: a segment that also counts a table's indexes carries one summary
per index beside the table's, and all of them share ``MAX_SUMMARY_BYTES`` (the state and
the stats item must still fit): each gets ``allotment(n)`` bytes for ``n`` summaries, and
the fewest keys a prune keeps is ``keep_floor(allotment)`` -- ``MIN_KEEP`` while that many
keys of the largest size fit, fewer beside many indexes (50 with one index, 16 with five).
The bound ``W / (k_min + 1)`` holds per summary with that floor; it is reached only by
keys of kilobytes, since ``k`` stays at ``capacity`` while the top keys fit half the allotment.

A ``Summary`` is the value: its entries, ``pruned``, and the exact writes and write units it saw;
``Counting`` is how it counts (capacity and burst length), built once from ``Settings``; ``pack`` and
``unpack`` are its one codec, shared by the Lambda's carried state and the stats table's items.

Pruning happens at a record, not at a batch boundary, so the summary after a
sequence of records is the same however the records were split into batches:
that is what makes redelivery-safe snapshots comparable to a clean run.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hotkeys.detector.config import Settings

DEFAULT_CAPACITY = 200
# The fewest keys a prune keeps: bound W/101, so any key above 1% of its shard's window is kept.
MIN_KEEP = 100
# Encoded size budget of one summary (keys as UTF-8 plus ENTRY_OVERHEAD each), see the module doc.
MAX_SUMMARY_BYTES = 330_000
# Digits and separators of one entry's counters, key length and pair count in ``encode_entries``.
ENTRY_OVERHEAD = 80
# Digits and separators of one burst bucket of a key's series in ``encode_entries`` (its offset from the
# latest bucket, at most the window's length in seconds, and its write units).
SERIES_PAIR_BYTES = 24
# The most burst buckets a key's series keeps: every bucket of a window of up to 16 buckets (160 s at
# the default 10 s span). Beyond it the lightest earlier ones give way, and a merged peak that needed
# them is a lower bound (each segment's own ``peak`` stays exact). The worst-case entry grows by this
# many pairs, which lowers the floor of keys a prune keeps (``keep_floor``).
MAX_SERIES_PAIRS = 16
# The longest key text a DynamoDB partition key can produce: 2,048 bytes of binary as base64. In UTF-8
# bytes, the bound of every key a summary counts (index key texts are cut to it).
MAX_KEY_TEXT_BYTES = 2732
MAX_ENTRY_BYTES = MAX_KEY_TEXT_BYTES + ENTRY_OVERHEAD + SERIES_PAIR_BYTES * MAX_SERIES_PAIRS

# The first number of an encoded summary's header (a key length is never negative): the only layout
# this version reads (docs/decisions.md, "One value type for a summary").
ENCODING_MARK = -7
# Numbers per entry in the header before its series: key length, writes, write units, first seen,
# latest bucket, its latest event second, peak, pairs in the series.
_ENTRY_NUMBERS = 8


class EncodingRetired(ValueError):
    """An encoded summary in a layout this version does not read (written by an earlier one)."""


@dataclass(frozen=True, slots=True)
class Counting:
    """How a summary counts, from the function's settings: the keys it keeps before pruning
    (``summary_capacity``) and the length of its keys' burst buckets (``alert_min_span_seconds``, the
    alert's minimum span)."""

    capacity: int
    alert_min_span_seconds: int

    @classmethod
    def of(cls, settings: Settings) -> Counting:
        return cls(settings.summary_capacity, settings.alert_min_span_seconds)


@dataclass(slots=True)
class Entry:
    """A tracked key's figures: writes and write units since it was admitted, its first and its latest
    event second (``last_seen``: None when read from a snapshot written before it was kept, then the end
    of its latest bucket stands in), the most write units of any of its burst buckets (``peak``), and
    its series: the start of each
    burst bucket it wrote in (``buckets``, ascending) and its write units there (``units``). Series of
    different segments add up bucket by bucket (``merge_entries``): the heaviest bucket of the sum is a
    merged key's true peak."""

    writes: int
    wcu: int
    first_seen: int
    peak: int
    buckets: list[int]
    units: list[int]
    last_seen: int | None = None

    def bump(self, wcu: int, event_time: int, alert_min_span_seconds: int) -> int:
        """Count one more write, in its totals and its burst bucket; returns the bytes its series grew by
        (``SERIES_PAIR_BYTES`` for a new bucket, else 0).

        Buckets are ``alert_min_span_seconds`` of event time aligned to the epoch, so the buckets of one
        key on different segments (shards, generations) line up and add. The heaviest bucket is the
        key's peak: a burst of at least two buckets' length is seen at its own rate even when the key
        wrote steadily before it in the window (the active-span rate would dilute it). A record of an
        earlier bucket than the latest (out of order) goes to its own bucket.
        """
        self.writes += 1
        self.wcu += wcu
        if event_time < self.first_seen:
            self.first_seen = event_time
        elif self.last_seen is not None and event_time > self.last_seen:
            self.last_seen = event_time
        bucket = event_time - event_time % alert_min_span_seconds
        buckets = self.buckets
        latest = buckets[-1]
        if bucket == latest:
            units = self.units
            total = units[-1] + wcu
            units[-1] = total
            if total > self.peak:  # noqa: PLR1730
                self.peak = total
            return 0
        if bucket > latest:
            if self.last_seen is None:  # (read unknown: every earlier write was in an earlier bucket)
                self.last_seen = event_time
            buckets.append(bucket)
            self.units.append(wcu)
            if wcu > self.peak:  # noqa: PLR1730
                self.peak = wcu
            return self._bounded_series()
        return self._add_earlier(bucket, wcu)

    def _add_earlier(self, bucket: int, wcu: int) -> int:
        """An out-of-order write to a bucket before the latest: into that bucket (a new one, in order, if
        the key had none there)."""
        position = len(self.buckets) - 1
        while position >= 0 and self.buckets[position] > bucket:
            position -= 1
        if position >= 0 and self.buckets[position] == bucket:
            self.units[position] += wcu
            self.peak = max(self.peak, self.units[position])
            return 0
        self.buckets.insert(position + 1, bucket)
        self.units.insert(position + 1, wcu)
        self.peak = max(self.peak, wcu)
        return self._bounded_series()

    def _bounded_series(self) -> int:
        """Keeps at most ``MAX_SERIES_PAIRS`` buckets (the lightest earlier one gives way); returns the
        bytes the series grew by since the caller added one bucket."""
        if len(self.buckets) <= MAX_SERIES_PAIRS:
            return SERIES_PAIR_BYTES
        units = self.units
        lightest = min(range(len(units) - 1), key=units.__getitem__)
        del self.buckets[lightest]
        del units[lightest]
        return 0

    def series(self) -> dict[int, int]:
        """The key's write units by burst bucket start."""
        return dict(zip(self.buckets, self.units, strict=True))

    def copy(self) -> Entry:
        return Entry(
            self.writes, self.wcu, self.first_seen, self.peak, list(self.buckets), list(self.units), self.last_seen
        )

    def last_second(self, span: int) -> int:
        """Its latest event second (``last_seen``; unknown: the last second of its latest bucket)."""
        return self.last_seen if self.last_seen is not None else self.buckets[-1] + span - 1


def merge_entries(parts: Iterable[Entry]) -> Entry:
    """One key's entries on several segments of a window as one: counts add, series add bucket by
    bucket, and the peak is the heaviest bucket of the sum (never below a part's own peak, which a cut
    series may no longer show)."""
    writes = wcu = peak = 0
    first_seen: int | None = None
    last_seen: int | None = None
    known = True  # every part knows its last second
    sums: dict[int, int] = {}
    for entry in parts:
        writes += entry.writes
        wcu += entry.wcu
        first_seen = entry.first_seen if first_seen is None else min(first_seen, entry.first_seen)
        known = known and entry.last_seen is not None
        last_seen = max(last_seen or 0, entry.last_seen or 0)
        peak = max(peak, entry.peak)
        for bucket, units in zip(entry.buckets, entry.units, strict=True):
            sums[bucket] = sums.get(bucket, 0) + units
    if first_seen is None:
        raise ValueError("no entries to merge")
    buckets = sorted(sums)
    peak = max([peak, *sums.values()])
    return Entry(
        writes, wcu, first_seen, peak, buckets, [sums[bucket] for bucket in buckets], last_seen if known else None
    )


def entry_bytes(key: str, entry: Entry | None = None) -> int:
    """What one entry costs in ``encode_entries`` (before compression): its key and counters, and its
    series' buckets (``entry``; without it, one bucket, as a new entry has)."""
    pairs = 1 if entry is None else len(entry.buckets)
    return (len(key) if key.isascii() else len(key.encode("utf-8"))) + ENTRY_OVERHEAD + SERIES_PAIR_BYTES * pairs


def encoded_bytes(entries: Mapping[str, Entry]) -> int:
    return sum(entry_bytes(key, entry) for key, entry in entries.items())


def allotment(summaries: int) -> int:
    """The byte budget of each of ``summaries`` summaries that share one segment."""
    return MAX_SUMMARY_BYTES // max(1, summaries)


def keep_floor(max_bytes: int) -> int:
    """The fewest keys a prune keeps within ``max_bytes``: leaves room for one more key of the largest size."""
    return min(MIN_KEEP, max(1, max_bytes // MAX_ENTRY_BYTES - 1))


def prune(entries: dict[str, Entry], capacity: int, max_bytes: int = MAX_SUMMARY_BYTES) -> int:
    """Keep the heaviest ``k`` keys (see the module doc) and subtract the ``(k+1)``-th largest
    weight from them; returns what was subtracted."""
    floor = min(keep_floor(max_bytes), capacity)
    if len(entries) <= floor:
        return 0
    ranked = sorted(entries.items(), key=lambda item: -item[1].wcu)
    keep = min(capacity, len(ranked) - 1)
    target = max_bytes // 2
    used = sum(entry_bytes(key, entry) for key, entry in ranked[:keep])
    while keep > floor and used > target:
        keep -= 1
        used -= entry_bytes(*ranked[keep])
    cut = ranked[keep][1].wcu
    for key, _entry in ranked[keep:]:
        del entries[key]
    for key, entry in ranked[:keep]:
        if entry.wcu <= cut:  # ties with the cut reach zero: dropped like the rest
            del entries[key]
        else:
            entry.wcu -= cut
            # (each write costs a unit or more: a key's true writes are at least its writes here and at most
            # its true units, so writes capped at the units left stay a lower estimate, never above them)
            entry.writes = min(entry.writes, entry.wcu)
    return cut


@dataclass(slots=True)
class Summary:
    """One shard's figures of a table's (or an index's) keys in one window: the tracked keys' entries,
    the bound ``pruned`` on what pruning took from them (and on any untracked key), and the exact
    writes and write units counted.

    ``max_bytes`` (the byte budget a segment gives it, ``allotment``) and ``used_bytes``
    (``encoded_bytes(entries)``, kept incrementally) are not part of its value."""

    entries: dict[str, Entry] = field(default_factory=dict)
    pruned: int = 0
    writes: int = 0
    wcu: int = 0
    max_bytes: int = field(default=MAX_SUMMARY_BYTES, compare=False, repr=False)
    used_bytes: int = field(default=0, compare=False, repr=False)

    def count(self, key: str, wcu: int, event_time: int, counting: Counting) -> int:
        """Fold one write: bump a tracked key, admit a new one (pruning first if it would break a limit);
        returns the weight pruned (usually 0)."""
        self.writes += 1
        self.wcu += wcu
        entries = self.entries
        entry = entries.get(key)
        if entry is not None:
            grown = entry.bump(wcu, event_time, counting.alert_min_span_seconds)
            if not grown:
                return 0
            self.used_bytes += grown
            if self.used_bytes <= self.max_bytes:
                return 0
            # The key's series grew past the budget: prune as an admission would.
            pruned = prune(entries, counting.capacity, self.max_bytes)
            self.used_bytes = encoded_bytes(entries)
            self.pruned += pruned
            return pruned
        size = entry_bytes(key)  # a new entry: one bucket
        pruned = 0
        if len(entries) >= 2 * counting.capacity or self.used_bytes + size > self.max_bytes:
            pruned = prune(entries, counting.capacity, self.max_bytes)
            self.used_bytes = encoded_bytes(entries)
            self.pruned += pruned
        bucket = event_time - event_time % counting.alert_min_span_seconds
        # (no helper: one call less per new key)
        entries[key] = Entry(1, wcu, event_time, wcu, [bucket], [wcu], event_time)
        self.used_bytes += size
        return pruned

    def compact(self, max_entries: int, max_bytes: int | None = None) -> Summary:
        """This summary with at most ``max_entries`` of its heaviest entries (``compact``), the bound on
        what was left out added to ``pruned``."""
        kept, cut = compact(self.entries, max_entries, max_bytes)
        return Summary(kept, self.pruned + cut, self.writes, self.wcu)


def merge(summaries: Iterable[tuple[Mapping[str, Entry], int]], copy: bool = True) -> tuple[dict[str, Entry], int]:
    """Merge (entries, pruned) pairs of the same window into one (unbounded) summary: each key's entries
    as ``merge_entries`` does (counts add, series add bucket by bucket, the peak is the sum's).
    ``copy=False``: a key found in one part only keeps that part's entry (for parts read to be merged
    and dropped: neither is changed after)."""
    parts: dict[str, list[Entry]] = {}
    pruned_total = 0
    for entries, pruned in summaries:
        pruned_total += pruned
        for key, entry in entries.items():
            parts.setdefault(key, []).append(entry)
    merged = {
        key: (found[0].copy() if copy else found[0]) if len(found) == 1 else merge_entries(found)
        for key, found in parts.items()
    }
    return merged, pruned_total


def merged(parts: Iterable[Summary]) -> Summary:
    """Summaries of the same window as one (unbounded): entries as ``merge``, the rest added."""
    found = list(parts)
    entries, pruned = merge((part.entries, part.pruned) for part in found)
    return Summary(entries, pruned, sum(part.writes for part in found), sum(part.wcu for part in found))


def compact(
    entries: Mapping[str, Entry], max_entries: int, max_bytes: int | None = None
) -> tuple[dict[str, Entry], int]:
    """The ``max_entries`` heaviest entries (fewer if they would take more than ``max_bytes`` in
    ``encode_entries``), and the bound on what was left out.

    Used to keep a persisted snapshot (one stats-table write) or a head small. Leaving out
    entries of weight at most ``c`` keeps the guarantees if ``c`` is added to
    ``pruned`` (the dropped keys then count as untracked); ``c`` is at most the
    heaviest left out, so the bound in the module doc holds. Without ``max_bytes`` the size
    needs no limit: the summary is already within ``MAX_SUMMARY_BYTES``, which fits a 400 KB item.
    """
    if len(entries) <= max_entries and max_bytes is None:
        return {key: entry.copy() for key, entry in entries.items()}, 0
    ranked = sorted(entries.items(), key=lambda item: (-item[1].wcu, item[0]))
    keep = min(max_entries, len(ranked))
    if max_bytes is not None:
        used = 0
        for position, (key, entry) in enumerate(ranked[:keep]):
            used += entry_bytes(key, entry)
            if used > max_bytes:
                keep = position
                break
    kept = {key: entry.copy() for key, entry in ranked[:keep]}
    return kept, max((entry.wcu for _, entry in ranked[keep:]), default=0)


def encode_entries(entries: Mapping[str, Entry], level: int = 6) -> bytes:
    """Entries as zlib-compressed bytes: a JSON list of integers (``ENCODING_MARK``, then per entry the
    key's length, its writes, write units, first seen, latest bucket, its latest event second, peak,
    its series' length in buckets and each bucket as (its offset before the latest, write units)), a
    newline, the keys' UTF-8.

    The slot after the latest bucket is the key's latest event second (``Entry.last_seen``). Snapshots
    written before it was kept hold the latest bucket's write units there, a count below the bucket's
    start (an epoch second): read back as unknown (None), never as a second; unknown is written as -1.
    Keys are never JSON-escaped (a control character would grow six-fold), so the size before
    compression is exactly ``encoded_bytes(entries)`` at most.
    """
    numbers: list[int] = [ENCODING_MARK]
    keys: list[bytes] = []
    for key, entry in entries.items():
        raw = key.encode("utf-8")
        keys.append(raw)
        buckets, units = entry.buckets, entry.units
        latest = buckets[-1]
        last = entry.last_seen if entry.last_seen is not None else -1  # unknown: below every bucket start
        numbers += (len(raw), entry.writes, entry.wcu, entry.first_seen, latest, last, entry.peak, len(buckets))
        for bucket, wcu in zip(buckets, units, strict=True):
            numbers.append(latest - bucket)
            numbers.append(wcu)
    header = json.dumps(numbers, separators=(",", ":")).encode("ascii")
    return zlib.compress(header + b"\n" + b"".join(keys), level)


def decode_entries(blob: bytes) -> dict[str, Entry]:
    header, newline, keys = zlib.decompress(blob).partition(b"\n")
    numbers = json.loads(header) if newline else None
    if not numbers or numbers[0] != ENCODING_MARK:
        raise EncodingRetired("a summary encoded by an earlier version of the detector")
    entries: dict[str, Entry] = {}
    offset = 0
    index = 1
    while index < len(numbers):
        length, writes, wcu, first_seen, latest, last, peak, pairs = numbers[index : index + _ENTRY_NUMBERS]
        series = numbers[index + _ENTRY_NUMBERS : index + _ENTRY_NUMBERS + 2 * pairs]
        buckets = list(map(latest.__sub__, series[::2]))
        entry = Entry(writes, wcu, first_seen, peak, buckets, series[1::2], last if last >= latest else None)
        entries[keys[offset : offset + length].decode("utf-8")] = entry
        offset += length
        index += _ENTRY_NUMBERS + 2 * pairs
    return entries


def pack(summary: Summary, level: int = 6, text: bool = False) -> dict[str, Any]:
    """The summary's one codec: its figures as a map (``writes``, ``wcu``, ``pruned``, ``entry_count``,
    ``entries_z``: ``encode_entries``, as base64 text when ``text``, for JSON). The stats item stores it
    as attributes, the carried state as a JSON object."""
    blob = encode_entries(summary.entries, level)
    return {
        "writes": summary.writes,
        "wcu": summary.wcu,
        "pruned": summary.pruned,
        "entry_count": len(summary.entries),
        "entries_z": base64.b64encode(blob).decode("ascii") if text else blob,
    }


def unpack(fields: Mapping[str, Any], sized: bool = True) -> Summary:
    """``pack``'s map (other attributes beside it are ignored) as a summary: ``entries_z`` as bytes, a
    boto3 ``Binary``, or base64 text."""
    raw = fields["entries_z"]
    blob = base64.b64decode(raw) if isinstance(raw, str) else bytes(raw.value) if hasattr(raw, "value") else bytes(raw)
    entries = decode_entries(blob)
    return Summary(
        entries,
        int(fields["pruned"]),
        int(fields["writes"]),
        int(fields["wcu"]),
        # (sized=False: a summary only read, never counted into, skips the sum; its used_bytes stays 0)
        used_bytes=encoded_bytes(entries) if sized else 0,
    )
