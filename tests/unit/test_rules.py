"""The alert rules on a window's figures: when a partition is hot, when it has cooled down.

Each test folds stream changes into a segment as the pipeline does (``Segment.apply``) and asks the
rules about its table's view (``Segment.views``): a shard's own figures, as its first alarm reads them;
or about several shards' segments merged as the judge merges their heads (``verdicts.merge``). Each
case sits at the edge of its rule: a rate or share exactly at the threshold fires, one write unit less
does not. The defaults: 1,000 WCU/s per partition, alert at 0.8 (800 WCU/s), hysteresis 0.2 (a firing
key resolves below 600 WCU/s), a 10 s minimum span, a 60 s window, share 0.1 of a table's window once
the table wrote 6,000 units.
"""

from __future__ import annotations

import dataclasses
import math

from hotkeys.detector.alerts.rules import (
    Figures,
    HotKey,
    Reason,
    cooled,
    incident_key,
    level,
    partition_limit_hot,
    resolve_level,
    share_hot,
)
from hotkeys.detector.alerts.verdicts import Merged, merge
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.snapshots import head_of, snapshot_of
from hotkeys.detector.consumer.state import Segment, View
from hotkeys.detector.domain.rate import Rate, rate_of, shown
from hotkeys.detector.domain.records import Change, ChangeKind
from hotkeys.detector.domain.summary import Counting, Entry, Summary

T0 = 1_796_083_200  # a window start (aligned to 60 s)
SETTINGS = Settings(stats_table_name="stats")
ITEM_WCU = 100  # one write of a 100 KB item


def writes(key: str, wcu_per_second: int, start: int, seconds: int) -> list[tuple[str, int, int]]:
    """(key, write units, second of the window) of steady writes: 100-unit items, then the rest."""
    out = []
    for second in range(start, start + seconds):
        whole, rest = divmod(wcu_per_second, ITEM_WCU)
        out += [(key, ITEM_WCU, second)] * whole + ([(key, rest, second)] if rest else [])
    return out


def segment_of(
    changes: list[tuple[str, int, int]], table: str = "orders", first: int = 1, capacity: int = 200
) -> Segment:
    """A shard's segment of the window at T0 after folding ``changes`` in time order."""
    segment = Segment(table, T0, str(first))
    counting = Counting(capacity, SETTINGS.alert_min_span_seconds)
    ordered = sorted(changes, key=lambda change: change[2])
    for offset, (key, wcu, second) in enumerate(ordered):
        change = Change(table, key, T0 + second, first + offset, wcu, ChangeKind.WRITE)
        segment.apply(change, counting)
    return segment


def tallied(changes: list[tuple[str, int, int]], table: str = "orders", first: int = 1, capacity: int = 200) -> View:
    """The segment's table view, as the shard's first alarm reads it."""
    (own,) = segment_of(changes, table, first, capacity).views()  # no index counted: the table's view only
    return own


def merged(*parts: list[tuple[str, int, int]] | tuple[list[tuple[str, int, int]], int]) -> Merged:
    """Several shards' segments of one window (each its changes, or its changes and a summary capacity),
    merged as the judge merges their heads."""
    heads = []
    for number, part in enumerate(parts):
        changes, capacity = part if isinstance(part, tuple) else (part, 200)
        segment = segment_of(changes, first=1 + 10_000 * number, capacity=capacity)
        # Stored as a shard stores it (the default capacity: a summary of capacity 1 keeps its two keys)
        snapshot = snapshot_of(segment, f"shardId-{number}", 60, Counting(200, 10))
        heads.append(head_of(snapshot))
    return merge("orders", T0, heads, None)


def hot_keys(figures: Figures, settings: Settings = SETTINGS) -> dict[str, HotKey]:
    return {hot.key: hot for hot in partition_limit_hot(figures, settings)}


# Partition limit


def test_every_hot_key_is_found_whatever_the_keys_before_it() -> None:
    # Given cold keys written first, then two hot ones (the summary keeps keys in the order they came)
    changes = writes("cold-1", 5, 0, 10) + writes("cold-2", 5, 0, 10) + writes("hot-1", 900, 0, 10)
    changes += writes("hot-2", 850, 0, 10)
    # Then both hot keys fire (the search goes on past a cold key, and past a hot one)
    assert set(hot_keys(tallied(changes))) == {"hot-1", "hot-2"}


def test_a_key_at_the_alert_rate_over_the_minimum_span_fires_with_its_figures() -> None:
    # Given a key writing 800 WCU/s for 10 seconds (80 writes), the minimum span
    segment = tallied(writes("hot", 800, 0, 10))
    # Then it is hot, at exactly the alert rate
    (hot,) = partition_limit_hot(segment, SETTINGS)
    assert hot == HotKey(
        table="orders",
        key="hot",
        reason=Reason.PARTITION_LIMIT,
        window_start=T0,
        window_seconds=60,
        writes=80,
        wcu=8000,
        wcu_per_second=800.0,
        share=1.0,
        event_time=T0 + 9,
        at_most_wcu_per_second=800.0,
        measured=False,  # its latest second may still grow: no later record was seen
        index=None,
    )


def test_one_write_unit_below_the_alert_rate_is_not_hot() -> None:
    changes = writes("warm", 800, 0, 10)
    changes[-1] = ("warm", ITEM_WCU - 1, 9)
    assert hot_keys(tallied(changes)) == {}


def test_the_threshold_is_the_chosen_fraction_of_the_partition_limit() -> None:
    # 500 WCU/s is hot at 0.5 of 1,000, and of 0.25 of 2,000, not at the default 0.8
    segment = tallied(writes("half", 500, 0, 10))
    assert hot_keys(segment) == {}
    assert set(hot_keys(segment, Settings(stats_table_name="s", alert_threshold=0.5, alert_hysteresis=0.1))) == {"half"}
    doubled = Settings(stats_table_name="s", partition_wcu_limit=2000, alert_threshold=0.25, alert_hysteresis=0.1)
    assert set(hot_keys(segment, doubled)) == {"half"}


def test_a_burst_is_measured_over_its_own_active_span() -> None:
    # 800 WCU/s from second 5 to 14: no 10 s bucket holds more than half of it, but over its active span
    # (its first write to its latest) it writes at the alert rate
    burst = writes("burst", 800, 5, 10)
    assert hot_keys(tallied(burst))["burst"].wcu_per_second == 800.0
    # A record of another key at second 59 does not stretch the key's span (it is the key's own)
    assert hot_keys(tallied([*burst, ("other", 1, 59)]))["burst"].wcu_per_second == 800.0
    # Its own write at second 59 does: 8,001 over 55 s, and no bucket of 4,000 reaches it
    assert hot_keys(tallied([*burst, ("burst", 1, 59)])) == {}


def test_a_burst_after_a_quiet_start_is_seen_in_its_heaviest_bucket() -> None:
    # 1 WCU/s for 50 s, then 800 WCU/s in the window's last bucket: 8,050 over 60 s is 134 WCU/s, but
    # the bucket [50, 60) holds 8,000 units
    changes = [("late", 1, second) for second in range(50)] + writes("late", 800, 50, 10)
    (hot,) = partition_limit_hot(tallied(changes), SETTINGS)
    assert (hot.wcu, hot.wcu_per_second) == (8050, 800.0)
    # One unit less in that bucket, and it is not hot
    changes[-1] = ("late", ITEM_WCU - 1, 59)
    assert hot_keys(tallied(changes)) == {}


def test_one_large_item_is_not_a_sustained_rate() -> None:
    # Alert at 50 WCU/s: one 400 KB write is 400 units in one second, 40 WCU/s over the minimum span
    settings = Settings(stats_table_name="s", alert_threshold=0.05, alert_hysteresis=0.01)
    assert hot_keys(tallied([("big", 400, 59)]), settings) == {}
    # Five hundred units in one second reach it (50 WCU/s over 10 s)
    (hot,) = partition_limit_hot(tallied([("big", 400, 59), ("big", 100, 59)]), settings)
    assert (hot.wcu, hot.wcu_per_second, hot.writes) == (500, 50.0, 2)


def test_the_minimum_span_is_the_chosen_one() -> None:
    # 800 WCU/s for 10 s: hot over a 10 s span, not over 20 s (8,000 units / 20 s = 400 WCU/s)
    segment = tallied(writes("hot", 800, 0, 10))
    longer = Settings(stats_table_name="s", alert_min_span_seconds=20)
    assert set(hot_keys(segment)) == {"hot"}
    assert hot_keys(segment, longer) == {}


def test_a_partitions_writes_on_two_shards_add_up() -> None:
    # 500 WCU/s on each of two shards (an index partition, or a key across a rollover): 1,000 together
    here = writes("shared", 500, 0, 10)
    there = [*writes("shared", 500, 0, 10), ("elsewhere-only", 5, 3)]
    assert hot_keys(tallied(here)) == {} and hot_keys(tallied(there)) == {}
    hot = hot_keys(merged(here, there))["shared"]
    assert (hot.wcu, hot.writes, hot.wcu_per_second, hot.at_most_wcu_per_second) == (10_000, 100, 1000.0, 1000.0)
    assert set(hot_keys(merged(here, there))) == {"shared"}


def test_two_shards_bursts_in_the_same_bucket_add_up() -> None:
    # Each shard: 1 WCU/s for 50 s, then 400 WCU/s in the last bucket. Over the window neither, nor both
    # together (8,100 / 60 s), reach the alert rate; the shared bucket holds 8,000 units
    part = [("burst", 1, second) for second in range(50)] + writes("burst", 400, 50, 10)
    hot = hot_keys(merged(part, part))["burst"]
    assert (hot.wcu, hot.wcu_per_second) == (8100, 800.0)
    # Bursts in different buckets do not add: 400 WCU/s at most
    early = [("burst", 1, second) for second in range(10, 60)] + writes("burst", 400, 0, 10)
    assert hot_keys(merged(part, early)) == {}


def test_a_key_elsewhere_that_started_earlier_is_measured_from_its_first_write() -> None:
    # Here 800 WCU/s in seconds 50-59; on the other shard the key wrote 1 unit at second 0 and the
    # other shard's latest record is at second 30
    hot = hot_keys(merged(writes("k", 800, 50, 10), [("k", 1, 0), ("x", 1, 30)]))["k"]
    # 8,001 units from second 0 to 59: 133 WCU/s; the burst bucket [50, 60) has 8,000: 800 WCU/s
    assert (hot.wcu, hot.wcu_per_second, hot.event_time) == (8001, 800.0, T0 + 59)


def test_a_pruned_summarys_bound_is_added_so_pruning_never_hides_a_hot_key() -> None:
    # A summary of capacity 1 (two keys tracked): admitting a third key prunes the lighter one, and the
    # heavy key's counter loses that weight (100 units), which the summary's bound gives back. 800 WCU/s
    # over seconds 5-14: its active span, not a bucket, makes it possibly hot (its counted 7,900 units
    # are 790 WCU/s; only with the bound does it reach the alert rate)
    changes = [*writes("hot", 800, 5, 10), ("x", 100, 14), ("y", 100, 14)]
    segment = tallied(changes, capacity=1)
    assert segment.pruned == 100
    hot = hot_keys(segment)["hot"]
    assert (hot.wcu, hot.wcu_per_second, hot.at_most_wcu_per_second) == (8000, 790.0, 800.0)


def test_the_bound_counts_in_the_burst_bucket_too() -> None:
    # 7,900 units in one bucket, then 25 over the quiet rest of the window, its counter cut by 100 by a
    # prune: its upper bound in that bucket is 8,000 units, the alert rate (its window's is 7,925)
    changes = [("hot", 1, s) for s in range(10, 60, 2)] + writes("hot", 790, 0, 10) + [("x", 100, 59), ("y", 100, 59)]
    segment = tallied(changes, capacity=1)
    assert segment.pruned == 100
    assert hot_keys(segment)["hot"].at_most_wcu_per_second == 800.0


def test_the_active_span_counts_its_first_and_last_second() -> None:
    # 8,800 units from second 5 to second 15 (11 seconds, two buckets of at most 5,600): 800 WCU/s
    assert hot_keys(tallied(writes("k", 800, 5, 11)))["k"].wcu_per_second == 800.0
    less = writes("k", 800, 5, 11)
    less[-1] = ("k", ITEM_WCU - 1, 15)
    assert hot_keys(tallied(less)) == {}
    # The rate is shown to a tenth, rounded down: 8,801 / 11 s is 800.09
    more = [*writes("k", 800, 5, 11), ("k", 1, 15)]
    assert hot_keys(tallied(more))["k"].wcu_per_second == 800.0


def test_a_later_record_elsewhere_stretches_the_keys_span() -> None:
    # Here 800 WCU/s in seconds 5-14; the other shard wrote the key at second 5 and read a record of
    # another key at second 59: the key's span is its own, seconds 5-14 (8,001 units: 800.1 WCU/s)
    assert hot_keys(merged(writes("k", 800, 5, 10), [("k", 1, 5), ("x", 1, 59)]))["k"].wcu_per_second == 800.1
    # and its own write there at second 59 stretches it to 55 s
    assert hot_keys(merged(writes("k", 800, 5, 10), [("k", 1, 5), ("k", 1, 59)])) == {}


def test_a_bound_on_another_shard_is_added_to_the_keys_figures() -> None:
    # 800 WCU/s over seconds 5-14, half on each shard; the other shard's summary then cut the key by
    # 100. No bucket holds half the alert rate: the key is hot over its span only with that bound
    there = [*writes("k", 400, 5, 10), ("x", 100, 14), ("y", 100, 14)]
    figures = merged(writes("k", 400, 5, 10), (there, 1))
    assert figures.bound("k") == 100
    hot = hot_keys(figures)["k"]
    assert (hot.wcu, hot.wcu_per_second, hot.at_most_wcu_per_second) == (8000, 790.0, 800.0)
    # and to its share: its upper bound of the window's units
    anything = Settings(stats_table_name="s", share_min_wcu=0)
    assert level(figures, anything, "k", Reason.SHARE) == (7900 + 100) / figures.wcu


def test_a_bound_is_added_only_for_the_shards_that_list_the_key() -> None:
    # A shard whose head leaves a key out holds at most its own bound of it, which is not added: at
    # hundreds of shards the bounds would make every key hot (docs/decisions.md §49)
    pruned = [("x", 300, 0), ("y", 200, 1), ("z", 200, 2)]
    figures = merged(writes("k", 400, 5, 10), (pruned, 1))
    assert figures.bound("k") == 0 and figures.bound("x") == 200
    assert hot_keys(figures) == {}


def test_two_shards_steady_halves_add_up() -> None:
    # 400 WCU/s on each shard over seconds 5-14: no bucket of either reaches half the alert rate
    assert hot_keys(merged(writes("k", 400, 5, 10), writes("k", 400, 5, 10)))["k"].wcu_per_second == 800.0


def test_a_pruned_keys_burst_bucket_is_judged_with_its_parts_elsewhere() -> None:
    # Here 7,920 units in one bucket, the counter then cut by 100; elsewhere 50 units in a later bucket.
    # Its window (7,970 with the bound) is under the alert rate's 8,000; its bucket (8,020) is not
    here = [*writes("k", 792, 0, 10), ("x", 100, 9), ("y", 100, 9)]
    assert hot_keys(merged((here, 1), [("k", 50, 30)]))["k"].at_most_wcu_per_second == 802.0


def test_a_keys_rate_is_defined_in_one_place() -> None:
    # domain.rate.rate_of: the heaviest bucket or the average from the key's first write to its latest (at
    # least the span), counted; at_most adds the bound to both
    entry = Entry(3, 900, T0 + 5, 600, [T0, T0 + 10], [600, 300], last_seen=T0 + 14)
    rate = rate_of(entry, 0, T0 + 59, 10)
    assert (rate.wcu_per_second, rate.at_most, rate.measured_seconds) == (90.0, 90.0, 55)
    # A burst across a bucket boundary (T0+5..T0+14) is measured over its own 10 s, not halved by the
    # boundary nor diluted by the rest of the window the table kept writing in
    assert rate_of(dataclasses.replace(entry, peak=450, units=[450, 450]), 0, T0 + 59, 10).wcu_per_second == 90.0
    # Unknown latest second (a snapshot written before it was kept): the end of its latest bucket
    assert rate_of(dataclasses.replace(entry, last_seen=None), 0, T0 + 59, 10).wcu_per_second == 900 / 15
    # The bound is the uncertainty, apart: at most (600 + 100) / 10
    assert rate_of(entry, 100, T0 + 59, 10) == Rate(90.0, 100.0, 55)
    # A burst's first seconds: under a span measured
    assert rate_of(entry, 0, T0 + 9, 10).measured_seconds == 5


# Share of the table


def share_settings(**overrides: float) -> Settings:
    values: dict[str, float] = {"share_min_wcu": 1000, "share_threshold": 0.25}
    values.update(overrides)
    return Settings(stats_table_name="s", **values)  # type: ignore[arg-type]


def test_a_key_with_the_threshold_share_of_the_tables_window_is_hot() -> None:
    # 250 of 1,000 units: exactly a quarter
    segment = tallied([("big", 250, 0), ("a", 200, 1), ("b", 200, 2), ("c", 200, 3), ("d", 150, 4)])
    (hot,) = share_hot(segment, share_settings())
    assert (hot.key, hot.reason, hot.share, hot.wcu, hot.writes) == ("big", Reason.SHARE, 0.25, 250, 1)
    assert hot.wcu_per_second == 25.0  # 250 units over the 10 s minimum span
    assert hot.event_time == T0 + 4 and hot.window_start == T0
    # At a fifth, four keys are hot
    assert {hot.key for hot in share_hot(segment, share_settings(share_threshold=0.2))} == {"big", "a", "b", "c"}


def test_one_unit_below_the_share_is_not_hot() -> None:
    segment = tallied([("big", 249, 0), ("a", 200, 1), ("b", 200, 2), ("c", 200, 3), ("d", 151, 4)])
    assert share_hot(segment, share_settings()) == []


def test_a_table_below_the_share_minimum_has_no_share_to_speak_of() -> None:
    assert share_hot(tallied([("only", 999, 0)]), share_settings()) == []
    (hot,) = share_hot(tallied([("only", 1000, 0)]), share_settings())
    assert hot.share == 1.0


def test_the_share_counts_the_tables_writes_on_other_shards() -> None:
    # The key is all of 600 units here; with 600 more elsewhere (none of them its own) it is half
    figures = merged([("k", 600, 0)], [("other", 600, 0)])
    (hot,) = [hot for hot in share_hot(figures, share_settings(share_threshold=0.5)) if hot.key == "k"]
    assert (hot.share, hot.wcu) == (0.5, 600)
    assert share_hot(figures, share_settings(share_threshold=0.51)) == []
    # Its own writes elsewhere add to its part: 600 + 300 of 1,200
    mine = merged([("k", 600, 0)], [("k", 300, 0), ("other", 300, 0)])
    (hot,) = share_hot(mine, share_settings(share_threshold=0.75))
    assert (hot.share, hot.wcu, hot.writes) == (0.75, 900, 2)


def test_a_bound_elsewhere_counts_in_the_keys_share() -> None:
    # Elsewhere the key's counter was cut by 100 (300 -> 200): 150 here + 200 + 100 of 1,000 is 0.45
    figures = merged([("k", 150, 0), ("z", 350, 1)], ([("k", 300, 0), ("x", 100, 1), ("y", 100, 2)], 1))
    hot = {hot.key: hot for hot in share_hot(figures, share_settings(share_threshold=0.45))}["k"]
    assert (hot.key, hot.share, hot.wcu) == ("k", 0.45, 450)


def test_an_index_has_no_share_of_the_table() -> None:
    table = tallied([("k", 1000, 0)])
    index = View(table.table, "by-status", T0, table.last_event, table.origin, Summary(table.entries, 0, 1, 1000))
    assert share_hot(table, share_settings())
    assert share_hot(index, share_settings()) == []


def test_a_share_is_rounded_to_four_places() -> None:
    hot = share_hot(tallied([("k", 1000, 0), ("o", 2000, 1)]), share_settings(share_threshold=0.3))
    assert {h.key: h.share for h in hot} == {"k": 0.3333, "o": 0.6667}


def test_without_a_share_minimum_any_table_that_wrote_has_shares() -> None:
    # One unit is a table's whole window
    (hot,) = share_hot(tallied([("k", 1, 0)]), share_settings(share_min_wcu=0, share_threshold=1.0))
    assert (hot.key, hot.share) == ("k", 1.0)


# Resolution


def test_a_firing_key_resolves_below_the_threshold_minus_the_hysteresis() -> None:
    # 0.8 - 0.2 of 1,000 WCU/s: 600 WCU/s; of the share threshold 0.1: 0.075
    assert math.isclose(resolve_level(SETTINGS, Reason.PARTITION_LIMIT), 600.0)
    assert math.isclose(resolve_level(SETTINGS, Reason.SHARE), 0.075)
    narrow = Settings(stats_table_name="s", alert_threshold=0.5, alert_hysteresis=0.1, share_threshold=0.2)
    assert math.isclose(resolve_level(narrow, Reason.PARTITION_LIMIT), 400.0)
    assert math.isclose(resolve_level(narrow, Reason.SHARE), 0.16)


def test_a_keys_level_is_its_alert_rate_or_its_share_over_the_windows_figures() -> None:
    figures = merged([*writes("k", 600, 0, 10), ("o", 100, 59)])
    # 6,000 units: its heaviest bucket holds all of them, 600 WCU/s
    assert level(figures, SETTINGS, "k", Reason.PARTITION_LIMIT) == 600.0
    assert level(figures, SETTINGS, "absent", Reason.PARTITION_LIMIT) == 0.0
    assert cooled(figures, SETTINGS, "absent", Reason.PARTITION_LIMIT)
    # Cooled under the resolve level (600 WCU/s): at 599.9, not at 600.1
    assert cooled(
        merged([*writes("k", 600, 0, 9), ("k", 5999 - 5400, 9), ("o", 1, 59)]), SETTINGS, "k", Reason.PARTITION_LIMIT
    )
    assert not cooled(
        merged([*writes("k", 600, 0, 10), ("k", 1, 9), ("o", 1, 59)]), SETTINGS, "k", Reason.PARTITION_LIMIT
    )
    # and exactly at it, not cooled (the level is the settings' decimal figure, not its binary neighbour)
    assert resolve_level(SETTINGS, Reason.PARTITION_LIMIT) == 600.0 and resolve_level(SETTINGS, Reason.SHARE) == 0.075
    assert not cooled(merged([*writes("k", 600, 0, 10), ("o", 1, 59)]), SETTINGS, "k", Reason.PARTITION_LIMIT)
    # and a small level is kept: a share threshold of 0.001 at a hysteresis leaving 0.0002 of it
    tiny = Settings(stats_table_name="s", share_threshold=0.001, alert_threshold=0.5, alert_hysteresis=0.4999)
    assert math.isclose(resolve_level(tiny, Reason.SHARE), 2e-7)
    # Its share of the table's 6,100 units (the default minimum is 6,000)
    assert math.isclose(level(figures, SETTINGS, "k", Reason.SHARE), 6000 / 6100)
    assert level(merged([("k", 5999, 0)]), SETTINGS, "k", Reason.SHARE) == 0.0
    assert level(merged([("k", 3000, 0), ("o", 3000, 1)]), SETTINGS, "k", Reason.SHARE) == 0.5
    # Without a share minimum: a one-unit window is all its key's; an empty one has no share
    anything = Settings(stats_table_name="s", share_min_wcu=0)
    assert level(merged([("k", 1, 0)]), anything, "k", Reason.SHARE) == 1.0
    assert level(merge("orders", T0, [], None), anything, "k", Reason.SHARE) == 0.0


def test_a_level_counts_the_bound_of_the_heads_that_list_the_key() -> None:
    figures = merged(([("a", 600, 0), ("b", 500, 1), ("c", 500, 2)], 1))
    # a's counter lost 500 to the prune; its bound gives them back: 600 units. Its bucket (600, which a
    # prune does not cut) plus the bound: 110 WCU/s, the rule's upper bound (never below the truth)
    assert figures.entries["a"].wcu + figures.bound("a") == 600
    assert level(figures, SETTINGS, "a", Reason.PARTITION_LIMIT) == 110.0


# Names and advice


def test_an_incidents_name_is_its_reason_and_a_digest_of_its_key() -> None:
    name = incident_key(Reason.PARTITION_LIMIT, "customer#1")
    reason, digest = name.split("#")
    assert reason == Reason.PARTITION_LIMIT and len(digest) == 32 and int(digest, 16) >= 0
    assert (
        incident_key(Reason.PARTITION_LIMIT, "customer#1") == name != incident_key(Reason.PARTITION_LIMIT, "customer#2")
    )
    assert incident_key(Reason.SHARE, "customer#1") == f"{Reason.SHARE}#{digest}"
    assert incident_key(Reason.PARTITION_LIMIT, "customer#1", "by-status") == f"index#by-status#{name}"
    # The longest key (2,048 bytes of binary as base64) names an incident well within a sort key's 1,024 bytes
    assert len(incident_key(Reason.PARTITION_LIMIT, "A" * 2732, "i" * 255).encode()) <= 310


# What an incident follows


def test_an_incident_follows_a_partitions_rate_and_a_shares_share() -> None:
    hot = HotKey("orders", "k", Reason.PARTITION_LIMIT, T0, 60, 10, 9000, 900.0, 0.25, T0 + 9, 950.0)
    assert hot.level == 900.0
    assert dataclasses.replace(hot, reason=Reason.SHARE).level == 0.25


def test_the_rate_a_hot_key_quotes_is_rounded_to_a_tenth() -> None:
    # A 3 s span: 2,400 units in one bucket are 800 WCU/s; 2,401 are 800.333... quoted as 800.3
    span = Settings(stats_table_name="s", alert_min_span_seconds=3)
    segment = Segment("orders", T0, "1")
    counting = Counting(200, 3)
    for offset, (key, wcu, second) in enumerate([*writes("k", 800, 0, 3), ("k", 1, 2)]):
        segment.apply(Change("orders", key, T0 + second, 1 + offset, wcu, ChangeKind.WRITE), counting)
    (own,) = segment.views()
    (hot,) = partition_limit_hot(own, span)
    assert hot.wcu_per_second == 800.3
    # and rounded down: a rate just under the threshold never shows as reaching it
    assert (shown(799.97), shown(800.0), shown(800.04), shown(0.1 + 0.2)) == (799.9, 800.0, 800.0, 0.3)


def test_an_index_partitions_hot_key_names_its_index() -> None:
    # Given the figures of the GSI "by-status" in which a key writes 900 WCU/s for 10 seconds
    figures = dataclasses.replace(merged(writes("shipped", 900, 0, 10)), index="by-status")
    # Then its hot key (and so its incident and alert) is the index's, not the table's
    (hot,) = partition_limit_hot(figures, SETTINGS)
    assert (hot.index, hot.incident_key) == ("by-status", incident_key(Reason.PARTITION_LIMIT, "shipped", "by-status"))
