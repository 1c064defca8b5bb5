"""The detector's ports: every Protocol its logic calls for I/O, in one place.

The logic (``pipeline``, ``alerts.judge``, ``archive``) and the CLI's readers are written against these;
``adapters/`` implement them for AWS and ``wiring.build_ports`` is the one place that picks the concrete
adapters (docs/decisions.md §24). Tests and the benchmarks pass their own. Only value types are imported
here, so every module that takes a port can import this one.

``ResolveKey``, ``IndexesOf`` and ``TtlAttributeOf`` are defined in ``records`` and named here: ``records.parse_change``
takes them, and ``records`` is below every value type this module needs (``Change``), so they cannot
live here without an import cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from hotkeys.detector.alerts.incidents import Incident
from hotkeys.detector.alerts.messages import Alert
from hotkeys.detector.consumer.layout import Layout
from hotkeys.detector.consumer.snapshots import SegmentSnapshot
from hotkeys.detector.consumer.state import Segment, ShardState
from hotkeys.detector.domain.records import Change, IndexesOf, ResolveKey, TtlAttributeOf
from hotkeys.detector.throttling.throttle_sources import RuleStatus, Source

__all__ = [
    "Alerting",
    "Archived",
    "Archiver",
    "HeadsReader",
    "IncidentReader",
    "IncidentStore",
    "IndexesOf",
    "InsightsPort",
    "InsightsSwitch",
    "LayoutStore",
    "Layouts",
    "LookClaim",
    "LookClaims",
    "NextLook",
    "ObjectStore",
    "Publish",
    "Publisher",
    "ResolveKey",
    "Spool",
    "StatsReader",
    "StatsStore",
    "TableInsightsPort",
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


# -- the judge's (alerts.judge.Judge) and the first alarm's ---------------------------------------
class Publisher(Protocol):
    def publish(self, alert: Alert) -> str: ...


class HeadsReader(Protocol):
    def heads_since(self, table: str, first_window: int, buckets: int) -> list[SegmentSnapshot]:
        """The heads (``snapshots.head_of``) of every stored segment of the table's windows from
        ``first_window`` on, from the window-heads index's first ``buckets`` buckets."""
        ...

    def latest_window(self, table: str, buckets: int) -> int | None:
        """The latest window any head of the table was stored for."""
        ...


class LayoutStore(Protocol):
    def layouts(self) -> list[Layout]:
        """Every watched table's layout (the registry)."""
        ...

    def layout(self, table: str) -> Layout | None: ...

    def save_layout(self, before: Layout | None, after: Layout) -> bool:
        """Write ``after`` if the stored layout is still ``before`` (None: none stored); whether it did."""
        ...


class IncidentStore(Protocol):
    """Incidents with conditional transitions (see adapters/incident_store.py for the rules). ``Stored``
    results are (incident, version)."""

    def start(self, incident: Incident, now: float) -> tuple[bool, tuple[Incident, int] | None]: ...

    def update(self, incident: Incident, version: int, now: float) -> tuple[bool, tuple[Incident, int] | None]: ...

    def open_incidents(self, table: str) -> list[tuple[Incident, int]]: ...

    def get(self, table: str, name: str) -> tuple[Incident, int] | None: ...


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


# -- the throttle picture's and the throttle explainer's (throttles, throttle_explainer) ------------
class InsightsPort(Protocol):
    """Contributor Insights as the throttle picture reads it (``adapters.insights.CloudWatchInsights``)."""

    def rule_status(self, source: Source) -> RuleStatus: ...

    def report(self, rule: str, start: int, end: int) -> Mapping[str, Any]: ...


class TableInsightsPort(InsightsPort, Protocol):
    """``InsightsPort`` and the GSIs a table has now, for an alarm that names no index (a Metrics Insights
    query over every GSI of a table the stack does not own): ``adapters.insights.CloudWatchInsights``."""

    def global_indexes(self, table: str) -> list[str]:
        """DescribeTable's GSI names; raises ``throttles.InsightsUnavailable`` (one line why) when it fails."""
        ...


class InsightsSwitch(Protocol):
    """Contributor Insights turned on and off on a table the stack does not own, and the table's tags that
    record who wants it on (``insights_owners``; ``adapters.insights_switch.DynamoInsightsSwitch``). Every
    method raises ``insights_owners.SwitchFailed`` when its call fails."""

    def sources(self, table: str) -> tuple[str, list[Source]]:
        """The table's ARN, and the table and each of its GSIs (``TableGone`` if it does not exist)."""
        ...

    def status(self, source: Source) -> RuleStatus: ...

    def enable(self, source: Source, mode: str) -> None: ...

    def disable(self, source: Source) -> None: ...

    def tags(self, table_arn: str) -> dict[str, str]: ...

    def tag(self, table_arn: str, tags: Mapping[str, str]) -> None: ...

    def untag(self, table_arn: str, keys: list[str]) -> None: ...


class IncidentReader(Protocol):
    """The stream's open incidents of a table (the explainer's "confirmed: throttling")."""

    def open_incidents(self, table: str) -> list[tuple[Incident, int]]: ...


class Publish(Protocol):
    """SNS ``Publish`` as the explainer calls it (a bound ``client.publish``)."""

    # `*args: Any` too: a typed client's publish takes only its request's keywords, which `**Any` alone rejects.
    def __call__(self, *args: Any, **arguments: Any) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class LookClaim:
    """A look of the judge as claimed: its due time, when it was claimed, and when it ended (None: still
    running, or its invocation died)."""

    due: int
    at: float
    ended_at: float | None = None


class LookClaims(Protocol):
    """The judge's look claims (``alerts.look_chain``)."""

    def claim(self, claim: LookClaim) -> bool:
        """True for the one caller whose conditional write claimed the look due at ``claim.due``."""
        ...

    def ended(self, due: int, at: float) -> None:
        """The claimed look due at ``due`` ended at ``at`` (its next message is sent next)."""
        ...

    def latest(self) -> LookClaim | None:
        """The latest look claimed (by due time)."""
        ...


class NextLook(Protocol):
    """The judge's queue (``alerts.look_chain``)."""

    def __call__(self, due: int, delay_seconds: int, sent_at: float) -> None:
        """Send the judge the message for the look due at ``due``, delivered ``delay_seconds`` from now,
        saying it was sent at ``sent_at`` (the look before ended then)."""
        ...
