"""The changes a Kinesis shard's records carried lately, to count each once however often it comes.

Kinesis Data Streams for DynamoDB may deliver one change more than once, each copy with its own Kinesis
sequence number, and out of order. The sequence ranges of ``state`` catch what Lambda redelivers; what
DynamoDB's producer sent twice is caught here, by the change's identity (``domain.kinesis.identity``),
remembered per creation second for ``HORIZON_SECONDS`` of creation time behind the newest change the
shard has seen, and at most ``MAX_SEEN`` identities (the oldest seconds go first). A change older than
what is held cannot be checked: it is counted and reported (``BatchOutcome.beyond_horizon``), which bounds
the figures' error (docs/decisions.md §82).

Each identity keeps a tag of the sequence number it was counted under: the same record read again (Lambda
opening a window again with a fresh state, or a new mapping reading the records once more) is not a copy,
and is left to the sequence ranges and the stored snapshots, as a DynamoDB stream's record is.

The set rides in the tumbling-window state; at a window's final invocation it is stored in the stats
table (``StatsStore.save_seen``) and the next window's first invocation, which Lambda starts with a
fresh state, reads it back: a change and its copy on either side of a window's edge count once.
"""

from __future__ import annotations

import base64
import binascii
import struct
import zlib
from enum import Enum

from hotkeys.detector.domain.kinesis import IDENTITY_BYTES

HORIZON_SECONDS = 30
MAX_SEEN = 16_000
_SECOND = struct.Struct(">qI")  # a creation second and how many identities follow
_FLOOR = struct.Struct(">q")
_TAG = struct.Struct(">I")
# An identity and the tag of the sequence number it was counted under.
ENTRY_BYTES = IDENTITY_BYTES + _TAG.size


def sequence_tag(sequence: int) -> int:
    """The tag an identity keeps of its record's sequence number: a CRC of all its digits (a Kinesis
    sequence number's low bits name its shard, the same for every record of it; two numbers share a CRC
    once in 2^32)."""
    return zlib.crc32(str(sequence).encode("ascii"))


class Seen(Enum):
    NEW = "new"
    # Counted already under another record: a copy.
    REPEATED = "repeated"
    # Counted already under this very record: read again (its ranges and snapshots say what to do).
    READ_AGAIN = "read_again"
    # Older than every change the set still holds: it cannot be told from a copy.
    BEYOND_HORIZON = "beyond_horizon"


class SeenError(ValueError):
    """A stored or carried set this version cannot read."""


class SeenChanges:
    """Identities (with their sequence tags) by creation second; ``floor``: the oldest second held in full
    (None: everything since the shard began, or since this set was started).

    A busy shard's invocation reads the whole set from its state and writes it back, but looks up and adds to
    a few seconds only: a second stays packed as it came (``_packed``, its entries' bytes) until a record of it
    is looked up, and is packed again only if it was opened (``_opened``)."""

    __slots__ = ("_opened", "_packed", "floor", "newest", "size")

    def __init__(self, floor: int | None = None) -> None:
        self._opened: dict[int, dict[bytes, int]] = {}
        self._packed: dict[int, bytes] = {}
        self.floor = floor
        self.newest = -1
        self.size = 0

    def _held(self, second: int) -> dict[bytes, int] | None:
        held = self._opened.get(second)
        if held is None:
            packed = self._packed.pop(second, None)
            if packed is not None:
                held = self._opened[second] = {
                    packed[at : at + IDENTITY_BYTES]: _TAG.unpack_from(packed, at + IDENTITY_BYTES)[0]
                    for at in range(0, len(packed), ENTRY_BYTES)
                }
        return held

    def check(self, second: int, digest: bytes, tag: int) -> Seen:
        if self.floor is not None and second < self.floor:
            return Seen.BEYOND_HORIZON
        held = self._held(second)
        counted = held.get(digest) if held is not None else None
        if counted is None:
            return Seen.NEW
        return Seen.READ_AGAIN if counted == tag else Seen.REPEATED

    def add(self, second: int, digest: bytes, tag: int) -> None:
        if self.floor is not None and second < self.floor:
            return  # (beyond the horizon: what ``check`` said of it)
        held = self._held(second)
        if held is None:
            held = self._opened[second] = {}
        if digest in held:
            return
        held[digest] = tag
        self.size += 1
        if second > self.newest:
            self.newest = second
            self._forget_before(second - HORIZON_SECONDS)
        while self.size > MAX_SEEN and (self._opened or self._packed):  # the oldest seconds first, the newest too
            self._forget_before(min((*self._opened, *self._packed)) + 1)

    def _forget_before(self, second: int) -> None:
        for old in [held for held in self._opened if held < second]:
            self.size -= len(self._opened.pop(old))
        for old in [held for held in self._packed if held < second]:
            self.size -= len(self._packed.pop(old)) // ENTRY_BYTES
        if self.floor is None or second > self.floor:
            self.floor = second

    def entries(self) -> dict[int, dict[bytes, int]]:
        """Every second's identities and tags (each second opened)."""
        return {second: dict(self._held(second) or {}) for second in sorted((*self._opened, *self._packed))}

    def to_bytes(self) -> bytes:
        """The set's one layout: its floor, then each second held with its count and its entries."""
        parts = [_FLOOR.pack(self.floor if self.floor is not None else -1)]
        for second in sorted((*self._opened, *self._packed)):
            packed = self._packed.get(second)
            if packed is None:
                held = self._opened[second]
                packed = b"".join(digest + _TAG.pack(held[digest]) for digest in sorted(held))
            parts.append(_SECOND.pack(second, len(packed) // ENTRY_BYTES))
            parts.append(packed)
        return b"".join(parts)

    def to_text(self) -> str:
        """``to_bytes`` as base64, as the window state carries it (``from_text`` reads it)."""
        return base64.b64encode(self.to_bytes()).decode("ascii")

    @classmethod
    def from_text(cls, text: str) -> SeenChanges:
        try:
            return cls.from_bytes(base64.b64decode(text, validate=True))
        except binascii.Error as error:
            raise SeenError(f"the set of seen changes is not base64: {error}") from None

    @classmethod
    def from_bytes(cls, raw: bytes) -> SeenChanges:
        try:
            (floor,) = _FLOOR.unpack_from(raw, 0)
            seen = cls(floor=floor if floor >= 0 else None)
            offset = _FLOOR.size
            while offset < len(raw):
                second, count = _SECOND.unpack_from(raw, offset)
                offset += _SECOND.size
                end = offset + count * ENTRY_BYTES
                if end > len(raw):
                    raise SeenError("the set of seen changes is cut short")
                if count < 1 or second <= seen.newest or (seen.floor is not None and second < seen.floor):
                    raise SeenError("the set of seen changes is not in its order")
                seen._packed[second] = raw[offset:end]
                seen.size += count
                seen.newest = max(seen.newest, second)
                offset = end
        except struct.error as error:
            raise SeenError(f"the set of seen changes is not readable: {error}") from None
        return seen


def max_seen_bytes() -> int:
    """An upper bound of ``to_bytes``'s length: the seconds held lie within the horizon of the newest."""
    return _FLOOR.size + (HORIZON_SECONDS + 1) * _SECOND.size + MAX_SEEN * ENTRY_BYTES


def max_seen_chars() -> int:
    """An upper bound of ``to_text``'s length."""
    return 4 * (max_seen_bytes() + 2) // 3 + 4
