"""Global secondary index writes of one stream record, by the DynamoDB developer guide's rules.

Each GSI has partitions of its own, keyed by the index's partition key, with the same
per-partition limit as the table. When one of them cannot absorb its updates DynamoDB
throttles the base-table write ("GSI back-pressure"). A record's images say exactly
which index partitions it updated (developer guide, "Global secondary indexes",
section "Write capacity units"):

* "If you write a new item to the table that defines an indexed attribute, or you update
  an existing item to define a previously undefined indexed attribute, one write operation
  is required to put the item into the index."
* "If an update to the table changes the value of an indexed key attribute (from A to B),
  two writes are required, one to delete the previous item from the index and another
  write to put the new item into the index." The delete lands on the old key's partition,
  the put on the new key's.
* "If an item was present in the index, but a write to the table caused the indexed
  attribute to be deleted, one write is required to delete the old item projection."
* "If an item is not present in the index before or after the item is updated, there is
  no additional write cost for the index."
* "If an update to the table only changes the value of projected attributes ..., one write
  is required"; "If a write to a table does not require a global secondary index update,
  no write capacity is consumed from the index" (an update of attributes the index does
  not project costs the index nothing).
* "Larger index entries require additional write capacity units": an index write costs
  1 unit per KB of the index entry (the table's key attributes, the index's key
  attributes and its projected attributes), rounded up.

An item is in an index only if it has every key attribute of the index ("If a table
contains an item where a particular attribute(s) is not defined, but that attribute is
defined as an index partition key or sort key, DynamoDB doesn't write any data for that
item to the index"), with the type the table declares for it.

Not documented, and how this module reads it (docs/decisions.md §26): the entry size
counts attribute names and values only (the 100 bytes of per-item overhead are named for
storage, not for writes), so index write units are a lower estimate like the table's;
an update of projected attributes is sized as the larger of the old and new entry, as
the table's own Put/Update is; TTL deletions are free for the table and are not counted
for its indexes either.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hotkeys.detector.domain.sizing import SizingError, image_size, value_size, write_units
from hotkeys.detector.domain.summary import MAX_KEY_TEXT_BYTES
from hotkeys.detector.proposals import Proposal

KEYS_ONLY, INCLUDE, ALL = "KEYS_ONLY", "INCLUDE", "ALL"
_SCALAR_TYPES = ("S", "N", "B")
# Statuses whose index receives the table's writes (a DELETING index no longer matters).
COUNTED_STATUSES = frozenset(("ACTIVE", "CREATING", "UPDATING"))
# A key text longer than MAX_KEY_TEXT_BYTES becomes a prefix, this mark and a 32-hex-digit digest.
_DIGEST_MARK = "…#"
_DIGEST_BYTES = len(_DIGEST_MARK.encode("utf-8")) + 32
_PREFIX_BYTES = MAX_KEY_TEXT_BYTES - _DIGEST_BYTES
# The prefix's character limit (what ASCII texts always kept), so a bounded text stays the same
# across versions unless it had to shrink to fit the byte bound.
_PREFIX_CHARS = 1000


class IndexImageError(ValueError):
    """An image cannot be sized for an index (the record is malformed)."""


@dataclass(frozen=True, slots=True)
class IndexSpec:
    """One global secondary index, as DescribeTable states it."""

    name: str
    partition_key: tuple[str, ...]  # one attribute, or up to four (multi-attribute keys)
    sort_key: tuple[str, ...] = ()
    projection: str = ALL
    included: frozenset[str] = frozenset()  # NonKeyAttributes of an INCLUDE projection
    table_keys: tuple[str, ...] = ()  # the base table's key attributes: every entry carries them
    types: Mapping[str, str] | None = None  # declared scalar type (S/N/B) of each key attribute
    # A local secondary index: its entries live in the item's own partition, so its writes add to
    # the table key's write units ("updating the local secondary indexes consumes provisioned write
    # capacity units for the table").
    local: bool = False
    # The table itself keyed by these attributes (a what-if re-keying): every write lands whole on its
    # partition, as the table's own does, even one that changes nothing an index would hold.
    table_rekeyed: bool = False
    # Derived once (the per-record path reads them for every index of every record).
    key_attributes: tuple[str, ...] = field(init=False, compare=False)
    # What one entry of a KEYS_ONLY or INCLUDE index holds (ALL holds the whole item).
    entry_attributes: frozenset[str] = field(init=False, compare=False)
    # (attribute, declared type or None) of each key attribute, in key order.
    typed_keys: tuple[tuple[str, str | None], ...] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        keys = self.partition_key + self.sort_key
        declared = self.types or {}
        object.__setattr__(self, "key_attributes", keys)
        object.__setattr__(self, "entry_attributes", frozenset(self.table_keys) | frozenset(keys) | self.included)
        object.__setattr__(self, "typed_keys", tuple((name, declared.get(name)) for name in keys))


def specs_from_description(description: Mapping[str, Any], proposals: Iterable[Proposal] = ()) -> tuple[IndexSpec, ...]:
    """The counted secondary indexes of a DescribeTable answer (``{"Table": {...}}`` or the table
    itself): its GSIs (by name), then its LSIs (``local``), then the what-if proposals that apply to it,
    as GSIs of this table would be (its key attributes in every entry, its declared types)."""
    table = description.get("Table", description)
    types = {str(item["AttributeName"]): str(item["AttributeType"]) for item in table.get("AttributeDefinitions", ())}
    table_keys = tuple(str(item["AttributeName"]) for item in table.get("KeySchema", ()))
    specs = []
    for local, listed in ((False, table.get("GlobalSecondaryIndexes")), (True, table.get("LocalSecondaryIndexes"))):
        for index in listed or ():
            if index.get("IndexStatus", "ACTIVE") not in COUNTED_STATUSES:
                continue
            schema = index.get("KeySchema", ())
            projection = index.get("Projection", {})
            specs.append(
                IndexSpec(
                    name=str(index["IndexName"]),
                    partition_key=tuple(str(e["AttributeName"]) for e in schema if e.get("KeyType") == "HASH"),
                    sort_key=tuple(str(e["AttributeName"]) for e in schema if e.get("KeyType") == "RANGE"),
                    projection=str(projection.get("ProjectionType", ALL)),
                    included=frozenset(str(name) for name in projection.get("NonKeyAttributes", ())),
                    table_keys=table_keys,
                    types=types,
                    local=local,
                )
            )
    proposed = [
        IndexSpec(
            name=proposal.name,
            partition_key=proposal.partition_key,
            sort_key=proposal.sort_key,
            projection=proposal.projection,
            included=proposal.included,
            table_keys=table_keys,
            types=types,
            table_rekeyed=proposal.rekeying,
        )
        for proposal in proposals
        if proposal.applies_to(str(table.get("TableName", "")))
    ]
    return tuple(sorted(specs, key=lambda spec: (spec.local, spec.name))) + tuple(proposed)


def in_index(spec: IndexSpec, image: Mapping[str, Any] | None) -> bool:
    """Whether an item with this image has an entry in the index."""
    if image is None:
        return False
    for name, kind in spec.typed_keys:
        value = image.get(name)
        if type(value) is not dict or len(value) != 1:
            return False
        if kind is None:
            if not any(scalar in value for scalar in _SCALAR_TYPES):
                return False
        elif kind not in value:
            return False
    return True


def index_key_text(spec: IndexSpec, image: Mapping[str, Any]) -> str:
    """The index partition key as text: the value itself for one attribute (as the table's keys),
    a JSON list of the values for a multi-attribute key (unambiguous; long ones end in a digest)."""
    values = [next(iter(image[name].values())) for name in spec.partition_key]
    for value in values:
        if not isinstance(value, str):
            raise IndexImageError(f"index {spec.name!r}: a key attribute value is not a string")
    text = values[0] if len(values) == 1 else json.dumps(values, ensure_ascii=False, separators=(",", ":"))
    return bounded_key_text(text)


def bounded_key_text(text: str) -> str:
    """Key text within the summary's key bound, counted in UTF-8 bytes (``MAX_KEY_TEXT_BYTES``, so
    every summary entry is at most ``summary.MAX_ENTRY_BYTES``): a longer text keeps a prefix of at
    most ``_PREFIX_CHARS`` characters and ``_PREFIX_BYTES`` bytes, cut between characters, and a
    digest of the whole. ASCII texts within the bound (most keys) return at once."""
    if text.isascii():
        if len(text) <= MAX_KEY_TEXT_BYTES:
            return text
        return text[:_PREFIX_CHARS] + _DIGEST_MARK + hashlib.blake2b(text.encode("ascii"), digest_size=16).hexdigest()
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        raise IndexImageError("an index key is not valid UTF-8 (a lone surrogate)") from None
    if len(raw) <= MAX_KEY_TEXT_BYTES:
        return text
    # Cutting valid UTF-8 at a byte count can split only the last character: "ignore" drops its
    # leading bytes and nothing else.
    head = text[:_PREFIX_CHARS].encode("utf-8")[:_PREFIX_BYTES].decode("utf-8", "ignore")
    return head + _DIGEST_MARK + hashlib.blake2b(raw, digest_size=16).hexdigest()


def entry_size(spec: IndexSpec, image: Mapping[str, Any], item_size: int | None = None) -> int:
    """Bytes of the item's entry in the index (``item_size``: the whole image's size, if known)."""
    if spec.projection == ALL:
        return item_size if item_size is not None else image_size(image)
    total = 0
    for name in spec.entry_attributes:
        value = image.get(name)
        if value is not None:
            total += len(name.encode("utf-8")) + value_size(value)
    return total


def _projected_equal(spec: IndexSpec, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    if spec.projection == ALL:
        return old == new
    return all(old.get(name) == new.get(name) for name in spec.entry_attributes)


def index_writes(
    spec: IndexSpec,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    old_size: int | None = None,
    new_size: int | None = None,
) -> list[tuple[str, int]]:
    """The index writes one table write caused: (index partition key text, write units) each.

    ``old``/``new`` are the record's images (None when absent: an INSERT has no old image, a
    REMOVE no new one); ``old_size``/``new_size`` the whole images' sizes when the caller has them.
    """
    try:
        was = in_index(spec, old)
        now = in_index(spec, new)
        if not was and not now:
            return []
        if was and not now:
            assert old is not None
            return [(index_key_text(spec, old), write_units(entry_size(spec, old, old_size)))]
        if now and not was:
            assert new is not None
            return [(index_key_text(spec, new), write_units(entry_size(spec, new, new_size)))]
        assert old is not None and new is not None
        if any(old[name] != new[name] for name in spec.key_attributes):
            return [
                (index_key_text(spec, old), write_units(entry_size(spec, old, old_size))),
                (index_key_text(spec, new), write_units(entry_size(spec, new, new_size))),
            ]
        if not spec.table_rekeyed and _projected_equal(spec, old, new):
            return []
        larger = max(entry_size(spec, old, old_size), entry_size(spec, new, new_size))
        return [(index_key_text(spec, new), write_units(larger))]
    except (SizingError, UnicodeEncodeError) as error:
        raise IndexImageError(f"index {spec.name!r}: unparsable image: {error}") from None
