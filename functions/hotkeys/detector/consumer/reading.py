"""How an invocation reads its records into changes, whichever stream they come from.

A DynamoDB stream's record is parsed as it comes. A record of Kinesis Data Streams for DynamoDB is
unwrapped first (``domain.kinesis``), and its change is checked against what its shard counted lately
(``seen``): DynamoDB may send one change to Kinesis more than once, each time under a new sequence number.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hotkeys.detector.consumer.seen import Seen, SeenChanges, sequence_tag
from hotkeys.detector.domain.indexes import IndexSpec
from hotkeys.detector.domain.kinesis import identity, kinesis_sequence, unwrap
from hotkeys.detector.domain.records import Change, IndexesOf, ResolveKey, TtlAttributeOf, parse_change, sequence_of


class Reader:
    """Made once per invocation: ``sequence_of`` reads a record's batch item identifier, ``read`` its change."""

    __slots__ = ("_indexes", "_resolve_key", "_seen", "_ttl_attribute", "beyond_horizon", "sequence_of")

    def __init__(
        self,
        resolve_key: ResolveKey,
        indexes: IndexesOf | None,
        ttl_attribute: TtlAttributeOf | None,
        seen: SeenChanges | None,
    ) -> None:
        self._resolve_key = resolve_key
        self._indexes = indexes
        self._ttl_attribute = ttl_attribute
        self._seen = seen
        self.sequence_of = sequence_of if seen is None else kinesis_sequence
        # Kinesis records older than what their shard remembers: counted (BatchOutcome.beyond_horizon).
        self.beyond_horizon = 0

    def read(self, record: Any, sequence: int, sized: bool, redelivered: bool) -> tuple[Change, dict[str, Any], bool]:
        """(the change, the record in DynamoDB Streams' shape, whether the change was counted already under
        another record: a Kinesis copy); raises MalformedRecord. ``sized``: a TTL deletion's images are sized
        too; ``redelivered``: the shard's ranges say this record was counted (its change is not looked up)."""
        seen = self._seen
        if seen is None:
            return (
                parse_change(record, self._resolve_key, sequence, self._indexes, sized, self._ttl_attribute),
                record,
                False,
            )
        unwrapped = unwrap(record)
        shaped = unwrapped.record
        change = parse_change(shaped, self._resolve_key, sequence, self._indexes, sized, self._ttl_attribute)
        if redelivered:
            return change, shaped, False
        second = unwrapped.created_us // 1_000_000
        digest = identity(change, unwrapped)
        tag = sequence_tag(sequence)
        verdict = seen.check(second, digest, tag)
        if verdict is Seen.REPEATED:
            return change, shaped, True
        if verdict is Seen.BEYOND_HORIZON:
            self.beyond_horizon += 1
        elif verdict is Seen.NEW:
            seen.add(second, digest, tag)
        return change, shaped, False


def invocation_reader(
    resolve_key: ResolveKey, indexes: IndexesOf | None, ttl_attribute: TtlAttributeOf | None, seen: SeenChanges | None
) -> tuple[Reader, Callable[[str], tuple[str, ...]] | None]:
    """An invocation's reader, and the GSIs each table's segments count: each port is asked once per table
    and invocation (a dictionary lookup per record)."""
    ttl = _InvocationTtl(ttl_attribute).__getitem__ if ttl_attribute is not None else None
    invocation_indexes = _InvocationIndexes(indexes) if indexes is not None else None
    specs = invocation_indexes.__getitem__ if invocation_indexes is not None else None
    index_names = invocation_indexes.names.__getitem__ if invocation_indexes is not None else None
    return Reader(resolve_key, specs, ttl, seen), index_names


class _InvocationTtl(dict[str, str | None]):
    """The tables' TTL attributes as the port said at this invocation's first record of each table: a
    dictionary lookup per record (its ``__getitem__`` is the port the records are parsed with)."""

    def __init__(self, port: TtlAttributeOf) -> None:
        super().__init__()
        self._port = port

    def __missing__(self, table: str) -> str | None:
        attribute = self[table] = self._port(table)
        return attribute


class _InvocationIndexes(dict[str, tuple[IndexSpec, ...]]):
    """The tables' indexes as the port said at this invocation's first record of each table: one
    lookup per table and invocation instead of one (and a clock read) per record. Its ``__getitem__``
    is the port the records are parsed with and ``names`` gives the GSIs a segment counts: per record,
    each is a dictionary lookup."""

    def __init__(self, port: IndexesOf) -> None:
        super().__init__()
        self._port = port
        self.names = _IndexNames(self)

    def __missing__(self, table: str) -> tuple[IndexSpec, ...]:
        specs = self[table] = self._port(table)
        return specs


class _IndexNames(dict[str, tuple[str, ...]]):
    """A table's GSI names (the segment's own summaries are for GSIs: LSI writes count as the table key's)."""

    def __init__(self, specs: _InvocationIndexes) -> None:
        super().__init__()
        self._specs = specs

    def __missing__(self, table: str) -> tuple[str, ...]:
        names = self[table] = tuple(spec.name for spec in self._specs[table] if not spec.local)
        return names
