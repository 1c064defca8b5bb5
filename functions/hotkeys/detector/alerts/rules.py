"""When a partition is hot, and when it has cooled down. Pure functions of a window's figures.

Figures (``Figures``) are one table's, or one index's, partitions in one window: a shard's live
segment (the stream consumer judges its own writes as they arrive) or a window merged over every
shard (the judge). Each listed key's write units are a lower estimate: the truth is at most
``bound(key)`` more (pruned summaries; a shard whose head left the key out adds nothing).

Partition limit (``Reason.PARTITION_LIMIT``): a key is hot when its rate (``domain.rate.rate_of``) is hot
(``domain.rate.is_hot``), possibly hot when only the most it can be is (alerted all the same, saying so:
pruning never hides a hot key).

Share of table (``Reason.SHARE``): a key's upper-bound write units over the table's whole window (every
shard), once the table's window total reaches ``SHARE_MIN_WCU``.

Resolution: a firing key resolves on a settled window whose figures keep its ``at_most`` (or its share)
under the threshold minus the hysteresis (``cooled``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from hotkeys.detector.config import Settings
from hotkeys.detector.domain.rate import Rate, alert_rate, is_hot, rate_of, shown
from hotkeys.detector.domain.summary import Entry


class Reason(StrEnum):
    """What an alert is about (its document's ``reason``): a key whose rate nears its partition's limit, a key
    that draws a large share of its table's writes, or DynamoDB's own throttle alarm (``throttle_explainer``)."""

    PARTITION_LIMIT = "partition_limit"
    SHARE = "share"
    THROTTLING = "throttling"


class Figures(Protocol):
    """One table's (``index`` None) or one index's partitions in one window, as the rules read them."""

    @property
    def table(self) -> str: ...
    @property
    def index(self) -> str | None: ...
    @property
    def window_start(self) -> int: ...
    @property
    def last_event(self) -> int: ...
    @property
    def entries(self) -> dict[str, Entry]: ...
    @property
    def wcu(self) -> int: ...

    def bound(self, key: str) -> int:
        """How far below its true write units ``key``'s count may be (and the most an unlisted key wrote)."""
        ...


@dataclass(frozen=True)
class HotKey:
    """A key found hot (or possibly hot) in one window's figures: its rate and share there."""

    table: str
    key: str
    reason: Reason
    window_start: int
    window_seconds: int
    writes: int
    wcu: int  # upper-bound write units in the window so far
    wcu_per_second: float  # the key's rate (``rate_of``)
    share: float  # of the table's (or the index's) write units in the window so far
    event_time: int  # the figures' latest event second
    at_most_wcu_per_second: float  # the rate with the summary's bound (``Rate.at_most``)
    # Whether the rate covers a whole ALERT_MIN_SPAN_SECONDS after the key's first write: the figures hold a
    # later second, so its last second is complete (else a burst's first seconds: ``Rate``).
    measured: bool = True
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

    @property
    def level(self) -> float:
        """What the incident's peak follows: the rate (partition limit) or the share (share)."""
        return self.wcu_per_second if self.reason is Reason.PARTITION_LIMIT else self.share


# Bytes of the key's digest in an incident's name: 128 bits, so two keys of one table and reason
# never share an incident in practice.
INCIDENT_DIGEST_BYTES = 16


def incident_key(reason: Reason, key: str, index: str | None = None) -> str:
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


def partition_limit_hot(figures: Figures, settings: Settings) -> list[HotKey]:
    """Keys hot or possibly hot: their rate, or their rate's ``at_most``, reaches the alert rate."""
    span = settings.alert_min_span_seconds
    floor = alert_rate(settings) * span  # below it no rate can reach the alert rate
    hot = []
    for key, entry in figures.entries.items():
        bound = figures.bound(key)
        if entry.wcu + bound < floor and entry.peak + bound < floor:
            continue
        rate = rate_of(entry, bound, figures.last_event, span)
        if is_hot(rate.at_most, settings):
            hot.append(_hot(figures, settings, key, entry, Reason.PARTITION_LIMIT, rate))
    return hot


def share_hot(figures: Figures, settings: Settings) -> list[HotKey]:
    """The keys at or above the share threshold of the table's window total, once that total reaches
    ``SHARE_MIN_WCU``. A table rule: an index's few key values always split its writes in a few large
    shares, and only their rate (back-pressure) can throttle the table."""
    if figures.index is not None or not _busy(figures, settings):
        return []
    needed = settings.share_threshold * figures.wcu
    hot = []
    for key, entry in figures.entries.items():
        if entry.wcu + figures.bound(key) >= needed:
            rate = rate_of(entry, figures.bound(key), figures.last_event, settings.alert_min_span_seconds)
            hot.append(_hot(figures, settings, key, entry, Reason.SHARE, rate))
    return hot


def resolve_level(settings: Settings, reason: Reason) -> float:
    """Below this (``Rate.at_most`` for partition_limit, share for share) over a settled window, a firing key
    resolves. Rounded to 12 significant digits: the settings are decimal fractions, and their difference
    in binary is not (0.8 - 0.2 would put 600 WCU/s under a level of 600.0000000000001); relative, so a
    small level (a share of a millionth) is kept, not rounded to nothing."""
    ratio = (settings.alert_threshold - settings.alert_hysteresis) / settings.alert_threshold
    level = ratio * (alert_rate(settings) if reason is Reason.PARTITION_LIMIT else settings.share_threshold)
    return float(f"{level:.12g}")


def level(figures: Figures, settings: Settings, key: str, reason: Reason) -> float:
    """The most the key's rate can be (``Rate.at_most``: partition_limit) or its share of the table's write
    units (share) in these figures; 0 for a key they do not list (merged figures add no bound for a key
    no shard's head lists: docs/decisions.md §49). A table under ``SHARE_MIN_WCU`` has no share to speak of."""
    entry = figures.entries.get(key)
    if entry is None:
        return 0.0
    bound = figures.bound(key)
    if reason is Reason.PARTITION_LIMIT:
        return rate_of(entry, bound, figures.last_event, settings.alert_min_span_seconds).at_most
    return (entry.wcu + bound) / figures.wcu if _busy(figures, settings) else 0.0


def cooled(figures: Figures, settings: Settings, key: str, reason: Reason) -> bool:
    """Whether a settled window's figures keep the key under the resolve level."""
    return level(figures, settings, key, reason) < resolve_level(settings, reason)


def _busy(figures: Figures, settings: Settings) -> bool:
    # (a table with no write units in the window lists no key: every write is a unit or more)
    return figures.wcu >= settings.share_min_wcu


def _hot(figures: Figures, settings: Settings, key: str, entry: Entry, reason: Reason, rate: Rate) -> HotKey:
    upper = entry.wcu + figures.bound(key)
    return HotKey(
        table=figures.table,
        index=figures.index,
        key=key,
        reason=reason,
        window_start=figures.window_start,
        window_seconds=settings.window_seconds,
        writes=entry.writes,
        wcu=upper,
        wcu_per_second=shown(rate.wcu_per_second),
        share=round(min(1.0, upper / figures.wcu), 4),  # (a key listed: the window has write units)
        event_time=figures.last_event,
        at_most_wcu_per_second=shown(rate.at_most),
        measured=rate.measured_seconds > settings.alert_min_span_seconds,
    )
