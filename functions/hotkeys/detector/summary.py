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

Each entry also carries its key's series: its write units per burst bucket (``bump``), at
most ``MAX_SERIES_PAIRS`` buckets, counted in its size. Summaries merge by adding counters,
series (bucket by bucket: a merged key's peak is the heaviest bucket of the sum) and
``pruned`` (the bounds add).

Global secondary indexes: a segment that also counts a table's indexes carries one summary
per index beside the table's, and all of them share ``MAX_SUMMARY_BYTES`` (the state and
the stats item must still fit): each gets ``allotment(n)`` bytes for ``n`` summaries, and
the fewest keys a prune keeps is ``keep_floor(allotment)`` -- ``MIN_KEEP`` while that many
keys of the largest size fit, fewer beside many indexes (50 with one index, 16 with five).
The bound ``W / (k_min + 1)`` holds per summary with that floor; it is reached only by
keys of kilobytes, since ``k`` stays at ``capacity`` while the top keys fit half the allotment.

Pruning happens at a record, not at a batch boundary, so the summary after a
sequence of records is the same however the records were split into batches:
that is what makes redelivery-safe snapshots comparable to a clean run.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

DEFAULT_CAPACITY = 200
# The fewest keys a prune keeps: bound W/101, so any key above 1% of its shard's window is kept.
MIN_KEEP = 100
# Encoded size budget of one summary (keys as UTF-8 plus ENTRY_OVERHEAD each), see the module doc.
MAX_SUMMARY_BYTES = 330_000
# Digits and separators of one entry's six counters, key length and pair count in ``encode_entries``.
ENTRY_OVERHEAD = 80
# Digits and separators of one burst bucket of a key's series in ``encode_entries`` (its offset from the
# latest bucket, at most the window's length in seconds, and its write units).
SERIES_PAIR_BYTES = 24
# The most burst buckets a key's series keeps: every bucket of a window of up to 16 buckets (160 s at
# the default 10 s span). Beyond it the lightest earlier ones give way, and a merged peak that needed
# them is a lower bound (each segment's own ``PEAK`` stays exact). The worst-case entry grows by this
# many pairs, which lowers the floor of keys a prune keeps (``keep_floor``).
MAX_SERIES_PAIRS = 16
# The longest key text a DynamoDB partition key can produce: 2,048 bytes of binary as base64. In UTF-8
# bytes, the bound of every key a summary counts (index key texts are cut to it).
MAX_KEY_TEXT_BYTES = 2732
MAX_ENTRY_BYTES = MAX_KEY_TEXT_BYTES + ENTRY_OVERHEAD + SERIES_PAIR_BYTES * MAX_SERIES_PAIRS

# A tracked key's entry: [writes since admitted, write units, first event second, the start of its
# latest burst bucket, write units in that bucket, the most write units of any of its buckets], then
# its series from ``SERIES`` on: (bucket start, write units) pairs in bucket order, one per burst bucket
# it wrote in. The last pair is always (BUCKET, BUCKET_WCU). Series of different segments add up bucket
# by bucket (``merge_entries``): the heaviest bucket of the sum is a merged key's true peak.
WRITES, WCU, FIRST_SEEN, BUCKET, BUCKET_WCU, PEAK = 0, 1, 2, 3, 4, 5
SERIES = 6
# The header's first number in the current encoding (a length is never negative); -6: before series.
ENCODING_MARK = -7
SERIESLESS_MARK = -6


@dataclass(frozen=True)
class KeyFigure:
    """One key's merged figures in one window of one table."""

    key: str
    writes: int
    wcu: int
    error_bound: int
    first_seen: int
    # The most write units in one burst bucket (``bump``) of the sum of the key's segments (their
    # series add up bucket by bucket). Not part of the exactly-once figures (a series cut at
    # ``MAX_SERIES_PAIRS`` makes it a lower bound).
    peak_wcu: int = field(default=0, compare=False)


def new_entry(wcu: int, event_time: int, bucket_seconds: int) -> list[int]:
    bucket = event_time - event_time % bucket_seconds
    return [1, wcu, event_time, bucket, wcu, wcu, bucket, wcu]


def bump(entry: list[int], wcu: int, event_time: int, bucket_seconds: int) -> int:
    """Count one more write of a tracked key, in its totals and its burst bucket; returns the bytes its
    series grew by (``SERIES_PAIR_BYTES`` for a new bucket, else 0).

    Buckets are ``bucket_seconds`` of event time aligned to the epoch (the alert's minimum span), so
    the buckets of one key on different segments (shards, generations) line up and add. The heaviest
    bucket is the key's peak: a burst of at least two buckets' length is seen at its own rate even
    when the key wrote steadily before it in the window (the active-span rate would dilute it).
    A record of an earlier bucket than the latest (out of order) goes to its own bucket.
    """
    entry[WRITES] += 1
    entry[WCU] += wcu
    if event_time < entry[FIRST_SEEN]:  # noqa: PLR1730 (per record: a compare, not a call)
        entry[FIRST_SEEN] = event_time
    bucket = event_time - event_time % bucket_seconds
    latest = entry[BUCKET]
    if bucket == latest:
        entry[-1] += wcu
        total = entry[BUCKET_WCU] = entry[BUCKET_WCU] + wcu
        if total > entry[PEAK]:  # noqa: PLR1730
            entry[PEAK] = total
        return 0
    if bucket > latest:
        entry[BUCKET] = bucket
        entry[BUCKET_WCU] = wcu
        if wcu > entry[PEAK]:  # noqa: PLR1730
            entry[PEAK] = wcu
        entry.append(bucket)
        entry.append(wcu)
        return _bounded_series(entry)
    return _add_earlier(entry, bucket, wcu)


def _add_earlier(entry: list[int], bucket: int, wcu: int) -> int:
    """An out-of-order write to a bucket before the latest: into that bucket's pair (a new one, in order,
    if the key had none there)."""
    position = len(entry) - 2
    while position >= SERIES and entry[position] > bucket:
        position -= 2
    if position >= SERIES and entry[position] == bucket:
        entry[position + 1] += wcu
        entry[PEAK] = max(entry[PEAK], entry[position + 1])
        return 0
    entry[position + 2 : position + 2] = [bucket, wcu]
    entry[PEAK] = max(entry[PEAK], wcu)
    return _bounded_series(entry)


def _bounded_series(entry: list[int]) -> int:
    """Keeps at most ``MAX_SERIES_PAIRS`` pairs (the lightest earlier one gives way); returns the bytes
    the series grew by since the caller added one pair."""
    if len(entry) <= SERIES + 2 * MAX_SERIES_PAIRS:
        return SERIES_PAIR_BYTES
    lightest = min(range(SERIES, len(entry) - 2, 2), key=lambda index: entry[index + 1])
    del entry[lightest : lightest + 2]
    return 0


def series_of(entry: list[int]) -> dict[int, int]:
    """The key's write units by burst bucket start."""
    return {entry[index]: entry[index + 1] for index in range(SERIES, len(entry), 2)}


def merge_entries(parts: Iterable[list[int]]) -> list[int]:
    """One key's entries on several segments of a window as one: counts add, series add bucket by
    bucket, and the peak is the heaviest bucket of the sum (never below a part's own peak, which a cut
    series may no longer show)."""
    writes = wcu = peak = 0
    first_seen: int | None = None
    buckets: dict[int, int] = {}
    for entry in parts:
        writes += entry[WRITES]
        wcu += entry[WCU]
        first_seen = entry[FIRST_SEEN] if first_seen is None else min(first_seen, entry[FIRST_SEEN])
        peak = max(peak, entry[PEAK])
        for index in range(SERIES, len(entry), 2):
            buckets[entry[index]] = buckets.get(entry[index], 0) + entry[index + 1]
    if first_seen is None:
        raise ValueError("no entries to merge")
    merged = [writes, wcu, first_seen, 0, 0, peak]
    for bucket in sorted(buckets):
        merged.append(bucket)
        merged.append(buckets[bucket])
    if buckets:
        merged[BUCKET], merged[BUCKET_WCU] = merged[-2], merged[-1]
        merged[PEAK] = max(peak, *buckets.values())
    return merged


def entry_bytes(key: str, entry: list[int] | None = None) -> int:
    """What one entry costs in ``encode_entries`` (before compression): its key and counters, and its
    series' pairs (``entry``; without it, one pair, as a new entry has)."""
    pairs = 1 if entry is None else (len(entry) - SERIES) // 2
    return (len(key) if key.isascii() else len(key.encode("utf-8"))) + ENTRY_OVERHEAD + SERIES_PAIR_BYTES * pairs


def encoded_bytes(entries: dict[str, list[int]]) -> int:
    return sum(entry_bytes(key, entry) for key, entry in entries.items())


def allotment(summaries: int) -> int:
    """The byte budget of each of ``summaries`` summaries that share one segment."""
    return MAX_SUMMARY_BYTES // max(1, summaries)


def keep_floor(max_bytes: int) -> int:
    """The fewest keys a prune keeps within ``max_bytes``: leaves room for one more key of the largest size."""
    return min(MIN_KEEP, max(1, max_bytes // MAX_ENTRY_BYTES - 1))


def prune(entries: dict[str, list[int]], capacity: int, max_bytes: int = MAX_SUMMARY_BYTES) -> int:
    """Keep the heaviest ``k`` keys (see the module doc) and subtract the ``(k+1)``-th largest
    weight from them; returns what was subtracted."""
    floor = min(keep_floor(max_bytes), capacity)
    if len(entries) <= floor:
        return 0
    ranked = sorted(entries.items(), key=lambda item: -item[1][WCU])
    keep = min(capacity, len(ranked) - 1)
    target = max_bytes // 2
    used = sum(entry_bytes(key, entry) for key, entry in ranked[:keep])
    while keep > floor and used > target:
        keep -= 1
        used -= entry_bytes(*ranked[keep])
    cut = ranked[keep][1][WCU]
    for key, _entry in ranked[keep:]:
        del entries[key]
    for key, entry in ranked[:keep]:
        if entry[WCU] <= cut:  # ties with the cut reach zero: dropped like the rest
            del entries[key]
        else:
            entry[WCU] -= cut
    return cut


def add(
    entries: dict[str, list[int]],
    key: str,
    wcu: int,
    event_time: int,
    capacity: int,
    max_bytes: int = MAX_SUMMARY_BYTES,
    bucket_seconds: int = 10,
) -> int:
    """Fold one write into the summary; returns the weight pruned (usually 0).

    Callers on the hot path keep the encoded size themselves (``state.Segment``); this
    form recomputes it and serves tests and tools.
    """
    pruned, _used = count(entries, encoded_bytes(entries), key, wcu, event_time, capacity, max_bytes, bucket_seconds)
    return pruned


def count(
    entries: dict[str, list[int]],
    used_bytes: int,
    key: str,
    wcu: int,
    event_time: int,
    capacity: int,
    max_bytes: int,
    bucket_seconds: int,
) -> tuple[int, int]:
    """Fold one write: bump a tracked key, admit a new one. ``used_bytes`` is
    ``encoded_bytes(entries)``, kept by the caller; returns (weight pruned, the new encoded size)."""
    entry = entries.get(key)
    if entry is not None:
        used_bytes += bump(entry, wcu, event_time, bucket_seconds)
        if used_bytes <= max_bytes:
            return 0, used_bytes
        # The key's series grew past the budget: prune as an admission would.
        pruned = prune(entries, capacity, max_bytes)
        return pruned, encoded_bytes(entries)
    return admit(entries, used_bytes, key, wcu, event_time, capacity, max_bytes, bucket_seconds)


def admit(
    entries: dict[str, list[int]],
    used_bytes: int,
    key: str,
    wcu: int,
    event_time: int,
    capacity: int,
    max_bytes: int,
    bucket_seconds: int,
) -> tuple[int, int]:
    """Track a key not yet in ``entries`` (pruning first if it would break a limit).

    ``used_bytes`` is ``encoded_bytes(entries)``, kept by the caller; returns (weight pruned,
    the new encoded size).
    """
    size = entry_bytes(key)  # a new entry: one pair
    pruned = 0
    if len(entries) >= 2 * capacity or used_bytes + size > max_bytes:
        pruned = prune(entries, capacity, max_bytes)
        used_bytes = encoded_bytes(entries)
    entries[key] = new_entry(wcu, event_time, bucket_seconds)
    return pruned, used_bytes + size


def merge(summaries: Iterable[tuple[dict[str, list[int]], int]]) -> tuple[dict[str, list[int]], int]:
    """Merge (entries, pruned) pairs of the same window into one (unbounded) summary: each key's entries
    as ``merge_entries`` does (counts add, series add bucket by bucket, the peak is the sum's)."""
    parts: dict[str, list[list[int]]] = {}
    pruned_total = 0
    for entries, pruned in summaries:
        pruned_total += pruned
        for key, entry in entries.items():
            parts.setdefault(key, []).append(entry)
    merged = {key: list(found[0]) if len(found) == 1 else merge_entries(found) for key, found in parts.items()}
    return merged, pruned_total


def compact(
    entries: dict[str, list[int]], max_entries: int, max_bytes: int | None = None
) -> tuple[dict[str, list[int]], int]:
    """The ``max_entries`` heaviest entries (fewer if they would take more than ``max_bytes`` in
    ``encode_entries``), and the bound on what was left out.

    Used to keep a persisted snapshot (one stats-table write) or a head small. Leaving out
    entries of weight at most ``c`` keeps the guarantees if ``c`` is added to
    ``pruned`` (the dropped keys then count as untracked); ``c`` is at most the
    heaviest left out, so the bound in the module doc holds. Without ``max_bytes`` the size
    needs no limit: the summary is already within ``MAX_SUMMARY_BYTES``, which fits a 400 KB item.
    """
    if len(entries) <= max_entries and max_bytes is None:
        return {key: list(entry) for key, entry in entries.items()}, 0
    ranked = sorted(entries.items(), key=lambda item: (-item[1][WCU], item[0]))
    keep = min(max_entries, len(ranked))
    if max_bytes is not None:
        used = 0
        for position, (key, entry) in enumerate(ranked[:keep]):
            used += entry_bytes(key, entry)
            if used > max_bytes:
                keep = position
                break
    kept = {key: list(entry) for key, entry in ranked[:keep]}
    return kept, max((entry[WCU] for _, entry in ranked[keep:]), default=0)


def encode_entries(entries: dict[str, list[int]], level: int = 6) -> bytes:
    """Entries as zlib-compressed bytes: a JSON list of integers (``ENCODING_MARK``, then per entry the
    key's length, its six counters, its series' length in pairs and each pair as (offset of the bucket
    before ``BUCKET``, write units)), a newline, the keys' UTF-8.

    Keys are never JSON-escaped (a control character would grow six-fold), so the size before
    compression is exactly ``encoded_bytes(entries)`` at most.
    """
    numbers: list[int] = [ENCODING_MARK]
    keys: list[bytes] = []
    for key, entry in entries.items():
        raw = key.encode("utf-8")
        keys.append(raw)
        numbers.append(len(raw))
        numbers.extend(entry[:SERIES])
        latest = entry[BUCKET]
        numbers.append((len(entry) - SERIES) // 2)
        for index in range(SERIES, len(entry), 2):
            numbers.append(latest - entry[index])
            numbers.append(entry[index + 1])
    header = json.dumps(numbers, separators=(",", ":")).encode("ascii")
    return zlib.compress(header + b"\n" + b"".join(keys), level)


def decode_entries(blob: bytes) -> dict[str, list[int]]:
    header, newline, keys = zlib.decompress(blob).partition(b"\n")
    if not newline:  # stored by an earlier version: JSON rows [key, writes, wcu, first_seen]
        return {row[0]: _upgraded(int(row[1]), int(row[2]), int(row[3])) for row in json.loads(header)}
    numbers = json.loads(header)
    entries: dict[str, list[int]] = {}
    offset = 0
    if numbers and numbers[0] == ENCODING_MARK:
        index = 1
        while index < len(numbers):
            length = numbers[index]
            entry = numbers[index + 1 : index + 7]
            pairs = numbers[index + 7]
            latest = entry[BUCKET]
            for pair in range(index + 8, index + 8 + 2 * pairs, 2):
                entry.append(latest - numbers[pair])
                entry.append(numbers[pair + 1])
            entries[keys[offset : offset + length].decode("utf-8")] = entry
            offset += length
            index += 8 + 2 * pairs
        return entries
    if numbers and numbers[0] == SERIESLESS_MARK:  # before series: the latest bucket is all it knows
        for index in range(1, len(numbers), 7):
            length = numbers[index]
            entry = numbers[index + 1 : index + 7]
            entries[keys[offset : offset + length].decode("utf-8")] = [*entry, entry[BUCKET], entry[BUCKET_WCU]]
            offset += length
        return entries
    for index in range(0, len(numbers), 4):  # before burst buckets: [length, writes, wcu, first_seen]
        length, writes, wcu, first_seen = numbers[index : index + 4]
        entries[keys[offset : offset + length].decode("utf-8")] = _upgraded(writes, wcu, first_seen)
        offset += length
    return entries


def _upgraded(writes: int, wcu: int, first_seen: int) -> list[int]:
    """An entry stored before burst buckets: no bucket known, no peak beyond what it shows."""
    return [writes, wcu, first_seen, first_seen, 0, 0, first_seen, 0]
