"""The judge (``alerts.judge``): what a container remembers between looks (a window settled at two looks in
a row is kept as merged and not read again; the verdicts are the ones a judge reading everything reaches),
and what one look counts, reads, writes, sends and logs."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from hotkeys.detector.alerts import incidents, verdicts
from hotkeys.detector.alerts import judge as judge_module
from hotkeys.detector.alerts.incidents import TAKEOVER_SECONDS, Incident, Status
from hotkeys.detector.alerts.judge import (
    INCIDENTS_READ_SECONDS,
    LAYOUT_READ_SECONDS,
    MAX_BEHIND_WINDOWS,
    Judge,
    JudgePorts,
    LookOutcome,
    TableMemory,
    _with_peak,
)
from hotkeys.detector.alerts.messages import PublishRefused
from hotkeys.detector.alerts.notifier import Notifier
from hotkeys.detector.alerts.rules import HotKey, Reason
from hotkeys.detector.alerts.verdicts import SIBLING_WINDOWS, ShardProgress
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.layout import Layout
from hotkeys.detector.consumer.snapshots import SegmentSnapshot
from tests.unit.test_verdicts import T0, burst, head

SETTINGS = Settings(stats_table_name="stats", alert_topic_arn="arn:aws:sns:us-east-1:1:t", share_min_wcu=10**9)


class Heads:
    """A window-heads index that says which windows each look read."""

    def __init__(self, heads: list[SegmentSnapshot]) -> None:
        self.heads = heads
        self.reads: list[int] = []

    def heads_since(self, table: str, first_window: int, buckets: int) -> list[SegmentSnapshot]:
        self.reads.append(first_window)
        return [h for h in self.heads if h.window_start >= first_window]

    def latest_window(self, table: str, buckets: int) -> int | None:
        return max((h.window_start for h in self.heads), default=None)


class Layouts:
    def layouts(self) -> list[Layout]:
        return [Layout("tickets", 60)]

    def layout(self, table: str) -> Layout | None:
        return Layout(table, 60)

    def save_layout(self, before: Layout | None, after: Layout) -> bool:
        return True


class Incidents:
    def __init__(self) -> None:
        self.stored: dict[str, tuple[Incident, int]] = {}

    def start(self, incident: Incident, now: float) -> tuple[bool, tuple[Incident, int] | None]:
        current = self.stored.get(incident.name)
        if current is not None and (current[0].firing or current[0].pending is not None):
            return False, current
        self.stored[incident.name] = (incident, 1)
        return True, None

    def update(self, incident: Incident, version: int, now: float) -> tuple[bool, tuple[Incident, int] | None]:
        current = self.stored.get(incident.name)
        if current is None or current[1] != version:
            return False, current
        self.stored[incident.name] = (incident, version + 1)
        return True, None

    def open_incidents(self, table: str) -> list[tuple[Incident, int]]:
        return [s for s in self.stored.values() if s[0].firing or s[0].pending is not None]

    def get(self, table: str, name: str) -> tuple[Incident, int] | None:
        return self.stored.get(name)


class Sent:
    def __init__(self) -> None:
        self.alerts: list[Any] = []

    def publish(self, alert: Any) -> str:
        self.alerts.append(alert)
        return str(len(self.alerts))


def judged(
    visible: list[list[SegmentSnapshot]], looks: list[float], keep: bool = True
) -> tuple[Heads, list[tuple[str, str, float, float]]]:
    """A judge's looks at ``looks``, each seeing its heads (``visible``); what it read and what it sent.
    ``keep=False``: a judge that remembers no window (the reference)."""
    reader, sent, incidents = Heads([]), Sent(), Incidents()
    now = [looks[0]]
    notifier = Notifier(SETTINGS, incidents, sent, "judge")
    judge = Judge(SETTINGS, JudgePorts(reader, Layouts(), incidents, lambda: 0.0, lambda: now[0]), notifier)
    for at, heads in zip(looks, visible, strict=True):
        now[0], reader.heads = at, heads
        if not keep:
            for memory in judge._memory.values():
                memory.kept.clear()
                memory.settled_once.clear()
        judge.look()
    return reader, [(a.key, a.status, a.wcu_per_second, a.peak_wcu_per_second) for a in sent.alerts]


def traffic() -> list[SegmentSnapshot]:
    """Two shards: a key hot over both in the second window (450 WCU/s each), quiet before and after."""
    found = []
    for shard in ("a", "b"):
        for window in range(5):
            start = T0 + 60 * window
            writes = burst("event#42", 500, 0, 10) if window == 1 else [("bg", 1, 30)]
            found.append(head(shard, start, writes))
    return found


def test_a_window_settled_at_two_looks_is_not_read_again() -> None:
    # Given five finished windows of two shards, and looks every 12 s from well after their end
    looks = [T0 + 600 + 12 * n for n in range(4)]
    reader, _alerts = judged([traffic()] * len(looks), looks)
    # Then the first two looks read from the first window they want, the later ones from past the latest
    assert reader.reads[:2] == [reader.reads[0]] * 2
    assert all(read > T0 + 60 * 4 for read in reader.reads[2:]), reader.reads


def test_a_judge_that_keeps_windows_says_what_one_reading_everything_says() -> None:
    # Given the same heads, looked at as they arrive: each window's heads appear after its end
    heads = traffic()
    looks = [T0 + 6 + 12 * n for n in range(50)]
    arriving = [[h for h in heads if h.window_start + 60 <= at] for at in looks]
    # When judged by a judge that keeps settled windows, and by one that reads everything every look
    _reader, remembered = judged(arriving, looks)
    _reader, reference = judged(arriving, looks, keep=False)
    # Then both send the same messages: the firing (the two shards' parts merged) and the resolution
    assert remembered == reference
    assert [(key, status) for key, status, _rate, _peak in remembered] == [
        ("event#42", "firing"),
        ("event#42", "resolved"),
    ]


def test_an_incident_a_first_alarm_started_unknown_to_the_judge_is_updated_in_the_same_look() -> None:
    # Given a judge container that looked before anything was hot (its incidents read then)
    incidents, sent_by_judge, sent_first = Incidents(), Sent(), Sent()
    now, reader = [T0 + 6.0], Heads([head("a", T0, [("bg", 1, 1)], final=False)])
    judge = Judge(
        SETTINGS,
        JudgePorts(reader, Layouts(), incidents, lambda: 0.0, lambda: now[0]),
        Notifier(SETTINGS, incidents, sent_by_judge, "judge"),
    )
    judge.look()
    # and a writer it does not know of (a shard's first alarm) starting the incident at 900 WCU/s
    first = Judge(
        SETTINGS,
        JudgePorts(
            Heads([head("a", T0, burst("event#42", 900, 10, 10), final=False)]),
            Layouts(),
            incidents,
            lambda: 0.0,
            lambda: T0 + 21.0,
        ),
        Notifier(SETTINGS, incidents, sent_first, "shard-a"),
    )
    first.look()
    assert [(a.status, a.wcu_per_second) for a in sent_first.alerts] == [("firing", 900)]
    # When the judge's next look sees the key at 1,500 WCU/s
    now[0], reader.heads = T0 + 30.0, [head("a", T0, burst("event#42", 1500, 10, 10), final=False)]
    judge.look()
    # Then the update goes out in that look, not the next one
    assert [(a.status, a.peak_wcu_per_second) for a in sent_by_judge.alerts] == [("escalated", 1500)]


# -- one look as a whole: what it counts, reads, writes and says ------------------------------------------
class Counted(Incidents):
    """The incident store, counting the reads of open incidents; ``failing`` updates raise first."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0
        self.failing = 0

    def open_incidents(self, table: str) -> list[tuple[Incident, int]]:
        self.reads += 1
        return super().open_incidents(table)

    def update(self, incident: Incident, version: int, now: float) -> tuple[bool, tuple[Incident, int] | None]:
        if self.failing:
            self.failing -= 1
            raise RuntimeError("throttled")
        return super().update(incident, version, now)


class Registry:
    """The layouts registry: what it holds, how often it is read, what is saved (``accept``: saves succeed)."""

    def __init__(self, *held: Layout, accept: bool = True) -> None:
        self.held = {found.table: found for found in held}
        self.reads = 0
        self.saves: list[tuple[Layout | None, Layout]] = []
        self.accept = accept

    def layouts(self) -> list[Layout]:
        self.reads += 1
        return list(self.held.values())

    def layout(self, table: str) -> Layout | None:
        return self.held.get(table)

    def save_layout(self, before: Layout | None, after: Layout) -> bool:
        self.saves.append((before, after))
        if self.accept:
            self.held[after.table] = after
        return self.accept


class Bucketed(Heads):
    """The window-heads index, also recording how many buckets each read queried."""

    def __init__(self, heads: list[SegmentSnapshot]) -> None:
        super().__init__(heads)
        self.buckets: list[int] = []

    def heads_since(self, table: str, first_window: int, buckets: int) -> list[SegmentSnapshot]:
        self.buckets.append(buckets)
        return super().heads_since(table, first_window, buckets)


class Refusing(Sent):
    """SNS refusing its next ``refusals`` messages (nothing sent), then taking them."""

    def __init__(self, refusals: int = 0) -> None:
        super().__init__()
        self.refusals = refusals

    def publish(self, alert: Any) -> str:
        if self.refusals:
            self.refusals -= 1
            raise PublishRefused("refused")
        return super().publish(alert)


class Logged:
    """The judge module's logger: each line as (level, message, extra)."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict[str, Any]]] = []

    def warning(self, message: str, extra: dict[str, Any] | None = None) -> None:
        self.lines.append(("warning", message, extra or {}))

    def info(self, message: str, extra: dict[str, Any] | None = None) -> None:
        self.lines.append(("info", message, extra or {}))


class Setup:
    """A judge of the table ``tickets`` on fakes, its clock at ``now``."""

    def __init__(
        self,
        heads: list[SegmentSnapshot],
        now: float,
        registry: Registry | None = None,
        sent: Sent | None = None,
        lag: Any = lambda _table: 0.0,
        tables: tuple[str, ...] = ("tickets",),
    ) -> None:
        self.reader, self.incidents, self.sent = Bucketed(heads), Counted(), sent or Sent()
        self.registry = registry or Registry(Layout("tickets", 60))
        self.now = now
        notifier = Notifier(SETTINGS, self.incidents, self.sent, "judge")
        ports = JudgePorts(self.reader, self.registry, self.incidents, lag, lambda: self.now)
        self.judge = Judge(SETTINGS, ports, notifier, tables)

    def look(self, at: float, heads: list[SegmentSnapshot] | None = None) -> LookOutcome:
        self.now = at
        if heads is not None:
            self.reader.heads = heads
        return self.judge.look()

    def statuses(self) -> list[str]:
        return [alert.status for alert in self.sent.alerts]

    def stored(self) -> Incident:
        (found,) = self.incidents.stored.values()
        return found[0]


# The key's crossing in window T0 at 900 WCU/s.
HOT = HotKey(
    "tickets", "event#42", Reason.PARTITION_LIMIT, T0, 60, 10, 9000, 900.0, 1.0, T0 + 19, at_most_wcu_per_second=900.0
)


def hot_head(window: int, rate: int, final: bool = True, shard: str = "a") -> SegmentSnapshot:
    return head(shard, window, burst("event#42", rate, 10, 10), final=final)


def quiet_head(window: int, final: bool = True, shard: str = "a") -> SegmentSnapshot:
    return head(shard, window, [("bg", 1, 30)], final=final)


def test_a_look_counts_the_tables_heads_and_messages_it_started_published_and_resolved() -> None:
    # Given a key hot in one window, then quiet
    setup = Setup([hot_head(T0, 900)], T0 + 70)
    # Then the look that starts its incident counts one table, one head, one start, one message
    assert setup.look(T0 + 70) == LookOutcome(tables=1, heads=1, published=1, started=1)
    # and the one that resolves it, one resolution and its message
    assert setup.look(T0 + 130, [hot_head(T0, 900), quiet_head(T0 + 60)]) == LookOutcome(
        tables=1, heads=2, published=1, resolved=1
    )
    assert setup.statuses() == ["firing", "resolved"]
    # and a look at a table with no heads at all counts the table only
    assert Setup([], T0 + 70).look(T0 + 70) == LookOutcome(tables=1)


def test_an_incident_stored_again_in_a_new_mark_period_publishes_nothing() -> None:
    setup = Setup([hot_head(T0, 900)], T0 + 70)
    setup.look(T0 + 70)
    # When the key is hot again, at the same rate, in the next MARK_SECONDS period
    heads = [hot_head(T0, 900), *(quiet_head(T0 + 60 * n, final=False) for n in (1, 2, 3, 4)), hot_head(T0 + 300, 900)]
    outcome = setup.look(T0 + 300 + 20, heads)
    # Then the incident is written with its new last hot window, and no message goes out
    assert outcome == LookOutcome(tables=1, heads=6)
    assert setup.stored().last_hot_window == T0 + 300 and setup.statuses() == ["firing"]


def test_a_peak_raised_within_a_marked_window_is_kept_by_the_judge_unwritten() -> None:
    setup = Setup([hot_head(T0, 900, final=False)], T0 + 25)
    setup.look(T0 + 25)
    # When the same window's head shows the key at 1,000 WCU/s (not a quarter more: no update owed)
    outcome = setup.look(T0 + 37, [hot_head(T0, 1000, final=False)])
    # Then the look fails nothing and writes nothing; the judge remembers the peak at the stored version
    assert outcome == LookOutcome(tables=1, heads=1)
    assert setup.stored().peak == 900
    remembered, version = setup.judge._memory["tickets"].incidents[setup.stored().name]
    assert (remembered.peak, version) == (1000, setup.incidents.stored[remembered.name][1])


def test_a_refused_message_fails_the_look_and_is_resent_alone_at_the_next_by_its_claimant() -> None:
    # Given SNS refusing the firing message once
    setup = Setup([hot_head(T0, 900)], T0 + 70, sent=Refusing(1))
    assert setup.look(T0 + 70) == LookOutcome(tables=1, heads=1, failed=1, refused=1)
    assert setup.statuses() == [] and setup.stored().pending is not None
    # When the next look finds the key also hot in the next window at 1,500 WCU/s
    heads = [hot_head(T0, 900), hot_head(T0 + 60, 1500)]
    # Then that look resends the firing (its own claim), and only the look after sends the update
    assert setup.look(T0 + 82, heads) == LookOutcome(tables=1, heads=2, published=1)
    assert setup.statuses() == ["firing"]
    setup.look(T0 + 94)
    assert setup.statuses() == ["firing", "escalated"]


def test_an_incident_the_judge_starts_has_its_later_windows_judged_at_the_next_look() -> None:
    # Given a key hot in two windows of the first look, at 900 then 1,500 WCU/s
    setup = Setup([hot_head(T0, 900), hot_head(T0 + 60, 1500)], T0 + 130)
    # Then that look announces the firing alone; the update goes out at the next look
    assert setup.look(T0 + 130) == LookOutcome(tables=1, heads=2, published=1, started=1)
    assert setup.statuses() == ["firing"]
    setup.look(T0 + 142)
    assert setup.statuses() == ["firing", "escalated"]


def test_a_write_that_lost_a_race_is_decided_again_at_the_next_look() -> None:
    setup = Setup([hot_head(T0, 900)], T0 + 70)
    setup.look(T0 + 70)
    # Given another writer changed the incident since the judge read it (a version it has not seen)
    incident, version = setup.incidents.stored[HOT.incident_key]
    setup.incidents.stored[incident.name] = (incident, version + 1)
    # When the judge's next look resolves it: its write finds the incident changed, and it remembers that
    heads = [hot_head(T0, 900), quiet_head(T0 + 60)]
    assert setup.look(T0 + 130, heads) == LookOutcome(tables=1, heads=2)
    assert setup.statuses() == ["firing"]
    # Then the look after decides again on the incident as stored, and resolves it
    setup.look(T0 + 142)
    assert setup.statuses() == ["firing", "resolved"]


def test_a_claim_another_writer_never_confirmed_is_taken_over_and_sent_once() -> None:
    setup = Setup([hot_head(T0, 900)], T0 + 300)
    # Given the firing claimed by a consumer TAKEOVER_SECONDS ago or more, never sent
    hot = HOT
    claimed = incidents.started(hot, "shard-a", T0 + 30)
    setup.incidents.stored[claimed.name] = (claimed, 1)
    # When the judge looks
    assert setup.look(T0 + 30 + TAKEOVER_SECONDS) == LookOutcome(tables=1, heads=1, published=1)
    # Then it claims it as its own and sends it; the stored incident owes nothing more
    assert setup.statuses() == ["firing"] and setup.stored().pending is None
    assert setup.incidents.stored[claimed.name][1] == 3  # the claim, then its confirmation


def test_a_message_sent_whose_confirmation_failed_is_not_sent_again_by_its_claimant() -> None:
    # Given a firing published, whose confirmation the store refused on every attempt
    setup = Setup([hot_head(T0, 900)], T0 + 70)
    setup.incidents.failing = 3
    assert setup.look(T0 + 70) == LookOutcome(tables=1, heads=1, failed=1)
    # When the next look finds it still owing the message it claimed
    assert setup.look(T0 + 82) == LookOutcome(tables=1, heads=1, published=1)
    # Then it is confirmed without being sent again
    assert setup.statuses() == ["firing"] and setup.stored().pending is None


def test_the_judge_reads_a_tables_open_incidents_again_every_five_minutes() -> None:
    setup = Setup([quiet_head(T0)], T0 + 70)
    reads = []
    assert INCIDENTS_READ_SECONDS == 300
    for at in (0, 1, 299, 300):
        setup.look(T0 + 70 + at)
        reads.append(setup.incidents.reads)
    assert reads == [1, 1, 1, 2]


def test_incidents_read_again_keep_a_resolved_one_still_read_and_drop_one_resolved_elsewhere() -> None:
    setup = Setup([quiet_head(T0 + 60 * n) for n in range(6)], T0 + 370)
    memory = setup.judge._memory.setdefault("tickets", TableMemory(latest_window=T0 + 300))
    hot = HOT
    firing_here = incidents.confirmed(incidents.started(hot, "judge", T0 + 30))
    resolved_here = incidents.confirmed(incidents.resolved(firing_here, T0 + 180, 0.0, "judge", T0 + 250))
    other = dataclasses.replace(firing_here, name="other", key="other")
    # Given the judge remembers one incident it resolved in a window it still reads, and one firing that
    # another judge resolved since (the store has no open incident)
    memory.incidents = {resolved_here.name: (resolved_here, 4), other.name: (other, 2)}
    # When it reads the incidents again
    assert setup.look(T0 + 370) == LookOutcome(tables=1, heads=6)
    # Then it keeps the resolved one (its hot windows before it start nothing) and forgets the other
    assert memory.incidents == {resolved_here.name: (resolved_here, 4)}


def test_a_judges_first_look_reads_from_the_tables_latest_heads_not_its_clock() -> None:
    # Given heads an hour older than the clock (the stream an hour behind)
    setup = Setup([quiet_head(T0)], T0 + 3600)
    setup.look(T0 + 3600)
    # Then the first read starts SIBLING_WINDOWS before the latest window with heads
    assert setup.reader.reads == [T0 - SIBLING_WINDOWS * 60]


def test_a_look_reads_from_the_sibling_windows_further_back_for_a_working_shard_and_a_firing_incident() -> None:
    latest = T0 + 3600
    hot = HOT
    firing_ = incidents.confirmed(incidents.started(hot, "judge", T0 + 30))
    memory = TableMemory()
    assert memory.first_window(latest, 60) == latest - SIBLING_WINDOWS * 60
    # A shard still working on a window five back: read from the window before it
    memory.progress = {"a": ShardProgress(latest - 300, frozenset({latest - 360}), frozenset({latest - 300}))}
    assert memory.first_window(latest, 60) == latest - 360
    # one that finished it holds nothing
    memory.progress = {"a": ShardProgress(latest - 300, frozenset({latest - 300}), frozenset({latest - 300}))}
    assert memory.first_window(latest, 60) == latest - SIBLING_WINDOWS * 60
    # A firing incident hot seven windows back: from its last hot window; a resolved one holds nothing
    memory.incidents = {"f": (dataclasses.replace(firing_, last_hot_window=latest - 420), 1)}
    assert memory.first_window(latest, 60) == latest - 420
    memory.incidents = {"f": (dataclasses.replace(firing_, last_hot_window=latest - 420, status=Status.RESOLVED), 1)}
    assert memory.first_window(latest, 60) == latest - SIBLING_WINDOWS * 60
    # never more than MAX_BEHIND_WINDOWS back
    memory.incidents = {"f": (dataclasses.replace(firing_, last_hot_window=latest - 3600), 1)}
    assert memory.first_window(latest, 60) == latest - MAX_BEHIND_WINDOWS * 60 == latest - 600


def test_each_look_judges_every_window_from_its_first_kept_or_read(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, list[int]]] = []
    read = verdicts.read

    def spy(table: str, windows: Any, first_window: int, now: float, lag: float) -> verdicts.Look:
        seen.append((first_window, sorted(windows)))
        return read(table, windows, first_window, now, lag)

    monkeypatch.setattr(verdicts, "read", spy)
    looks = [T0 + 600 + 12 * n for n in range(4)]
    judged([traffic()] * len(looks), looks)
    # Every look, the kept windows (from the third on) and the read ones together: each window from its first
    assert [windows for first, windows in seen] == [list(range(max(first, T0), T0 + 300, 60)) for first, _w in seen]


def test_the_judge_reads_the_layouts_again_every_ten_minutes_and_registers_its_tables() -> None:
    # Given the registry knows tickets (raised to 8 buckets), and the judge is configured for orders too
    registry = Registry(Layout("tickets", 60, ((0, 1), (T0 - 600, 8))))
    setup = Setup([quiet_head(T0)], T0 + 70, registry=registry, tables=("orders", "tickets"))
    reads = []
    assert LAYOUT_READ_SECONDS == 600
    for at in (0, 599, 600):
        setup.look(T0 + 70 + at)
        reads.append(registry.reads)
    assert reads == [1, 1, 2]
    # Then it registered orders (once: it is known from the second read on), and read tickets' 8 buckets
    assert registry.saves == [(None, Layout("orders", 60))]
    assert setup.reader.buckets[1::2] == [8, 8, 8]


def test_a_table_only_consumers_registered_is_found_again_at_each_layout_read() -> None:
    registry = Registry()
    setup = Setup([quiet_head(T0)], T0 + 70, registry=registry, tables=())
    setup.look(T0 + 70)
    assert setup.reader.reads == []  # no table yet: read again at every look
    registry.held["tickets"] = Layout("tickets", 60)
    setup.look(T0 + 82)
    setup.look(T0 + 82 + 600)
    assert registry.reads == 3 and len(setup.reader.reads) == 2


def sized(window: int, shard: int, head_bytes: int) -> SegmentSnapshot:
    return dataclasses.replace(quiet_head(window, shard=f"s{shard:03d}"), head_bytes=head_bytes)


def test_a_flushs_heads_over_a_quarter_of_a_partition_raise_the_bucket_count(monkeypatch: pytest.MonkeyPatch) -> None:
    logged = Logged()
    monkeypatch.setattr(judge_module, "logger", logged)
    # Given 84 heads of the latest window taking 3 write units each (2,050 bytes with the item's own:
    # 252 units, over the 250 of a quarter of a partition), and small heads of the window before
    window = T0 + 600
    heads = [sized(window, n, 1538) for n in range(84)] + [sized(window - 60, n, 10) for n in range(3)]
    registry = Registry(Layout("tickets", 60))
    setup = Setup(heads, window + 20, registry=registry)
    assert setup.look(window + 20) == LookOutcome(tables=1, heads=87)
    # Then the count is raised to 2 from the window in force, and said in the log
    raised = Layout("tickets", 60, ((0, 1), (window, 2)))
    assert registry.saves == [(Layout("tickets", 60), raised)]
    assert ("info", "head buckets raised", {"table": "tickets", "buckets": 2}) in logged.lines
    # and the judge reads with it without reading the registry again
    setup.look(window + 32)
    assert registry.reads == 1 and setup.reader.buckets[-1] == 2


def test_a_flushs_heads_of_a_quarter_of_a_partition_keep_the_bucket_count() -> None:
    # Given 250 heads of one write unit each (512 bytes with the item's own: 1,024), exactly a quarter
    window = T0 + 600
    registry = Registry(Layout("tickets", 60))
    setup = Setup([sized(window, n, 512) for n in range(250)], window + 20, registry=registry)
    # Then the count stays (nothing saved), and the look fails nothing
    assert setup.look(window + 20) == LookOutcome(tables=1, heads=250)
    assert registry.saves == []


def test_a_raise_another_judge_beat_makes_the_next_look_read_the_layouts_again() -> None:
    window = T0 + 600
    registry = Registry(Layout("tickets", 60), accept=False)
    setup = Setup([sized(window, n, 1538) for n in range(84)], window + 20, registry=registry)
    setup.look(window + 20)
    setup.look(window + 32)
    assert len(registry.saves) == 2 and registry.reads == 2


def test_what_a_look_could_not_do_is_said_in_the_log_with_what_it_concerns(monkeypatch: pytest.MonkeyPatch) -> None:
    logged = Logged()
    monkeypatch.setattr(judge_module, "logger", logged)

    def no_lag(table: str) -> float:
        raise RuntimeError("lag reports throttled")

    class Broken(Registry):
        def layouts(self) -> list[Layout]:
            raise RuntimeError("registry throttled")

    class Failing(Bucketed):
        def heads_since(self, table: str, first_window: int, buckets: int) -> list[SegmentSnapshot]:
            raise RuntimeError("index throttled")

    setup = Setup([quiet_head(T0)], T0 + 70, registry=Broken(), lag=no_lag)
    setup.judge._heads = Failing([quiet_head(T0)])
    assert setup.look(T0 + 70) == LookOutcome(failed=1)
    assert logged.lines == [
        ("warning", "judge could not read the layouts; the known ones stand", {"error": "registry throttled"}),
        ("warning", "stream lag unknown; taken as none", {"table": "tickets", "error": "lag reports throttled"}),
        ("warning", "judge could not look at a table", {"table": "tickets", "error": "index throttled"}),
    ]
    # An unknown lag is taken as none
    assert setup.judge._stream_lag("tickets") == 0.0


def test_incidents_read_again_keep_the_higher_peak_the_judge_saw_and_had_not_written() -> None:
    hot = HOT
    stored = incidents.confirmed(incidents.started(hot, "judge", T0 + 30))
    higher = dataclasses.replace(stored, peak=1000.0, peak_window=T0 + 60)
    # The judge's higher peak of the same firing is kept, at the version read
    assert _with_peak(stored, 5, (higher, 3)) == (higher, 5)
    # not one of an earlier firing, nor a peak not higher (its window stays the stored one), nor none known
    assert _with_peak(stored, 5, (dataclasses.replace(higher, fired_window=T0 - 600), 3)) == (stored, 5)
    assert _with_peak(stored, 5, (dataclasses.replace(stored, peak_window=T0 + 60), 3)) == (stored, 5)
    assert _with_peak(stored, 5, None) == (stored, 5)


def test_a_proposal_hot_in_a_settled_window_is_one_notice_counted_in_the_look_and_never_an_alert() -> None:
    # Given a proposed index whose PENDING partition takes 1,000 WCU/s over two shards in window T0
    from hotkeys.detector.alerts.what_if import WhatIf, WhatIfNotices

    proposal = "by-status (proposed)"
    heads = [head(shard, T0, [("t1", 1, 1)], index={proposal: burst("PENDING", 500, 10, 30)}) for shard in ("a", "b")]
    reader, sent, incidents = Heads(heads), Sent(), Incidents()
    notices: list[WhatIf] = []
    now = [float(T0 + 30)]
    judge = Judge(
        SETTINGS,
        JudgePorts(reader, Layouts(), incidents, lambda: 0.0, lambda: now[0]),
        Notifier(SETTINGS, incidents, sent, "judge"),
        what_ifs=WhatIfNotices(lambda found: True, notices.append),
    )
    # When the judge looks before the window has settled, then after, then again
    outcomes = []
    for at in (T0 + 30, T0 + 60 + 200, T0 + 60 + 260):
        now[0] = at
        outcomes.append(judge.look().what_ifs)
    # Then one notice went out, at the first look that found the window settled, and the look counted it
    assert outcomes == [0, 1, 0]
    ((found),) = notices
    assert (found.key, found.proposal, found.wcu_per_second) == ("PENDING", proposal, 1000.0)
    # and no alert, no incident
    assert sent.alerts == [] and incidents.stored == {}
