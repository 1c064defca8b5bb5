"""How an invocation reads its records into changes, whichever stream they come from.

A DynamoDB stream's record is parsed as it comes. A record of Kinesis Data Streams for DynamoDB is
unwrapped first (``domain.kinesis``), and its change is checked against what its shard counted lately
(``seen``): DynamoDB may send one change to Kinesis more than once, each time under a new sequence number.
"""

from __future__ import annotations

from typing import Any

from hotkeys.detector.consumer.seen import Seen, SeenChanges
from hotkeys.detector.domain.kinesis import identity, kinesis_sequence, unwrap
from hotkeys.detector.domain.records import Change, ResolveKey, parse_change, sequence_of
from hotkeys.detector.domain.records import IndexesOf as RecordIndexes
from hotkeys.detector.domain.records import TtlAttributeOf as RecordTtl


class Reader:
    """Made once per invocation: ``sequence_of`` reads a record's batch item identifier, ``read`` its change."""

    __slots__ = ("_indexes", "_resolve_key", "_seen", "_ttl_attribute", "beyond_horizon", "sequence_of")

    def __init__(
        self,
        resolve_key: ResolveKey,
        indexes: RecordIndexes | None,
        ttl_attribute: RecordTtl | None,
        seen: SeenChanges | None,
    ) -> None:
        self._resolve_key = resolve_key
        self._indexes = indexes
        self._ttl_attribute = ttl_attribute
        self._seen = seen
        self.sequence_of = sequence_of if seen is None else kinesis_sequence
        # Kinesis records older than what their shard remembers: counted (BatchOutcome.beyond_horizon).
        self.beyond_horizon = 0

    def read(self, record: Any, sequence: int, sized: bool) -> tuple[Change, dict[str, Any], bool]:
        """(the change, the record in DynamoDB Streams' shape, whether the change was counted already: a
        Kinesis copy); raises MalformedRecord. ``sized``: a TTL deletion's images are sized too."""
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
        second = unwrapped.created_us // 1_000_000
        digest = identity(change, unwrapped)
        verdict = seen.check(second, digest)
        if verdict is Seen.REPEATED:
            return change, shaped, True
        if verdict is Seen.BEYOND_HORIZON:
            self.beyond_horizon += 1
        else:
            seen.add(second, digest)
        return change, shaped, False
