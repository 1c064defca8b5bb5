"""The carried state stays under Lambda's 1 MB per shard, whatever the keys look like.

"Your state can be a maximum of 1 MB per shard. If it exceeds that size, Lambda terminates
the window early." The state is measured as the runtime sends it: ``json.dumps`` with its
defaults (non-ASCII escaped, as the Lambda Python runtime serializes a response).
"""

from __future__ import annotations

import base64
import json

import pytest

from hotkeys.detector import summary
from hotkeys.detector.records import Change, Kind
from hotkeys.detector.state import LAMBDA_STATE_LIMIT_BYTES, MAX_RANGES, ShardState, mark_of, max_state_bytes
from tests.unit.test_summary import worst_case_keys

T0 = 1_796_083_200
LONGEST_SEQUENCE = 10**39  # 40 digits, the most DynamoDB Streams issues


def fill(keys: list[str], invocations: int) -> ShardState:
    """Every key written (a few heavy ones), spread over ``invocations`` invocations (one range each)."""
    state = ShardState(lambda_window=T0)
    sequence = LONGEST_SEQUENCE
    per_invocation = max(1, len(keys) // invocations)
    for index, key in enumerate(keys):
        if index % per_invocation == 0:
            for segment in state.segments.values():
                segment.range_open = False  # a new invocation opens a new range
        weight = 400 if index % 9 == 0 else 1
        sequence += 1
        state.apply(Change("t" * 255, key, T0 + 1, sequence, weight, Kind.WRITE), 60, summary.DEFAULT_CAPACITY)
        state.notified[mark_of("t", f"partition_limit#{key}")] = T0
    state.sealed.clear()  # sealed segments are flushed before the state is returned
    return state


@pytest.mark.parametrize("kind", ["binary", "cjk", "emoji", "control"])
def test_the_state_stays_under_lambdas_limit_with_the_largest_keys(kind: str) -> None:
    # Given 2,000 distinct 2,048-byte keys of one type over more invocations than a segment keeps ranges
    state = fill(worst_case_keys(kind, 2000), invocations=MAX_RANGES + 40)
    # When the state is serialized as the runtime would
    size = len(json.dumps(state.to_json()))
    # Then it is within the documented bound, far under 1 MB, and it round-trips
    assert size <= max_state_bytes() < LAMBDA_STATE_LIMIT_BYTES
    (segment,) = state.segments.values()
    assert len(segment.ranges) <= MAX_RANGES
    again = ShardState.from_json(json.loads(json.dumps(state.to_json())))
    assert again.segments[("t" * 255, T0)].entries == segment.entries
    assert again.segments[("t" * 255, T0)].ranges == segment.ranges


def test_the_bound_is_not_vacuous() -> None:
    # The keys really are 2,048 bytes (binary: 2,732 characters of base64), and the summary is near its budget
    assert len(base64.b64decode(worst_case_keys("binary", 1)[0])) == 2048
    state = fill(worst_case_keys("binary", 2000), invocations=10)
    (segment,) = state.segments.values()
    assert segment.entry_bytes > summary.MAX_SUMMARY_BYTES // 2
    assert len(json.dumps(state.to_json())) > 300_000


def test_a_full_range_list_seals_the_segment_and_starts_the_next_generation() -> None:
    # Given more invocations than one segment keeps ranges for
    state = fill([f"k{i}" for i in range(MAX_RANGES + 5)], invocations=MAX_RANGES + 5)
    # Then the first segment was sealed (to be flushed) and a second generation carries on under its own name
    assert [s.generation for s in state.segments.values()] == [1]
    assert next(iter(state.segments.values())).origin == f"{T0:012d}.1"
