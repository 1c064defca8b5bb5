"""What-if proposals: a GSI or a table partition key that does not exist yet, counted from the same
stream records as the real ones (``domain.indexes.specs_from_description`` turns each into an
``IndexSpec`` beside the table's real indexes, so it is counted by exactly the same code).

Grammar (one setting holds several, separated by ``;``; a ``TABLE:`` prefix limits one to that table,
without it a proposal applies to every watched table):

* index (``WHAT_IF_INDEXES``): ``[TABLE:]NAME=PART[+PART...][/SORT[+SORT...]][:PROJECTION]`` with
  PROJECTION ``ALL`` (the default, as the console's), ``KEYS_ONLY`` or ``INCLUDE(attr,attr...)``;
  up to four partition and four sort attributes (multi-attribute keys).
* partition key (``WHAT_IF_KEYS``): ``[TABLE:]PART[+PART...]``: the table keyed by these attributes
  (a composite of their values). Its partitions receive each write whole, as the table's do; counted as
  an ALL-projection index keyed by them, which is what DynamoDB's write rules make of it (an item that
  lacks an attribute would be refused by such a table: it is counted nowhere).

A proposal's stored name cannot be a real index's: index names allow only ``[a-zA-Z0-9_.-]``, and every
proposal's name ends with ``PROPOSED`` (a space and parentheses). No I/O, no dependencies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

PROPOSED = " (proposed)"
KEYED_BY = "keyed by "
ALL, KEYS_ONLY, INCLUDE = "ALL", "KEYS_ONLY", "INCLUDE"
# Per table: the segment state keeps at most MAX_COUNTED_INDEXES index summaries, real ones first.
MAX_PROPOSALS = 5
MAX_KEY_ATTRIBUTES = 4  # DynamoDB's multi-attribute keys: up to four partition and four sort attributes
# A stored index name is at most 255 characters (the state's size bound counts on it).
MAX_NAME_CHARS = 255 - len(PROPOSED)
_NAME = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")  # DynamoDB's index (and table) name rule
_TABLE = _NAME
# Attribute names may hold almost anything in DynamoDB; here they may not hold the grammar's marks.
_ATTRIBUTE = re.compile(r"^[^\s:;=+/(),]+$")
_INCLUDE = re.compile(r"^INCLUDE\((?P<attributes>[^()]*)\)$", re.IGNORECASE)


class ProposalError(ValueError):
    """A proposal is malformed; the message quotes it and says what is wrong."""


@dataclass(frozen=True, slots=True)
class Proposal:
    """One proposed index or partition key. ``name`` is its stored index name (``PROPOSED`` ends it)."""

    name: str
    partition_key: tuple[str, ...]
    sort_key: tuple[str, ...] = ()
    projection: str = ALL
    included: frozenset[str] = frozenset()
    table: str | None = None  # None: every watched table

    @property
    def rekeying(self) -> bool:
        return self.name.startswith(KEYED_BY)

    def applies_to(self, table: str) -> bool:
        return self.table is None or self.table == table


def is_proposed(index: str | None) -> bool:
    """Whether a stored index name is a proposal's (never a real index: see the module's note)."""
    return index is not None and index.endswith(PROPOSED)


def where(table: str, index: str | None) -> str:
    """A table, a GSI or a proposal as every view names it: "orders", "orders index by-status",
    "orders index by-day (proposed)", "orders keyed by customer (proposed)"."""
    if not index:
        return table
    return f"{table} {index}" if index.startswith(KEYED_BY) and is_proposed(index) else f"{table} index {index}"


@cache
def parse(indexes: str | None, keys: str | None) -> tuple[Proposal, ...]:
    """The proposals of the two settings, or ProposalError naming the first malformed one."""
    found = [_index(text) for text in _items(indexes)] + [_rekeying(text) for text in _items(keys)]
    for number, proposal in enumerate(found):
        for other in found[:number]:
            overlap = None in (other.table, proposal.table) or other.table == proposal.table
            if other.name == proposal.name and overlap:
                raise ProposalError(f"{proposal.name.removesuffix(PROPOSED)!r} is proposed twice for one table")
    tables = {proposal.table for proposal in found}
    for table in tables:
        count = sum(1 for proposal in found if proposal.table in (table, None))
        if count > MAX_PROPOSALS:
            raise ProposalError(f"at most {MAX_PROPOSALS} proposals per table (indexes and keys together), got {count}")
    return tuple(found)


def _items(text: str | None) -> list[str]:
    return [item.strip() for item in (text or "").split(";") if item.strip()]


def _index(text: str) -> Proposal:
    table, rest = _table(text)
    name, equals, definition = rest.partition("=")
    name = name.strip()
    if not equals:
        raise ProposalError(f"{text!r}: an index is NAME=ATTRIBUTE[/SORT][:PROJECTION], e.g. 'by-status=status'")
    if not _NAME.match(name) or len(name) > MAX_NAME_CHARS:
        raise ProposalError(f"{text!r}: {name!r} is no index name (3 to {MAX_NAME_CHARS} of a-z A-Z 0-9 _ . -)")
    keys, colon, projection_text = definition.partition(":")
    partition, slash, sort = keys.partition("/")
    projection, included = _projection(text, projection_text.strip() if colon else ALL)
    partition_key, sort_key = _attributes(text, partition), _attributes(text, sort) if slash else ()
    if set(partition_key) & set(sort_key):
        raise ProposalError(f"{text!r}: an attribute is in both the partition key and the sort key")
    return Proposal(
        name=name + PROPOSED,
        partition_key=partition_key,
        sort_key=sort_key,
        projection=projection,
        included=included,
        table=table,
    )


def _rekeying(text: str) -> Proposal:
    table, rest = _table(text)
    attributes = _attributes(text, rest)
    name = KEYED_BY + "+".join(attributes)
    if len(name) > MAX_NAME_CHARS:
        raise ProposalError(f"{text!r}: the attribute names are too long (at most {MAX_NAME_CHARS} characters)")
    return Proposal(name=name + PROPOSED, partition_key=attributes, table=table)


def _table(text: str) -> tuple[str | None, str]:
    head, colon, rest = text.partition(":")
    if not colon or "=" in head:
        return None, text  # no table prefix (a projection's colon comes after the "=")
    if not _TABLE.match(head.strip()):
        raise ProposalError(f"{text!r}: {head.strip()!r} is no table name (3 to 255 of a-z A-Z 0-9 _ . -)")
    return head.strip(), rest


def _attributes(text: str, listed: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in listed.split("+"))
    if not names or not all(names):
        raise ProposalError(f"{text!r}: an attribute name is missing")
    for name in names:
        if not _ATTRIBUTE.match(name):
            raise ProposalError(f"{text!r}: {name!r} is no attribute name here (no spaces or : ; = + / ( ) ,)")
    if len(names) > MAX_KEY_ATTRIBUTES:
        raise ProposalError(f"{text!r}: at most {MAX_KEY_ATTRIBUTES} attributes per key")
    if len(set(names)) != len(names):
        raise ProposalError(f"{text!r}: an attribute is named twice")
    return names


def _projection(text: str, given: str) -> tuple[str, frozenset[str]]:
    if given.upper() in (ALL, KEYS_ONLY):
        return given.upper(), frozenset()
    match = _INCLUDE.match(given)
    if not match:
        raise ProposalError(f"{text!r}: the projection is ALL, KEYS_ONLY or INCLUDE(attr,attr), got {given!r}")
    included = [name.strip() for name in match["attributes"].split(",")]
    if not all(included):
        raise ProposalError(f"{text!r}: INCLUDE lists an empty attribute name")
    if len(set(included)) != len(included):
        raise ProposalError(f"{text!r}: INCLUDE lists an attribute twice")
    for name in included:
        if not _ATTRIBUTE.match(name):
            raise ProposalError(f"{text!r}: {name!r} is no attribute name here (no spaces or : ; = + / ( ) ,)")
    return INCLUDE, frozenset(included)
