"""The stream consumer's ports: every Protocol its pipeline (``pipeline.Ports``) and its TTL archive
(``archive.TtlArchiver``) call for I/O, and the CLI's reader of the windows it stores.

Each layer of the Lambda code keeps the ports its own logic calls (``alerts.ports``, ``throttling.ports``,
``provisioning.ports``), next to the value types they take, so that no port module imports a layer above it
(tests/unit/test_import_graph.py). ``adapters/`` implement them for AWS and ``wiring.build_ports`` is the one
place that picks the concrete adapters (docs/decisions.md §24). Tests and the benchmarks pass their own.

``ResolveKey``, ``IndexesOf`` and ``TtlAttributeOf`` are defined in ``records`` and named here: ``records.parse_change``
takes them, and ``records`` is below every value type this module needs (``Change``), so they cannot
live here without an import cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from hotkeys.detector.consumer.snapshots import SegmentSnapshot
from hotkeys.detector.consumer.state import Segment, ShardState
from hotkeys.detector.domain.records import Change, IndexesOf, ResolveKey, TtlAttributeOf

__all__ = [
    "Alerting",
    "Archived",
    "Archiver",
    "IndexesOf",
    "Layouts",
    "ObjectStore",
    "ResolveKey",
    "Spool",
    "StatsReader",
    "StatsStore",
    "TtlAttributeOf",
]


# -- the stream pipeline's (pipeline.Ports) -------------------------------------------------------
class StatsStore(Protocol):
    def save_segment(self, snapshot: SegmentSnapshot, expires_at: int, bucket: int = 0) -> None:
        """Writes the snapshot (its head in ``bucket`` of the window-heads index); raises
        snapshots.IdentityTaken if its name belongs to another instance."""
        ...

    def shard_segments(self, table: str, start: int, shard_id: str) -> list[SegmentSnapshot]:
        """The stored snapshots one shard wrote for one (table, window)."""
        ...

    def save_seen(self, name: str, data: bytes, expires_at: int) -> None:
        """Stores a Kinesis shard's recent changes (``seen.SeenChanges.to_bytes``) under ``name``."""
        ...

    def load_seen(self, name: str) -> bytes | None:
        """What ``save_seen`` last stored under ``name`` (None: nothing)."""
        ...


class Archiver(Protocol):
    """Archives a batch's TTL deletions; raises if they could not be stored."""

    def wanted(self, change: Change, record: dict[str, Any]) -> bool: ...

    def line(self, change: Change, record: dict[str, Any]) -> str:
        """The record's archive line; raises MalformedRecord for an image that cannot be archived."""
        ...

    def archive(self, shard_id: str, lines: list[tuple[Change, str]]) -> Archived:
        """Writes the objects (to S3, or to the spool where S3 refuses); raises if neither took them."""
        ...

    def drain(self, force: bool = False) -> tuple[int, bool]:
        """Moves spooled objects into S3 when due; returns (objects moved, spool empty)."""
        ...


class Alerting(Protocol):
    """The stream consumer's first alarm (``alerts.first_alarm``); raises if an alert could not be published."""

    def review(self, shard_id: str, state: ShardState, segments: list[Segment]) -> int: ...


class Layouts(Protocol):
    """Where a shard's heads go in the window-heads index (``layout``), as its container last read it."""

    def bucket_of(self, table: str, shard_id: str, window_start: int) -> int: ...

    def forget(self, table: str) -> None:
        """Read the table's layout again at its next use."""
        ...


# -- the TTL archive's (archive.TtlArchiver) --------------------------------------------------------
class ObjectStore(Protocol):
    """What the archiver needs from S3."""

    def put(self, key: str, body: bytes) -> None: ...


class Spool(Protocol):
    """Where archive objects S3 refused wait for it (adapters/archive_spool.py)."""

    def put(self, shard_id: str, key: str, body: bytes) -> None: ...

    def drain(
        self, store: ObjectStore, limit: int, on_error: Callable[[str, Exception], None], force: bool = False
    ) -> tuple[int, bool]: ...


@dataclass(frozen=True)
class Archived:
    """What one batch's archive write did: objects S3 took, and objects spooled because it refused."""

    stored: tuple[str, ...] = ()
    spooled: tuple[str, ...] = ()


# -- the CLI's reader of stored windows (cli.top) -----------------------------------------------------
class StatsReader(Protocol):
    def tables(self) -> dict[str, int]:
        """The watched tables (the layout registry) and their window lengths."""
        ...

    def windows(self, table: str, since: int, until: int) -> list[tuple[int, int]]:
        """(start, length) of the table's stored windows starting in [since, until]."""
        ...

    def window_segments(self, table: str, start: int) -> list[SegmentSnapshot]:
        """A window's snapshots; ``snapshots.WindowRetired`` when some are in a retired layout."""
        ...

    def latest_window(self, table: str | None = None) -> int | None: ...
