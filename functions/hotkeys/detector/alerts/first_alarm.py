"""The stream consumer's part in alerting: a crossing in its own shard's figures, announced at once.

A table key's writes all reach one shard (between rollovers), so the shard that carries it sees it
cross the partition limit first, on its live segment, at the invocation that folds the records: the
firing message goes out from there (``detection_latency``: seconds, not a judge's look later). The
same rule on the shard's part of an index partition fires when that part alone crosses. Everything
else about an incident (a partition whose writes are spread over shards, shares of the whole table,
escalations, reminders, resolution) is the judge's (``alerts.judge``), on every shard's figures.

Requests: one conditional write per incident this shard starts; none while a key stays hot. Per key
and window the shard remembers in its state what it handled; across windows, this container
remembers the keys it saw hot or firing in the previous window (a key hot there cannot have resolved
since: resolution needs a settled window in which it was cool), so a key that stays hot for hours
costs no request after its first.
"""

from __future__ import annotations

from collections.abc import Callable

from hotkeys.detector.alerts import rules
from hotkeys.detector.alerts.diagnose import Context, diagnosed
from hotkeys.detector.alerts.incidents import Message
from hotkeys.detector.alerts.notifier import Notifier
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.state import Segment, ShardState, View, mark_of
from hotkeys.detector.proposals import is_proposed

# Keys this container remembers as hot or firing (per table and incident): beyond it, it forgets the
# oldest (a forgotten key costs one conditional write when next found hot).
MAX_REMEMBERED = 4096


class FirstAlarm:
    def __init__(self, settings: Settings, notifier: Notifier, clock: Callable[[], float]) -> None:
        self._settings = settings
        self._notifier = notifier
        self._clock = clock
        # (table, incident name) → the latest window in which this container found it hot and firing.
        self._firing: dict[tuple[str, str], int] = {}

    def review(self, shard_id: str, state: ShardState, segments: list[Segment]) -> int:
        """Announce the partition-limit crossings in the figures of the segments this invocation folded
        records into; returns the messages published. Raises PublishRefused when SNS refused one (the
        batch fails; its retry, this shard again, sends what it claimed)."""
        published = 0
        for segment in segments:
            for view in segment.views():
                if is_proposed(view.index):
                    continue  # a what-if proposal is never an incident (alerts.what_if)
                for hot in rules.partition_limit_hot(view, self._settings):
                    published += self._on_hot(shard_id, state, segment, view, hot)
        return published

    def _on_hot(self, shard_id: str, state: ShardState, segment: Segment, view: View, hot: rules.HotKey) -> int:
        window = hot.window_start
        mark = mark_of(hot.table, hot.incident_key)
        if state.handled(mark, window):
            return 0  # handled by this shard in this window
        remembered = (hot.table, hot.incident_key)
        previous = self._firing.get(remembered)
        published = 0
        if previous is None or previous < window - self._settings.window_seconds:
            published = self._start(shard_id, segment, view, hot)
        if published >= 0:
            self._remember(remembered, window)
        state.remember_handled(mark, window)
        return max(published, 0)

    def _start(self, shard_id: str, segment: Segment, view: View, hot: rules.HotKey) -> int:
        """1 if this call announced the incident, 0 if it stands firing, -1 if it is not firing (resolved on
        a later window, or owing its resolution): then this container does not remember it as firing."""
        now = self._clock()
        context = Context(
            view.entries, view.wcu, view.summary.pruned > 0, view.items, view.has_sort_key, view.has_local_indexes
        )
        found = diagnosed(hot, context, self._settings.partition_wcu_limit)
        started, current = self._notifier.start(found, now, owner=shard_id)
        if started:
            return 1
        if current is None:
            return -1
        incident, version = current
        pending = incident.pending
        if pending is not None and pending.message is Message.FIRING and incident.claimable_by(shard_id, now):
            # This shard's own claim whose message may not have gone out (the invocation failed in between).
            self._notifier.deliver(incident, version, now, found)
            return 1
        return 0 if incident.firing else -1

    def _remember(self, key: tuple[str, str], window: int) -> None:
        if key not in self._firing and len(self._firing) >= MAX_REMEMBERED:
            del self._firing[min(self._firing, key=self._firing.__getitem__)]
        self._firing[key] = window
