"""The changes a Kinesis shard's records carried lately, to count each once however often it comes.

Kinesis Data Streams for DynamoDB may deliver one change more than once, each copy with its own Kinesis
sequence number, and out of order. The sequence ranges of ``state`` catch what Lambda redelivers; what
DynamoDB's producer sent twice is caught here, by the change's identity (``domain.kinesis.identity``),
remembered per creation second for ``HORIZON_SECONDS`` of creation time behind the newest change the
shard has seen, and at most ``MAX_SEEN`` identities (a shard's records a second are capped at 1,000 by
Kinesis). A change older than what is held cannot be checked: it is counted and reported
(``BatchOutcome.beyond_horizon``), which bounds the figures' error (docs/decisions.md §82).

The set rides in the tumbling-window state; at a window's final invocation it is stored in the stats
table (``StatsStore.save_seen``) and the next window's first invocation, which Lambda starts with a
fresh state, reads it back: a change and its copy on either side of a window's edge count once.

Every invocation of a busy shard returns the whole set in its state and the next reads it back, so
``to_text`` packs again only the seconds that grew since it last ran, and ``from_text`` takes the sets
this container wrote lately (``_WRITTEN``) rather than unpacking their text again.
"""

from __future__ import annotations

import base64
import binascii
import struct
from dataclasses import dataclass, field
from enum import Enum

from hotkeys.detector.domain.kinesis import IDENTITY_BYTES

HORIZON_SECONDS = 30
MAX_SEEN = 20_000
_SECOND = struct.Struct(">qI")  # a creation second and how many identities follow
_FLOOR = struct.Struct(">q")
# The texts this container's sets were last written as, with a copy of each set (newest last): a text
# read back is looked up here first. Several, as one container may serve several shards in turn.
_WRITTEN: list[tuple[str, SeenChanges]] = []
_WRITTEN_KEPT = 4


class Seen(Enum):
    NEW = "new"
    REPEATED = "repeated"
    # Older than every change the set still holds: it cannot be told from a copy.
    BEYOND_HORIZON = "beyond_horizon"


class SeenError(ValueError):
    """A stored or carried set this version cannot read."""


@dataclass
class SeenChanges:
    """Identities by creation second; ``floor``: the oldest second held in full (None: everything since
    the shard began, or since this set was started)."""

    by_second: dict[int, set[bytes]] = field(default_factory=dict)
    floor: int | None = None
    newest: int = -1
    size: int = 0
    # Each second's packed identities as ``to_text`` last wrote them, with how many: a second's set only
    # grows (whole seconds are forgotten), so the same count means the same bytes.
    _packed: dict[int, tuple[int, bytes]] = field(default_factory=dict, repr=False, compare=False)

    def check(self, second: int, digest: bytes) -> Seen:
        if self.floor is not None and second < self.floor:
            return Seen.BEYOND_HORIZON
        held = self.by_second.get(second)
        return Seen.REPEATED if held is not None and digest in held else Seen.NEW

    def add(self, second: int, digest: bytes) -> None:
        held = self.by_second.get(second)
        if held is None:
            held = self.by_second[second] = set()
        if digest in held:
            return
        held.add(digest)
        self.size += 1
        if second > self.newest:
            self.newest = second
            self._forget_before(second - HORIZON_SECONDS)
        while self.size > MAX_SEEN and len(self.by_second) > 1:
            self._forget_before(min(self.by_second) + 1)

    def _forget_before(self, second: int) -> None:
        if self.floor is not None and second <= self.floor:
            return
        for old in [held for held in self.by_second if held < second]:
            self.size -= len(self.by_second.pop(old))
        self.floor = second

    def to_text(self) -> str:
        """The set as one base64 string (``from_text`` reads it)."""
        parts = [_FLOOR.pack(self.floor if self.floor is not None else -1)]
        packed: dict[int, tuple[int, bytes]] = {}
        for second in sorted(self.by_second):
            held = self.by_second[second]
            chunk = self._packed.get(second)
            if chunk is None or chunk[0] != len(held):
                chunk = (len(held), _SECOND.pack(second, len(held)) + b"".join(sorted(held)))
            packed[second] = chunk
            parts.append(chunk[1])
        self._packed = packed
        text = base64.b64encode(b"".join(parts)).decode("ascii")
        _remember_written(text, self._copy())
        return text

    def _copy(self) -> SeenChanges:
        held = {second: set(digests) for second, digests in self.by_second.items()}
        return SeenChanges(held, self.floor, self.newest, self.size, dict(self._packed))

    @classmethod
    def from_text(cls, text: str) -> SeenChanges:
        for at, (written, seen) in enumerate(_WRITTEN):
            if len(written) == len(text) and written == text:
                del _WRITTEN[at]  # (handed out, so never handed out twice: a retry reads the text again)
                return seen
        return cls._unpack(text)

    @classmethod
    def _unpack(cls, text: str) -> SeenChanges:
        try:
            raw = base64.b64decode(text, validate=True)
            (floor,) = _FLOOR.unpack_from(raw, 0)
            seen = cls(floor=floor if floor >= 0 else None)
            offset = _FLOOR.size
            while offset < len(raw):
                second, count = _SECOND.unpack_from(raw, offset)
                offset += _SECOND.size
                end = offset + count * IDENTITY_BYTES
                if end > len(raw):
                    raise SeenError("the set of seen changes is cut short")
                seen.by_second[second] = {raw[at : at + IDENTITY_BYTES] for at in range(offset, end, IDENTITY_BYTES)}
                seen.size += count
                seen.newest = max(seen.newest, second)
                offset = end
        except (binascii.Error, struct.error) as error:
            raise SeenError(f"the set of seen changes is not readable: {error}") from None
        return seen


def _remember_written(text: str, seen: SeenChanges) -> None:
    for at, (written, _) in enumerate(_WRITTEN):
        if written == text:
            del _WRITTEN[at]
            break
    _WRITTEN.append((text, seen))
    del _WRITTEN[:-_WRITTEN_KEPT]


def forget_written() -> None:
    """Forgets the sets this container wrote (``from_text`` then unpacks every text)."""
    _WRITTEN.clear()


def max_seen_chars() -> int:
    """An upper bound of ``to_text``'s length: the seconds held lie within the horizon of the newest."""
    raw = _FLOOR.size + (HORIZON_SECONDS + 1) * _SECOND.size + MAX_SEEN * IDENTITY_BYTES
    return 4 * (raw + 2) // 3 + 4
