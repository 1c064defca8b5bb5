"""Windowing arithmetic and the carried state: properties over arbitrary inputs."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from hotkeys.detector.consumer.state import ShardState
from hotkeys.detector.domain.records import Change, ChangeKind
from hotkeys.detector.domain.summary import Counting
from hotkeys.detector.domain.windows import iso_utc, parse_iso_utc, window_start


@given(event_time=st.integers(min_value=0, max_value=4_102_444_800), seconds=st.integers(min_value=1, max_value=900))
def test_every_event_time_falls_in_exactly_one_epoch_aligned_window(event_time: int, seconds: int) -> None:
    start = window_start(event_time, seconds)
    assert start % seconds == 0
    assert start <= event_time < start + seconds
    assert window_start(start, seconds) == start == window_start(start + seconds - 1, seconds)


@given(epoch=st.integers(min_value=0, max_value=4_102_444_800))
def test_iso_round_trip(epoch: int) -> None:
    assert parse_iso_utc(iso_utc(epoch)) == epoch


changes = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=30),  # key
        st.integers(min_value=1, max_value=400),  # write units
        st.integers(min_value=0, max_value=5),  # seconds since the previous record
        st.booleans(),  # TTL deletion
    ),
    max_size=300,
)


@settings(max_examples=200, deadline=None)
@given(
    stream=changes,
    cuts=st.lists(st.integers(min_value=0, max_value=300), max_size=10),
    capacity=st.integers(min_value=1, max_value=20),
)
def test_state_carried_through_json_at_any_cut_points_equals_one_pass(stream: list, cuts: list, capacity: int) -> None:
    # Given a stream of changes, folded in one pass
    records, now = [], 1_796_083_200
    for sequence, (key, wcu, gap, ttl) in enumerate(stream):
        now += gap
        records.append(
            Change("t", f"k{key}", now, sequence, 0 if ttl else wcu, ChangeKind.TTL_DELETE if ttl else ChangeKind.WRITE)
        )
    whole = ShardState()
    for change in records:
        whole.apply(change, 60, Counting(capacity, alert_min_span_seconds=10))
    # When the same stream is folded in pieces, the state serialized to JSON and back between them
    pieces = ShardState()
    for index, change in enumerate(records):
        if index in cuts:
            pieces = ShardState.from_json(json.loads(json.dumps(pieces.to_json())))
        pieces.apply(change, 60, Counting(capacity, alert_min_span_seconds=10))

    # Then the states are identical (summary, bound, totals, high-water mark) but for the ranges, where
    # each piece (an invocation) has its own range and together they cover the same records
    def without_ranges(state: ShardState) -> dict:
        data = state.to_json()
        data["seg"] = [{k: v for k, v in segment.items() if k != "r"} for segment in data["seg"]]
        return data

    assert without_ranges(pieces) == without_ranges(whole)
    for key, segment in whole.segments.items():
        in_pieces = pieces.segments[key]
        covered = {change.sequence for change in records if in_pieces.covers(change.sequence)}
        assert covered == {change.sequence for change in records if segment.covers(change.sequence)}
        first = min(index for index, change in enumerate(records) if in_pieces.covers(change.sequence))
        assert len(in_pieces.ranges) == 1 + sum(
            1 for index in set(cuts) if first < index < len(records) and in_pieces.covers(records[index].sequence)
        )
