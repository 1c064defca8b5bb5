"""When a key is hot, and when it has cooled down. Pure functions of the shard's figures.

Partition limit: a key's write rate is its write units divided by the event time it
has been active in the window (from its first write in the window to the shard's
latest record, at least ``ALERT_MIN_SPAN_SECONDS``), or its heaviest burst bucket
(``ALERT_MIN_SPAN_SECONDS`` of event time, aligned to the epoch) if that is higher.
A burst that starts mid-window is measured over its own duration, not diluted by the
quiet part of the window, and a burst of a key that wrote steadily before it shows in
its buckets (any burst of two buckets' length fills one); the minimum span keeps one
large item from looking like a sustained rate. The
estimate uses the summary's upper bound (counter + pruned), so pruning can never
hide a hot key.

Share of table: a key's write units over the table's (all shards, this window so
far), once the table's window total reaches ``SHARE_MIN_WCU``. A key's write units
include its parts on other segments of the window (``elsewhere``): after a shard
rollover a key's window is split between the parent's segment and the child's.

Resolution: a firing key resolves at the end of a window in which it was never hot
and its full-window rate (or share) stayed below the threshold minus the hysteresis.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Protocol

from hotkeys.detector.config import Settings
from hotkeys.detector.items import ItemStats
from hotkeys.detector.summary import FIRST_SEEN, PEAK, WCU, WRITES

PARTITION_LIMIT = "partition_limit"
SHARE = "share"


class Tallied(Protocol):
    """What the rules read of a shard's figures in a window: a segment's own (the table's
    partitions) or one of its indexes' (``state.IndexView``)."""

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
    def entries(self) -> dict[str, list[int]]: ...
    @property
    def pruned(self) -> int: ...
    @property
    def wcu(self) -> int: ...
    @property
    def has_sort_key(self) -> bool: ...
    @property
    def pinned(self) -> bool: ...
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


def suggested_shards(peak_wcu_per_second: float, partition_wcu_limit: int) -> int:
    """Write-sharding estimate: suffixes needed to keep each shard key under 80% of a partition."""
    return max(1, math.ceil(peak_wcu_per_second / (0.8 * partition_wcu_limit)))


def active_rate(wcu: int, first_seen: int, last_event: int, min_span_seconds: int) -> float:
    """Write units per second over a key's active span: from its first write to the latest event
    seen, at least ``min_span_seconds`` (a burst is not divided by the idle rest of the window)."""
    return wcu / max(min_span_seconds, last_event - first_seen + 1)


def peak_rate(entry: list[int], pruned: int, span_seconds: int) -> float:
    """Write units per second in the key's heaviest burst bucket (``span_seconds`` long, the alert's
    minimum span; ``summary.bump``), as an upper bound."""
    return (entry[PEAK] + pruned) / span_seconds


def key_rate(segment: Tallied, entry: list[int], settings: Settings) -> tuple[int, float]:
    """(upper-bound write units, write units per second: over the key's active span, or in its
    heaviest burst bucket if that is higher)."""
    upper = entry[WCU] + segment.pruned
    span = settings.alert_min_span_seconds
    active = active_rate(upper, entry[FIRST_SEEN], segment.last_event, span)
    return upper, max(active, peak_rate(entry, segment.pruned, span))


def partition_limit_hot(
    segment: Tallied, settings: Settings, elsewhere: dict[str, tuple[int, int]] | None = None
) -> list[HotKey]:
    """Keys whose write rate over their active span reaches the alert rate.

    ``elsewhere`` (key → write units, first event second on the window's other segments)
    adds a key's earlier part of the window: after a shard rollover a burst is split
    between the parent's segment and the child's, and neither part alone may last the
    minimum span. Without it, only this segment's figures count.
    """
    limit_rate = settings.alert_wcu_per_second
    minimum = settings.alert_min_span_seconds
    floor = limit_rate * minimum - segment.pruned  # cheap pre-filter (for the peak rate too)
    hot = []
    for key, entry in segment.entries.items():
        other = elsewhere.get(key) if elsewhere else None
        if other is None:
            if entry[WCU] < floor and entry[PEAK] < floor:
                continue
            upper, rate = key_rate(segment, entry, settings)
        else:
            upper = entry[WCU] + segment.pruned + other[0]
            span = segment.last_event - min(entry[FIRST_SEEN], other[1]) + 1
            rate = max(upper / max(minimum, span), peak_rate(entry, segment.pruned, minimum))
        if rate >= limit_rate:
            hot.append(_hot(segment, settings, key, entry, PARTITION_LIMIT, upper, rate, 0.0))
    return hot


def short_bursts(segment: Tallied, settings: Settings) -> bool:
    """Whether a key writes at the alert rate over its own span but for less than the minimum span.

    Such a key may be the second half of a burst that began on a parent shard; only then is it
    worth reading the window's other segments (``partition_limit_hot`` with ``elsewhere``).
    """
    limit_rate = settings.alert_wcu_per_second
    minimum = settings.alert_min_span_seconds
    for entry in segment.entries.values():
        upper = entry[WCU] + segment.pruned
        if upper < limit_rate:
            continue
        span = segment.last_event - entry[FIRST_SEEN] + 1
        if span < minimum and upper >= limit_rate * span:
            return True
    return False


def share_candidates(segment: Tallied, settings: Settings) -> bool:
    """Whether any key's share of its own segment reaches the threshold: the cheap test that
    decides whether the table's figures are read at all.

    A key's share of the table is at most its share of the segments that carry it (the
    parent's and the child's, around a rollover), and by the mediant inequality at least one
    of those reaches the threshold if their sum does. When it is this segment, ``share_hot``
    adds the key's other parts. When only the parent's did, the parent was judged against
    the table total known when it ran; if other shards were ahead of it then, the combined
    share shows in ``hotkeys top`` but raises no alert (a known limit, docs/decisions.md).
    """
    if segment.wcu <= 0:
        return False
    needed = settings.share_threshold * segment.wcu
    return any(entry[WCU] + segment.pruned >= needed for entry in segment.entries.values())


def share_hot(segment: Tallied, settings: Settings, table_wcu: int, elsewhere: dict[str, int]) -> list[HotKey]:
    """The keys at or above the share threshold of the table's window total (``table_wcu``, all
    shards), counting each key's write units on other segments of the window (``elsewhere``)."""
    if table_wcu < settings.share_min_wcu or table_wcu <= 0:
        return []
    needed = settings.share_threshold * table_wcu
    hot = []
    for key, entry in segment.entries.items():
        other = elsewhere.get(key, 0)
        if entry[WCU] + segment.pruned + other < needed:
            continue
        upper, rate = key_rate(segment, entry, settings)
        share = min(1.0, (upper + other) / table_wcu)
        hot.append(_hot(segment, settings, key, entry, SHARE, upper + other, rate, share))
    return hot


def resolve_level(settings: Settings, reason: str) -> float:
    """Below this (rate for partition_limit, share for share) for a whole window, a firing key resolves."""
    ratio = (settings.alert_threshold - settings.alert_hysteresis) / settings.alert_threshold
    if reason == PARTITION_LIMIT:
        return ratio * settings.alert_wcu_per_second
    return ratio * settings.share_threshold


def window_level(
    segment: Tallied, settings: Settings, key: str, reason: str, table_wcu: int, elsewhere: int = 0
) -> float:
    """The key's full-window rate (partition_limit) or share (share) in a completed window, with
    its write units on the window's other segments (``elsewhere``)."""
    entry = segment.entries.get(key)
    upper = (entry[WCU] if entry else 0) + segment.pruned + elsewhere
    if reason == PARTITION_LIMIT:
        return upper / settings.window_seconds
    return upper / table_wcu if table_wcu > 0 else 0.0


def _hot(
    segment: Tallied,
    settings: Settings,
    key: str,
    entry: list[int],
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
        writes=entry[WRITES],
        wcu=wcu,
        wcu_per_second=round(rate, 1),
        share=round(share, 4),
        event_time=segment.last_event,
    )
