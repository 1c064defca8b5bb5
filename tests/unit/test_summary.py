"""The heavy-hitter summary keeps its documented error bound on any stream."""

from __future__ import annotations

import json
import zlib
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotkeys.detector.domain import summary

streams = st.lists(
    st.tuples(st.integers(min_value=0, max_value=60).map(lambda i: f"k{i}"), st.integers(min_value=1, max_value=400)),
    max_size=600,
)


def fold(stream: list[tuple[str, int]], capacity: int) -> tuple[dict[str, summary.Entry], int]:
    """The stream folded one write a second; (entries, pruned), checked against the summary's own totals."""
    folded = summary.Summary()
    counting = summary.Counting(capacity, alert_min_span_seconds=10)
    pruned = 0
    for t, (key, wcu) in enumerate(stream):
        pruned += folded.count(key, wcu, t, counting)
    assert folded.pruned == pruned
    assert (folded.writes, folded.wcu) == (len(stream), sum(wcu for _key, wcu in stream))
    assert folded.used_bytes == summary.encoded_bytes(folded.entries)
    return folded.entries, pruned


def entry(writes: int, wcu: int, first_seen: int, series: dict[int, int] | None = None) -> summary.Entry:
    """An entry as a summary holds it: by default one bucket (at ``first_seen``) holding all its units."""
    series = series or {first_seen: wcu}
    return summary.Entry(writes, wcu, first_seen, max(series.values()), list(series), list(series.values()))


@settings(max_examples=300, deadline=None)
@given(stream=streams, capacity=st.integers(min_value=1, max_value=20))
def test_estimates_are_within_the_bound(stream: list[tuple[str, int]], capacity: int) -> None:
    # Given the exact weights of a stream
    exact: Counter[str] = Counter()
    writes: Counter[str] = Counter()
    for key, wcu in stream:
        exact[key] += wcu
        writes[key] += 1
    total = sum(exact.values())
    # When it is folded into a summary of this capacity
    entries, pruned = fold(stream, capacity)
    # Then the summary stays bounded, never overcounts and undercounts by at most `pruned`
    assert len(entries) <= 2 * capacity
    assert pruned * (capacity + 1) <= total
    for key, weight in exact.items():
        estimate = entries[key].wcu if key in entries else 0
        assert estimate <= weight <= estimate + pruned
        # and a key's writes are a lower estimate too, never more than its write units (#47: 75,000 > 74,982)
        if key in entries:
            assert entries[key].writes <= min(estimate, writes[key])


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
        estimate = entries[key].wcu if key in entries else 0
        assert estimate <= weight <= estimate + pruned
        if weight * 100 > total:
            assert key in entries


@st.composite
def entries_of(draw: st.DrawFn) -> summary.Entry:
    first_seen = draw(st.integers(0, 2**34))
    starts = sorted(draw(st.sets(st.integers(0, 2**34), min_size=1, max_size=summary.MAX_SERIES_PAIRS)))
    units = draw(st.lists(st.integers(0, 10**9), min_size=len(starts), max_size=len(starts)))
    last_seen = draw(st.none() | st.integers(starts[-1], starts[-1] + 3600))
    return summary.Entry(
        draw(st.integers(0, 10**6)), draw(st.integers(0, 10**9)), first_seen, max(units), starts, units, last_seen
    )


summaries = st.builds(
    summary.Summary,
    st.dictionaries(
        st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40), entries_of(), max_size=30
    ),
    st.integers(0, 10**9),
    st.integers(0, 10**6),
    st.integers(0, 10**9),
)


@settings(max_examples=100, deadline=None)
@given(value=summaries, text=st.booleans())
def test_the_summary_codec_round_trips_any_key(value: summary.Summary, text: bool) -> None:
    # The one codec of the carried state (text: base64 in JSON) and the stats item (bytes)
    packed = summary.pack(value, text=text)
    assert set(packed) == {"writes", "wcu", "pruned", "entry_count", "entries_z"}
    assert isinstance(packed["entries_z"], str if text else bytes) and packed["entry_count"] == len(value.entries)
    again = summary.unpack(packed)
    assert again == value
    assert again.used_bytes == summary.encoded_bytes(value.entries)


def test_the_codec_keeps_every_figure_apart() -> None:
    # Each figure comes back in its own field (a codec that swapped two of them would pass a round trip
    # of equal values only)
    value = summary.Summary({"k": entry(3, 40, 100, {100: 15, 110: 25})}, pruned=7, writes=9, wcu=50)
    packed = summary.pack(value)
    assert (packed["writes"], packed["wcu"], packed["pruned"]) == (9, 50, 7)
    again = summary.unpack(packed).entries["k"]
    assert (again.writes, again.wcu, again.first_seen, again.peak) == (3, 40, 100, 25)
    assert again.series() == {100: 15, 110: 25}


def test_an_encoding_of_an_earlier_layout_is_refused_not_misread() -> None:
    import json
    import zlib

    # Before series (mark -6), and before burst buckets (no mark: [length, writes, wcu, first_seen])
    for numbers in ([-6, 2, 3, 40, 100, 110, 7, 9], [2, 3, 40, 100]):
        old = zlib.compress(json.dumps(numbers).encode() + b"\nab")
        with pytest.raises(summary.EncodingRetired):
            summary.decode_entries(old)
    with pytest.raises(summary.EncodingRetired):  # the first layout: JSON rows, no newline
        summary.decode_entries(zlib.compress(b'[["ab", 3, 40, 100]]'))


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
        estimate = merged[key].wcu if key in merged else 0
        assert estimate <= weight <= estimate + pruned


def test_compact_keeps_heaviest_and_reports_the_largest_dropped_weight() -> None:
    entries = {"c": entry(1, 10, 0), "a": entry(1, 50, 0), "b": entry(1, 30, 0)}
    kept, dropped = summary.compact(entries, max_entries=2)
    assert list(kept) == ["a", "b"]
    assert dropped == 10
    # and a summary's compact adds it to its bound, keeping its totals
    value = summary.Summary(entries, pruned=4, writes=3, wcu=90).compact(2)
    assert (list(value.entries), value.pruned, value.writes, value.wcu) == (["a", "b"], 14, 3, 90)


def test_compact_within_capacity_keeps_everything() -> None:
    entries = {"a": entry(1, 50, 0), "b": entry(1, 30, 0)}
    assert summary.compact(entries, max_entries=2) == (entries, 0)


@settings(max_examples=200, deadline=None)
@given(
    writes=st.lists(
        st.tuples(st.integers(0, 5).map(lambda i: f"k{i}"), st.integers(1, 50), st.integers(0, 7)), max_size=300
    ),
    alert_min_span_seconds=st.sampled_from([1, 5, 10, 60]),
)
def test_the_peak_is_the_heaviest_aligned_bucket(
    writes: list[tuple[str, int, int]], alert_min_span_seconds: int
) -> None:
    # Given writes in event-time order (gaps of 0-7 s) to a few keys, folded without pruning
    folded = summary.Summary()
    counting = summary.Counting(capacity=100, alert_min_span_seconds=alert_min_span_seconds)
    buckets: Counter[tuple[str, int]] = Counter()
    now = 1_796_083_200
    for key, wcu, gap in writes:
        now += gap
        folded.count(key, wcu, now, counting)
        buckets[(key, now - now % alert_min_span_seconds)] += wcu
    entries = folded.entries
    # Then each key's peak is the most write units of any of its epoch-aligned buckets, its series those buckets
    for key, found in entries.items():
        assert found.peak == max(units for (name, _), units in buckets.items() if name == key)
        assert found.series() == {start: units for (name, start), units in buckets.items() if name == key}
    # and the codec and a merge with nothing keep it
    again = summary.decode_entries(summary.encode_entries(entries))
    assert summary.merge([(again, 0)])[0] == entries


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
    parts: dict[int, summary.Summary] = {}
    counting = summary.Counting(capacity=10, alert_min_span_seconds=10)
    buckets: Counter[int] = Counter()
    for segment, wcu, offset in writes:
        parts.setdefault(segment, summary.Summary()).count("k", wcu, start + offset, counting)
        buckets[(start + offset) // 10 * 10] += wcu
    # When the segments are merged (as the alert desk and `top` merge a window)
    window = summary.merged(parts.values())
    # Then the key's peak is the most write units of any aligned bucket summed over all segments,
    # not the largest part's, and its series is the oracle's bucket by bucket
    found = window.entries["k"]
    assert found.peak == max(buckets.values())
    assert found.series() == dict(buckets)
    assert found.wcu == window.wcu == sum(buckets.values())
    assert found.writes == window.writes == len(writes)
    assert found.first_seen == start + min(offset for _segment, _wcu, offset in writes)
    # and each part's own peak is its own heaviest bucket, whatever order its writes came in
    for number, part in parts.items():
        own: Counter[int] = Counter()
        for segment, wcu, offset in writes:
            if segment == number:
                own[(start + offset) // 10 * 10] += wcu
        assert part.entries["k"].peak == max(own.values())
        assert part.entries["k"].series() == dict(own)


def test_a_series_longer_than_its_bound_keeps_the_heaviest_buckets_and_an_exact_own_peak() -> None:
    # Given a key writing in 40 buckets, its heaviest in the first
    folded = summary.Summary()
    counting = summary.Counting(capacity=10, alert_min_span_seconds=10)
    start = 1_796_083_200
    for bucket in range(40):
        folded.count("k", 100 if bucket == 0 else bucket + 1, start + 10 * bucket, counting)
    entries = folded.entries
    found = entries["k"]
    # Then the series keeps MAX_SERIES_PAIRS buckets, the latest among them and the heaviest too
    series = found.series()
    assert len(series) == summary.MAX_SERIES_PAIRS
    assert start + 390 in series and series[start] == 100
    assert found.peak == 100
    # and the entry's stated size covers its encoding
    assert summary.entry_bytes("k", found) == 1 + summary.ENTRY_OVERHEAD + summary.SERIES_PAIR_BYTES * len(series)
    raw = len(__import__("zlib").decompress(summary.encode_entries(entries)))
    assert raw <= summary.encoded_bytes(entries) == folded.used_bytes
    assert summary.decode_entries(summary.encode_entries(entries)) == entries


def test_a_write_before_the_latest_bucket_goes_to_its_own_bucket_in_order() -> None:
    # Given a key with writes in two buckets
    folded = summary.Summary()
    counting = summary.Counting(capacity=10, alert_min_span_seconds=10)
    for second, wcu in ((100, 5), (130, 7)):
        folded.count("k", wcu, second, counting)
    # When writes arrive out of order: into the earlier bucket, and into one between them
    folded.count("k", 4, 101, counting)
    folded.count("k", 9, 115, counting)
    found = folded.entries["k"]
    # Then each lands in its own aligned bucket, the series stays in bucket order, and the totals add
    assert (found.buckets, found.units) == ([100, 110, 130], [9, 9, 7])
    assert (found.writes, found.wcu, found.first_seen, found.peak) == (4, 25, 100, 9)
    # and the latest bucket keeps counting where it was
    folded.count("k", 3, 139, counting)
    assert found.series() == {100: 9, 110: 9, 130: 10} and found.peak == 10


def test_an_entry_written_before_latest_seconds_were_kept_reads_as_unknown_and_learns_it() -> None:
    # The layout before: the slot after the latest bucket held that bucket's units (a count, not a second)
    entry = summary.Entry(3, 30, 1_796_083_205, 20, [1_796_083_200, 1_796_083_210], [10, 20], 1_796_083_214)
    numbers = json.loads(zlib.decompress(summary.encode_entries({"k": entry})).partition(b"\n")[0])
    assert numbers[6] == 1_796_083_214  # (mark, key length, writes, wcu, first seen, latest bucket, here)
    numbers[6] = 20
    old = zlib.compress(json.dumps(numbers).encode() + b"\n" + b"k")
    (read,) = summary.decode_entries(old).values()
    assert read.last_seen is None and read.last_second(10) == 1_796_083_219  # its latest bucket's end stands in
    # A write in its latest bucket leaves it unknown; one that opens a later bucket makes it exact
    read.bump(1, 1_796_083_211, 10)
    assert read.last_seen is None
    read.bump(1, 1_796_083_223, 10)
    assert read.last_seen == 1_796_083_223
    # and a merge with an entry that does not know it does not know it either
    merged = summary.merge_entries([entry.copy(), summary.decode_entries(old)["k"]])
    assert merged.last_seen is None and summary.merge_entries([entry, entry.copy()]).last_seen == 1_796_083_214
