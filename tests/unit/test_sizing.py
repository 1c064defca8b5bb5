"""Item sizes follow DynamoDB's documented capacity rules, type by type."""

from __future__ import annotations

import pytest

from hotkeys.detector.sizing import SizingError, binary_size, image_size, number_size, value_size, write_units


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
