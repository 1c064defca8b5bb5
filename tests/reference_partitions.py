"""An independent reading of "is this partition hot?", for tests to check the alert rules against.

Written from the AWS documentation, not from the detector's code, and in another shape: it keeps
every write of the generated records (no summaries, no heads, no merging of parts), summed per
partition over ALL stream shards, per second of event time.

* A partition of the table is a partition key value; a partition of a global secondary index is an
  index partition key value. "Each partition can support a maximum of ... 1,000 write capacity
  units" (DynamoDB developer guide, "Partitions and data distribution"; the same holds for each GSI
  partition). A stream shard carries only part of the writes: an index partition takes writes from
  items on every table partition, and a rollover or a split divides a key's writes between shards.
  So a partition's rate is the sum over all shards (docs/decisions.md §5, §49).
* Write units per stream record: the larger image, one unit per started KB (``reference_sizing``);
  the index's writes follow the GSI rules (``reference_gsi.index_writes``). TTL deletions consume no
  write capacity ("Time to Live ... deletes ... do not consume write throughput").
* Windows: tumbling windows of ``window_seconds`` aligned to the epoch (the emulation's default),
  bursts measured in epoch-aligned buckets of ``bucket_seconds`` (the detector's
  ``ALERT_MIN_SPAN_SECONDS``: "its heaviest burst bucket ... aligned to the epoch").

Verdicts keep margins on both sides, so the oracle never depends on how the detector estimates:
``must_fire`` when the heaviest aligned bucket of the sum reaches ``margin`` times the alert rate (or,
for ``active_span=True``, the key's own active span averages that much after leaving out one batch
of writes: the rules are evaluated once per batch); ``must_not_fire`` when no stretch of at least
one bucket's length (divided by one second less than its length, the stricter of the two readings
of a span) ever averages ``quiet`` times the partition limit. Anything between is left undecided.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tests import reference_gsi, reference_sizing

TABLE = None  # the index name of a table partition


@dataclass
class Partition:
    """One partition's writes in one window: write units per second of event time, over all shards."""

    table: str
    index: str | None
    key: str
    window_start: int
    per_second: dict[int, int] = field(default_factory=lambda: defaultdict(int))

    @property
    def units(self) -> int:
        return sum(self.per_second.values())

    def buckets(self, bucket_seconds: int) -> dict[int, int]:
        """Write units per epoch-aligned bucket."""
        found: dict[int, int] = defaultdict(int)
        for second, units in self.per_second.items():
            found[second - second % bucket_seconds] += units
        return found

    def heaviest_bucket(self, bucket_seconds: int) -> int:
        """Write units in the heaviest aligned bucket (0 with no writes)."""
        return max(self.buckets(bucket_seconds).values(), default=0)

    def highest_stretch_rate(self, min_seconds: int) -> float:
        """The highest average over any stretch of whole seconds at least ``min_seconds`` long, each
        divided by max(``min_seconds``, its length - 1): an upper bound of any rate over a span."""
        if not self.per_second:
            return 0.0
        first, last = min(self.per_second), max(self.per_second)
        best = 0.0
        for start in range(first, last + 1):
            total = 0
            for end in range(start, last + 1):
                total += self.per_second.get(end, 0)
                length = end - start + 1
                # (a stretch shorter than the minimum span is divided by the minimum)
                best = max(best, total / max(min_seconds, length - 1))
        return best

    def rate(self, min_seconds: int) -> float:
        """A key's rate as docs/decisions.md §79 words it, from the writes themselves: the higher of its
        heaviest aligned bucket and its units over its own first to last write (at least ``min_seconds``)."""
        return max(self.heaviest_bucket(min_seconds) / min_seconds, self.active_span_rate(min_seconds))

    def active_span_rate(self, min_seconds: int, leave_out: int = 0) -> float:
        """The partition's units less ``leave_out`` over its own active span (first to last write,
        inclusive, at least ``min_seconds``)."""
        if not self.per_second:
            return 0.0
        span = max(min_seconds, max(self.per_second) - min(self.per_second) + 1)
        return max(0, self.units - leave_out) / span


@dataclass(frozen=True)
class Limits:
    partition_wcu_limit: int
    alert_threshold: float = 0.8
    resolve_below: float = 0.6  # the alert threshold minus the hysteresis (defaults 0.8 and 0.2)
    alert_min_span_seconds: int = 10
    window_seconds: int = 60

    @property
    def alert_rate(self) -> float:
        return self.alert_threshold * self.partition_wcu_limit


def window_of(second: int, window_seconds: int) -> int:
    return second - second % window_seconds


def partitions(
    shards: Iterable[Iterable[dict[str, Any]]],
    description: dict[str, Any] | None = None,
    window_seconds: int = 60,
    partition_key: str = "pk",
) -> dict[tuple[str, str | None, str, int], Partition]:
    """Every partition of every window, (table, index, key, window start) → its writes summed over
    all ``shards`` (lists of Lambda-format records). ``description``: the table's DescribeTable
    ``Table`` (its global secondary indexes are counted too)."""
    found: dict[tuple[str, str | None, str, int], Partition] = {}

    def add(table: str, index: str | None, key: str, second: int, units: int) -> None:
        window = window_of(second, window_seconds)
        name = (table, index, key, window)
        if name not in found:
            found[name] = Partition(table, index, key, window)
        found[name].per_second[second] += units

    for records in shards:
        for record in records:
            if record.get("userIdentity", {}).get("type") == "Service":
                continue  # a TTL deletion: no write capacity
            stream = record["dynamodb"]
            table = record["eventSourceARN"].split(":table/")[1].split("/")[0]
            second = int(stream["ApproximateCreationDateTime"])
            old, new = stream.get("OldImage"), stream.get("NewImage")
            ((_type, key),) = stream["Keys"][partition_key].items()
            add(table, TABLE, str(key), second, reference_sizing.write_units(old, new))
            for index in (description or {}).get("GlobalSecondaryIndexes", []):
                for index_key, units in reference_gsi.index_writes(description, index, old, new):
                    add(table, index["IndexName"], index_key, second, units)
    return found


def rate_when_judged(
    seen: Iterable[Iterable[dict[str, Any]]],
    table: str,
    key: str,
    window: int,
    latest: int,
    description: dict[str, Any] | None = None,
    min_seconds: int = 10,
    index: str | None = TABLE,
) -> float:
    """The partition's rate over its active span as the rules define it when they run after the
    records ``seen`` (every shard's, up to that invocation): its write units in the window over all
    shards, over its first write to ``latest`` (the latest record seen, inclusive), at least
    ``min_seconds``."""
    partition = partitions(seen, description).get((table, index, key, window))
    if partition is None:
        return 0.0
    return partition.units / max(min_seconds, latest - min(partition.per_second) + 1)


@dataclass(frozen=True)
class Verdict:
    must_fire: bool
    must_not_fire: bool
    heaviest_bucket_rate: float  # WCU/s
    highest_rate: float  # WCU/s, any stretch of at least one bucket


def verdict(
    partition: Partition,
    limits: Limits,
    margin: float = 1.1,
    quiet: float = 0.5,
    active_span_leave_out: int | None = None,
) -> Verdict:
    """Must this partition fire in this window, must it not? ``active_span_leave_out``: also count
    the partition's own active span as evidence (units of one batch left out)."""
    seconds = limits.alert_min_span_seconds
    bucket_rate = partition.heaviest_bucket(seconds) / seconds
    highest = partition.highest_stretch_rate(seconds)
    evidence = bucket_rate
    if active_span_leave_out is not None:
        evidence = max(evidence, partition.active_span_rate(seconds, active_span_leave_out))
    return Verdict(
        must_fire=evidence >= margin * limits.alert_rate,
        must_not_fire=highest < quiet * limits.partition_wcu_limit,
        heaviest_bucket_rate=bucket_rate,
        highest_rate=highest,
    )


def cool(partition: Partition | None, limits: Limits) -> bool:
    """The partition's whole window is clearly under the resolve level: no stretch of one bucket or
    more reaches half of it (a partition with no writes in the window is cool)."""
    if partition is None:
        return True
    return (
        partition.highest_stretch_rate(limits.alert_min_span_seconds)
        < 0.5 * limits.resolve_below * limits.partition_wcu_limit
    )


def incident_windows(
    found: dict[tuple[str, str | None, str, int], Partition], table: str, index: str | None, key: str, limits: Limits
) -> tuple[list[int], list[int], list[int]]:
    """(windows where the partition must fire, windows where it may be hot, windows clearly cool)
    among the windows any partition of the table wrote in."""
    windows = sorted({name[3] for name in found if name[0] == table})
    hot, maybe, quiet = [], [], []
    for window in windows:
        partition = found.get((table, index, key, window))
        if partition is not None and verdict(partition, limits).must_fire:
            hot.append(window)
        elif cool(partition, limits):
            quiet.append(window)
        else:
            maybe.append(window)
    return hot, maybe, quiet
