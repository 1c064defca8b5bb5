"""The heavy-hitter summary keeps its documented error bound on any stream."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotkeys.detector import summary

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


# Many light keys around a few heavy ones: far more distinct keys than the default capacity keeps.
# Built from a few drawn parameters (a 3,000-record list is too large for hypothesis to draw directly).
@st.composite
def crowded_streams(draw: st.DrawFn) -> list[tuple[str, int]]:
    import random

    rng = random.Random(draw(st.integers(0, 2**32)))
    heavy, light, length = draw(st.integers(1, 8)), draw(st.integers(450, 5000)), draw(st.integers(900, 3000))
    return [
        (f"heavy{rng.randrange(heavy)}", rng.randint(1, 400))
        if rng.random() < 0.1
        else (f"light{rng.randrange(light)}", rng.randint(1, 3))
        for _ in range(length)
    ]


@settings(max_examples=60, deadline=None)
@given(stream=crowded_streams())
def test_every_key_over_one_percent_is_reported_at_default_capacity(stream: list[tuple[str, int]]) -> None:
    # Given streams with more distinct keys than 2 x capacity (so the summary must prune)
    exact: Counter[str] = Counter()
    for key, wcu in stream:
        exact[key] += wcu
    # When folded at the default capacity
    entries, pruned = fold(stream, summary.DEFAULT_CAPACITY)
    total = sum(exact.values())
    # Then the summary stayed bounded, and every key above 1% of the total is still tracked
    assert len(entries) <= 2 * summary.DEFAULT_CAPACITY
    assert pruned * (summary.DEFAULT_CAPACITY + 1) <= total
    for key, weight in exact.items():
        if weight * 100 > total:
            assert key in entries, (key, weight, total)


def test_the_crowded_streams_really_prune() -> None:
    # A bound test whose stream never fills the summary would prove nothing.
    stream = [(f"light{i}", 1) for i in range(1000)] + [("heavy", 500)]
    entries, pruned = fold(stream, summary.DEFAULT_CAPACITY)
    assert pruned > 0 and len(entries) <= 2 * summary.DEFAULT_CAPACITY and "heavy" in entries


def worst_case_keys(kind: str, count: int) -> list[str]:
    """2,048-byte partition keys as the detector sees them (binary as base64, strings as text), with
    pseudo-random content so that compression cannot hide their size."""
    import base64
    import random

    rng = random.Random(kind)
    if kind == "binary":
        return [base64.b64encode(rng.randbytes(2048)).decode() for _ in range(count)]
    if kind == "cjk":  # 3-byte UTF-8 characters
        return ["".join(chr(0x4E00 + rng.randrange(20000)) for _ in range(682)) + "ab" for _ in range(count)]
    if kind == "emoji":  # 4-byte UTF-8 characters (JSON escapes each as a 12-byte surrogate pair)
        return ["".join(chr(0x1F300 + rng.randrange(700)) for _ in range(512)) for _ in range(count)]
    # control characters: six-fold when JSON-escaped
    return ["".join(chr(rng.randrange(32)) for _ in range(2048)) for _ in range(count)]


@pytest.mark.parametrize("kind", ["binary", "cjk", "emoji", "control"])
def test_worst_case_keys_stay_within_the_byte_budget_and_the_one_percent_bound(kind: str) -> None:
    # Given 700 distinct 2,048-byte keys with a few heavy ones among them
    keys = worst_case_keys(kind, 700)
    assert max(len(k.encode("utf-8")) for k in keys) <= summary.MAX_KEY_TEXT_BYTES
    stream = [(key, 1 + (i % 7 == 0) * 60) for i, key in enumerate(keys)] * 2
    exact: Counter[str] = Counter()
    for key, wcu in stream:
        exact[key] += wcu
    total = sum(exact.values())
    # When folded at the default capacity
    entries, pruned = fold(stream, summary.DEFAULT_CAPACITY)
    # Then the encoded summary never exceeds its budget, pruning kept at least MIN_KEEP keys
    # (bound W / 101), and every key above 1% of the total is tracked
    assert summary.encoded_bytes(entries) <= summary.MAX_SUMMARY_BYTES
    assert len(summary.encode_entries(entries)) <= summary.MAX_SUMMARY_BYTES + 1024
    assert pruned > 0 and pruned * (summary.MIN_KEEP + 1) <= total
    for key, weight in exact.items():
        estimate = entries[key][summary.WCU] if key in entries else 0
        assert estimate <= weight <= estimate + pruned
        if weight * 100 > total:
            assert key in entries


@settings(max_examples=100, deadline=None)
@given(
    entries=st.dictionaries(
        st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40),
        st.tuples(
            st.integers(0, 10**6),
            st.integers(0, 10**9),
            st.integers(0, 2**34),
            st.integers(0, 2**34),
            st.integers(0, 10**9),
            st.integers(0, 10**9),
        ).map(list),
        max_size=30,
    )
)
def test_the_entry_codec_round_trips_any_key(entries: dict[str, list[int]]) -> None:
    assert summary.decode_entries(summary.encode_entries(entries)) == entries


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
    kept, dropped = summary.compact(entries, max_entries=2)
    assert list(kept) == ["a", "b"]
    assert dropped == 10


def test_compact_within_capacity_keeps_everything() -> None:
    entries = {"a": [1, 50, 0], "b": [1, 30, 0]}
    assert summary.compact(entries, max_entries=2) == (entries, 0)


@settings(max_examples=200, deadline=None)
@given(
    writes=st.lists(
        st.tuples(st.integers(0, 5).map(lambda i: f"k{i}"), st.integers(1, 50), st.integers(0, 7)), max_size=300
    ),
    bucket_seconds=st.sampled_from([1, 5, 10, 60]),
)
def test_the_peak_is_the_heaviest_aligned_bucket(writes: list[tuple[str, int, int]], bucket_seconds: int) -> None:
    # Given writes in event-time order (gaps of 0-7 s) to a few keys, folded without pruning
    entries: dict[str, list[int]] = {}
    buckets: Counter[tuple[str, int]] = Counter()
    now = 1_796_083_200
    for key, wcu, gap in writes:
        now += gap
        summary.add(entries, key, wcu, now, capacity=100, bucket_seconds=bucket_seconds)
        buckets[(key, now - now % bucket_seconds)] += wcu
    # Then each key's peak is the most write units of any of its epoch-aligned buckets
    for key, entry in entries.items():
        assert entry[summary.PEAK] == max(units for (name, _), units in buckets.items() if name == key)
    # and the codec and a merge with nothing keep it
    again = summary.decode_entries(summary.encode_entries(entries))
    assert summary.merge([(again, 0)])[0] == entries


def test_entries_stored_before_burst_buckets_are_read_without_a_peak() -> None:
    import json
    import zlib

    old = zlib.compress(json.dumps([2, 3, 40, 100]).encode() + b"\nab")
    assert summary.decode_entries(old) == {"ab": [3, 40, 100, 100, 0, 0, 100, 0]}


segment_writes = st.lists(
    # (segment, write units, seconds after the window's start): any order, out-of-order included
    st.tuples(st.integers(0, 3), st.integers(1, 50), st.integers(0, 159)),
    min_size=1,
    max_size=200,
)


@settings(max_examples=300, deadline=None)
@given(writes=segment_writes)
def test_a_merged_peak_is_the_heaviest_aligned_bucket_of_the_sum(writes: list[tuple[int, int, int]]) -> None:
    # Given one key's writes spread over up to four segments (shards, or a parent and its child), each
    # segment receiving its writes in any order, within 16 buckets of 10 s
    start = 1_796_083_200
    parts: dict[int, dict[str, list[int]]] = {}
    buckets: Counter[int] = Counter()
    for segment, wcu, offset in writes:
        summary.add(parts.setdefault(segment, {}), "k", wcu, start + offset, capacity=10, bucket_seconds=10)
        buckets[(start + offset) // 10 * 10] += wcu
    # When the segments are merged (as the alert desk and `top` merge a window)
    merged, _pruned = summary.merge((entries, 0) for entries in parts.values())
    # Then the key's peak is the most write units of any aligned bucket summed over all segments,
    # not the largest part's, and its series is the oracle's bucket by bucket
    entry = merged["k"]
    assert entry[summary.PEAK] == max(buckets.values())
    assert summary.series_of(entry) == dict(buckets)
    assert entry[summary.WCU] == sum(buckets.values())
    # and each part's own peak is its own heaviest bucket, whatever order its writes came in
    for number, entries in parts.items():
        own: Counter[int] = Counter()
        for segment, wcu, offset in writes:
            if segment == number:
                own[(start + offset) // 10 * 10] += wcu
        assert entries["k"][summary.PEAK] == max(own.values())
        assert summary.series_of(entries["k"]) == dict(own)


def test_a_series_longer_than_its_bound_keeps_the_heaviest_buckets_and_an_exact_own_peak() -> None:
    # Given a key writing in 40 buckets, its heaviest in the first
    entries: dict[str, list[int]] = {}
    start = 1_796_083_200
    for bucket in range(40):
        summary.add(
            entries, "k", 100 if bucket == 0 else bucket + 1, start + 10 * bucket, capacity=10, bucket_seconds=10
        )
    entry = entries["k"]
    # Then the series keeps MAX_SERIES_PAIRS buckets, the latest among them and the heaviest too
    series = summary.series_of(entry)
    assert len(series) == summary.MAX_SERIES_PAIRS
    assert start + 390 in series and series[start] == 100
    assert entry[summary.PEAK] == 100
    # and the entry's stated size covers its encoding
    assert summary.entry_bytes("k", entry) == 1 + summary.ENTRY_OVERHEAD + summary.SERIES_PAIR_BYTES * len(series)
    raw = len(__import__("zlib").decompress(summary.encode_entries(entries)))
    assert raw <= summary.encoded_bytes(entries)
    assert summary.decode_entries(summary.encode_entries(entries)) == entries


def test_entries_stored_before_series_keep_their_latest_bucket() -> None:
    import json
    import zlib

    numbers = [summary.SERIESLESS_MARK, 2, 3, 40, 100, 110, 7, 9]
    old = zlib.compress(json.dumps(numbers).encode() + b"\nab")
    assert summary.decode_entries(old) == {"ab": [3, 40, 100, 110, 7, 9, 110, 7]}
