"""Item sizes follow DynamoDB's documented capacity rules, type by type."""

from __future__ import annotations

import math

import pytest

from hotkeys.detector.domain.sizing import (
    SizingError,
    binary_size,
    image_size,
    image_sizes,
    larger_image_size,
    number_size,
    value_size,
    write_units,
)


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ({"S": "hello"}, 5),
        ({"S": "é"}, 2),  # UTF-8 bytes, not characters
        ({"S": "日本"}, 6),
        ({"S": ""}, 0),
        ({"N": "123"}, 3),  # 3 significant digits -> 2 bytes + 1
        ({"N": "1000"}, 2),  # trailing zeros trimmed
        ({"N": "-0.00120"}, 2),  # sign and leading/trailing zeros trimmed
        ({"N": "0"}, 2),
        ({"N": "1.5E+10"}, 2),
        ({"N": "12345678901234567890123456789012345678"}, 20),  # 38 digits
        ({"B": "aGVsbG8="}, 5),
        ({"B": ""}, 0),
        ({"BOOL": True}, 1),
        ({"NULL": True}, 1),
        ({"SS": ["a", "bc"]}, 3),
        ({"NS": ["1", "22"]}, 4),
        ({"BS": ["AA==", "AAA="]}, 3),
    ],
)
def test_scalar_and_set_sizes(value: dict, size: int) -> None:
    assert value_size(value) == size


def test_map_costs_three_bytes_plus_one_per_element_plus_names_and_values() -> None:
    # Given a map with one attribute "x" = "ab"
    value = {"M": {"x": {"S": "ab"}}}
    # Then 3 (overhead) + 1 (name) + 2 (value) + 1 (per element)
    assert value_size(value) == 7


def test_list_costs_three_bytes_plus_one_per_element() -> None:
    assert value_size({"L": [{"S": "ab"}, {"N": "1"}]}) == 3 + 2 + 2 + 2


def test_nested_structures_add_up() -> None:
    inner = {"M": {"a": {"L": [{"BOOL": False}, {"M": {}}]}}}
    # inner list: 3 + (1 + 3) + 2 = 9 ; map: 3 + (1 + 9) + 1 = 14
    assert value_size(inner) == 14


def test_image_size_counts_utf8_attribute_names() -> None:
    assert image_size({"pk": {"S": "k"}, "prix€": {"N": "10"}}) == (2 + 1) + (7 + 2)


def test_binary_size_of_base64() -> None:
    assert binary_size("AAAA") == 3
    assert binary_size("AAA=") == 2
    assert binary_size("AA==") == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"X": "1"},
        {"S": 5},
        {"N": "abc"},
        {"N": ""},
        {"B": "abc"},
        {"SS": []},
        {"S": "a", "N": "1"},
        "plain",
        None,
    ],
)
def test_invalid_values_raise_sizing_error(bad: object) -> None:
    with pytest.raises(SizingError):
        value_size(bad)


@pytest.mark.parametrize(("size", "units"), [(0, 1), (1, 1), (1024, 1), (1025, 2), (400 * 1024, 400)])
def test_write_units_round_up_per_kb(size: int, units: int) -> None:
    assert write_units(size) == units


def test_number_size_rejects_non_strings() -> None:
    with pytest.raises(SizingError):
        number_size(12)  # type: ignore[arg-type]


# The fast paths (list elements, top-level attributes, an update's two images) size as the rules do


@pytest.mark.parametrize(
    ("number", "size"),
    [("0", 2), ("7", 2), ("12", 2), ("123", 3), ("1000", 2), ("1001", 3), ("-123", 3), ("+12", 2), ("0.5", 2)],
)
def test_numbers_size_alike_everywhere(number: str, size: int) -> None:
    # Alone, as a list element and as an attribute (name "n": 1 byte)
    assert value_size({"N": number}) == size
    assert value_size({"L": [{"N": number}]}) == 3 + 1 + size
    assert image_size({"n": {"N": number}}) == 1 + size


@pytest.mark.parametrize(
    ("number", "size"),
    [("12.50", 3), ("100.001", 4), ("0.000", 2), ("-1.5", 2), ("1e3", 2), ("12E-2", 2), ("9.99E+5", 3)],
)
def test_decimals_and_exponents_count_their_significant_digits(number: str, size: int) -> None:
    assert value_size({"N": number}) == size
    assert image_size({"n": {"N": number}}) == 1 + size


@pytest.mark.parametrize("bad", ["-", "+", "e5", "E", "1.2.x", "--1", "0x10"])
def test_a_number_without_digits_is_not_a_number(bad: str) -> None:
    with pytest.raises(SizingError):
        value_size({"N": bad})
    with pytest.raises(SizingError):
        image_size({"n": {"N": bad}})


@pytest.mark.parametrize("bad", ["0e", "-0e", "0eNaN", "0e1e1", "1e", "1e+", "1e+-5", "1e5_", "64e_15", "1e\u0665"])
def test_an_exponent_is_a_signed_decimal_integer(bad: str) -> None:
    # (Decimal reads "1e5_" and "64e_15", float() does not: the TTL verdict reads a number as a float)
    with pytest.raises(SizingError):
        value_size({"N": bad})
    with pytest.raises(SizingError):
        image_size({"n": {"N": bad}})


@pytest.mark.parametrize(("number", "size"), [("0e5", 2), ("0E-5", 2), ("1e+5", 2), ("-12E-05", 2), ("1e0", 2)])
def test_signed_exponents_are_numbers(number: str, size: int) -> None:
    assert value_size({"N": number}) == size
    assert math.isfinite(float(number))  # what the TTL verdict does with it


def test_list_elements_of_every_kind() -> None:
    elements = [{"S": "ab"}, {"S": "é"}, {"N": "123"}, {"M": {"k": {"S": "v"}}}, {"BOOL": True}, {"L": []}]
    # 3 + one per element + 2 + 2 + 3 + (3 + 1 + 1 + 1) + 1 + 3
    assert value_size({"L": elements}) == 3 + 6 + 2 + 2 + 3 + 6 + 1 + 3


@pytest.mark.parametrize("bad", ["plain", {"S": "a", "N": "1"}, {}, {"S": 5}, {"N": 5}, {"M": []}, None])
def test_a_list_element_that_is_not_a_value_is_an_error(bad: object) -> None:
    with pytest.raises(SizingError):
        value_size({"L": [bad]})


def test_top_level_attributes_of_every_kind() -> None:
    image = {
        "s": {"S": "ab"},
        "u": {"S": "日"},
        "i": {"N": "123"},
        "d": {"N": "1.25"},
        "neg": {"N": "-5"},
        "m": {"M": {"k": {"S": "v"}}},
        "l": {"L": [{"S": "x"}]},
        "b": {"BOOL": False},
        "ss": {"SS": ["a", "bc"]},
    }
    names = 1 + 1 + 1 + 1 + 3 + 1 + 1 + 1 + 2
    values = 2 + 3 + 3 + 3 + 2 + (3 + 1 + 1 + 1) + (3 + 1 + 1) + 1 + 3
    assert image_size(image) == names + values


@pytest.mark.parametrize(
    "bad",
    [
        {"a": {"S": 1}},
        {"a": {"N": 5}},
        {"a": {"M": "x"}},
        {"a": {"L": "x"}},
        {"a": "x"},
        {"a": {"N": "1", "S": "x"}},
        [],
    ],
)
def test_an_image_with_a_bad_value_is_an_error(bad: object) -> None:
    with pytest.raises(SizingError):
        image_size(bad)


def test_an_updates_images_are_sized_each_on_their_own() -> None:
    old = {"pk": {"S": "k"}, "same": {"S": "x" * 10}, "changed": {"N": "1"}, "removed": {"L": [{"N": "12"}]}}
    new = {"pk": {"S": "k"}, "same": {"S": "x" * 10}, "changed": {"N": "123456"}, "added": {"M": {"a": {"S": "é"}}}}
    assert image_sizes(old, new) == (image_size(old), image_size(new)) == (3 + 14 + 9 + 13, 3 + 14 + 11 + 12)
    assert larger_image_size(old, new) == 3 + 14 + 11 + 12
    assert larger_image_size(new, old) == 3 + 14 + 11 + 12
    assert image_sizes(None, new) == (0, image_size(new))
    assert image_sizes(old, None) == (image_size(old), 0)
    # Only new attributes, only removed ones
    assert image_sizes({"pk": {"S": "k"}}, new) == (3, image_size(new))
    assert image_sizes(old, {"pk": {"S": "k"}}) == (image_size(old), 3)
    with pytest.raises(SizingError):
        image_sizes(["not a map"], new)


def test_names_are_counted_in_utf8_bytes_wherever_they_are() -> None:
    assert image_sizes({"prix€": {"N": "1"}}, {"prix€": {"N": "2"}, "ü": {"S": ""}}) == (7 + 2, 7 + 2 + 2)
    assert value_size({"M": {"€": {"S": "a"}}}) == 3 + 3 + 1 + 1


def test_sets_of_each_kind_are_checked_element_by_element() -> None:
    assert value_size({"SS": ["日", "a"]}) == 4
    assert value_size({"NS": ["100", "-1.5"]}) == 2 + 2
    with pytest.raises(SizingError):
        value_size({"SS": ["a", 1]})
    with pytest.raises(SizingError):
        value_size({"NS": "1"})
    with pytest.raises(SizingError):
        value_size({"BS": ["AAA"]})


# DynamoDB's numbers (Developer Guide, "Data types"): "up to 38 digits of precision", positive from
# 1E-130 to 9.9999999999999999999999999999999999999E+125, negative alike.
IN_RANGE = ["1" * 38, "9" * 38 + "0" * 10, "1E-130", "-1E-130", "9.9999999999999999999999999999999999999E+125", "1E+2"]
OUT_OF_RANGE = ["1" * 39, "1." + "1" * 38, "1E-131", "1E+126", "-1E+126", "1e400", "1.2.3", "0..0", "\u0663"]


@pytest.mark.parametrize("number", IN_RANGE)
def test_numbers_in_dynamodbs_range_are_sized_everywhere(number: str) -> None:
    size = number_size(number)
    assert value_size({"N": number}) == size
    assert image_size({"n": {"N": number}}) == size + 1
    assert image_size({"l": {"L": [{"N": number}]}}) == size + 5


@pytest.mark.parametrize("number", OUT_OF_RANGE)
def test_numbers_out_of_dynamodbs_range_are_refused_everywhere(number: str) -> None:
    for size in (
        lambda: number_size(number),
        lambda: image_size({"n": {"N": number}}),
        lambda: image_size({"l": {"L": [{"N": number}]}}),
    ):
        with pytest.raises(SizingError):
            size()
