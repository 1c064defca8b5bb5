"""When a partition is hot, and when it has cooled down. Pure functions of the window's figures.

A partition is judged on all of the window's segments that carry its writes: the live segment of
the shard that runs the rules, plus the others (``Elsewhere``: other shards' segments, a parent's
or a sibling's after a rollover or a split, earlier generations). An index partition takes writes
on every shard; a rollover divides a table key's window between parent and child.

Partition limit: a key's write rate is its write units divided by the event time it
has been active in the window (from its first write in the window to the latest record
seen, at least ``ALERT_MIN_SPAN_SECONDS``), or its heaviest burst bucket
(``ALERT_MIN_SPAN_SECONDS`` of event time, aligned to the epoch) of the sum of its
segments if that is higher. A burst that starts mid-window is measured over its own
duration, not diluted by the quiet part of the window; the minimum span keeps one large
item from looking like a sustained rate. The estimate adds the bounds of the summaries
that list the key (counter + pruned), so pruning never hides a hot key there.

Share of table: a key's write units over the table's (all segments, this window so
far), once the table's window total reaches ``SHARE_MIN_WCU``.

Resolution: a firing key resolves after a whole window in which it was never hot and
its window rate (or share) stayed below the threshold minus the hysteresis, judged on all
of that window's segments (``window_level``; the desk waits until they are written).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Protocol

from hotkeys.detector import summary
from hotkeys.detector.config import Settings
from hotkeys.detector.items import ItemStats
from hotkeys.detector.summary import Entry

PARTITION_LIMIT = "partition_limit"
SHARE = "share"


class Tallied(Protocol):
    """What the rules read of a shard's figures in a window: a segment's own (the table's
    partitions) or one of its indexes' (``state.View``)."""

    @property
    def table(self) -> str: ...
    @property
    def index(self) -> str | None: ...
    @property
    def window_start(self) -> int: ...
    @property
    def last_event(self) -> int: ...
    @property
    def origin(self) -> str: ...
    @property
    def entries(self) -> dict[str, Entry]: ...
    @property
    def pruned(self) -> int: ...
    @property
    def wcu(self) -> int: ...
    @property
    def has_sort_key(self) -> bool: ...
    @property
    def has_local_indexes(self) -> bool: ...
    @property
    def items(self) -> dict[str, ItemStats]: ...


@dataclass(frozen=True)
class HotKey:
    table: str
    key: str
    reason: str
    window_start: int
    window_seconds: int
    writes: int
    wcu: int
    wcu_per_second: float
    share: float
    event_time: int
    index: str | None = None  # a global secondary index's partition key (None: the table's)
    # The antipattern its name and window point to, and the remedy (diagnosis.classify), if any.
    pattern: str | None = None
    remedy: str | None = None
    # Hot item or hot collection (items.verdict): the kind and the advice, if known.
    items: str | None = None
    items_advice: str | None = None

    @property
    def incident_key(self) -> str:
        """The incident's name within its table (its sort key): see ``incident_key``."""
        return incident_key(self.reason, self.key, self.index)


# Bytes of the key's digest in an incident's name: 128 bits, so two keys of one table and reason
# never share an incident in practice.
INCIDENT_DIGEST_BYTES = 16


def incident_key(reason: str, key: str, index: str | None = None) -> str:
    """``<reason>#<digest>``, or ``index#<index>#<reason>#<digest>`` for an index partition key.

    The digest (BLAKE2b of the key's UTF-8) stands for the whole key, so the name is at most 310
    bytes for every key DynamoDB allows: a partition key value is up to 2,048 bytes (2,732
    characters of base64 for B) and a sort key value at most 1,024 bytes ("Service, account, and
    table quotas"). The key itself is an attribute of the incident: readers never parse the name.
    A table key's name starts with its reason and an index key's with ``index#``, so the two never
    collide.
    """
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=INCIDENT_DIGEST_BYTES).hexdigest()
    own = f"{reason}#{digest}"
    return own if index is None else f"index#{index}#{own}"


def suggested_shards(peak_wcu_per_second: float, alert_wcu_per_second: float) -> int:
    """Write-sharding estimate: suffixes needed to keep each shard key under the alert rate
    (``Settings.alert_wcu_per_second``: the alert threshold's share of a partition's limit)."""
    return max(1, math.ceil(peak_wcu_per_second / alert_wcu_per_second))


@dataclass(frozen=True)
class Elsewhere:
    """A partition's figures on the window's other segments (other shards, a parent or sibling after a
    rollover or split, earlier generations), merged (``summary.merge``): what the rules add to a live
    segment's own. Built from the segments' heads (``snapshots.head_of``).

    ``pruned`` is per key: the bounds of the segments that list the key. A segment whose head leaves a
    key out holds at most its own bound of it; that part is not counted (docs/decisions.md §49)."""

    wcu: int = 0
    entries: dict[str, Entry] = field(default_factory=dict)
    pruned: dict[str, int] = field(default_factory=dict)
    last_event: int = 0

    @property
    def keys(self) -> dict[str, int]:
        return {key: entry.wcu for key, entry in self.entries.items()}


NOWHERE = Elsewhere()


def active_rate(wcu: int, first_seen: int, last_event: int, min_span_seconds: int) -> float:
    """Write units per second over a key's active span: from its first write to the latest event
    seen, at least ``min_span_seconds`` (a burst is not divided by the idle rest of the window)."""
    return wcu / max(min_span_seconds, last_event - first_seen + 1)


def merged_key(segment: Tallied, key: str, entry: Entry, elsewhere: Elsewhere) -> tuple[Entry, int, int]:
    """The key's entry over the whole window so far (this segment's and its parts elsewhere: series add
    bucket by bucket), the bound to add to it, and the latest event second its figures reach."""
    other = elsewhere.entries.get(key)
    if other is None:
        return entry, segment.pruned, segment.last_event
    merged = summary.merge_entries((entry, other))
    return merged, segment.pruned + elsewhere.pruned.get(key, 0), max(segment.last_event, elsewhere.last_event)


def rate_of(entry: Entry, pruned: int, last_event: int, settings: Settings) -> tuple[int, float]:
    """(upper-bound write units, the alert rate: write units per second over the key's active span, or
    in its heaviest burst bucket of ``ALERT_MIN_SPAN_SECONDS`` if that is higher)."""
    upper = entry.wcu + pruned
    span = settings.alert_min_span_seconds
    return upper, max(active_rate(upper, entry.first_seen, last_event, span), (entry.peak + pruned) / span)


def partition_limit_hot(segment: Tallied, settings: Settings, elsewhere: Elsewhere = NOWHERE) -> list[HotKey]:
    """Keys whose partition's write rate, over all the window's segments (``elsewhere``: an index
    partition takes writes on every shard; a rollover or split divides a key's window), reaches the
    alert rate."""
    limit_rate = settings.alert_wcu_per_second
    floor = limit_rate * settings.alert_min_span_seconds  # below it neither rate can reach the alert rate
    hot = []
    for key, entry in segment.entries.items():
        other = elsewhere.entries.get(key)
        bound = segment.pruned + (elsewhere.pruned.get(key, 0) if other is not None else 0)
        weight, peak = (entry.wcu, entry.peak) if other is None else (entry.wcu + other.wcu, entry.peak + other.peak)
        if weight + bound < floor and peak + bound < floor:  # the sum's peak is at most the parts' peaks
            continue
        merged, pruned, last_event = merged_key(segment, key, entry, elsewhere)
        upper, rate = rate_of(merged, pruned, last_event, settings)
        if rate >= limit_rate:
            hot.append(_hot(segment, settings, key, merged, PARTITION_LIMIT, upper, rate, 0.0))
    return hot


def share_hot(segment: Tallied, settings: Settings, elsewhere: Elsewhere = NOWHERE) -> list[HotKey]:
    """The keys at or above the share threshold of the table's window total (this segment's and the
    window's other segments'), counting each key's parts elsewhere, once the total reaches
    ``SHARE_MIN_WCU``."""
    table_wcu = segment.wcu + elsewhere.wcu
    if table_wcu < settings.share_min_wcu or table_wcu <= 0:
        return []
    needed = settings.share_threshold * table_wcu
    hot = []
    for key, entry in segment.entries.items():
        other = elsewhere.entries.get(key)
        bound = segment.pruned + (elsewhere.pruned.get(key, 0) if other is not None else 0)
        if entry.wcu + (other.wcu if other is not None else 0) + bound < needed:
            continue
        merged, pruned, last_event = merged_key(segment, key, entry, elsewhere)
        upper, rate = rate_of(merged, pruned, last_event, settings)
        hot.append(_hot(segment, settings, key, merged, SHARE, upper, rate, min(1.0, upper / table_wcu)))
    return hot


def near(
    segment: Tallied,
    settings: Settings,
    elsewhere: Elsewhere,
    growth: dict[str, float],
    fraction: float,
    shards: int = 1,
) -> list[tuple[str, str]]:
    """(key, reason) of the keys that may be within ``fraction`` of the alert rate, or of the share
    threshold (table views), on the window's merged figures, ``elsewhere`` being older than this
    segment's own figures.

    A key's rate here is scaled by ``growth`` (its whole window's write units over its part here, when
    ``elsewhere`` was read), or its parts elsewhere are added as they were read, whichever is more. An
    index partition takes writes on every shard alike, so an index key is also scaled by ``shards``
    (the shards the window's heads came from): one that appears mid-window is spread before any head
    lists it. A table key with no part elsewhere is judged exactly on this segment's figures; a part
    that appears elsewhere later is found by the window's final look (a rollover's child finds its
    parent's part at its own first look)."""
    limit_rate = fraction * settings.alert_wcu_per_second
    span = settings.alert_min_span_seconds
    table_wcu = segment.wcu + elsewhere.wcu
    shares = segment.index is None and table_wcu >= fraction * settings.share_min_wcu and table_wcu > 0
    needed = fraction * settings.share_threshold * table_wcu
    spread = segment.index is not None and shards > 1
    found = []
    for key, entry in segment.entries.items():
        other = elsewhere.entries.get(key)
        if other is None and not spread:
            continue
        upper, rate = rate_of(entry, segment.pruned, segment.last_event, settings)
        scaled = rate * max(growth.get(key, 1.0), shards if spread else 1)
        if other is not None:
            scaled = max(scaled, rate + other.wcu / max(span, segment.last_event - other.first_seen + 1))
            upper += other.wcu
        if scaled >= limit_rate:
            found.append((key, PARTITION_LIMIT))
        if shares and upper >= needed:
            found.append((key, SHARE))
    return found


def resolve_level(settings: Settings, reason: str) -> float:
    """Below this (rate for partition_limit, share for share) for a whole window, a firing key resolves."""
    ratio = (settings.alert_threshold - settings.alert_hysteresis) / settings.alert_threshold
    if reason == PARTITION_LIMIT:
        return ratio * settings.alert_wcu_per_second
    return ratio * settings.share_threshold


def window_level(window: Elsewhere, settings: Settings, key: str, reason: str) -> float:
    """The key's rate over a whole completed window (partition_limit) or its share of the table's write
    units (share), from all of the window's segments (``window``). A table under ``SHARE_MIN_WCU`` in
    that window has no share to speak of: 0."""
    entry = window.entries.get(key)
    upper = (entry.wcu if entry else 0) + window.pruned.get(key, 0)
    if reason == PARTITION_LIMIT:
        return upper / settings.window_seconds
    if window.wcu < settings.share_min_wcu or window.wcu <= 0:
        return 0.0
    return upper / window.wcu


def _hot(
    segment: Tallied,
    settings: Settings,
    key: str,
    entry: Entry,
    reason: str,
    wcu: int,
    rate: float,
    share: float,
) -> HotKey:
    return HotKey(
        table=segment.table,
        index=segment.index,
        key=key,
        reason=reason,
        window_start=segment.window_start,
        window_seconds=settings.window_seconds,
        writes=entry.writes,
        wcu=wcu,
        wcu_per_second=round(rate, 1),
        share=round(share, 4),
        event_time=segment.last_event,
    )
