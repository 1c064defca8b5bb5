"""`hotkeys generate --attribute NAME=N`: items carry a grouping attribute, a property of their key.

The value is NAME#1..NAME#N, Zipf-skewed over the keys (1 the most common), derived from the key by
hashing: the same at every write of a key, and drawing nothing from the workload's random stream, so a
workload without --attribute is the one it always was (events/'s samples are rebuilt byte for byte by
tests/integration/test_samples.py) and one with it differs only in those attributes and the padding
that keeps each item at its size.
"""

from __future__ import annotations

from collections import Counter

import pytest

from hotkeys.detector.domain.sizing import image_size
from hotkeys.emulator.generate import (
    ITEM_ATTRIBUTES,
    MAX_CARDINALITY,
    GenerateError,
    Workload,
    attribute_value,
    parse_attribute,
)
from tests.generated import BASE, base_with, images_of, records_of

ATTRIBUTES = (("region", 4), ("customer", 1000))


def _harmonic(count: int) -> float:
    return sum(1 / rank for rank in range(1, count + 1))


def test_every_image_carries_each_attribute_and_its_value_is_stable_per_key() -> None:
    # Given a workload whose items carry a region (4 values) and a customer (1,000)
    records = records_of(base_with(attributes=ATTRIBUTES))
    assert {record["eventName"] for record in records} == {"INSERT", "MODIFY", "REMOVE"}
    assert any("userIdentity" in record for record in records)  # TTL deletions among them
    values: dict[tuple[str, str], set[str]] = {}
    for record in records:
        for image in images_of(record):
            # Then every image, old and new, of every kind of write (the hot key's too) has both, as Strings
            for name, _cardinality in ATTRIBUTES:
                values.setdefault((image["pk"]["S"], name), set()).add(image[name]["S"])
    # and a key's value is the same at each of its writes: the one its hash gives
    assert all(len(found) == 1 for found in values.values())
    for (key, name), (value,) in values.items():
        assert value == attribute_value(key, name, dict(ATTRIBUTES)[name], BASE.seed)
    assert ("event#42", "region") in values


def test_the_value_is_a_hash_of_the_key_the_name_and_the_seed() -> None:
    keys = [f"user#{index:07d}" for index in range(2000)]

    def mapping(name: str, seed: int) -> list[str]:
        return [attribute_value(key, name, 1000, seed).split("#")[1] for key in keys]

    assert mapping("customer", 1) == mapping("customer", 1)
    assert mapping("customer", 1) != mapping("customer", 2)
    assert mapping("customer", 1) != mapping("account", 1)


@pytest.mark.parametrize(("cardinality", "keys", "tolerance"), [(4, 20_000, 0.015), (1000, 50_000, 0.01)])
def test_values_are_zipf_skewed_over_keys(cardinality: int, keys: int, tolerance: float) -> None:
    # Given many keys' values
    counts = Counter(attribute_value(f"user#{index:07d}", "tier", cardinality, 1) for index in range(keys))
    share = {int(value.split("#")[1]): count / keys for value, count in counts.items()}
    # Then value 1 is the most common, held by about 1/H_N of the keys (Zipf, exponent 1)
    assert max(share, key=share.__getitem__) == 1
    assert share[1] == pytest.approx(1 / _harmonic(cardinality), abs=tolerance)
    # and the next values by about 1/(n H_N)
    for rank in (2, 3, 4):
        assert share[rank] == pytest.approx(1 / (rank * _harmonic(cardinality)), abs=tolerance)


@pytest.mark.parametrize("cardinality", [1, 2, 7, 50])
def test_values_stay_within_the_cardinality_and_all_appear(cardinality: int) -> None:
    values = {attribute_value(f"user#{index:07d}", "tier", cardinality, 3) for index in range(20_000)}
    assert values == {f"tier#{rank}" for rank in range(1, cardinality + 1)}


def test_the_largest_cardinality_is_accepted_and_respected() -> None:
    assert parse_attribute(f"customer={MAX_CARDINALITY}") == ("customer", MAX_CARDINALITY)
    ranks = [int(attribute_value(f"k{index}", "customer", MAX_CARDINALITY, 1).split("#")[1]) for index in range(5000)]
    assert min(ranks) >= 1 and max(ranks) <= MAX_CARDINALITY and len(set(ranks)) > 1000


def test_a_workload_with_attributes_draws_the_same_random_stream() -> None:
    # Given the same workload without and with attributes
    plain, carrying = records_of(BASE), records_of(base_with(attributes=ATTRIBUTES))
    assert len(plain) == len(carrying)
    # Then the records are the same but for the attributes, the padding and the sizes they change
    for before, after in zip(plain, carrying, strict=True):
        assert before["dynamodb"]["Keys"] == after["dynamodb"]["Keys"]
        for old, new in zip(images_of(before), images_of(after), strict=True):
            stripped = {name: value for name, value in new.items() if name not in dict(ATTRIBUTES)}
            assert {**stripped, "note": None} == {**old, "note": None}
        assert before["eventID"] == after["eventID"] and before["eventName"] == after["eventName"]


@pytest.mark.parametrize(
    "attributes",
    [ATTRIBUTES, (("région", 12),), (("c", 1_000_000), ("a-much-longer-attribute-name", 3))],
)
def test_items_keep_their_size(attributes: tuple[tuple[str, int], ...]) -> None:
    # Given items large enough to pad (median 2,000 bytes), without and with attributes
    plain, carrying = (
        records_of(base_with(item_bytes=2000)),
        records_of(base_with(item_bytes=2000, attributes=attributes)),
    )
    # Then each image, old and new, the hot key's included, has the same size by DynamoDB's rules
    sizes = [
        (image_size(old), image_size(new))
        for before, after in zip(plain, carrying, strict=True)
        for old, new in zip(images_of(before), images_of(after), strict=True)
    ]
    assert sizes and all(old == new for old, new in sizes)


def test_the_reserved_names_are_the_ones_generated_items_have() -> None:
    names = {name for record in records_of(BASE) for image in images_of(record) for name in image}
    assert names == ITEM_ATTRIBUTES


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("region", "--attribute must look like 'region=4' (NAME=CARDINALITY), got 'region'"),
        ("region=four", "--attribute must look like 'region=4'"),
        ("region=4.5", "--attribute must look like 'region=4'"),
        ("region=", "--attribute must look like 'region=4'"),
        ("=4", "--attribute '=4': the name is empty"),
        ("region=0", "--attribute 'region=0': the cardinality must be between 1 and 1,000,000"),
        ("region=-3", "--attribute 'region=-3': the cardinality must be between 1 and 1,000,000"),
        ("customer=1000001", "--attribute 'customer=1000001': the cardinality must be between 1 and 1,000,000"),
        ("status=4", "--attribute 'status=4': the items already have 'status'"),
        ("pk=2", "--attribute 'pk=2': the items already have 'pk'"),
        ("note=3", "--attribute 'note=3': the items already have 'note'"),
    ],
)
def test_bad_attributes_are_refused_in_one_line(text: str, message: str) -> None:
    with pytest.raises(GenerateError) as refused:
        parse_attribute(text)
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_a_name_given_twice_is_refused() -> None:
    with pytest.raises(GenerateError, match="--attribute 'region' is given more than once"):
        Workload(attributes=(("region", 4), ("region", 8))).validate()
    # and the workload checks what it is given directly too
    with pytest.raises(GenerateError, match="the cardinality must be between"):
        Workload(attributes=(("region", 0),)).validate()
