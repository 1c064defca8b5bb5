"""The carried state stays under Lambda's 1 MB per shard, whatever the keys look like.

"Your state can be a maximum of 1 MB per shard. If it exceeds that size, Lambda terminates
the window early." The state is measured as the runtime sends it: ``json.dumps`` with its
defaults (non-ASCII escaped, as the Lambda Python runtime serializes a response).
"""

from __future__ import annotations

import base64
import json
import random
import zlib

import pytest

from bench.stubs import NullStats
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.pipeline import BatchOutcome, Ports, _ShardInvocation
from hotkeys.detector.consumer.seen import HORIZON_SECONDS, MAX_SEEN, SeenChanges
from hotkeys.detector.consumer.state import (
    LAMBDA_STATE_LIMIT_BYTES,
    MAX_COUNTED_INDEXES,
    MAX_INDEX_NAME,
    MAX_RANGES,
    Segment,
    ShardState,
    mark_of,
    max_state_bytes,
)
from hotkeys.detector.domain import summary
from hotkeys.detector.domain.indexes import IndexSpec, index_key_text
from hotkeys.detector.domain.records import Change, ChangeKind
from tests.unit.test_summary import worst_case_keys

T0 = 1_796_083_200
LONGEST_SEQUENCE = 10**39  # 40 digits, the most DynamoDB Streams issues
COUNTING = summary.Counting(summary.DEFAULT_CAPACITY, alert_min_span_seconds=10)


INDEX_NAMES = tuple(f"{number:02d}".ljust(MAX_INDEX_NAME, "i") for number in range(MAX_COUNTED_INDEXES))


def multi_attribute_index_keys(count: int) -> list[str]:
    """Index key texts of a GSI whose partition key has four string attributes, each 2,048 bytes of
    pseudo-random 4-byte characters (all of the supplementary planes: they compress least), as
    ``indexes.index_key_text`` makes them (a JSON list of 8 KB, cut to the key bound)."""
    rng = random.Random("multi-attribute")
    names = ("a", "b", "c", "d")
    spec = IndexSpec("by-abcd", names, types=dict.fromkeys(names, "S"))
    return [
        index_key_text(
            spec, {name: {"S": "".join(chr(rng.randrange(0x10000, 0x110000)) for _ in range(512))} for name in names}
        )
        for _ in range(count)
    ]


def fill(
    keys: list[str],
    invocations: int,
    indexes: tuple[str, ...] = (),
    items: int = 0,
    index_keys: list[str] | None = None,
    table: str = "t" * 255,
    first_sequence: int = LONGEST_SEQUENCE,
    state: ShardState | None = None,
) -> ShardState:
    """Every key written (a few heavy ones), spread over ``invocations`` invocations (one range each);
    with ``indexes``, every write also updates each index under a key of its own (of the same kind,
    or made from ``index_keys``, one per key); with ``items``, each key is written ``items`` times
    more, under different 1 KB sort keys; into ``state`` (another table's, say) if given."""
    state = state if state is not None else ShardState(lambda_window=T0)
    sequence = first_sequence
    per_invocation = max(1, len(keys) // invocations)
    for index, key in enumerate(keys):
        if index % per_invocation == 0:
            for segment in state.segments.values():
                segment.range_open = False  # a new invocation opens a new range
        weight = 400 if index % 9 == 0 else 1
        sequence += 1
        index_key = key if index_keys is None else index_keys[index]
        # Two ASCII digits in place of the first two characters: a key of its own per index, of the same size
        index_writes = tuple((name, f"{number:02d}" + index_key[2:], weight) for number, name in enumerate(indexes))
        change = Change(table, key, T0 + 1, sequence, weight, ChangeKind.WRITE, index_writes=index_writes)
        state.apply(change, 60, COUNTING, indexes)
        for item in range(items):
            sequence += 1
            sort_key = ("S", f"{item:04d}" + key[:1020])
            state.apply(Change(table, key, T0 + 1, sequence, 10**9, ChangeKind.WRITE, sort_key=sort_key), 60, COUNTING)
        state.remember_handled(mark_of("t", f"partition_limit#{key}"), T0)  # capped at MAX_MARKS
    state.sealed.clear()  # sealed segments are flushed before the state is returned
    return state


def summaries_of(segment: Segment) -> list[dict[str, summary.Entry]]:
    return [segment.summary.entries, *(index.entries for index in segment.indexes.values())]


def assert_within_the_byte_budget(segment: Segment) -> None:
    """The stated bounds, in bytes: every entry within MAX_ENTRY_BYTES, each summary's encoding
    (before compression) within its allotment, all of them within MAX_SUMMARY_BYTES."""
    for entries in summaries_of(segment):
        assert max(summary.entry_bytes(key) for key in entries) <= summary.MAX_ENTRY_BYTES
        assert summary.encoded_bytes(entries) <= segment.budget
        assert len(zlib.decompress(summary.encode_entries(entries))) <= segment.budget
    assert sum(len(zlib.decompress(summary.encode_entries(e))) for e in summaries_of(segment)) <= (
        summary.MAX_SUMMARY_BYTES
    )


@pytest.mark.parametrize("kind", ["binary", "cjk", "emoji", "control"])
def test_the_state_stays_under_lambdas_limit_with_the_largest_keys(kind: str) -> None:
    # Given 2,000 distinct 2,048-byte keys of one type over more invocations than a segment keeps ranges
    state = fill(worst_case_keys(kind, 2000), invocations=MAX_RANGES + 40)
    # When the state is serialized as the runtime would
    size = len(json.dumps(state.to_json()))
    # Then it is within the documented bound, far under 1 MB, and it round-trips
    assert size <= max_state_bytes() < LAMBDA_STATE_LIMIT_BYTES
    (segment,) = state.segments.values()
    assert_within_the_byte_budget(segment)
    assert len(segment.ranges) <= MAX_RANGES
    again = ShardState.from_json(json.loads(json.dumps(state.to_json())))
    assert again.segments[("t" * 255, T0)].summary == segment.summary
    assert again.segments[("t" * 255, T0)].ranges == segment.ranges


def test_the_bound_is_not_vacuous() -> None:
    # The keys really are 2,048 bytes (binary: 2,732 characters of base64), and the summary is near its budget
    assert len(base64.b64decode(worst_case_keys("binary", 1)[0])) == 2048
    state = fill(worst_case_keys("binary", 2000), invocations=10)
    (segment,) = state.segments.values()
    assert segment.summary.used_bytes > summary.MAX_SUMMARY_BYTES // 2
    assert len(json.dumps(state.to_json())) > 300_000


def test_a_full_range_list_seals_the_segment_and_starts_the_next_generation() -> None:
    # Given more invocations than one segment keeps ranges for
    state = fill([f"k{i}" for i in range(MAX_RANGES + 5)], invocations=MAX_RANGES + 5)
    # Then the first segment was sealed (to be flushed) and a second generation carries on under its own name
    assert [s.generation for s in state.segments.values()] == [1]
    assert next(iter(state.segments.values())).origin == f"{T0:012d}.1"


@pytest.mark.parametrize("kind", ["binary", "emoji"])
def test_the_state_stays_under_the_limit_with_the_most_indexes_and_the_largest_keys(kind: str) -> None:
    # Given a table with the most counted indexes (longest names), every write updating all of them
    # under 2,048-byte keys of their own
    state = fill(worst_case_keys(kind, 600), invocations=MAX_RANGES + 40, indexes=INDEX_NAMES)
    (segment,) = state.segments.values()
    # Then the table's summary and the indexes' share one byte budget
    assert len(segment.indexes) == MAX_COUNTED_INDEXES
    used = segment.summary.used_bytes + sum(tally.used_bytes for tally in segment.indexes.values())
    assert used <= summary.MAX_SUMMARY_BYTES
    assert_within_the_byte_budget(segment)
    assert all(tally.entries and tally.pruned for tally in segment.indexes.values())  # each one really pruned
    # and the serialized state is within the bound, far under 1 MB, and round-trips
    size = len(json.dumps(state.to_json()))
    assert size <= max_state_bytes() < LAMBDA_STATE_LIMIT_BYTES
    again = ShardState.from_json(json.loads(json.dumps(state.to_json())))
    restored = again.segments[("t" * 255, T0)]
    assert {name: tally.entries for name, tally in restored.indexes.items()} == {
        name: tally.entries for name, tally in segment.indexes.items()
    }


def test_an_index_summary_keeps_the_guarantee_of_its_floor_with_the_largest_keys() -> None:
    # Given one index beside the table and more 2,048-byte keys than half its allotment holds
    keys = worst_case_keys("binary", 400)
    state = fill(keys, invocations=10, indexes=INDEX_NAMES[:1])
    (segment,) = state.segments.values()
    tally = segment.indexes[INDEX_NAMES[0]]
    # Then each summary prunes at most W / (floor + 1), the floor its allotment allows (50 with one index)
    floor = summary.keep_floor(summary.allotment(2))
    assert floor == 50
    assert 0 < tally.pruned <= tally.wcu / (floor + 1) and 0 < segment.summary.pruned <= segment.summary.wcu / (
        floor + 1
    )
    # and every key heavier than that (fill's heavy keys: 400 units each) is still tracked
    heavy = [key for index, key in enumerate(keys) if index % 9 == 0]
    assert all(key in segment.summary.entries for key in heavy)
    assert all("00" + key[2:] in tally.entries for key in heavy)


def test_item_figures_of_every_tracked_key_stay_within_the_bound() -> None:
    # Given a table with a sort key, 2,000 keys of 2,048 bytes, each written under five 1 KB sort keys
    # with huge weights (the longest counters)
    state = fill(worst_case_keys("emoji", 2000), invocations=MAX_RANGES + 40, items=5)
    (segment,) = state.segments.values()
    assert segment.has_sort_key and segment.items
    # Then the state, item figures included, is within the bound and round-trips
    size = len(json.dumps(state.to_json()))
    assert size <= max_state_bytes() < LAMBDA_STATE_LIMIT_BYTES
    again = ShardState.from_json(json.loads(json.dumps(state.to_json())))
    assert again.segments[("t" * 255, T0)].items == segment.items


def test_multi_attribute_index_keys_of_4_byte_characters_stay_within_the_stated_bytes() -> None:
    # Given a table with the most counted indexes, every write updating each of them under a key of a
    # four-attribute GSI partition key, each attribute 2,048 bytes of 4-byte characters (8 KB of text)
    index_keys = multi_attribute_index_keys(600)
    state = fill(worst_case_keys("emoji", 600), invocations=MAX_RANGES + 40, indexes=INDEX_NAMES, index_keys=index_keys)
    (segment,) = state.segments.values()
    assert all(tally.pruned for tally in segment.indexes.values())  # each index's summary really pruned
    # Then every index key text is within the key bound in UTF-8 bytes, and the summaries within the
    # byte budget they state (as it is counted: each entry, each summary before compression, their sum)
    assert max(len(key.encode("utf-8")) for key in index_keys) <= summary.MAX_KEY_TEXT_BYTES
    assert_within_the_byte_budget(segment)
    # and the serialized state is within the bound max_state_bytes states, far under 1 MB
    size = len(json.dumps(state.to_json()))
    assert size <= max_state_bytes() < LAMBDA_STATE_LIMIT_BYTES


# A Kinesis shard: sequence numbers of up to 129 digits, its memory of recent changes full, several tables.
LONGEST_KINESIS_SEQUENCE = 10**128


def full_memory() -> SeenChanges:
    seen = SeenChanges()
    for index in range(MAX_SEEN):
        seen.add(T0 + index % (HORIZON_SECONDS + 1), index.to_bytes(6, "big"), index)
    return seen


def test_a_kinesis_shards_state_of_one_table_stays_within_the_bound() -> None:
    state = fill(worst_case_keys("binary", 2000), MAX_RANGES + 40, first_sequence=LONGEST_KINESIS_SEQUENCE)
    state.seen = full_memory()
    assert len(json.dumps(state.to_json())) <= max_state_bytes() < LAMBDA_STATE_LIMIT_BYTES


def test_a_kinesis_shard_carrying_several_tables_seals_its_largest_segments_to_stay_within_the_bound() -> None:
    # Given a shard whose three tables each wrote 2,000 of the largest keys, and its memory full
    state = ShardState(lambda_window=T0)
    tables = [letter * 255 for letter in "abc"]
    for number, table in enumerate(tables):
        first = LONGEST_KINESIS_SEQUENCE + number * 10**100
        fill(worst_case_keys("binary", 2000), MAX_RANGES + 40, table=table, first_sequence=first, state=state)
    state.seen = full_memory()
    assert len(json.dumps(state.to_json())) > LAMBDA_STATE_LIMIT_BYTES  # (unfitted, Lambda would end the window)
    generations = {key: segment.generation for key, segment in state.segments.items()}
    stats = NullStats()
    shard = _ShardInvocation(
        "shardId-000000000000", state, Settings(stats_table_name="s"), Ports(stats, lambda t, k: "pk"), BatchOutcome()
    )
    # When the state to carry is made
    carried = shard.fitted_state()
    # Then it is within the bound: the largest segments were written as they were and left the state, and a
    # table's next record opens its next generation
    assert len(json.dumps(carried)) <= max_state_bytes()
    sealed = [key for key in ((table, T0) for table in tables) if key not in state.segments]
    assert sealed and stats.calls == len(sealed) and state.segments
    change = Change(sealed[0][0], "k", T0 + 2, LONGEST_KINESIS_SEQUENCE * 9, 1, ChangeKind.WRITE)
    assert state.apply(change, 60, COUNTING).generation == generations[sealed[0]] + 1
