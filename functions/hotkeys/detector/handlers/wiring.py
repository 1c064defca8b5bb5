"""Builds the functions' ports from settings and AWS clients: the one place that knows the concrete adapters."""

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
from hotkeys.detector.adapters.what_if_store import DynamoWhatIfClaims, SnsWhatIfPublisher
from hotkeys.detector.alerts.first_alarm import FirstAlarm
from hotkeys.detector.alerts.judge import Judge, JudgePorts
from hotkeys.detector.alerts.notifier import Notifier
from hotkeys.detector.alerts.ports import Publisher
from hotkeys.detector.alerts.what_if import WhatIfNotices
from hotkeys.detector.config import ConfigError, Settings
from hotkeys.detector.consumer.archive import TtlArchiver
from hotkeys.detector.consumer.lag import LagReporter, table_lag
from hotkeys.detector.consumer.layout import LayoutCache
from hotkeys.detector.consumer.pipeline import Ports

# Who claims the consumers' messages (each claim names its shard: ``FirstAlarm``).
CONSUMER = "consumer"


def build_ports(
    settings: Settings,
    aws: AwsClients,
    clock: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], float] = time.time,
    publisher: Publisher | None = None,
) -> Ports:
    """``clock``: what the ports' periodic looks (the archive spool's, the table description's, the layout's)
    pace themselves by; ``wall_clock``: when heads are written and alerts claimed. A benchmark or a
    replay that emulates time passes its own for both (and may see what is published: ``publisher``)."""
    table = aws.resource("dynamodb").Table(settings.stats_table_name)
    stats = DynamoStatsStore(table)
    alerts = None
    if settings.alert_topic_arn:  # no topic, no alerting
        sns = publisher or SnsPublisher(aws.client("sns"), settings.alert_topic_arn)
        notifier = Notifier(settings, DynamoIncidentStore(table), sns, CONSUMER)
        alerts = FirstAlarm(settings, notifier, wall_clock)
    archiver = None
    ttl_attribute = TtlAttributeResolver(settings.ttl_attribute, aws.client("dynamodb"))
    if settings.archive_bucket_name:  # no bucket, no archive
        archiver = TtlArchiver(
            S3ObjectStore(aws.client("s3"), settings.archive_bucket_name),
            settings.archive_prefix,
            ttl_attribute,
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
        indexes=TableIndexes(describe_table, clock=clock, proposals=settings.proposals)
        if settings.count_indexes
        else None,
        layouts=LayoutCache(stats.layout, clock, settings.window_seconds, lambda fresh: stats.save_layout(None, fresh)),
        clock=wall_clock,
        ttl_attribute=ttl_attribute,
        lag=LagReporter(stats.save_lag),
    )


def build_judge(
    settings: Settings,
    aws: AwsClients,
    clock: Callable[[], float] = time.time,
    lag: Callable[[str], float] | None = None,
    tables: tuple[str, ...] = (),
    publisher: Publisher | None = None,
) -> Judge:
    """The judge of a deployment (``judge_app``); ``lag``: each table's stream lag (default: from its
    shards' lag reports, ``consumer.lag``); ``tables``: tables to watch besides ``WATCHED_TABLES`` and the
    registry."""
    if not settings.alert_topic_arn:
        raise ConfigError("ALERT_TOPIC_ARN", "is required: the judge publishes its alerts there (set by the stack)")
    table = aws.resource("dynamodb").Table(settings.stats_table_name)
    stats = DynamoStatsStore(table)
    incidents = DynamoIncidentStore(table)
    sns = publisher or SnsPublisher(aws.client("sns"), settings.alert_topic_arn)
    notifier = Notifier(settings, incidents, sns, Judge.owner_name())
    if lag is None:
        lag = lambda table: table_lag(stats.lag_reports(table), clock())  # noqa: E731
    what_ifs = None
    if settings.proposals:  # logged always; published where the stack made a what-if topic
        topic = settings.what_if_topic_arn
        what_ifs = WhatIfNotices(
            DynamoWhatIfClaims(table), SnsWhatIfPublisher(aws.client("sns"), topic) if topic else None
        )
    ports = JudgePorts(heads=stats, layouts=stats, incidents=incidents, lag=lag, clock=clock)
    return Judge(settings, ports, notifier, (*settings.tables, *tables), what_ifs)
