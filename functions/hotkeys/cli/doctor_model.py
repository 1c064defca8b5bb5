"""What every ``hotkeys doctor`` check shares: its verdicts, a ``Check``, the AWS clients it reads through,
and what the stack says about itself."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from hotkeys.deployment import MAPPING_TYPES
from hotkeys.detector.consumer.ports import StatsReader

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient
    from mypy_boto3_iam import IAMClient
    from mypy_boto3_kms import KMSClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_secretsmanager import SecretsManagerClient
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_ssm import SSMClient

    from hotkeys.detector.adapters.aws import AwsClients

OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass(frozen=True)
class Check:
    name: str
    verdict: str
    detail: str
    fix: str = ""


@dataclass
class Clients:
    cloudformation: CloudFormationClient
    dynamodb: DynamoDBClient
    streams: DynamoDBStreamsClient
    lambda_: LambdaClient
    cloudwatch: CloudWatchClient
    sqs: SQSClient
    sns: SNSClient
    ssm: SSMClient
    # Checks of what a deploy cannot verify (keys, the webhook secret); skipped where a client is None.
    kms: KMSClient | None = None
    iam: IAMClient | None = None
    secretsmanager: SecretsManagerClient | None = None
    # The stats table's windows (stats table name -> its reader), for what the stream shows; None: not read.
    stats: Callable[[str], StatsReader] | None = None


@dataclass
class StackView:
    """What the stack says about itself: outputs and physical ids by resource type."""

    name: str
    outputs: dict[str, str]
    resources: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # type → [(logical, physical)]

    def of_type(self, kind: str) -> list[tuple[str, str]]:
        return self.resources.get(kind, [])

    def mapping_ids(self) -> list[str]:
        """The UUIDs of the stack's event source mappings: its custom resources' (infra/stream_mapping.py),
        and an earlier release's CloudFormation mappings until the stack is updated."""
        return [uuid for kind in MAPPING_TYPES for _, uuid in self.of_type(kind)]


class StackNotFound(LookupError):
    pass


def read_stack(cloudformation: CloudFormationClient, name: str) -> StackView:
    try:
        stacks = cloudformation.describe_stacks(StackName=name)["Stacks"]
    except ClientError as error:
        if "does not exist" in error.response.get("Error", {}).get("Message", ""):
            raise StackNotFound(f"no stack named {name!r} here (check --stack and --region)") from None
        raise
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
    view = StackView(name=name, outputs=outputs)
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=name):
        for resource in page["StackResourceSummaries"]:
            view.resources.setdefault(resource["ResourceType"], []).append(
                (resource["LogicalResourceId"], resource.get("PhysicalResourceId", ""))
            )
    return view


def table_of(stream_arn: str) -> str:
    return stream_arn.split(":table/", 1)[-1].split("/stream/", 1)[0]


def is_kinesis(source_arn: str) -> bool:
    """A Kinesis data stream or an enhanced fan-out consumer of one (the Kinesis modes' one mapping reads it)."""
    return source_arn.split(":")[2:3] == ["kinesis"]


def source_label(source_arn: str) -> str:
    """What a mapping reads, for a person: the table of a DynamoDB stream, or the Kinesis stream's name."""
    if is_kinesis(source_arn):
        name = source_arn.split(":stream/", 1)[-1].split("/consumer/", 1)
        return f"Kinesis stream {name[0]}" + (f", consumer {name[1].split(':')[0]}" if len(name) > 1 else "")
    return table_of(source_arn)


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def failed(checks: Iterable[Check]) -> bool:
    return any(check.verdict == FAIL for check in checks)


def to_json(checks: list[Check]) -> list[dict[str, str]]:
    return [asdict(check) for check in checks]


def clients_from(aws: AwsClients) -> Clients:
    """Each check's client of its service, from ``aws`` (typed per service by ``AwsClients.client``)."""
    return Clients(
        cloudformation=aws.client("cloudformation"),
        dynamodb=aws.client("dynamodb"),
        streams=aws.client("dynamodbstreams"),
        lambda_=aws.client("lambda"),
        cloudwatch=aws.client("cloudwatch"),
        sqs=aws.client("sqs"),
        sns=aws.client("sns"),
        ssm=aws.client("ssm"),
        kms=aws.client("kms"),
        iam=aws.client("iam"),
        secretsmanager=aws.client("secretsmanager"),
    )
