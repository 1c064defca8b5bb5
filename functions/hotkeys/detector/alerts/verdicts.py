"""What the judge concludes from one look at a table: pure functions of its heads, incidents and clock.

A look reads the heads (``snapshots.head_of``) every shard stored for the table's recent windows and
merges them per window (``merge``): each window's table and index partitions as one set of figures
(``rules.Figures``), whatever the number of shards, rollovers and splits behind them. On those figures:

* **Firing and life**: a partition whose merged rate (or its ``at_most``: ``domain.rate.Rate``) reaches the
  threshold starts an incident (unless a shard's first alarm already did), and a firing one is marked
  hot in the window, its peak raised; an update is owed when the peak outgrows what the last message
  sized its advice on (``Incident.escalated_by``), judged on a rate that covers a whole burst bucket
  (the first seconds of a burst are not yet its rate: ``HotKey.measured``), a reminder when ``ALERT_REMINDER_SECONDS``
  passed since the last message, quoting the key's rate in the last ``RECENT_SECONDS`` (``recent_rate``).
* **Shares** are judged on settled windows only: a share is of the table's writes on every shard, and
  a window's total is known once every shard of the table has finished it.
* **Resolution**: a firing incident resolves on the first settled window after its last hot one whose
  figures keep the key under the resolve level (``rules.cooled``).

Settled (``settled``): the table's stream lag (``consumer.lag``: how old the records its shards behind
are delivering, from their own reports) is younger than the window's end, so no shard of it, known to
the look or not (a shard an hour behind, a split's child), can still be delivering records of it; and every
shard that carries the partition (its heads list the key in the windows read; for a share, and where
no shard lists the key, every shard of the table near the window) has written the window's final head,
or a head of a later window, or its shard ended (its last window's final head came before that
window's end: a rollover's parent). A carrier silent since before the window (its latest head is
older: it has no records, or it is stuck on a poison record) counts once the window ended
``SETTLE_GRACE_SECONDS`` ago, the time a stuck shard's retries take to show in its lag reports. That covers
a table that stops writing altogether; a shard behind or stuck holds the windows it has not passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from hotkeys.detector.alerts import incidents, rules
from hotkeys.detector.alerts.diagnose import Context, diagnosed
from hotkeys.detector.alerts.incidents import Incident
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.snapshots import SegmentSnapshot
from hotkeys.detector.domain import items as item_figures
from hotkeys.detector.domain import summary
from hotkeys.detector.domain.items import ItemStats
from hotkeys.detector.domain.rate import shown
from hotkeys.detector.domain.summary import Entry
from hotkeys.detector.proposals import is_proposed

# Windows before the latest one a look reads: shards out of step by up to this many windows are
# judged together, and an incident's resolution finds the window it needs.
SIBLING_WINDOWS = 3
# A firing incident still hot is stored when its last hot window enters a new period of this length
# (every 5 windows of 60 s), not every window: a key hot for hours costs a write per 5 minutes.
MARK_SECONDS = 300
# How long after a window's end a shard silent in it counts as having nothing in it (besides the lag
# check): what a stuck shard's retried batches take to show in its table's lag reports.
SETTLE_GRACE_SECONDS = 150
# What a reminder's "now" covers: the key's heaviest burst bucket begun in the last minute of the clock.
RECENT_SECONDS = 60


@dataclass(frozen=True)
class Merged:
    """One table's (or one index's) partitions in one window, merged over every shard's head
    (``rules.Figures``). A key's bound is the sum of the bounds of the heads that list it: a head that
    leaves a key out holds at most its own bound of it, which is not added (docs/decisions.md §49)."""

    table: str
    index: str | None
    window_start: int
    last_event: int
    entries: dict[str, Entry]
    wcu: int
    bounds: dict[str, int]
    pruned: bool  # some head's summary pruned (its shard saw more than twice its capacity of keys)
    items: dict[str, ItemStats] = field(default_factory=dict)
    has_sort_key: bool = False
    has_local_indexes: bool = False
    # Each head's shard and the keys it lists (where ``carriers`` finds a partition's shards).
    listed: tuple[tuple[str, Mapping[str, Entry]], ...] = ()

    def bound(self, key: str) -> int:
        return self.bounds.get(key, 0)

    def carriers(self, key: str) -> frozenset[str]:
        """The shards whose heads list ``key`` (asked for an incident's key only: not built per key)."""
        return frozenset(shard for shard, entries in self.listed if key in entries)

    def context(self) -> Context:
        return Context(self.entries, self.wcu, self.pruned, self.items, self.has_sort_key, self.has_local_indexes)


def merge(table: str, window_start: int, heads: list[SegmentSnapshot], index: str | None) -> Merged:
    """A window's heads (every shard's, every generation's) as one set of figures."""
    parts: list[tuple[summary.Summary, str]] = []
    for head in heads:
        part = head.summary if index is None else head.indexes.get(index)
        if part is not None:
            parts.append((part, head.shard_id))
    # (the heads are the judge's own, read for this merge: their entries are taken, not copied)
    entries, _total = summary.merge(((part.entries, part.pruned) for part, _shard in parts), copy=False)
    bounds: dict[str, int] = {}
    for part, _shard in parts:
        if part.pruned:
            for key in part.entries:
                bounds[key] = bounds.get(key, 0) + part.pruned
    item_parts: dict[str, list[ItemStats]] = {}
    if index is None:
        for head in heads:
            for key, stats in head.items.items():
                item_parts.setdefault(key, []).append(stats)
    return Merged(
        table=table,
        index=index,
        window_start=window_start,
        last_event=max((head.last_event for head in heads), default=window_start),
        entries=entries,
        wcu=sum(part.wcu for part, _shard in parts),
        bounds=bounds,
        pruned=any(part.pruned for part, _shard in parts),
        items={key: item_figures.merged(found) for key, found in item_parts.items()},
        has_sort_key=index is None and any(head.has_sort_key for head in heads),
        has_local_indexes=index is None and any(head.has_local_indexes for head in heads),
        listed=tuple((shard, part.entries) for part, shard in parts),
    )


@dataclass(frozen=True)
class ShardProgress:
    """How far one shard has come, as its heads say."""

    latest_window: int
    finished: frozenset[int]  # windows whose every head of this shard is final
    windows: frozenset[int]  # windows it has heads in
    ended: bool = False  # its latest window closed early: the shard ended (a rollover's parent)


@dataclass(frozen=True)
class HeadMark:
    """What a head says of its shard's progress (all the judge keeps of it once its window is merged)."""

    shard_id: str
    window_start: int
    final: bool
    closed_early: bool


def progress_of(marks: Iterable[HeadMark]) -> dict[str, ShardProgress]:
    by_shard: dict[str, dict[int, bool]] = {}
    closed: set[tuple[str, int]] = set()
    for mark in marks:
        windows = by_shard.setdefault(mark.shard_id, {})
        windows[mark.window_start] = windows.get(mark.window_start, True) and mark.final
        if mark.closed_early:
            closed.add((mark.shard_id, mark.window_start))
    found = {}
    for shard, windows in by_shard.items():
        latest = max(windows)
        done = frozenset(w for w, finished in windows.items() if finished)
        found[shard] = ShardProgress(latest, done, frozenset(windows), latest in done and (shard, latest) in closed)
    return found


@dataclass(frozen=True)
class WindowRead:
    """One window of a table as a look read it: its partitions merged per index (None: the table's),
    and its heads' marks. The judge keeps it once the window is settled (``alerts.judge``)."""

    merged: dict[str | None, Merged]
    marks: tuple[HeadMark, ...]


def read_window(table: str, window_start: int, heads: list[SegmentSnapshot]) -> WindowRead:
    """A window's heads merged: the table's partitions and each index's named in them."""
    names = sorted({name for head in heads for name in head.indexes})
    merged: dict[str | None, Merged] = {None: merge(table, window_start, heads, None)}
    merged.update({name: merge(table, window_start, heads, name) for name in names})
    marks = tuple(HeadMark(head.shard_id, head.window_start, head.final, head.closed_early) for head in heads)
    return WindowRead(merged, marks)


@dataclass(frozen=True)
class Look:
    """What one look read of a table: its windows' merged figures and its shards' progress."""

    table: str
    windows: dict[int, dict[str | None, Merged]]  # window start → index (None: the table's) → figures
    progress: dict[str, ShardProgress]
    first_window: int  # the earliest window the look read (its figures before that are unknown)
    now: float  # the judge's clock
    lag: float  # the table's stream lag, in seconds (consumer.lag)

    def figures(self, window: int, index: str | None) -> Merged:
        found = self.windows.get(window, {}).get(index)
        if found is not None:
            return found
        return Merged(self.table, index, window, window, {}, 0, {}, False)

    def carriers(self, key: str, index: str | None, since: int) -> frozenset[str]:
        """The shards whose heads list ``key`` in the windows read from ``since`` on."""
        found: set[str] = set()
        for window, views in self.windows.items():
            if window >= since and index in views:
                found |= views[index].carriers(key)
        return frozenset(found)

    def shards_near(self, window: int, seconds: int) -> frozenset[str]:
        """Every shard with a head in the window or the ``SIBLING_WINDOWS`` windows before it."""
        low = window - SIBLING_WINDOWS * seconds
        return frozenset(
            shard for shard, done in self.progress.items() if any(low <= w <= window for w in done.windows)
        )

    def settled(self, window: int, carriers: frozenset[str], seconds: int) -> bool:
        """Whether no shard carrying the partition can still add to ``window`` (module doc). With no
        carrier known, every shard of the table near the window stands for one."""
        end = window + seconds
        if self.lag >= self.now - end:
            return False  # some shard is still delivering records from before the window's end
        carriers = carriers or self.shards_near(window, seconds)
        for shard in carriers:
            done = self.progress.get(shard)
            if done is not None and done.ended and done.latest_window <= window:
                continue  # its shard ended: nothing more comes from it (its last window is final)
            if done is None or done.latest_window < window:
                if self.now < end + SETTLE_GRACE_SECONDS:
                    return False  # silent in it: no records, or stuck (the lag shows it within the grace)
            elif done.latest_window == window and window not in done.finished:
                return False
        return True


def read(table: str, windows: Mapping[int, WindowRead], first_window: int, now: float, lag: float) -> Look:
    """One look's figures from the windows it read (from ``first_window`` on)."""
    kept = {start: found for start, found in windows.items() if start >= first_window}
    progress = progress_of(mark for found in kept.values() for mark in found.marks)
    return Look(table, {start: found.merged for start, found in kept.items()}, progress, first_window, now, lag)


def read_heads(table: str, heads: list[SegmentSnapshot], first_window: int, now: float, lag: float) -> Look:
    """One look's figures from the heads it read, each window merged here."""
    by_window: dict[int, list[SegmentSnapshot]] = {}
    for head in heads:
        by_window.setdefault(head.window_start, []).append(head)
    windows = {start: read_window(table, start, found) for start, found in by_window.items()}
    return read(table, windows, first_window, now, lag)


# -- what a look decides -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Start:
    """A crossing no incident stands for: start one, announcing it."""

    hot: rules.HotKey


@dataclass(frozen=True)
class Change:
    """A standing incident's next state (hot in a later window, a higher peak, a message owed, resolved);
    ``hot``: the figures its message quotes."""

    before: Incident
    after: Incident
    hot: rules.HotKey | None = None

    @property
    def writes(self) -> bool:
        """Whether the change must be stored now: a message owed, a resolution, or the incident still hot
        into a new ``MARK_SECONDS`` period. Otherwise (a later hot window, a higher peak) the judge keeps it
        and writes it with the next stored change: a judge that reads the incident afresh finds its last
        hot window at most ``MARK_SECONDS`` old, and reads the windows after it anyway (``first_window``)."""
        before, after = self.before, self.after
        return (
            after.pending != before.pending
            or after.status != before.status
            or after.last_hot_window // MARK_SECONDS != before.last_hot_window // MARK_SECONDS
        )


@dataclass(frozen=True)
class Resend:
    """A message an incident owes that this judge may send (its own claim, or one old enough to take over)."""

    incident: Incident
    hot: rules.HotKey | None = None


Verdict = Start | Change | Resend


def name_of(verdict: Verdict) -> str:
    """The incident a verdict is about."""
    if isinstance(verdict, Start):
        return verdict.hot.incident_key
    if isinstance(verdict, Change):
        return verdict.before.name
    return verdict.incident.name


def decide(look: Look, standing: Mapping[str, Incident], settings: Settings, owner: str) -> list[Verdict]:
    """Every verdict of one look at a table, given its incidents as the judge knows them (by name)."""
    hot_windows = _hot(look, settings)
    verdicts: list[Verdict] = []
    for name in sorted(hot_windows.keys() | standing.keys()):
        incident = standing.get(name)
        found = hot_windows.get(name, [])
        if incident is not None and incident.pending is not None:
            # It owes a message first (an owed resolution also holds back a new firing: it goes out first).
            if incident.claimable_by(owner, look.now):
                verdicts.append(Resend(incident, found[-1] if found else None))
            continue
        if incident is None or not incident.firing:
            after = incident.resolved_window if incident is not None else None
            fresh = [hot for hot in found if after is None or hot.window_start > after]
            if fresh:
                verdicts.append(Start(fresh[0]))
            continue
        changed, hot = _life(look, incident, found, settings, owner) if found else (incident, None)
        if changed.pending is None:
            changed = _resolution(look, changed, settings, owner) or changed
        if changed != incident:
            verdicts.append(Change(incident, changed, hot))
    return verdicts


def _hot(look: Look, settings: Settings) -> dict[str, list[rules.HotKey]]:
    """Per incident name, its key's hot figures in each window read, oldest first (shares on settled
    windows only), each diagnosed on its window's figures."""
    found: dict[str, list[rules.HotKey]] = {}
    seconds = settings.window_seconds
    for window in sorted(look.windows):
        views = look.windows[window]
        shares_settled = look.settled(window, look.shards_near(window, seconds), seconds)
        for index, figures in views.items():
            if is_proposed(index):
                continue  # a what-if proposal is never an incident (alerts.what_if)
            hot = rules.partition_limit_hot(figures, settings)
            if shares_settled:
                hot += rules.share_hot(figures, settings)
            for key in hot:
                found.setdefault(key.incident_key, []).append(
                    diagnosed(key, figures.context(), settings.partition_wcu_limit)
                )
    return found


def _life(
    look: Look, incident: Incident, found: list[rules.HotKey], settings: Settings, owner: str
) -> tuple[Incident, rules.HotKey]:
    """A firing incident found hot: marked in its latest hot window with its peak, and the message that
    calls for, if any; with the figures its message quotes (the latest that found it hot; a reminder's
    rate is the key's last minute's)."""
    now = look.now
    after = incident
    for hot in found:
        if hot.window_start >= incident.fired_window:
            after = incidents.still_hot(after, hot)
    latest = found[-1]
    # Still hot: hot in the current window or the one before (a key hot only in windows further back
    # waits for its resolution, which waits for the windows after it to settle: no reminder for it).
    recent = latest.window_start + 2 * settings.window_seconds > now
    # An update quotes a rate its key wrote for a whole bucket's length: the figures of the window where it
    # peaked measured that long, or nothing came after them for that long (a burst or a table that stopped)
    source = max(found, key=lambda hot: hot.level)
    complete = source.measured or now - source.event_time > settings.alert_min_span_seconds
    if complete and after.escalated_by(after.peak, settings):
        after = incidents.escalated(after, owner, now)
    elif after.reminder_due(now, settings.alert_reminder_seconds) and recent:
        after = incidents.reminded(after, owner, now)
        if after.reason is rules.Reason.PARTITION_LIMIT:
            last_minute = recent_rate(look, after, settings)
            return after, replace(latest, wcu_per_second=last_minute, at_most_wcu_per_second=last_minute)
    return after, latest


def recent_rate(look: Look, incident: Incident, settings: Settings) -> float:
    """The key's heaviest burst bucket begun in the last ``RECENT_SECONDS`` of event time the look can see
    (its clock less the table's stream lag), as WCU/s, summed over every shard and window the look read; 0
    when it wrote nothing there (quiet)."""
    span = settings.alert_min_span_seconds
    since = look.now - look.lag - RECENT_SECONDS
    units: dict[int, int] = {}
    for views in look.windows.values():
        figures = views.get(incident.index)
        entry = figures.entries.get(incident.key) if figures is not None else None
        if entry is None:
            continue
        for bucket, wcu in zip(entry.buckets, entry.units, strict=True):
            if bucket >= since:
                units[bucket] = units.get(bucket, 0) + wcu
    return shown(max(units.values(), default=0) / span)


def _resolution(look: Look, incident: Incident, settings: Settings, owner: str) -> Incident | None:
    """The incident resolved on the first settled window after its last hot one in which its key stayed
    under the resolve level, if the look shows one (windows it did not read count as unknown: it starts
    at the first it read)."""
    seconds = settings.window_seconds
    start = max(incident.last_hot_window + seconds, look.first_window)
    latest = int(look.now) - int(look.now) % seconds - seconds  # the latest window that has ended
    carriers = look.carriers(incident.key, incident.index, max(incident.fired_window, look.first_window))
    for window in range(start, latest + 1, seconds):
        # A share is of the whole table's writes: every shard of the table must have finished the window.
        needed = carriers | look.shards_near(window, seconds) if incident.reason is rules.Reason.SHARE else carriers
        if not look.settled(window, needed, seconds):
            return None
        figures = look.figures(window, incident.index)
        if rules.cooled(figures, settings, incident.key, incident.reason):
            level = rules.level(figures, settings, incident.key, incident.reason)
            return incidents.resolved(incident, window, level, owner, look.now)
    return None
