"""How a table's segment heads are spread over partition keys of the stats table's window-heads index.

Every shard writes its head at the same flush boundaries (``FLUSH_SECONDS`` of event time, aligned to
the epoch) and at its windows' ends, so a table's heads arrive together: at 10,000 shards, 10,000 heads
of a few KB within a second or two. One index partition serves at most 1,000 write units per second:
the heads must be spread. A table's heads go to ``buckets`` partition keys (``<table>#<bucket>``,
``bucket_of``: a CRC-32 of the shard id), and the judge reads each of them per look: one Query per
bucket, so a small table (one bucket) costs one request per look.

The judge sets the count (``needed``) from what it reads, and only ever raises it, from the current
window on. A consumer still on the older count (it re-reads the layout within ``REFRESH_SECONDS`` of its
container's clock, at a point drawn from its last half, and after a head write failed: throttled, most
likely) writes its heads to a bucket
below that count, which readers query anyway: they
query the largest count in force from the window they read on (``most_since``), never fewer. So a raise
is safe at once, and spreads the load as the consumers take it. The history stays, so readers of any
stored window know where its heads are.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass

# The most buckets a table's heads are spread over (a look then makes as many Queries).
MAX_BUCKETS = 256
# A bucket's heads of one flush boundary should take at most this much of a partition's write limit
# (1,000 write units per second) in the second they arrive; the judge adds buckets before they do.
TARGET_SHARE = 0.25
PARTITION_WRITE_UNITS = 1000
# How often a consumer container reads the layout again; sooner after a failed head write (a throttled
# bucket is what a raise spreads).
REFRESH_SECONDS = 300
# Each refresh comes at a random point of the last REFRESH_SPREAD of REFRESH_SECONDS: containers that read
# the registry's one partition together (a deploy; a raise that throttled them all) drift apart, instead
# of reading it together every REFRESH_SECONDS (10,000 shards: 5,000 read units in a second or two, more
# than a partition serves).
REFRESH_SPREAD = 0.5


@dataclass(frozen=True)
class Layout:
    """A table's bucket counts over time: (first window start, count) pairs, ascending."""

    table: str
    window_seconds: int
    counts: tuple[tuple[int, int], ...] = ((0, 1),)

    def count_at(self, window_start: int) -> int:
        found = 1
        for start, count in self.counts:
            if start <= window_start:
                found = count
        return found

    def most_since(self, window_start: int) -> int:
        """The largest count in force at any window from ``window_start`` on (what their reader queries)."""
        return max([self.count_at(window_start), *(count for start, count in self.counts if start > window_start)])

    def bucket_of(self, shard_id: str, window_start: int) -> int:
        return bucket_of(shard_id, self.count_at(window_start))

    def raised(self, count: int, from_window: int) -> Layout:
        """The layout with ``count`` buckets from ``from_window`` on (never fewer than before)."""
        if count <= self.count_at(from_window):
            return self
        kept = tuple(pair for pair in self.counts if pair[0] < from_window)
        return Layout(self.table, self.window_seconds, (*kept, (from_window, min(count, MAX_BUCKETS))))


def refresh_due(read_at: float, draw: float) -> float:
    """When a layout read at ``read_at`` is read again, for ``draw`` uniform in [0, 1)."""
    return read_at + REFRESH_SECONDS * (1 - REFRESH_SPREAD * draw)


def bucket_of(shard_id: str, count: int) -> int:
    return zlib.crc32(shard_id.encode("utf-8")) % count


def heads_pk(table: str, bucket: int) -> str:
    """The window-heads index's partition key of a table's bucket."""
    return f"{table}#{bucket}"


def needed(bucket_units: list[int]) -> int:
    """Buckets enough for the heads of one flush boundary: ``bucket_units`` is the write units each bucket
    took in it (all of them written within about a second), spread evenly over the new count."""
    total = sum(bucket_units)
    per_bucket = TARGET_SHARE * PARTITION_WRITE_UNITS
    wanted = max(1, math.ceil(total / per_bucket))
    return min(MAX_BUCKETS, 1 << (wanted - 1).bit_length())


def effective_window(now: float, window_seconds: int) -> int:
    """The first window a count raised at ``now`` applies to: the current one (module doc)."""
    return int(now) - int(now) % window_seconds


class LayoutCache:
    """A container's view of its tables' layouts (``ports.Layouts``): read at first use, then again when
    ``refresh_due`` says. A table without one stored has one bucket, and is registered (readers such as
    ``hotkeys top`` find the watched tables in the registry): once per container, best effort, since the
    judge registers the tables it is given too."""

    def __init__(
        self,
        read: Callable[[str], Layout | None],
        clock: Callable[[], float],
        window_seconds: int,
        register: Callable[[Layout], object] | None = None,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self._read = read
        self._draw = draw
        self._register = register
        self._clock = clock
        self._window_seconds = window_seconds
        self._known: dict[str, tuple[Layout, float]] = {}  # the layout, when it is read again
        self._registered: set[str] = set()

    def layout(self, table: str) -> Layout:
        now = self._clock()
        known = self._known.get(table)
        if known is None or now >= known[1]:
            stored = self._read(table)
            if stored is None:
                stored = Layout(table, self._window_seconds)
                self._register_once(stored)
            known = self._known[table] = (stored, refresh_due(now, self._draw()))
        return known[0]

    def bucket_of(self, table: str, shard_id: str, window_start: int) -> int:
        return self.layout(table).bucket_of(shard_id, window_start)

    def forget(self, table: str) -> None:
        """Read the table's layout again at its next use (a head write under it failed)."""
        self._known.pop(table, None)

    def _register_once(self, fresh: Layout) -> None:
        if self._register is None or fresh.table in self._registered:
            return
        self._registered.add(fresh.table)
        try:
            self._register(fresh)
        except Exception:
            self._registered.discard(fresh.table)
