"""Which attribute of a record's Keys is the partition key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hotkeys.detector.records import MalformedRecord


class KeySchemaError(RuntimeError):
    """The partition key attribute cannot be determined (a configuration problem, not a bad record)."""


class PartitionKeyResolver:
    """Configured attribute, else the only key attribute, else DescribeTable (cached per container)."""

    def __init__(self, configured: str | None, describe_table: Callable[[str], dict[str, Any]]) -> None:
        self._configured = configured
        self._describe_table = describe_table
        self._hash_keys: dict[str, str] = {}

    def __call__(self, table: str, keys: dict[str, Any]) -> str:
        if self._configured:
            return self._configured
        if len(keys) == 1:
            return next(iter(keys))
        if len(keys) != 2:
            raise MalformedRecord(f"record Keys must hold one or two attributes, got {len(keys)}")
        hash_key = self._hash_keys.get(table)
        if hash_key is None:
            hash_key = self._lookup(table)
            self._hash_keys[table] = hash_key
        return hash_key

    def _lookup(self, table: str) -> str:
        try:
            description = self._describe_table(table)
        except Exception as error:
            raise KeySchemaError(
                f"cannot find the partition key of table {table!r}: DescribeTable failed ({error}); "
                "set PARTITION_KEY_ATTRIBUTE or allow dynamodb:DescribeTable"
            ) from error
        for element in description.get("Table", {}).get("KeySchema", []):
            if element.get("KeyType") == "HASH":
                return str(element["AttributeName"])
        raise KeySchemaError(f"DescribeTable({table!r}) returned no HASH key; set PARTITION_KEY_ATTRIBUTE")


def describe_table_with(client: Any) -> Callable[[str], dict[str, Any]]:
    return lambda table: client.describe_table(TableName=table)
