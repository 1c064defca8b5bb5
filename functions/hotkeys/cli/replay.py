"""``hotkeys replay``: the real handler over event files, through the event-source-mapping emulation.

The backend is in-process moto unless an endpoint URL is given (moto server,
LocalStack, or anything AWS-compatible); the stats table, alert topic (with an
SQS queue subscribed to show what was published), archive bucket and DLQ are
created there with the same names and settings the stack uses.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hotkeys.cli.esm import DeadLetter, ShardConsumer
from hotkeys.cli.io import read_event_file
from hotkeys.cli.local import LocalResources, create_stats_table
from hotkeys.deployment import DEMO_TABLE_TTL_ATTRIBUTE, EVENT_SOURCE
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.config import Settings

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


def create_source_tables(folders: dict[str, list[Path]], aws: AwsClients) -> list[str]:
    """Creates the source tables described beside the events (``tables/<name>.json``, CreateTable input).

    The detector calls DescribeTable to find the partition key of a table with a
    composite primary key; a captured event plus its table description replays faithfully.
    ``folders`` maps each table to the folders of the event files that hold its records.
    """
    created: list[str] = []
    dynamodb = aws.client("dynamodb")
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
            # Grouped by what the record says, as text: a malformed record (an ARN that is a list or a
            # map) still goes to the handler, which rejects it alone, instead of breaking the replay.
            arn = str(record.get("eventSourceARN", "")) if isinstance(record, dict) else ""
            shard = str(record.get("shardId", default_shard)) if isinstance(record, dict) else default_shard
            shards.setdefault((arn, shard), []).append(record)
            if table_folders is not None:
                with contextlib.suppress(MalformedRecord):
                    folders = table_folders.setdefault(table_from_arn(arn), [])
                    if file.parent not in folders:
                        folders.append(file.parent)
    return [(shard, records) for (_arn, shard), records in shards.items()]


def create_resources(aws: AwsClients | None = None, prefix: str = "hotkeys-replay") -> LocalResources:
    aws = aws or AwsClients()
    suffix = uuid.uuid4().hex[:6]
    stats = f"{prefix}-stats-{suffix}"
    create_stats_table(aws.client("dynamodb"), stats)
    sns = aws.client("sns")
    sqs = aws.client("sqs")
    topic_arn = sns.create_topic(Name=f"{prefix}-alerts-{suffix}")["TopicArn"]
    alert_queue = sqs.create_queue(QueueName=f"{prefix}-alert-copies-{suffix}")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=alert_queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn)
    dlq_url = sqs.create_queue(QueueName=f"{prefix}-dlq-{suffix}")["QueueUrl"]
    bucket = f"{prefix}-archive-{suffix}"
    s3 = aws.client("s3")
    region = aws.region or "us-east-1"
    if region == "us-east-1":
        s3.create_bucket(Bucket=bucket)
    else:
        s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": region})
    return LocalResources(stats, topic_arn, bucket, dlq_url, alert_queue)


def replay_settings(resources: LocalResources, chosen: Settings | None = None) -> Settings:
    """The function's settings for a replay: the chosen ones (or the defaults) on these resources.

    The TTL attribute defaults to the demo table's, as the demo stack deploys it.
    """
    base = chosen or Settings(stats_table_name=resources.stats_table)
    return dataclasses.replace(
        base,
        stats_table_name=resources.stats_table,
        alert_topic_arn=resources.topic_arn,
        archive_bucket_name=resources.bucket,
        ttl_attribute=base.ttl_attribute or DEMO_TABLE_TTL_ATTRIBUTE,
    )


def run_replay(
    paths: list[str], resources: LocalResources, aws: AwsClients | None = None, settings: Settings | None = None
) -> ReplayReport:
    """Replays the events through the real handler, with ``settings``, on ``aws`` (the caller's backend;
    boto3's default session if None). Settings default to ``replay_settings(resources)``.

    The event source mapping is emulated as deployed (``hotkeys.deployment.EVENT_SOURCE``) with the
    settings' window as its tumbling window, as the stack configures it.
    """
    from hotkeys.detector.app import Container, build_handler
    from hotkeys.detector.observability import logger, metrics
    from hotkeys.detector.wiring import build_ports

    aws = aws or AwsClients()
    settings = settings or replay_settings(resources)
    table_folders: dict[str, list[Path]] = {}
    shards = load_events(paths, table_folders)
    create_source_tables(table_folders, aws)
    report = ReplayReport(resources=resources, shards=len(shards), event_shards=shards)
    container = Container(settings, build_ports(settings, aws))
    handler = build_handler(lambda: container)
    mapping = dataclasses.replace(EVENT_SOURCE, tumbling_window_seconds=settings.window_seconds)

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                # An invocation that fails before counting has no metrics; Powertools warns about that on
                # stderr, which is noise for a person reading the replay (Lambda logs it, harmlessly).
                # The metrics it does publish are EMF lines on stdout (CloudWatch reads them in Lambda):
                # kept out of the replay's own output.
                warnings.filterwarnings("ignore", message="No application metrics to publish")
                return handler(event, FakeLambdaContext())  # type: ignore[arg-type]
        finally:
            metrics.clear_metrics()

    level = logger.log_level
    logger.setLevel(os.environ.get("HOTKEYS_LOG_LEVEL", "CRITICAL"))
    try:
        for shard_id, records in shards:
            records.sort(key=_sequence_order)
            arns = (r.get("eventSourceARN") for r in records if isinstance(r, dict))
            arn = next((a for a in arns if isinstance(a, str)), None)
            consumer = ShardConsumer(invoke, shard_id, mapping, stream_arn=arn)
            run = consumer.consume(records)
            report.records += len(records)
            report.invocations += run.invocations
            report.dead_letters.extend(run.dead_letters)
        _send_dead_letters(resources, report.dead_letters, aws)
    finally:
        logger.setLevel(level)
    return report


def _sequence_order(record: Any) -> int:
    try:
        return int(record["dynamodb"]["SequenceNumber"])
    except (KeyError, TypeError, ValueError):
        return 0


def _send_dead_letters(resources: LocalResources, letters: list[DeadLetter], aws: AwsClients) -> None:
    if not resources.dlq_url:
        return
    sqs = aws.client("sqs")
    for letter in letters:
        sqs.send_message(QueueUrl=resources.dlq_url, MessageBody=json.dumps(letter.to_message()))
