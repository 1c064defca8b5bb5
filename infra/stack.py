"""HotKeyDetectorStack: composes the source table(s) and the detector from the CDK context."""

from __future__ import annotations

from typing import Any

from aws_cdk import Annotations, CfnOutput, Stack
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from infra.arns import concrete
from infra.compliance import ControlTower
from infra.demo_table import DemoTable
from infra.detector import HotKeyDetector, WatchedTable
from infra.detector_function import FunctionBase
from infra.kinesis_source import KinesisSource
from infra.kinesis_streaming import KinesisStreaming, KinesisStreamingProvider
from infra.options import DetectorOptions, SourceSpec
from infra.quotas import StackResourceQuota
from infra.stream_enabler import StreamEnabler, StreamEnablerProvider
from infra.throttle_alarms import ThrottleAlarms
from infra.throttle_explainer import ThrottleExplainer, ThrottleExplainerProps
from infra.throttle_insights import ThrottleInsights, ThrottleInsightsProvider, construct_id

# The alarm (``Monitoring.alarms`` key and dashboard title) on the throttle explainer's failed invocations.
UNDELIVERED_EXPLANATIONS = "UndeliveredThrottleExplanations"


class HotKeyDetectorStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        source: SourceSpec,
        options: DetectorOptions,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.node.add_validation(StackResourceQuota(self))
        if options.throttled_key_insights and options.plaintext_concern:
            Annotations.of(self).add_warning_v2(
                "hotkeys:insightsShowKeys",
                f"throttledKeyInsights=true: Contributor Insights shows the throttled keys in plaintext in "
                f"CloudWatch, though {options.plaintext_concern}; AWS advises against it for such tables",
            )
        source.validate_environment(concrete(self.region), concrete(self.account))
        # -c compliance=controltower: AWS Control Tower's proactive controls (infra/compliance.py)
        self.control_tower = (
            ControlTower(
                self,
                "ControlTower",
                subnet_ids=options.vpc_subnet_ids,
                security_group_ids=options.vpc_security_group_ids,
            )
            if options.compliance
            else None
        )
        data_key = self.control_tower.key if self.control_tower else None
        # -c kinesisStreamArn / enableKinesis: every table read from one Kinesis data stream (infra/kinesis_source.py)
        self.kinesis = (
            KinesisSource(
                self,
                "Kinesis",
                stream_arn=source.kinesis_stream_arn,
                enhanced_fan_out=source.enhanced_fan_out,
                key=data_key,
            )
            if source.kinesis
            else None
        )
        tables = self._watched_tables(source, options)
        detector = HotKeyDetector(
            self, "Detector", tables=tables, options=options, data_key=data_key, kinesis=self.kinesis
        )
        self.throttle_alarms: ThrottleAlarms | None = None
        self.throttle_explainer: ThrottleExplainer | None = None
        if not options.lean:
            self._throttles(detector, tables, options)
        CfnOutput(self, "StatsTableName", value=detector.stats.table.table_name)
        CfnOutput(self, "AlertTopicArn", value=detector.alerts.topic.topic_arn)
        if detector.what_if is not None:
            CfnOutput(self, "WhatIfTopicArn", value=detector.what_if.topic.topic_arn)
        CfnOutput(self, "ArchiveBucketName", value=detector.archive.bucket.bucket_name)
        CfnOutput(self, "ArchiveDatabaseName", value=detector.archive.database_name)
        CfnOutput(self, "DeadLetterQueueUrl", value=detector.dead_letters.queue.queue_url)
        if detector.monitoring.dashboard_url is not None:
            CfnOutput(self, "DashboardUrl", value=detector.monitoring.dashboard_url)
        for watched in tables:
            if isinstance(watched.table, dynamodb.TableV2):
                CfnOutput(self, "DemoTableName", value=watched.table.table_name)
        if self.control_tower:
            # Last: every log group, key, queue and function of the finished stack.
            self.control_tower.apply(self)

    def _throttles(self, detector: HotKeyDetector, tables: list[WatchedTable], options: DetectorOptions) -> None:
        """DynamoDB's throttle alarms, their explainer, and their graphs (not in a lean deployment)."""
        # DynamoDB's own throttle metrics by cause, per table and GSI, on the same alert topic.
        self.throttle_alarms = alarms = ThrottleAlarms(
            self, "ThrottleAlarms", tables=tables, topic=detector.alerts.topic
        )
        # Each throttle alarm also invokes the explainer, which names the keys and the limit hit. CloudWatch's
        # own notification stays on the topic: a throttle is still reported if the explainer fails.
        self.throttle_explainer = explainer = ThrottleExplainer(
            self,
            "ThrottleExplainer",
            ThrottleExplainerProps(
                alarms=alarms.alarms,
                alarm_name_prefix=alarms.name_prefix,
                topic=detector.alerts.topic,
                topic_key=detector.alerts.key,
                stats_table=detector.stats.table,
                tables={watched.table.table_name: watched.indexes for watched in tables},
                functions=FunctionBase(options.log_retention_days, options.powertools_layer_arn),
                environment={
                    name: value
                    for name, value in options.function_environment().items()
                    if name in ("KEY_DISPLAY", "KEY_HASH_SALT")
                },
            ),
        )
        # Its failed invocations are alarmed and shown like the detector's other queues.
        detector.monitoring.watch_queue(
            UNDELIVERED_EXPLANATIONS,
            explainer.undelivered,
            explainer.undelivered_description,
        )
        # DynamoDB's throttle metrics on the same dashboard, one graph per table and GSI, as alarmed.
        detector.monitoring.add_widgets(*alarms.widgets())

    def _stream_to_kinesis(self, table_name: str, options: DetectorOptions) -> KinesisStreaming:
        """-c enableKinesis: the table's changes streamed to the stack's Kinesis data stream (on until deleted)."""
        assert self.kinesis is not None  # (made first, in the Kinesis modes)
        provider = KinesisStreamingProvider.of(
            self,
            stream_arn=self.kinesis.stream_arn,
            log_retention_days=options.log_retention_days,
            powertools_layer_arn=options.powertools_layer_arn,
            controlled=options.compliance is not None,
        )
        # Named by the table, as its mapping and stream enabler are.
        return KinesisStreaming(
            self, construct_id(table_name, prefix="Kinesis"), table_name=table_name, provider=provider
        )

    def _watched_tables(self, source: SourceSpec, options: DetectorOptions) -> list[WatchedTable]:
        if source.mode == "demo":
            demo = DemoTable(self, "DemoTable", throttled_key_insights=options.throttled_key_insights)
            return [
                WatchedTable(
                    name="demo",
                    table=demo.table,
                    ttl_attribute=demo.ttl_attribute,
                    new_table=True,
                    indexes=demo.indexes,
                )
            ]
        watched = []
        for index, name in enumerate(source.table_names):
            changed: Construct | None = None  # the resource that changes the table, if the stack changes it
            if source.kinesis:
                # Its changes are on the Kinesis stream: the table itself is named for its grants and alarms.
                table = dynamodb.Table.from_table_attributes(self, f"Source{index}", table_name=name)
                if source.mode == "enable-kinesis":
                    changed = self._stream_to_kinesis(name, options)
            elif source.mode == "existing":
                stream_arn = source.stream_arns[index]
                # The table is where its stream is: DescribeTable is granted there, not at a guess.
                table = dynamodb.Table.from_table_attributes(
                    self, f"Source{index}", table_arn=stream_arn.split("/stream/", 1)[0], table_stream_arn=stream_arn
                )
            else:
                provider = StreamEnablerProvider.of(
                    self,
                    log_retention_days=options.log_retention_days,
                    powertools_layer_arn=options.powertools_layer_arn,
                    controlled=options.compliance is not None,
                )
                # Named by the table, as its mapping is: a position would move the resource to another table.
                enabler = StreamEnabler(self, construct_id(name, prefix="Stream"), table_name=name, provider=provider)
                changed = enabler
                table = dynamodb.Table.from_table_attributes(
                    self, f"Source{index}", table_name=name, table_stream_arn=enabler.stream_arn
                )
            if options.throttled_key_insights:
                # Named by the table, not its position in the list (docs/decisions.md §68).
                insights = ThrottleInsights(
                    self,
                    construct_id(name),
                    table_name=name,
                    provider=ThrottleInsightsProvider.of(
                        self,
                        log_retention_days=options.log_retention_days,
                        powertools_layer_arn=options.powertools_layer_arn,
                        table_key_arns=options.table_kms_key_arns,
                    ),
                )
                if changed is not None:
                    # After the stream is on: one change to the table at a time.
                    insights.node.add_dependency(changed)
            watched.append(WatchedTable(name=name, table=table))
        return watched
