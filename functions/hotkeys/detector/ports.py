"""The detector's ports: every Protocol its logic calls for I/O, in one place.

The logic (``pipeline``, ``alerts.desk``, ``archive``) and the CLI's readers are written against these;
``adapters/`` implement them for AWS and ``wiring.build_ports`` is the one place that picks the concrete
adapters (docs/decisions.md §24). Tests and the benchmarks pass their own. Only value types are imported
here, so every module that takes a port can import this one.

``ResolveKey`` and ``IndexesOf`` are defined in ``records`` and named here: ``records.parse_change``
takes them, and ``records`` is below every value type this module needs (``Change``), so they cannot
live here without an import cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from hotkeys.detector.alerts.messages import Alert
from hotkeys.detector.alerts.rules import HotKey
from hotkeys.detector.records import Change, IndexesOf, ResolveKey
from hotkeys.detector.snapshots import SegmentSnapshot
from hotkeys.detector.state import Segment, ShardState
from hotkeys.detector.throttle_sources import RuleStatus, Source

__all__ = [
    "Alerting",
    "Archived",
    "Archiver",
    "IncidentReader",
    "IncidentStore",
    "IndexesOf",
    "InsightsPort",
    "ObjectStore",
    "Publish",
    "Publisher",
    "ResolveKey",
    "Spool",
    "StatsReader",
    "StatsStore",
    "WindowReader",
]


# -- the stream pipeline's (pipeline.Ports) -------------------------------------------------------
class StatsStore(Protocol):
    def save_segment(self, snapshot: SegmentSnapshot, expires_at: int) -> None:
        """Writes the snapshot; raises snapshots.IdentityTaken if its name belongs to another instance."""
        ...

    def save_catalog(self, table: str, start: int, window_seconds: int, expires_at: int) -> None: ...

    def shard_segments(self, table: str, start: int, shard_id: str) -> list[SegmentSnapshot]:
        """The stored snapshots one shard wrote for one (table, window)."""
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
    """Evaluates alert rules on the shard's figures; raises if an alert could not be published."""

    def review(
        self, shard_id: str, state: ShardState, segments: list[Segment], final: bool, flushing: list[Segment]
    ) -> int:
        """``flushing``: the segments this invocation's flush writes, after the review (their heads then
        carry the incidents it handled)."""
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


# -- the alert desk's (alerts.desk.AlertDesk) ------------------------------------------------------
class Publisher(Protocol):
    def publish(self, alert: Alert) -> str: ...


class WindowReader(Protocol):
    def window_heads(self, table: str, start: int) -> list[SegmentSnapshot]:
        """The heads of every stored segment of a (table, window) (``snapshots.head_of``)."""
        ...

    def heads_between(self, table: str, first: int, last: int) -> list[SegmentSnapshot]:
        """The heads of every stored segment of the table's windows starting in [first, last]."""
        ...


class IncidentStore(Protocol):
    """Incidents with conditional transitions (see adapters/incident_store.py for the rules)."""

    def claim_firing(self, hot: HotKey, shard_id: str) -> tuple[bool, dict[str, Any]]:
        """(whether this call started the incident, else the incident as it stands)."""
        ...

    def claim_reminder(self, hot: HotKey, shard_id: str, reminder_seconds: int) -> dict[str, Any] | None: ...

    def release_reminder(self, hot: HotKey, previous_notified_at: int) -> None: ...

    def mark_hot(self, hot: HotKey, shard_id: str, peak: float) -> None:
        """Mark the firing incident hot in ``hot``'s window, its peak raised to ``peak`` (never lowered)."""
        ...

    def raise_peak(self, hot: HotKey) -> None: ...

    def open_incidents(self, table: str) -> list[dict[str, Any]]: ...

    def resolve(self, table: str, incident_key: str, window_start: int, shard_id: str) -> bool: ...

    def reopen(self, table: str, incident_key: str, window_start: int, shard_id: str) -> None: ...

    def mark_published(self, table: str, incident_key: str, flag: str) -> bool: ...


# -- the CLI's reader of stored windows (cli.top) -----------------------------------------------------
class StatsReader(Protocol):
    def catalog(self, since: int, until: int) -> list[tuple[int, str, int]]: ...

    def window_segments(self, table: str, start: int) -> list[SegmentSnapshot]:
        """A window's snapshots; ``snapshots.WindowRetired`` when some are in a retired layout."""
        ...

    def latest_window(self) -> int | None: ...


# -- the throttle picture's and the throttle explainer's (throttles, throttle_explainer) ------------
class InsightsPort(Protocol):
    """Contributor Insights as the throttle picture reads it (``adapters.insights.CloudWatchInsights``)."""

    def rule_status(self, source: Source) -> RuleStatus: ...

    def report(self, rule: str, start: int, end: int) -> Mapping[str, Any]: ...


class IncidentReader(Protocol):
    """The stream's open incidents of a table (the explainer's "confirmed: throttling")."""

    def open_incidents(self, table: str) -> list[dict[str, Any]]: ...


class Publish(Protocol):
    """SNS ``Publish`` as the explainer calls it (a bound ``client.publish``)."""

    def __call__(self, **arguments: Any) -> Mapping[str, Any]: ...
