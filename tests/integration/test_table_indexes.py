"""A table's GSIs as the function reads them: moto's DescribeTable, the container cache, and failures."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from hotkeys.detector.adapters.key_schema import KeySchemaError, TableIndexes, describe_table_with
from hotkeys.detector.domain.indexes import ALL, INCLUDE, KEYS_ONLY


def create_table(name: str, with_include: bool = True) -> None:
    indexes: list[dict[str, Any]] = [
        {
            "IndexName": "by-status",
            "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
        },
        {
            "IndexName": "by-day",
            "KeySchema": [{"AttributeName": "day", "KeyType": "HASH"}, {"AttributeName": "ts", "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "ALL"},
        },
    ]
    if with_include:
        indexes.append(
            {
                "IndexName": "by-customer",
                "KeySchema": [{"AttributeName": "customer", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["total", "currency"]},
            }
        )
    declared = (("pk", "S"), ("sk", "S"), ("status", "S"), ("day", "S"), ("ts", "N"))
    declared += (("customer", "S"),) if with_include else ()
    boto3.client("dynamodb").create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": attribute, "AttributeType": kind} for attribute, kind in declared],
        GlobalSecondaryIndexes=indexes,
        BillingMode="PAY_PER_REQUEST",
    )


def test_the_indexes_come_from_describe_table_with_keys_types_and_projections(aws: None) -> None:
    # Given a table with three indexes of each projection type (moto answers DescribeTable)
    create_table("orders")
    # When the function reads them
    specs = {spec.name: spec for spec in TableIndexes(describe_table_with(boto3.client("dynamodb")))("orders")}
    # Then each index has its keys, projection, declared types and the table's keys
    assert set(specs) == {"by-status", "by-day", "by-customer"}
    assert specs["by-day"].partition_key == ("day",) and specs["by-day"].sort_key == ("ts",)
    assert specs["by-day"].projection == ALL and specs["by-status"].projection == KEYS_ONLY
    assert specs["by-customer"].projection == INCLUDE and specs["by-customer"].included == {"total", "currency"}
    assert specs["by-day"].typed_keys == (("day", "S"), ("ts", "N"))
    assert specs["by-status"].entry_attributes == {"pk", "sk", "status"}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_schema_is_cached_then_refreshed_and_a_failed_refresh_keeps_the_last_one(aws: None) -> None:
    # Given the function's reader with a clock, over moto
    create_table("orders", with_include=False)
    client = boto3.client("dynamodb")
    calls: list[str] = []
    failing = {"on": False}

    def describe(table: str) -> dict[str, Any]:
        calls.append(table)
        if failing["on"]:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "DescribeTable")
        return dict(client.describe_table(TableName=table))

    clock = Clock()
    reader = TableIndexes(describe, refresh_seconds=300, clock=clock)
    assert [spec.name for spec in reader("orders")] == ["by-day", "by-status"]
    # When read again within the refresh time: no call
    clock.now = 299
    reader("orders")
    assert len(calls) == 1
    # When a refresh fails: the last known indexes stay in use
    clock.now = 301
    failing["on"] = True
    assert [spec.name for spec in reader("orders")] == ["by-day", "by-status"]
    assert len(calls) == 2


def test_a_first_read_that_fails_fails_the_invocation_and_a_deleted_table_has_no_index(aws: None) -> None:
    # Given DescribeTable throttled before the container knows the schema
    def throttled(table: str) -> dict[str, Any]:
        raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "DescribeTable")

    # Then the invocation fails (Lambda retries it) rather than counting a window without its indexes
    with pytest.raises(KeySchemaError, match="COUNT_INDEXES=false"):
        TableIndexes(throttled)("orders")
    # while a table that no longer exists (moto: never created) simply has none
    assert TableIndexes(describe_table_with(boto3.client("dynamodb")))("gone") == ()
