"""One invocation's work: fold the batch into the shard state, archive, alert, persist.

The pipeline sees only plain records and injected ports, so the Lambda handler,
the local replay and the benchmark run exactly the same code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from hotkeys.detector.config import Settings
from hotkeys.detector.indexes import IndexSpec
from hotkeys.detector.observability import logger
from hotkeys.detector.records import Change, IndexesOf, Kind, MalformedRecord, ResolveKey, parse_change, sequence_of
from hotkeys.detector.snapshots import SegmentSnapshot, snapshot_of
from hotkeys.detector.state import Segment, ShardState
from hotkeys.detector.windows import parse_iso_utc

SECONDS_PER_DAY = 86_400
# Without tumbling windows Lambda passes no shard id; each batch is then its own segment.
NO_SHARD = "batch"


class NotAStreamEvent(ValueError):
    """The event is not a DynamoDB stream event."""


class BatchError(RuntimeError):
    """The whole batch must be retried (Lambda bisects it and, in the end, sends it to the DLQ)."""


class RecordFailed(BatchError):
    """A record failed in tumbling-window mode: reported as a function error, not per item.

    AWS does not document which state a retry receives after a response that carries both
    ``batchItemFailures`` and ``state``. A function error's retry semantics are documented
    (split on error, retry quota, on-failure destination), and the state it retries with is
    the one from before the failed invocation either way, so the figures never depend on
    the undocumented choice. Bisection isolates the record; it reaches the DLQ alone.
    """


class StatsStore(Protocol):
    def save_segment(self, snapshot: SegmentSnapshot, expires_at: int) -> bool: ...

    def save_catalog(self, table: str, start: int, window_seconds: int, expires_at: int) -> None: ...


class Archiver(Protocol):
    """Archives a batch's TTL deletions; raises if they could not be stored."""

    def wanted(self, change: Change, record: dict[str, Any]) -> bool: ...

    def line(self, change: Change, record: dict[str, Any]) -> str:
        """The record's archive line; raises MalformedRecord for an image that cannot be archived."""
        ...

    def archive(self, shard_id: str, lines: list[tuple[Change, str]]) -> str: ...


class Alerting(Protocol):
    """Evaluates alert rules on the shard's figures; raises if an alert could not be published."""

    def review(self, shard_id: str, state: ShardState, segments: list[Segment], final: bool) -> int: ...


@dataclass
class Ports:
    stats: StatsStore
    resolve_key: ResolveKey
    archiver: Archiver | None = None
    alerts: Alerting | None = None
    # The tables' global secondary indexes to count (None: the table's own partitions only).
    indexes: IndexesOf | None = None


@dataclass(frozen=True)
class StreamBatch:
    records: list[Any]
    shard_id: str | None = None
    window: tuple[int, int] | None = None
    state: Any = None
    is_final: bool = False

    @property
    def tumbling(self) -> bool:
        return self.shard_id is not None and self.window is not None


@dataclass
class BatchOutcome:
    failures: list[str] = field(default_factory=list)
    state: dict[str, Any] | None = None
    counted: int = 0
    ttl_deletes: int = 0
    duplicates: int = 0
    malformed: int = 0
    without_images: int = 0
    stats_writes: int = 0
    summary_size: int = 0
    keys_over_one_percent: int = 0
    archived: int = 0
    alerts_published: int = 0
    # Index write units counted, by (table, index) (a metric per index: names, never keys).
    index_wcu: dict[tuple[str, str], int] = field(default_factory=dict)

    def response(self) -> dict[str, Any]:
        body: dict[str, Any] = {"batchItemFailures": [{"itemIdentifier": seq} for seq in self.failures]}
        if self.state is not None:
            body["state"] = self.state
        return body


def parse_event(event: Any) -> StreamBatch:
    if not isinstance(event, dict) or not isinstance(event.get("Records"), list):
        raise NotAStreamEvent("not a DynamoDB stream event: expected a map with a 'Records' list")
    records = event["Records"]
    sources = {r.get("eventSource") for r in records if isinstance(r, dict)}
    if sources and "aws:dynamodb" not in sources:
        raise NotAStreamEvent(f"not a DynamoDB stream event: eventSource is {sorted(map(str, sources))}")
    window = event.get("window")
    bounds: tuple[int, int] | None = None
    if isinstance(window, dict) and "start" in window:
        bounds = (parse_iso_utc(str(window["start"])), parse_iso_utc(str(window.get("end", window["start"]))))
    shard_id = event.get("shardId")
    return StreamBatch(
        records=records,
        shard_id=str(shard_id) if shard_id else None,
        window=bounds,
        state=event.get("state"),
        is_final=bool(event.get("isFinalInvokeForWindow")) or bool(event.get("isWindowTerminatedEarly")),
    )


def process_batch(batch: StreamBatch, settings: Settings, ports: Ports) -> BatchOutcome:
    state = ShardState.from_json(batch.state) if batch.tumbling else ShardState()
    if batch.tumbling and batch.window is not None:
        state.lambda_window = batch.window[0]
    shard_id = batch.shard_id if batch.tumbling and batch.shard_id else NO_SHARD
    final = batch.is_final or not batch.tumbling
    outcome = BatchOutcome()
    touched: dict[tuple[str, int], Segment] = {}
    to_archive = _fold(batch.records, state, settings, ports, outcome, touched, per_item=not batch.tumbling)
    if outcome.without_images:
        _log_without_images(batch.records, outcome.without_images)
    if to_archive and ports.archiver is not None:
        _archive(shard_id, to_archive, ports.archiver, outcome)
    # Figures first: an alerting outage (SNS) must not keep them from the stats table.
    completed = _flush(shard_id, state, settings, ports.stats, outcome, final)
    if ports.alerts is not None:
        # Resolution needs whole windows: only a tumbling window's final invocation has one.
        window_complete = batch.is_final and batch.tumbling
        outcome.alerts_published = ports.alerts.review(shard_id, state, list(touched.values()), window_complete)
    for key in completed:
        del state.segments[key]
    outcome.failures.sort(key=int)
    outcome.state = state.to_json() if batch.tumbling else None
    return outcome


def _fold(
    records: list[Any],
    state: ShardState,
    settings: Settings,
    ports: Ports,
    outcome: BatchOutcome,
    touched: dict[tuple[str, int], Segment],
    per_item: bool,
) -> list[tuple[Change, str]]:
    archiver = ports.archiver
    resolve_key = ports.resolve_key
    indexes = _InvocationIndexes(ports.indexes) if ports.indexes is not None else None
    window_seconds = settings.window_seconds
    capacity = settings.summary_capacity
    burst_seconds = settings.alert_min_span_seconds
    to_archive: list[tuple[Change, str]] = []
    # With the archive on, a TTL deletion's images are validated by writing its line; they cost no
    # capacity, so sizing them would only validate them a second time. (A redelivered one is not
    # archived again: sized, it is validated all the same.)
    size_ttl_images = archiver is None
    last_segment: Segment | None = None
    for record in records:
        try:
            sequence_text = sequence_of(record)
        except MalformedRecord as error:
            # Without an identifier the failure cannot be reported per item: Lambda must
            # bisect the batch until this record is alone, then send it to the DLQ.
            _log_malformed(record, None, error)
            raise BatchError(f"a record has no usable SequenceNumber: {error}") from error
        sequence = int(sequence_text)
        duplicate = sequence <= state.high_water
        try:
            change = parse_change(record, resolve_key, sequence, indexes, size_ttl_images or duplicate)
            # A redelivered record was archived by the invocation that counted it: an archive failure
            # fails the whole invocation, so "counted" implies "archived".
            if archiver is not None and not duplicate and archiver.wanted(change, record):
                to_archive.append((change, archiver.line(change, record)))
        except MalformedRecord as error:
            _log_malformed(record, sequence_text, error)
            if not per_item:
                raise RecordFailed(f"malformed record {sequence_text}: {error}") from error
            outcome.failures.append(sequence_text)
            outcome.malformed += 1
            if not duplicate:
                state.high_water = sequence
            continue
        if change.partial:
            outcome.without_images += 1
        if duplicate:
            outcome.duplicates += 1
            continue
        names = indexes.names(change.table) if indexes is not None else ()
        segment = state.apply(change, window_seconds, capacity, names, burst_seconds)
        if segment is not last_segment:
            touched[(segment.table, segment.window_start)] = last_segment = segment
        if change.kind is Kind.TTL_DELETE:
            outcome.ttl_deletes += 1
        else:
            outcome.counted += 1
            for name, _key, wcu in change.index_writes:
                index = (change.table, name)
                outcome.index_wcu[index] = outcome.index_wcu.get(index, 0) + wcu
    return to_archive


class _InvocationIndexes:
    """The tables' indexes as the port said at this invocation's first record of each table: one
    lookup per table and invocation instead of one (and a clock read) per record."""

    __slots__ = ("_names", "_port", "_specs")

    def __init__(self, port: IndexesOf) -> None:
        self._port = port
        self._specs: dict[str, tuple[IndexSpec, ...]] = {}
        self._names: dict[str, tuple[str, ...]] = {}

    def __call__(self, table: str) -> tuple[IndexSpec, ...]:
        specs = self._specs.get(table)
        if specs is None:
            specs = self._specs[table] = self._port(table)
            # The segment's own summaries are for GSIs: LSI writes count as the table key's.
            self._names[table] = tuple(spec.name for spec in specs if not spec.local)
        return specs

    def names(self, table: str) -> tuple[str, ...]:
        names = self._names.get(table)
        if names is None:
            self(table)
            names = self._names[table]
        return names


def _log_without_images(records: list[Any], count: int) -> None:
    first: dict[str, Any] = next((r for r in records if isinstance(r, dict)), {})
    section = first.get("dynamodb")
    stream: dict[str, Any] = section if isinstance(section, dict) else {}
    logger.error(
        "stream records without item images: sizes are key-only and the TTL archive lacks items; "
        "the table's stream must use NEW_AND_OLD_IMAGES",
        extra={
            "records": count,
            "stream_view_type": stream.get("StreamViewType"),
            "event_source_arn": first.get("eventSourceARN"),
        },
    )


def _log_malformed(record: Any, sequence: str | None, error: Exception) -> None:
    event_id = record.get("eventID") if isinstance(record, dict) else None
    logger.error(
        "malformed stream record",
        extra={"event_id": event_id, "sequence_number": sequence, "reason": str(error)},
    )


def _archive(
    shard_id: str,
    items: list[tuple[Change, str]],
    archiver: Archiver,
    outcome: BatchOutcome,
) -> None:
    try:
        key = archiver.archive(shard_id, items)
    except Exception as error:
        # The whole invocation fails, so nothing it folded is kept (or flushed): a sequence range
        # in a snapshot always means "counted and archived". Lambda retries and bisects; after the
        # retries the batch goes to the DLQ and `hotkeys redrive` counts and archives it.
        logger.error(
            "TTL archive write failed; the batch will be retried",
            extra={"records": len(items), "error": str(error), "shard_id": shard_id},
        )
        raise BatchError(f"TTL archive write failed: {error}") from error
    outcome.archived += len(items)
    logger.info("archived TTL deletions", extra={"object_key": key, "records": len(items)})


def _flush(
    shard_id: str,
    state: ShardState,
    settings: Settings,
    stats: StatsStore,
    outcome: BatchOutcome,
    final: bool,
) -> list[tuple[str, int]]:
    """Persist what is due; returns the segments that are complete (dropped once alerts saw them)."""
    for segment in state.sealed:
        _save(shard_id, segment, settings, stats, outcome)
    state.sealed.clear()
    latest: dict[str, int] = {}
    for table, start in state.segments:
        latest[table] = max(latest.get(table, start), start)
    completed = []
    for key, segment in state.segments.items():
        done = final or segment.window_start < latest[segment.table]
        if done or _flush_due(segment, settings.flush_seconds):
            if segment.dirty or segment.flushed_at_event < 0:
                _save(shard_id, segment, settings, stats, outcome)
            if done:
                completed.append(key)
        outcome.summary_size = max(outcome.summary_size, len(segment.entries))
        threshold = segment.wcu / 100
        outcome.keys_over_one_percent += sum(1 for entry in segment.entries.values() if entry[1] > threshold)
    return completed


def _flush_due(segment: Segment, flush_seconds: int) -> bool:
    since = segment.flushed_at_event if segment.flushed_at_event >= 0 else segment.first_event
    return segment.dirty and segment.last_event - since >= flush_seconds


def _save(shard_id: str, segment: Segment, settings: Settings, stats: StatsStore, outcome: BatchOutcome) -> None:
    expires_at = segment.window_start + settings.window_seconds + settings.stats_retention_days * SECONDS_PER_DAY
    snapshot = snapshot_of(
        segment, shard_id, settings.window_seconds, settings.summary_capacity, settings.alert_min_span_seconds
    )
    if not segment.catalogued:
        # Catalog first: a snapshot that readers cannot find would still count as coverage for redrive.
        stats.save_catalog(segment.table, segment.window_start, settings.window_seconds, expires_at)
        outcome.stats_writes += 1
        segment.catalogued = True
    stats.save_segment(snapshot, expires_at)
    outcome.stats_writes += 1
    segment.flushed_at_event = segment.last_event
    segment.dirty = False
