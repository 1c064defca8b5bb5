"""``hotkeys redrive``: re-read what the DLQ points at, and count what was never counted.

The on-failure destination holds batch coordinates only (shard, first and last sequence
number, stream ARN). Within the stream's 24 h retention the records can be read again.
A record is skipped only if a stored snapshot of the same shard (or an earlier redrive of
it) lists a sequence range that contains it: the consumer records the range of every
successful invocation, and never joins two, so a dead-lettered batch between two ranges
is never taken as counted. A snapshot's ranges mean "counted and archived": an invocation
that could not archive fails whole and stores nothing. The other records run through the
same pipeline (archive included) as a separate segment (``<shard>#redrive``), whose ranges
cover them, so redriving twice changes nothing. Alerts are not sent for redriven (old)
records.

Redrive must count as the deployed function counts: its windows, key attribute, stats table,
archive bucket and prefix, replicas or not (docs/decisions.md §40). ``redrive_plan`` takes them
from the stack; a flag that disagrees with the deployment is refused, and so is a window length
that disagrees with a stored window around the records (``clashing_window``). A redrive
segment's ranges mean "counted and archived" too: a TTL deletion is counted only by a run
that archives it as the deployment does, or where the deployment is known to archive nothing
(``redrive_plan.Archiving``); without the stack, a range holding one whose handling depends on a
setting the flags left out is refused, naming the flags (``redrive_plan.ASKED``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import ClientError, ParamValidationError

from hotkeys.cli.function_logs import function_logs
from hotkeys.cli.redrive_plan import ASKED, Archiving, Undecided, archive_unknown, decided, give, unknown_text
from hotkeys.detector.config import MAX_TUMBLING_WINDOW_SECONDS, Settings
from hotkeys.detector.consumer.pipeline import BatchError, Ports, StreamBatch, process_batch
from hotkeys.detector.consumer.ports import Archiver
from hotkeys.detector.consumer.snapshots import RetiredWindow, SegmentSnapshot, WindowRetired
from hotkeys.detector.domain.kinesis import MAX_KINESIS_SEQUENCE_DIGITS
from hotkeys.detector.domain.records import MalformedRecord, parse_change, table_from_arn
from hotkeys.detector.domain.windows import iso_utc, window_start
from hotkeys.emulator.positions import sequence_of
from hotkeys.emulator.streams import RangeNotRead, ShardRange, read_range

# What a redrive read from its stream (records of a DynamoDB stream, or a Kinesis shard's).
Read = TypeVar("Read")

if TYPE_CHECKING:
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

UNREADABLE_CODES = (
    "TrimmedDataAccessException",
    "ResourceNotFoundException",
    "ExpiredIteratorException",
    "ValidationException",
)

# SQS developer guide, "Amazon SQS short and long polling": with short polling "Amazon SQS samples a
# subset of its servers ... Thus, a particular ReceiveMessage request might not return all of your
# messages"; with long polling (a wait above 0) "the ReceiveMessage request queries all of the servers
# ... Amazon SQS sends an empty response only if the polling wait time expires". The wait must stay
# below the SDK's read timeout (adapters.aws.SDK_CONFIG): a test pins that.
LONG_POLL_SECONDS = 2
# An empty long poll ends the drain once SQS's counts say nothing is visible. The counts are approximate
# ("may not achieve consistency until at least 1 minute after the producers stop sending messages"):
# while they disagree, poll again, at most this many times in all; what they still count is reported.
EMPTY_POLLS = 3
VISIBILITY_SECONDS = 300  # a received entry is ours this long; drain returns well before
MAX_MESSAGES = 10_000  # one run's share (a DLQ fed faster than it drains cannot keep a run going)


@dataclass(frozen=True)
class QueueCounts:
    """SQS's approximate counts (GetQueueAttributes)."""

    visible: int = 0
    not_visible: int = 0
    delayed: int = 0


@dataclass
class Drained:
    """The entries received (each once, with its newest receipt handle) and what SQS still counts."""

    messages: list[MessageTypeDef] = field(default_factory=list)
    counts: QueueCounts = QueueCounts()

    @property
    def in_flight_elsewhere(self) -> int:
        """Entries received by someone else (another redrive, or one stopped within the visibility timeout)."""
        return max(0, self.counts.not_visible - len(self.messages))

    @property
    def remaining(self) -> int:
        """Entries SQS still counts that this run did not receive."""
        return self.counts.visible + self.counts.delayed + self.in_flight_elsewhere


def queue_counts(sqs: SQSClient, queue_url: str) -> QueueCounts:
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=[
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ],
    ).get("Attributes", {})
    return QueueCounts(
        visible=int(attributes.get("ApproximateNumberOfMessages", 0)),
        not_visible=int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
        delayed=int(attributes.get("ApproximateNumberOfMessagesDelayed", 0)),
    )


def drain(
    sqs: SQSClient,
    queue_url: str,
    wait_seconds: int | None = None,
    empty_polls: int = EMPTY_POLLS,
    max_messages: int = MAX_MESSAGES,
) -> Drained:
    """Receive every entry of the queue with long polls (``wait_seconds``, default LONG_POLL_SECONDS);
    stop at an empty poll once SQS counts nothing visible, after ``empty_polls`` empty polls, or at
    ``max_messages`` (bounded in every case)."""
    wait_seconds = LONG_POLL_SECONDS if wait_seconds is None else wait_seconds
    if wait_seconds < 1:
        raise ValueError("drain needs long polling (a wait of at least 1 s)")
    received: dict[str, MessageTypeDef] = {}
    empty = 0
    while len(received) < max_messages:
        batch = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=VISIBILITY_SECONDS,
            WaitTimeSeconds=wait_seconds,
        ).get("Messages", [])
        fresh = [message for message in batch if message["MessageId"] not in received]
        for message in batch:  # an entry received again keeps only its newest receipt handle
            received[message["MessageId"]] = message
        if fresh:
            continue
        empty += 1
        counts = queue_counts(sqs, queue_url)
        if counts.visible + counts.delayed == 0 or empty >= empty_polls:
            return Drained(list(received.values()), counts)
    return Drained(list(received.values()), queue_counts(sqs, queue_url))


@dataclass
class RedriveResult:
    shard_id: str
    start: str
    end: str
    read: int = 0
    already_counted: int = 0
    counted: int = 0
    archived: int = 0
    malformed: list[dict[str, str]] = field(default_factory=list)
    # Kinesis: records of a change already counted under another sequence number, or twice in the range
    copies: int = 0
    unreadable: str | None = None
    refused: str | None = None  # not redriven (left in the DLQ), and why
    needs: list[str] = field(default_factory=list)  # refused until these flags are given (ASKED)

    @property
    def left(self) -> bool:
        """The entry stays in the DLQ."""
        return self.unreadable is not None or self.refused is not None


REDRIVE_SUFFIX = "#redrive"
# Redrives a Kinesis batch's entry (its KinesisBatchInfo), counting as ``Counting`` says, or only reporting (dry run).
KinesisRedrive = Callable[[dict[str, Any], "Counting", bool], RedriveResult]


def covered(snapshots: list[SegmentSnapshot], shard_id: str, sequence: int) -> bool | None:
    """True if a finished snapshot of the shard (or an earlier redrive) counted the record, False if none
    did, None if only a snapshot of a segment the consumer has not finished claims it: that one may be a
    failed attempt's, which the consumer overwrites with what it counted once it finishes the segment, so
    it is no proof yet."""
    redriven = shard_id + REDRIVE_SUFFIX
    claimed = False
    for snap in snapshots:
        if not snap.covers(sequence):
            continue
        if snap.shard_id.startswith(redriven) or (snap.shard_id == shard_id and snap.final):
            return True
        claimed = claimed or snap.shard_id == shard_id
    return None if claimed else False


def still_counting(table: str, window: int, shard_id: str) -> str:
    """Why a range is left while a snapshot of a segment the consumer has not finished claims a record (``covered``)."""
    return (
        f"{table} at {iso_utc(window)} is still being counted by shard {shard_id} (its stored figures "
        "may be a failed attempt's, which the consumer replaces when it finishes the window): run "
        "redrive again once the consumer has passed that window"
    )


def retired_refusal(window: RetiredWindow) -> str:
    """Why a range with records in a window stored (in part) in a retired layout is left in the DLQ: its
    snapshots' ranges cannot be read, so which records were counted cannot be told; counted anyway, they
    could count twice."""
    return (
        f"{window.table} at {iso_utc(window.window_start)} was stored before the upgrade to this version of "
        "the detector (a layout it no longer reads): which of these records it counted cannot be told; the "
        f"entry stays in the DLQ (the stored window expires by {iso_utc(window.expires_at)})"
    )


def clashing_window(reader: Any, table: str, start: int, seconds: int) -> tuple[int, int] | None:
    """A stored window of ``table`` (start, length) that overlaps [start, start + seconds) but is not that
    window: its records were counted in windows of another length, where redrive would not find them."""
    since = start - MAX_TUMBLING_WINDOW_SECONDS + 1
    for stored_start, stored_seconds in reader.windows(table, since, start + seconds - 1):
        overlaps = stored_start < start + seconds and stored_start + stored_seconds > start
        if overlaps and (stored_start, stored_seconds) != (start, seconds):
            return stored_start, stored_seconds
    return None


@dataclass(frozen=True)
class Counting:
    """How a run counts a dead-lettered range as the deployed function would: with its ``settings``,
    through its ``ports``, beside the ranges already stored (read from ``reader``), and with what is known
    of its archive (``archiving`` and ``undecided``: see ``redrive_records``)."""

    settings: Settings
    ports: Ports
    reader: Any
    archiving: Archiving | None = None
    undecided: Undecided | None = None


def read_or_explain(
    result: RedriveResult, read: Callable[[], Read], unreadable: tuple[str, ...] = UNREADABLE_CODES
) -> Read | None:
    """What ``read`` read from the stream, or None with ``result`` saying why it cannot be read now (the DLQ
    entry then stays for a later run); ``unreadable``: the error codes that mean so (others are raised)."""
    try:
        return read()
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code not in unreadable:
            raise
        result.unreadable = f"{code}: {error.response.get('Error', {}).get('Message', '')}".strip()
    except RangeNotRead as error:  # counted nothing: the DLQ entry stays, for a later run
        result.read = error.read
        result.unreadable = str(error)
    except (AssertionError, KeyError, ParamValidationError) as error:  # a shard the endpoint cannot read
        result.unreadable = f"shard {result.shard_id} cannot be read ({type(error).__name__})"
    return None


def redrive_entry(
    info: dict[str, Any], counting: Counting, streams: DynamoDBStreamsClient, dry_run: bool
) -> RedriveResult:
    shard_id, start, end = info["shardId"], info["startSequenceNumber"], info["endSequenceNumber"]
    result = RedriveResult(shard_id, start, end)
    arn = str(info.get("streamArn") or "")
    records = read_or_explain(result, lambda: list(read_range(streams, ShardRange(arn, shard_id, start, end))))
    if records is None:
        return result
    result.read = len(records)
    if not records:
        result.unreadable = "no records left in that range (older than the stream's 24 h retention?)"
        return result
    redrive_records(records, table_from_arn(arn), result, counting, dry_run)
    return result


def redrive_records(
    records: list[dict[str, Any]], table: str, result: RedriveResult, counting: Counting, dry_run: bool
) -> RedriveResult:
    """Count (and archive) the records of one dead-lettered range that no stored range covers.

    ``counting.archiving`` None: DEPLOYED with an archiver port, else UNKNOWN, never ABSENT (a TTL deletion
    is counted without being archived only where the caller knows the deployment archives nothing).
    ``counting.undecided`` names the flags a record's handling waits for (default: under UNKNOWN, the archive's
    for a TTL deletion; else none). A range is refused whole (``result.refused``), before anything of
    it is counted, when its records were counted in windows of another length or it holds a record
    that waits for a flag (``result.needs``); an archive failure refuses the rest of it (the windows
    already counted are covered, and archived, for the next run)."""
    mode, undecided = archive_mode(counting)
    by_window = _uncounted(records, table, result, counting, undecided)
    if by_window is None:
        return result
    return count_windows(by_window, result, counting, mode, dry_run)


def archive_mode(counting: Counting) -> tuple[Archiving, Undecided]:
    """What the run knows of the archive, and the flags a record's handling waits for (``redrive_records``)."""
    mode = counting.archiving or (Archiving.DEPLOYED if counting.ports.archiver is not None else Archiving.UNKNOWN)
    if mode is Archiving.DEPLOYED and counting.ports.archiver is None:
        raise ValueError("redrive with the deployment's archive needs an archiver port")
    return mode, counting.undecided or (archive_unknown if mode is Archiving.UNKNOWN else decided)


def count_windows(
    by_window: dict[int, list[dict[str, Any]]],
    result: RedriveResult,
    counting: Counting,
    mode: Archiving,
    dry_run: bool,
    kinesis: bool = False,
) -> RedriveResult:
    """Count (and archive) each window's records through the pipeline, as a segment of their own
    (``<shard>#redrive-<first sequence number>``) whose ranges cover them; an archive failure refuses the
    rest. ``kinesis``: the records are Lambda's Kinesis records (their changes unwrapped, copies told apart
    within the batch; the shard's stored identities neither read nor written: ``cli.redrive_kinesis``)."""
    settings, ports = counting.settings, counting.ports
    window_seconds = settings.window_seconds
    shard_id = result.shard_id
    pipeline_ports = Ports(
        stats=ports.stats,
        resolve_key=ports.resolve_key,
        archiver=ports.archiver if mode is Archiving.DEPLOYED else None,
        indexes=ports.indexes,
        ttl_attribute=ports.ttl_attribute,
        # The table registered as consumers register it: a table no invocation ever finished (every
        # batch dead-lettered) would otherwise hold windows `top` cannot find.
        layouts=ports.layouts,
    )
    for window, batch in sorted(by_window.items()):
        if not dry_run:
            try:
                outcome = process_batch(
                    StreamBatch(
                        records=batch,
                        shard_id=f"{shard_id}{REDRIVE_SUFFIX}-{sequence_of(batch[0])}",
                        window=(window, window + window_seconds),
                        state={},
                        is_final=True,
                        kinesis=kinesis,
                    ),
                    settings,
                    pipeline_ports,
                )
            except BatchError as error:  # nothing of this window was stored: it stays to redrive
                result.refused = f"{error}; the range stays in the DLQ"
                return result
            result.archived += outcome.archived
        result.counted += len(batch)
    return result


def _uncounted(
    records: list[dict[str, Any]], table: str, result: RedriveResult, counting: Counting, undecided: Undecided
) -> dict[int, list[dict[str, Any]]] | None:
    """The range's records no stored range covers, by window; None when the range is refused whole
    (``result.refused``, and ``result.needs`` for the flags a record waits for). Malformed records and
    those already counted are noted in ``result``."""
    shard_id = result.shard_id
    window_seconds = counting.settings.window_seconds
    by_window: dict[int, list[dict[str, Any]]] = {}
    snapshots: dict[int, list[SegmentSnapshot]] = {}
    waiting = 0
    needs: set[str] = set()
    for record in records:
        sequence = int(record["dynamodb"]["SequenceNumber"])
        try:
            change = parse_change(record, counting.ports.resolve_key)
        except MalformedRecord as error:
            result.malformed.append({"sequence_number": str(sequence), "reason": str(error)})
            continue
        window = window_start(change.event_time, window_seconds)
        if window not in snapshots:
            refusal = window_refusal(counting.reader, table, window, window_seconds, snapshots)
            if refusal is not None:
                result.refused = refusal
                return None
        claim = covered(snapshots[window], shard_id, sequence)
        if claim is None:
            result.refused = still_counting(table, window, shard_id)
            return None
        if claim:
            result.already_counted += 1
            continue
        by_window.setdefault(window, []).append(record)
        flags = undecided(change, record)
        waiting += bool(flags)
        needs.update(flags)
    return None if wait_for_flags(result, waiting, needs) else by_window


def wait_for_flags(result: RedriveResult, waiting: int, needs: set[str]) -> bool:
    """A range holding ``waiting`` records whose handling waits for ``needs`` (flags) is refused whole."""
    if not waiting:
        return False
    result.needs = [flag for flag in ASKED if flag in needs]
    result.refused = (
        f"{waiting} TTL deletion(s) to count, and without the stack redrive does not know "
        f"{unknown_text(result.needs)}; counted now, they could never be archived as deployed: "
        f"{give(result.needs)}"
    )
    return True


def window_refusal(
    reader: Any, table: str, window: int, window_seconds: int, snapshots: dict[int, list[SegmentSnapshot]]
) -> str | None:
    """Why a window's records cannot be redriven (counted in windows of another length, or stored in a
    retired layout), or None, with the window's stored snapshots read into ``snapshots``."""
    clash = clashing_window(reader, table, window, window_seconds)
    if clash is not None:
        return (
            f"{table} at {iso_utc(window)} was counted in {clash[1]} s windows, these settings count "
            f"{window_seconds} s windows (WINDOW_SECONDS changed since?): redriving would count "
            f"records twice; redrive this range with --no-stack --window-seconds {clash[1]}"
        )
    try:
        snapshots[window] = reader.window_segments(table, window)
    except WindowRetired as error:  # the figures of before an upgrade, kept until they expire
        return retired_refusal(error.window)
    return None


# The on-failure destination's record of a discarded batch: DynamoDB Streams' and Kinesis' (Lambda developer guide,
# "Retaining discarded records"): "All of the fields shown in the KinesisBatchInfo property will always be present".
DDB_INFO, KINESIS_INFO = "DDBStreamBatchInfo", "KinesisBatchInfo"
_SEQUENCE_FIELDS = ("startSequenceNumber", "endSequenceNumber")


class NotABatch(ValueError):
    """A DLQ entry that is not a stream batch's record (its reason, one line)."""


@dataclass(frozen=True)
class DeadLetterInfo:
    """A DLQ entry's batch coordinates: ``kind`` names the member that held them (``DDB_INFO`` or ``KINESIS_INFO``)."""

    kind: str
    info: dict[str, Any]


def batch_info(message: MessageTypeDef) -> DeadLetterInfo:
    """The batch coordinates a DLQ entry holds; raises NotABatch saying what is wrong with it."""
    try:
        body = json.loads(message["Body"])
    except (KeyError, json.JSONDecodeError) as error:
        raise NotABatch(f"not JSON ({type(error).__name__})") from None
    kinds = [kind for kind in (DDB_INFO, KINESIS_INFO) if isinstance(body, dict) and kind in body]
    if len(kinds) != 1:
        held = "both" if kinds else "neither"
        raise NotABatch(f"holds {held} {DDB_INFO} {'and' if kinds else 'nor'} {KINESIS_INFO}")
    kind = kinds[0]
    info = body[kind]
    if not isinstance(info, dict) or not isinstance(info.get("shardId"), str) or not info["shardId"]:
        raise NotABatch(f"{kind} names no shardId")
    if kind == KINESIS_INFO:
        _check_kinesis_info(info)
    return DeadLetterInfo(kind, info)


def _check_kinesis_info(info: dict[str, Any]) -> None:
    for name in _SEQUENCE_FIELDS:
        value = info.get(name)
        if not isinstance(value, str) or not value.isdigit() or len(value) > MAX_KINESIS_SEQUENCE_DIGITS:
            raise NotABatch(f"{KINESIS_INFO}.{name} is not a Kinesis sequence number")
    if int(info["startSequenceNumber"]) > int(info["endSequenceNumber"]):
        raise NotABatch(f"{KINESIS_INFO}'s startSequenceNumber is past its endSequenceNumber")
    arn = info.get("streamArn")
    if not isinstance(arn, str) or not arn.startswith("arn:aws") or ":kinesis:" not in arn or ":stream/" not in arn:
        raise NotABatch(f"{KINESIS_INFO}.streamArn is not a Kinesis stream ARN")


# -- one run over the queue: receive, redrive each entry, delete or release it, drain the spool ------
@dataclass(frozen=True)
class RedriveRun:
    """What one run did: each entry's result (``RedriveResult`` as JSON, or why it is not a stream
    batch), what SQS still counts, and the archive objects moved out of the spool."""

    results: list[dict[str, Any]]
    drained: Drained
    dry_run: bool = False
    keep: bool = False
    spool_moved: int = 0
    spool_empty: bool = True

    @property
    def needs(self) -> list[str]:
        """The flags entries were kept for (ASKED's, in its order)."""
        wanted = {flag for item in self.results for flag in item.get("needs") or ()}
        return [flag for flag in ASKED if flag in wanted]

    @property
    def exit_status(self) -> int:
        """2 when entries wait for flags (a usage error: running again as is cannot help), else 1 while
        work remains, else 0. Entries left in the DLQ (unreadable, refused, not received, or kept by
        --dry-run / --keep) are work not done, and so are archive objects still spooled because S3
        refuses them."""
        if self.needs:
            return 2
        left = any(item.get("unreadable") or item.get("refused") for item in self.results)
        kept = bool(self.results) and (self.dry_run or self.keep)
        return 1 if left or not self.spool_empty or self.drained.remaining or kept else 0


@dataclass(frozen=True)
class Readers:
    """How a run reads what its DLQ's entries point at: a DynamoDB stream's range, a Kinesis batch."""

    streams: DynamoDBStreamsClient
    kinesis: KinesisRedrive | None = None


def redrive_queue(
    dlq_url: str,
    counting: Counting,
    sqs: SQSClient,
    readers: Readers,
    *,
    dry_run: bool = False,
    keep: bool = False,
) -> RedriveRun:
    """Receives the DLQ's entries once each and redrives them; an entry redriven whole is deleted
    (unless ``dry_run`` or ``keep``), any other made visible again at once, for the next run. A Kinesis
    batch's entry is redriven by ``readers.kinesis`` (``cli.redrive_kinesis``: it reads the Kinesis stream)."""
    drained = drain(sqs, dlq_url)
    results: list[dict[str, Any]] = []
    with function_logs():
        for message in drained.messages:
            try:
                letter = batch_info(message)
            except NotABatch as error:
                results.append({"message_id": message.get("MessageId"), "unreadable": f"not a stream batch: {error}"})
                _release(sqs, dlq_url, message)
                continue
            if letter.kind == KINESIS_INFO:
                kinesis = readers.kinesis
                result = kinesis(letter.info, counting, dry_run) if kinesis is not None else _no_reader(letter.info)
            else:
                result = redrive_entry(letter.info, counting, readers.streams, dry_run)
            results.append(asdict(result))
            if not dry_run and not keep and not result.left:
                sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"])
            else:
                _release(sqs, dlq_url, message)
    archiver = counting.ports.archiver
    moved, empty = drain_spool(archiver) if archiver is not None and not dry_run else (0, True)
    return RedriveRun(results, drained, dry_run, keep, moved, empty)


def _no_reader(info: dict[str, Any]) -> RedriveResult:
    result = RedriveResult(info["shardId"], info["startSequenceNumber"], info["endSequenceNumber"])
    result.unreadable = "a Kinesis batch, and this run reads no Kinesis stream"
    return result


def _release(sqs: SQSClient, queue_url: str, message: MessageTypeDef) -> None:
    """A message kept in the DLQ is made visible again at once, for the next look."""
    sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)


def drain_spool(archiver: Archiver) -> tuple[int, bool]:
    """Archive objects the function spooled while S3 refused them, into S3 now: (moved, spool empty)."""
    moved = 0
    while True:
        count, empty = archiver.drain(force=True)
        moved += count
        if empty or not count:
            return moved, empty
