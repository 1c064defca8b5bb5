"""What a table's key schema says: which attribute of a record's Keys is the partition key, and its GSIs."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hotkeys.detector.domain.indexes import IndexSpec, specs_from_description
from hotkeys.detector.domain.records import MalformedRecord
from hotkeys.detector.observability import logger
from hotkeys.detector.proposals import Proposal

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class KeySchemaError(RuntimeError):
    """The partition key attribute cannot be determined (a configuration problem, not a bad record)."""


class PartitionKeyResolver:
    """Configured attribute, else the only key attribute, else DescribeTable (cached per container)."""

    def __init__(self, configured: str | None, describe_table: Callable[[str], Mapping[str, Any]]) -> None:
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


def describe_table_with(client: DynamoDBClient) -> Callable[[str], Mapping[str, Any]]:
    return lambda table: client.describe_table(TableName=table)


class TableIndexes:
    """A table's global secondary indexes (``IndexesOf``), from DescribeTable, cached per container.

    The schema is read again after ``refresh_seconds`` so an index created or deleted while the
    function runs is picked up (by the next segment: see ``state.Segment.indexes``). When a refresh
    fails, the last known indexes stay in use (logged) and the read is tried again at the next
    refresh. When the first read fails the invocation fails (KeySchemaError: Lambda retries it), so
    a throttled DescribeTable never leaves a window's indexes uncounted; a table that no longer
    exists (its stream still delivers its last records) has no index left to count, only the what-if
    proposals (``proposals``), keyed without the table's key attributes it can no longer describe.
    """

    def __init__(
        self,
        describe_table: Callable[[str], Mapping[str, Any]],
        refresh_seconds: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        proposals: tuple[Proposal, ...] = (),
    ) -> None:
        self._describe_table = describe_table
        self._proposals = proposals
        self._refresh_seconds = refresh_seconds
        self._clock = clock
        self._known: dict[str, tuple[float, tuple[IndexSpec, ...]]] = {}

    def __call__(self, table: str) -> tuple[IndexSpec, ...]:
        known = self._known.get(table)
        now = self._clock()
        if known is not None and now - known[0] < self._refresh_seconds:
            return known[1]
        try:
            specs = specs_from_description(self._describe_table(table), self._proposals)
        except Exception as error:
            code = getattr(error, "response", {}).get("Error", {}).get("Code")
            if code == "ResourceNotFoundException":
                # Deleted since it wrote, or (a replay) never created: either way there is no index to count.
                logger.info("DescribeTable found no such table: no index to count", extra={"table": table})
                specs = specs_from_description({"TableName": table}, self._proposals)
            elif known is not None:
                logger.warning(
                    "could not refresh the table's global secondary indexes; using the last known ones",
                    extra={"table": table, "error": str(error)},
                )
                specs = known[1]
            else:
                raise KeySchemaError(
                    f"cannot read the indexes of table {table!r}: DescribeTable failed ({error}); "
                    "allow dynamodb:DescribeTable or set COUNT_INDEXES=false"
                ) from error
        self._known[table] = (now, specs)
        return specs
