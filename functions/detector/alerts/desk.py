"""Runs the alert rules over a shard's figures and turns them into incidents and messages.

Per hot key and window, the first invocation that sees it writes to the incident
(claim firing, claim a due reminder, or mark it still hot); later invocations of
the same window skip it (remembered in the shard state). A publish that fails
undoes its claim and fails the batch, so Lambda's retry publishes it: no alert is
lost and none is sent twice by retries.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from detector.alerts import rules
from detector.alerts.messages import FIRING, REMINDER, RESOLVED, Alert, display_key
from detector.config import Settings
from detector.observability import logger
from detector.snapshots import SegmentSnapshot
from detector.state import Segment, ShardState

TOTALS_CACHE_SECONDS = 10.0


class Publisher(Protocol):
    def publish(self, alert: Alert) -> str: ...


class WindowReader(Protocol):
    def window_segments(self, table: str, start: int) -> list[SegmentSnapshot]: ...


class AlertDesk:
    def __init__(
        self,
        settings: Settings,
        incidents: Any,
        publisher: Publisher,
        windows: WindowReader,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._incidents = incidents
        self._publisher = publisher
        self._windows = windows
        self._clock = clock
        self._totals: dict[tuple[str, int, str], tuple[float, int]] = {}

    def review(self, shard_id: str, state: ShardState, segments: list[Segment], final: bool) -> int:
        published = 0
        for segment in segments:
            published += self._review_segment(shard_id, state, segment)
        if final:
            for segment in list(state.segments.values()):
                published += self._resolve(shard_id, segment)
        return published

    # -- hot keys ---------------------------------------------------------------------------
    def _review_segment(self, shard_id: str, state: ShardState, segment: Segment) -> int:
        settings = self._settings
        hot = rules.partition_limit_hot(segment, settings)
        table_wcu: int | None = None
        if rules.share_candidates(segment, settings):
            table_wcu = self._table_wcu(shard_id, segment)
            hot.extend(rules.share_hot(segment, settings, table_wcu))
        published = 0
        for key in hot:
            mark = f"{key.table}|{key.incident_key}"
            if state.notified.get(mark) == key.window_start:
                continue
            if table_wcu is None:
                table_wcu = self._table_wcu(shard_id, segment)
            published += self._on_hot(key, shard_id, table_wcu)
            state.notified[mark] = key.window_start
        return published

    def _on_hot(self, hot: rules.HotKey, shard_id: str, table_wcu: int) -> int:
        incidents = self._incidents
        if incidents.claim_firing(hot, shard_id):
            try:
                self._publish(hot, FIRING, table_wcu, hot.wcu_per_second)
            except Exception:
                incidents.release_firing(hot)
                raise
            return 1
        previous = incidents.claim_reminder(hot, shard_id, self._settings.alert_reminder_seconds)
        if previous is not None:
            peak = max(float(previous.get("peak", 0)), hot.wcu_per_second)
            incidents.raise_peak(hot)
            try:
                self._publish(hot, REMINDER, table_wcu, peak)
            except Exception:
                incidents.release_reminder(hot, int(previous.get("notified_at", 0)))
                raise
            return 1
        incidents.mark_hot(hot, shard_id)
        incidents.raise_peak(hot)
        return 0

    def _publish(self, hot: rules.HotKey, status: str, table_wcu: int, peak: float) -> None:
        share = (
            hot.share if hot.reason == rules.SHARE else (min(1.0, hot.wcu / table_wcu) if table_wcu else 0.0)
        )
        alert = Alert(
            table=hot.table,
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
    def _resolve(self, shard_id: str, segment: Segment) -> int:
        open_incidents = self._incidents.open_incidents(segment.table, shard_id)
        if not open_incidents:
            return 0
        table_wcu = self._table_wcu(shard_id, segment, fresh=True)
        published = 0
        for incident in open_incidents:
            reason, key = str(incident["reason"]), str(incident["key"])
            if int(incident["last_hot_window"]) >= segment.window_start:
                continue
            level = rules.window_level(segment, self._settings, key, reason, table_wcu)
            if level >= rules.resolve_level(self._settings, reason):
                continue
            incident_key = str(incident["sk"])
            if not self._incidents.resolve(segment.table, incident_key, segment.window_start):
                continue
            hot = rules.HotKey(
                table=segment.table,
                key=key,
                reason=reason,
                window_start=segment.window_start,
                window_seconds=self._settings.window_seconds,
                writes=0,
                wcu=int(
                    level * (self._settings.window_seconds if reason == rules.PARTITION_LIMIT else table_wcu)
                ),
                wcu_per_second=round(
                    level
                    if reason == rules.PARTITION_LIMIT
                    else level * table_wcu / self._settings.window_seconds,
                    1,
                ),
                share=round(level, 4) if reason == rules.SHARE else 0.0,
                event_time=segment.last_event,
            )
            try:
                self._publish(hot, RESOLVED, table_wcu, float(incident.get("peak", 0)))
            except Exception:
                self._incidents.reopen(segment.table, incident_key, segment.window_start)
                raise
            published += 1
        return published

    # -- table totals -----------------------------------------------------------------------
    def _table_wcu(self, shard_id: str, segment: Segment, fresh: bool = False) -> int:
        """The table's write units in this window: this segment live, the other shards as last persisted."""
        cache_key = (segment.table, segment.window_start, shard_id)
        cached = self._totals.get(cache_key)
        now = self._clock()
        if cached is None or fresh or now - cached[0] > TOTALS_CACHE_SECONDS:
            others = sum(
                snapshot.wcu
                for snapshot in self._windows.window_segments(segment.table, segment.window_start)
                if not (snapshot.shard_id == shard_id and snapshot.first_sequence == segment.first_sequence)
            )
            cached = (now, others)
            self._totals[cache_key] = cached
        return cached[1] + segment.wcu
