"""Runs the alert rules over a shard's figures and turns them into incidents and messages.

Per hot key and window, the first invocation that sees it writes to the incident
(claim firing, claim a due reminder, or mark it still hot, which also makes this shard
the incident's owner); later invocations of the same window skip it (remembered in the
shard state). Delivery guarantees are in ``_deliver`` and docs/decisions.md.

Stream shards end every few hours and split under load; a key's traffic then moves to a
child shard, which starts its windows with a fresh state. Resolution therefore does not
belong to one shard for good: at a window's final invocation a shard resolves a table's
incident if it owns it or if the key wrote to this shard in that window (it carries the
key now), judging the key on its merged figures (this shard's live segment plus the
other segments of the window already stored). An incident no shard has seen hot for
``ORPHAN_AFTER_WINDOWS`` windows (its key went quiet while its shard ended) is resolved
by whichever shard of the table finishes a window next.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any, Protocol

from hotkeys.detector import diagnosis, items, summary
from hotkeys.detector.alerts import rules
from hotkeys.detector.alerts.messages import (
    FIRING,
    REMINDER,
    RESOLVED,
    Alert,
    PublishOutcomeUnknown,
    PublishRefused,
    display_key,
)
from hotkeys.detector.config import Settings
from hotkeys.detector.observability import logger
from hotkeys.detector.snapshots import SegmentSnapshot
from hotkeys.detector.state import MAX_MARKS, Segment, ShardState, mark_of
from hotkeys.detector.summary import FIRST_SEEN, WCU

TOTALS_CACHE_SECONDS = 10.0
# Windows after its last hot window at which an incident no shard carries is resolved anyway.
ORPHAN_AFTER_WINDOWS = 3


class OtherSegments:
    """The rest of a window: the table's stored segments other than this shard's live one."""

    __slots__ = ("entries", "keys", "wcu")

    def __init__(self, wcu: int, entries: dict[str, list[int]]) -> None:
        self.wcu = wcu
        self.entries = entries  # merged summary entries (summary.merge): [writes, wcu, first_seen]
        self.keys = {key: entry[WCU] for key, entry in entries.items()}

    def parts(self) -> dict[str, tuple[int, int]]:
        return {key: (entry[WCU], entry[FIRST_SEEN]) for key, entry in self.entries.items()}


class Publisher(Protocol):
    def publish(self, alert: Alert) -> str: ...


class WindowReader(Protocol):
    def window_segments(self, table: str, start: int) -> list[SegmentSnapshot]: ...


class IncidentStore(Protocol):
    """Incidents with conditional transitions (see adapters/incident_store.py for the rules)."""

    def claim_firing(self, hot: rules.HotKey, shard_id: str) -> bool: ...

    def claim_reminder(self, hot: rules.HotKey, shard_id: str, reminder_seconds: int) -> dict[str, Any] | None: ...

    def release_reminder(self, hot: rules.HotKey, previous_notified_at: int) -> None: ...

    def mark_hot(self, hot: rules.HotKey, shard_id: str) -> None: ...

    def raise_peak(self, hot: rules.HotKey) -> None: ...

    def open_incidents(self, table: str) -> list[dict[str, Any]]: ...

    def resolve(self, table: str, incident_key: str, window_start: int, shard_id: str) -> bool: ...

    def get(self, table: str, incident_key: str) -> dict[str, Any] | None: ...

    def mark_published(self, table: str, incident_key: str, flag: str) -> bool: ...


class AlertDesk:
    def __init__(
        self,
        settings: Settings,
        incidents: IncidentStore,
        publisher: Publisher,
        windows: WindowReader,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._incidents = incidents
        self._publisher = publisher
        self._windows = windows
        self._clock = clock
        self._others: dict[tuple[str, str | None, int, str], tuple[float, OtherSegments]] = {}
        # Messages this container published (its retries must not send them again).
        self._sent: set[tuple[str, str, int, str]] = set()

    def review(self, shard_id: str, state: ShardState, segments: list[Segment], final: bool) -> int:
        published = 0
        for segment in segments:
            for view in segment.views():
                published += self._review_segment(shard_id, state, view)
        if final:
            for segment in list(state.segments.values()):
                # One read of the table's open incidents, its indexes' included, for all of its views.
                incidents = self._incidents.open_incidents(segment.table)
                for view in segment.views() if incidents else ():
                    mine = [incident for incident in incidents if incident.get("index_name") == view.index]
                    published += self._resolve(shard_id, view, mine)
        return published

    # -- hot keys ---------------------------------------------------------------------------
    def _review_segment(self, shard_id: str, state: ShardState, segment: rules.Tallied) -> int:
        settings = self._settings
        others: OtherSegments | None = None
        if rules.short_bursts(segment, settings):
            # A burst shorter than the minimum span may have begun on a parent shard.
            others = self._other_segments(shard_id, segment)
            hot = rules.partition_limit_hot(segment, settings, others.parts())
        else:
            hot = rules.partition_limit_hot(segment, settings)
        # Share of writes is a table rule: an index's few key values always split its writes in a
        # few large shares, and only their rate (back-pressure) can throttle the table.
        if segment.index is None and rules.share_candidates(segment, settings):
            # The key's parts on other segments of this window (a parent shard's, before a
            # rollover) count toward its share, so every key of the segment is a candidate now.
            others = others or self._other_segments(shard_id, segment)
            hot.extend(rules.share_hot(segment, settings, others.wcu + segment.wcu, others.keys))
        published = 0
        for key in hot:
            mark = mark_of(key.table, key.incident_key)
            if state.notified.get(mark) == key.window_start:
                continue
            if others is None:
                others = self._other_segments(shard_id, segment)
            diagnosed = _diagnosed(key, segment, others, settings.partition_wcu_limit)
            published += self._on_hot(diagnosed, shard_id, others.wcu + segment.wcu)
            if len(state.notified) < MAX_MARKS:  # beyond it, later invocations re-check (idempotent)
                state.notified[mark] = key.window_start
        return published

    def _on_hot(self, hot: rules.HotKey, shard_id: str, table_wcu: int) -> int:
        incidents = self._incidents
        if incidents.claim_firing(hot, shard_id):
            self._deliver(hot, FIRING, table_wcu, hot.wcu_per_second, "published")
            return 1
        current = incidents.get(hot.table, hot.incident_key) or {}
        if (
            current.get("status") == FIRING
            and current.get("published") is False
            and int(current.get("fired_window", -1)) == hot.window_start
        ):
            # Our claim was written but its message may not have gone out (the invocation failed in
            # between): publish it now, unless this container already did.
            return self._deliver(hot, FIRING, table_wcu, hot.wcu_per_second, "published")
        previous = incidents.claim_reminder(hot, shard_id, self._settings.alert_reminder_seconds)
        if previous is not None:
            peak = max(float(previous.get("peak", 0)), hot.wcu_per_second)
            incidents.raise_peak(hot)
            try:
                self._publish(hot, REMINDER, table_wcu, peak)
            except PublishRefused:
                incidents.release_reminder(hot, int(previous.get("notified_at", 0)))
                raise
            return 1
        incidents.mark_hot(hot, shard_id)
        incidents.raise_peak(hot)
        return 0

    def _deliver(
        self, hot: rules.HotKey, status: str, table_wcu: int, peak: float, flag: str, incident_key: str | None = None
    ) -> int:
        """Publish a firing or resolved message at most once per incident, and never lose it silently.

        SNS answered with an error: nothing was sent; the batch fails and the retry publishes.
        No answer at all (timeout, connection lost): it may have been sent; it is taken as sent
        (at most once) and logged. Once sent, the incident is marked; if that mark cannot be
        written, this container remembers the message so its retries do not send it again.
        ``incident_key``: the stored incident's sort key when the incident was read from the table
        (an incident written under an earlier naming keeps its own name), else ``hot.incident_key``.
        """
        name = incident_key or hot.incident_key
        memory = (hot.table, name, hot.window_start, status)
        if memory not in self._sent:
            try:
                self._publish(hot, status, table_wcu, peak)
            except PublishOutcomeUnknown as error:  # an error answer (PublishRefused) propagates as is
                self._sent.add(memory)
                logger.warning(
                    "alert publish outcome unknown; not resent",
                    extra={"table": hot.table, "key": hot.key, "status": status, "error": str(error)},
                )
                raise
            self._sent.add(memory)
        if not self._incidents.mark_published(hot.table, name, flag):
            logger.warning("could not mark alert as published", extra={"key": hot.key, "flag": flag})
        return 1

    def _publish(self, hot: rules.HotKey, status: str, table_wcu: int, peak: float) -> None:
        share = hot.share if hot.reason == rules.SHARE else (min(1.0, hot.wcu / table_wcu) if table_wcu else 0.0)
        alert = Alert(
            table=hot.table,
            index=hot.index,
            key=display_key(hot.key, self._settings.key_display, self._settings.key_hash_salt),
            window_start=hot.window_start,
            window_seconds=hot.window_seconds,
            wcu=hot.wcu,
            wcu_per_second=hot.wcu_per_second,
            partition_limit_wcu=self._settings.partition_wcu_limit,
            share=round(share, 4),
            reason=hot.reason,
            status=status,
            peak_wcu_per_second=peak,
            pattern=hot.pattern,
            remedy=hot.remedy,
            items=hot.items,
            items_advice=hot.items_advice,
        )
        message_id = self._publisher.publish(alert)
        logger.info(
            "alert published",
            extra={
                "table": alert.table,
                "key": alert.key,
                "reason": alert.reason,
                "status": status,
                "wcu_per_second": alert.wcu_per_second,
                "message_id": message_id,
            },
        )

    # -- resolution -------------------------------------------------------------------------
    def _resolve(self, shard_id: str, segment: rules.Tallied, open_incidents: list[dict[str, Any]]) -> int:
        """Resolve the view's open incidents (the table's, or one index's) whose key cooled down."""
        if not open_incidents:
            return 0
        others = self._other_segments(shard_id, segment, fresh=True)
        table_wcu = others.wcu + segment.wcu
        window = segment.window_start
        orphan_before = window - ORPHAN_AFTER_WINDOWS * self._settings.window_seconds
        published = 0
        for incident in open_incidents:
            # The key and reason are the item's attributes; its sort key is only a name (a digest of the key).
            reason, key, incident_key = str(incident["reason"]), str(incident["key"]), str(incident["sk"])
            owner = str(incident.get("shard_id", ""))
            elsewhere = others.keys.get(key, 0)
            if incident.get("status") == RESOLVED:
                # Resolved by an earlier attempt of this window whose message may not have gone out.
                if owner == shard_id and int(incident.get("resolved_window", -1)) == window:
                    published += self._deliver(
                        self._cooled(segment, key, reason, table_wcu, elsewhere),
                        RESOLVED,
                        table_wcu,
                        float(incident.get("peak", 0)),
                        "resolve_published",
                        incident_key,
                    )
                continue
            last_hot = int(incident["last_hot_window"])
            if last_hot >= window:
                continue
            carries_key = owner == shard_id or key in segment.entries
            if not carries_key and last_hot > orphan_before:
                continue  # another shard carries this key: it decides
            level = rules.window_level(segment, self._settings, key, reason, table_wcu, elsewhere)
            if level >= rules.resolve_level(self._settings, reason):
                continue
            if not self._incidents.resolve(segment.table, incident_key, window, shard_id):
                continue
            cooled = self._cooled(segment, key, reason, table_wcu, elsewhere)
            peak = float(incident.get("peak", 0))
            published += self._deliver(cooled, RESOLVED, table_wcu, peak, "resolve_published", incident_key)
        return published

    def _cooled(self, segment: rules.Tallied, key: str, reason: str, table_wcu: int, elsewhere: int) -> rules.HotKey:
        level = rules.window_level(segment, self._settings, key, reason, table_wcu, elsewhere)
        seconds = self._settings.window_seconds
        wcu = int(level * seconds) if reason == rules.PARTITION_LIMIT else int(level * table_wcu)
        return rules.HotKey(
            table=segment.table,
            index=segment.index,
            key=key,
            reason=reason,
            window_start=segment.window_start,
            window_seconds=seconds,
            writes=0,
            wcu=wcu,
            wcu_per_second=round(wcu / seconds, 1),
            share=round(level, 4) if reason == rules.SHARE else 0.0,
            event_time=segment.last_event,
        )

    # -- the rest of the window ----------------------------------------------------------
    def _other_segments(self, shard_id: str, segment: rules.Tallied, fresh: bool = False) -> OtherSegments:
        """The window's other stored segments (other shards, and earlier sealed or parent segments),
        for the table's figures or one index's (``segment.index``)."""
        cache_key = (segment.table, segment.index, segment.window_start, shard_id)
        cached = self._others.get(cache_key)
        now = self._clock()
        if cached is None or fresh or now - cached[0] > TOTALS_CACHE_SECONDS:
            others = [
                snapshot
                for snapshot in self._windows.window_segments(segment.table, segment.window_start)
                if not (snapshot.shard_id == shard_id and snapshot.origin == segment.origin)
            ]
            parts = [_figures_of(snapshot, segment.index) for snapshot in others]
            entries, _pruned = summary.merge((entries, pruned) for entries, pruned, _wcu in parts)
            cached = (now, OtherSegments(sum(wcu for _entries, _pruned, wcu in parts), entries))
            if len(self._others) > 64:  # a container sees a few windows at a time; forget the old ones
                self._others.clear()
            self._others[cache_key] = cached
        return cached[1]


def _diagnosed(hot: rules.HotKey, segment: rules.Tallied, others: OtherSegments, limit: int) -> rules.HotKey:
    """The hot key with the antipattern its name and its window's figures point to (if any)."""
    total = others.wcu + segment.wcu
    # A pruned summary has seen more than twice its capacity of keys: never "few keys".
    distinct = len(segment.entries.keys() | others.entries.keys()) + (diagnosis.FEW_KEYS if segment.pruned else 0)
    found = _family_of(hot, segment, others, limit) or diagnosis.classify(
        hot.key, hot.wcu / total if total else 0.0, distinct, hot.index
    )
    stats = segment.items.get(hot.key)
    spread = items.verdict(stats, segment.has_sort_key, segment.pinned) if hot.index is None else None
    return dataclasses.replace(
        hot,
        pattern=found.pattern if found else None,
        remedy=found.remedy if found else None,
        items=spread[0] if spread else None,
        items_advice=spread[1] if spread else None,
    )


def _family_of(
    hot: rules.HotKey, segment: rules.Tallied, others: OtherSegments, limit: int
) -> diagnosis.Diagnosis | None:
    """A hot key that is one shard of a write-sharded family (in this window's figures so far): the
    family's verdict (uneven, near what its shards absorb) is the advice, not "shard it"."""
    weights = dict(others.keys)
    for key, entry in segment.entries.items():
        weights[key] = weights.get(key, 0) + entry[WCU]
    for family in diagnosis.shard_families(weights.items()):
        if hot.key.startswith(family.stem) and hot.key[len(family.stem) :].isdigit():
            seconds = max(1, segment.last_event - hot.window_start + 1)
            return diagnosis.Diagnosis(diagnosis.SHARD_FAMILY, family.verdict(seconds, limit))
    return None


def _figures_of(snapshot: SegmentSnapshot, index: str | None) -> tuple[dict[str, list[int]], int, int]:
    """(entries, pruned, write units) of a stored segment: the table's, or an index's (none if it
    did not count that index)."""
    if index is None:
        return snapshot.entries, snapshot.pruned, snapshot.wcu
    part = snapshot.indexes.get(index)
    return (part.entries, part.pruned, part.wcu) if part is not None else ({}, 0, 0)
