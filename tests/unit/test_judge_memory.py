"""What a judge container remembers between looks: a window settled at two looks in a row is kept as
merged and not read again; the verdicts are the ones a judge reading everything reaches."""

from __future__ import annotations

from typing import Any

from hotkeys.detector.alerts.incidents import Incident
from hotkeys.detector.alerts.judge import Judge
from hotkeys.detector.alerts.notifier import Notifier
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
    judge = Judge(SETTINGS, reader, Layouts(), incidents, notifier, lambda: 0.0, lambda: now[0])
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
        reader,
        Layouts(),
        incidents,
        Notifier(SETTINGS, incidents, sent_by_judge, "judge"),
        lambda: 0.0,
        lambda: now[0],
    )
    judge.look()
    # and a writer it does not know of (a shard's first alarm) starting the incident at 900 WCU/s
    first = Judge(
        SETTINGS,
        Heads([head("a", T0, burst("event#42", 900, 10, 10), final=False)]),
        Layouts(),
        incidents,
        Notifier(SETTINGS, incidents, sent_first, "shard-a"),
        lambda: 0.0,
        lambda: T0 + 21.0,
    )
    first.look()
    assert [(a.status, a.wcu_per_second) for a in sent_first.alerts] == [("firing", 900)]
    # When the judge's next look sees the key at 1,500 WCU/s
    now[0], reader.heads = T0 + 30.0, [head("a", T0, burst("event#42", 1500, 10, 10), final=False)]
    judge.look()
    # Then the update goes out in that look, not the next one
    assert [(a.status, a.peak_wcu_per_second) for a in sent_by_judge.alerts] == [("escalated", 1500)]
