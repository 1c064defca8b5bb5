"""``hotkeys redrive`` for a Kinesis event source mapping's dead letters (``KinesisBatchInfo``).

Lambda's on-failure destination holds the batch's coordinates: "use the streamArn, shardId, startSequenceNumber,
and endSequenceNumber fields to obtain the full original record" (Lambda developer guide, Kinesis on-failure
destinations). Redrive reads them again (GetShardIterator AT_SEQUENCE_NUMBER, GetRecords past the end, or to the
shard's end), shapes each as Lambda's Kinesis event carries it (``emulator.kinesis_read``), and counts what was
never counted through the pipeline, as for a DynamoDB stream (``cli.redrive``).

What "never counted" means for Kinesis, where DynamoDB may send one change more than once, each copy under its own
sequence number (docs/kinesis.md, decisions §84). The consumer counts a change when the first of its records it
reads lands in an invocation that succeeds: every later copy it reads is then skipped by the change's identity
(``consumer.seen``), while a failed invocation's identities are dropped with its state. So a change was counted
exactly when some record of it on the shard lies in a stored range of a finished segment (or of an earlier
redrive), and redrive relies on that rule: a dead-lettered record is counted only if neither it nor any other
record of its change is covered, and a change twice in the batch is counted once (``RedriveResult.copies``).

Its copies are looked for where they can be: from records that arrived ``HORIZON_SECONDS`` before the batch's
oldest change was made (a copy cannot arrive before its change is made; the margin is for clocks) to the first
record made so late that the consumer has forgotten the batch's newest change when it reads it (``forgets``: the
consumer's own rule, by whole seconds), or the shard's end. A copy arriving later than that has come after the
consumer's own memory moved past the change (it counts it as beyond its horizon and reports it:
``ChangesBeyondDedupeHorizon``), so redrive adds no error of its own beyond what that metric bounds. An open shard
that has not carried records that far yet may still bring a copy, which the consumer would count as new: that
entry is left in the DLQ for a later run. So is an entry whose look for copies ended where the consumer has not
yet stored what it read (``consumer_passed``): a copy it has not read yet, or read and holds in its window state,
is not in a stored range, and would be counted by both. The shard's stored identities (``StatsStore.save_seen``)
are neither read (they hold the last seconds of the shard's newest window, not the batch's) nor written (the
consumer has passed the batch's changes for good).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hotkeys.cli.redrive import (
    Counting,
    RedriveResult,
    archive_mode,
    count_windows,
    covered,
    read_or_explain,
    still_counting,
    wait_for_flags,
    window_refusal,
)
from hotkeys.detector.consumer.seen import HORIZON_SECONDS
from hotkeys.detector.consumer.snapshots import SegmentSnapshot
from hotkeys.detector.domain.kinesis import identity, kinesis_sequence, unwrap
from hotkeys.detector.domain.records import MalformedRecord, ResolveKey, parse_change
from hotkeys.detector.domain.windows import window_start
from hotkeys.emulator.kinesis_read import ShardEnd, StartAt, read_shard
from hotkeys.emulator.streams import RangeNotRead

if TYPE_CHECKING:
    from collections.abc import Iterator

    from hotkeys.detector.domain.records import Change

UNREADABLE_CODES = (
    "ResourceNotFoundException",
    "InvalidArgumentException",
    "ExpiredIteratorException",
    "ValidationException",
)


@dataclass(frozen=True)
class KinesisRead:
    """One record read again, with its change's identity (None: malformed, ``reason`` says why)."""

    record: dict[str, Any]
    sequence: int
    change: Change | None = None
    shaped: dict[str, Any] | None = None  # the change in DynamoDB Streams' shape (what TTL judges read)
    identity: bytes | None = None
    created_us: int = 0
    reason: str = ""


def read_record(record: dict[str, Any], resolve_key: ResolveKey) -> KinesisRead:
    sequence = int(kinesis_sequence(record))
    try:
        unwrapped = unwrap(record)
        change = parse_change(unwrapped.record, resolve_key, sequence)
    except MalformedRecord as error:
        return KinesisRead(record, sequence, reason=str(error))
    return KinesisRead(record, sequence, change, unwrapped.record, identity(change, unwrapped), unwrapped.created_us)


def forgets(second: int, newest_second: int) -> bool:
    """Whether the consumer, once it has read a change made at ``second``, has forgotten the changes made at
    ``newest_second``: ``consumer.seen.SeenChanges.add`` forgets every creation second before its newest one
    less ``HORIZON_SECONDS``, by whole seconds (a copy of a change older than that is beyond its horizon)."""
    return second - HORIZON_SECONDS > newest_second


@dataclass
class BatchRead:
    """The batch's records, and the records of the shard around it that carry one of its changes."""

    batch: list[KinesisRead] = field(default_factory=list)
    copies: list[KinesisRead] = field(default_factory=list)
    # The shard has not yet carried a change the consumer forgets the batch's newest at (open, caught up).
    unsettled: bool = False
    # Where the look for later copies ended: the record the consumer forgets the batch's newest change at,
    # or a closed shard's last well-formed record after the batch (None: none after it).
    scan_end: KinesisRead | None = None


def read_batch(kinesis: Any, info: dict[str, Any], resolve_key: ResolveKey) -> BatchRead:
    """The dead-lettered range and its changes' other records on the shard; raises RangeNotRead if the range
    could not be read to its end (or to the shard's end)."""
    arn, shard_id, start, end = (
        info["streamArn"],
        info["shardId"],
        info["startSequenceNumber"],
        info["endSequenceNumber"],
    )
    read = BatchRead()
    stop = ShardEnd()
    records = read_shard(kinesis, arn, shard_id, StartAt(sequence=start), stop)
    last, first = int(end), int(start)
    following: KinesisRead | None = None
    for record in records:
        item = read_record(record, resolve_key)
        if item.sequence > last:
            following = item
            break
        read.batch.append(item)
        if item.sequence == last:
            break
    else:
        if not stop.closed:
            newest = read.batch[-1].record["kinesis"]["sequenceNumber"] if read.batch else None
            raise RangeNotRead(shard_id, end, len(read.batch), newest, stop.empty_pages)
    made = [item.created_us for item in read.batch if item.identity is not None]
    if not made:
        return read
    _read_after(read, _after(following, records, resolve_key), stop, max(made) // 1_000_000)
    wanted = {item.identity for item in read.batch}
    since = StartAt(timestamp=min(made) / 1_000_000 - HORIZON_SECONDS)
    for record in read_shard(kinesis, arn, shard_id, since, ShardEnd()):
        item = read_record(record, resolve_key)
        if item.sequence >= first:
            break
        if item.identity in wanted:
            read.copies.append(item)
    return read


def _after(
    following: KinesisRead | None, records: Iterator[dict[str, Any]], resolve_key: ResolveKey
) -> Iterator[KinesisRead]:
    if following is not None:
        yield following
    for record in records:
        yield read_record(record, resolve_key)


def _read_after(read: BatchRead, after: Iterator[KinesisRead], stop: ShardEnd, newest_second: int) -> None:
    """The batch's changes' copies after it, up to the record the consumer forgets the newest at (``scan_end``),
    or the shard's end (``unsettled`` if it may carry more)."""
    wanted = {item.identity for item in read.batch}
    for item in after:
        if item.identity is None:
            continue
        read.scan_end = item
        if forgets(item.created_us // 1_000_000, newest_second):
            return
        if item.identity in wanted:
            read.copies.append(item)
    read.unsettled = not stop.closed


def redrive_kinesis_entry(info: dict[str, Any], counting: Counting, kinesis: Any, dry_run: bool) -> RedriveResult:
    """Redrive one Kinesis dead letter (its ``KinesisBatchInfo``, checked by ``redrive.batch_info``)."""
    result = RedriveResult(info["shardId"], info["startSequenceNumber"], info["endSequenceNumber"])
    read = read_or_explain(result, lambda: read_batch(kinesis, info, counting.ports.resolve_key), UNREADABLE_CODES)
    if read is None:
        return result
    result.read = len(read.batch)
    if not read.batch:
        result.unreadable = "no records left in that range (older than the stream's retention?)"
        return result
    if read.unsettled:
        result.refused = (
            f"shard {result.shard_id} has carried no change made {HORIZON_SECONDS} s past this batch's newest "
            "second yet: a copy of one of its changes may still come, which the consumer would count as new; run "
            "redrive again later"
        )
        return result
    if not consumer_passed(read, counting, result.shard_id):
        assert read.scan_end is not None
        result.refused = (
            f"the consumer has stored no finished figures of shard {result.shard_id} up to sequence number "
            f"{read.scan_end.sequence}, where the look for copies of this batch's changes ended: a copy it has "
            "not read yet, or holds in its window's state, would be counted by both; run redrive again once "
            "the consumer has finished the window holding that record"
        )
        return result
    mode, undecided = archive_mode(counting)
    by_window = _uncounted(read, result, counting, undecided)
    return result if by_window is None else count_windows(by_window, result, counting, mode, dry_run, kinesis=True)


def consumer_passed(read: BatchRead, counting: Counting, shard_id: str) -> bool:
    """Whether the consumer has stored, as finished, what it read of the shard up to where the look for copies
    ended (``read.scan_end``): then every copy it counted lies in a stored range ``covered`` finds.

    A finished snapshot of the shard (``final``: its last write a successful invocation's) whose ranges reach
    that record's sequence number says so: the consumer reads a shard in order. It is looked for in the
    record's window and the next one, of each table the records read name (a record the consumer skips as a
    copy is in no range; the shard's next records of any table then are); finding none refuses the entry, a
    later run finds it once the consumer has finished that window."""
    end = read.scan_end
    if end is None:  # nothing after the batch on a closed shard: nothing more to read
        return True
    assert end.change is not None
    window_seconds = counting.settings.window_seconds
    window = window_start(end.change.event_time, window_seconds)
    tables = sorted({item.change.table for item in (*read.batch, *read.copies, end) if item.change is not None})
    stats = counting.ports.stats
    return any(
        snapshot.final and any(high >= end.sequence for _low, high in snapshot.ranges)
        for table in tables
        for start in (window, window + window_seconds)
        for snapshot in stats.shard_segments(table, start, shard_id)
    )


def _uncounted(
    read: BatchRead, result: RedriveResult, counting: Counting, undecided: Any
) -> dict[int, list[dict[str, Any]]] | None:
    """The batch's records of changes no stored range covers a record of, one record a change, by window of
    creation; None when the range is refused whole (``result.refused``)."""
    shard_id, window_seconds = result.shard_id, counting.settings.window_seconds
    stored: dict[str, dict[int, list[SegmentSnapshot]]] = {}
    counted: set[bytes] = set()
    uncovered: list[KinesisRead] = []
    for item in read.batch:
        if item.change is None or item.identity is None:
            result.malformed.append({"sequence_number": str(item.sequence), "reason": item.reason})
            continue
        table, window = item.change.table, window_start(item.change.event_time, window_seconds)
        snapshots = stored.setdefault(table, {})
        if window not in snapshots:
            result.refused = window_refusal(counting.reader, table, window, window_seconds, snapshots)
            if result.refused is not None:
                return None
        claim = covered(snapshots[window], shard_id, item.sequence)
        if claim is None:
            result.refused = still_counting(table, window, shard_id)
            return None
        if claim:
            result.already_counted += 1
            counted.add(item.identity)
        else:
            uncovered.append(item)
    for copy in read.copies:  # (a copy's change is a batch record's: its window's snapshots are read)
        assert copy.change is not None and copy.identity is not None
        window = window_start(copy.change.event_time, window_seconds)
        claim = covered(stored[copy.change.table][window], shard_id, copy.sequence)
        if claim is None:
            result.refused = still_counting(copy.change.table, window, shard_id)
            return None
        if claim:
            counted.add(copy.identity)
    by_window: dict[int, list[dict[str, Any]]] = {}
    waiting, needs = 0, set[str]()
    for item in uncovered:
        assert item.change is not None and item.identity is not None
        if item.identity in counted:
            result.copies += 1
            continue
        counted.add(item.identity)
        by_window.setdefault(window_start(item.change.event_time, window_seconds), []).append(item.record)
        flags = undecided(item.change, item.shaped)
        waiting += bool(flags)
        needs.update(flags)
    return None if wait_for_flags(result, waiting, needs) else by_window
