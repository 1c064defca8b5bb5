"""Synthetic DynamoDB stream workloads, reproducible by seed.

Keys follow a Zipf law (``hotkeys generate``'s default exponent, ``DEFAULT_ZIPF``, makes ordinary
traffic: no key near the share alert); items are realistic (~15 attributes, nested map and
list, a payload sized to the requested item size); hot keys can be injected at
a given write-unit rate for a given time; keys map to shards by hash, as
partitions do. Items can carry grouping attributes (``--attribute region=4``): a value per
partition key, Zipf-skewed, derived from the key by hashing so the random stream is unchanged.
Items can carry a TTL attribute in formats that DynamoDB's TTL ignores (``--ttl-values``), and a share
of keys can have items near the 400 KB limit (``--large-fraction``): both a property of the key, by
hashing too, so a workload without them is the one it always was.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import heapq
import itertools
import math
import random
import re
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from hotkeys.detector.domain.sizing import image_size, number_size
from hotkeys.emulator.events import ItemChange, sequence_number, stream_record, to_dynamodb_json

T0 = 1_796_083_200  # 2026-12-01T00:00:00Z
# ``hotkeys generate --zipf``'s default: ordinary traffic, which raises no alert unless --hot (or a steeper
# --zipf) asks for one: the most popular of the default keys stays well under the share alert's
# SHARE_THRESHOLD, as it does not at 1.1 (tests/integration/test_generate_defaults.py). With few keys, some key
# takes a heavy share whatever the exponent. ``Workload``'s own default stays 1.1: the samples in events/ and
# the benchmarks are drawn with it.
DEFAULT_ZIPF = 0.8
# At most this many records per run: generating is ~µs-per-record Python work, so a mistyped rate
# (1e9) would otherwise run for hours before its first file is complete.
MAX_RECORDS = 20_000_000
_HOT = re.compile(r"^(?P<key>.+):(?P<wcu>\d+(\.\d+)?)wcu@(?P<start>\d+)s(\+(?P<duration>\d+)s)?$")
_ATTRIBUTE = re.compile(r"^(?P<name>[^=]*)=(?P<cardinality>[+-]?\d+)$")
# At most this many values of one --attribute: its Zipf weights are precomputed (~32 MB of floats at the cap).
MAX_CARDINALITY = 1_000_000
# The attributes a generated item (or a --hot key's image, or a TTL deletion's) already has.
ITEM_ATTRIBUTES = frozenset(
    {
        "pk",
        "status",
        "createdAt",
        "updatedAt",
        "amount",
        "currency",
        "version",
        "gift",
        "address",
        "lines",
        "tags",
        "note",
        "expireAt",
        "seat",
    }
)


# --ttl-values: the TTL attribute (the one TTL deletions' old images carry) and the formats it is written in.
TTL_ATTRIBUTE = "expireAt"
TTL_FORMATS = ("seconds", "milliseconds", "microseconds", "string", "missing", "too_old")
TTL_SHARE_TOLERANCE = 1e-9
DAY = 86_400
# A "too_old" value: six years (of 365.25 days) before the write, past DynamoDB's five-year bound however counted.
TOO_OLD_SECONDS = 2_191 * DAY + DAY // 2
# --large-bytes: at most 400 KB (409,600 bytes) less a margin, as an update's old image holds up to 200 more
# bytes of note and 4 more of updatedAt than its new one, and a TTL deletion's old image 14 of expireAt.
ITEM_LIMIT_BYTES = 409_600
MAX_LARGE_BYTES = ITEM_LIMIT_BYTES - 256
DEFAULT_LARGE_BYTES = 380_000


class GenerateError(ValueError):
    """Invalid generator options (shown as one line)."""


@dataclass(frozen=True)
class InjectedHotKey:
    """A key the generator makes hot (``--hot``): this rate from ``start`` for ``duration`` seconds
    (not ``rules.HotKey``, which is a key the detector found hot)."""

    key: str
    wcu_per_second: float
    start: int
    duration: int

    @classmethod
    def parse(cls, text: str, workload_duration: int) -> InjectedHotKey:
        """``KEY:RATEwcu@STARTs[+DURATIONs]``; without a duration the key stays hot to the workload's end."""
        match = _HOT.match(text)
        if not match:
            raise GenerateError(f"--hot must look like 'event#42:900wcu@30s' or 'k:500wcu@0s+60s', got {text!r}")
        start = int(match["start"])
        duration = int(match["duration"]) if match["duration"] else workload_duration - start
        hot = cls(match["key"], float(match["wcu"]), start, duration)
        hot.check(workload_duration, text)
        return hot

    def check(self, workload_duration: int, text: str | None = None) -> None:
        """The hot traffic lies inside the workload's time (``--duration``), and is some traffic."""
        shown = repr(text) if text is not None else repr(self.key)
        if self.start >= workload_duration:
            raise GenerateError(f"--hot {shown} starts at {self.start} s, past --duration {workload_duration} s")
        if self.wcu_per_second <= 0 or self.duration < 1:
            raise GenerateError(f"--hot {shown}: needs a rate above 0 and a duration of at least 1 s")
        if self.start + self.duration > workload_duration:
            raise GenerateError(
                f"--hot {shown} runs from {self.start} s to {self.start + self.duration} s, past --duration "
                f"{workload_duration} s: start it earlier, shorten it or raise --duration"
            )

    @property
    def records(self) -> int:
        # ~900-byte items cost one write unit each, so the record rate is the WCU rate.
        return int(self.wcu_per_second * self.duration)


@dataclass(frozen=True)
class Workload:
    table: str = "orders"
    keys: int = 10_000
    zipf: float = 1.1  # (the CLI's default is DEFAULT_ZIPF)
    rate: float = 100.0  # background records per second, all shards together
    duration: int = 120
    item_bytes: int = 1000
    item_spread: float = 0.3  # lognormal sigma of the item size
    ttl_fraction: float = 0.0
    shards: int = 1
    seed: int = 1
    start: int = T0
    hot: tuple[InjectedHotKey, ...] = field(default_factory=tuple)
    # (name, cardinality) of each --attribute: items carry name = "name#1".."name#<cardinality>"
    attributes: tuple[tuple[str, int], ...] = field(default_factory=tuple)
    # (format, share) of each --ttl-values format; none: items carry no TTL attribute (TTL deletions aside)
    ttl_values: tuple[tuple[str, float], ...] = field(default_factory=tuple)
    large_fraction: float = 0.0  # share of keys whose items are large_bytes (--large-fraction)
    large_bytes: int = DEFAULT_LARGE_BYTES

    @property
    def background_records(self) -> int:
        return int(self.rate * self.duration)

    def record_count(self) -> int:
        return self.background_records + sum(hot.records for hot in self.hot)

    def validate(self) -> None:
        if self.keys < 1 or self.shards < 1 or self.duration < 1 or self.rate < 0:
            raise GenerateError("--keys, --shards and --duration must be at least 1, --rate at least 0")
        for hot in self.hot:
            hot.check(self.duration)
        records = self.record_count()
        if records == 0:
            # An event file with no records would replay as a quiet table: say so instead of writing it.
            raise GenerateError(
                f"that workload is no records (--rate {self.rate:g} for {self.duration} s and no --hot key): "
                "raise --rate or --duration, or add --hot"
            )
        if records > MAX_RECORDS:
            raise GenerateError(
                f"that workload is {records:,} records, over the {MAX_RECORDS:,} one run writes "
                "(hours of writing, gigabytes of files): lower --rate, --duration or the --hot rates, "
                "or generate it in parts with --start"
            )
        if not 0 <= self.ttl_fraction <= 1:
            raise GenerateError("--ttl-fraction must be between 0 and 1")
        if self.item_bytes < 50 or self.item_bytes > 400_000:
            raise GenerateError("--item-bytes must be between 50 and 400000 (DynamoDB's item limit)")
        check_attributes(self.attributes)
        check_ttl_values(self.ttl_values)
        if not 0 <= self.large_fraction <= 1:
            raise GenerateError(f"--large-fraction must be between 0 and 1, got {self.large_fraction:g}")
        if not 1 <= self.large_bytes <= MAX_LARGE_BYTES:
            raise GenerateError(
                f"--large-bytes must be between 1 and {MAX_LARGE_BYTES} (every image stays within DynamoDB's "
                f"400 KB, {ITEM_LIMIT_BYTES:,} bytes), got {self.large_bytes}"
            )


def parse_attribute(text: str) -> tuple[str, int]:
    """``NAME=CARDINALITY`` (``region=4``); the name and the bounds are checked by ``check_attributes``."""
    match = _ATTRIBUTE.match(text)
    if not match:
        raise GenerateError(f"--attribute must look like 'region=4' (NAME=CARDINALITY), got {text!r}")
    attribute = (match["name"], int(match["cardinality"]))
    check_attributes((attribute,))
    return attribute


def check_attributes(attributes: tuple[tuple[str, int], ...]) -> None:
    """Each attribute has a name of its own (not one the items use, not given twice) and 1..1,000,000 values."""
    seen: set[str] = set()
    for name, cardinality in attributes:
        shown = repr(f"{name}={cardinality}")
        if not name:
            raise GenerateError(f"--attribute {shown}: the name is empty")
        if name in ITEM_ATTRIBUTES:
            raise GenerateError(
                f"--attribute {shown}: the items already have {name!r} (their attributes: "
                f"{', '.join(sorted(ITEM_ATTRIBUTES))}): choose another name"
            )
        if name in seen:
            raise GenerateError(f"--attribute {name!r} is given more than once")
        if not 1 <= cardinality <= MAX_CARDINALITY:
            raise GenerateError(f"--attribute {shown}: the cardinality must be between 1 and {MAX_CARDINALITY:,}")
        seen.add(name)


def parse_ttl_values(text: str) -> tuple[tuple[str, float], ...]:
    """``FORMAT=SHARE,...`` (``seconds=0.9,milliseconds=0.1``); the formats and shares are checked by
    ``check_ttl_values``."""
    values = []
    for part in text.split(","):
        format_, equals, share = part.partition("=")
        if not equals:
            raise GenerateError(
                f"--ttl-values must look like 'seconds=0.9,milliseconds=0.1' (FORMAT=SHARE,...), got {text!r}"
            )
        try:
            values.append((format_.strip(), float(share)))
        except ValueError:
            raise GenerateError(f"--ttl-values: the share of {format_.strip()!r} is not a number: {share!r}") from None
    checked = tuple(values)
    check_ttl_values(checked)
    return checked


def check_ttl_values(values: tuple[tuple[str, float], ...]) -> None:
    """Known formats, each once, shares from 0 to 1 summing to 1 (none at all: no TTL attribute)."""
    seen: set[str] = set()
    for format_, share in values:
        if format_ not in TTL_FORMATS:
            raise GenerateError(f"--ttl-values: unknown format {format_!r} (the formats: {', '.join(TTL_FORMATS)})")
        if format_ in seen:
            raise GenerateError(f"--ttl-values: {format_!r} is given more than once")
        if not 0 <= share <= 1:
            raise GenerateError(f"--ttl-values: the share of {format_!r} must be between 0 and 1, got {share:g}")
        seen.add(format_)
    total = math.fsum(share for _format, share in values)
    if values and abs(total - 1) > TTL_SHARE_TOLERANCE:
        raise GenerateError(f"--ttl-values: the shares must sum to 1, they sum to {total:.12g}")


def key_name(index: int) -> str:
    return f"user#{index:07d}"


def shard_of(key: str, shards: int) -> int:
    return zlib.crc32(key.encode()) % shards


def zipf_cumulative(count: int, exponent: float) -> list[float]:
    """Cumulative weights of ranks 1..count under a Zipf law (rank r weighs 1/r**exponent), for bisecting."""
    return list(itertools.accumulate(1 / (rank**exponent) for rank in range(1, count + 1)))


@functools.lru_cache(maxsize=16)
def _attribute_weights(cardinality: int) -> list[float]:
    return zipf_cumulative(cardinality, 1.0)


def attribute_value(key: str, name: str, cardinality: int, seed: int) -> str:
    """``NAME#<n>``, n in 1..cardinality, Zipf-distributed over keys (1 the most common), a property of
    the key: a hash of (seed, name, key) mapped through the Zipf law, the same at every write of the key."""
    digest = hashlib.blake2b(f"{seed}\x00{name}\x00{key}".encode(), digest_size=8).digest()
    uniform = (int.from_bytes(digest, "big") >> 11) / 2**53  # 53 bits: in [0, 1), never 1.0
    weights = _attribute_weights(cardinality)
    return f"{name}#{bisect.bisect_left(weights, uniform * weights[-1]) + 1}"


def attribute_values(key: str, workload: Workload) -> dict[str, str]:
    """The ``--attribute`` values of the key's items (none without ``--attribute``)."""
    return {name: attribute_value(key, name, cardinality, workload.seed) for name, cardinality in workload.attributes}


def _key_digest(seed: int, name: str, key: str) -> bytes:
    # ``name`` is one the items have (expireAt, note): no --attribute can share it, so no hash is another's.
    return hashlib.blake2b(f"{seed}\x00{name}\x00{key}".encode(), digest_size=16).digest()


def _uniform(digest: bytes) -> float:
    return (int.from_bytes(digest[:8], "big") >> 11) / 2**53  # 53 bits: in [0, 1), never 1.0


def ttl_format(key: str, workload: Workload) -> str | None:
    """The key's ``--ttl-values`` format (None without the flag): a hash of (seed, key) mapped through
    the shares, in ``TTL_FORMATS``' order, the same at every write of the key."""
    if not workload.ttl_values:
        return None
    point = _uniform(_key_digest(workload.seed, TTL_ATTRIBUTE, key))
    shares = dict(workload.ttl_values)
    chosen = None
    cumulative = 0.0
    for format_ in TTL_FORMATS:
        if shares.get(format_, 0.0) > 0:
            cumulative += shares[format_]
            chosen = format_
            if point < cumulative:
                break
    return chosen  # (the last with a share when rounding leaves the sum a hair under 1)


def ttl_attribute(key: str, when: int, workload: Workload) -> dict[str, Any]:
    """The TTL attribute of the key's item written at ``when`` (none for ``missing`` or without the flag).

    ``seconds`` is ``when`` plus 1 to 30 days (a per-key delay, by hashing); the others are that instant
    in milliseconds, microseconds or as a String of its digits, or ``when`` less six years (``too_old``).
    """
    format_ = ttl_format(key, workload)
    if format_ is None or format_ == "missing":
        return {}
    delay = DAY + int.from_bytes(_key_digest(workload.seed, TTL_ATTRIBUTE, key)[8:], "big") % (29 * DAY + 1)
    seconds = when + delay
    if format_ == "string":
        return {TTL_ATTRIBUTE: str(seconds)}
    numbers = {"seconds": seconds, "milliseconds": seconds * 1_000, "microseconds": seconds * 1_000_000}
    return {TTL_ATTRIBUTE: numbers.get(format_, when - TOO_OLD_SECONDS)}  # (too_old the last)


def is_large(key: str, workload: Workload) -> bool:
    """Whether the key's items are ``--large-bytes`` (a hash of (seed, key) under ``--large-fraction``)."""
    return workload.large_fraction > 0 and _uniform(_key_digest(workload.seed, "note", key)) < workload.large_fraction


def _attributes_size(values: Mapping[str, str | int]) -> int:
    # DynamoDB's rules: a String is the UTF-8 bytes of its name and of its value; a Number its name's
    # bytes, one per two significant digits and one.
    return sum(
        len(name.encode()) + (len(value.encode()) if isinstance(value, str) else number_size(str(value)))
        for name, value in values.items()
    )


def _item(
    key: str, rng: random.Random, size: int, when: int, extra: Mapping[str, str | int], exact: bool = False
) -> dict[str, Any]:
    """An item of about ``size`` bytes (within a few bytes), or of exactly ``size`` if ``exact``
    (and ``size`` is at least the item without a note)."""
    item: dict[str, Any] = {
        "pk": key,
        "status": rng.choice(["NEW", "PAID", "SHIPPED", "DELIVERED"]),
        "createdAt": when - rng.randint(0, 86_400),
        "updatedAt": when,
        "amount": Decimal(rng.randint(100, 99_999)) / 100,
        "currency": "EUR",
        "version": rng.randint(1, 50),
        "gift": rng.random() < 0.1,
        "address": {"street": "1 Main St", "city": "Lyon", "zip": "69001", "country": "FR"},
        "lines": [{"sku": f"SKU-{rng.randint(1, 999)}", "qty": rng.randint(1, 5)} for _ in range(2)],
        "tags": {"web", "promo"},
        "note": "",
        **extra,
    }
    if exact:
        item["note"] = "n" * max(0, size - image_size(to_dynamodb_json(item)))
        return item
    # The other attributes take ~209 bytes by DynamoDB's rules ("note" is 4 more), the extra ones theirs.
    item["note"] = "n" * max(0, size - 213 - _attributes_size(extra))
    return item


def _item_size(workload: Workload, rng: random.Random) -> int:
    if workload.item_spread <= 0:
        return workload.item_bytes
    return int(min(399_000, max(60, rng.lognormvariate(0, workload.item_spread) * workload.item_bytes)))


def _background(workload: Workload, rng: random.Random) -> Iterator[tuple[float, str, str]]:
    """(time, key, kind) of the Zipf-distributed background traffic."""
    weights = zipf_cumulative(workload.keys, workload.zipf)
    total = weights[-1]
    for index in range(workload.background_records):
        key = key_name(bisect.bisect_left(weights, rng.random() * total))
        kind = (
            "ttl"
            if rng.random() < workload.ttl_fraction
            else rng.choices(["MODIFY", "INSERT", "REMOVE"], weights=[80, 15, 5])[0]
        )
        yield workload.start + index / max(workload.rate, 1e-9), key, kind


def _hot_traffic(workload: Workload, hot: InjectedHotKey) -> Iterator[tuple[float, str, str]]:
    for index in range(hot.records):
        yield workload.start + hot.start + index / hot.wcu_per_second, hot.key, "HOT"


@dataclass(frozen=True, slots=True)
class Generated:
    """One generated write: its precise time (``when``; its stream record carries the second it falls in),
    the DynamoDB stream shard and sequence number it gets, and what it did (``change``)."""

    when: float
    shard: int
    sequence: str
    change: ItemChange


def changes(workload: Workload) -> Iterator[Generated]:
    """The workload's writes in time order, one at a time: memory does not grow with the workload.

    The draws are the ones a materialised run makes (all the background's choices, then each
    record's), so a seed gives the same records however they are consumed: one generator
    draws the background, a second one starts where the background's draws end.
    """
    workload.validate()
    background_rng = random.Random(workload.seed)
    record_rng = random.Random(workload.seed)
    for _ in _background(workload, record_rng):
        pass  # advances record_rng past the background's draws without keeping them
    # heapq.merge is stable: at equal times the background comes first, then the hot keys in order.
    sources = [_background(workload, background_rng), *(_hot_traffic(workload, hot) for hot in workload.hot)]
    events = heapq.merge(*sources, key=lambda event: event[0])
    positions = [0] * workload.shards
    for when, key, kind in events:
        shard = shard_of(key, workload.shards)
        change = _change(workload, record_rng, int(when), key, kind)
        yield Generated(when, shard, sequence_number(shard, positions[shard]), change)
        positions[shard] += 1


def stream_record_of(workload: Workload, made: Generated) -> dict[str, Any]:
    """The DynamoDB stream record of one generated write (its creation time: the second it falls in)."""
    return stream_record(made.change, table=workload.table, sequence=made.sequence, event_time=int(made.when))


def stream(workload: Workload) -> Iterator[tuple[int, dict[str, Any]]]:
    """(shard index, record) in time order, one at a time (``changes``)."""
    for made in changes(workload):
        yield made.shard, stream_record_of(workload, made)


def generate(workload: Workload) -> dict[int, list[dict[str, Any]]]:
    """Records per shard index, in sequence order (small workloads: the samples, the tests)."""
    shards: dict[int, list[dict[str, Any]]] = {index: [] for index in range(workload.shards)}
    for shard, record in stream(workload):
        shards[shard].append(record)
    return shards


def _change(workload: Workload, rng: random.Random, when: int, key: str, kind: str) -> ItemChange:
    """What one generated write of ``key`` does (``kind``: ``HOT``, ``ttl``, or its event name)."""
    keys = {"pk": key}
    attributes = attribute_values(key, workload)
    # The item's own attributes: the --attribute values, then its --ttl-values TTL (the same in both images).
    extra: dict[str, str | int] = {**attributes, **ttl_attribute(key, when, workload)}
    if kind == "HOT":
        seat = rng.randint(1, 50_000)
        image = {"pk": key, "seat": seat, **extra, "note": "h" * (880 - len(key) - _attributes_size(extra))}
        return ItemChange(event_name="MODIFY", keys=keys, new_image=image, old_image=image)
    size = _item_size(workload, rng)
    large = is_large(key, workload)
    if large:
        size = workload.large_bytes
    if kind == "ttl":
        # (a TTL deletion's old image keeps the expireAt it always had, after the padding)
        old = _item(key, rng, size, when, attributes, large)
        old["expireAt"] = when - rng.randint(1, 86_400)
        return ItemChange(event_name="REMOVE", keys=keys, old_image=old, ttl_delete=True)
    new = _item(key, rng, size, when, extra, large)
    if kind == "INSERT":
        return ItemChange(event_name="INSERT", keys=keys, new_image=new)
    if kind == "REMOVE":
        return ItemChange(event_name="REMOVE", keys=keys, old_image=_item(key, rng, size, when - 1, extra, large))
    # An update changes a few attributes: status, version, timestamp, and sometimes the note.
    old = dict(new, status="NEW", updatedAt=when - rng.randint(1, 3600), version=new["version"] - 1)
    if rng.random() < 0.3:
        old["note"] = "n" * max(0, len(new["note"]) - rng.randint(-200, 200))
    return ItemChange(event_name="MODIFY", keys=keys, new_image=new, old_image=old)


def shard_id(shard: int) -> str:
    return f"shardId-{shard:05d}-generated"


def shard_event(shard: int, records: list[dict[str, Any]]) -> dict[str, Any]:
    """A Lambda event file for one shard (``shardId`` as Lambda sets it with tumbling windows)."""
    return {"shardId": shard_id(shard), "Records": records}
