"""Write-sharded families roll up exactly, and the antipattern names follow their documented thresholds.

Generated windows mix an evenly and an unevenly sharded family with keys that must never be
read as shards: identifiers with large numbers, dates, plain keys without an inner separator.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from hotkeys.detector.domain.diagnosis import (
    LOW_CARDINALITY,
    SINGLE_KEY,
    TIME_BUCKET,
    UNEVEN_SPREAD,
    classify,
    shard_families,
)

separators = st.sampled_from("#_:|.-")
stems = st.tuples(st.text("abcdefghij", min_size=1, max_size=6), separators, st.integers(0, 999), separators).map(
    lambda parts: f"{parts[0]}{parts[1]}{parts[2]}{parts[3]}"
)


@st.composite
def windows(draw: st.DrawFn) -> tuple[dict[str, list[int]], list[tuple[str, int]]]:
    """(family stem → each shard's write units, the window's (key, write units) pairs, shuffled)."""
    chosen = draw(st.lists(stems, min_size=1, max_size=3, unique=True))
    families: dict[str, list[int]] = {}
    pairs: list[tuple[str, int]] = []
    for stem in chosen:
        shards = draw(st.integers(2, 20))
        base = draw(st.integers(1, 500))
        uneven = draw(st.booleans())
        weights = [base * (draw(st.integers(3, 6)) if uneven and suffix == 0 else 1) for suffix in range(shards)]
        families[stem] = weights
        pairs.extend((f"{stem}{suffix}", weight) for suffix, weight in enumerate(weights))
    # Keys that are not shards: long identifiers, identifiers far above their count, dates, plain words.
    pairs.extend((f"user#{draw(st.integers(10**6, 10**9))}", draw(st.integers(1, 900))) for _ in range(5))
    pairs.extend((f"order#7#{500 + n}", 3) for n in range(draw(st.integers(0, 5))))
    pairs.extend((f"day#2026-12-{day:02d}", 9) for day in range(1, draw(st.integers(1, 9))))
    pairs.extend((f"counter_{n}", 4) for n in range(draw(st.integers(0, 4))))
    random.Random(draw(st.integers(0, 2**16))).shuffle(pairs)
    return families, pairs


@settings(max_examples=200, deadline=None)
@given(window=windows())
def test_families_roll_up_exactly_and_nothing_else_is_a_family(
    window: tuple[dict[str, list[int]], list[tuple[str, int]]],
) -> None:
    # Given a window holding sharded families among keys that are not shards
    expected, pairs = window
    # When the families are rolled up
    found = {family.stem: family for family in shard_families(pairs)}
    # Then exactly the generated families are found, with their exact totals, shard counts and spread
    assert set(found) == set(expected)
    for stem, weights in expected.items():
        family = found[stem]
        assert (family.shards, family.wcu, family.hottest_wcu) == (len(weights), sum(weights), max(weights))
        assert abs(family.spread - max(weights) * len(weights) / sum(weights)) < 1e-9
        # and the verdict says uneven exactly when the hottest shard reaches the documented spread
        verdict = family.verdict(60, 1000)
        assert ("uneven" in verdict) == (family.spread >= UNEVEN_SPREAD)


def test_a_family_near_what_its_shards_absorb_is_told_to_add_suffixes() -> None:
    # Given 4 even shards writing 3,000 WCU/s in total (750 each: 75% of what 4 partitions absorb)
    (family,) = shard_families([(f"hot#1#{n}", 750 * 60) for n in range(4)])
    # Then the verdict asks for enough suffixes to keep each at half the limit (3,000 / 500 = 6)
    assert "at 75% of what 4 shards absorb: use about 6 suffixes" in family.verdict(60, 1000)
    # while at 2,000 WCU/s in total (50%) sharding works
    (calm,) = shard_families([(f"hot#1#{n}", 500 * 60) for n in range(4)])
    assert calm.verdict(60, 1000).endswith("sharding works")


def test_the_antipatterns_follow_their_order_and_thresholds() -> None:
    # Time buckets come first, whatever the figures
    assert classify("2026-12-01", 0.2, 500).pattern == TIME_BUCKET  # type: ignore[union-attr]
    assert classify("clicks#20261201", 0.95, 1).pattern == TIME_BUCKET  # type: ignore[union-attr]
    assert classify("events#2026-12-01T10", 0.3, 40).pattern == TIME_BUCKET  # type: ignore[union-attr]
    # One key taking >= 90% of few keys' writes: a single key (global counter)
    assert classify("global-counter", 0.95, 3).pattern == SINGLE_KEY  # type: ignore[union-attr]
    assert classify("global-counter", 0.89, 3) is None
    assert classify("global-counter", 0.95, 11) is None
    # A short word among at most 10 keys: low cardinality (for an index key, before single key)
    assert classify("PENDING", 0.4, 3).pattern == LOW_CARDINALITY  # type: ignore[union-attr]
    assert classify("PENDING", 1.0, 1, index="by-status").pattern == LOW_CARDINALITY  # type: ignore[union-attr]
    assert classify("PENDING", 1.0, 1).pattern == SINGLE_KEY  # type: ignore[union-attr]
    assert classify("PENDING", 0.4, 11) is None
    # Identifiers are none of these
    assert classify("user#48213", 0.5, 4) is None
    assert classify("event#42", 0.3, 2000) is None
