"""``hotkeys doctor``'s checks of what only a deployed account shows, which a deploy cannot verify: where
each stream is, whether the consumer may decrypt a table's customer-managed key, and whether the webhook
subscriber may read its secret."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from hotkeys.cli.doctor_model import FAIL, OK, WARN, Check, Clients, StackView, as_list, table_of

if TYPE_CHECKING:
    from mypy_boto3_iam import IAMClient
    from mypy_boto3_kms import KMSClient


def _region_and_account(arn: str) -> tuple[str, str] | None:
    parts = arn.split(":")
    return (parts[3], parts[4]) if len(parts) >= 6 and parts[0] == "arn" else None


def check_stream_location(mapping: dict[str, Any]) -> Check | None:
    """A stream of another region or account than the function's: Lambda cannot read it, and the function
    describes the table by name in its own account and region (indexes, TTL attribute)."""
    stream = str(mapping.get("EventSourceArn", ""))
    where, function = _region_and_account(stream), _region_and_account(str(mapping.get("FunctionArn", "")))
    if where is None or function is None or where == function:
        return None
    return Check(
        f"stream of {table_of(stream)}",
        FAIL,
        f"the stream is in {where[0]}, account {where[1]}; the function in {function[0]}, account {function[1]}",
        f"deploy the stack with credentials of account {where[1]} in {where[0]} (AWS_REGION={where[0]})",
    )


class RoleOf:
    """The name of a function's execution role, read once and only if a check needs it."""

    def __init__(self, clients: Clients, function: str | None) -> None:
        self._clients, self._function, self._name = clients, function, ""

    def __call__(self) -> str | None:
        if not self._function:
            return None
        if not self._name:
            configuration = self._clients.lambda_.get_function_configuration(FunctionName=self._function)
            self._name = str(configuration.get("Role", "")).rsplit("/", 1)[-1]
        return self._name or None


def _role_allows(iam: IAMClient, role: str, action: str, resource: str) -> bool:
    """Whether an inline policy of ``role`` (the stack grants through inline policies) allows ``action`` on
    ``resource``, with IAM's wildcards (``*``, ``?``) in the policy's actions and resources."""
    from fnmatch import fnmatchcase

    pages = iam.get_paginator("list_role_policies").paginate(RoleName=role)
    for name in (name for page in pages for name in page.get("PolicyNames", [])):
        document = iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
        if isinstance(document, str):
            from urllib.parse import unquote

            document = json.loads(unquote(document))
        for statement in as_list(document.get("Statement")):
            if statement.get("Effect") != "Allow":
                continue
            actions = [str(a).lower() for a in as_list(statement.get("Action"))]
            resources = [str(r) for r in as_list(statement.get("Resource"))]
            if any(fnmatchcase(action.lower(), a) for a in actions) and any(
                fnmatchcase(resource, r) for r in resources
            ):
                return True
    return False


def _customer_key(kms: KMSClient, key: str) -> str | None:
    """The key's ARN if it is a customer-managed key (an AWS-managed key needs no grant of ours)."""
    metadata = kms.describe_key(KeyId=key)["KeyMetadata"]
    return str(metadata["Arn"]) if metadata.get("KeyManager") == "CUSTOMER" else None


def check_source_key(clients: Clients, mapping: dict[str, Any], role: Callable[[], str | None]) -> list[Check]:
    """A source table under a customer-managed key: the consumer needs kms:Decrypt on it (-c tableKmsKeyArns)."""
    table = table_of(str(mapping.get("EventSourceArn", "")))
    kms, iam = clients.kms, clients.iam
    if kms is None or iam is None:
        return []
    try:
        sse = clients.dynamodb.describe_table(TableName=table)["Table"].get("SSEDescription") or {}
    except ClientError:
        return []  # reported by the stream check
    key = sse.get("KMSMasterKeyArn")
    if sse.get("SSEType") != "KMS" or not key:
        return []
    name = f"encryption of {table}"
    try:
        customer_key = _customer_key(kms, str(key))
        role_name = role()
        if customer_key is None or role_name is None:
            return [Check(name, OK, "AWS-managed KMS key" if customer_key is None else f"key {customer_key}")]
        allowed = _role_allows(iam, role_name, "kms:Decrypt", customer_key)
    except ClientError as error:
        return [Check(name, WARN, f"cannot check the table's key and the consumer's role here: {error}")]
    if allowed:
        return [Check(name, OK, f"customer-managed key {customer_key}; the consumer may decrypt with it")]
    return [
        Check(
            name,
            FAIL,
            f"the table is encrypted with the customer-managed key {customer_key}, which the consumer may not use: "
            "its stream cannot be read",
            f"redeploy with -c tableKmsKeyArns={customer_key} (the key policy must allow this account's IAM policies)",
        )
    ]


def check_webhook_secret(clients: Clients, stack: StackView) -> list[Check]:
    """The webhook subscriber can read its secret: the secret exists, the role's grant matches its complete
    ARN (a partial ARN was once granted as given), and a customer-managed key is granted too."""
    senders = [physical for logical, physical in stack.of_type("AWS::Lambda::Function") if "WebhookSender" in logical]
    secrets, iam, kms = clients.secretsmanager, clients.iam, clients.kms
    if not senders or secrets is None or iam is None or kms is None:
        return []
    name = "webhook secret"
    configuration = clients.lambda_.get_function_configuration(FunctionName=senders[0])
    secret = configuration.get("Environment", {}).get("Variables", {}).get("WEBHOOK_SECRET_ARN", "")
    role = str(configuration.get("Role", "")).rsplit("/", 1)[-1]
    try:
        description = secrets.describe_secret(SecretId=secret)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code == "ResourceNotFoundException":
            return [
                Check(
                    name,
                    FAIL,
                    f"no secret {secret} here",
                    "create it, or redeploy with the right -c slackWebhookSecretArn",
                )
            ]
        return [Check(name, WARN, f"cannot describe {secret} here: {code}")]
    complete = str(description["ARN"])
    try:
        if not _role_allows(iam, role, "secretsmanager:GetSecretValue", complete):
            return [
                Check(
                    name,
                    FAIL,
                    f"the subscriber's role may not read {complete} (granted on another ARN): alerts are not posted",
                    "redeploy this version of the stack (a partial ARN is granted with its 6-character suffix)",
                )
            ]
        key = description.get("KmsKeyId")
        customer_key = _customer_key(kms, str(key)) if key else None
        if customer_key and not _role_allows(iam, role, "kms:Decrypt", customer_key):
            return [
                Check(
                    name,
                    FAIL,
                    f"the secret is encrypted with the customer-managed key {customer_key}, which the subscriber may "
                    "not use: alerts are not posted",
                    f"redeploy with -c slackWebhookKeyArn={customer_key}",
                )
            ]
    except ClientError as error:
        return [Check(name, WARN, f"cannot check the subscriber's role or the secret's key here: {error}")]
    return [Check(name, OK, "the subscriber may read it" + (" and decrypt it" if key else ""))]
