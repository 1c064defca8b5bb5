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

Summaries merge by adding counters and adding ``pruned`` (the bounds add).

Global secondary indexes: a segment that also counts a table's indexes carries one summary
per index beside the table's, and all of them share ``MAX_SUMMARY_BYTES`` (the state and
the stats item must still fit): each gets ``allotment(n)`` bytes for ``n`` summaries, and
the fewest keys a prune keeps is ``keep_floor(allotment)`` -- ``MIN_KEEP`` while that many
keys of the largest size fit, fewer beside many indexes (57 with one index, 18 with five).
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
# Digits and separators of one entry's six counters and key length in ``encode_entries``.
ENTRY_OVERHEAD = 75
# The longest key text a DynamoDB partition key can produce: 2,048 bytes of binary as base64. In UTF-8
# bytes, the bound of every key a summary counts (index key texts are cut to it).
MAX_KEY_TEXT_BYTES = 2732
MAX_ENTRY_BYTES = MAX_KEY_TEXT_BYTES + ENTRY_OVERHEAD

# A tracked key's entry: [writes since admitted, write units, first event second, the start of its
# latest burst bucket, write units in that bucket, the most write units of any of its buckets].
WRITES, WCU, FIRST_SEEN, BUCKET, BUCKET_WCU, PEAK = 0, 1, 2, 3, 4, 5
# The header's first number in the current encoding (a length is never negative).
ENCODING_MARK = -6


@dataclass(frozen=True)
class KeyFigure:
    """One key's merged figures in one window of one table."""

    key: str
    writes: int
    wcu: int
    error_bound: int
    first_seen: int
    # The most write units in one burst bucket (``bump``). Not part of the exactly-once figures: a
    # bucket split between segments (rollover, redrive, a sealed segment) counts as its larger part.
    peak_wcu: int = field(default=0, compare=False)


def new_entry(wcu: int, event_time: int, bucket_seconds: int) -> list[int]:
    return [1, wcu, event_time, event_time - event_time % bucket_seconds, wcu, wcu]


def bump(entry: list[int], wcu: int, event_time: int, bucket_seconds: int) -> None:
    """Count one more write of a tracked key, and its burst bucket.

    Buckets are ``bucket_seconds`` of event time aligned to the epoch (the alert's minimum span):
    the heaviest bucket is the key's peak, so a burst of at least two buckets' length is seen at
    its own rate even when the key wrote steadily before it in the window (the active-span rate
    would dilute it). Records of an earlier bucket than the latest (out of order) count in the
    totals only, and move the first event second back if they are earlier.
    """
    entry[WRITES] += 1
    entry[WCU] += wcu
    if event_time < entry[FIRST_SEEN]:  # noqa: PLR1730 (per record: a compare, not a call)
        entry[FIRST_SEEN] = event_time
    bucket = event_time - event_time % bucket_seconds
    if bucket == entry[BUCKET]:
        entry[BUCKET_WCU] += wcu
    elif bucket > entry[BUCKET]:
        entry[BUCKET] = bucket
        entry[BUCKET_WCU] = wcu
    else:
        return
    entry[PEAK] = max(entry[PEAK], entry[BUCKET_WCU])


def entry_bytes(key: str) -> int:
    """What one entry costs in ``encode_entries`` (before compression)."""
    return (len(key) if key.isascii() else len(key.encode("utf-8"))) + ENTRY_OVERHEAD


def encoded_bytes(entries: dict[str, list[int]]) -> int:
    return sum(entry_bytes(key) for key in entries)


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
    used = sum(entry_bytes(key) for key, _ in ranked[:keep])
    while keep > floor and used > target:
        keep -= 1
        used -= entry_bytes(ranked[keep][0])
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
        bump(entry, wcu, event_time, bucket_seconds)
        return 0, used_bytes
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
    size = entry_bytes(key)
    pruned = 0
    if len(entries) >= 2 * capacity or used_bytes + size > max_bytes:
        pruned = prune(entries, capacity, max_bytes)
        used_bytes = encoded_bytes(entries)
    entries[key] = new_entry(wcu, event_time, bucket_seconds)
    return pruned, used_bytes + size


def merge(summaries: Iterable[tuple[dict[str, list[int]], int]]) -> tuple[dict[str, list[int]], int]:
    """Merge (entries, pruned) pairs of the same window into one (unbounded) summary.

    Counts add; the peak is the largest of the parts' (a burst bucket split between two segments,
    around a shard rollover, shows as its larger part)."""
    merged: dict[str, list[int]] = {}
    pruned_total = 0
    for entries, pruned in summaries:
        pruned_total += pruned
        for key, entry in entries.items():
            current = merged.get(key)
            if current is None:
                merged[key] = list(entry)
                continue
            current[WRITES] += entry[WRITES]
            current[WCU] += entry[WCU]
            current[FIRST_SEEN] = min(current[FIRST_SEEN], entry[FIRST_SEEN])
            if entry[BUCKET] > current[BUCKET]:
                current[BUCKET], current[BUCKET_WCU] = entry[BUCKET], entry[BUCKET_WCU]
            elif entry[BUCKET] == current[BUCKET]:
                current[BUCKET_WCU] += entry[BUCKET_WCU]
            current[PEAK] = max(current[PEAK], entry[PEAK], current[BUCKET_WCU])
    return merged, pruned_total


def compact(entries: dict[str, list[int]], max_entries: int) -> tuple[dict[str, list[int]], int]:
    """The ``max_entries`` heaviest entries, and the bound on what was left out.

    Used to keep a persisted snapshot (one stats-table write) small. Leaving out
    entries of weight at most ``c`` keeps the guarantees if ``c`` is added to
    ``pruned`` (the dropped keys then count as untracked); ``c`` is at most the
    ``(max_entries + 1)``-th largest counter, so the bound in the module doc holds.
    The byte size needs no limit here: the summary is already within
    ``MAX_SUMMARY_BYTES``, which fits a 400 KB item.
    """
    if len(entries) <= max_entries:
        return {key: list(entry) for key, entry in entries.items()}, 0
    ranked = sorted(entries.items(), key=lambda item: (-item[1][WCU], item[0]))
    kept = {key: list(entry) for key, entry in ranked[:max_entries]}
    return kept, max(entry[WCU] for _, entry in ranked[max_entries:])


def encode_entries(entries: dict[str, list[int]], level: int = 6) -> bytes:
    """Entries as zlib-compressed bytes: a JSON list of integers (``ENCODING_MARK``, then per entry
    the key's length and its six counters), a newline, the keys' UTF-8.

    Keys are never JSON-escaped (a control character would grow six-fold), so the size before
    compression is exactly ``encoded_bytes(entries)`` at most.
    """
    numbers: list[int] = [ENCODING_MARK]
    keys: list[bytes] = []
    for key, entry in entries.items():
        raw = key.encode("utf-8")
        keys.append(raw)
        numbers.append(len(raw))
        numbers.extend(entry)
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
        for index in range(1, len(numbers), 7):
            length = numbers[index]
            entries[keys[offset : offset + length].decode("utf-8")] = numbers[index + 1 : index + 7]
            offset += length
        return entries
    for index in range(0, len(numbers), 4):  # before burst buckets: [length, writes, wcu, first_seen]
        length, writes, wcu, first_seen = numbers[index : index + 4]
        entries[keys[offset : offset + length].decode("utf-8")] = _upgraded(writes, wcu, first_seen)
        offset += length
    return entries


def _upgraded(writes: int, wcu: int, first_seen: int) -> list[int]:
    """An entry stored before burst buckets: no bucket known, no peak beyond what it shows."""
    return [writes, wcu, first_seen, first_seen, 0, 0]
