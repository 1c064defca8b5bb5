"""A key's rate and what it is against the partition limit: the one module that says how fast a key writes
(``rate_of``), when that is hot (``is_hot``, ``is_possibly_hot``: the alert threshold's meaning), how many write
shards would cool it (``suggested_shards``) and how its figures read wherever a person reads them (``shown``,
``percent_of_limit``, ``whole``). Every rule, message and view asks here (docs/decisions.md §79).

A key's rate (``Rate.wcu_per_second``): its counted write units per second over its busiest stretch, the higher
of its heaviest burst bucket (``span`` seconds of event time, aligned to the epoch: ``ALERT_MIN_SPAN_SECONDS``)
and its average from its first write in the window to its latest (over at least ``span``). A burst across a
bucket boundary is measured over its own seconds, not halved by the boundary nor diluted by the quiet rest of
the window; the minimum span keeps one large item from looking like a sustained rate. ``Rate.at_most`` is the
same with the summary's bound added: the uncertainty, shown as such, never added into the rate.

Figures read rounded down, to a tenth in the JSON and tables and whole in sentences, so that a figure reaches a
threshold exactly when the rate does: 799.97 WCU/s is 799.9 (79.9%) in a table and 799 (79%) in a sentence,
never the hot-looking 800 (80%) of a threshold it has not reached.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hotkeys.detector.config import Settings
    from hotkeys.detector.domain.summary import Entry

# (a rate or a ratio computed in floating point may land a hair under the figure it is: 80.0 as 79.99999999)
_EPSILON = 1e-9


@dataclass(frozen=True)
class Rate:
    """A key's rate in one window's figures (module doc): the counted figure and, with the summary's
    bound, the most it can be; ``measured_seconds`` the event time it covers so far (from the key's first
    write to the figures' latest event): under ``ALERT_MIN_SPAN_SECONDS`` it is the rate of a burst's
    first seconds, which its next seconds may raise."""

    wcu_per_second: float
    at_most: float
    measured_seconds: int


def rate_of(entry: Entry, bound: int, last_event: int, span: int) -> Rate:
    """A key's rate (module doc), its entry's in figures whose latest event is ``last_event``."""
    span = max(1, span)  # (figures built without a bucket length: one second)
    active = max(span, entry.last_second(span) - entry.first_seen + 1)
    counted = max(entry.wcu / active, entry.peak / span)
    most = max((entry.wcu + bound) / active, (entry.peak + bound) / span)
    return Rate(counted, most, max(0, last_event - entry.first_seen + 1))


def alert_rate(settings: Settings) -> float:
    """The rate at which a key is hot: the alert threshold's share of one partition's write limit."""
    return settings.alert_threshold * settings.partition_wcu_limit


def is_hot(rate: float, settings: Settings) -> bool:
    """Whether a rate (a key's, or the most it can be) is hot: it reaches the alert rate."""
    return rate >= alert_rate(settings)


def is_possibly_hot(rate: float, at_most: float, settings: Settings) -> bool:
    """Whether a key is possibly hot: only the most its rate can be (``Rate.at_most``) is hot."""
    return not is_hot(rate, settings) and is_hot(at_most, settings)


def suggested_shards(rate: float, settings: Settings) -> int:
    """Write-sharding advice: the suffixes that keep each shard key of a key writing ``rate`` under the alert rate."""
    return max(1, math.ceil(rate / alert_rate(settings)))


def shown(rate: float) -> float:
    """A rate as the JSON and the tables show it: to a tenth, rounded down."""
    return math.floor(rate * 10 + _EPSILON) / 10


def percent_of_limit(rate: float, limit: int) -> float:
    """``rate`` in percent of the partition ``limit``, to a tenth, rounded down."""
    return math.floor(rate * 1000 / limit + _EPSILON) / 10


def whole(figure: float) -> str:
    """A rate or a percent in a sentence: whole, rounded down, with thousands separators."""
    return f"{math.floor(figure + _EPSILON):,}"
