"""Event files read and written as streams: the same records as a whole-file parse, in any layout."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotkeys.emulator.io import BadEventFile, EventReader, EventWriter, NotAnEvent, read_event_file

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
OTHER_FIELDS = st.dictionaries(st.text(max_size=10).filter(lambda name: name != "Records"), JSON_VALUES, max_size=4)


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(JSON_VALUES, max_size=12),
    fields=OTHER_FIELDS,
    records_at=st.integers(min_value=0, max_value=4),
    indent=st.sampled_from([None, 0, 1, 4]),
    compact=st.booleans(),
    compressed=st.booleans(),
    chunk=st.integers(min_value=1, max_value=64),
)
def test_the_reader_yields_what_a_whole_file_parse_gives_in_any_layout(
    tmp_path_factory: pytest.TempPathFactory,
    records: list[Any],
    fields: dict[str, Any],
    records_at: int,
    indent: int | None,
    compact: bool,
    compressed: bool,
    chunk: int,
) -> None:
    # Given an event with Records anywhere among its fields, in any whitespace layout, maybe gzip'd
    members = list(fields.items())
    members.insert(min(records_at, len(members)), ("Records", records))
    text = json.dumps(dict(members), indent=indent, separators=(",", ":") if compact else None)
    path = tmp_path_factory.mktemp("e") / ("event.json.gz" if compressed else "event.json")
    path.write_bytes(gzip.compress(text.encode()) if compressed else text.encode())
    # When it is read in chunks as small as one character
    reader = EventReader(path, chunk_characters=chunk)
    streamed = list(reader.records())
    # Then the records and the other fields are exactly the whole-file parse's
    whole = read_event_file(path)
    assert streamed == whole["Records"]
    assert reader.fields == {name: value for name, value in whole.items() if name != "Records"}
    assert reader.saw_records


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[1, 2]", NotAnEvent),
        ('"text"', NotAnEvent),
        ('{"Records": [{"a": 1}, ', BadEventFile),
        ('{"Records": [1] "x": 2}', BadEventFile),
        ('{"Records": []} trailing', BadEventFile),
        ("", BadEventFile),
    ],
)
def test_what_is_not_an_event_is_refused(tmp_path: Path, text: str, error: type[Exception]) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(error):
        list(EventReader(path, chunk_characters=3).records())


def test_an_error_says_where_in_the_file_it_is(tmp_path: Path) -> None:
    # Given a file cut inside the third record's string, read in chunks smaller than a record
    path = tmp_path / "cut.json"
    text = json.dumps({"Records": [{"n": i, "pad": "x" * 50} for i in range(3)]})[:-30]
    path.write_text(text)
    # Then the error names the position from the file's start (where that string starts) and the length
    with pytest.raises(BadEventFile) as raised:
        list(EventReader(path, chunk_characters=16).records())
    start = text.rindex('"x')
    assert str(raised.value) == f"Unterminated string starting at character {start} of {len(text)} (counted from 0)"


def test_an_event_without_a_records_list_says_so(tmp_path: Path) -> None:
    path = tmp_path / "no-records.json"
    path.write_text('{"Records": {"not": "a list"}, "shardId": "s"}')
    reader = EventReader(path)
    assert list(reader.records()) == []
    assert not reader.saw_records and reader.fields["Records"] == {"not": "a list"}


@pytest.mark.parametrize("name", ["out.json", "out.json.gz"])
def test_the_writer_streams_an_event_that_reads_back_and_is_reproducible(tmp_path: Path, name: str) -> None:
    records = [{"eventID": str(i), "dynamodb": {"SequenceNumber": str(i)}} for i in range(5)]

    def write(path: Path) -> bytes:
        with EventWriter(path, "shardId-00000-generated") as writer:
            for record in records:
                writer.write(record)
        assert writer.records == len(records)
        return path.read_bytes()

    first, second = write(tmp_path / name), write(tmp_path / f"again-{name}")
    assert first == second  # gzip with mtime 0: the same records give the same bytes
    assert read_event_file(tmp_path / name) == {"shardId": "shardId-00000-generated", "Records": records}


ITEM_VALUES = st.recursive(
    st.text(max_size=20)
    | st.booleans()
    | st.integers(min_value=-(10**37), max_value=10**37)
    | st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-(10**9), max_value=10**9)
    | st.binary(max_size=8)
    | st.frozensets(st.text(max_size=5), min_size=1, max_size=4).map(set)
    | st.none(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(item=st.dictionaries(st.text(max_size=6), ITEM_VALUES, max_size=6))
def test_the_fast_item_conversion_is_boto3s(item: dict[str, Any]) -> None:
    from boto3.dynamodb.types import TypeSerializer

    from hotkeys.emulator.events import _as_stream_json, to_dynamodb_json

    serializer = TypeSerializer()
    assert to_dynamodb_json(item) == {name: _as_stream_json(serializer.serialize(v)) for name, v in item.items()}
