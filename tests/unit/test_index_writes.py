"""The index writes of one table write, rule by rule of the DynamoDB developer guide ("Global secondary
indexes", "Write capacity units"), with the entry sizes that decide their units at the 1 KB edges."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from hotkeys.detector.domain.indexes import (
    ALL,
    INCLUDE,
    KEYS_ONLY,
    IndexImageError,
    IndexSpec,
    bounded_key_text,
    in_index,
    index_key_text,
    index_writes,
    specs_from_description,
)
from hotkeys.detector.domain.summary import MAX_KEY_TEXT_BYTES

TYPES = {"pk": "S", "sk": "S", "status": "S", "region": "S", "day": "N"}


def spec(projection: str = ALL, included: tuple[str, ...] = (), key: tuple[str, ...] = ("status",)) -> IndexSpec:
    return IndexSpec(
        name="by-status",
        partition_key=key,
        projection=projection,
        included=frozenset(included),
        table_keys=("pk", "sk"),
        types=TYPES,
    )


def item(status: str | None = "PAID", **attributes: Any) -> dict[str, Any]:
    """An order's image: its keys (pk "o1", sk "v1": 8 bytes of names and values), its status if any,
    and strings of the given lengths (``note=100``) or the given values."""
    image: dict[str, Any] = {"pk": {"S": "o1"}, "sk": {"S": "v1"}}
    if status is not None:
        image["status"] = {"S": status}
    for name, value in attributes.items():
        image[name] = {"S": "x" * value} if isinstance(value, int) else value
    return image


def test_a_new_item_with_the_index_key_is_one_write_to_its_partition() -> None:
    # An ALL index holds the whole item: keys 8 bytes, "status" and "PAID" 10, "note" 4 and 1,002 bytes of
    # value: 1,024 bytes, one unit
    assert index_writes(spec(), None, item(note=1002)) == [("PAID", 1)]
    # One byte more is two units
    assert index_writes(spec(), None, item(note=1003)) == [("PAID", 2)]


def test_an_index_is_global_unless_described_as_local() -> None:
    assert not spec().local


def test_a_keys_only_entry_holds_the_keys_only() -> None:
    assert index_writes(spec(KEYS_ONLY), None, item(note=5000)) == [("PAID", 1)]


def test_an_include_entry_holds_the_keys_and_the_named_attributes() -> None:
    # 18 + "note" + 1,002 = 1,024 bytes; the unnamed "blob" is not in the entry
    assert index_writes(spec(INCLUDE, ("note",)), None, item(note=1002, blob=5000)) == [("PAID", 1)]
    assert index_writes(spec(INCLUDE, ("note",)), None, item(note=1003, blob=5000)) == [("PAID", 2)]


def test_an_item_without_the_index_key_costs_the_index_nothing() -> None:
    assert index_writes(spec(), None, item(status=None, note=10)) == []
    assert index_writes(spec(), item(status=None, note=10), item(status=None, note=20)) == []


def test_a_key_of_another_type_than_declared_puts_no_entry() -> None:
    wrong = item(status=None, note=10)
    wrong["status"] = {"N": "1"}
    assert not in_index(spec(), wrong)
    assert index_writes(spec(), None, wrong) == []
    # Undeclared, any scalar type is a key; a list is not
    free = IndexSpec("free", ("status",), table_keys=("pk", "sk"))
    assert in_index(free, wrong)
    wrong["status"] = {"L": [{"S": "PAID"}]}
    assert not in_index(free, wrong)
    wrong["status"] = {"S": "PAID", "N": "1"}
    assert not in_index(free, wrong)
    assert not in_index(free, None)


def test_changing_the_index_key_deletes_the_old_entry_and_puts_the_new() -> None:
    # Each write is sized by its own entry: the old one 1,025 bytes (2 units), the new one 1,023 (1)
    old, new = item("PAID", note=1003), item("SHIP", note=1001)
    assert index_writes(spec(), old, new) == [("PAID", 2), ("SHIP", 1)]


def test_changing_a_key_attribute_of_the_sort_key_moves_the_entry() -> None:
    ranged = IndexSpec("by-day", ("status",), sort_key=("day",), projection=KEYS_ONLY, table_keys=("pk",), types=TYPES)
    old, new = item(day={"N": "1"}), item(day={"N": "2"})
    assert index_writes(ranged, old, new) == [("PAID", 1), ("PAID", 1)]


def test_removing_the_index_key_deletes_the_entry_and_adding_it_puts_one() -> None:
    assert index_writes(spec(), item("PAID", note=1003), item(None, note=1003)) == [("PAID", 2)]
    assert index_writes(spec(), item(None, note=10), item("PAID", note=10)) == [("PAID", 1)]
    # A deleted item's entry is deleted
    assert index_writes(spec(), item("PAID", note=1003), None) == [("PAID", 2)]


def test_an_update_of_projected_attributes_is_one_write_of_the_larger_entry() -> None:
    # The entry grows from 1,022 to 1,032 bytes, or shrinks back: two units either way
    small, large = item(note=1000), item(note=1010)
    assert index_writes(spec(), small, large) == [("PAID", 2)]
    assert index_writes(spec(), large, small) == [("PAID", 2)]
    assert index_writes(spec(INCLUDE, ("note",)), small, large) == [("PAID", 2)]


def test_an_update_the_index_does_not_project_costs_it_nothing() -> None:
    assert index_writes(spec(KEYS_ONLY), item(note=10), item(note=20)) == []
    assert index_writes(spec(INCLUDE, ("other",)), item(note=10), item(note=20)) == []
    # An ALL index projects everything
    assert index_writes(spec(ALL), item(note=10), item(note=20)) == [("PAID", 1)]
    # and an unchanged item costs nothing
    assert index_writes(spec(ALL), item(note=10), item(note=10)) == []


def test_the_callers_image_sizes_size_an_all_entry() -> None:
    # The whole image's size, when the caller has it, is the ALL entry's size
    assert index_writes(spec(), None, item(note=10), new_size=1025) == [("PAID", 2)]
    assert index_writes(spec(), item(note=10), None, old_size=2049) == [("PAID", 3)]
    assert index_writes(spec(), item("A", note=10), item("B", note=10), 1025, 3073) == [("A", 2), ("B", 4)]
    assert index_writes(spec(), item(note=10), item(note=11), 1024, 1025) == [("PAID", 2)]
    assert index_writes(spec(), item(note=10), item(note=11), 1025, 1024) == [("PAID", 2)]


def test_a_multi_attribute_key_is_named_by_all_its_values() -> None:
    pair = spec(key=("status", "region"))
    assert index_writes(pair, None, item(region={"S": "eu"})) == [('["PAID","eu"]', 1)]
    # Without one of its attributes the item is not in the index
    assert index_writes(pair, None, item()) == []
    # Non-ASCII values are kept as they are
    assert index_key_text(pair, item("é", region={"S": "ü"})) == '["é","ü"]'


def test_a_key_value_that_is_not_text_is_a_malformed_image() -> None:
    bad = item(status=None)
    bad["status"] = {"S": 5}
    with pytest.raises(IndexImageError, match="by-status"):
        index_writes(spec(), None, bad)
    with pytest.raises(IndexImageError, match="unparsable"):
        index_writes(spec(), None, item(note={"N": "abc"}))


def test_long_key_texts_end_in_a_digest_within_the_bound() -> None:
    within = "k" * MAX_KEY_TEXT_BYTES
    assert bounded_key_text(within) == within
    longer = bounded_key_text("k" * (MAX_KEY_TEXT_BYTES + 1))
    assert longer.startswith("k" * 1000 + "…#") and len(longer) == 1000 + 2 + 32
    assert longer != bounded_key_text("k" * (MAX_KEY_TEXT_BYTES + 2))
    # Non-ASCII: counted in bytes, cut between characters
    wide = "é" * (MAX_KEY_TEXT_BYTES // 2)  # exactly the bound in UTF-8
    assert bounded_key_text(wide) == wide
    cut = bounded_key_text("€" * 1000)  # 3,000 bytes
    assert cut.startswith("€" * 898 + "…#")  # 2,694 bytes, the last whole character within 2,696
    assert len(cut.encode()) <= MAX_KEY_TEXT_BYTES
    # A character that ends exactly at the prefix's 2,696 bytes is kept
    assert bounded_key_text("ab" + "€" * 1000).startswith("ab" + "€" * 898 + "…#")
    # which fills the bound exactly: prefix, mark and a 32-digit digest
    assert len(bounded_key_text("ab" + "€" * 1000).encode()) == MAX_KEY_TEXT_BYTES
    assert cut.endswith(bounded_key_text("€" * 1000)[-32:])
    with pytest.raises(IndexImageError, match="surrogate"):
        bounded_key_text("\ud800" + "é")


def test_the_counted_indexes_are_read_from_describe_table(aws: None) -> None:
    # Given a table with two GSIs of different projections and an LSI, as DynamoDB describes it
    dynamodb = boto3.client("dynamodb")
    description = dynamodb.create_table(
        TableName="orders",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": name, "AttributeType": kind} for name, kind in TYPES.items() if name != "region"
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "z-by-status",
                "KeySchema": [
                    {"AttributeName": "status", "KeyType": "HASH"},
                    {"AttributeName": "day", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["note"]},
            },
            {
                "IndexName": "a-by-day",
                "KeySchema": [{"AttributeName": "day", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            },
        ],
        LocalSecondaryIndexes=[
            {
                "IndexName": "by-pk-status",
                "KeySchema": [
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "status", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )["TableDescription"]
    # Then the GSIs come first, by name, then the LSIs
    specs = specs_from_description(dynamodb.describe_table(TableName="orders"))
    assert [(s.name, s.local, s.projection) for s in specs] == [
        ("a-by-day", False, KEYS_ONLY),
        ("z-by-status", False, INCLUDE),
        ("by-pk-status", True, ALL),
    ]
    by_status = specs[1]
    assert (by_status.partition_key, by_status.sort_key, by_status.included) == (("status",), ("day",), {"note"})
    assert by_status.table_keys == ("pk", "sk") and by_status.types is not None and by_status.types["day"] == "N"
    # The table's own description serves as well; an index being deleted is not counted
    assert specs_from_description(description) == specs
    deleting = {
        **description,
        "GlobalSecondaryIndexes": [{**description["GlobalSecondaryIndexes"][0], "IndexStatus": "DELETING"}],
    }
    assert [s.name for s in specs_from_description(deleting)] == ["by-pk-status"]


def test_an_index_not_counted_is_skipped_and_the_indexes_after_it_are_counted() -> None:
    # Given a table whose first GSI is being deleted, listed before an active GSI and an LSI
    keys = [{"AttributeName": "pk", "KeyType": "HASH"}]
    description = {
        "KeySchema": keys,
        "GlobalSecondaryIndexes": [
            {"IndexName": "a-old", "KeySchema": keys, "IndexStatus": "DELETING"},
            {"IndexName": "b-new", "KeySchema": keys, "IndexStatus": "ACTIVE"},
        ],
        "LocalSecondaryIndexes": [{"IndexName": "c-local", "KeySchema": keys}],
    }
    # Then the two others are counted
    assert [(s.name, s.local) for s in specs_from_description(description)] == [("b-new", False), ("c-local", True)]


def test_a_proposal_becomes_an_index_of_the_tables_it_applies_to_after_the_real_ones() -> None:
    from hotkeys.detector.proposals import parse

    description = {
        "Table": {
            "TableName": "orders",
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "status", "AttributeType": "S"},
            ],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "real",
                    "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
        }
    }
    proposals = parse("by-day=day+region/createdAt:INCLUDE(total);users:by-x=x", "customer")
    specs = specs_from_description(description, proposals)
    assert [spec.name for spec in specs] == ["real", "by-day (proposed)", "keyed by customer (proposed)"]
    types = {"pk": "S", "sk": "S", "status": "S"}
    assert specs[1] == IndexSpec(
        name="by-day (proposed)",
        partition_key=("day", "region"),
        sort_key=("createdAt",),
        projection=INCLUDE,
        included=frozenset({"total"}),
        table_keys=("pk", "sk"),
        types=types,
    )
    assert specs[1].entry_attributes == frozenset({"pk", "sk", "day", "region", "createdAt", "total"})
    assert specs[2] == IndexSpec(
        name="keyed by customer (proposed)",
        partition_key=("customer",),
        table_keys=("pk", "sk"),
        types=types,
        table_rekeyed=True,
    )
    # another table: the proposals for every table and its own (and, described no more, without its keys)
    users = specs_from_description({"TableName": "users"}, proposals)
    assert [spec.name for spec in users] == ["by-day (proposed)", "by-x (proposed)", "keyed by customer (proposed)"]
    assert {spec.table_keys for spec in users} == {()}


def test_a_rekeyed_table_pays_for_a_write_that_changes_nothing_and_an_index_does_not() -> None:
    image = {"pk": {"S": "a"}, "region": {"S": "eu"}, "note": {"S": "x" * 1500}}  # 1,515 bytes: 2 units
    rekeyed = IndexSpec("keyed by region (proposed)", ("region",), table_rekeyed=True)
    assert index_writes(rekeyed, image, image) == [("eu", 2)]
    assert index_writes(IndexSpec("by-region", ("region",)), image, image) == []
