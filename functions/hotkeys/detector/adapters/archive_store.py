"""The archive bucket (S3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from hotkeys.detector.consumer.ports import ObjectStore
from hotkeys.detector.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client


class S3ObjectStore(ObjectStore):
    def __init__(self, client: S3Client, bucket: str) -> None:
        self._client = client
        self._bucket = bucket

    def put(self, key: str, body: bytes) -> None:
        self._client.put_object(
            Bucket=self._bucket,
            Key=key,
            Body=body,
            ContentType="application/x-ndjson",
            ContentEncoding="gzip",
        )


class TtlAttributeResolver:
    """TTL_ATTRIBUTE if set, else DescribeTimeToLive per table (cached for the container's life)."""

    def __init__(self, configured: str | None, client: DynamoDBClient) -> None:
        self._configured = configured
        self._client = client
        self._cache: dict[str, str | None] = {}

    def __call__(self, table: str) -> str | None:
        if self._configured:
            return self._configured
        if table not in self._cache:
            try:
                description = self._client.describe_time_to_live(TableName=table).get("TimeToLiveDescription", {})
            except ClientError as error:
                # The archive still works without it; only the "ttl" field and replica detection need it.
                logger.warning(
                    "DescribeTimeToLive failed; set TTL_ATTRIBUTE",
                    extra={"table": table, "error": str(error)},
                )
                description = {}
            enabled = description.get("TimeToLiveStatus") in ("ENABLED", "ENABLING")
            self._cache[table] = description.get("AttributeName") if enabled else None
        return self._cache[table]
