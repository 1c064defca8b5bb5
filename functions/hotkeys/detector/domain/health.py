"""Data health from the items a window's writes left: a TTL attribute DynamoDB will never act on, and
items near the 400 KB limit. Pure: the record's new image is read once, as it is sized.

TTL (DynamoDB developer guide, "Formatting an item's TTL attribute"): "The item must contain the
attribute specified when TTL was enabled on the table"; "The TTL attribute's value must be a
top-level Number data type"; "must be a timestamp in Unix epoch time format in seconds. If you use
any other format, the TTL processes ignore the item"; "must be a datetimestamp with an expiration of
no more than five years in the past". A Number of 10^11 or more lies after the year 5138 read as
seconds: it is milliseconds (10^11 to 10^14) or a finer unit (10^14 and more). AWS does not say how
long five years is: only values older than five years of 366 days (``TOO_OLD_SECONDS``: every
reading) are called too old.

Sizes: each written item's size (its new image, by DynamoDB's size rules) goes into a bucket of a
log scale with ``SUB_BUCKETS`` equal steps per doubling, so a percentile is the upper bound of its
bucket: at most an eighth above the true value, never below it. The largest size, the items
within 12.5% of the limit and the items over 10 KB with their write units are counted exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

ITEM_LIMIT_BYTES = 400 * 1024
NEAR_LIMIT_BYTES = ITEM_LIMIT_BYTES - ITEM_LIMIT_BYTES // 8  # within 12.5%: the write after next may fail
LARGE_ITEM_BYTES = 10 * 1024
TOO_OLD_SECONDS = 5 * 366 * 86_400
MILLISECONDS_FROM = 10**11
MICROSECONDS_FROM = 10**14
SUB_BUCKETS = 8
_SMALLEST = 64  # sizes up to this share the first bucket


class TtlVerdict(IntEnum):
    """What DynamoDB's TTL makes of an item (an int: each counts in a list, per record, where the
    per-record path carries its plain ``int`` value: a list indexed by an enum member is slower)."""

    OK = 0
    MISSING = 1
    NOT_A_NUMBER = 2
    MILLISECONDS = 3
    MICROSECONDS = 4
    TOO_OLD = 5

    @property
    def label(self) -> str:
        return self.name.lower()


# Items DynamoDB's TTL will never delete although they carry the attribute (MISSING is no verdict on
# its own: a table may keep items that should never expire).
IGNORED = frozenset((TtlVerdict.NOT_A_NUMBER, TtlVerdict.MILLISECONDS, TtlVerdict.MICROSECONDS, TtlVerdict.TOO_OLD))
IGNORED_FROM = min(IGNORED).value  # they are the verdicts from it on (one comparison per record)
assert {verdict for verdict in TtlVerdict if verdict >= IGNORED_FROM} == IGNORED
_BY_LABEL = {verdict.label: verdict for verdict in TtlVerdict}

# What a verdict means for the item, and the fix ({attribute}: the TTL attribute); OK needs neither.
TTL_PROBLEMS: dict[TtlVerdict, tuple[str, str]] = {
    TtlVerdict.MISSING: ("do not carry {attribute}", "set it on every item that should expire"),
    TtlVerdict.NOT_A_NUMBER: ("hold {attribute} as another type than Number", "write the epoch seconds as a Number"),
    TtlVerdict.MILLISECONDS: ("hold {attribute} in milliseconds", "divide by 1,000: TTL reads epoch seconds"),
    TtlVerdict.MICROSECONDS: (
        "hold {attribute} in microseconds or finer",
        "write epoch seconds: TTL reads no finer unit",
    ),
    TtlVerdict.TOO_OLD: ("hold {attribute} more than five years past", "TTL ignores it: delete such items yourself"),
}


def ttl_problem(verdict: TtlVerdict, attribute: str | None) -> tuple[str, str]:
    """What ``verdict`` means and its fix, naming the attribute (or "the TTL attribute" when unknown)."""
    what, fix = TTL_PROBLEMS[verdict]
    return what.format(attribute=attribute or "the TTL attribute"), fix


# The verdicts' plain values: an enum's member lookup costs more than the rest of a verdict.
_OK, _MISSING, _NOT_A_NUMBER = TtlVerdict.OK.value, TtlVerdict.MISSING.value, TtlVerdict.NOT_A_NUMBER.value
_MILLISECONDS, _MICROSECONDS = TtlVerdict.MILLISECONDS.value, TtlVerdict.MICROSECONDS.value
_TOO_OLD = TtlVerdict.TOO_OLD.value


def ttl_verdict(value: Any, written_at: int) -> int:
    """What DynamoDB's TTL makes of an item whose TTL attribute is ``value`` (None: absent), a
    ``TtlVerdict``'s value. ``value`` comes from an image sizing accepted (``domain.sizing``): a
    one-entry map of a known type, and an ``N`` holds a number DynamoDB accepts."""
    if value is None:
        return _MISSING
    number = value.get("N")
    if number is None:
        return _NOT_A_NUMBER
    if len(number) < 11 and number.isdigit():  # the usual case, seconds: no float needed
        return _TOO_OLD if int(number) < written_at - TOO_OLD_SECONDS else _OK
    seconds = float(number)  # finite: DynamoDB's numbers stop at 1E+126
    if seconds >= MICROSECONDS_FROM:
        return _MICROSECONDS
    if seconds >= MILLISECONDS_FROM:
        return _MILLISECONDS
    return _TOO_OLD if seconds < written_at - TOO_OLD_SECONDS else _OK


def size_bucket(size: int) -> int:
    """The bucket of an item size: 0 up to ``_SMALLEST`` bytes, then ``SUB_BUCKETS`` equal steps per
    doubling (the size's leading four bits), so a bucket's largest size is less than an eighth above
    its smallest."""
    if size <= _SMALLEST:
        return 0
    shift = size.bit_length() - 4
    return (shift - 3) * SUB_BUCKETS + (size >> shift) - SUB_BUCKETS + 1


def bucket_bound(bucket: int) -> int:
    """The largest size a bucket holds."""
    if bucket == 0:
        return _SMALLEST
    octave, step = divmod(bucket - 1, SUB_BUCKETS)
    return ((SUB_BUCKETS + step + 1) << (octave + 3)) - 1


_LAST_SIZE = ITEM_LIMIT_BYTES * 2  # sizes past it (no valid item) share the last bucket
_BUCKETS = size_bucket(_LAST_SIZE) + 1


# A size's bucket is ``shift * SUB_BUCKETS + (size >> shift) - _BUCKET_OFFSET`` (``size_bucket``, inlined).
_BUCKET_OFFSET = 4 * SUB_BUCKETS - 1


@dataclass(slots=True)
class Health:
    """One window's written items: their TTL verdicts (when the table has a TTL attribute) and sizes."""

    wcu: int = 0
    verdicts: list[int] = field(default_factory=lambda: [0] * len(TtlVerdict))  # items per TtlVerdict
    buckets: list[int] = field(default_factory=lambda: [0] * _BUCKETS)  # items per size bucket
    max_size: int = 0
    near_limit: int = 0
    large: int = 0  # items over LARGE_ITEM_BYTES
    large_wcu: int = 0
    # The TTL attribute its verdicts judged (None: not judged), so every reader names the one they used.
    attribute: str | None = None

    def add(self, size: int, wcu: int, ttl: int | None) -> None:
        """One written item of ``size`` bytes and ``wcu`` write units; ``ttl``: its verdict's value.
        Runs per record: ``size_bucket`` is inlined (the health property test holds the two equal)."""
        self.wcu += wcu
        if ttl is not None:
            self.verdicts[ttl] += 1
        if size <= _SMALLEST:
            self.buckets[0] += 1
        elif size < _LAST_SIZE:
            shift = size.bit_length() - 4
            self.buckets[shift * SUB_BUCKETS + (size >> shift) - _BUCKET_OFFSET] += 1
        else:
            self.buckets[-1] += 1
        if size > self.max_size:  # noqa: PLR1730 (per record: a comparison costs less than max())
            self.max_size = size
        if size > LARGE_ITEM_BYTES:
            self.large += 1
            self.large_wcu += wcu
            if size >= NEAR_LIMIT_BYTES:
                self.near_limit += 1

    @property
    def written(self) -> int:
        """Items written (each is in one size bucket)."""
        return sum(self.buckets)

    @property
    def ttl(self) -> dict[str, int]:
        """Items per TTL verdict (its label), those with a count."""
        return {verdict.label: count for verdict, count in zip(TtlVerdict, self.verdicts, strict=True) if count}

    def copy(self) -> Health:
        return Health(
            self.wcu,
            list(self.verdicts),
            list(self.buckets),
            self.max_size,
            self.near_limit,
            self.large,
            self.large_wcu,
            self.attribute,
        )

    def merge(self, other: Health) -> None:
        self.wcu += other.wcu
        self.verdicts = [mine + theirs for mine, theirs in zip(self.verdicts, other.verdicts, strict=True)]
        self.buckets = [mine + theirs for mine, theirs in zip(self.buckets, other.buckets, strict=True)]
        self.max_size = max(self.max_size, other.max_size)
        self.near_limit += other.near_limit
        self.large += other.large
        self.large_wcu += other.large_wcu
        self.attribute = other.attribute or self.attribute

    def percentile(self, fraction: float) -> int:
        """The nearest-rank percentile's upper bound (its bucket's largest size, at most the largest item)."""
        if not self.written:
            return 0
        rank = max(1, math.ceil(fraction * self.written))
        seen = 0
        for bucket, count in enumerate(self.buckets):
            seen += count
            if seen >= rank:
                return min(bucket_bound(bucket), self.max_size)
        return self.max_size

    def to_json(self) -> dict[str, Any]:
        """Stored form (``from_json`` reads it back): short names, TTL verdicts by label and sizes as
        [bucket, items] pairs, those with a count only; the attribute judged, when one was."""
        stored: dict[str, Any] = {
            "n": self.written,
            "u": self.wcu,
            "t": dict(sorted(self.ttl.items())),
            "s": [[bucket, count] for bucket, count in enumerate(self.buckets) if count],
            "m": self.max_size,
            "nl": self.near_limit,
            "l": self.large,
            "lu": self.large_wcu,
        }
        if self.attribute is not None:
            stored["a"] = self.attribute
        return stored

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Health:
        health = cls()
        if not data:
            return health
        health.wcu = int(data["u"])  # ("n", the items written, is the buckets' sum)
        for label, count in data["t"].items():
            health.verdicts[_BY_LABEL[str(label)]] = int(count)
        for bucket, count in data["s"]:
            health.buckets[min(int(bucket), _BUCKETS - 1)] = int(count)
        health.max_size, health.near_limit = int(data["m"]), int(data["nl"])
        health.large, health.large_wcu = int(data["l"]), int(data["lu"])
        health.attribute = data.get("a")
        return health


# Write units drawn by items over LARGE_ITEM_BYTES at which their share is worth a line (quiet below).
LARGE_UNITS_SHARE = 0.25
# An index whose write units reach this share of its table's is named with what it costs.
COSTLY_INDEX_SHARE = 0.5
# Under this share of the partition limit at its peak, a costly index's partitions are "cold".
COLD_PEAK_SHARE = 0.1


@dataclass(frozen=True)
class IndexCost:
    """One GSI's write units beside its table's, in the same windows."""

    name: str
    wcu: int
    table_wcu: int
    peak_share: float  # its hottest partition's peak, as a share of the partition limit
    projection: str | None = None  # as DescribeTable states it, when known

    @property
    def share(self) -> float:
        return self.wcu / self.table_wcu if self.table_wcu else 0.0


def findings(table: str, health: Health, indexes: list[IndexCost], ttl_attribute: str | None = None) -> list[str]:
    """What the items written to ``table`` say, one line each, with the fix; none when all is well."""
    # Items without the attribute are a problem only beside items that carry it: a table whose writes never
    # carry it may simply not expire items (doctor says when TTL is on and nothing written carries it).
    carried = sum(health.verdicts) - health.verdicts[TtlVerdict.MISSING]
    lines = [
        _ttl_line(table, health, verdict, ttl_attribute)
        for verdict in TTL_PROBLEMS
        if health.verdicts[verdict] and (carried or verdict != TtlVerdict.MISSING)
    ]
    if health.near_limit:
        lines.append(
            f"{table}: {health.near_limit:,} item{'s' if health.near_limit > 1 else ''} written within 12.5% of "
            f"DynamoDB's 400 KB item limit (largest {health.max_size / 1024:,.1f} KB): a few more attributes and "
            "the write fails; move large attributes to S3 and keep a pointer, or compress them"
        )
    if health.large and health.wcu and health.large_wcu / health.wcu >= LARGE_UNITS_SHARE:
        lines.append(
            f"{table}: items over 10 KB are {health.large / health.written:.0%} of writes and "
            f"{health.large_wcu / health.wcu:.0%} of write units (p50 up to {health.percentile(0.5) / 1024:,.1f} KB, "
            f"p99 up to {health.percentile(0.99) / 1024:,.1f} KB): each write pays 1 unit per KB; split rarely "
            "changed large attributes into an item of their own"
        )
    for index in indexes:
        if index.share < COSTLY_INDEX_SHARE or index.peak_share >= COLD_PEAK_SHARE:
            continue  # cheap, or busy enough to be read: its cost is in the figures, not a finding
        projection = " (projection ALL: every write copies the whole item)" if index.projection == "ALL" else ""
        lines.append(
            f"{table} index {index.name}: {index.wcu:,} write units, {index.share:.0%} of the table's{projection}, "
            "and its partitions stay cold (peak under 10% of a partition): if nothing reads it, drop it or project "
            "less (reads are not in the stream: check its read metrics)"
        )
    return lines


def _ttl_line(table: str, health: Health, verdict: TtlVerdict, attribute: str | None) -> str:
    count = health.verdicts[verdict]
    judged = sum(health.verdicts)
    what, fix = ttl_problem(verdict, attribute)
    return (
        f"{table}: {count:,} of {judged:,} items written ({count / judged:.1%}) {what}: TTL never deletes them; {fix}"
    )
