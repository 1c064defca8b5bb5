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
record made ``HORIZON_SECONDS`` after its newest change, or the shard's end. A copy arriving later than that has
come after the consumer's own memory moved past the change (it counts it as beyond its horizon and reports it:
``ChangesBeyondDedupeHorizon``), so redrive adds no error of its own beyond what that metric bounds. An open shard
that has not carried records that far yet may still bring a copy, which the consumer would count as new: that
entry is left in the DLQ for a later run. The shard's stored identities (``StatsStore.save_seen``) are neither
read (they hold the last seconds of the shard's newest window, not the batch's) nor written (the consumer has
passed the batch's changes for good).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError, ParamValidationError

from hotkeys.cli.redrive import (
    Counting,
    RedriveResult,
    archive_mode,
    count_windows,
    covered,
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


@dataclass
class BatchRead:
    """The batch's records, and the records of the shard around it that carry one of its changes."""

    batch: list[KinesisRead] = field(default_factory=list)
    copies: list[KinesisRead] = field(default_factory=list)
    # The shard has not yet carried a change made HORIZON_SECONDS after the batch's newest (open, caught up).
    unsettled: bool = False


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
    wanted = {item.identity for item in read.batch}
    horizon_us = max(made) + HORIZON_SECONDS * 1_000_000
    passed = False
    for item in _after(following, records, resolve_key):
        if item.identity is not None and item.created_us > horizon_us:
            passed = True
            break
        if item.identity in wanted:
            read.copies.append(item)
    read.unsettled = not (passed or stop.closed)
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


def redrive_kinesis_entry(info: dict[str, Any], counting: Counting, kinesis: Any, dry_run: bool) -> RedriveResult:
    """Redrive one Kinesis dead letter (its ``KinesisBatchInfo``, checked by ``redrive.batch_info``)."""
    result = RedriveResult(info["shardId"], info["startSequenceNumber"], info["endSequenceNumber"])
    try:
        read = read_batch(kinesis, info, counting.ports.resolve_key)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code not in UNREADABLE_CODES:
            raise
        result.unreadable = f"{code}: {error.response.get('Error', {}).get('Message', '')}".strip()
        return result
    except RangeNotRead as error:  # counted nothing: the DLQ entry stays, for a later run
        result.read = error.read
        result.unreadable = str(error)
        return result
    except ParamValidationError as error:
        result.unreadable = f"shard {result.shard_id} cannot be read ({type(error).__name__})"
        return result
    result.read = len(read.batch)
    if not read.batch:
        result.unreadable = "no records left in that range (older than the stream's retention?)"
        return result
    if read.unsettled:
        result.refused = (
            f"shard {result.shard_id} has carried no change made {HORIZON_SECONDS} s after this batch's newest yet: "
            "a copy of one of its changes may still come, which the consumer would count as new; run redrive "
            "again later"
        )
        return result
    mode, undecided = archive_mode(counting)
    by_window = _uncounted(read, result, counting, undecided)
    return result if by_window is None else count_windows(by_window, result, counting, mode, dry_run, kinesis=True)


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
