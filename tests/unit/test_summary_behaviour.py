"""The heavy-hitter summary's promises, through its public operations only: folding writes, merging,
compacting, encoding. What a key's figures are is read through ``figures`` below (the one place that
knows how an entry is laid out), so these tests pin behaviour, not representation.

Promises (module doc of hotkeys.detector.domain.summary): exact while within capacity and budget; after a
prune a tracked key's counter is at most its true weight and at least true - pruned, an untracked
key's weight is at most ``pruned``, and ``pruned <= W / (k + 1)``; the encoded size stays within the
budget; merges add counts, series bucket by bucket and bounds; a compacted summary's bound covers
what it left out.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import zlib
from dataclasses import dataclass

import pytest

from hotkeys.detector.domain import summary

T0 = 1_796_083_200  # aligned to every bucket length used here
BUCKET = 10


@dataclass(frozen=True)
class Figures:
    writes: int
    wcu: int
    first_seen: int
    peak: int
    series: dict[int, int]  # write units by bucket start
    latest: int  # its latest event second (unknown: the end of its latest bucket stands in)


def figures(entries: dict[str, summary.Entry]) -> dict[str, Figures]:
    """Each tracked key's figures (the only reader of an entry's layout in this file)."""
    return {
        key: Figures(entry.writes, entry.wcu, entry.first_seen, entry.peak, entry.series(), entry.last_second(BUCKET))
        for key, entry in entries.items()
    }


def without_latest_seconds(blob: bytes) -> bytes:
    """An encoding as written before a key's latest second was kept: that slot (an entry's sixth number)
    held its latest bucket's write units (``encode_entries``)."""
    header, _newline, keys = zlib.decompress(blob).partition(b"\n")
    numbers = json.loads(header)
    index = 1
    while index < len(numbers):
        end = index + 8 + 2 * numbers[index + 7]  # eight numbers, then the series' pairs
        numbers[index + 5] = numbers[end - 1]  # the latest bucket's units: the series' last pair
        index = end
    return zlib.compress(json.dumps(numbers, separators=(",", ":")).encode("ascii") + b"\n" + keys)


def count(
    entries: dict[str, summary.Entry],
    key: str,
    wcu: int,
    event_time: int,
    capacity: int = 200,
    max_bytes: int = summary.MAX_SUMMARY_BYTES,
) -> tuple[int, int]:
    """Count one write into ``entries`` (in place) as a summary of that budget does; returns (weight
    pruned, the summary's encoded size after it)."""
    counted = summary.Summary(entries, max_bytes=max_bytes, used_bytes=summary.encoded_bytes(entries))
    pruned = counted.count(key, wcu, event_time, summary.Counting(capacity, BUCKET))
    return pruned, counted.used_bytes


def fold(
    writes: list[tuple[str, int, int]], capacity: int = 200, max_bytes: int = summary.MAX_SUMMARY_BYTES
) -> tuple[dict[str, summary.Entry], int]:
    """(entries, pruned) after counting (key, write units, second after T0) in order, checking after
    each write that the size the summary keeps is the encoded size and within the budget, and that its
    bound and exact totals are what its writes returned and weighed."""
    counted = summary.Summary(max_bytes=max_bytes)
    counting = summary.Counting(capacity, BUCKET)
    pruned = 0
    for key, wcu, second in writes:
        pruned += counted.count(key, wcu, T0 + second, counting)
        assert counted.used_bytes == summary.encoded_bytes(counted.entries) <= max_bytes
    assert counted.pruned == pruned
    assert (counted.writes, counted.wcu) == (len(writes), sum(wcu for _key, wcu, _second in writes))
    return counted.entries, pruned


# Exact counting


def test_within_capacity_every_keys_figures_are_exact() -> None:
    entries, pruned = fold([("a", 3, 0), ("b", 1, 1), ("a", 2, 5), ("a", 4, 12)])
    assert pruned == 0
    assert figures(entries) == {
        "a": Figures(writes=3, wcu=9, first_seen=T0, peak=5, series={T0: 5, T0 + 10: 4}, latest=T0 + 12),
        "b": Figures(writes=1, wcu=1, first_seen=T0 + 1, peak=1, series={T0: 1}, latest=T0 + 1),
    }


def test_buckets_are_aligned_to_the_epoch() -> None:
    # Seconds 9 and 10 are in different buckets, 10 and 19 in the same
    entries, _ = fold([("k", 1, 9), ("k", 2, 10), ("k", 3, 19), ("k", 1, 20)])
    assert figures(entries)["k"].series == {T0: 1, T0 + 10: 5, T0 + 20: 1}
    assert figures(entries)["k"].peak == 5


def test_a_later_heavier_bucket_is_the_peak() -> None:
    entries, _ = fold([("k", 3, 0), ("k", 4, 15), ("k", 1, 16)])
    assert figures(entries)["k"].peak == 5
    entries, _ = fold([("k", 3, 0), ("k", 2, 15)])
    assert figures(entries)["k"].peak == 3
    entries, _ = fold([("k", 3, 0), ("k", 4, 15)])
    assert figures(entries)["k"].peak == 4


def test_an_out_of_order_write_counts_in_its_own_bucket() -> None:
    # A record of second 5 after one of second 25: into bucket 0, and its first write moves back (its latest
    # stays: the records after it are earlier)
    entries, _ = fold([("k", 1, 25), ("k", 2, 5), ("k", 4, 7), ("k", 1, 12)])
    assert figures(entries)["k"] == Figures(
        writes=4, wcu=8, first_seen=T0 + 5, peak=6, series={T0: 6, T0 + 10: 1, T0 + 20: 1}, latest=T0 + 25
    )
    # The series stays in bucket order
    assert list(figures(entries)["k"].series) == [T0, T0 + 10, T0 + 20]


def test_a_keys_series_keeps_its_heaviest_buckets_and_its_exact_peak() -> None:
    # One more bucket than a series keeps: the lightest earlier one gives way, the peak stays
    pairs = summary.MAX_SERIES_PAIRS
    writes = [("k", 5 if n == 1 else 9 if n == 0 else 10, n * BUCKET) for n in range(pairs + 1)]
    entries, _ = fold(writes)
    key = figures(entries)["k"]
    assert len(key.series) == pairs and T0 + BUCKET not in key.series
    assert (key.wcu, key.peak, key.writes) == (sum(w for _k, w, _s in writes), 10, pairs + 1)
    # A late write to the latest bucket still lands there
    entries, _ = fold([*writes, ("k", 1, pairs * BUCKET)])
    assert figures(entries)["k"].series[T0 + pairs * BUCKET] == 11


def test_an_out_of_order_write_to_a_bucket_it_lacks_is_inserted_in_order() -> None:
    entries, _ = fold([("k", 1, 0), ("k", 1, 30), ("k", 7, 15)])
    key = figures(entries)["k"]
    assert list(key.series) == [T0, T0 + 10, T0 + 30] and key.peak == 7


def test_an_out_of_order_write_before_several_later_buckets_is_inserted_in_order() -> None:
    # Buckets 0, 30 and 40, then a write of second 15: bucket 10 goes second, its units with it
    entries, _ = fold([("k", 1, 0), ("k", 2, 30), ("k", 3, 40), ("k", 7, 15)])
    key = figures(entries)["k"]
    assert list(key.series.items()) == [(T0, 1), (T0 + 10, 7), (T0 + 30, 2), (T0 + 40, 3)]


def test_the_lightest_earlier_bucket_gives_way_even_just_before_the_latest() -> None:
    # One bucket more than a series keeps; the lightest earlier one is the one before the latest
    pairs = summary.MAX_SERIES_PAIRS
    writes = [("k", 1 if n == pairs - 1 else 10, n * BUCKET) for n in range(pairs + 1)]
    key = figures(fold(writes)[0])["k"]
    assert T0 + (pairs - 1) * BUCKET not in key.series
    assert T0 in key.series and T0 + pairs * BUCKET in key.series


# Pruning


def test_a_new_key_beyond_twice_the_capacity_prunes_by_the_next_heaviest_weight() -> None:
    # Capacity 2 tracks four keys; a fifth keeps the heaviest two, less the third's weight (30)
    entries, pruned = fold([("a", 50, 0), ("b", 40, 0), ("c", 30, 0), ("d", 20, 0), ("e", 10, 1)], capacity=2)
    assert pruned == 30
    assert {key: f.wcu for key, f in figures(entries).items()} == {"a": 20, "b": 10, "e": 10}
    # Their writes and series are what they were (only the counter bears the bound)
    assert figures(entries)["a"].writes == 1 and figures(entries)["a"].peak == 50


def test_keys_that_tie_with_the_cut_are_dropped_with_it() -> None:
    entries, pruned = fold([("a", 30, 0), ("b", 30, 0), ("c", 30, 0), ("d", 30, 0), ("e", 10, 1)], capacity=2)
    assert (set(entries), pruned) == ({"e"}, 30)


def test_within_twice_the_capacity_nothing_is_pruned() -> None:
    entries, pruned = fold([(f"k{n}", 1, 0) for n in range(4)], capacity=2)
    assert (len(entries), pruned) == (4, 0)


def test_the_guarantees_hold_on_a_skewed_stream() -> None:
    # 60 keys of weights 1..60, heaviest last, in a summary of capacity 5
    truth = {f"k{n}": n for n in range(1, 61)}
    writes = [(key, 1, second) for second, key in enumerate(k for k, w in truth.items() for _ in range(w))]
    entries, pruned = fold(writes, capacity=5)
    total = sum(truth.values())
    assert 0 < pruned <= total / 6
    for key, weight in truth.items():
        counted = figures(entries).get(key)
        if counted is None:
            assert weight <= pruned
        else:
            assert weight - pruned <= counted.wcu <= weight


def test_the_byte_budget_bounds_the_summary() -> None:
    # Keys of 1,000 bytes in a budget of ten such entries: pruning keeps the summary within it
    budget = 10 * summary.entry_bytes("x" * 1000)
    writes = [(f"{n:04d}" + "x" * 996, n + 1, 0) for n in range(30)]
    entries, pruned = fold(writes, capacity=200, max_bytes=budget)
    assert pruned > 0 and 0 < len(entries) <= 10
    assert summary.encoded_bytes(entries) <= budget
    # The heaviest key is kept
    assert f"{29:04d}" + "x" * 996 in entries


def test_a_prune_for_bytes_keeps_the_heaviest_keys_that_fit_half_the_budget() -> None:
    # Eleven 1,000-byte keys fill a budget of eleven exactly (weights 1..11, no prune); a twelfth prunes.
    # Half the budget holds five of them: the five heaviest are kept, less the sixth's weight (6)
    budget = 11 * summary.entry_bytes("x" * 1000)
    keys = [f"{n:04d}" + "x" * 996 for n in range(12)]
    entries, pruned = fold([(keys[n], n + 1, 0) for n in range(11)], max_bytes=budget)
    assert (len(entries), pruned) == (11, 0)
    entries, pruned = fold([(keys[n], n + 1, 0) for n in range(12)], max_bytes=budget)
    assert pruned == 6
    assert {key[:4]: f.wcu for key, f in figures(entries).items()} == {
        "0010": 5,
        "0009": 4,
        "0008": 3,
        "0007": 2,
        "0006": 1,
        "0011": 12,
    }


def test_a_prune_for_bytes_stops_when_the_kept_keys_fill_exactly_half_the_budget() -> None:
    # Ten 1,000-byte keys fill a budget of ten (weights 1..10); an eleventh prunes. Five of them fill
    # exactly half the budget: that fits, so the five heaviest are kept, less the sixth's weight (5)
    budget = 10 * summary.entry_bytes("x" * 1000)
    keys = [f"{n:04d}" + "x" * 996 for n in range(11)]
    entries, pruned = fold([(keys[n], n + 1, 0) for n in range(11)], max_bytes=budget)
    assert pruned == 5
    assert {key[:4]: f.wcu for key, f in figures(entries).items()} == {
        "0009": 5,
        "0008": 4,
        "0007": 3,
        "0006": 2,
        "0005": 1,
        "0010": 11,
    }


def test_a_series_reaching_the_budget_exactly_needs_no_prune() -> None:
    budget = 2 * summary.entry_bytes("a") + summary.SERIES_PAIR_BYTES
    entries, pruned = fold([("a", 5, 0), ("b", 3, 0), ("a", 1, 10)], capacity=1, max_bytes=budget)
    assert pruned == 0 and {key: f.wcu for key, f in figures(entries).items()} == {"a": 6, "b": 3}


def test_a_series_growing_past_the_budget_prunes() -> None:
    # Two keys fill the budget; a new bucket of one of them would break it: the lighter one goes
    budget = 2 * summary.entry_bytes("a") + summary.SERIES_PAIR_BYTES - 1
    entries, pruned = fold([("a", 5, 0), ("b", 3, 0), ("a", 1, 10)], capacity=1, max_bytes=budget)
    assert pruned == 3 and set(entries) == {"a"}
    assert figures(entries)["a"].wcu == 3


def test_the_fewest_keys_a_prune_keeps() -> None:
    assert summary.keep_floor(summary.MAX_SUMMARY_BYTES) == summary.MIN_KEEP
    assert summary.keep_floor(3 * summary.MAX_ENTRY_BYTES) == 2  # room for one more of the largest
    assert summary.keep_floor(summary.MAX_ENTRY_BYTES) == 1
    assert summary.allotment(1) == summary.MAX_SUMMARY_BYTES
    assert summary.allotment(3) == summary.MAX_SUMMARY_BYTES // 3
    assert summary.allotment(0) == summary.MAX_SUMMARY_BYTES


def test_an_entrys_bytes_are_its_keys_utf8_its_counters_and_its_pairs() -> None:
    assert summary.entry_bytes("ab") == 2 + summary.ENTRY_OVERHEAD + summary.SERIES_PAIR_BYTES
    assert summary.entry_bytes("é") == 2 + summary.ENTRY_OVERHEAD + summary.SERIES_PAIR_BYTES
    entries, _ = fold([("ab", 1, 0), ("ab", 1, 10), ("ab", 1, 20)])
    assert summary.encoded_bytes(entries) == 2 + summary.ENTRY_OVERHEAD + 3 * summary.SERIES_PAIR_BYTES


# Merging


def test_merged_summaries_add_counts_series_and_bounds() -> None:
    here, _ = fold([("k", 50, 0), ("k", 10, 10), ("only-here", 1, 3)])
    there, _ = fold([("k", 45, 12), ("k", 1, 25), ("only-there", 2, 4)])
    merged, pruned = summary.merge([(here, 7), (there, 5)])
    assert pruned == 12
    key = figures(merged)["k"]
    # The heaviest bucket of the sum: 10 + 45 in bucket 10, more than either part's own peak; the later
    # latest second of the two
    assert key == Figures(
        writes=4, wcu=106, first_seen=T0, peak=55, series={T0: 50, T0 + 10: 55, T0 + 20: 1}, latest=T0 + 25
    )
    assert figures(merged)["only-here"] == figures(here)["only-here"]
    assert figures(merged)["only-there"] == figures(there)["only-there"]


def test_a_merge_never_shows_a_peak_below_a_parts_own() -> None:
    # A part whose series lost its heaviest bucket's neighbours still has its own exact peak
    pairs = summary.MAX_SERIES_PAIRS
    part, _ = fold([("k", 100 if n == 0 else 1, n * BUCKET) for n in range(pairs + 1)])
    other, _ = fold([("k", 1, 0)])
    merged, _ = summary.merge([(part, 0), (other, 0)])
    assert figures(merged)["k"].peak == 101
    assert figures(merged)["k"].first_seen == T0


def test_a_merge_leaves_its_parts_as_they_were() -> None:
    here, _ = fold([("k", 5, 0)])
    before = figures(here)
    merged, _ = summary.merge([(here, 0)])
    fold_more = count(merged, "k", 5, T0 + 1, 200, 10**6)
    assert fold_more == (0, summary.encoded_bytes(merged))
    assert figures(here) == before and figures(merged)["k"].wcu == 10


def test_a_merge_for_reading_only_keeps_a_lone_parts_figures() -> None:
    # copy=False (parts read to be merged and dropped): a key in one part keeps that part's figures, a
    # key in several is merged as always, and the bounds add
    here, _ = fold([("k", 5, 0), ("j", 1, 1)])
    there, _ = fold([("j", 2, 2)])
    merged, pruned = summary.merge([(here, 0), (there, 3)], copy=False)
    assert pruned == 3
    assert figures(merged)["k"] == figures(here)["k"] and figures(merged)["j"].wcu == 3


def test_a_merge_with_a_part_that_does_not_know_a_keys_latest_second_does_not_know_it_either() -> None:
    # The key's latest second is 12 here; there it wrote in bucket 20, read from an encoding without it
    here, _ = fold([("k", 1, 2), ("k", 1, 12)])
    there, _ = fold([("k", 1, 21)])
    unknown = summary.decode_entries(without_latest_seconds(summary.encode_entries(there)))
    merged, _ = summary.merge([(here, 0), (unknown, 0)])
    # The end of the merged latest bucket stands in: there it may have written up to second 29
    assert figures(merged)["k"].latest == T0 + 29


def test_merging_nothing_is_empty() -> None:
    assert summary.merge([]) == ({}, 0)


# Compacting


def test_compacting_keeps_the_heaviest_and_bounds_what_it_left_out() -> None:
    entries, _ = fold([("a", 9, 0), ("b", 7, 0), ("c", 7, 0), ("d", 3, 0)])
    kept, bound = summary.compact(entries, 2)
    # b and c tie: the first by key stays
    assert (set(kept), bound) == ({"a", "b"}, 7)
    kept, bound = summary.compact(entries, 3)
    assert (set(kept), bound) == ({"a", "b", "c"}, 3)
    kept, bound = summary.compact(entries, 4)
    assert (figures(kept), bound) == (figures(entries), 0)
    kept, bound = summary.compact(entries, 10)
    assert (figures(kept), bound) == (figures(entries), 0)


def test_compacting_ranks_keys_by_weight_not_by_name() -> None:
    entries, _ = fold([("a", 3, 0), ("m", 5, 0), ("z", 9, 0)])
    kept, bound = summary.compact(entries, 1)
    assert (set(kept), bound) == ({"z"}, 5)


def test_compacting_within_bytes_keeps_fewer_keys() -> None:
    entries, _ = fold([("a", 9, 0), ("b", 7, 0), ("c", 5, 0)])
    one = summary.entry_bytes("a")
    kept, bound = summary.compact(entries, 3, max_bytes=2 * one)
    assert (set(kept), bound) == ({"a", "b"}, 5)
    kept, bound = summary.compact(entries, 3, max_bytes=2 * one - 1)
    assert (set(kept), bound) == ({"a"}, 7)
    kept, bound = summary.compact(entries, 3, max_bytes=3 * one)
    assert (set(kept), bound) == ({"a", "b", "c"}, 0)


def test_compacting_breaks_ties_by_key_whatever_the_order_keys_came_in() -> None:
    # c came before b, both of weight 7: b, first by key, is the one kept
    entries, _ = fold([("a", 9, 0), ("c", 7, 0), ("b", 7, 0), ("d", 3, 0)])
    kept, bound = summary.compact(entries, 2)
    assert (set(kept), bound) == ({"a", "b"}, 7)
    kept, bound = summary.compact(entries, 2, max_bytes=10**6)
    assert (set(kept), bound) == ({"a", "b"}, 7)


def test_a_compacted_summary_adds_what_it_left_out_to_its_own_bound() -> None:
    # Capacity 2: the fifth key prunes 30 (a: 20, b: 10, e: 10 remain); keeping one more leaves out 10
    counted = summary.Summary()
    counting = summary.Counting(2, BUCKET)
    for key, wcu, second in [("a", 50, 0), ("b", 40, 0), ("c", 30, 0), ("d", 20, 0), ("e", 10, 1)]:
        counted.count(key, wcu, T0 + second, counting)
    compacted = counted.compact(1)
    assert (set(compacted.entries), compacted.pruned) == ({"a"}, 40)
    assert (compacted.writes, compacted.wcu) == (5, 150)


def test_a_compacted_summary_is_a_copy() -> None:
    entries, _ = fold([("a", 9, 0)])
    kept, _ = summary.compact(entries, 5)
    count(kept, "a", 1, T0, 200, 10**6)
    assert figures(entries)["a"].wcu == 9
    kept, _ = summary.compact(entries, 5, max_bytes=10**6)
    count(kept, "a", 1, T0, 200, 10**6)
    assert figures(entries)["a"].wcu == 9


# Encoding


def test_a_summary_survives_its_encoding() -> None:
    entries, _ = fold([("a", 1, 0), ("é-ü", 2, 15), ("a", 3, 35), ("a", 1, 2), ("\x00x", 4, 59)])
    decoded = summary.decode_entries(summary.encode_entries(entries))
    assert figures(decoded) == figures(entries)
    assert figures(summary.decode_entries(summary.encode_entries({}))) == {}


def test_a_summary_survives_its_codec_whatever_its_budget() -> None:
    # A summary's value is its entries, bound and totals: its budget and its kept size are not
    counted = summary.Summary(max_bytes=10**6)
    counting = summary.Counting(2, BUCKET)
    for key, wcu, second in [("a", 50, 0), ("b", 40, 0), ("c", 30, 0), ("d", 20, 0), ("e", 10, 11)]:
        counted.count(key, wcu, T0 + second, counting)
    for value in (counted, counted.compact(2)):  # a compacted summary keeps no size of its own
        assert summary.unpack(summary.pack(value)) == value
        assert summary.unpack(summary.pack(value, text=True)) == value


def test_a_summary_read_to_count_into_knows_its_size_and_one_only_read_does_not_weigh_it() -> None:
    entries, _ = fold([("a", 1, 0), ("b", 2, 15)])
    packed = summary.pack(summary.Summary(entries))
    assert summary.unpack(packed).used_bytes == summary.encoded_bytes(entries) > 0
    assert summary.unpack(packed, sized=False).used_bytes == 0


def test_the_stats_items_form_is_the_encoded_bytes_the_states_is_text() -> None:
    # The stats item stores a binary attribute (the encoding's bytes); the carried state, JSON text
    entries, pruned = fold([("a", 1, 0), ("b", 2, 15)])
    value = summary.Summary(entries, pruned, 2, 3)
    binary = summary.pack(value)["entries_z"]
    assert isinstance(binary, bytes) and figures(summary.decode_entries(binary)) == figures(entries)
    text = summary.pack(value, text=True)["entries_z"]
    assert isinstance(text, str) and figures(summary.decode_entries(base64.b64decode(text))) == figures(entries)


def test_an_entry_read_without_its_latest_second_ends_at_its_latest_bucket_until_a_later_one_opens() -> None:
    # Given a key written in buckets 0, 10 and 20 (its latest write at second 25), read from an encoding made
    # before a key's latest second was kept
    written, _ = fold([("k", 3, 0), ("k", 4, 12), ("k", 5, 25)])
    entries = summary.decode_entries(without_latest_seconds(summary.encode_entries(written)))
    # Then the end of its latest bucket stands in for its latest second, its other figures as written
    assert figures(entries)["k"] == dataclasses.replace(figures(written)["k"], latest=T0 + 29)
    # A write in that bucket leaves it unknown (an earlier one there may have been later)
    count(entries, "k", 1, T0 + 27)
    assert figures(entries)["k"].latest == T0 + 29
    # A write in a later bucket is its latest second (every earlier write was in an earlier bucket), and
    # from then on its latest write is
    count(entries, "k", 1, T0 + 33)
    assert figures(entries)["k"].latest == T0 + 33
    count(entries, "k", 1, T0 + 35)
    assert figures(entries)["k"].latest == T0 + 35


def test_an_encoding_of_an_earlier_layout_is_refused() -> None:
    # A header without the current mark (an earlier layout began with a key's length), or no header
    for blob in (zlib.compress(b"[2,3,40,100]\nab"), zlib.compress(b'[["ab",3,40,100]]')):
        with pytest.raises(summary.EncodingRetired):
            summary.decode_entries(blob)


def test_a_summarys_count_returns_each_prune_and_adds_it_to_its_bound() -> None:
    # The form the pipeline uses (a summary with the whole budget): each write returns what it pruned
    counted = summary.Summary()
    counting = summary.Counting(2, BUCKET)
    for key, wcu, second in [("a", 50, 0), ("b", 40, 0), ("c", 30, 0), ("d", 20, 0)]:
        assert counted.count(key, wcu, T0 + second, counting) == 0
    assert counted.count("e", 10, T0 + 1, counting) == 30
    assert counted.pruned == 30
    entries, _ = fold([("a", 50, 0), ("b", 40, 0), ("c", 30, 0), ("d", 20, 0), ("e", 10, 1)], capacity=2)
    assert figures(counted.entries) == figures(entries)


# The documented bounds


def test_a_window_of_sixteen_buckets_keeps_every_bucket_of_a_key() -> None:
    # 160 s at 10 s buckets: all of them; a 17th bucket makes the lightest earlier one give way
    sixteen = [("k", 1 + n, n * BUCKET) for n in range(16)]
    assert len(figures(fold(sixteen)[0])["k"].series) == 16
    assert len(figures(fold([*sixteen, ("k", 1, 160)])[0])["k"].series) == 16


def test_the_longest_key_is_a_2048_byte_binary_key_in_base64() -> None:
    assert len(base64.b64encode(bytes(2048))) == summary.MAX_KEY_TEXT_BYTES


def test_the_largest_entry_is_the_longest_key_with_a_full_series() -> None:
    key = "k" * summary.MAX_KEY_TEXT_BYTES
    entries, _ = fold([(key, 1, n * BUCKET) for n in range(summary.MAX_SERIES_PAIRS + 3)])
    assert summary.entry_bytes(key, entries[key]) == summary.MAX_ENTRY_BYTES
    assert summary.encoded_bytes(entries) == summary.MAX_ENTRY_BYTES


def test_every_key_above_one_percent_of_its_window_is_kept() -> None:
    # The fewest keys a prune keeps in a whole budget is 100: its bound is W / 101
    assert summary.keep_floor(summary.MAX_SUMMARY_BYTES) == 100
    # Keys of the largest size: the whole budget holds a hundred and one more
    assert summary.MAX_SUMMARY_BYTES >= 101 * summary.MAX_ENTRY_BYTES


def test_the_estimate_covers_the_encoding_of_the_largest_numbers() -> None:
    # Counters of 15 digits (a window's write units), buckets an hour apart at the series' far end
    big = 10**14
    entries, _ = fold([("é" * 3, big, 0), ("é" * 3, big, 3600), ("a", big, 1)])
    raw = zlib.decompress(summary.encode_entries(entries))
    assert len(raw) <= summary.encoded_bytes(entries)
    # and the longest key (a length of four digits) in one bucket, where a series leaves the least to spare
    key = "k" * summary.MAX_KEY_TEXT_BYTES
    longest, _ = fold([(key, big, 0), (key, big, 1)])
    assert len(zlib.decompress(summary.encode_entries(longest))) <= summary.encoded_bytes(longest)
