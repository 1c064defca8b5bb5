"""The judge's verdicts on one look at a table (``alerts.verdicts``), and an incident's life
(``alerts.incidents``): pure functions of heads, incidents and a clock, at the edge of each rule.

The heads are built as consumers store them (a summary counted write by write, ``head_of`` of its
snapshot). The defaults: a 1,000 WCU/s partition, alert at 800 WCU/s, resolve under 600, 10 s buckets,
60 s windows, reminders every 900 s.
"""

from __future__ import annotations

import dataclasses

import pytest

from hotkeys.detector.alerts import incidents
from hotkeys.detector.alerts.incidents import Incident, Message, Pending, Status
from hotkeys.detector.alerts.rules import HotKey, Reason, incident_key
from hotkeys.detector.alerts.verdicts import (
    MARK_SECONDS,
    SETTLE_GRACE_SECONDS,
    Change,
    Look,
    Resend,
    ShardProgress,
    Start,
    decide,
    merge,
    name_of,
    read_heads,
    recent_rate,
)
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.snapshots import SegmentSnapshot, head_of
from hotkeys.detector.domain import items, summary
from hotkeys.detector.domain.items import ItemStats

T0 = 1_796_083_200
SETTINGS = Settings(stats_table_name="stats", share_min_wcu=10**9)
COUNTING = summary.Counting(200, 10)
OWNER = "judge-1"


def head(
    shard: str,
    window: int,
    writes: list[tuple[str, int, int]],
    *,
    final: bool = True,
    closed_early: bool = False,
    index: dict[str, list[tuple[str, int, int]]] | None = None,
) -> SegmentSnapshot:
    """A shard's head of ``window`` after counting (key, write units, second of the window) in order."""

    def counted(found: list[tuple[str, int, int]]) -> summary.Summary:
        part = summary.Summary()
        for key, wcu, second in found:
            part.count(key, wcu, window + second, COUNTING)
        return part

    own = counted(writes)
    last = max((window + second for _k, _w, second in writes), default=window)
    return head_of(
        SegmentSnapshot(
            table="tickets",
            window_start=window,
            window_seconds=60,
            shard_id=shard,
            origin="0",
            first_sequence="1",
            last_sequence="9",
            summary=own,
            ttl_deletes=0,
            first_event=window,
            last_event=last,
            alert_min_span_seconds=10,
            indexes={name: counted(found) for name, found in (index or {}).items()},
            final=final,
            closed_early=closed_early,
        )
    )


def burst(key: str, rate: int, start: int, seconds: int) -> list[tuple[str, int, int]]:
    """``rate`` write units a second for ``seconds`` seconds from second ``start``, as 100-unit writes."""
    return [(key, 100, second) for second in range(start, start + seconds) for _ in range(rate // 100)]


def look(heads: list[SegmentSnapshot], now: float, lag: float = 0.0, first: int = T0) -> Look:
    return read_heads("tickets", [h for h in heads if h.window_start >= first], first, now, lag)


def acted(found: list[Start | Change | Resend]) -> list[Start | Change | Resend]:
    """The verdicts that write something (a peak raised within a window already marked waits)."""
    return [verdict for verdict in found if not isinstance(verdict, Change) or verdict.writes]


def firing(key: str = "hot", **changes: object) -> Incident:
    """An incident of ``key`` that fired in window T0 at 850 WCU/s and was announced then."""
    hot = HotKey(
        "tickets", key, Reason.PARTITION_LIMIT, T0, 60, 10, 8500, 850.0, 1.0, T0 + 20, at_most_wcu_per_second=850.0
    )
    return dataclasses.replace(incidents.confirmed(incidents.started(hot, OWNER, T0 + 26)), **changes)  # type: ignore[arg-type]


# -- firing ------------------------------------------------------------------------------------------
def test_a_partition_hot_on_the_merged_figures_starts_an_incident() -> None:
    # 500 WCU/s on each of two shards: neither alone, both together at 1,000
    heads = [head("a", T0, burst("hot", 500, 10, 10)), head("b", T0, burst("hot", 500, 10, 10))]
    (verdict,) = decide(look(heads, T0 + 30), {}, SETTINGS, OWNER)
    assert isinstance(verdict, Start)
    assert (verdict.hot.key, verdict.hot.wcu_per_second, verdict.hot.at_most_wcu_per_second) == ("hot", 1000.0, 1000.0)
    # one shard alone is not hot
    assert decide(look(heads[:1], T0 + 30), {}, SETTINGS, OWNER) == []


def test_a_key_hot_in_a_window_an_incident_was_resolved_on_starts_nothing() -> None:
    heads = [head("a", T0, burst("hot", 900, 10, 10))]
    resolved = firing(status=Status.RESOLVED, resolved_window=T0)
    assert decide(look(heads, T0 + 30), {resolved.name: resolved}, SETTINGS, OWNER) == []
    # but hot in a later window, it starts a new one
    later = [head("a", T0 + 60, burst("hot", 900, 10, 10))]
    (verdict,) = decide(look(later, T0 + 90), {resolved.name: resolved}, SETTINGS, OWNER)
    assert isinstance(verdict, Start) and verdict.hot.window_start == T0 + 60


# -- life: marked hot, escalated, reminded -------------------------------------------------------------
def test_a_firing_incident_hot_in_later_windows_is_stored_once_per_mark_period() -> None:
    incident = firing()
    # Given the key hot again in the next window (the same MARK_SECONDS period as its firing window)
    heads = [head("a", T0 + 60, burst("hot", 850, 0, 10))]
    (verdict,) = decide(look(heads, T0 + 80, first=T0), {incident.name: incident}, SETTINGS, OWNER)
    # Then it is marked hot there, and kept by the judge until its next write
    assert isinstance(verdict, Change) and not verdict.writes
    assert (verdict.after.last_hot_window, verdict.after.pending) == (T0 + 60, None)
    # and hot in a window of the next period, that is written
    assert T0 % MARK_SECONDS == 0
    heads = [head("a", T0 + MARK_SECONDS, burst("hot", 850, 0, 10))]
    (verdict,) = decide(look(heads, T0 + MARK_SECONDS + 20, first=T0), {incident.name: incident}, SETTINGS, OWNER)
    assert isinstance(verdict, Change) and verdict.writes
    assert verdict.after.last_hot_window == T0 + MARK_SECONDS


def test_a_peak_raised_within_a_window_already_marked_is_not_written_on_its_own() -> None:
    incident = firing()
    heads = [head("a", T0, burst("hot", 1000, 10, 10))]  # 1,000: up from 850, under 1.25 x 850
    (verdict,) = decide(look(heads, T0 + 30), {incident.name: incident}, SETTINGS, OWNER)
    assert isinstance(verdict, Change) and not verdict.writes
    assert verdict.after.peak == 1000.0 and verdict.after.pending is None


@pytest.mark.parametrize(
    ("rate", "escalates"),
    [
        (1000, False),  # 1.18 x 850 and still 2 suffixes at 800 WCU/s each
        (1100, True),  # 1.29 x 850: a quarter more than the firing said
    ],
)
def test_an_update_goes_out_when_the_peak_grows_by_a_quarter(rate: int, escalates: bool) -> None:
    incident = firing()
    heads = [head("a", T0, burst("hot", rate, 10, 10))]
    (verdict,) = decide(look(heads, T0 + 30), {incident.name: incident}, SETTINGS, OWNER)
    assert isinstance(verdict, Change)
    owed = verdict.after.pending
    assert (owed is not None and owed.message is Message.ESCALATED) is escalates
    if escalates:
        assert verdict.after.sized_at == rate and verdict.after.suggested_shards(SETTINGS) == 2


def test_an_update_goes_out_when_the_suggested_shard_count_goes_up() -> None:
    # Sized at 1,550 (2 suffixes); a peak of 1,700 is only 10% more, but needs 3 suffixes of 800 WCU/s
    incident = firing(sized_at=1550.0, peak=1550.0)
    heads = [head("a", T0, burst("hot", 1700, 10, 10))]
    (verdict,) = decide(look(heads, T0 + 30), {incident.name: incident}, SETTINGS, OWNER)
    assert isinstance(verdict, Change) and verdict.after.pending is not None
    assert verdict.after.pending.message is Message.ESCALATED and verdict.after.suggested_shards(SETTINGS) == 3


def test_a_reminder_is_due_after_the_reminder_interval_while_it_stays_hot() -> None:
    incident = firing(last_hot_window=T0 + 840, peak=850.0)
    heads = [head("a", T0 + 900, burst("hot", 850, 0, 10))]
    not_yet = decide(look(heads, T0 + 26 + 899, first=T0 + 840), {incident.name: incident}, SETTINGS, OWNER)
    assert all(isinstance(v, Change) and v.after.pending is None for v in not_yet)
    (due,) = decide(look(heads, T0 + 26 + 900, first=T0 + 840), {incident.name: incident}, SETTINGS, OWNER)
    assert isinstance(due, Change) and due.after.pending is not None
    assert due.after.pending.message is Message.REMINDER and due.after.notified_at == T0 + 926


def test_a_reminder_quotes_the_keys_last_minute_or_says_it_is_quiet() -> None:
    # Hot at 900 WCU/s in seconds 0-9 of window T0 + 900; a reminder due at every look below
    incident = firing(last_hot_window=T0 + 900, peak=850.0)
    heads = [head("a", T0 + 900, [*burst("hot", 900, 0, 10), *burst("other", 100, 10, 50)])]

    def reminder(now: int, lag: float = 0.0) -> float:
        (due,) = decide(look(heads, now, lag, first=T0 + 900), {incident.name: incident}, SETTINGS, OWNER)
        assert isinstance(due, Change) and due.after.pending is not None
        assert due.after.pending.message is Message.REMINDER and due.hot is not None
        # (the last minute's rate is also the most it quotes: a quiet key never reads as possibly hot at 0-900)
        assert due.hot.at_most_wcu_per_second == due.hot.wcu_per_second
        return due.hot.wcu_per_second

    # Within a minute of its burst: its heaviest bucket there
    assert reminder(T0 + 900 + 59) == 900.0
    # A minute after its last write, while the window is still read: quiet (0), never the window's rate
    assert reminder(T0 + 900 + 75) == 0.0
    # The last minute (RECENT_SECONDS) is 60 s: a bucket begun exactly 60 s ago counts, one begun 61 s ago not
    assert (reminder(T0 + 900 + 60), reminder(T0 + 900 + 61)) == (900.0, 0.0)
    # of the event time the look can see: a stream 30 s behind has delivered the minute up to 30 s ago
    assert reminder(T0 + 900 + 75, lag=30.0) == 900.0


def test_a_reminders_rate_is_the_heaviest_bucket_summed_over_the_shards_and_windows_read() -> None:
    # Given a look at windows T0 + 840 (the key wrote nothing there) and T0 + 900, where it wrote 300 WCU/s
    # on each of two shards in seconds 0-9, then 500 WCU/s on one shard in seconds 10-19
    heads = [
        head("a", T0 + 840, [("other", 100, 0)]),
        head("a", T0 + 900, [*burst("hot", 300, 0, 10), *burst("hot", 500, 10, 10)]),
        head("b", T0 + 900, burst("hot", 300, 0, 10)),
    ]
    seen = look(heads, T0 + 900 + 30, first=T0 + 840)
    # Then its last minute's rate is its heaviest bucket over both shards: 600 WCU/s (not one shard's 500,
    # nor its lighter bucket's), found past the window without it
    assert recent_rate(seen, firing(), SETTINGS) == 600.0


def test_an_update_waits_until_the_key_wrote_a_whole_bucket_where_it_peaked() -> None:
    # Given a firing incident (850 WCU/s) hot at 900 WCU/s for a whole bucket in window T0 + 60 (a record at
    # its second 59 shows the bucket complete), then at 1,200 WCU/s in seconds 0-9 of window T0 + 120, its
    # latest record there: a quarter over what the firing said, or a burst's first seconds
    incident = firing()
    heads = [
        head("a", T0 + 60, [*burst("hot", 900, 0, 10), ("bg", 1, 59)]),
        head("a", T0 + 120, burst("hot", 1200, 0, 10)),
    ]

    def owed(now: int) -> Pending | None:
        (verdict,) = decide(look(heads, now, first=T0 + 60), {incident.name: incident}, SETTINGS, OWNER)
        assert isinstance(verdict, Change) and verdict.after.peak == 1200.0
        return verdict.after.pending

    # Then no update while nothing came after the peak's bucket for a bucket's length (10 s), however
    # complete the lower window before it is
    assert owed(T0 + 130) is None
    assert owed(T0 + 129 + 10) is None
    # and one once more than that passed with nothing after it (a burst that ended, or a table that stopped)
    update = owed(T0 + 129 + 11)
    assert update is not None and update.message is Message.ESCALATED


def test_no_reminder_for_a_key_hot_only_in_windows_further_back_than_the_last_two() -> None:
    # Given a key last hot in window T0+840, its resolution waiting (a shard behind holds the windows after)
    incident = firing(last_hot_window=T0 + 840, peak=850.0)
    heads = [head("a", T0 + 840, burst("hot", 850, 0, 10))]
    # Then while that window is the current one or the one before, a reminder is due; later it is not
    (due,) = decide(look(heads, T0 + 26 + 900, first=T0 + 840), {incident.name: incident}, SETTINGS, OWNER)
    assert isinstance(due, Change) and due.after.pending is not None
    late = decide(look(heads, T0 + 840 + 120, lag=600.0, first=T0 + 840), {incident.name: incident}, SETTINGS, OWNER)
    assert all(v.after.pending is None for v in late if isinstance(v, Change))


# -- resolution -----------------------------------------------------------------------------------------
def cool(window: int, shard: str = "a", **options: bool) -> SegmentSnapshot:
    return head(shard, window, [*burst("hot", 500, 0, 10), ("bg", 1, 59)], **options)


def test_an_incident_resolves_on_the_first_settled_window_it_stayed_under_the_resolve_level() -> None:
    incident = firing()
    heads = [head("a", T0, burst("hot", 900, 10, 10)), cool(T0 + 60), head("a", T0 + 120, [("bg", 1, 0)])]
    (verdict,) = decide(look(heads, T0 + 130), {incident.name: incident}, SETTINGS, OWNER)
    assert isinstance(verdict, Change) and verdict.after.status is Status.RESOLVED
    assert verdict.after.resolved_window == T0 + 60 and verdict.after.pending is not None
    assert verdict.after.resolved_level == 500.0


def test_a_window_hot_above_the_resolve_level_keeps_it_firing() -> None:
    # 700 WCU/s: under the alert rate, over the resolve level (600): the hysteresis
    incident = firing()
    heads = [head("a", T0 + 60, [*burst("hot", 700, 0, 10), ("bg", 1, 59)]), head("a", T0 + 120, [("bg", 1, 0)])]
    assert acted(decide(look(heads, T0 + 130), {incident.name: incident}, SETTINGS, OWNER)) == []


def test_a_window_a_carrier_has_not_finished_is_not_settled() -> None:
    incident = firing()
    heads = [head("a", T0, burst("hot", 900, 10, 10)), cool(T0 + 60, final=False)]
    assert acted(decide(look(heads, T0 + 130), {incident.name: incident}, SETTINGS, OWNER)) == []


def test_the_streams_lag_holds_every_window_it_may_still_deliver_records_of() -> None:
    # A shard the judge has not heard from (a split's child, behind): only the lag tells
    incident = firing()
    heads = [head("a", T0, burst("hot", 900, 10, 10)), cool(T0 + 60), head("a", T0 + 120, [("bg", 1, 0)])]
    # Records 10 s old still being delivered, 10 s after window 1 ended: window 1 may still get some
    assert acted(decide(look(heads, T0 + 130, lag=10), {incident.name: incident}, SETTINGS, OWNER)) == []
    (verdict,) = acted(decide(look(heads, T0 + 130, lag=9), {incident.name: incident}, SETTINGS, OWNER))
    assert isinstance(verdict, Change) and verdict.after.resolved_window == T0 + 60


def test_a_rollovers_parent_that_ended_holds_nothing_a_silent_carrier_holds_the_grace() -> None:
    incident = firing()
    # The parent carried the key in window 0 and wrote nothing since
    ended = [head("parent", T0, burst("hot", 900, 10, 10), closed_early=True), head("other", T0 + 60, [("x", 1, 59)])]
    silent = [head("parent", T0, burst("hot", 900, 10, 10)), head("other", T0 + 60, [("x", 1, 59)])]
    standing = {incident.name: incident}
    # Its shard ended (its last head came before its window's end): window 1 is settled at once
    (verdict,) = decide(look(ended, T0 + 125), standing, SETTINGS, OWNER)
    assert isinstance(verdict, Change) and verdict.after.resolved_window == T0 + 60
    # Silent but not ended (no records, or stuck): only once the grace (150 s, what CloudWatch takes to
    # show a stuck shard in the lag) has passed since the window's end
    assert SETTLE_GRACE_SECONDS == 150
    assert acted(decide(look(silent, T0 + 120 + SETTLE_GRACE_SECONDS - 1), standing, SETTINGS, OWNER)) == []
    (verdict,) = decide(look(silent, T0 + 120 + SETTLE_GRACE_SECONDS), standing, SETTINGS, OWNER)
    assert isinstance(verdict, Change) and verdict.after.resolved_window == T0 + 60


def test_a_table_that_stops_writing_resolves_on_an_empty_window() -> None:
    incident = firing()
    heads = [head("a", T0, burst("hot", 900, 10, 50))]  # hot to the window's end, then nothing at all
    assert (
        acted(decide(look(heads, T0 + 120 + SETTLE_GRACE_SECONDS - 1), {incident.name: incident}, SETTINGS, OWNER))
        == []
    )
    (verdict,) = decide(look(heads, T0 + 120 + SETTLE_GRACE_SECONDS), {incident.name: incident}, SETTINGS, OWNER)
    assert isinstance(verdict, Change) and verdict.after.resolved_window == T0 + 60
    assert verdict.after.resolved_level == 0.0


# -- shares ---------------------------------------------------------------------------------------------
SHARES = Settings(stats_table_name="stats", share_min_wcu=1000, share_threshold=0.2)


def test_a_share_is_judged_on_the_whole_tables_settled_window_only() -> None:
    # "k" is 60% of shard a's writes but 12% of the table's (shard b writes 2,000)
    part = [("k", 300, 0), ("x", 200, 1)]
    heads = [head("a", T0, part), head("b", T0, [("y", 2000, 0)], final=False)]
    # While b has not finished the window, no share is judged (a's part alone would say 60%)
    assert [v for v in decide(look(heads, T0 + 70), {}, SHARES, OWNER) if isinstance(v, Start)] == []
    # Finished: "y" (80%) is a heavy share, "k" (12%) is not
    done = [heads[0], head("b", T0, [("y", 2000, 0)])]
    started = [v.hot for v in decide(look(done, T0 + 70), {}, SHARES, OWNER) if isinstance(v, Start)]
    assert [(hot.key, hot.reason, hot.share) for hot in started] == [("y", Reason.SHARE, 0.8)]


# -- messages owed ---------------------------------------------------------------------------------------
def test_a_message_owed_is_resent_by_its_claimant_or_taken_over_once_old() -> None:
    owed = firing(pending=Pending(Message.FIRING, "shardId-1", T0 + 26))
    heads = [head("a", T0, burst("hot", 900, 10, 10))]
    standing = {owed.name: owed}
    # another's fresh claim: left to it (and no new firing: the incident stands)
    assert decide(look(heads, T0 + 30), standing, SETTINGS, OWNER) == []
    # its own claim, or one its claimant never confirmed within the takeover time: sent
    (mine,) = decide(
        look(heads, T0 + 30),
        {owed.name: dataclasses.replace(owed, pending=Pending(Message.FIRING, OWNER, T0))},
        SETTINGS,
        OWNER,
    )
    assert isinstance(mine, Resend)
    (taken,) = decide(look(heads, T0 + 26 + incidents.TAKEOVER_SECONDS), standing, SETTINGS, OWNER)
    assert isinstance(taken, Resend) and taken.incident.pending == owed.pending


def test_an_owed_resolution_holds_back_a_new_firing() -> None:
    owed = firing(status=Status.RESOLVED, resolved_window=T0, pending=Pending(Message.RESOLVED, "judge-2", T0 + 70))
    heads = [head("a", T0 + 60, burst("hot", 900, 10, 10))]
    assert decide(look(heads, T0 + 90), {owed.name: owed}, SETTINGS, OWNER) == []


# -- the incident's figures -----------------------------------------------------------------------------
def test_an_incidents_advice_and_duration() -> None:
    incident = firing(peak=2500.0, last_hot_window=T0 + 60)
    # sized on the larger of what its last message sized and its peak: 2,500 / 800 -> 4 suffixes
    assert incident.suggested_shards(SETTINGS) == 4
    # from the crossing (T0 + 20) to the end of its last hot window (T0 + 120)
    assert incident.lasted(60) == 100
    assert incident_key(Reason.PARTITION_LIMIT, "hot") == incident.name


# -- what a look is made of -------------------------------------------------------------------------------
def test_a_windows_heads_merge_into_the_tables_figures_and_each_indexs() -> None:
    stats = ItemStats(slots={7: 30}, wcu=30, bitmap=1)
    a = dataclasses.replace(
        head("a", T0, [("k", 30, 0)], index={"by-day": [("d", 5, 0)]}),
        items={"k": stats},
        has_sort_key=True,
        has_local_indexes=True,
    )
    b = head("b", T0, [("k", 20, 1), ("j", 10, 2)])
    table = merge("tickets", T0, [a, b], None)
    # The table's figures: both heads' keys, each head's listing, its items and its key schema
    assert (table.wcu, sorted(table.entries), table.items) == (60, ["j", "k"], {"k": items.merged([stats])})
    assert [(shard, sorted(listed)) for shard, listed in table.listed] == [("a", ["k"]), ("b", ["j", "k"])]
    assert (table.has_sort_key, table.has_local_indexes) == (True, True)
    assert table.carriers("j") == {"b"} and table.carriers("k") == {"a", "b"}
    # An index's: its own keys, no items, no key schema of the table's
    index = merge("tickets", T0, [a, b], "by-day")
    assert (index.index, index.wcu, sorted(index.entries), index.items) == ("by-day", 5, ["d"], {})
    assert (index.has_sort_key, index.has_local_indexes) == (False, False)
    # A table without a sort key or local indexes says so
    plain = merge("tickets", T0, [b], None)
    assert (plain.has_sort_key, plain.has_local_indexes) == (False, False)


def test_a_partitions_carriers_are_the_shards_listing_it_from_a_window_on() -> None:
    heads = [
        head("a", T0, [("k", 10, 0)], index={"by-day": [("d", 5, 0)]}),
        head("b", T0 + 60, [("k", 10, 0)]),
        head("c", T0 + 120, [("x", 10, 0)], index={"by-day": [("d", 5, 0)]}),
    ]
    seen = look(heads, T0 + 200)
    assert seen.carriers("k", None, T0) == {"a", "b"}
    assert seen.carriers("k", None, T0 + 60) == {"b"}
    assert seen.carriers("d", "by-day", T0) == {"a", "c"}
    assert seen.carriers("d", "by-day", T0 + 60) == {"c"}


def test_the_shards_near_a_window_are_those_with_heads_in_it_or_the_three_before() -> None:
    heads = [head(shard, T0 + 60 * n, [("x", 1, 0)]) for n, shard in enumerate(["four-back", "three-back", "b", "c"])]
    heads.append(head("now", T0 + 240, [("x", 1, 0)]))
    assert look(heads, T0 + 400).shards_near(T0 + 240, 60) == {"three-back", "b", "c", "now"}


def test_a_partitions_window_is_settled_by_its_carriers_whatever_other_shards_do() -> None:
    # Shard b, which never listed the key, is still working on the window; its carrier a finished it
    heads = [head("a", T0, [("k", 10, 0)]), head("b", T0, [("x", 10, 0)], final=False)]
    seen = look(heads, T0 + 70)
    assert seen.settled(T0, frozenset({"a"}), 60)
    assert not seen.settled(T0, frozenset(), 60)  # with no carrier, every shard near it stands for one


class Ordered(str):
    """A shard id met in a set in a fixed order (its hash), whatever the run's hash seed."""

    def __hash__(self) -> int:
        return ord(self[0])


def test_a_carrier_that_ended_does_not_excuse_the_carriers_after_it() -> None:
    ended, working = Ordered("a"), Ordered("b")
    progress = {
        ended: ShardProgress(T0, frozenset({T0}), frozenset({T0}), ended=True),
        working: ShardProgress(T0 + 60, frozenset(), frozenset({T0 + 60})),
    }
    seen = Look("tickets", {}, progress, T0, T0 + 200, 0.0)
    assert list(frozenset({ended, working})) == [ended, working]
    assert not seen.settled(T0 + 60, frozenset({ended, working}), 60)


def test_an_incident_hot_again_within_its_mark_period_is_not_written() -> None:
    # Marked in the second window of a period, hot again in its third: kept until the next write
    before = firing(last_hot_window=T0 + 60)
    assert not Change(before, dataclasses.replace(before, last_hot_window=T0 + 120)).writes
    assert Change(before, dataclasses.replace(before, last_hot_window=T0 + MARK_SECONDS)).writes


def test_a_verdict_names_its_incident() -> None:
    incident = firing()
    hot = HotKey(
        "tickets", "hot", Reason.PARTITION_LIMIT, T0, 60, 10, 8500, 850.0, 1.0, T0 + 20, at_most_wcu_per_second=850.0
    )
    assert name_of(Start(hot)) == name_of(Change(incident, incident)) == name_of(Resend(incident)) == incident.name


def test_every_incident_of_a_look_gets_its_verdict_whatever_the_one_before_it() -> None:
    keys = sorted(["hot", "warm", "cool"], key=lambda key: incident_key(Reason.PARTITION_LIMIT, key))
    first, second, third = keys
    # The first (by name) owes a message another claimed; the second resolved long ago; the third is hot
    owed = firing(first, pending=Pending(Message.FIRING, "shardId-1", T0 + 26))
    resolved = firing(second, status=Status.RESOLVED, resolved_window=T0 - 600)
    heads = [head("a", T0 + 60, [*burst(second, 900, 10, 10), *burst(third, 900, 10, 10)])]
    found = decide(look(heads, T0 + 90), {owed.name: owed, resolved.name: resolved}, SETTINGS, OWNER)
    assert sorted(v.hot.key for v in found if isinstance(v, Start)) == sorted([second, third])


def test_a_resolution_waits_for_the_keys_carriers_since_it_fired_only() -> None:
    # b listed the key before it fired (on a alone), and is still working on the window after the firing
    heads = [
        head("b", T0 - 60, [("hot", 10, 0)]),
        head("a", T0, burst("hot", 900, 10, 10)),
        head("b", T0, [("bg", 1, 0)]),
        cool(T0 + 60),
        head("b", T0 + 60, [("bg", 1, 0)], final=False),
    ]
    incident = firing()
    (verdict,) = decide(look(heads, T0 + 130, first=T0 - 60), {incident.name: incident}, SETTINGS, OWNER)
    # Then a partition's resolution waits for a alone, its one carrier since
    assert isinstance(verdict, Change) and verdict.after.resolved_window == T0 + 60


def test_a_proposal_is_never_an_incident_and_the_real_indexes_after_it_still_are() -> None:
    # Given a proposed index (named to come first) and a real GSI, both with a partition at 1,000 WCU/s
    hot = burst("PENDING", 1000, 10, 10)
    heads = [head("a", T0, [("t", 1, 1)], index={"a-proposal (proposed)": hot, "by-status": hot})]
    # Then only the real index's partition starts an incident
    found = decide(look(heads, T0 + 30), {}, SETTINGS, OWNER)
    assert [(v.hot.index, v.hot.key) for v in found if isinstance(v, Start)] == [("by-status", "PENDING")]
    assert len(found) == 1


def test_a_share_incident_lasts_whole_windows_and_carries_its_rate() -> None:
    # A share is of a whole window: the incident starts with its first hot window, not at its last record
    hot = HotKey("tickets", "k", Reason.SHARE, T0, 60, 10, 48_600, 810.0, 0.81, T0 + 59, at_most_wcu_per_second=810.0)
    incident = incidents.started(hot, OWNER, T0 + 70)
    assert incident.lasted(60) == 60
    # and it keeps the highest rate its key reached, which sizes its advice like a hot key's
    later = incidents.still_hot(incident, dataclasses.replace(hot, window_start=T0 + 60, wcu_per_second=1700.0))
    assert (later.highest_rate, later.suggested_shards(SETTINGS), later.lasted(60)) == (1700.0, 3, 120)
