"""An incident's life: crossed, escalated, still hot, cooled. The typed record and its rules, no I/O.

One incident per (table, index, key, reason) at a time. It starts when a key's rate (or its
``at_most``: possibly hot; or its share) first reaches the threshold (``FIRING``: quoted at the
crossing, by whichever sees it first, the shard's consumer or the judge), sends an update when it gets
worse (``ESCALATED``: its peak grew by ``ESCALATION``, the suggested shard count went up, or a possibly
hot key's rate itself reached the threshold), reminds while it stays hot (``REMINDER``, every
``ALERT_REMINDER_SECONDS`` of the judge's clock, quoting its rate in the last minute and the peak), and ends once
(``RESOLVED``: a settled window keeps the key under the resolve level; the message carries the
incident's peak, how long it lasted and the final suggested shard count).

Delivery is claim, publish, confirm: a transition is written with the message it owes
(``Pending``: the message, who claimed it, when), the message is published, then the pending mark
is removed. Whoever claimed it re-sends an unconfirmed message on its retry; anyone else takes it
over once the claim is ``TAKEOVER_SECONDS`` old (its claimant died, or its batch went to the DLQ).

Peaks: a partition-limit incident's ``peak`` is the highest rate its key reached (``rules.rate_of``,
the figure ``hotkeys top`` shows); a share incident's is the largest share, and ``peak_rate`` the highest
rate its key reached. ``sized_at`` is the level the last message sized its advice on (the
crossing's, then each escalation's peak). A share is of a whole window: a share incident starts at the
start of its first hot window, so it lasts whole windows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from hotkeys.detector.alerts import rules
from hotkeys.detector.config import Settings
from hotkeys.detector.domain.rate import is_hot, suggested_shards

# An update goes out when the incident's peak reaches this multiple of the one its last message sized.
ESCALATION = 1.25
# An unconfirmed message claimed this long ago (the claimant's clock) may be sent by anyone else.
TAKEOVER_SECONDS = 120


class Status(StrEnum):
    FIRING = "firing"
    RESOLVED = "resolved"


class Message(StrEnum):
    """What a subscriber receives over an incident's life (the alert document's ``status``)."""

    FIRING = "firing"
    ESCALATED = "escalated"
    REMINDER = "reminder"
    RESOLVED = "resolved"


@dataclass(frozen=True)
class Pending:
    """A message an incident owes: written with the transition, removed once it went out."""

    message: Message
    owner: str  # a shard id (the stream consumer's first alarm) or the judge's run
    claimed_at: float  # the claimant's clock


@dataclass(frozen=True)
class Incident:
    table: str
    name: str  # its sort key (``rules.incident_key``)
    key: str
    reason: rules.Reason
    index: str | None
    status: Status
    fired_window: int
    fired_at: int  # the event second of the crossing
    fired_rate: float  # the rate (or share) at the crossing (what the firing message quoted)
    last_hot_window: int
    peak: float  # see the module doc
    peak_window: int
    sized_at: float  # the rate the last firing or escalation sized its advice on
    notified_at: float  # the clock of the last message claimed (firing, escalation, reminder)
    pending: Pending | None = None
    resolved_window: int | None = None
    # The level of the key in the window it resolved on (its rate's upper end, or its share).
    resolved_level: float = 0.0
    peak_rate: float = 0.0  # a share incident's highest rate (``highest_rate``)

    @property
    def firing(self) -> bool:
        return self.status is Status.FIRING

    def suggested_shards(self, settings: Settings) -> int:
        """The sharding advice of its messages: suffixes for its highest rate."""
        return suggested_shards(self.highest_rate, settings)

    @property
    def highest_rate(self) -> float:
        """The highest rate its key reached: a partition-limit incident's peak, a share incident's ``peak_rate``."""
        return self.peak if self.reason is rules.Reason.PARTITION_LIMIT else self.peak_rate

    def lasted(self, window_seconds: int) -> int:
        """Seconds from the crossing to the end of the last window in which it was hot."""
        return max(0, self.last_hot_window + window_seconds - self.fired_at)

    def escalated_by(self, peak: float, settings: Settings) -> bool:
        """Whether ``peak`` is worse enough than what the last message sized its advice on to send an update."""
        if peak >= ESCALATION * self.sized_at:
            return True
        if self.reason is not rules.Reason.PARTITION_LIMIT:
            return False
        if is_hot(peak, settings) and not is_hot(self.sized_at, settings):
            return True  # possibly hot when last told, hot now
        return suggested_shards(peak, settings) > suggested_shards(self.sized_at, settings)

    def reminder_due(self, now: float, reminder_seconds: int) -> bool:
        return now - self.notified_at >= reminder_seconds

    def claimable_by(self, owner: str, now: float) -> bool:
        """Whether ``owner`` may (re-)send the message this incident owes."""
        if self.pending is None:
            return False
        return self.pending.owner == owner or now - self.pending.claimed_at >= TAKEOVER_SECONDS


def started(hot: rules.HotKey, owner: str, now: float) -> Incident:
    """The incident a crossing starts, owing its firing message."""
    return Incident(
        table=hot.table,
        name=hot.incident_key,
        key=hot.key,
        reason=hot.reason,
        index=hot.index,
        status=Status.FIRING,
        fired_window=hot.window_start,
        fired_at=hot.event_time if hot.reason is rules.Reason.PARTITION_LIMIT else hot.window_start,
        fired_rate=hot.level,
        last_hot_window=hot.window_start,
        peak=hot.level,
        peak_rate=hot.wcu_per_second,
        peak_window=hot.window_start,
        sized_at=hot.level,
        notified_at=now,
        pending=Pending(Message.FIRING, owner, now),
    )


def still_hot(incident: Incident, hot: rules.HotKey) -> Incident:
    """The incident with ``hot``'s window marked hot and its peak raised (never lowered)."""
    peak, window = (hot.level, hot.window_start) if hot.level > incident.peak else (incident.peak, incident.peak_window)
    return replace(
        incident,
        last_hot_window=max(incident.last_hot_window, hot.window_start),
        peak=peak,
        peak_window=window,
        peak_rate=max(incident.peak_rate, hot.wcu_per_second),
    )


def escalated(incident: Incident, owner: str, now: float) -> Incident:
    """Owing an update sized on its current peak."""
    return replace(incident, sized_at=incident.peak, notified_at=now, pending=Pending(Message.ESCALATED, owner, now))


def reminded(incident: Incident, owner: str, now: float) -> Incident:
    return replace(incident, notified_at=now, pending=Pending(Message.REMINDER, owner, now))


def resolved(incident: Incident, window: int, level: float, owner: str, now: float) -> Incident:
    return replace(
        incident,
        status=Status.RESOLVED,
        resolved_window=window,
        resolved_level=level,
        pending=Pending(Message.RESOLVED, owner, now),
    )


def confirmed(incident: Incident) -> Incident:
    return replace(incident, pending=None)
