"""The heavy-hitter summary keeps its documented error bound on any stream."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from detector import summary

streams = st.lists(
    st.tuples(st.integers(min_value=0, max_value=60).map(lambda i: f"k{i}"), st.integers(min_value=1, max_value=400)),
    max_size=600,
)


def fold(stream: list[tuple[str, int]], capacity: int) -> tuple[dict[str, list[int]], int]:
    entries: dict[str, list[int]] = {}
    pruned = 0
    for t, (key, wcu) in enumerate(stream):
        pruned += summary.add(entries, key, wcu, t, capacity)
    return entries, pruned


@settings(max_examples=300, deadline=None)
@given(stream=streams, capacity=st.integers(min_value=1, max_value=20))
def test_estimates_are_within_the_bound(stream: list[tuple[str, int]], capacity: int) -> None:
    # Given the exact weights of a stream
    exact: Counter[str] = Counter()
    for key, wcu in stream:
        exact[key] += wcu
    total = sum(exact.values())
    # When it is folded into a summary of this capacity
    entries, pruned = fold(stream, capacity)
    # Then the summary stays bounded, never overcounts and undercounts by at most `pruned`
    assert len(entries) <= 2 * capacity
    assert pruned * (capacity + 1) <= total
    for key, weight in exact.items():
        estimate = entries[key][summary.WCU] if key in entries else 0
        assert estimate <= weight <= estimate + pruned


@settings(max_examples=200, deadline=None)
@given(stream=streams)
def test_every_key_over_one_percent_is_reported_at_default_capacity(stream: list[tuple[str, int]]) -> None:
    exact: Counter[str] = Counter()
    for key, wcu in stream:
        exact[key] += wcu
    entries, _ = fold(stream, summary.DEFAULT_CAPACITY)
    total = sum(exact.values())
    for key, weight in exact.items():
        if weight * 100 > total:
            assert key in entries


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(streams, min_size=1, max_size=4), capacity=st.integers(min_value=1, max_value=10))
def test_merged_summaries_keep_the_summed_bound(parts: list[list[tuple[str, int]]], capacity: int) -> None:
    # Given one summary per shard
    folded = [fold(part, capacity) for part in parts]
    # When they are merged
    merged, pruned = summary.merge(folded)
    # Then every key's merged estimate is within the sum of the shards' bounds
    exact: Counter[str] = Counter()
    for part in parts:
        for key, wcu in part:
            exact[key] += wcu
    for key, weight in exact.items():
        estimate = merged[key][summary.WCU] if key in merged else 0
        assert estimate <= weight <= estimate + pruned


def test_compact_keeps_heaviest_and_reports_the_largest_dropped_weight() -> None:
    entries = {"a": [1, 50, 0], "b": [1, 30, 0], "c": [1, 10, 0]}
    kept, dropped = summary.compact(entries, max_entries=2, max_key_bytes=10_000)
    assert list(kept) == ["a", "b"]
    assert dropped == 10


def test_compact_respects_the_byte_budget() -> None:
    entries = {"k" * 2048: [1, 90, 0], "small": [1, 5, 0]}
    kept, dropped = summary.compact(entries, max_entries=10, max_key_bytes=100)
    assert kept == {"small": [1, 5, 0]}
    assert dropped == 90
