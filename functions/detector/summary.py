"""A bounded heavy-hitter summary of one shard's writes in one window.

The summary is a weighted Misra-Gries sketch with amortized pruning:

* every write adds its weight (write units) to its key's counter, exactly, while
  fewer than ``2 * capacity`` keys are tracked;
* when a new key would make it ``2 * capacity + 1``, the ``(capacity + 1)``-th
  largest counter value ``c`` is subtracted from every counter and the counters
  that reach zero are dropped. ``pruned`` accumulates ``c``.

Guarantees (W = the shard-window's total weight, which is kept exactly):

* a tracked key's counter is at most its true weight and at least true - pruned;
* an untracked key's true weight is at most ``pruned``;
* ``pruned <= W / (capacity + 1)``: each prune removes ``c`` from at least
  ``capacity + 1`` counters, and the counters never go below zero.

So with the default capacity of 200, every key holding more than 0.5% of its
shard's window weight is reported, with an error of at most ``pruned``.
Summaries merge by adding counters and adding ``pruned`` (the bounds add).

Pruning happens at a record, not at a batch boundary, so the summary after a
sequence of records is the same however the records were split into batches:
that is what makes redelivery-safe snapshots comparable to a clean run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

DEFAULT_CAPACITY = 200

# A tracked key's entry: [writes since admitted, write units, first event second].
WRITES, WCU, FIRST_SEEN = 0, 1, 2


@dataclass(frozen=True)
class KeyFigure:
    """One key's merged figures in one window of one table."""

    key: str
    writes: int
    wcu: int
    error_bound: int
    first_seen: int


def prune(entries: dict[str, list[int]], capacity: int) -> int:
    """Subtract the (capacity+1)-th largest weight from every entry; returns what was subtracted."""
    if len(entries) <= capacity:
        return 0
    weights = sorted((entry[WCU] for entry in entries.values()), reverse=True)
    cut = weights[capacity]
    for key in [key for key, entry in entries.items() if entry[WCU] <= cut]:
        del entries[key]
    for entry in entries.values():
        entry[WCU] -= cut
    return cut


def add(entries: dict[str, list[int]], key: str, wcu: int, event_time: int, capacity: int) -> int:
    """Fold one write into the summary; returns the weight pruned (usually 0)."""
    entry = entries.get(key)
    if entry is not None:
        entry[WRITES] += 1
        entry[WCU] += wcu
        return 0
    pruned = 0
    if len(entries) >= 2 * capacity:
        pruned = prune(entries, capacity)
    entries[key] = [1, wcu, event_time]
    return pruned


def merge(summaries: Iterable[tuple[dict[str, list[int]], int]]) -> tuple[dict[str, list[int]], int]:
    """Merge (entries, pruned) pairs of the same window into one (unbounded) summary."""
    merged: dict[str, list[int]] = {}
    pruned_total = 0
    for entries, pruned in summaries:
        pruned_total += pruned
        for key, (writes, wcu, first_seen) in entries.items():
            current = merged.get(key)
            if current is None:
                merged[key] = [writes, wcu, first_seen]
            else:
                current[WRITES] += writes
                current[WCU] += wcu
                current[FIRST_SEEN] = min(current[FIRST_SEEN], first_seen)
    return merged, pruned_total


def compact(entries: dict[str, list[int]], max_entries: int, max_key_bytes: int) -> tuple[dict[str, list[int]], int]:
    """The heaviest entries that fit both limits, and the bound on what was left out.

    Used to persist a snapshot within DynamoDB's 400 KB item limit. Leaving out
    entries of weight at most ``c`` keeps the guarantees if ``c`` is added to
    ``pruned`` (the dropped keys then count as untracked).
    """
    ranked = sorted(entries.items(), key=lambda item: (-item[1][WCU], item[0]))
    kept: dict[str, list[int]] = {}
    used = 0
    dropped_max = 0
    for key, entry in ranked:
        size = len(key.encode("utf-8")) + 24
        if len(kept) < max_entries and used + size <= max_key_bytes:
            kept[key] = list(entry)
            used += size
        else:
            dropped_max = max(dropped_max, entry[WCU])
    return kept, dropped_max
