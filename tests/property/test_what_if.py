"""A proposed index is counted as the same index would be if it existed; a proposed partition key as the
table keyed by it.

Hypothesis draws tables with indexes of every projection and key shape (``test_gsi_writes.tables``) and
writes of every kind. Each drawn GSI is then proposed, by the grammar a user types, for a table created
in moto *without* it, and read back through ``TableIndexes`` as the function reads it. Its writes must
equal the real index's (the same GSI on a table that has it) and the independent reference
(``tests/reference_gsi.py``, written from the developer guide's rules) for every write such a table
can receive: a write whose index key attribute has another type than the index declares is refused by
a table that has the index, so it never reaches a stream to compare with (the proposal, which declares
no type, counts any scalar).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hotkeys.detector.domain.indexes import index_writes
from hotkeys.detector.proposals import PROPOSED
from hotkeys.detector.proposals import parse as parse_proposals
from tests import reference_gsi, reference_sizing
from tests.property import test_gsi_writes
from tests.property.test_gsi_writes import DECLARED, MotoTables, cases

moto_tables = test_gsi_writes.moto_tables  # its fixture: one moto table per drawn shape, shared


def proposal_text(index: dict[str, Any]) -> str:
    """The drawn GSI as a user proposes it: ``NAME=A+B/C:PROJECTION``."""
    hashes = [e["AttributeName"] for e in index["KeySchema"] if e["KeyType"] == "HASH"]
    ranges = [e["AttributeName"] for e in index["KeySchema"] if e["KeyType"] == "RANGE"]
    projection = index["Projection"]["ProjectionType"]
    if projection == "INCLUDE":
        projection = f"INCLUDE({','.join(index['Projection']['NonKeyAttributes'])})"
    return f"{index['IndexName']}={'+'.join(hashes)}" + (f"/{'+'.join(ranges)}" if ranges else "") + f":{projection}"


def without_gsis(table: dict[str, Any]) -> dict[str, Any]:
    """The same table before its GSIs are created (definitions only for the keys it still has)."""
    used = {e["AttributeName"] for e in table["KeySchema"]}
    used |= {e["AttributeName"] for index in table.get("LocalSecondaryIndexes", []) for e in index["KeySchema"]}
    request = {k: v for k, v in table.items() if k != "GlobalSecondaryIndexes"}
    request["AttributeDefinitions"] = [d for d in table["AttributeDefinitions"] if d["AttributeName"] in used]
    return request


def storable(index: dict[str, Any], image: dict[str, Any] | None) -> bool:
    """Whether a table with this index accepts the image: each key attribute it has is of the declared type."""
    names = [e["AttributeName"] for e in index["KeySchema"]]
    return image is None or all(name not in image or DECLARED[name] in image[name] for name in names)


@settings(max_examples=200, deadline=None)
@given(case=cases())
def test_a_proposed_index_counts_what_the_real_one_counts(
    moto_tables: MotoTables, case: tuple[dict[str, Any], list[tuple[str, Any, Any]]]
) -> None:
    # Given a table with its GSIs, and the same table without them, its GSIs proposed as a user types them
    table, changes = case
    _real_name, real_specs = moto_tables.specs(table)
    real = {spec.name: spec for spec in real_specs if not spec.local}
    texts = ";".join(proposal_text(index) for index in table["GlobalSecondaryIndexes"])
    proposals = parse_proposals(texts, None)
    bare = moto_tables.create(without_gsis(table))
    with_proposals = moto_tables.with_proposals(proposals)
    proposed = {spec.name.removesuffix(PROPOSED): spec for spec in with_proposals(bare) if spec.name.endswith(PROPOSED)}
    # Then every proposal is counted, once, under its own name
    assert sorted(proposed) == sorted(real)
    for _event, old, new in changes:
        for index in table["GlobalSecondaryIndexes"]:
            if not (storable(index, old) and storable(index, new)):
                continue
            # and each write's index writes are the real index's and the reference's
            expected = reference_gsi.index_writes(table, index, old, new)
            assert index_writes(proposed[index["IndexName"]], old, new) == expected
            assert index_writes(real[index["IndexName"]], old, new) == expected


@st.composite
def rekeyings(draw: st.DrawFn) -> tuple[dict[str, Any], list[tuple[str, Any, Any]], tuple[str, ...]]:
    table, changes = draw(cases())
    attributes = tuple(draw(st.lists(st.sampled_from(sorted(DECLARED)), min_size=1, max_size=2, unique=True)))
    return table, changes, attributes


def expected_key(attributes: tuple[str, ...], image: dict[str, Any]) -> str:
    """The reference's partition text of the item under the proposed key."""
    return reference_gsi.partition_text(tuple(next(iter(image[name].values())) for name in attributes))


@settings(max_examples=150, deadline=None)
@given(case=rekeyings())
def test_a_proposed_partition_key_takes_each_write_whole(
    moto_tables: MotoTables, case: tuple[dict[str, Any], list[tuple[str, Any, Any]], tuple[str, ...]]
) -> None:
    # Given a table and a proposal to key it by other attributes
    table, changes, attributes = case
    (proposal,) = parse_proposals(None, "+".join(attributes))
    (spec,) = [s for s in moto_tables.with_proposals((proposal,))(moto_tables.create(table)) if s.name == proposal.name]
    # the table keyed by them, as an ALL-projection index over them is (the reference's reading)
    reference_table = {
        **table,
        "AttributeDefinitions": [
            *table["AttributeDefinitions"],
            *({"AttributeName": name, "AttributeType": DECLARED[name]} for name in attributes),
        ],
    }
    keyed = {
        "IndexName": "keyed",
        "KeySchema": [{"AttributeName": name, "KeyType": "HASH"} for name in attributes],
        "Projection": {"ProjectionType": "ALL"},
    }
    for _event, old, new in changes:
        if not (storable(keyed, old) and storable(keyed, new)):
            continue
        # Then each write lands whole on the partitions the new key names (a key change: delete, then put),
        # even one that changed nothing (an index would take no write; the table keyed so pays for it)
        expected = reference_gsi.index_writes(reference_table, keyed, old, new)
        if old is not None and old == new and reference_gsi.entry_of(reference_table, keyed, new) is not None:
            expected = [(expected_key(attributes, new), reference_sizing.write_units(old, new))]
        assert index_writes(spec, old, new) == expected


@settings(max_examples=100, deadline=None)
@given(case=cases())
def test_keyed_by_its_own_partition_key_a_table_counts_what_it_counts(
    moto_tables: MotoTables, case: tuple[dict[str, Any], list[tuple[str, Any, Any]]]
) -> None:
    # Given a table proposed to be keyed by its own partition key
    table, changes = case
    (proposal,) = parse_proposals(None, "pk")
    (spec,) = [s for s in moto_tables.with_proposals((proposal,))(moto_tables.create(table)) if s.name == proposal.name]
    for _event, old, new in changes:
        # Then every write's units go to its own key, as the table's own count has them (its LSIs apart),
        # a write that changed nothing included (its record is on the stream: the table paid for it)
        expected = [("item-1", reference_sizing.write_units(old, new))]
        assert index_writes(spec, old, new) == expected
