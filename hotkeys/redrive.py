"""``hotkeys redrive``: re-read what the DLQ points at, and count what was never counted.

The on-failure destination holds batch coordinates only (shard, first and last sequence
number, stream ARN). Within the stream's 24 h retention the records can be read again.
Records a segment snapshot of the same shard already covers (its first sequence number up
to its high-water mark) were counted (or were malformed) and are skipped; the others run
through the same pipeline as a separate segment (``<shard>#redrive``), so redriving twice
rewrites the same snapshot instead of counting again. Alerts are not sent for redriven
(old) records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError, ParamValidationError

from detector.config import Settings
from detector.pipeline import Ports, StreamBatch, process_batch
from detector.records import MalformedRecord, parse_change, table_from_arn
from detector.snapshots import SegmentSnapshot
from hotkeys.streams import read_range

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


def _covered(snapshots: list[SegmentSnapshot], shard_id: str, sequence: int) -> bool:
    return any(
        snap.shard_id == shard_id and int(snap.first_sequence) <= sequence <= int(snap.last_sequence)
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
    except (AssertionError, KeyError, ParamValidationError) as error:  # a shard the endpoint cannot read
        result.unreadable = f"shard {shard_id} cannot be read ({type(error).__name__})"
        return result
    result.read = len(records)
    if not records:
        result.unreadable = "no records left in that range (older than the stream's 24 h retention?)"
        return result
    table = table_from_arn(arn)
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
        window = change.event_time - change.event_time % window_seconds
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
                    shard_id=f"{shard_id}#redrive",
                    window=(window, window + window_seconds),
                    state={},
                    is_final=True,
                ),
                settings,
                Ports(stats=ports.stats, resolve_key=ports.resolve_key, archiver=ports.archiver),
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
