"""Runs the alert rules over a window's figures and turns them into incidents and messages.

Where a partition's writes meet (docs/decisions.md §49, §50): every segment snapshot carries a small
head (its heaviest keys of the table and of each index, with their burst series), which the stats
table's window-heads index gathers under one key per (table, window). After each flush, a shard
reads its window's heads with one Query and judges every key it carries on the merged figures:
its live segment plus every other segment of the window. So an index partition spread over any
number of shards, a key whose window a rollover or a split divided, and a table's shares are
judged on all of their writes, by whichever shard looks first; conditional incident writes keep
one firing per incident.

Per hot key and window, the first invocation that sees it writes to the incident (claim firing,
claim a due reminder, or mark it still hot); later invocations of the same window skip it
(remembered in the shard state). Delivery guarantees are in ``_deliver``.

Resolution: at a window's final invocation, one of the table's resolving shards (``resolves``: the
two lowest shard ids of the window, and each shard in turn now and then) judges the table's open incidents
on the latest window that every sibling has finished (``judged_window``): every shard seen in it or
in the ``SIBLING_WINDOWS`` windows before it has written that window's final heads. A shard that
ended (a rollover's parent) or went idle never writes them, so after ``RESOLVE_LAG_WINDOWS``
windows the window is judged anyway: siblings out of step by up to ``SIBLING_WINDOWS`` windows have
finished it by then. Any shard of the table may resolve any of its incidents (the write is
conditional); the level is judged on all of the window's segments.
"""

from __future__ import annotations

import dataclasses
import zlib

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
from hotkeys.detector.ports import IncidentStore, Publisher, WindowReader
from hotkeys.detector.snapshots import SegmentSnapshot
from hotkeys.detector.state import MAX_MARKS, Segment, ShardState, mark_of

# How far (in windows) siblings may be out of step: a shard with a head in a window or in this many
# before it must have finished the window before it is judged.
SIBLING_WINDOWS = 3
# The most windows a resolution waits for evidence that a window is finished: it is judged anyway.
RESOLVE_LAG_WINDOWS = SIBLING_WINDOWS + 1
# Windows whose heads a container keeps between invocations.
CACHED_WINDOWS = 64
# Shards that resolve a table's incidents at a window's final invocation (``resolves``): the lowest ids.
RESOLVERS = 2
# Every shard also resolves once in this many windows, whatever its id.
ROTA_WINDOWS = 60
# A window's heads read with the previous window's final look serve as a segment's first look if its
# records so far are within this many seconds of the window's start (the mapping's batching window).
AHEAD_FRESH_SECONDS = 5
# ``AlertDesk._on_hot``'s answer when another shard claimed the incident and has not confirmed it published.
AWAITED = -1
# After a flush, the window's heads are read again when a key not yet alerted in the window may be
# within this fraction of the alert rate (or of the share threshold) on the merged figures.
READ_FRACTION = 0.5


def awaiting(mark: str) -> str:
    """The shard state's name for "another shard claimed this incident in the window and was publishing
    it": never carried in a head (``snapshots.head_marks`` carries plain marks only), since the claimer's
    retry must not skip its own unconfirmed message."""
    return f"{mark}?"


class Look:
    """One read of a window's heads, and what the rules take from it per view (merged once per read)."""

    __slots__ = ("_heads", "_merged", "_skip", "after_flush", "marks", "shards", "shares")

    def __init__(
        self, heads: list[SegmentSnapshot], segment: Segment | None, skip: tuple[str, str], flushing: bool = False
    ) -> None:
        """``segment``: the live segment of the window (None: a first look read before it opened)."""
        self._heads = heads
        self._skip = skip
        self._merged: dict[str | None, rules.Elsewhere] = {}
        # Whether the live segment had stored a head, or stores one in this invocation, when this was read
        # (its first look, at its first invocation, comes before any: other shards in step with it have
        # stored none yet either).
        self.after_flush = segment is not None and (segment.flushed_at_event >= 0 or flushing)
        # The incidents the window's other shards had handled in it when they wrote these heads
        # (``head_marks``); this shard's own are in its state (a retry with an older state pays a request).
        self.marks = {mark for head in heads if head.shard_id != skip[0] for mark in head.marks}
        # The shards whose heads it holds, this one included.
        self.shards = len({head.shard_id for head in heads} | {skip[0]})
        # Per view and key listed elsewhere: its whole window's write units over its part here, when read.
        self.shares: dict[str | None, dict[str, float]] = {}
        for view in segment.views() if segment is not None else ():
            others = self.elsewhere(view.index, skip).entries
            self.shares[view.index] = {
                key: (entry.wcu + others[key].wcu) / entry.wcu
                for key, entry in view.entries.items()
                if key in others and entry.wcu > 0
            }

    def elsewhere(self, index: str | None, skip: tuple[str, str]) -> rules.Elsewhere:
        if skip != self._skip:  # the live segment took its next generation since: its old head counts
            return elsewhere(self._heads, index, skip)
        merged = self._merged.get(index)
        if merged is None:
            merged = self._merged[index] = elsewhere(self._heads, index, skip)
        return merged


def elsewhere(heads: list[SegmentSnapshot], index: str | None, skip: tuple[str, str] | None = None) -> rules.Elsewhere:
    """The merged figures of a window's heads, the table's or one index's, leaving out ``skip``
    ((shard, origin): the live segment, whose own figures are newer)."""
    parts = []
    for head in heads:
        if skip is not None and (head.shard_id, head.origin) == skip:
            continue
        if index is None:
            parts.append((head.summary.entries, head.summary.pruned, head.summary.wcu, head.last_event))
        elif index in head.indexes:
            part = head.indexes[index]
            parts.append((part.entries, part.pruned, part.wcu, head.last_event))
        else:
            parts.append(({}, 0, 0, head.last_event))
    return _merged(parts)


def with_live(stored: rules.Elsewhere, live: rules.Tallied) -> rules.Elsewhere:
    """A window's figures over all of its segments: the others' (``stored``) and this shard's live
    segment, when the window is the one this shard is finishing."""
    # ``stored.pruned`` is already per key: its entries enter with no bound of their own, and it is added.
    merged = _merged(
        [(stored.entries, 0, stored.wcu, stored.last_event), (live.entries, live.pruned, live.wcu, live.last_event)]
    )
    for key, bound in stored.pruned.items():
        merged.pruned[key] = merged.pruned.get(key, 0) + bound
    return merged


def _merged(parts: list[tuple[dict[str, summary.Entry], int, int, int]]) -> rules.Elsewhere:
    """(entries, pruned, write units, last event second) of several segments as one ``Elsewhere``: each
    key's bound is the sum of the bounds of the parts that list it."""
    entries, _bounds = summary.merge((part_entries, pruned) for part_entries, pruned, _wcu, _last in parts)
    bounds: dict[str, int] = {}
    for part_entries, pruned, _wcu, _last in parts:
        if pruned:
            for key in part_entries:
                bounds[key] = bounds.get(key, 0) + pruned
    return rules.Elsewhere(
        sum(wcu for _e, _p, wcu, _l in parts), entries, bounds, max((last for *_rest, last in parts), default=0)
    )


def judged_window(heads: list[SegmentSnapshot], shard_id: str, current: int, seconds: int) -> int:
    """The window a resolution judges, at the final invocation of ``current`` on ``shard_id``: the
    latest of ``current`` and the ``RESOLVE_LAG_WINDOWS - 1`` before it that every sibling finished
    (every shard with a head in it or in the ``SIBLING_WINDOWS`` windows before it has heads in it, all
    written when done; this shard has finished all of them), else the window ``RESOLVE_LAG_WINDOWS``
    back. ``heads``: the table's heads of those windows and the ``SIBLING_WINDOWS`` before them."""
    done: dict[int, dict[str, bool]] = {}
    for head in heads:
        shards = done.setdefault(head.window_start, {})
        shards[head.shard_id] = shards.get(head.shard_id, True) and head.final
    oldest = current - RESOLVE_LAG_WINDOWS * seconds
    for window in range(current, oldest, -seconds):
        siblings: set[str] = set()
        for back in range(SIBLING_WINDOWS + 1):
            siblings.update(done.get(window - back * seconds, {}))
        finished = done.get(window, {})
        if all(shard == shard_id or finished.get(shard, False) for shard in siblings):
            return window
    return oldest


def resolves(heads: list[SegmentSnapshot], shard_id: str, current: int, seconds: int) -> bool:
    """Whether this shard resolves the table's incidents at its final invocation of window ``current``.

    Any shard may resolve any incident (the write is conditional), but each one that looks pays a Query
    of the open incidents and, when some are open, one of the earlier windows' heads: at 100 shards
    that alone would exceed the request budget. So the ``RESOLVERS`` lowest shard ids among those
    with a head in the window (``heads``: its final look's, this shard included) resolve. Two, not one:
    the lowest may be a parent that ended in this window (it never has a final invocation of it), or a
    shard whose final invocation keeps failing. Each shard also takes a turn every ``ROTA_WINDOWS``
    windows (by a hash of its id), so a table's incidents are looked at even if both stall. An elected
    shard that does not see another's head (the index is eventually consistent) elects itself too:
    the looks are redundant, never missing."""
    candidates = sorted({head.shard_id for head in heads if head.window_start == current} | {shard_id})
    if shard_id in candidates[:RESOLVERS]:
        return True
    return zlib.crc32(shard_id.encode("utf-8")) % ROTA_WINDOWS == (current // seconds) % ROTA_WINDOWS


class AlertDesk:
    def __init__(
        self,
        settings: Settings,
        incidents: IncidentStore,
        publisher: Publisher,
        windows: WindowReader,
    ) -> None:
        self._settings = settings
        self._incidents = incidents
        self._publisher = publisher
        self._windows = windows
        # Per (table, window, shard): a container serves one shard at a time, but any of the table's shards.
        self._looks: dict[tuple[str, int, str], Look] = {}
        # The same, read ahead: a window's heads as the previous window's final look found them.
        self._ahead: dict[tuple[str, int, str], Look] = {}
        # Messages this container published (its retries must not send them again).
        self._sent: set[tuple[str, str, int, str]] = set()

    def review(
        self, shard_id: str, state: ShardState, segments: list[Segment], final: bool, flushing: list[Segment]
    ) -> int:
        """Judge the segments this invocation folded records into, and at a window's final invocation
        judge the completing segments once more and resolve what cooled down. Runs before the flush, so
        the heads the flush writes (``flushing``) carry the incidents handled here (``head_marks``): a
        shard that reads them skips those incidents' writes. For a segment the flush writes, the
        window's heads are read again if it may matter (``_worth_reading``). A final invocation reads the
        window's and the next window's heads with one Query (``heads_between``): its last look at the
        window, and its first at the next; a resolving shard reads the earlier windows' only when some
        incident is open (``_resolve``)."""
        published = 0
        recent: dict[tuple[str, int], list[SegmentSnapshot]] = {}
        judged = list(segments)
        if final:
            seconds = self._settings.window_seconds
            for segment in state.segments.values():
                start = segment.window_start
                stored = self._windows.heads_between(segment.table, start, start + seconds)
                recent[(segment.table, start)] = [head for head in stored if head.window_start == start]
                # The same Query holds the next window's heads (shards ahead of this one): this shard's
                # first look at that window, which it opens next (no Query of its own).
                following = (segment.table, start + seconds, shard_id)
                if following not in self._looks and (segment.table, start + seconds) not in state.segments:
                    ahead = [head for head in stored if head.window_start == start + seconds]
                    if len(self._ahead) >= CACHED_WINDOWS:
                        self._ahead.clear()
                    self._ahead[following] = Look(ahead, None, (shard_id, ""))
                if all(segment is not other for other in judged):
                    judged.append(segment)
        final_looks: dict[tuple[str, int], Look] = {}
        for segment in judged:
            skip = (shard_id, segment.origin)
            flushes = any(segment is other for other in flushing)
            heads = recent.get((segment.table, segment.window_start))
            look = self._looks.get((segment.table, segment.window_start, shard_id))
            if look is None:
                look = self._first_look(segment, shard_id)
            if heads is not None:
                in_window = [head for head in heads if head.window_start == segment.window_start]
                look = self._remember(segment, shard_id, Look(in_window, segment, skip, flushes))
                final_looks[(segment.table, segment.window_start)] = look
            elif look is None or (flushes and self._worth_reading(segment, look, skip, state)):
                look = self._read(segment, skip, shard_id, flushes)
            for view in segment.views():
                published += self._review_view(shard_id, state, view, look.elsewhere(view.index, skip), look.marks)
        if final:
            for segment in list(state.segments.values()):
                window = (segment.table, segment.window_start)
                if resolves(recent[window], shard_id, segment.window_start, self._settings.window_seconds):
                    published += self._resolve(shard_id, segment, recent[window], final_looks[window])
        return published

    def _first_look(self, segment: Segment, shard_id: str) -> Look | None:
        """The window's heads read with the previous window's final look, if this segment's records so far
        came within ``AHEAD_FRESH_SECONDS`` of the window's start (a shard in step with the others); else
        None (its first look reads them)."""
        look = self._ahead.pop((segment.table, segment.window_start, shard_id), None)
        if look is None or segment.last_event > segment.window_start + AHEAD_FRESH_SECONDS:
            return None
        return self._remember(segment, shard_id, look)

    def _remember(self, segment: Segment, shard_id: str, look: Look) -> Look:
        return self._remember_as((segment.table, segment.window_start, shard_id), look)

    def _remember_as(self, key: tuple[str, int, str], look: Look) -> Look:
        if len(self._looks) >= CACHED_WINDOWS:
            self._looks.clear()
        self._looks[key] = look
        return look

    def _read(self, segment: Segment, skip: tuple[str, str], shard_id: str, flushes: bool) -> Look:
        heads = self._windows.window_heads(segment.table, segment.window_start)
        return self._remember(segment, shard_id, Look(heads, segment, skip, flushes))

    def _worth_reading(self, segment: Segment, look: Look, skip: tuple[str, str], state: ShardState) -> bool:
        """Whether the window's heads should be read again at this flush: the last look came before
        this segment's first flush (its siblings had stored nothing yet), or some key not yet alerted in
        this window may be near the alert rate (or share) on the merged figures (``rules.near``)."""
        if not look.after_flush:
            return True
        settings = self._settings
        for view in segment.views():
            others = look.elsewhere(view.index, skip)
            growth = look.shares.get(view.index, {})
            for key, reason in rules.near(view, settings, others, growth, READ_FRACTION, look.shards):
                if state.notified.get(mark_of(view.table, rules.incident_key(reason, key, view.index))) != (
                    view.window_start
                ):
                    return True
        return False

    # -- hot keys ---------------------------------------------------------------------------
    def _review_view(
        self, shard_id: str, state: ShardState, view: rules.Tallied, others: rules.Elsewhere, marks: set[str]
    ) -> int:
        """Incident writes for the view's hot keys, once per key and window on this shard (``state.notified``)
        and, in the common case, once per key and window on the whole table: a key another shard's head
        lists as handled in this window (``marks``) is only remembered. A mark in a head is always true
        (it is set after the incident's writes succeeded, and only for an incident found published or
        made so); a mark missing from a head (not yet written, or not yet in the eventually consistent
        index) costs one request, never an alert (the writes are conditional)."""
        settings = self._settings
        hot = rules.partition_limit_hot(view, settings, others)
        # Share of writes is a table rule: an index's few key values always split its writes in a
        # few large shares, and only their rate (back-pressure) can throttle the table.
        if view.index is None:
            hot.extend(rules.share_hot(view, settings, others))
        published = 0
        for key in hot:
            mark = mark_of(key.table, key.incident_key)
            if key.window_start in (state.notified.get(mark), state.notified.get(awaiting(mark))):
                continue
            if mark not in marks:
                diagnosed = _diagnosed(key, view, others, settings.partition_wcu_limit)
                sent = self._on_hot(diagnosed, shard_id, others.wcu + view.wcu)
                if sent == AWAITED:
                    # Another shard claimed it and publishes it (or its retry will): remembered apart, so
                    # this shard's head does not tell the claimer's retry that it went out.
                    mark = awaiting(mark)
                else:
                    published += sent
            if len(state.notified) < MAX_MARKS:  # beyond it, later invocations re-check (idempotent)
                state.notified[mark] = key.window_start
        return published

    def _on_hot(self, hot: rules.HotKey, shard_id: str, table_wcu: int) -> int:
        """The incident writes for a key found hot in its window (messages published: 0 or 1), or
        ``AWAITED``: another shard claimed it in this window and has not marked it published yet."""
        incidents = self._incidents
        claimed, current = incidents.claim_firing(hot, shard_id)
        if claimed:
            self._deliver(hot, FIRING, table_wcu, hot.wcu_per_second, "published")
            return 1
        if current.get("status") == RESOLVED:
            # Resolved on a window after this one (this shard is behind its siblings): that incident is over.
            return 0
        if (
            current.get("status") == FIRING
            and current.get("published") is False
            and int(current.get("fired_window", -1)) == hot.window_start
        ):
            if current.get("shard_id") != shard_id:
                # Another shard carrying the partition claimed it and is publishing (or its retry will):
                # publishing here too would send it twice.
                return AWAITED
            # Our claim was written but its message may not have gone out (the invocation failed in
            # between): publish it now, unless this container already did.
            return self._deliver(hot, FIRING, table_wcu, hot.wcu_per_second, "published")
        peak = float(current.get("peak", 0))
        if int(current.get("last_hot_window", -1)) >= hot.window_start and peak >= hot.wcu_per_second:
            # Marked hot in this window already (by another shard carrying the partition, or an earlier
            # invocation), at this rate or more: nothing to add. A reminder that falls due meanwhile goes
            # out with the next window's first mark.
            return 0
        reminder_seconds = self._settings.alert_reminder_seconds
        notified_at = current.get("notified_at")
        # The failed claim returned the incident: a reminder it shows not due is not asked for (the
        # conditional claim would fail); one that falls due meanwhile goes out with a later window's mark.
        if notified_at is None or int(notified_at) <= hot.event_time - reminder_seconds:
            previous = incidents.claim_reminder(hot, shard_id, reminder_seconds)
            if previous is not None:
                peak = max(float(previous.get("peak", 0)), hot.wcu_per_second)
                incidents.raise_peak(hot)
                try:
                    self._publish(hot, REMINDER, table_wcu, peak)
                except PublishRefused:
                    incidents.release_reminder(hot, int(previous.get("notified_at", 0)))
                    raise
                return 1
        # One write marks it hot in this window and keeps the higher peak.
        incidents.mark_hot(hot, shard_id, max(peak, hot.wcu_per_second))
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
            alert_threshold=self._settings.alert_threshold,
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
    def _resolve(self, shard_id: str, live: Segment, heads: list[SegmentSnapshot], look: Look) -> int:
        """Resolve the table's open incidents (its indexes' included) whose key was never hot in the
        judged window (``judged_window``, from the recent windows' heads) and stayed under the resolve
        level over all of it. ``heads``: ``live``'s window's, as its final look (``look``) read them."""
        table = live.table
        open_incidents = self._incidents.open_incidents(table)
        if not open_incidents:
            return 0
        settings = self._settings
        seconds = settings.window_seconds
        current = live.window_start
        # The evidence of which earlier windows every sibling finished: read only when there is something
        # to resolve (the final Query reads the window and the next one only).
        first = current - (RESOLVE_LAG_WINDOWS + SIBLING_WINDOWS) * seconds
        heads = self._windows.heads_between(table, first, current - seconds) + heads
        judged = judged_window(heads, shard_id, current, seconds)
        in_window = [head for head in heads if head.window_start == judged]
        views = {view.index: view for view in live.views()} if judged == current else {}
        skip = (shard_id, live.origin)
        windows: dict[str | None, rules.Elsewhere] = {}
        published = 0
        for incident in open_incidents:
            # The key and reason are the item's attributes; its sort key is only a name (a digest of the key).
            reason, key, incident_key = str(incident["reason"]), str(incident["key"]), str(incident["sk"])
            index = str(incident["index_name"]) if incident.get("index_name") is not None else None
            window = windows.get(index)
            if window is None:
                view = views.get(index)
                # The window being finished: the final look's figures and the live segment's (newer than its head).
                window = windows[index] = (
                    with_live(look.elsewhere(index, skip), view) if view is not None else elsewhere(in_window, index)
                )
            if incident.get("status") == RESOLVED:
                # Resolved by an earlier attempt of this invocation whose message may not have gone out.
                if str(incident.get("shard_id", "")) == shard_id:
                    resolved = int(incident.get("resolved_window", judged))
                    cooled = self._cooled(table, index, key, reason, resolved, window)
                    peak = float(incident.get("peak", 0))
                    published += self._announce(cooled, window.wcu, peak, incident_key, shard_id)
                continue
            if int(incident["last_hot_window"]) >= judged:
                continue
            if rules.window_level(window, settings, key, reason) >= rules.resolve_level(settings, reason):
                continue
            if not self._incidents.resolve(table, incident_key, judged, shard_id):
                continue
            cooled = self._cooled(table, index, key, reason, judged, window)
            peak = float(incident.get("peak", 0))
            published += self._announce(cooled, window.wcu, peak, incident_key, shard_id)
        return published

    def _announce(self, cooled: rules.HotKey, table_wcu: int, peak: float, incident_key: str, shard_id: str) -> int:
        """Publish a resolution this shard wrote. If SNS refuses it (nothing went out), the resolution is
        undone before the batch fails: only the resolving shard may re-send its message, and its retry
        may not be a resolving shard any more (``resolves``), so the incident goes back to firing for
        whichever shard resolves next. An unknown outcome is taken as sent (``_deliver``)."""
        try:
            return self._deliver(cooled, RESOLVED, table_wcu, peak, "resolve_published", incident_key)
        except PublishRefused:
            self._incidents.reopen(cooled.table, incident_key, cooled.window_start, shard_id)
            raise

    def _cooled(
        self, table: str, index: str | None, key: str, reason: str, judged: int, window: rules.Elsewhere
    ) -> rules.HotKey:
        level = rules.window_level(window, self._settings, key, reason)
        seconds = self._settings.window_seconds
        wcu = int(level * seconds) if reason == rules.PARTITION_LIMIT else int(level * window.wcu)
        return rules.HotKey(
            table=table,
            index=index,
            key=key,
            reason=reason,
            window_start=judged,
            window_seconds=seconds,
            writes=0,
            wcu=wcu,
            wcu_per_second=round(wcu / seconds, 1),
            share=round(level, 4) if reason == rules.SHARE else 0.0,
            event_time=max(window.last_event, judged + seconds - 1),
        )


def _diagnosed(hot: rules.HotKey, segment: rules.Tallied, others: rules.Elsewhere, limit: int) -> rules.HotKey:
    """The hot key with the antipattern its name and its window's figures point to (if any)."""
    total = others.wcu + segment.wcu
    # A pruned summary has seen more than twice its capacity of keys: never "few keys".
    distinct = len(segment.entries.keys() | others.entries.keys()) + (diagnosis.FEW_KEYS if segment.pruned else 0)
    found = _family_of(hot, segment, others, limit) or diagnosis.classify(
        hot.key, hot.wcu / total if total else 0.0, distinct, hot.index
    )
    stats = segment.items.get(hot.key)
    spread = items.verdict(stats, segment.has_sort_key, segment.has_local_indexes) if hot.index is None else None
    return dataclasses.replace(
        hot,
        pattern=found.pattern if found else None,
        remedy=found.remedy if found else None,
        items=spread[0] if spread else None,
        items_advice=spread[1] if spread else None,
    )


def _family_of(
    hot: rules.HotKey, segment: rules.Tallied, others: rules.Elsewhere, limit: int
) -> diagnosis.Diagnosis | None:
    """A hot key that is one shard of a write-sharded family (in this window's figures so far): the
    family's verdict (uneven, near what its shards absorb) is the advice, not "shard it"."""
    weights = dict(others.keys)
    for key, entry in segment.entries.items():
        weights[key] = weights.get(key, 0) + entry.wcu
    for family in diagnosis.shard_families(weights.items()):
        if hot.key.startswith(family.stem) and hot.key[len(family.stem) :].isdigit():
            seconds = max(1, segment.last_event - hot.window_start + 1)
            return diagnosis.Diagnosis(diagnosis.SHARD_FAMILY, family.verdict(seconds, limit))
    return None
