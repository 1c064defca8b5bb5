"""An independent reading of the GSI write rules, for tests to check ``hotkeys.detector.domain.indexes`` against.

Written from the DynamoDB developer guide ("Global secondary indexes", "Write capacity units") in a
different shape than the production code: it builds the item's entry in the index before and after
the write (the key tuple and the projected attributes, or nothing when a key attribute is missing
or of another type than the table declares), then compares the two entries as the index would see
them: none → one is a put, one → none a delete, a different key a delete and a put, the same key
with different contents one update (sized as the larger entry), identical entries nothing. Sizes
use ``reference_sizing`` (Decimal numbers, decoded binary). It reads the raw DescribeTable shapes,
not the production ``IndexSpec``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from tests import reference_sizing

Entry = tuple[tuple[str, ...], tuple[str, ...], dict[str, Any]]  # (partition values, full key values, contents)


def entry_of(table: dict[str, Any], index: dict[str, Any], image: dict[str, Any] | None) -> Entry | None:
    if image is None:
        return None
    declared = {d["AttributeName"]: d["AttributeType"] for d in table["AttributeDefinitions"]}
    hash_names = [e["AttributeName"] for e in index["KeySchema"] if e["KeyType"] == "HASH"]
    range_names = [e["AttributeName"] for e in index["KeySchema"] if e["KeyType"] == "RANGE"]
    values = []
    for name in hash_names + range_names:
        value = image.get(name)
        if not isinstance(value, dict) or list(value) != [declared[name]]:
            return None  # "DynamoDB doesn't write any data for that item to the index"
        values.append(value[declared[name]])
    projection = index["Projection"]
    if projection["ProjectionType"] == "ALL":
        contents = dict(image)
    else:
        wanted = {e["AttributeName"] for e in table["KeySchema"]} | set(hash_names) | set(range_names)
        if projection["ProjectionType"] == "INCLUDE":
            wanted |= set(projection.get("NonKeyAttributes", []))
        contents = {name: value for name, value in image.items() if name in wanted}
    return tuple(values[: len(hash_names)]), tuple(values), contents


def partition_text(values: tuple[str, ...]) -> str:
    return values[0] if len(values) == 1 else json.dumps(list(values), ensure_ascii=False, separators=(",", ":"))


def units(contents: dict[str, Any]) -> int:
    return max(1, math.ceil(reference_sizing.item_bytes(contents) / reference_sizing.KIB))


def index_writes(
    table: dict[str, Any], index: dict[str, Any], old: dict[str, Any] | None, new: dict[str, Any] | None
) -> list[tuple[str, int]]:
    """(index partition key text, write units) of each index write, delete before put."""
    before, after = entry_of(table, index, old), entry_of(table, index, new)
    writes: list[tuple[str, int]] = []
    if before is not None and (after is None or after[1] != before[1]):
        writes.append((partition_text(before[0]), units(before[2])))  # the old entry is deleted
    if after is not None and (before is None or after[1] != before[1]):
        writes.append((partition_text(after[0]), units(after[2])))  # the new entry is put
    if before is not None and after is not None and after[1] == before[1] and after[2] != before[2]:
        writes.append((partition_text(after[0]), max(units(before[2]), units(after[2]))))  # updated in place
    return writes
