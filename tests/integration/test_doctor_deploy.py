"""`hotkeys doctor` names what a deploy cannot verify: where the stream is, customer-managed keys, the webhook secret.

moto backs DynamoDB, KMS, IAM and Secrets Manager (keys, roles with their inline policies, secrets
with their complete ARNs); CloudFormation's view of the stack and Lambda's answers are stubbed with
botocore's Stubber, as in test_doctor.py.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from hotkeys.cli.doctor import FAIL, OK, Clients, diagnose
from hotkeys.deployment import POWERTOOLS_PARAMETER, STREAM_MAPPING_TYPE
from tests.integration.test_doctor import (
    LAYER,
    STACK,
    THROTTLED_KEYS_ON,
    Deployment,
    deploy,
    insights_answers,
    mapping,
    resource_summaries,
)
from tests.support import Split

CONSUMER_ROLE = "HotKeyDetector-ConsumerRole"
SENDER_ROLE = "HotKeyDetector-WebhookSenderRole"


def _role(name: str, statements: list[dict[str, Any]]) -> str:
    iam = boto3.client("iam")
    arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    document = {"Version": "2012-10-17", "Statement": statements}
    iam.put_role_policy(RoleName=name, PolicyName="DefaultPolicy", PolicyDocument=json.dumps(document))
    return str(arn)


def _clients(
    deployment: Deployment, esm: dict[str, Any], sender_secret: str | None = None, consumer_reads: int = 2
) -> Clients:
    """The deployment as CloudFormation and Lambda describe it; everything else on moto."""
    region = {"region_name": "us-east-1"}
    cloudformation, lambda_, ssm = (boto3.client(name, **region) for name in ("cloudformation", "lambda", "ssm"))
    outputs = {"StatsTableName": deployment.stats_table, "AlertTopicArn": deployment.topic_arn}
    stack = {
        "StackName": STACK,
        "CreationTime": datetime.now(tz=UTC),
        "StackStatus": "UPDATE_COMPLETE",
        "Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in outputs.items()],
    }
    resources = [("DetectorConsumerMapping", STREAM_MAPPING_TYPE, esm["UUID"])]
    if sender_secret:
        resources.append(("DetectorWebhookSenderFunction1A2B3C", "AWS::Lambda::Function", "HotKeyDetector-Sender"))
    summaries = resource_summaries(resources)
    consumer = {
        "FunctionName": "HotKeyDetector-Consumer",
        "Role": f"arn:aws:iam::123456789012:role/{CONSUMER_ROLE}",
        "Environment": {"Variables": {"WINDOW_SECONDS": "60"}},
        "Layers": [{"Arn": LAYER}],
    }
    cfn, lam, parameters = Stubber(cloudformation), Stubber(lambda_), Stubber(ssm)
    cfn.add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": STACK})
    cfn.add_response("list_stack_resources", {"StackResourceSummaries": summaries}, {"StackName": STACK})
    lam.add_response("get_event_source_mapping", esm, {"UUID": esm["UUID"]})
    # Lambda is asked for the consumer's configuration as often as the checks need it (window, layer, and
    # its role only when a table has a customer-managed key)
    for _ in range(consumer_reads):
        lam.add_response("get_function_configuration", consumer, {"FunctionName": "HotKeyDetector-Consumer"})
    if sender_secret:
        sender = {
            "FunctionName": "HotKeyDetector-Sender",
            "Role": f"arn:aws:iam::123456789012:role/{SENDER_ROLE}",
            "Environment": {"Variables": {"WEBHOOK_SECRET_ARN": sender_secret}},
        }
        lam.add_response("get_function_configuration", sender, {"FunctionName": "HotKeyDetector-Sender"})
    parameters.add_response(
        "get_parameter", {"Parameter": {"Name": POWERTOOLS_PARAMETER, "Value": LAYER}}, {"Name": POWERTOOLS_PARAMETER}
    )
    for stub in (cfn, lam, parameters):
        stub.activate()
    watched = str(esm["EventSourceArn"]).split(":table/", 1)[-1].split("/stream/", 1)[0]
    dynamodb, _insights = insights_answers({None: THROTTLED_KEYS_ON}, table=watched)
    return Clients(
        cloudformation=cloudformation,
        dynamodb=dynamodb,
        streams=boto3.client("dynamodbstreams"),
        lambda_=Split(lambda_, boto3.client("lambda"), "list_event_source_mappings"),
        cloudwatch=boto3.client("cloudwatch"),
        sqs=boto3.client("sqs"),
        sns=boto3.client("sns"),
        ssm=ssm,
        kms=boto3.client("kms"),
        iam=boto3.client("iam"),
        secretsmanager=boto3.client("secretsmanager"),
    )


def _by_name(checks: list[Any], prefix: str) -> Any:
    (check,) = [c for c in checks if c.name.startswith(prefix)]
    return check


def test_a_stream_of_another_region_is_named_with_where_to_deploy(aws: None) -> None:
    # Given a mapping whose stream is in eu-west-1 while the function runs in us-east-1
    deployment = deploy()
    elsewhere = deployment.stream_arn.replace(":us-east-1:", ":eu-west-1:")
    checks = diagnose(_clients(deployment, mapping(deployment, EventSourceArn=elsewhere)), STACK)
    # Then the stream check fails, saying where the stack must be deployed
    check = _by_name(checks, "stream of orders")
    assert check.verdict == FAIL and "eu-west-1" in check.detail and "AWS_REGION=eu-west-1" in check.fix


def _encrypted_table(key_arn: str) -> str:
    table = boto3.client("dynamodb").create_table(
        TableName="secure",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        SSESpecification={"Enabled": True, "SSEType": "KMS", "KMSMasterKeyId": key_arn},
    )
    return str(table["TableDescription"]["LatestStreamArn"])


@pytest.mark.parametrize("granted", [False, True])
def test_a_table_under_a_customer_managed_key_needs_the_key_granted(aws: None, granted: bool) -> None:
    # Given a watched table encrypted with a customer-managed key, and the consumer's role with or without it
    key = boto3.client("kms").create_key()["KeyMetadata"]["Arn"]
    deployment = deploy()
    stream = _encrypted_table(key)
    statements = [{"Effect": "Allow", "Action": "dynamodb:GetRecords", "Resource": f"{stream}"}]
    if granted:
        statements.append({"Effect": "Allow", "Action": "kms:Decrypt", "Resource": key})
    _role(CONSUMER_ROLE, statements)
    checks = diagnose(_clients(deployment, mapping(deployment, EventSourceArn=stream), consumer_reads=3), STACK)
    check = _by_name(checks, "encryption of secure")
    if granted:
        assert check.verdict == OK
    else:
        # Then the missing grant is named with the option that adds it
        assert check.verdict == FAIL and key in check.detail
        assert check.fix.startswith(f"redeploy with -c tableKmsKeyArns={key}")


@pytest.mark.parametrize(
    ("grant", "key_granted", "verdict", "fix"),
    [
        # the complete ARN's 6-character suffix, as the stack now grants a partial ARN
        ("arn:aws:secretsmanager:us-east-1:123456789012:secret:hotkeys/slack-webhook-??????", True, OK, ""),
        # the partial ARN exactly as given (what the stack used to grant): GetSecretValue is denied
        ("arn:aws:secretsmanager:us-east-1:123456789012:secret:hotkeys/slack-webhook", True, FAIL, "redeploy"),
        # the secret's customer-managed key not granted
        (
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:hotkeys/slack-webhook-??????",
            False,
            FAIL,
            "-c slackWebhookKeyArn=",
        ),
    ],
)
def test_the_webhook_subscriber_must_be_able_to_read_its_secret(
    aws: None, grant: str, key_granted: bool, verdict: str, fix: str
) -> None:
    # Given a webhook secret under a customer-managed key, named by its partial ARN
    key = boto3.client("kms").create_key()["KeyMetadata"]["Arn"]
    boto3.client("secretsmanager").create_secret(
        Name="hotkeys/slack-webhook", SecretString="https://hooks.example.com/x", KmsKeyId=key
    )
    statements = [{"Effect": "Allow", "Action": "secretsmanager:GetSecretValue", "Resource": grant}]
    if key_granted:
        statements.append({"Effect": "Allow", "Action": "kms:Decrypt", "Resource": key})
    _role(SENDER_ROLE, statements)
    deployment = deploy()
    partial = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hotkeys/slack-webhook"
    checks = diagnose(_clients(deployment, mapping(deployment), sender_secret=partial), STACK)
    check = _by_name(checks, "webhook secret")
    assert check.verdict == verdict, check
    assert fix in check.fix


def test_a_missing_webhook_secret_is_named(aws: None) -> None:
    _role(
        SENDER_ROLE, [{"Effect": "Allow", "Action": "sns:Publish", "Resource": "arn:aws:sns:us-east-1:123456789012:x"}]
    )
    deployment = deploy()
    missing = "arn:aws:secretsmanager:us-east-1:123456789012:secret:nothing-here"
    check = _by_name(diagnose(_clients(deployment, mapping(deployment), sender_secret=missing), STACK), "webhook")
    assert check.verdict == FAIL and "no secret" in check.detail
