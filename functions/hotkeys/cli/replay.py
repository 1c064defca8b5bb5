"""``hotkeys replay``: the real handler over event files, through the event-source-mapping emulation.

The backend is in-process moto unless an endpoint URL is given (moto server,
LocalStack, or anything AWS-compatible); the stats table, alert topic (with an
SQS queue subscribed to show what was published), archive bucket and DLQ are
created there with the same names and settings the stack uses.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3

from hotkeys.cli.envs import environment
from hotkeys.cli.esm import DeadLetter, ShardConsumer
from hotkeys.cli.io import read_event_file
from hotkeys.cli.local import LocalResources, create_stats_table
from infra.settings import DEMO_TABLE_TTL_ATTRIBUTE, EVENT_SOURCE

DEFAULT_SHARD = "shardId-00000000000000000000"


class ReplayError(ValueError):
    """A user mistake in the replay's input (missing file, not an event)."""


@dataclass
class FakeLambdaContext:
    function_name: str = "hotkey-detector-replay"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:hotkey-detector-replay"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


@dataclass
class ReplayReport:
    resources: LocalResources
    records: int = 0
    shards: int = 0
    invocations: int = 0
    dead_letters: list[DeadLetter] = field(default_factory=list)
    event_shards: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)


def create_source_tables(folders: dict[str, list[Path]]) -> list[str]:
    """Creates the source tables described beside the events (``tables/<name>.json``, CreateTable input).

    The detector calls DescribeTable to find the partition key of a table with a
    composite primary key; a captured event plus its table description replays faithfully.
    ``folders`` maps each table to the folders of the event files that hold its records.
    """
    created: list[str] = []
    dynamodb = boto3.client("dynamodb")
    for name in sorted(folders):
        description = next((d for d in (f / "tables" / f"{name}.json" for f in folders[name]) if d.is_file()), None)
        if description is not None:
            with contextlib.suppress(dynamodb.exceptions.ResourceInUseException):
                dynamodb.create_table(**json.loads(description.read_text()))
            created.append(name)
    return created


def load_events(
    paths: list[str], table_folders: dict[str, list[Path]] | None = None
) -> list[tuple[str, list[dict[str, Any]]]]:
    """(shard id, records) per shard, from event files in the Lambda DynamoDB-stream format.

    ``table_folders``, if given, receives the folders of the files that hold each table's records.
    """
    from hotkeys.detector.records import MalformedRecord, table_from_arn

    shards: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for path in paths:
        file = Path(path)
        if not file.is_file():
            raise ReplayError(f"event file not found: {path}")
        try:
            event = read_event_file(file)
        except (json.JSONDecodeError, UnicodeDecodeError, OSError, EOFError) as error:
            raise ReplayError(f"{path} is not a readable JSON event file: {error}") from None
        if not isinstance(event, dict) or not isinstance(event.get("Records"), list):
            raise ReplayError(f"{path} is not a DynamoDB stream event (no 'Records' list)")
        default_shard = str(event.get("shardId") or f"{DEFAULT_SHARD}-{file.stem}")
        for record in event["Records"]:
            arn = record.get("eventSourceARN", "") if isinstance(record, dict) else ""
            shard = str(record.get("shardId", default_shard)) if isinstance(record, dict) else default_shard
            shards.setdefault((arn, shard), []).append(record)
            if table_folders is not None:
                with contextlib.suppress(MalformedRecord):
                    folders = table_folders.setdefault(table_from_arn(arn), [])
                    if file.parent not in folders:
                        folders.append(file.parent)
    return [(shard, records) for (_arn, shard), records in shards.items()]


def create_resources(prefix: str = "hotkeys-replay") -> LocalResources:
    suffix = uuid.uuid4().hex[:6]
    stats = f"{prefix}-stats-{suffix}"
    create_stats_table(boto3.client("dynamodb"), stats)
    sns = boto3.client("sns")
    sqs = boto3.client("sqs")
    topic_arn = sns.create_topic(Name=f"{prefix}-alerts-{suffix}")["TopicArn"]
    alert_queue = sqs.create_queue(QueueName=f"{prefix}-alert-copies-{suffix}")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=alert_queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn)
    dlq_url = sqs.create_queue(QueueName=f"{prefix}-dlq-{suffix}")["QueueUrl"]
    bucket = f"{prefix}-archive-{suffix}"
    s3 = boto3.client("s3")
    region = boto3.session.Session().region_name or "us-east-1"
    if region == "us-east-1":
        s3.create_bucket(Bucket=bucket)
    else:
        s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": region})
    return LocalResources(stats, topic_arn, bucket, dlq_url, alert_queue)


def run_replay(paths: list[str], resources: LocalResources, extra_env: dict[str, str] | None = None) -> ReplayReport:
    """Replays the events against existing resources (the caller chooses the backend)."""
    table_folders: dict[str, list[Path]] = {}
    shards = load_events(paths, table_folders)
    create_source_tables(table_folders)
    report = ReplayReport(resources=resources, shards=len(shards), event_shards=shards)
    env = {
        "STATS_TABLE_NAME": resources.stats_table,
        "WINDOW_SECONDS": str(EVENT_SOURCE.tumbling_window_seconds),
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        # As the demo stack deploys it (its table's TTL attribute).
        "TTL_ATTRIBUTE": DEMO_TABLE_TTL_ATTRIBUTE,
    }
    if resources.topic_arn:
        env["ALERT_TOPIC_ARN"] = resources.topic_arn
    if resources.bucket:
        env["ARCHIVE_BUCKET_NAME"] = resources.bucket
    env.update(extra_env or {})
    from hotkeys.detector.app import handler
    from hotkeys.detector.observability import logger, metrics

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        try:
            with warnings.catch_warnings():
                # An invocation that fails before counting has no metrics; Powertools warns about that on
                # stderr, which is noise for a person reading the replay (Lambda logs it, harmlessly).
                warnings.filterwarnings("ignore", message="No application metrics to publish")
                return handler(event, FakeLambdaContext())
        finally:
            # Metrics are not published locally. Powertools keeps a disabled provider's metrics and
            # prints them to stdout once 100 accumulate, which would corrupt `--json` output.
            metrics.clear_metrics()

    level = logger.log_level
    logger.setLevel(os.environ.get("HOTKEYS_LOG_LEVEL", "CRITICAL"))
    try:
        with environment(env):
            for shard_id, records in shards:
                records.sort(key=_sequence_order)
                arn = next((r.get("eventSourceARN") for r in records if isinstance(r, dict)), None)
                consumer = ShardConsumer(invoke, shard_id, EVENT_SOURCE, stream_arn=arn)
                run = consumer.consume(records)
                report.records += len(records)
                report.invocations += run.invocations
                report.dead_letters.extend(run.dead_letters)
            _send_dead_letters(resources, report.dead_letters)
    finally:
        logger.setLevel(level)
    return report


def _sequence_order(record: Any) -> int:
    try:
        return int(record["dynamodb"]["SequenceNumber"])
    except (KeyError, TypeError, ValueError):
        return 0


def _send_dead_letters(resources: LocalResources, letters: list[DeadLetter]) -> None:
    if not resources.dlq_url:
        return
    sqs = boto3.client("sqs")
    for letter in letters:
        sqs.send_message(QueueUrl=resources.dlq_url, MessageBody=json.dumps(letter.to_message()))
