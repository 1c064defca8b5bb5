"""HotKeyDetector: the reusable construct. Drop it into any CDK app with the tables to watch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from hotkeys.deployment import reading_plan
from hotkeys.detector.names import SPOOL_PREFIX
from infra.alert_topic import AlertTopic
from infra.archive_bucket import ArchiveBucket
from infra.arns import concrete
from infra.dead_letter_queue import DeadLetterQueue
from infra.detector_function import DetectorFunction, FunctionBase, FunctionProps
from infra.judge import JUDGE_METRICS, Judge, JudgeProps
from infra.kinesis_source import KinesisSource
from infra.monitoring import Monitoring, MonitoringProps
from infra.nag import acknowledge
from infra.options import DetectorOptions
from infra.slack import SlackChannel
from infra.stats_table import StatsTable
from infra.stream_mapping import StreamMapping, StreamMappingProvider, StreamReading, mapping_id
from infra.stream_unread import StreamUnreadAlarm
from infra.throttle_insights import construct_id as id_of_table
from infra.webhook_notifier import WebhookNotifier

# The construct id of the Kinesis modes' one mapping (not a table's: every table's changes are on the stream).
KINESIS_MAPPING_ID = "KinesisMapping"


@dataclass(frozen=True)
class WatchedTable:
    """A source table with its stream (``table.table_stream_arn`` must be set, unless the detector reads every table
    from a Kinesis data stream: ``HotKeyDetector``'s ``kinesis``)."""

    name: str
    table: dynamodb.ITable
    ttl_attribute: str | None = None
    # Created by this stack (its stream holds nothing old): read from the start.
    new_table: bool = False
    # Its global secondary indexes, where the stack knows them (a table it creates); None: not known at
    # synth time (an existing table: the function learns them from DescribeTable at run time).
    indexes: tuple[str, ...] | None = None


class HotKeyDetector(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        tables: Sequence[WatchedTable],
        options: DetectorOptions | None = None,
        data_key: kms.IKey | None = None,
        kinesis: KinesisSource | None = None,
    ) -> None:
        """``data_key``: compliance mode's key (infra/compliance.py), which then encrypts the archive. ``kinesis``:
        the Kinesis data stream the tables send their changes to, read instead of their DynamoDB streams."""
        super().__init__(scope, construct_id)
        options = options or DetectorOptions()
        options.validate()
        stack = Stack.of(self)
        options.validate_environment(concrete(stack.region), concrete(stack.account))
        if not tables:
            raise ValueError("HotKeyDetector needs at least one table to watch")
        self.stats = StatsTable(self, "Stats")
        self.alerts = AlertTopic(self, "Alerts")
        self.archive = ArchiveBucket(
            self,
            "Archive",
            prefix=options.archive_prefix,
            transition_days=options.archive_transition_days,
            expiration_days=options.archive_expiration_days,
            key=data_key,
        )
        self.dead_letters = DeadLetterQueue(self, "DeadLetters")
        functions = FunctionBase(options.log_retention_days, options.powertools_layer_arn)
        self.consumer = DetectorFunction(
            self,
            "Consumer",
            FunctionProps(
                functions,
                environment=self._environment(options, tables),
                system_log_level=options.consumer_system_log_level,
            ),
        )
        self._grant(tables, options.table_kms_key_arns, kinesis)
        self._map_streams(tables, options, kinesis)
        # What-if notices (proposals, never alerts): a topic of their own, made only when something is proposed.
        self.what_if: AlertTopic | None = None
        if options.settings.proposals:
            self.what_if = AlertTopic(
                self, "WhatIf", display_name="DynamoDB hot keys: what-if", purpose="what-if", for_alarms=False
            )
        undelivered: dict[str, sqs.IQueue] = {}
        if options.alert_emails or options.what_if_emails:
            # Undeliverable alert (and what-if) e-mails land here instead of vanishing.
            undelivered["Email"] = DeadLetterQueue(self, "UndeliveredAlerts").queue
            for topic, addresses in ((self.alerts, options.alert_emails), (self.what_if, options.what_if_emails)):
                for address in addresses:
                    assert topic is not None  # (what-if e-mails come with proposals: options.validate)
                    topic.topic.add_subscription(
                        subscriptions.EmailSubscription(address, dead_letter_queue=undelivered["Email"])
                    )
        if options.slack_webhook_secret_arn:
            webhook = WebhookNotifier(
                self,
                "Webhook",
                topic=self.alerts.topic,
                secret_arn=options.slack_webhook_secret_arn,
                secret_key_arn=options.slack_webhook_key_arn,
                functions=functions,
            )
            undelivered["Webhook"] = webhook.undelivered
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            MonitoringProps(
                function=self.consumer.function,
                dead_letter_queue=self.dead_letters.queue,
                topic=self.alerts.topic,
                undelivered_alerts=undelivered,
                log_group=self.consumer.log_group,
                lean=options.lean,
            ),
        )
        # The judge: every table's merged figures, on a clock (docs/decisions.md §64).
        self.judge = Judge(
            self,
            "Judge",
            JudgeProps(
                stats_table=self.stats.table,
                alerts=self.alerts,
                what_if=self.what_if,
                tables=[watched.table.table_name for watched in tables],
                environment=self._environment(options, tables),
                memory_mb=options.judge_memory_mb,
                functions=functions,
            ),
        )
        for name, alarm in self.judge.alarms.items():
            self.monitoring.watch(name, alarm)
        # Each table's own "writes, none read" alarm: nothing can stop reading one stream unnamed.
        for watched in tables:
            unread = StreamUnreadAlarm(
                self, id_of_table(watched.name, prefix="Unread"), table_name=watched.table.table_name
            )
            self.monitoring.watch(f"StreamUnread {watched.name}", unread.alarm)
        self.monitoring.graph("Judge", JUDGE_METRICS)
        if options.slack_workspace_id and options.slack_channel_id:
            SlackChannel(
                self,
                "Slack",
                workspace_id=options.slack_workspace_id,
                channel_id=options.slack_channel_id,
                topic=self.alerts.topic,
            )

    @staticmethod
    def _environment(options: DetectorOptions, tables: Sequence[WatchedTable]) -> dict[str, str]:
        env = options.function_environment()
        ttl_attributes = {t.ttl_attribute for t in tables}
        if len(ttl_attributes) == 1 and None not in ttl_attributes:
            env["TTL_ATTRIBUTE"] = str(next(iter(ttl_attributes)))
        return env

    def _grant(self, tables: Sequence[WatchedTable], table_keys: Sequence[str], kinesis: KinesisSource | None) -> None:
        """The consumer's environment and role: the stack's own resources, then the tables it reads."""
        self._grant_own_resources()
        self._grant_source_tables(tables, table_keys, kinesis is None)

    def _grant_own_resources(self) -> None:
        function = self.consumer.function
        function.add_environment("STATS_TABLE_NAME", self.stats.table.table_name)
        function.add_environment("ALERT_TOPIC_ARN", self.alerts.topic.topic_arn)
        function.add_environment("ARCHIVE_BUCKET_NAME", self.archive.bucket.bucket_name)
        role = self.consumer.role
        role.add_to_policy(
            iam.PolicyStatement(
                sid="StatsTable",
                actions=[
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:GetItem",
                    "dynamodb:Query",
                ],
                resources=[self.stats.table.table_arn],
            )
        )
        # The archive spool's items are deleted once S3 took them: DeleteItem on those items only.
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ArchiveSpool",
                actions=["dynamodb:DeleteItem"],
                resources=[self.stats.table.table_arn],
                conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{SPOOL_PREFIX}*"]}},
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(sid="PublishAlerts", actions=["sns:Publish"], resources=[self.alerts.topic.topic_arn])
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="EncryptAlerts",
                actions=["kms:GenerateDataKey", "kms:Decrypt"],
                resources=[self.alerts.key.key_arn],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ArchiveTtlItems",
                actions=["s3:PutObject"],
                resources=[self.archive.bucket.arn_for_objects(f"{self.archive.prefix}*")],
            )
        )
        if self.archive.key is not None:
            # The archive under compliance mode's key (SSE-KMS): S3 asks KMS for the data key as the consumer.
            role.add_to_policy(
                iam.PolicyStatement(
                    sid="EncryptArchive",
                    actions=["kms:GenerateDataKey"],
                    resources=[self.archive.key.key_arn],
                    conditions={"StringEquals": {"kms:ViaService": f"s3.{Stack.of(self).region}.amazonaws.com"}},
                )
            )

    def _grant_source_tables(
        self, tables: Sequence[WatchedTable], table_keys: Sequence[str], dynamodb_streams: bool
    ) -> None:
        role = self.consumer.role
        role.add_to_policy(
            iam.PolicyStatement(
                sid="DescribeSourceTables",
                actions=["dynamodb:DescribeTable", "dynamodb:DescribeTimeToLive"],
                resources=[t.table.table_arn for t in tables],
            )
        )
        if table_keys:
            # Tables under a customer-managed key: their streams are encrypted with it too. Decrypt is
            # allowed through DynamoDB only (kms:ViaService), never for direct use of the key.
            role.add_to_policy(
                iam.PolicyStatement(
                    sid="DecryptSourceStreams",
                    actions=["kms:Decrypt"],
                    resources=list(table_keys),
                    conditions={"StringEquals": {"kms:ViaService": f"dynamodb.{Stack.of(self).region}.amazonaws.com"}},
                )
            )
        bucket_id = Stack.of(self).get_logical_id(self.archive.bucket.node.default_child)  # type: ignore[arg-type]
        acknowledge(
            role,
            f"AwsSolutions::AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/{self.archive.prefix}*]",
            "s3:PutObject only, under the archive prefix: object ARNs need the trailing wildcard.",
        )
        # (the DynamoDB streams' grant: none when the tables are read from Kinesis)
        imported = dynamodb_streams and any(not t.new_table for t in tables)
        acknowledge(
            role,
            "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            "Only actions AWS defines on '*' alone: xray:PutTraceSegments/PutTelemetryRecords (active tracing)"
            + (
                " and dynamodb:ListStreams (the event source mapping of an imported table's stream)."
                if imported
                else "."
            ),
        )

    def _map_streams(
        self, tables: Sequence[WatchedTable], options: DetectorOptions, kinesis: KinesisSource | None
    ) -> None:
        """Each table's stream mapped to the consumer (infra/stream_mapping.py), or the one Kinesis data stream of
        every table, with the grants Lambda checks when it creates a mapping: read the stream, send to the
        on-failure destination."""
        function = self.consumer.function
        provider = StreamMappingProvider.of(
            Stack.of(self),
            consumer=function,
            log_retention_days=options.log_retention_days,
            powertools_layer_arn=options.powertools_layer_arn,
        )
        self.dead_letters.queue.grant_send_messages(function)
        reading = StreamReading(options.window_seconds, options.parallelization_factor, self.dead_letters.queue)
        if kinesis is not None:
            # One mapping for every table: their changes share the stream (no dynamodb:GetRecords on any stream).
            kinesis.grant_read(self.consumer.role)
            StreamMapping(
                self,
                KINESIS_MAPPING_ID,
                provider=provider,
                stream_arn=kinesis.event_source_arn,
                plan=reading_plan(False, options.starting_position, options.max_record_age_hours),
                reading=reading,
            )
            return
        for watched in tables:
            watched.table.grant_stream_read(function)
            assert watched.table.table_stream_arn is not None  # (WatchedTable's contract)
            StreamMapping(
                self,
                mapping_id(watched.name),
                provider=provider,
                stream_arn=watched.table.table_stream_arn,
                plan=reading_plan(watched.new_table, options.starting_position, options.max_record_age_hours),
                reading=reading,
            )
