"""A key's figures as a person reads them (``domain.rate``): rounded down everywhere, so that a figure reaches
a threshold exactly when the rate does (docs/decisions.md §79)."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from hotkeys.detector.config import Settings
from hotkeys.detector.domain.rate import (
    Rate,
    alert_rate,
    is_hot,
    is_possibly_hot,
    percent_of_limit,
    rate_of,
    shown,
    suggested_shards,
    whole,
)
from hotkeys.detector.domain.summary import Entry

SETTINGS = Settings(stats_table_name="stats")
T0 = 1_796_083_200  # a window start (aligned to 60 s)


def test_a_key_is_hot_from_the_alert_thresholds_share_of_the_partition_limit() -> None:
    # The default threshold is 0.8 of 1,000 WCU/s: 800 WCU/s is hot, a hair under is not
    assert (is_hot(800.0, SETTINGS), is_hot(799.99, SETTINGS)) == (True, False)
    low = Settings(stats_table_name="s", alert_threshold=0.5, alert_hysteresis=0.1, partition_wcu_limit=2000)
    assert (alert_rate(low), is_hot(1000.0, low), is_hot(999.9, low)) == (1000.0, True, False)
    # possibly hot: only the most the rate can be reaches it; a hot key is not "possibly" hot
    assert is_possibly_hot(700.0, 800.0, SETTINGS) and not is_possibly_hot(700.0, 799.9, SETTINGS)
    assert not is_possibly_hot(800.0, 900.0, SETTINGS)


def test_the_write_sharding_advice_keeps_each_shard_under_the_alert_rate() -> None:
    # The default alert rate is 80% of a partition's 1,000 WCU/s; a chosen threshold moves it
    assert alert_rate(SETTINGS) == 800
    assert suggested_shards(0, SETTINGS) == 1
    assert suggested_shards(800, SETTINGS) == 1
    assert suggested_shards(801, SETTINGS) == 2
    assert suggested_shards(1600, SETTINGS) == 2
    assert suggested_shards(1601, SETTINGS) == 3
    doubled = Settings(stats_table_name="s", partition_wcu_limit=2000, alert_threshold=0.8)
    assert suggested_shards(4000, doubled) == 3
    half = Settings(stats_table_name="s", alert_threshold=0.5, alert_hysteresis=0.1)
    assert suggested_shards(801, half) == 2
    assert suggested_shards(1001, half) == 3


def test_a_rate_a_hair_under_the_threshold_never_reads_as_the_threshold() -> None:
    assert (shown(799.97), percent_of_limit(799.97, 1000), whole(799.97), whole(79.997)) == (799.9, 79.9, "799", "79")
    assert (shown(800.0), percent_of_limit(800.0, 1000), whole(800.0), whole(percent_of_limit(800, 1000))) == (
        800.0,
        80.0,
        "800",
        "80",
    )
    assert whole(12_345.9) == "12,345"


@given(
    rate=st.fractions(min_value=0, max_value=100_000).map(lambda f: Fraction(round(f * 1000), 1000)),
    limit=st.integers(min_value=1, max_value=10_000),
    percent=st.integers(min_value=1, max_value=1_000),
)
def test_the_shown_percent_reaches_a_whole_percent_exactly_when_the_rate_does(
    rate: Fraction, limit: int, percent: int
) -> None:
    # (exact arithmetic as the oracle: the rate is a multiple of a thousandth, as a counted rate over a span is not,
    # but as close to a threshold as a float gets)
    reaches = rate * 100 / limit >= percent
    assert (percent_of_limit(float(rate), limit) >= percent) == reaches
    assert (int(whole(percent_of_limit(float(rate), limit)).replace(",", "")) >= percent) == reaches


def test_a_one_second_span_reads_a_write_over_its_own_second_as_do_figures_without_a_span() -> None:
    # One 500-unit write at second 5: over a one-second span (buckets of a second) it is 500 WCU/s;
    # figures built without a bucket length (WindowFigures' span 0) read it over one second too
    entry = Entry(1, 500, T0 + 5, 500, [T0 + 5], [500], last_seen=T0 + 5)
    assert rate_of(entry, 0, T0 + 5, 1) == rate_of(entry, 0, T0 + 5, 0) == Rate(500.0, 500.0, 1)


def test_a_rate_covers_the_seconds_from_the_keys_first_write_to_the_figures_latest_event() -> None:
    entry = Entry(1, 100, T0 + 5, 100, [T0], [100], last_seen=T0 + 5)
    # Its first second is one second; the figures' latest event 20 s later, 21
    assert rate_of(entry, 0, T0 + 5, 10).measured_seconds == 1
    assert rate_of(entry, 0, T0 + 25, 10).measured_seconds == 21
    # Figures that hold no event from its first write on (WindowFigures without a latest event: 0) cover none
    # of it: no second, never a negative count
    assert rate_of(entry, 0, 0, 10).measured_seconds == 0
    assert rate_of(entry, 0, T0 + 3, 10).measured_seconds == 0
