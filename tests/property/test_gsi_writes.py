"""GSI write units per index key equal an independent calculation from the documented rules.

Hypothesis generates table schemas (one or two table keys), one to three indexes of every
projection type, with one- to three-attribute partition keys and optional sort keys, and
writes of every kind: inserts, deletes, updates that change, remove, add or keep an index key,
that change projected or unprojected attributes only, and key attributes of a type other than
the one the table declares. ``tests/reference_gsi.py`` states the expected writes its own way.

Each drawn table is a CreateTable request (botocore validates it against the service model),
created in a moto server; the detector reads the table as the function does, through
``adapters.key_schema`` (``TableIndexes``, ``PartitionKeyResolver``) over boto3's parse of
moto's DescribeTable answer. The reference reads the request itself, so a description that
lost or changed an index, a key attribute's order or a projection would show as a difference.
moto 5.2.5 represents every drawn case (multi-attribute partition and sort keys, INCLUDE
projections with NonKeyAttributes, LSIs with every projection): no case needs a hand-built
answer. The tests judge one record at a time, so the table's stream shards play no part here.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotkeys.detector.adapters.key_schema import PartitionKeyResolver, TableIndexes, describe_table_with
from hotkeys.detector.domain.indexes import IndexSpec, in_index, index_writes
from hotkeys.detector.domain.records import parse_change
from hotkeys.detector.proposals import Proposal
from hotkeys.emulator.events import ItemChange, stream_record
from tests import reference_gsi, reference_sizing

DECLARED = {"status": "S", "region": "S", "kind": "S", "ts": "N", "bin": "B"}
OTHER = ["payload", "note", "count"]

values_of = {
    "status": st.sampled_from([{"S": "PENDING"}, {"S": "SHIPPED"}, {"S": "é-ü"}, {"N": "1"}]),
    "region": st.sampled_from([{"S": "eu"}, {"S": "us"}, {"S": "ap"}]),
    "kind": st.sampled_from([{"S": "a"}, {"S": "b"}, {"NULL": True}]),
    "ts": st.sampled_from([{"N": "1700000000"}, {"N": "1700000001"}, {"S": "yesterday"}]),
    "bin": st.sampled_from([{"B": "AA=="}, {"B": "aGVsbG8="}]),
    # Sizes near the 1 KB boundary, where a few bytes of keys or the larger entry change the units.
    "payload": st.one_of(st.integers(min_value=960, max_value=1030), st.sampled_from([0, 10, 2040, 2500])).map(
        lambda n: {"S": "x" * n}
    ),
    "note": st.sampled_from([{"S": "n1"}, {"S": "n2"}, {"L": [{"N": "1"}, {"S": "two"}]}]),
    "count": st.sampled_from([{"N": "0"}, {"N": "12345.678"}, {"N": "-1e10"}]),
}


@st.composite
def tables(draw: st.DrawFn) -> dict[str, Any]:
    composite = draw(st.booleans())
    key_schema = [{"AttributeName": "pk", "KeyType": "HASH"}]
    definitions = [{"AttributeName": "pk", "AttributeType": "S"}]
    if composite:
        key_schema.append({"AttributeName": "sk", "KeyType": "RANGE"})
        definitions.append({"AttributeName": "sk", "AttributeType": "S"})
    indexes = []
    for number in range(draw(st.integers(min_value=1, max_value=3))):
        hash_names = draw(st.lists(st.sampled_from(sorted(DECLARED)), min_size=1, max_size=3, unique=True))
        rest = [name for name in sorted(DECLARED) if name not in hash_names]
        range_names = draw(st.lists(st.sampled_from(rest), max_size=2, unique=True)) if rest else []
        kind = draw(st.sampled_from(["KEYS_ONLY", "INCLUDE", "ALL"]))
        projection: dict[str, Any] = {"ProjectionType": kind}
        if kind == "INCLUDE":
            projection["NonKeyAttributes"] = draw(st.lists(st.sampled_from(OTHER), min_size=1, unique=True))
        indexes.append(
            {
                "IndexName": f"index-{number}",
                "KeySchema": [{"AttributeName": n, "KeyType": "HASH"} for n in hash_names]
                + [{"AttributeName": n, "KeyType": "RANGE"} for n in range_names],
                "Projection": projection,
            }
        )
        definitions.extend({"AttributeName": n, "AttributeType": DECLARED[n]} for n in hash_names + range_names)
    locals_ = []
    if composite:  # an LSI needs the table's sort key; it shares the table's partition key
        for number in range(draw(st.integers(min_value=0, max_value=2))):
            sort_name = draw(st.sampled_from(sorted(DECLARED)))
            kind = draw(st.sampled_from(["KEYS_ONLY", "INCLUDE", "ALL"]))
            projection = {"ProjectionType": kind}
            if kind == "INCLUDE":
                projection["NonKeyAttributes"] = draw(st.lists(st.sampled_from(OTHER), min_size=1, unique=True))
            locals_.append(
                {
                    "IndexName": f"local-{number}",
                    "KeySchema": [
                        {"AttributeName": "pk", "KeyType": "HASH"},
                        {"AttributeName": sort_name, "KeyType": "RANGE"},
                    ],
                    "Projection": projection,
                }
            )
            definitions.append({"AttributeName": sort_name, "AttributeType": DECLARED[sort_name]})
    unique_definitions = list({d["AttributeName"]: d for d in definitions}.values())
    # The CreateTable request's index and key parameters (LocalSecondaryIndexes may not be empty).
    request: dict[str, Any] = {
        "KeySchema": key_schema,
        "AttributeDefinitions": unique_definitions,
        "GlobalSecondaryIndexes": indexes,
    }
    if locals_:
        request["LocalSecondaryIndexes"] = locals_
    return request


class MotoTables:
    """Drawn tables created in moto, read back as the function reads them.

    One resolver and one ``TableIndexes`` serve every table, as in a warm container that sees many
    tables. Hypothesis draws the same shape again and again (and replays examples while shrinking):
    each distinct request is created once, under a name of its own.
    """

    def __init__(self, client: Any) -> None:
        self._client = client
        self._names: dict[str, str] = {}
        # The moto server outlives this fixture (it is set up again when pytest comes back to the module).
        self._prefix = f"orders-{uuid.uuid4().hex[:8]}"
        self._describe = describe_table_with(client)
        self.resolve_key = PartitionKeyResolver(None, self._describe)
        self.indexes = TableIndexes(self._describe)

    def with_proposals(self, proposals: tuple[Proposal, ...]) -> TableIndexes:
        """The tables' indexes and these what-if proposals, as a function configured with them reads them."""
        return TableIndexes(self._describe, proposals=proposals)

    def create(self, request: dict[str, Any]) -> str:
        shape = json.dumps(request, sort_keys=True)
        name = self._names.get(shape)
        if name is None:
            name = f"{self._prefix}-{len(self._names)}"
            self._client.create_table(
                TableName=name,
                BillingMode="PAY_PER_REQUEST",
                StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
                **request,
            )
            self._names[shape] = name
        return name

    def specs(self, request: dict[str, Any]) -> tuple[str, tuple[IndexSpec, ...]]:
        """The table's name in moto and its indexes as the function reads them."""
        name = self.create(request)
        return name, self.indexes(name)


@pytest.fixture(scope="module")
def moto_tables(moto_endpoint: str) -> Iterator[MotoTables]:
    client = boto3.client(
        "dynamodb",
        endpoint_url=moto_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    yield MotoTables(client)


def all_indexes(table: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The drawn request's indexes by name (what the reference reads)."""
    listed = table["GlobalSecondaryIndexes"] + table.get("LocalSecondaryIndexes", [])
    return {index["IndexName"]: index for index in listed}


@st.composite
def images(draw: st.DrawFn, keys: dict[str, Any]) -> dict[str, Any]:
    # Each attribute present four times in five: items are often in an index with several key attributes.
    names = [name for name in sorted(values_of) if draw(st.integers(min_value=0, max_value=4))]
    return {**keys, **{name: draw(values_of[name]) for name in names}}


@st.composite
def writes(draw: st.DrawFn, table: dict[str, Any]) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None]:
    keys = {"pk": {"S": "item-1"}}
    if len(table["KeySchema"]) == 2:
        keys["sk"] = {"S": "2026-12-01"}
    event = draw(st.sampled_from(["INSERT", "MODIFY", "MODIFY", "MODIFY", "REMOVE"]))
    old = None if event == "INSERT" else draw(images(keys))
    if event == "REMOVE":
        return event, old, None
    if event == "MODIFY" and draw(st.booleans()):
        # An update that changes a few attributes of the old item (keeps, changes or removes the rest).
        assert old is not None
        changed = {name: value for name, value in draw(images({})).items() if draw(st.booleans())}
        removed = draw(st.lists(st.sampled_from(sorted(old)), unique=True))
        new = {name: value for name, value in old.items() if name not in removed or name in keys}
        return event, old, {**new, **changed}
    return event, old, draw(images(keys))


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], list[tuple[str, Any, Any]]]:
    table = draw(tables())
    return table, draw(st.lists(writes(table), min_size=1, max_size=6))


@settings(max_examples=300, deadline=None)
@given(case=cases())
def test_index_writes_follow_the_documented_rules(
    moto_tables: MotoTables, case: tuple[dict[str, Any], list[tuple[str, Any, Any]]]
) -> None:
    # Given a table created with the drawn indexes, read back as the function reads DescribeTable,
    # and writes of every kind
    table, changes = case
    _name, specs = moto_tables.specs(table)
    by_name = all_indexes(table)
    # Every index the request created is counted, each once
    assert sorted(spec.name for spec in specs) == sorted(by_name)
    for _event, old, new in changes:
        for spec in specs:
            # Then each index's writes (key, write units) are the reference's, in order (delete, put)
            expected = reference_gsi.index_writes(table, by_name[spec.name], old, new)
            assert index_writes(spec, old, new) == expected
            # and an item is in the index exactly when the reference builds an entry for it
            assert in_index(spec, new) == (reference_gsi.entry_of(table, by_name[spec.name], new) is not None)


@settings(max_examples=150, deadline=None)
@given(case=cases())
def test_a_stream_record_carries_every_index_write(
    moto_tables: MotoTables, case: tuple[dict[str, Any], list[tuple[str, Any, Any]]]
) -> None:
    # Given the same writes as Lambda-format stream records of that table (created in moto)
    table, changes = case
    table_name, specs = moto_tables.specs(table)
    by_name = all_indexes(table)
    for position, (event, old, new) in enumerate(changes):
        keys = {name: (old or new)[name] for name in ("pk", "sk") if name in (old or new)}
        record = stream_record(
            ItemChange(event_name=event, keys=keys, new_image=new, old_image=old, typed=True),
            table=table_name,
            sequence=str(100 + position),
            event_time=1_764_460_800,
        )
        # When the record is parsed as the function parses it: its partition key and indexes from
        # the table's DescribeTable answer
        change = parse_change(record, moto_tables.resolve_key, indexes=moto_tables.indexes)
        # Then it is counted for the table's partition key (the HASH element of its key schema), and
        # the sort key is the other one
        assert (change.table, change.key) == (table_name, "item-1")
        assert change.sort_key == (("S", "2026-12-01") if "sk" in keys else None)
        # and it carries each GSI's writes, named by index, in the indexes' order
        expected = [
            (spec.name, key, wcu)
            for spec in specs
            if not spec.local
            for key, wcu in reference_gsi.index_writes(table, by_name[spec.name], old, new)
        ]
        assert list(change.index_writes) == expected
        # and the table key's write units include its LSIs' writes (same partition, the table's capacity)
        local = sum(
            wcu
            for index in table.get("LocalSecondaryIndexes", [])
            for _key, wcu in reference_gsi.index_writes(table, index, old, new)
        )
        assert change.wcu == reference_sizing.write_units(old, new) + local
