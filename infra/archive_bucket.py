"""The TTL archive: an encrypted, private, TLS-only bucket, logged, tiered, and readable by Athena.

With a ``key`` (``-c compliance=controltower``, infra/compliance.py) both buckets also pass AWS Control Tower's
proactive controls: SSE-KMS with that key (CT.S3.PR.10), versioned (CT.S3.PR.11), Object Lock on with no default
retention (CT.S3.PR.9; S3 refuses a log destination with a default retention period), EventBridge notifications
(CT.S3.PR.4), no ACLs (CT.S3.PR.5: the log bucket takes its logs through a bucket policy), and server access logging
on the access-log bucket too (CT.S3.PR.2): into itself, under its own prefix.
"""

from __future__ import annotations

import re
from typing import Any

from aws_cdk import Aws, Duration, RemovalPolicy, Stack
from aws_cdk import aws_glue as glue
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

# Where the archive's server access logs go in the access-log bucket.
ARCHIVE_LOGS_PREFIX = "archive/"
# With a key, the access-log bucket logs its own requests under this prefix.
OWN_ACCESS_LOGS_PREFIX = "access-logs-bucket/"
# Versioned buckets (compliance mode): an object expired or deleted stays as a noncurrent version this long.
NONCURRENT_DAYS = 1

ARCHIVE_COLUMNS = [
    ("event_id", "string"),
    ("keys", "string"),
    ("item", "string"),
    ("expired_at", "string"),
    ("ttl", "string"),
]


class ArchiveBucket(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        prefix: str,
        transition_days: int,
        expiration_days: int | None,
        key: kms.IKey | None = None,
    ) -> None:
        """``key``: compliance mode's key (None: SSE-S3, the default)."""
        super().__init__(scope, construct_id)
        self.prefix = prefix
        self.key = key
        self.database_name = glue_database_name(Stack.of(self).stack_name)
        noncurrent = Duration.days(NONCURRENT_DAYS) if key else None
        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(90), noncurrent_version_expiration=noncurrent)],
            removal_policy=RemovalPolicy.RETAIN,
            **(
                _controlled(key)
                if key
                else {
                    "encryption": s3.BucketEncryption.S3_MANAGED,
                    "object_ownership": s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
                }
            ),
        )
        rules = [
            s3.LifecycleRule(
                prefix=prefix,
                transitions=[
                    s3.Transition(
                        storage_class=s3.StorageClass.GLACIER_INSTANT_RETRIEVAL,
                        transition_after=Duration.days(transition_days),
                    )
                ],
                expiration=Duration.days(expiration_days) if expiration_days else None,
                # Versioned (compliance mode): an expired item's data goes too, a day after its expiration.
                noncurrent_version_expiration=noncurrent,
            )
        ]
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            # With a key, its logging is set below (without ACLs, which CDK would turn on for the log bucket)
            **(
                _controlled(key)
                if key
                else {
                    "encryption": s3.BucketEncryption.S3_MANAGED,
                    "versioned": False,
                    "server_access_logs_bucket": self.access_logs,
                    "server_access_logs_prefix": ARCHIVE_LOGS_PREFIX,
                }
            ),
            lifecycle_rules=rules,
            # Stated, not left to the account's default: objects under 128 KB never transition. Archive
            # objects are one shard's TTL deletions per invocation, usually a few KB; Glacier Instant
            # Retrieval bills at least 128 KB an object, so keeping those in Standard costs less
            # (docs/decisions.md §48, "The archive's lifecycle").
            transition_default_minimum_object_size=s3.TransitionDefaultMinimumObjectSize.ALL_STORAGE_CLASSES_128_K,
            # Archived items outlive the stack: deleting it must not delete them.
            removal_policy=RemovalPolicy.RETAIN,
        )
        self._athena_table(prefix)
        if key:
            self._log_to_access_logs(self.bucket, ARCHIVE_LOGS_PREFIX)
            # The access-log bucket's own requests, into itself (no DestinationBucketName): S3 advises against it
            # (each delivery is itself logged: a trickle of small objects, which the 90-day expiration bounds), but
            # any other destination in the stack would need logging of its own in turn.
            self._log_to_access_logs(self.access_logs, OWN_ACCESS_LOGS_PREFIX)
            for bucket in (self.access_logs, self.bucket):
                resource = bucket.node.default_child
                assert isinstance(resource, s3.CfnBucket)
                # Object-level events on the account's default event bus (AWS service events are not charged),
                # without the custom resource (a function) that CDK's event_bridge_enabled would add.
                resource.notification_configuration = s3.CfnBucket.NotificationConfigurationProperty(
                    event_bridge_configuration=s3.CfnBucket.EventBridgeConfigurationProperty(event_bridge_enabled=True)
                )

    def _log_to_access_logs(self, source: s3.Bucket, prefix: str) -> None:
        """``source``'s server access logs into the access-log bucket under ``prefix``, delivered through its bucket
        policy (S3 user guide, "Enabling Amazon S3 server access logging": the logging service principal, with the
        source bucket and account as conditions), not an ACL."""
        resource = source.node.default_child
        assert isinstance(resource, s3.CfnBucket)
        resource.logging_configuration = s3.CfnBucket.LoggingConfigurationProperty(
            destination_bucket_name=None if source is self.access_logs else self.access_logs.bucket_name,
            log_file_prefix=prefix,
        )
        self.access_logs.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("logging.s3.amazonaws.com")],
                actions=["s3:PutObject"],
                resources=[self.access_logs.arn_for_objects(f"{prefix}*")],
                conditions={
                    "ArnLike": {"aws:SourceArn": source.bucket_arn},
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                },
            )
        )

    def _athena_table(self, prefix: str) -> None:
        database = glue.CfnDatabase(
            self,
            "Database",
            catalog_id=Aws.ACCOUNT_ID,
            # Named: a generated name has a hyphen (quoted in every Athena query), and CloudFormation
            # cannot update the input of a database it named itself.
            database_input=glue.CfnDatabase.DatabaseInputProperty(
                name=self.database_name,
                description="DynamoDB items expired by TTL, archived by the hot-key detector",
            ),
        )
        location = f"s3://{self.bucket.bucket_name}/{prefix}"
        self.glue_table = glue.CfnTable(
            self,
            "Table",
            catalog_id=Aws.ACCOUNT_ID,
            database_name=database.ref,
            table_input=glue.CfnTable.TableInputProperty(
                name="ttl_archive",
                table_type="EXTERNAL_TABLE",
                parameters={
                    "classification": "json",
                    "compressionType": "gzip",
                    # Partition projection: no crawler, no MSCK REPAIR; new days are queryable at once.
                    "projection.enabled": "true",
                    "projection.table.type": "injected",
                    "projection.dt.type": "date",
                    "projection.dt.format": "yyyy-MM-dd",
                    "projection.dt.range": "2024-01-01,NOW",
                    "projection.hour.type": "integer",
                    "projection.hour.range": "0,23",
                    "projection.hour.digits": "2",
                    "storage.location.template": location + "table=${table}/dt=${dt}/hour=${hour}/",
                },
                partition_keys=[
                    glue.CfnTable.ColumnProperty(name="table", type="string"),
                    glue.CfnTable.ColumnProperty(name="dt", type="string"),
                    glue.CfnTable.ColumnProperty(name="hour", type="string"),
                ],
                storage_descriptor=glue.CfnTable.StorageDescriptorProperty(
                    location=location,
                    input_format="org.apache.hadoop.mapred.TextInputFormat",
                    output_format="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
                    serde_info=glue.CfnTable.SerdeInfoProperty(
                        serialization_library="org.openx.data.jsonserde.JsonSerDe",
                        parameters={"ignore.malformed.json": "false"},
                    ),
                    columns=[glue.CfnTable.ColumnProperty(name=n, type=t) for n, t in ARCHIVE_COLUMNS],
                ),
            ),
        )
        self.glue_database = database


def _controlled(key: kms.IKey) -> dict[str, Any]:
    """The bucket properties compliance mode sets (the module's docstring says for which control)."""
    return {
        "encryption": s3.BucketEncryption.KMS,
        "encryption_key": key,
        # S3 asks KMS for a data key once per bucket key period, not once per object.
        "bucket_key_enabled": True,
        "object_ownership": s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        "versioned": True,
        "object_lock_enabled": True,
    }


def glue_database_name(stack_name: str) -> str:
    """The stack's name as Athena wants a database name: lower case, letters, digits and underscores only.

    One per stack, so two detector stacks in one account and region keep their own catalogs.
    """
    return re.sub(r"[^a-z0-9_]", "_", stack_name.lower())[:255]
