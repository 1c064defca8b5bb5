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

from botocore.exceptions import BotoCoreError, ClientError

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
        # Messages this container published (its retries must not send them again).
        self._sent: set[tuple[str, str, int, str]] = set()

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
        candidates = rules.share_candidates(segment, settings)
        if candidates:
            table_wcu = self._table_wcu(shard_id, segment)
            hot.extend(rules.share_hot(segment, settings, table_wcu, candidates))
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
            except ClientError:
                incidents.release_reminder(hot, int(previous.get("notified_at", 0)))
                raise
            return 1
        incidents.mark_hot(hot, shard_id)
        incidents.raise_peak(hot)
        return 0

    def _deliver(self, hot: rules.HotKey, status: str, table_wcu: int, peak: float, flag: str) -> int:
        """Publish a firing or resolved message at most once per incident, and never lose it silently.

        SNS answered with an error: nothing was sent; the batch fails and the retry publishes.
        No answer at all (timeout, connection lost): it may have been sent; it is taken as sent
        (at most once) and logged. Once sent, the incident is marked; if that mark cannot be
        written, this container remembers the message so its retries do not send it again.
        """
        memory = (hot.table, hot.incident_key, hot.window_start, status)
        if memory not in self._sent:
            try:
                self._publish(hot, status, table_wcu, peak)
            except BotoCoreError as error:  # no answer; an SNS error answer (ClientError) propagates as is
                self._sent.add(memory)
                logger.warning(
                    "alert publish outcome unknown; not resent",
                    extra={"table": hot.table, "key": hot.key, "status": status, "error": str(error)},
                )
                raise
            self._sent.add(memory)
        try:
            self._incidents.mark_published(hot.table, hot.incident_key, flag)
        except (ClientError, BotoCoreError) as error:
            logger.warning("could not mark alert as published", extra={"key": hot.key, "error": str(error)})
        return 1

    def _publish(self, hot: rules.HotKey, status: str, table_wcu: int, peak: float) -> None:
        share = hot.share if hot.reason == rules.SHARE else (min(1.0, hot.wcu / table_wcu) if table_wcu else 0.0)
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
            reason, key, incident_key = str(incident["reason"]), str(incident["key"]), str(incident["sk"])
            if incident.get("status") == RESOLVED:
                # Resolved by an earlier attempt of this window whose message may not have gone out.
                if int(incident.get("resolved_window", -1)) == segment.window_start:
                    published += self._deliver(
                        self._cooled(segment, key, reason, table_wcu),
                        RESOLVED,
                        table_wcu,
                        float(incident.get("peak", 0)),
                        "resolve_published",
                    )
                continue
            if int(incident["last_hot_window"]) >= segment.window_start:
                continue
            level = rules.window_level(segment, self._settings, key, reason, table_wcu)
            if level >= rules.resolve_level(self._settings, reason):
                continue
            if not self._incidents.resolve(segment.table, incident_key, segment.window_start):
                continue
            cooled = self._cooled(segment, key, reason, table_wcu)
            published += self._deliver(cooled, RESOLVED, table_wcu, float(incident.get("peak", 0)), "resolve_published")
        return published

    def _cooled(self, segment: Segment, key: str, reason: str, table_wcu: int) -> rules.HotKey:
        level = rules.window_level(segment, self._settings, key, reason, table_wcu)
        seconds = self._settings.window_seconds
        wcu = int(level * seconds) if reason == rules.PARTITION_LIMIT else int(level * table_wcu)
        return rules.HotKey(
            table=segment.table,
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
