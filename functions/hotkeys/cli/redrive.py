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
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError, ParamValidationError

from hotkeys.cli.streams import RangeNotRead, read_range
from hotkeys.detector.config import Settings
from hotkeys.detector.pipeline import Ports, StreamBatch, process_batch
from hotkeys.detector.records import MalformedRecord, parse_change, table_from_arn
from hotkeys.detector.snapshots import SegmentSnapshot
from hotkeys.detector.windows import window_start

UNREADABLE_CODES = (
    "TrimmedDataAccessException",
    "ResourceNotFoundException",
    "ExpiredIteratorException",
    "ValidationException",
)


@dataclass
class RedriveResult:
    shard_id: str
    start: str
    end: str
    read: int = 0
    already_counted: int = 0
    counted: int = 0
    malformed: list[dict[str, str]] = field(default_factory=list)
    unreadable: str | None = None


REDRIVE_SUFFIX = "#redrive"


def _covered(snapshots: list[SegmentSnapshot], shard_id: str, sequence: int) -> bool:
    redriven = shard_id + REDRIVE_SUFFIX
    return any(
        (snap.shard_id == shard_id or snap.shard_id.startswith(redriven)) and snap.covers(sequence)
        for snap in snapshots
    )


def redrive_entry(
    info: dict[str, Any], settings: Settings, ports: Ports, streams: Any, reader: Any, dry_run: bool
) -> RedriveResult:
    shard_id, start, end = info["shardId"], info["startSequenceNumber"], info["endSequenceNumber"]
    result = RedriveResult(shard_id, start, end)
    arn = str(info.get("streamArn") or "")
    try:
        records = list(read_range(streams, arn, shard_id, start, end))
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
    except (AssertionError, KeyError, ParamValidationError) as error:  # a shard the endpoint cannot read
        result.unreadable = f"shard {shard_id} cannot be read ({type(error).__name__})"
        return result
    result.read = len(records)
    if not records:
        result.unreadable = "no records left in that range (older than the stream's 24 h retention?)"
        return result
    redrive_records(records, table_from_arn(arn), result, settings, ports, reader, dry_run)
    return result


def redrive_records(
    records: list[dict[str, Any]],
    table: str,
    result: RedriveResult,
    settings: Settings,
    ports: Ports,
    reader: Any,
    dry_run: bool,
) -> RedriveResult:
    """Count (and archive) the records of one dead-lettered range that no stored range covers."""
    shard_id = result.shard_id
    window_seconds = settings.window_seconds
    by_window: dict[int, list[dict[str, Any]]] = {}
    snapshots: dict[int, list[SegmentSnapshot]] = {}
    for record in records:
        sequence = int(record["dynamodb"]["SequenceNumber"])
        try:
            change = parse_change(record, ports.resolve_key)
        except MalformedRecord as error:
            result.malformed.append({"sequence_number": str(sequence), "reason": str(error)})
            continue
        window = window_start(change.event_time, window_seconds)
        if window not in snapshots:
            snapshots[window] = reader.window_segments(table, window)
        if _covered(snapshots[window], shard_id, sequence):
            result.already_counted += 1
        else:
            by_window.setdefault(window, []).append(record)
    for window, batch in sorted(by_window.items()):
        result.counted += len(batch)
        if not dry_run:
            process_batch(
                StreamBatch(
                    records=batch,
                    shard_id=f"{shard_id}{REDRIVE_SUFFIX}-{batch[0]['dynamodb']['SequenceNumber']}",
                    window=(window, window + window_seconds),
                    state={},
                    is_final=True,
                ),
                settings,
                Ports(stats=ports.stats, resolve_key=ports.resolve_key, archiver=ports.archiver, indexes=ports.indexes),
            )
    return result


def drain(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    messages = []
    while batch := sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=300, WaitTimeSeconds=0
    ).get("Messages", []):
        messages.extend(batch)
    return messages


def batch_info(message: dict[str, Any]) -> dict[str, Any] | None:
    try:
        body = json.loads(message["Body"])
    except (KeyError, json.JSONDecodeError):
        return None
    info = body.get("DDBStreamBatchInfo") if isinstance(body, dict) else None
    return info if isinstance(info, dict) and "shardId" in info else None
