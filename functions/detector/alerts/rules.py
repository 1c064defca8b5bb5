"""When a key is hot, and when it has cooled down. Pure functions of the shard's figures.

Partition limit: a key's write rate is its write units divided by the event time it
has been active in the window (from its first write in the window to the shard's
latest record, at least ``ALERT_MIN_SPAN_SECONDS``). A burst that starts mid-window
is measured over its own duration, not diluted by the quiet part of the window;
the minimum span keeps one large item from looking like a sustained rate. The
estimate uses the summary's upper bound (counter + pruned), so pruning can never
hide a hot key.

Share of table: a key's write units over the table's (all shards, this window so
far), once the table's window total reaches ``SHARE_MIN_WCU``.

Resolution: a firing key resolves at the end of a window in which it was never hot
and its full-window rate (or share) stayed below the threshold minus the hysteresis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from detector.config import Settings
from detector.state import Segment
from detector.summary import FIRST_SEEN, WCU, WRITES

PARTITION_LIMIT = "partition_limit"
SHARE = "share"


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

    @property
    def incident_key(self) -> str:
        return f"{self.reason}#{self.key}"


def suggested_shards(peak_wcu_per_second: float, partition_wcu_limit: int) -> int:
    """Write-sharding estimate: suffixes needed to keep each shard key under 80% of a partition."""
    return max(1, math.ceil(peak_wcu_per_second / (0.8 * partition_wcu_limit)))


def key_rate(segment: Segment, entry: list[int], settings: Settings) -> tuple[int, float]:
    """(upper-bound write units, write units per second over the key's active span)."""
    upper = entry[WCU] + segment.pruned
    span = max(settings.alert_min_span_seconds, segment.last_event - entry[FIRST_SEEN] + 1)
    return upper, upper / span


def partition_limit_hot(segment: Segment, settings: Settings) -> list[HotKey]:
    limit_rate = settings.alert_wcu_per_second
    floor = limit_rate * settings.alert_min_span_seconds - segment.pruned  # cheap pre-filter
    hot = []
    for key, entry in segment.entries.items():
        if entry[WCU] < floor:
            continue
        upper, rate = key_rate(segment, entry, settings)
        if rate >= limit_rate:
            hot.append(_hot(segment, settings, key, entry, PARTITION_LIMIT, upper, rate, 0.0))
    return hot


def share_candidates(segment: Segment, settings: Settings) -> list[tuple[str, list[int]]]:
    """Keys whose share of their own shard reaches the threshold (a table share can only be lower)."""
    if segment.wcu <= 0:
        return []
    needed = settings.share_threshold * segment.wcu
    return [(key, entry) for key, entry in segment.entries.items() if entry[WCU] + segment.pruned >= needed]


def share_hot(
    segment: Segment, settings: Settings, table_wcu: int, candidates: list[tuple[str, list[int]]]
) -> list[HotKey]:
    """Of ``candidates`` (from ``share_candidates``), the keys at or above the share threshold of the
    table's window total (``table_wcu``, all shards)."""
    if table_wcu < settings.share_min_wcu or table_wcu <= 0:
        return []
    hot = []
    for key, entry in candidates:
        upper, rate = key_rate(segment, entry, settings)
        share = min(1.0, upper / table_wcu)
        if share >= settings.share_threshold:
            hot.append(_hot(segment, settings, key, entry, SHARE, upper, rate, share))
    return hot


def resolve_level(settings: Settings, reason: str) -> float:
    """Below this (rate for partition_limit, share for share) for a whole window, a firing key resolves."""
    ratio = (settings.alert_threshold - settings.alert_hysteresis) / settings.alert_threshold
    if reason == PARTITION_LIMIT:
        return ratio * settings.alert_wcu_per_second
    return ratio * settings.share_threshold


def window_level(segment: Segment, settings: Settings, key: str, reason: str, table_wcu: int) -> float:
    """The key's full-window rate (partition_limit) or share (share) in a completed window."""
    entry = segment.entries.get(key)
    upper = (entry[WCU] if entry else 0) + segment.pruned
    if reason == PARTITION_LIMIT:
        return upper / settings.window_seconds
    return upper / table_wcu if table_wcu > 0 else 0.0


def _hot(
    segment: Segment,
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
