"""Hot item or hot collection: how a partition key's writes spread over its items (sort keys).

DynamoDB splits a hot partition by sort-key range ("split for heat"). That helps when the key's
writes spread over many items; it cannot help one hot item, nor writes that always land on the
newest sort key (a monotonically increasing timestamp or sequence): every split leaves the hot
end in one partition. Per tracked partition key of a table with a sort key, a segment keeps:

* the heaviest ``ITEM_SLOTS`` items by write units (a weighted Misra-Gries sketch over the sort
  key's CRC-32: a slot's count is at most its true weight and at least true - ``pruned``;
  ``pruned <= W / (ITEM_SLOTS + 1)``), so an item with more than a fifth of the key's writes is
  always in a slot;
* a 128-bit linear-counting bitmap of the sort keys (distinct items: estimated, 6-9% standard
  deviation up to 250 items, ``python -m bench.sketch_figures``; from ``SATURATED`` on, "more than
  ``SATURATED``");
* the order of arrival: how often a sort key was above (``up``) or below (``down``) the previous
  one of the same key, comparing DynamoDB's own order (UTF-8 bytes for S, raw bytes for B, the
  value for N) on the first ``ORDER_PREFIX_BYTES`` bytes; equal prefixes do not count.

Verdict thresholds (docs/decisions.md §29): one item whose counted write units (a lower bound)
reach ``HOT_ITEM_SHARE`` of the key's → single hot item (always so when its true share exceeds
``HOT_ITEM_SHARE`` + 1/(``ITEM_SLOTS`` + 1), never when it is below ``HOT_ITEM_SHARE``); at least
``MIN_ORDER_SAMPLES`` comparisons of which at least ``MONOTONIC_RATIO`` go up → monotonic sort
key; otherwise spread over N items.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import zlib
from dataclasses import dataclass, field
from typing import Any

ITEM_SLOTS = 4
BITMAP_BITS = 128
SATURATED = 300
ORDER_PREFIX_BYTES = 24
HOT_ITEM_SHARE = 0.5
MONOTONIC_RATIO = 0.95
MIN_ORDER_SAMPLES = 10
# Keys of one segment that carry item figures (the state's bound: see state.max_state_bytes).
MAX_ITEM_KEYS = 400
# The heaviest keys whose item figures a snapshot keeps (the stats item's 400 KB bound).
SNAPSHOT_ITEM_KEYS = 50
# Upper bound of one key's figures in JSON: 8 slot numbers, 4 counters, the 128-bit bitmap, the
# 48-hex-digit order prefix in quotes, brackets and commas.
MAX_ITEM_JSON = 8 * 14 + 4 * 21 + 40 + 52 + 16

HOT_ITEM, MONOTONIC, SPREAD = "single hot item", "monotonic sort key", "spread over items"
PINNED = "collection pinned by LSIs"

Ordinal = str | float


def sort_key_ordinal(kind: str, raw: str) -> Ordinal | None:
    """A value that orders like DynamoDB orders sort keys, on a bounded prefix (None: not comparable)."""
    try:
        if kind == "N":
            return float(raw)
        if kind == "S":
            return raw.encode("utf-8")[:ORDER_PREFIX_BYTES].hex()
        if kind == "B":
            return base64.b64decode(raw[: 4 * ((ORDER_PREFIX_BYTES + 2) // 3)])[:ORDER_PREFIX_BYTES].hex()
    except (ValueError, UnicodeEncodeError, binascii.Error):
        return None
    return None


def item_digest(raw: str) -> int:
    return zlib.crc32(raw.encode("utf-8", "surrogatepass"))


def _bit_of(digest: int) -> int:
    """A bitmap position from a CRC-32: CRCs of similar sort keys share bit patterns, so the value is
    mixed first (MurmurHash3's 32-bit finalizer) and the top bits taken."""
    mixed = digest ^ (digest >> 16)
    mixed = (mixed * 0x85EBCA6B) & 0xFFFFFFFF
    mixed ^= mixed >> 13
    mixed = (mixed * 0xC2B2AE35) & 0xFFFFFFFF
    mixed ^= mixed >> 16
    return mixed >> (32 - BITMAP_BITS.bit_length() + 1)


@dataclass(slots=True)
class ItemStats:
    """One partition key's items in a segment (see the module doc)."""

    slots: dict[int, int] = field(default_factory=dict)
    pruned: int = 0
    wcu: int = 0
    bitmap: int = 0
    last: Ordinal | None = None
    up: int = 0
    down: int = 0

    def add(self, digest: int, ordinal: Ordinal | None, wcu: int) -> None:
        self.wcu += wcu
        self.bitmap |= 1 << _bit_of(digest)
        slots = self.slots
        if digest in slots:
            slots[digest] += wcu
        elif len(slots) < ITEM_SLOTS:
            slots[digest] = wcu
        else:
            cut = min(wcu, *slots.values())
            self.pruned += cut
            for slot in list(slots):
                slots[slot] -= cut
                if slots[slot] <= 0:
                    del slots[slot]
            if wcu > cut:
                slots[digest] = wcu - cut
        if ordinal is not None:
            last = self.last
            if last is not None and type(last) is type(ordinal) and last != ordinal:
                if ordinal > last:  # type: ignore[operator]  # same type: both str or both float
                    self.up += 1
                else:
                    self.down += 1
            self.last = ordinal

    @property
    def distinct(self) -> int:
        """Distinct items written (estimated; ``SATURATED`` or more when the bitmap is full)."""
        zeros = BITMAP_BITS - bin(self.bitmap).count("1")
        if zeros == 0:
            return SATURATED
        return min(SATURATED, max(len(self.slots), round(-BITMAP_BITS * math.log(zeros / BITMAP_BITS))))

    @property
    def hottest_share(self) -> float:
        """The hottest item's part of the key's write units (a lower bound)."""
        return max(self.slots.values(), default=0) / self.wcu if self.wcu else 0.0

    @property
    def monotonic(self) -> bool:
        samples = self.up + self.down
        return samples >= MIN_ORDER_SAMPLES and self.up >= MONOTONIC_RATIO * samples

    def to_json(self) -> list[Any]:
        slots = [value for pair in sorted(self.slots.items()) for value in pair]
        return [slots, self.pruned, self.wcu, self.bitmap, self.last, self.up, self.down]

    @classmethod
    def from_json(cls, data: list[Any]) -> ItemStats:
        flat = data[0]
        slots = {int(flat[i]): int(flat[i + 1]) for i in range(0, len(flat), 2)}
        last = data[4]
        return cls(slots, int(data[1]), int(data[2]), int(data[3]), last, int(data[5]), int(data[6]))


def encode_aligned(entries: dict[str, Any], items: dict[str, ItemStats], level: int = 6) -> bytes:
    """Item figures in the order of a summary's ``entries`` (0 where a key has none), zlib'd: the
    keys are stored once, by the summary (state and snapshot alike)."""
    rows = [items[key].to_json() if key in items else 0 for key in entries]
    return zlib.compress(json.dumps(rows, separators=(",", ":")).encode("ascii"), level)


def decode_aligned(entries: dict[str, Any], blob: bytes) -> dict[str, ItemStats]:
    rows = json.loads(zlib.decompress(blob))
    return {key: ItemStats.from_json(row) for key, row in zip(entries, rows, strict=True) if row}


def merged(parts: list[ItemStats]) -> ItemStats:
    """One key's items over several segments: slot weights add (the heaviest ITEM_SLOTS kept, the
    largest left out added to ``pruned``), bitmaps join, order counts add."""
    weights: dict[int, int] = {}
    for part in parts:
        for digest, wcu in part.slots.items():
            weights[digest] = weights.get(digest, 0) + wcu
    ranked = sorted(weights.items(), key=lambda pair: (-pair[1], pair[0]))
    left_out = max((wcu for _, wcu in ranked[ITEM_SLOTS:]), default=0)
    bitmap = 0
    for part in parts:
        bitmap |= part.bitmap
    return ItemStats(
        slots=dict(ranked[:ITEM_SLOTS]),
        pruned=sum(part.pruned for part in parts) + left_out,
        wcu=sum(part.wcu for part in parts),
        bitmap=bitmap,
        up=sum(part.up for part in parts),
        down=sum(part.down for part in parts),
    )


def verdict(stats: ItemStats | None, has_sort_key: bool, has_local_indexes: bool = False) -> tuple[str, str] | None:
    """(kind, advice) for a hot key; None when its items were not followed. ``has_local_indexes``: the table has
    local secondary indexes, and "each item collection is stored in one partition" (developer guide,
    "Item collections in Local Secondary Indexes"), so split-for-heat cannot spread it either."""
    if not has_sort_key:
        return HOT_ITEM, "the table has no sort key, so a hot key is one hot item: write sharding or caching required"
    if stats is None or stats.wcu == 0:
        return None
    if stats.hottest_share >= HOT_ITEM_SHARE:
        return (
            HOT_ITEM,
            f"one item takes {100 * stats.hottest_share:.0f}% of the key's writes: write sharding or caching "
            "required; split-for-heat cannot help",
        )
    if stats.monotonic:
        return MONOTONIC, "writes land on the newest sort key: split-for-heat cannot help; shard the partition key"
    many = f"more than {SATURATED}" if stats.distinct >= SATURATED else f"~{stats.distinct}"
    if has_local_indexes:
        return (
            PINNED,
            f"spread over {many} items, but the table has local secondary indexes, so the item collection "
            "stays in one partition: split-for-heat cannot help; shard the partition key",
        )
    return (
        SPREAD,
        f"spread over {many} items: DynamoDB may split this partition for heat; sustained above the limit "
        "still needs sharding",
    )
