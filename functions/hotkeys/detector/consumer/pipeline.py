"""One invocation's work: fold the batch into the shard state, archive, alert, persist.

The pipeline sees only plain records and injected ports, so the Lambda handler,
the local replay and the benchmark run exactly the same code.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hotkeys.deployment import EVENT_SOURCE
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.lag import LagReporter
from hotkeys.detector.consumer.ports import Alerting, Archiver, IndexesOf, Layouts, ResolveKey, StatsStore
from hotkeys.detector.consumer.reading import invocation_reader
from hotkeys.detector.consumer.seen import SeenChanges
from hotkeys.detector.consumer.snapshots import IdentityTaken, SegmentSnapshot, Written, snapshot_of
from hotkeys.detector.consumer.state import Segment, ShardState, StateError, max_state_bytes
from hotkeys.detector.domain.health import IGNORED_FROM
from hotkeys.detector.domain.kinesis import KINESIS_SOURCE
from hotkeys.detector.domain.records import (
    Change,
    ChangeKind,
    MalformedRecord,
    TtlAttributeOf,
)
from hotkeys.detector.domain.summary import Counting
from hotkeys.detector.domain.windows import parse_iso_utc, window_start
from hotkeys.detector.observability import logger

SECONDS_PER_DAY = 86_400
_SOURCES = frozenset(("aws:dynamodb", KINESIS_SOURCE))
# How long the stats table keeps a Kinesis shard's recent identities (the next window reads them at once).
SEEN_RETENTION_SECONDS = 86_400
# Without tumbling windows Lambda passes no shard id; each batch is then its own segment.
NO_SHARD = "batch"
# The segments a batch counted records in, by (table, window start).
Touched = dict[tuple[str, int], Segment]


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


@dataclass
class Ports:
    stats: StatsStore
    resolve_key: ResolveKey
    archiver: Archiver | None = None
    alerts: Alerting | None = None
    # The tables' global secondary indexes to count (None: the table's own partitions only).
    indexes: IndexesOf | None = None
    # Where each table's heads go in the window-heads index (None: one bucket per table).
    layouts: Layouts | None = None
    # Each table's TTL attribute, for the TTL health of the items written (None: not judged).
    ttl_attribute: TtlAttributeOf | None = None
    # The container's clock: when a head was written (the judge tells quiet shards by it), and when an
    # alert was claimed.
    clock: Callable[[], float] = time.time
    # Where a shard behind its records says so (the judge holds that table's windows by it).
    lag: LagReporter | None = None


@dataclass(frozen=True)
class StreamBatch:
    records: list[Any]
    shard_id: str | None = None
    window: tuple[int, int] | None = None
    state: Any = None
    is_final: bool = False
    # Lambda ended the window early because the state grew past 1 MB (the shard carries on).
    terminated_early: bool = False
    # The records come from Kinesis Data Streams for DynamoDB (else from a DynamoDB stream), and from
    # this stream (the event's eventSourceARN; None: not said).
    kinesis: bool = False
    source_arn: str | None = None

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
    # Kinesis records whose change was counted already (DynamoDB sent it again: consumer.seen).
    copies: int = 0
    # Records below the high-water mark that no carried or stored range covers: redelivered out of
    # sequence order after later records were counted. Counted like any other, and reported.
    out_of_order: int = 0
    malformed: int = 0
    without_images: int = 0
    stats_writes: int = 0
    summary_size: int = 0
    keys_over_one_percent: int = 0
    archived: int = 0
    # Archive objects S3 refused, kept in the spool (their TTL deletions count in ``archived``).
    spooled: int = 0
    # Spooled archive objects moved into S3 by this invocation.
    drained: int = 0
    alerts_published: int = 0
    # Carried states of another layout (an earlier release's, at a deploy) not read: the shard started afresh.
    states_discarded: int = 0
    # Items written with a TTL value DynamoDB ignores (domain.health.IGNORED): they never expire.
    ttl_ignored: int = 0
    # Kinesis records older than the changes their shard still remembers (consumer.seen): counted, though
    # a copy of one already counted would be counted again (each is at most one change too many).
    beyond_horizon: int = 0
    # Index write units counted, by (table, index) (a metric per index: names, never keys).
    index_wcu: dict[tuple[str, str], int] = field(default_factory=dict)
    # Records of each table this invocation got through (counted, or already counted): each table's
    # proof that its stream is being read, which its StreamUnread alarm weighs against its writes.
    records_read: dict[str, int] = field(default_factory=dict)

    def response(self) -> dict[str, Any]:
        body: dict[str, Any] = {"batchItemFailures": [{"itemIdentifier": seq} for seq in self.failures]}
        if self.state is not None:
            body["state"] = self.state
        return body


def parse_event(event: Any) -> StreamBatch:
    if not isinstance(event, dict) or not isinstance(event.get("Records"), list):
        raise NotAStreamEvent("not a DynamoDB stream event: expected a map with a 'Records' list")
    records = event["Records"]
    # (a source that is not text is none: a list is not even hashable)
    sources = {
        source if isinstance(source := r.get("eventSource"), str) else None for r in records if isinstance(r, dict)
    }
    if sources & _SOURCES == _SOURCES:
        raise NotAStreamEvent("one event holds records of a DynamoDB stream and of a Kinesis stream")
    if sources and not sources & _SOURCES:
        raise NotAStreamEvent(f"not a DynamoDB stream event: eventSource is {sorted(map(str, sources))}")
    source_arn = event.get("eventSourceARN")
    if not isinstance(source_arn, str):
        first = next((r for r in records if isinstance(r, dict)), {})
        source_arn = first.get("eventSourceARN") if isinstance(first.get("eventSourceARN"), str) else None
    # (a final invocation may have no records: its source ARN says, in any partition)
    kinesis = KINESIS_SOURCE in sources or (not sources and str(source_arn).split(":")[2:3] == ["kinesis"])
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
        terminated_early=bool(event.get("isWindowTerminatedEarly")),
        kinesis=kinesis,
        source_arn=source_arn,
    )


def process_batch(batch: StreamBatch, settings: Settings, ports: Ports) -> BatchOutcome:
    outcome = BatchOutcome()
    shard_id = batch.shard_id if batch.tumbling and batch.shard_id else NO_SHARD
    state = _carried_state(batch, shard_id, outcome) if batch.tumbling else ShardState()
    if batch.tumbling and batch.window is not None:
        state.lambda_window = batch.window[0]
    seen_name = _remember_seen(batch, shard_id, state, ports.stats)
    final = batch.is_final or not batch.tumbling
    shard = _ShardInvocation(shard_id, state, settings, ports, outcome)
    to_archive, touched = shard.fold(batch.records, per_item=not batch.tumbling)
    if ports.ttl_attribute is not None:  # (the attribute its TTL verdicts judged, stored with them)
        for segment in touched.values():
            if any(segment.health.verdicts):  # (judged: the port answered for this table, and keeps its answer)
                segment.health.attribute = ports.ttl_attribute(segment.table)
    if ports.lag is not None and touched:
        _report_lag(ports.lag, shard_id, touched, ports.clock())
    if outcome.without_images:
        _log_without_images(batch.records, outcome.without_images)
    if outcome.out_of_order:
        logger.warning(
            "records redelivered below the high-water mark and never counted: counted now",
            extra={"records": outcome.out_of_order, "shard_id": shard_id},
        )
    if to_archive and ports.archiver is not None:
        _archive(shard_id, to_archive, ports.archiver, outcome)
    # The flush happens whatever the first alarm raised: an alerting outage (SNS) must not keep the
    # figures from the stats table (the batch still fails, and its retry announces what it claimed).
    try:
        if ports.alerts is not None:
            outcome.alerts_published = ports.alerts.review(shard_id, state, list(touched.values()))
    finally:
        # A batch short of the mapping's batch size was cut by the batching window: the stream has nothing
        # more of this shard for now, so what it holds is written now (not at the next boundary, which a
        # quiet shard may not reach before its window ends): the judge then sees a burst's whole tail.
        quiet = len(batch.records) < EVENT_SOURCE.batch_size
        completed = shard.flush(final, _closed_early(batch, ports), quiet)
    for key in completed:
        state.complete(key)
    _store_seen(seen_name if final else None, state, ports)  # (at a window's end)
    if ports.archiver is not None:
        outcome.drained = _drain(ports.archiver)
    outcome.failures.sort(key=int)
    outcome.state = shard.fitted_state() if batch.tumbling else None
    return outcome


def _remember_seen(batch: StreamBatch, shard_id: str, state: ShardState, stats: StatsStore) -> str | None:
    """A Kinesis shard's recent changes in ``state.seen``; returns the name they are stored under at a
    window's end (None: not stored: a DynamoDB stream's shard, or no tumbling window)."""
    if not batch.kinesis:
        return None
    name = f"{batch.source_arn}|{shard_id}" if batch.tumbling and batch.source_arn else None
    if state.seen is None:
        # Lambda starts each window with a fresh state: what the shard's last window remembered is stored.
        state.seen = _stored_seen(stats, name) if name is not None else SeenChanges()
    return name


def _store_seen(name: str | None, state: ShardState, ports: Ports) -> None:
    if name is not None and state.seen is not None:
        ports.stats.save_seen(name, state.seen.to_bytes(), int(ports.clock()) + SEEN_RETENTION_SECONDS)


def _stored_seen(stats: StatsStore, name: str) -> SeenChanges:
    """The recent changes a Kinesis shard's last window stored (none: a shard that starts)."""
    stored = stats.load_seen(name)
    if stored is None:
        return SeenChanges()
    try:
        return SeenChanges.from_bytes(stored)
    except ValueError as error:  # (SeenError, or an item not written by this version)
        logger.warning("stored recent changes not readable: the shard remembers none", extra={"error": str(error)})
        return SeenChanges()


def _report_lag(lag: LagReporter, shard_id: str, touched: Touched, now: float) -> None:
    """The batch's newest record's age, if the shard is behind (``consumer.lag``), for every table the batch
    carried: a Kinesis shard carries several tables, and where it is, each of them is."""
    newest = max(segment.last_event for segment in touched.values())
    for table in {table for table, _start in touched}:
        lag.observe(table, shard_id, newest, now)


def _carried_state(batch: StreamBatch, shard_id: str, outcome: BatchOutcome) -> ShardState:
    """The state Lambda carried. One of another layout (written by an earlier release, before a deploy)
    is not read: the shard starts afresh (docs/decisions.md, "One value type for a summary")."""
    try:
        return ShardState.from_json(batch.state)
    except StateError as error:
        outcome.states_discarded += 1
        logger.warning(
            "carried state not written by this version: the shard starts afresh",
            extra={"shard_id": shard_id, "error": str(error)},
        )
        return ShardState()


class _ShardInvocation:
    """One invocation's work on one shard: its records folded into the shard's state, then what is due
    written, with the settings and ports it runs with, tallied in its outcome. Made once per batch."""

    __slots__ = ("_outcome", "_ports", "_settings", "_shard_id", "_state")

    def __init__(
        self, shard_id: str, state: ShardState, settings: Settings, ports: Ports, outcome: BatchOutcome
    ) -> None:
        self._shard_id = shard_id
        self._state = state
        self._settings = settings
        self._ports = ports
        self._outcome = outcome

    def fold(self, records: list[Any], per_item: bool) -> tuple[list[tuple[Change, str]], Touched]:
        """Count the records; returns the TTL deletions to archive (with their lines) and the segments
        touched. ``per_item``: a malformed record is reported as an item failure (else it fails the batch)."""
        state, ports, outcome = self._state, self._ports, self._outcome
        archiver = ports.archiver
        stored = _StoredCoverage(ports.stats, self._shard_id, state)
        reader, index_names = invocation_reader(ports.resolve_key, ports.indexes, ports.ttl_attribute, state.seen)
        read, read_sequence = reader.read, reader.sequence_of
        window_seconds = self._settings.window_seconds
        counting = Counting.of(self._settings)
        to_archive: list[tuple[Change, str]] = []
        touched: Touched = {}
        # With the archive on, a TTL deletion's images are validated by writing its line; they cost no
        # capacity, so sizing them would only validate them a second time. (A redelivered one is not
        # archived again: sized, it is validated all the same.)
        size_ttl_images = archiver is None
        last_segment: Segment | None = None
        records_read = outcome.records_read
        for record in records:
            try:
                sequence_text = read_sequence(record)
            except MalformedRecord as error:
                # Without an identifier the failure cannot be reported per item: Lambda must
                # bisect the batch until this record is alone, then send it to the DLQ.
                _log_malformed(record, None, error)
                raise BatchError(f"a record has no usable SequenceNumber: {error}") from error
            sequence = int(sequence_text)
            # At or below the high-water mark: a redelivery, unless no range says the record was counted
            # (then it came out of sequence order: "If records are processed more than once, they might be
            # processed out of order", Lambda developer guide, tumbling windows).
            below = sequence <= state.high_water
            duplicate = below and state.covers(sequence)
            try:
                change, change_record, copy = read(record, sequence, size_ttl_images or below, duplicate)
                duplicate = duplicate or copy
                if below and not duplicate:
                    duplicate = stored.covers(change.table, window_start(change.event_time, window_seconds), sequence)
                    if not duplicate:
                        outcome.out_of_order += 1
                # A redelivered record was archived by the invocation that counted it: an archive failure
                # fails the whole invocation, so "counted" implies "archived".
                if archiver is not None and not duplicate and archiver.wanted(change, change_record):
                    to_archive.append((change, archiver.line(change, change_record)))
            except MalformedRecord as error:
                self._skip_malformed(record, sequence_text, error, per_item)
                continue
            records_read[change.table] = records_read.get(change.table, 0) + 1
            if change.partial:
                outcome.without_images += 1
            if duplicate:
                outcome.copies += copy
                outcome.duplicates += not copy
                continue
            names = index_names(change.table) if index_names is not None else ()
            segment = state.apply(change, window_seconds, counting, names)
            if segment is not last_segment:
                touched[(segment.table, segment.window_start)] = last_segment = segment
            _tally(outcome, change)
        outcome.beyond_horizon += reader.beyond_horizon
        return to_archive, touched

    def _skip_malformed(self, record: Any, sequence_text: str, error: MalformedRecord, per_item: bool) -> None:
        """A record that cannot be counted: an item failure (``per_item``), else its batch fails."""
        _log_malformed(record, sequence_text, error)
        if not per_item:
            raise RecordFailed(f"malformed record {sequence_text}: {error}") from error
        self._outcome.failures.append(sequence_text)
        self._outcome.malformed += 1
        self._state.high_water = max(self._state.high_water, int(sequence_text))

    def flush(self, final: bool, closed_early: bool = False, quiet: bool = False) -> list[tuple[str, int]]:
        """Persist what is due; returns the segments that are complete (dropped once alerts saw them).

        A segment that is done (sealed, completed by a later window, or at the window's end) is written
        whether or not it changed since its last flush, and marked done: a failed attempt may have stored
        more under its name, which only this write replaces, and a later instance of the same Lambda window
        (if Lambda ever opens a closed window start again with a fresh state: not documented either way)
        must not write over it (snapshots.IdentityTaken)."""
        state, outcome = self._state, self._outcome
        self._save_sealed()
        completed = []
        for key, segment, done, writes in _plan(state, self._settings, final, quiet):
            if writes:
                self._save(segment, done, closed_early and final)
            if done:
                completed.append(key)
            keys = segment.summary
            outcome.summary_size = max(outcome.summary_size, len(keys.entries))
            threshold = keys.wcu / 100
            outcome.keys_over_one_percent += sum(1 for entry in keys.entries.values() if entry.wcu > threshold)
        return completed

    def _save_sealed(self) -> None:
        state = self._state
        for segment in state.sealed:
            self._save(segment, True)
        state.sealed.clear()

    def fitted_state(self) -> dict[str, Any]:
        """The state to carry, within ``max_state_bytes`` (which bounds one segment's): a shard that carries
        several tables (a Kinesis shard) or windows has each one's segment, so while the state is over the
        bound its largest segment is sealed (written as it is; the table's next record opens its next
        generation), rather than leave Lambda a state over its 1 MB ("If it exceeds that size, Lambda
        terminates the window early"). One segment alone always fits: it is not measured."""
        state = self._state
        carried = state.to_json()
        while len(state.segments) > 1 and len(json.dumps(carried, separators=(",", ":"))) > max_state_bytes():
            largest = max(state.segments, key=lambda key: state.segments[key].size())
            state.seal(largest)
            self._save_sealed()
            carried = state.to_json()
        return carried

    def _save(self, segment: Segment, done: bool = False, closed_early: bool = False) -> None:
        settings, ports, shard_id = self._settings, self._ports, self._shard_id
        expires_at = segment.window_start + settings.window_seconds + settings.stats_retention_days * SECONDS_PER_DAY
        layouts = ports.layouts
        bucket = layouts.bucket_of(segment.table, shard_id, segment.window_start) if layouts is not None else 0
        while True:
            written = Written(at=ports.clock(), final=done, closed_early=closed_early)
            snapshot = snapshot_of(segment, shard_id, settings.window_seconds, Counting.of(settings), written)
            try:
                ports.stats.save_segment(snapshot, expires_at, bucket)
                break
            except IdentityTaken:
                # An earlier instance of this Lambda window finished a segment under this name: take the next
                # one (the state carries it on, so retries write under it too).
                segment.next_generation()
            except Exception:
                # Throttled, most likely on a head bucket the judge has since spread (docs/decisions.md §64):
                # the retry writes under the layout as it now stands.
                if layouts is not None:
                    layouts.forget(segment.table)
                raise
        self._outcome.stats_writes += 1
        segment.flushed_at_event = segment.last_event
        segment.dirty = False


def _tally(outcome: BatchOutcome, change: Change) -> None:
    """A counted change in the invocation's totals (its metrics)."""
    if change.kind is ChangeKind.TTL_DELETE:
        outcome.ttl_deletes += 1
        return
    outcome.counted += 1
    ttl = change.ttl
    if ttl is not None and ttl >= IGNORED_FROM:
        outcome.ttl_ignored += 1
    for name, _key, wcu in change.index_writes:
        index = (change.table, name)
        outcome.index_wcu[index] = outcome.index_wcu.get(index, 0) + wcu


class _StoredCoverage:
    """Whether a record below the high-water mark was counted by a segment no longer carried (completed
    or sealed earlier): its stored snapshot's ranges say. One read per (table, window) and invocation,
    and only for such records, which a clean delivery never sends. Only snapshots of segments that are
    done are trusted (``ShardState.finished``): a carried segment's snapshot, or one under a name this
    state has yet to open, may be a failed attempt's, claiming records the state never counted."""

    __slots__ = ("_read", "_shard_id", "_state", "_stats")

    def __init__(self, stats: StatsStore, shard_id: str, state: ShardState) -> None:
        self._stats = stats
        self._shard_id = shard_id
        self._state = state
        self._read: dict[tuple[str, int], list[SegmentSnapshot]] = {}

    def covers(self, table: str, start: int, sequence: int) -> bool:
        snapshots = self._read.get((table, start))
        if snapshots is None:
            snapshots = self._read[(table, start)] = self._stats.shard_segments(table, start, self._shard_id)
        return any(
            self._state.finished(table, start, snapshot.origin) and snapshot.covers(sequence) for snapshot in snapshots
        )


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
        archived = archiver.archive(shard_id, items)
    except Exception as error:
        # Neither S3 nor the spool took them. The whole invocation fails, so nothing it folded is kept
        # (or flushed): a sequence range in a snapshot always means "counted and archived (or
        # spooled)". Lambda retries and bisects; after the retries the batch goes to the DLQ and
        # `hotkeys redrive` counts and archives it.
        logger.error(
            "TTL archive write failed; the batch will be retried",
            extra={"records": len(items), "error": str(error), "shard_id": shard_id},
        )
        raise BatchError(f"TTL archive write failed: {error}") from error
    outcome.archived += len(items)
    outcome.spooled += len(archived.spooled)
    # DEBUG, not INFO: the ItemsArchived metric counts them, a spooled object has its own warning
    # (archive.py) and the objects are listed under the archive prefix by table, hour and shard; at
    # INFO this line came with nearly every invocation of a busy shard (docs/decisions.md §39).
    logger.debug(
        "archived TTL deletions",
        extra={"object_key": ", ".join(archived.stored), "spooled": list(archived.spooled), "records": len(items)},
    )


def _drain(archiver: Archiver) -> int:
    """Spooled archive objects into S3, when due. A failure here fails nothing: they stay spooled."""
    try:
        moved, _empty = archiver.drain()
    except Exception as error:
        logger.warning("could not drain the archive spool", extra={"error": str(error)})
        return 0
    if moved:
        logger.info("moved spooled archive objects into S3", extra={"objects": moved})
    return moved


def _closed_early(batch: StreamBatch, ports: Ports) -> bool:
    """A final invocation before its window's end, not for the state's size: the shard ended ("When the
    shard ends, Lambda considers the window closed", Lambda developer guide, tumbling windows). Its heads
    say so: the judge then knows it has nothing more for later windows (docs/decisions.md §64)."""
    if not batch.is_final or batch.terminated_early or batch.window is None:
        return False
    return ports.clock() < batch.window[1]


def _plan(
    state: ShardState, settings: Settings, final: bool, quiet: bool = False
) -> list[tuple[tuple[str, int], Segment, bool, bool]]:
    """(key, segment, done, written now) of every carried segment (``_flush``)."""
    latest: dict[str, int] = {}
    for table, start in state.segments:
        latest[table] = max(latest.get(table, start), start)
    plan = []
    for key, segment in state.segments.items():
        done = final or segment.window_start < latest[segment.table]
        due = done or _flush_due(segment, settings.flush_seconds, quiet)
        plan.append((key, segment, done, due and (segment.dirty or segment.flushed_at_event < 0 or done)))
    return plan


def _flush_due(segment: Segment, flush_seconds: int, quiet: bool = False) -> bool:
    """A flush boundary (every ``flush_seconds`` of event time, aligned to the epoch) was crossed since the
    segment was last written (or began): every shard writes its head at the same boundaries, so the
    judge, looking just after them, sees every shard's figures of the same moment (docs/decisions.md §64).
    After a ``quiet`` batch (the stream had no more), also once a batching window of event time has
    passed since the last write: a full batch (a busy shard) never triggers it."""
    since = segment.flushed_at_event if segment.flushed_at_event >= 0 else segment.first_event
    if not segment.dirty:
        return False
    if segment.last_event // flush_seconds > since // flush_seconds:
        return True
    return quiet and segment.last_event - since >= EVENT_SOURCE.max_batching_window_seconds
