"""Builds the pipeline's ports from settings and AWS clients: the one place that knows the concrete adapters."""

from __future__ import annotations

import time
from collections.abc import Callable

from hotkeys.detector.adapters.archive_spool import DynamoArchiveSpool
from hotkeys.detector.adapters.archive_store import S3ObjectStore, TtlAttributeResolver
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.adapters.incident_store import DynamoIncidentStore
from hotkeys.detector.adapters.key_schema import PartitionKeyResolver, TableIndexes, describe_table_with
from hotkeys.detector.adapters.publisher import SnsPublisher
from hotkeys.detector.adapters.stats_store import DynamoStatsStore
from hotkeys.detector.alerts.desk import AlertDesk
from hotkeys.detector.archive import TtlArchiver
from hotkeys.detector.config import Settings
from hotkeys.detector.pipeline import Ports


def build_ports(settings: Settings, aws: AwsClients, clock: Callable[[], float] = time.monotonic) -> Ports:
    """``clock``: what the ports' periodic looks (the archive spool's, the table description's) pace
    themselves by; a benchmark that emulates time passes its own."""
    table = aws.resource("dynamodb").Table(settings.stats_table_name)
    stats = DynamoStatsStore(table)
    alerts = None
    if settings.alert_topic_arn:  # no topic, no alerting
        publisher = SnsPublisher(aws.client("sns"), settings.alert_topic_arn)
        alerts = AlertDesk(settings, DynamoIncidentStore(table), publisher, stats)
    archiver = None
    if settings.archive_bucket_name:  # no bucket, no archive
        archiver = TtlArchiver(
            S3ObjectStore(aws.client("s3"), settings.archive_bucket_name),
            settings.archive_prefix,
            TtlAttributeResolver(settings.ttl_attribute, aws.client("dynamodb")),
            replicated_ttl=settings.archive_replicated_ttl,
            spool=DynamoArchiveSpool(table),
            clock=clock,
        )
    describe_table = describe_table_with(aws.client("dynamodb"))
    return Ports(
        stats=stats,
        resolve_key=PartitionKeyResolver(settings.partition_key_attribute, describe_table),
        archiver=archiver,
        alerts=alerts,
        indexes=TableIndexes(describe_table, clock=clock) if settings.count_indexes else None,
    )
