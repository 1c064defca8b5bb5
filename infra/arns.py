"""The ARNs `cdk -c` options name: their forms, and whether they are where the stack's functions can use them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from infra.option_schema import ContextError


@dataclass(frozen=True)
class Arn:
    partition: str
    service: str
    region: str
    account: str
    resource: str
    text: str


def parse_arn(text: str) -> Arn | None:
    parts = text.split(":", 5)
    if len(parts) != 6 or parts[0] != "arn":
        return None
    _, partition, service, region, account, resource = parts
    return Arn(partition, service, region, account, resource, text)


_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d+")
_ACCOUNT = re.compile(r"\d{12}")


def _located(option: str, text: str, service: str, resource: re.Pattern[str], example: str) -> Arn:
    arn = parse_arn(text)
    if (
        arn is None
        or arn.service != service
        or not _REGION.fullmatch(arn.region)
        or not _ACCOUNT.fullmatch(arn.account)
        or not resource.fullmatch(arn.resource)
    ):
        raise ContextError(f"{option}: {text!r} is not a {service} ARN of the form {example}")
    return arn


def secret_arn(text: str) -> Arn:
    """A Secrets Manager secret ARN, complete (name-AbCdEf) or partial (the name alone)."""
    return _located(
        "slackWebhookSecretArn",
        text,
        "secretsmanager",
        re.compile(r"secret:[A-Za-z0-9/_+=.@-]+"),
        "arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-AbCdEf",
    )


# Secrets Manager appends a hyphen and six random characters to a secret's name in its ARN.
COMPLETE_SECRET_SUFFIX = re.compile(r"-[A-Za-z0-9]{6}$")


def secret_resource(text: str) -> str:
    """What IAM must allow for a secret ARN as given: a complete ARN is exact; a partial ARN (the name
    alone) matches the secret's complete ARN only with the six-character wildcard AWS documents."""
    return text if COMPLETE_SECRET_SUFFIX.search(text) else f"{text}-??????"


def key_arn(text: str, option: str = "tableKmsKeyArns") -> Arn:
    """A KMS key ARN (IAM policies name keys by key ARN; an alias ARN would grant nothing)."""
    return _located(
        option,
        text,
        "kms",
        re.compile(r"key/[A-Za-z0-9-]+"),
        "arn:aws:kms:REGION:ACCOUNT:key/KEY-ID",
    )


def stream_arn(text: str) -> Arn:
    """A DynamoDB stream ARN (the table's ARN is the part before /stream/)."""
    return _located(
        "tableStreamArn",
        text,
        "dynamodb",
        re.compile(r"table/[A-Za-z0-9_.-]+/stream/.+"),
        "arn:aws:dynamodb:REGION:ACCOUNT:table/NAME/stream/LABEL",
    )


def kinesis_stream_arn(text: str) -> Arn:
    """A Kinesis data stream ARN (stream names: 1 to 128 of letters, digits, '_', '.' and '-')."""
    return _located(
        "kinesisStreamArn",
        text,
        "kinesis",
        re.compile(r"stream/[A-Za-z0-9_.-]{1,128}"),
        "arn:aws:kinesis:REGION:ACCOUNT:stream/NAME",
    )


def concrete(value: str) -> str | None:
    """The stack's account or region if the synth knows it (the CDK CLI sets both from the profile), else None."""
    from aws_cdk import Token

    return None if Token.is_unresolved(value) else value


def same_environment(option: str, arn: Arn, region: str | None, account: str | None) -> None:
    """``arn`` in the stack's region and account (None: not known at synth)."""
    if region is not None and arn.region != region:
        raise ContextError(
            f"{option}: {arn.text!r} is in region {arn.region}, but the stack deploys to {region}; "
            f"deploy to {arn.region} (AWS_REGION={arn.region}) or name a resource of {region}"
        )
    if account is not None and arn.account != account:
        raise ContextError(
            f"{option}: {arn.text!r} is in account {arn.account}, but the stack deploys to account {account}; "
            f"deploy with credentials of {arn.account} or name a resource of {account}"
        )
