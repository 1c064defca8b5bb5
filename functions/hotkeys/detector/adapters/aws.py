"""Lazily created, cached boto3 clients with deliberate retry and timeout settings.

Standard retry mode with 3 attempts and short timeouts: a throttled or slow call
fails the invocation within seconds (well inside the function timeout), and
Lambda's own retry (with bisection) takes over, instead of the SDK hiding a
problem behind minutes of backoff. In Lambda the target is boto3's default (the
function's region); the CLI passes the region and endpoint the user chose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, overload

import boto3
from botocore.config import Config

if TYPE_CHECKING:
    # Type-only: the stubs are a dev dependency, never in the Lambda asset.
    from botocore.client import BaseClient
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient, DynamoDBServiceResource
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient
    from mypy_boto3_iam import IAMClient
    from mypy_boto3_kms import KMSClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_secretsmanager import SecretsManagerClient
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_ssm import SSMClient


def sdk_config(option_defaults: Any = None) -> Config:
    """The SDK settings; ``account_id_endpoint_mode`` only where botocore knows it (1.37+).

    Account-id endpoints break local endpoints (moto) for DynamoDB Streams. Older SDKs (the
    Lambda runtime's boto3 is not pinned and varies by region) have no such endpoints, and
    their ``Config`` rejects the option: passing it unconditionally would fail every
    invocation at import.
    """
    known = Config.OPTION_DEFAULTS if option_defaults is None else option_defaults
    settings: dict[str, Any] = {
        "retries": {"max_attempts": 3, "mode": "standard"},
        "connect_timeout": 2,
        "read_timeout": 5,
    }
    if "account_id_endpoint_mode" in known:
        settings["account_id_endpoint_mode"] = "disabled"
    return Config(**settings)


SDK_CONFIG = sdk_config()


@dataclass(frozen=True)
class AwsTarget:
    """Where AWS is: a region and an endpoint (moto, LocalStack), or None for boto3's own defaults."""

    region: str | None = None
    endpoint_url: str | None = None


class AwsClients:
    """boto3 clients of one session and target, made on first use and kept (one per service).

    Passed as a value: the function makes one per container, the CLI one per command, a test one
    per test; nothing reads or writes process-wide state to choose an endpoint.
    """

    def __init__(self, target: AwsTarget | None = None, session: boto3.session.Session | None = None) -> None:
        self.target = target or AwsTarget()
        self._session = session or boto3.session.Session(region_name=self.target.region)
        self._clients: dict[str, BaseClient] = {}
        self._resources: dict[str, DynamoDBServiceResource] = {}

    @property
    def region(self) -> str | None:
        name = self._session.region_name
        return str(name) if name else None

    # One variant per service the project calls, so each call site gets that service's typed client.
    @overload
    def client(self, service: Literal["cloudformation"]) -> CloudFormationClient: ...
    @overload
    def client(self, service: Literal["cloudwatch"]) -> CloudWatchClient: ...
    @overload
    def client(self, service: Literal["dynamodb"]) -> DynamoDBClient: ...
    @overload
    def client(self, service: Literal["dynamodbstreams"]) -> DynamoDBStreamsClient: ...
    @overload
    def client(self, service: Literal["iam"]) -> IAMClient: ...
    @overload
    def client(self, service: Literal["kms"]) -> KMSClient: ...
    @overload
    def client(self, service: Literal["lambda"]) -> LambdaClient: ...
    @overload
    def client(self, service: Literal["s3"]) -> S3Client: ...
    @overload
    def client(self, service: Literal["secretsmanager"]) -> SecretsManagerClient: ...
    @overload
    def client(self, service: Literal["sns"]) -> SNSClient: ...
    @overload
    def client(self, service: Literal["sqs"]) -> SQSClient: ...
    @overload
    def client(self, service: Literal["ssm"]) -> SSMClient: ...
    # A name only known at run time (the doctor's client factory, the benchmarks' list of services).
    @overload
    def client(self, service: str) -> BaseClient: ...

    def client(self, service: str) -> BaseClient:
        if service not in self._clients:
            # boto3-stubs type Session.client per literal service name only; boto3 itself takes any name.
            self._clients[service] = self._session.client(  # type: ignore[call-overload]
                service, config=SDK_CONFIG, endpoint_url=self.target.endpoint_url
            )
        return self._clients[service]

    def resource(self, service: Literal["dynamodb"]) -> DynamoDBServiceResource:
        if service not in self._resources:
            self._resources[service] = self._session.resource(
                service, config=SDK_CONFIG, endpoint_url=self.target.endpoint_url
            )
        return self._resources[service]
