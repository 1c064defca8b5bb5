"""The summary's byte bounds hold for keys of any UTF-8 make-up, multi-attribute index keys included.

``summary.MAX_ENTRY_BYTES`` and ``summary.MAX_SUMMARY_BYTES`` are stated in bytes of the encoding
(``summary.encode_entries``: keys as raw UTF-8). Hypothesis draws table partition keys and the
values of GSI partition keys of one to four attributes, each 1 to 2,048 bytes of mixed 1-, 2-, 3-
and 4-byte characters, writes them as Lambda-format stream records of a table with one to twenty
indexes, and folds them as the function does (``parse_change``, then ``ShardState.apply``).
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hotkeys.detector.consumer.state import ShardState, max_state_bytes
from hotkeys.detector.domain import summary
from hotkeys.detector.domain.indexes import bounded_key_text, specs_from_description
from hotkeys.detector.domain.records import parse_change
from hotkeys.emulator.events import ItemChange, stream_record
from tests import reference_gsi

MAX_KEY_BYTES = 2048  # DynamoDB's partition key value limit
ATTRIBUTES = tuple(f"a{number}" for number in range(8))
T0 = 1_796_083_200

# One strategy per UTF-8 length, surrogates excluded (not valid in UTF-8, nor in DynamoDB strings).
ONE_BYTE = st.characters(min_codepoint=0, max_codepoint=0x7F)
TWO_BYTES = st.characters(min_codepoint=0x80, max_codepoint=0x7FF)
THREE_BYTES = st.characters(min_codepoint=0x800, max_codepoint=0xFFFF, exclude_categories=["Cs"])
FOUR_BYTES = st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF)
patterns = st.one_of(
    st.lists(st.one_of(ONE_BYTE, TWO_BYTES, THREE_BYTES, FOUR_BYTES), min_size=1, max_size=24),
    st.lists(FOUR_BYTES, min_size=1, max_size=8),
)


@st.composite
def key_values(draw: st.DrawFn) -> str:
    """A string of 1 to 2,048 UTF-8 bytes (often exactly 2,048): a drawn run of characters repeated
    to the drawn size and cut between characters."""
    size = draw(st.one_of(st.just(MAX_KEY_BYTES), st.integers(min_value=1, max_value=MAX_KEY_BYTES)))
    text = "".join(draw(patterns))
    raw = (text * (size // len(text.encode("utf-8")) + 1)).encode("utf-8")[:size]
    value = raw.decode("utf-8", "ignore")
    return value or text[0]


@st.composite
def tables(draw: st.DrawFn) -> dict[str, Any]:
    """DescribeTable of a table keyed by ``pk`` with 1 to 20 GSIs, each partition key of 1 to 4 of
    the string attributes ``ATTRIBUTES``."""
    count = draw(st.one_of(st.just(20), st.integers(min_value=1, max_value=20)))
    indexes = [
        {
            "IndexName": f"index-{number:02d}",
            "KeySchema": [
                {"AttributeName": name, "KeyType": "HASH"}
                for name in draw(st.lists(st.sampled_from(ATTRIBUTES), min_size=1, max_size=4, unique=True))
            ],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
            "IndexStatus": "ACTIVE",
        }
        for number in range(count)
    ]
    return {
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": name, "AttributeType": "S"} for name in ("pk", *ATTRIBUTES)],
        "GlobalSecondaryIndexes": indexes,
    }


items = st.fixed_dictionaries({name: key_values().map(lambda value: {"S": value}) for name in ("pk", *ATTRIBUTES)})


@settings(max_examples=60, deadline=None)
@given(table=tables(), written=st.lists(items, min_size=1, max_size=30))
def test_entries_and_summaries_stay_within_the_stated_bytes(
    table: dict[str, Any], written: list[dict[str, Any]]
) -> None:
    # Given items of a table with 1 to 20 GSIs, written as INSERT records
    specs = specs_from_description({"Table": table})
    names = tuple(spec.name for spec in specs)
    state = ShardState(lambda_window=T0)
    for position, item in enumerate(written):
        record = stream_record(
            ItemChange(event_name="INSERT", keys={"pk": item["pk"]}, new_image=item, typed=True),
            table="orders",
            sequence=str(10**20 + position),
            event_time=T0 + position,
        )
        # When each is parsed with the table's indexes and folded as the function folds it
        change = parse_change(record, lambda _table, _keys: "pk", indexes=lambda _table: specs)
        state.apply(change, 60, summary.Counting(summary.DEFAULT_CAPACITY, 10), names)
        # Then every key text it counts is within MAX_KEY_TEXT_BYTES, each entry within MAX_ENTRY_BYTES
        assert len(change.index_writes) == len(specs)
        for key in (change.key, *(key for _name, key, _wcu in change.index_writes)):
            assert len(key.encode("utf-8")) <= summary.MAX_KEY_TEXT_BYTES
            assert summary.entry_bytes(key) <= summary.MAX_ENTRY_BYTES
        # and an index key is its values' text when that fits, else a prefix of it and a digest
        for spec, (_name, key, _wcu) in zip(specs, change.index_writes, strict=True):
            text = reference_gsi.partition_text(tuple(item[name]["S"] for name in spec.partition_key))
            if len(text.encode("utf-8")) <= summary.MAX_KEY_TEXT_BYTES:
                assert key == text
            else:
                head, mark, digest = key.rpartition("…#")
                assert mark and len(digest) == 32 and text.startswith(head)
    # and each summary's encoding (before compression) is within its share of MAX_SUMMARY_BYTES,
    # all of them within MAX_SUMMARY_BYTES, and the serialized state within max_state_bytes
    (segment,) = state.segments.values()
    blobs = [segment.summary.entries, *(index.entries for index in segment.indexes.values())]
    raw = [len(zlib.decompress(summary.encode_entries(entries))) for entries in blobs]
    assert max(raw) <= segment.budget == summary.allotment(1 + len(specs))
    assert sum(raw) <= summary.MAX_SUMMARY_BYTES
    assert len(json.dumps(state.to_json())) <= max_state_bytes()


@settings(max_examples=300, deadline=None)
@given(values=st.lists(key_values(), min_size=1, max_size=4))
def test_a_bounded_key_text_is_cut_by_bytes_between_characters(values: list[str]) -> None:
    # Given a multi-attribute key's text (as the index names it) of any length and characters
    text = reference_gsi.partition_text(tuple(values))
    # When it is bounded
    key = bounded_key_text(text)
    # Then it fits the key bound in UTF-8 bytes; it is the text itself when that fits, else a prefix
    # of whole characters and a digest of the whole text (different texts, different keys)
    assert len(key.encode("utf-8")) <= summary.MAX_KEY_TEXT_BYTES
    if len(text.encode("utf-8")) <= summary.MAX_KEY_TEXT_BYTES:
        assert key == text
    else:
        head, _mark, _digest = key.rpartition("…#")
        assert text.startswith(head) and len(head) >= 1
        assert bounded_key_text(text + "x") != key


def test_ascii_key_texts_over_the_bound_keep_their_first_thousand_characters() -> None:
    # An ASCII text over the bound is named as before the byte count (incidents and snapshots of a
    # window written across an upgrade still name the same key)
    text = "k" * 2000 + "j" * 2000
    key = bounded_key_text(text)
    assert key.startswith("k" * 1000 + "…#") and len(key) == 1000 + 2 + 32
