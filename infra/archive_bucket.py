"""The TTL archive: an encrypted, private, TLS-only bucket, logged, tiered, and readable by Athena."""

from __future__ import annotations

import re

from aws_cdk import Aws, Duration, RemovalPolicy, Stack
from aws_cdk import aws_glue as glue
from aws_cdk import aws_s3 as s3
from constructs import Construct

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
    ) -> None:
        super().__init__(scope, construct_id)
        self.prefix = prefix
        self.database_name = glue_database_name(Stack.of(self).stack_name)
        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(90))],
            removal_policy=RemovalPolicy.RETAIN,
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
            )
        ]
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=False,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="archive/",
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


def glue_database_name(stack_name: str) -> str:
    """The stack's name as Athena wants a database name: lower case, letters, digits and underscores only.

    One per stack, so two detector stacks in one account and region keep their own catalogs.
    """
    return re.sub(r"[^a-z0-9_]", "_", stack_name.lower())[:255]
