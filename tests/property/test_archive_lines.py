"""The archive's fast line writer (json's C encoder) gives exactly the text of the exact writer."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotkeys.detector.consumer.archive import _exact_line, archive_line
from hotkeys.detector.domain.records import Change, ChangeKind
from hotkeys.detector.domain.sizing import SizingError, image_sizes


def _a_dynamodb_number(text: str) -> bool:
    """DynamoDB's numbers (what a stream can carry): at most 38 significant digits, magnitude 1E-130 to
    under 1E+126, or zero."""
    number = Decimal(text)
    digits = "".join(map(str, number.as_tuple().digits)).strip("0")
    return not digits or (len(digits) <= 38 and -130 <= number.adjusted() <= 125)


number_texts = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40).map(str),
    st.decimals(allow_nan=False, allow_infinity=False).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["0", "-0", "1.50", "1E+2", "1e-7", "007", "0.1", "-0.0", "123456789012345678901234567890.5"]),
).filter(_a_dynamodb_number)
scalars = st.one_of(
    st.text(max_size=12).map(lambda s: {"S": s}),
    number_texts.map(lambda n: {"N": n}),
    st.booleans().map(lambda b: {"BOOL": b}),
    st.just({"NULL": True}),
    st.sampled_from(["", "AA==", "aGVsbG8="]).map(lambda b: {"B": b}),
    st.lists(st.text(max_size=6), min_size=1, max_size=3, unique=True).map(lambda v: {"SS": v}),
    st.lists(number_texts, min_size=1, max_size=3, unique=True).map(lambda v: {"NS": v}),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda v: {"L": v}),
        st.dictionaries(st.text(min_size=1, max_size=6), inner, max_size=3).map(lambda v: {"M": v}),
    ),
    max_leaves=10,
)


def usable(image: dict[str, Any]) -> bool:
    try:
        json.dumps(image)
        for text in _numbers(image):
            Decimal(text)
    except Exception:
        return False
    return True


def _numbers(value: Any) -> list[str]:
    if isinstance(value, dict):
        if "N" in value and len(value) == 1:
            return [value["N"]]
        if "NS" in value and len(value) == 1:
            return list(value["NS"])
        return [n for item in value.values() for n in _numbers(item)]
    if isinstance(value, list):
        return [n for item in value for n in _numbers(item)]
    return []


@settings(max_examples=400, deadline=None)
@given(
    image=st.dictionaries(st.text(min_size=1, max_size=8), values, max_size=6),
    key=st.one_of(st.text(min_size=1, max_size=8).map(lambda s: {"S": s}), number_texts.map(lambda n: {"N": n})),
)
def test_the_fast_line_is_the_exact_line(image: dict[str, Any], key: dict[str, str]) -> None:
    record = {"eventID": "e1", "dynamodb": {"Keys": {"pk": key}, "OldImage": {"pk": key, **image}}}
    change = Change("t", "k", 1_796_083_200, 1, 0, ChangeKind.TTL_DELETE)
    for ttl in (None, next(iter(image), None)):
        try:
            expected = _exact_line(change, record, ttl)
        except ValueError:
            # A number with no exact JSON form: both writers refuse it
            try:
                archive_line(change, record, ttl)
            except ValueError:
                continue
            raise AssertionError("the fast writer accepted what the exact writer refuses") from None
        assert archive_line(change, record, ttl) == expected


defects = st.sampled_from(
    [
        {"Q": "1"},
        {"S": 5},
        {"N": "twelve"},
        {"N": "1_000"},
        {"N": " 1"},
        {"N": ""},
        {"N": 7},
        {"B": "%%%"},
        {"B": 12},
        {"SS": []},
        {"SS": [1]},
        {"NS": ["x"]},
        {"BS": ["AA="]},
        {"M": []},
        {"L": {}},
        {"S": "a", "N": "1"},
        {},
        "not a map",
        ["a", "list"],
    ]
)
maybe_defective = st.recursive(
    st.one_of(scalars, defects),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda v: {"L": v}),
        st.dictionaries(st.text(min_size=1, max_size=6), inner, max_size=3).map(lambda v: {"M": v}),
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    old=st.one_of(st.dictionaries(st.text(min_size=1, max_size=6), maybe_defective, max_size=4), defects),
    new=st.one_of(st.none(), st.dictionaries(st.text(max_size=4), maybe_defective, max_size=2)),
)
def test_the_archive_refuses_every_image_the_size_rules_refuse(old: Any, new: Any) -> None:
    # Given a TTL deletion whose images may hold a defect anywhere (with the archive on, its line is
    # the only validation its images get: parse_change skips the size walk of a TTL deletion)
    stream: dict[str, Any] = {"Keys": {"pk": {"S": "k"}}, "OldImage": old}
    if new is not None:
        stream["NewImage"] = new
    record = {"eventID": "e1", "dynamodb": stream}
    change = Change("t", "k", 1_796_083_200, 1, 0, ChangeKind.TTL_DELETE)
    try:
        image_sizes(old, new)
    except SizingError:
        refused = True
    else:
        refused = False
    # When the archive writes its line
    if refused:
        # Then a record the size rules refuse is refused by the archive as well
        with pytest.raises(ValueError):
            archive_line(change, record, "expireAt")
