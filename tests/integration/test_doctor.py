"""`hotkeys doctor` against a detector "deployed" on moto.

moto backs DynamoDB (the source table and its stream, the stats table), SQS, SNS and CloudWatch.
What it does not model is stubbed with botocore's Stubber on real clients: CloudFormation's view
of the stack, the event source mapping's state and last processing result, the function's
configuration, and AWS's public Powertools parameter.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from hotkeys.cli.doctor import FAIL, OK, REPAIR, WARN, Clients, diagnose, failed
from hotkeys.deployment import (
    EVENT_SOURCE,
    MAPPING_TYPES,
    NOT_CREATED_PREFIX,
    POWERTOOLS_PARAMETER,
    STREAM_MAPPING_TYPE,
)
from hotkeys.detector.adapters.key_schema import PartitionKeyResolver
from hotkeys.detector.adapters.stats_store import DynamoStatsStore
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.pipeline import Ports, StreamBatch, process_batch
from hotkeys.emulator.local import create_stats_table
from tests.support import Routed, Split, create_source_table, layouts_of, write_record

STACK = "HotKeyDetector"
LAYER = "arn:aws:lambda:us-east-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python313-arm64:20"
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:HotKeyDetector-Consumer"
NOW = time.time()


@dataclass
class Deployment:
    stream_arn: str
    dlq_url: str
    email_dlq_url: str
    topic_arn: str
    stats_table: str


def deploy(view: str = "NEW_AND_OLD_IMAGES", cloudwatch_allowed: bool = True, confirmed: bool = True) -> Deployment:
    stream_arn = str(create_source_table("orders", view))
    create_stats_table(boto3.client("dynamodb"), "stats")
    sqs = boto3.client("sqs")
    dlq = sqs.create_queue(QueueName="HotKeyDetector-DLQ")["QueueUrl"]
    email_dlq = sqs.create_queue(QueueName="HotKeyDetector-UndeliveredAlerts")["QueueUrl"]
    sns = boto3.client("sns")
    topic = sns.create_topic(Name="alerts")["TopicArn"]
    statements: list[dict[str, Any]] = [
        {
            "Effect": "Deny",
            "Principal": "*",
            "Action": "sns:Publish",
            "Resource": topic,
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        },
    ]
    if cloudwatch_allowed:
        statements.append(
            {
                "Effect": "Allow",
                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                "Action": "sns:Publish",
                "Resource": topic,
            }
        )
    sns.set_topic_attributes(
        TopicArn=topic,
        AttributeName="Policy",
        AttributeValue=json.dumps({"Version": "2012-10-17", "Statement": statements}),
    )
    if confirmed:
        queue_arn = sqs.get_queue_attributes(QueueUrl=email_dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    return Deployment(stream_arn, dlq, email_dlq, topic, "stats")


def count_a_window(deployment: Deployment, at: int) -> None:
    """The consumer has run: one window of figures in the stats table."""
    settings = Settings(stats_table_name=deployment.stats_table)
    records = [write_record("k", i, at, table="orders") for i in range(3)]
    stats = DynamoStatsStore(boto3.resource("dynamodb").Table(deployment.stats_table))
    ports = Ports(stats=stats, resolve_key=PartitionKeyResolver(None, lambda name: {}), layouts=layouts_of(stats))
    start = at - at % 60
    process_batch(StreamBatch(records, "shardId-1", (start, start + 60), {}, True), settings, ports)


def resource_summaries(resources: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """ListStackResources summaries of (logical id, type, physical id), as CloudFormation lists them."""
    return [
        {
            "LogicalResourceId": logical,
            "ResourceType": kind,
            "PhysicalResourceId": physical,
            "LastUpdatedTimestamp": datetime.now(tz=UTC),
            "ResourceStatus": "CREATE_COMPLETE",
        }
        for logical, kind, physical in resources
    ]


def mapping(deployment: Deployment, **changes: Any) -> dict[str, Any]:
    return {
        "UUID": "11111111-2222-3333-4444-555555555555",
        "EventSourceArn": deployment.stream_arn,
        "FunctionArn": FUNCTION_ARN,
        "State": "Enabled",
        "LastProcessingResult": "OK",
        "BatchSize": EVENT_SOURCE.batch_size,
        "TumblingWindowInSeconds": 60,
        "BisectBatchOnFunctionError": True,
        "MaximumRetryAttempts": EVENT_SOURCE.retry_attempts,
        "ParallelizationFactor": 1,
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
        **changes,
    }


def insights_answers(answers: dict[str | None, dict[str, Any]], table: str = "orders") -> tuple[Any, Stubber]:
    """DynamoDB on moto, its Contributor Insights calls stubbed: DescribeContributorInsights answers, in the
    order the doctor asks (the table, then its GSIs), validated against the service model."""
    stubbed = boto3.client("dynamodb", region_name="us-east-1")
    stub = Stubber(stubbed)
    for index, answer in answers.items():
        request = {"TableName": table} | ({"IndexName": index} if index else {})
        stub.add_response("describe_contributor_insights", {"TableName": table, **answer}, request)
    stub.activate()
    return Routed(boto3.client("dynamodb"), stubbed), stub


THROTTLED_KEYS_ON = {"ContributorInsightsStatus": "ENABLED", "ContributorInsightsMode": "THROTTLED_KEYS"}


def stubbed_clients(
    deployment: Deployment,
    esm: dict[str, Any],
    layer: str = LAYER,
    insights: dict[str | None, dict[str, Any]] | None = None,
    mapping_type: str = STREAM_MAPPING_TYPE,
    gone: bool = False,
    physical: str | None = None,
    more_resources: tuple[tuple[str, str, str], ...] = (),
) -> tuple[Clients, list[Stubber]]:
    """``mapping_type``: the stack's mapping resource (an earlier release's: AWS::Lambda::EventSourceMapping);
    ``gone``: Lambda no longer has that mapping; ``physical``: the resource's physical id, if not its UUID (then
    Lambda is not asked for it); ``more_resources``: (logical id, type, physical id) of the stack's others."""
    region = {"region_name": "us-east-1"}
    dynamodb, insights_stub = insights_answers(insights or {None: THROTTLED_KEYS_ON})
    cloudformation = boto3.client("cloudformation", **region)
    lambda_ = boto3.client("lambda", **region)
    ssm = boto3.client("ssm", **region)
    outputs = {
        "StatsTableName": deployment.stats_table,
        "AlertTopicArn": deployment.topic_arn,
        "DeadLetterQueueUrl": deployment.dlq_url,
    }
    stack = {
        "StackName": STACK,
        "CreationTime": datetime.now(tz=UTC),
        "StackStatus": "UPDATE_COMPLETE",
        "Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in outputs.items()],
    }
    resources = [
        ("DetectorConsumerMapping", mapping_type, physical or esm["UUID"]),
        ("DetectorDeadLetters", "AWS::SQS::Queue", deployment.dlq_url),
        ("DetectorUndeliveredAlerts", "AWS::SQS::Queue", deployment.email_dlq_url),
        *more_resources,
    ]
    summaries = resource_summaries(resources)
    configuration = {
        "FunctionName": "HotKeyDetector-Consumer",
        "Environment": {"Variables": {"WINDOW_SECONDS": "60"}},
        "Layers": [{"Arn": layer}],
    }
    stubs = [Stubber(cloudformation), Stubber(lambda_), Stubber(ssm), insights_stub]
    stubs[0].add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": STACK})
    stubs[0].add_response("list_stack_resources", {"StackResourceSummaries": summaries}, {"StackName": STACK})
    if physical is not None:
        pass  # (an id that names no mapping: Lambda is not asked)
    elif gone:
        stubs[1].add_client_error(
            "get_event_source_mapping",
            "ResourceNotFoundException",
            http_status_code=404,
            expected_params={"UUID": esm["UUID"]},
        )
    else:
        stubs[1].add_response("get_event_source_mapping", esm, {"UUID": esm["UUID"]})
    stubs[1].add_response("get_function_configuration", configuration, {"FunctionName": "HotKeyDetector-Consumer"})
    stubs[1].add_response("get_function_configuration", configuration, {"FunctionName": "HotKeyDetector-Consumer"})
    stubs[2].add_response(
        "get_parameter", {"Parameter": {"Name": POWERTOOLS_PARAMETER, "Value": LAYER}}, {"Name": POWERTOOLS_PARAMETER}
    )
    for stub in stubs[:3]:
        stub.activate()
    clients = Clients(
        cloudformation=cloudformation,
        dynamodb=dynamodb,
        streams=boto3.client("dynamodbstreams"),
        # (the mappings of a stream, any function's, as moto lists them: none unless a test makes some)
        lambda_=Split(lambda_, boto3.client("lambda"), "list_event_source_mappings"),
        cloudwatch=boto3.client("cloudwatch"),
        sqs=boto3.client("sqs"),
        sns=boto3.client("sns"),
        ssm=ssm,
    )
    return clients, stubs


def lambda_metric(name: str, value: float) -> None:
    boto3.client("cloudwatch").put_metric_data(
        Namespace="AWS/Lambda",
        MetricData=[
            {
                "MetricName": name,
                "Dimensions": [{"Name": "FunctionName", "Value": "HotKeyDetector-Consumer"}],
                "Timestamp": datetime.fromtimestamp(NOW - 600, tz=UTC),
                "Value": value,
            }
        ],
    )


def verdicts(checks: list[Any]) -> dict[str, str]:
    return {check.name: check.verdict for check in checks}


@pytest.mark.parametrize("mapping_type", MAPPING_TYPES)
def test_a_healthy_deployment_passes_every_check(aws: None, mapping_type: str) -> None:
    # Given a deployment that counted a window ten minutes ago, with a small iterator age (its mapping the
    # stack's custom resource, or an earlier release's CloudFormation mapping)
    deployment = deploy()
    count_a_window(deployment, int(NOW) - 600)
    lambda_metric("IteratorAge", 1200)
    clients, stubs = stubbed_clients(deployment, mapping(deployment), mapping_type=mapping_type)
    # When the doctor looks
    checks = diagnose(clients, STACK, now=NOW)
    # Then every check passes, and every stubbed call was made
    assert not failed(checks), [c for c in checks if c.verdict != OK]
    assert set(verdicts(checks).values()) == {OK}
    assert {c.name for c in checks} >= {
        "stream of orders",
        "iterator age (last hour)",
        "function errors (last hour)",
        "Powertools layer",
        "stream DLQ",
        "alarms → topic",
        "alert subscribers",
        "recent figures for orders",
    }
    for stub in stubs:
        stub.assert_no_pending_responses()


@pytest.mark.parametrize("mapping_type", [STREAM_MAPPING_TYPE, "AWS::Lambda::EventSourceMapping"])
def test_a_mapping_deleted_outside_the_stack_fails_with_the_fix(aws: None, mapping_type: str) -> None:
    # Given a stack whose mapping Lambda no longer has (deleted by hand, or a migration rolled back)
    deployment = deploy()
    clients, _stubs = stubbed_clients(deployment, mapping(deployment), gone=True, mapping_type=mapping_type)
    # When the doctor looks, then it says the stream is not read and how to map it again
    (check,) = [c for c in diagnose(clients, STACK, now=NOW) if c.name == "event source mappings"]
    assert check.verdict == FAIL
    assert "is not in Lambda: its stream is not read" in check.detail and check.fix == REPAIR
    # (an earlier release's, after an upgrade rolled back: the mapping the rollback kept may read it)
    kept = "unless by the mapping an upgrade to this release kept when it rolled back"
    assert (kept in check.detail) == (mapping_type != STREAM_MAPPING_TYPE)


def test_a_mapping_an_upgrade_could_not_create_fails_with_the_fix(aws: None) -> None:
    # Given a stack whose mapping resource answered without a mapping (the one it displaced was still deleting)
    deployment = deploy()
    esm = mapping(deployment)
    physical = NOT_CREATED_PREFIX + esm["EventSourceArn"]
    clients, _stubs = stubbed_clients(deployment, esm, physical=physical)
    # When the doctor looks, then it names the stream that is not read, and the deploy that creates its mapping
    (check,) = [c for c in diagnose(clients, STACK, now=NOW) if c.name == "event source mappings"]
    assert check.verdict == FAIL and check.fix.startswith(REPAIR) and "shows no mapping Deleting" in check.fix
    assert f"mapping of {esm['EventSourceArn']} was not created" in check.detail
    assert "its stream is not read" in check.detail


def test_every_problem_is_named_with_its_fix(aws: None) -> None:
    # Given a KEYS_ONLY stream, a disabled mapping whose settings drifted, a lagging function with errors,
    # batches in the DLQ, a topic CloudWatch cannot publish to, nobody subscribed, no figures, another layer
    deployment = deploy(view="KEYS_ONLY", cloudwatch_allowed=False, confirmed=False)
    boto3.client("sqs").send_message(QueueUrl=deployment.dlq_url, MessageBody="{}")
    lambda_metric("IteratorAge", 3_600_000)
    lambda_metric("Errors", 4)
    esm = mapping(deployment, State="Disabled", BatchSize=10)
    clients, _stubs = stubbed_clients(deployment, esm, layer="arn:aws:lambda:us-east-1:1:layer:other:1")
    # When the doctor looks
    checks = diagnose(clients, STACK, now=NOW)
    by_name: dict[str, list[Any]] = {}
    for check in checks:
        by_name.setdefault(check.name, []).append(check)
    # Then the run fails, and each problem is reported with what to do about it
    assert failed(checks)
    (stream,) = by_name["stream of orders"]
    assert stream.verdict == FAIL and "KEYS_ONLY" in stream.detail and "update-table --table-name orders" in stream.fix
    (esm_check,) = [c for c in checks if c.name.startswith("event source mapping")]
    assert esm_check.verdict == FAIL and esm_check.fix == REPAIR
    assert by_name["iterator age (last hour)"][0].verdict == FAIL
    assert by_name["function errors (last hour)"][0].verdict != OK
    (dlq,) = by_name["stream DLQ"]
    assert dlq.verdict == FAIL and f"hotkeys redrive --stack {STACK}" in dlq.fix
    assert by_name["alarms → topic"][0].verdict == FAIL
    assert by_name["alert subscribers"][0].verdict == FAIL
    assert by_name["recent figures for orders"][0].verdict != OK
    assert by_name["Powertools layer"][0].verdict != OK


def test_a_mapping_whose_settings_drifted_fails(aws: None) -> None:
    deployment = deploy()
    count_a_window(deployment, int(NOW) - 60)
    clients, _ = stubbed_clients(deployment, mapping(deployment, TumblingWindowInSeconds=0, ParallelizationFactor=4))
    (check,) = [c for c in diagnose(clients, STACK, now=NOW) if c.name.startswith("event source mapping")]
    assert check.verdict == FAIL
    assert (
        "TumblingWindowInSeconds is 0, the stack sets 60" in check.detail
        and "ParallelizationFactor is 4" in check.detail
    )


def test_an_unknown_stack_is_a_one_line_error(aws: None, capsys: pytest.CaptureFixture) -> None:
    from hotkeys.cli.main import main

    assert main(["doctor", "--stack", "Nope", "--region", "us-east-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no stack named 'Nope'" in err[0]


def test_one_dead_lettered_batch_is_the_one_problem(aws: None, capsys: pytest.CaptureFixture) -> None:
    # Given a healthy deployment with one batch in the DLQ (docs/deploy.md's example)
    deployment = deploy()
    count_a_window(deployment, int(NOW) - 600)
    lambda_metric("IteratorAge", 1200)
    boto3.client("sqs").send_message(QueueUrl=deployment.dlq_url, MessageBody="{}")
    clients, _ = stubbed_clients(deployment, mapping(deployment))
    # When the doctor reports, then exactly that fails, the fix is the redrive command, and the exit status is 1
    from rich.console import Console

    from hotkeys.cli.doctor_view import render

    checks = diagnose(clients, STACK, now=NOW)
    assert [c.name for c in checks if c.verdict == FAIL] == ["stream DLQ"]
    assert render(Console(width=300), checks) == 1
    out = capsys.readouterr().out
    assert f"fix: hotkeys redrive --stack {STACK} (within the stream's 24 h)" in out
    assert out.rstrip().endswith("1 problem(s) found.")


def count_items_with_ttl(deployment: Deployment, at: int, values: list[dict[str, str] | None]) -> None:
    """The consumer has counted one window of updates whose items carry ``expireAt`` as given (None: absent)."""
    settings = Settings(stats_table_name=deployment.stats_table, ttl_attribute="expireAt")
    records = []
    for position, value in enumerate(values):
        record = write_record(f"k{position}", position, at, table="orders")
        if value is not None:
            record["dynamodb"]["NewImage"]["expireAt"] = value
        records.append(record)
    stats = DynamoStatsStore(boto3.resource("dynamodb").Table(deployment.stats_table))
    ports = Ports(
        stats=stats,
        resolve_key=PartitionKeyResolver(None, lambda name: {}),
        layouts=layouts_of(stats),
        ttl_attribute=lambda table: "expireAt",
    )
    start = at - at % 60
    process_batch(StreamBatch(records, "shardId-1", (start, start + 60), {}, True), settings, ports)


def ttl_verdict(deployment: Deployment, ttl_on: bool = True) -> Any:
    if ttl_on:
        boto3.client("dynamodb").update_time_to_live(
            TableName="orders", TimeToLiveSpecification={"Enabled": True, "AttributeName": "expireAt"}
        )
    clients, _stubs = stubbed_clients(deployment, mapping(deployment))
    clients.stats = lambda name: DynamoStatsStore(boto3.resource("dynamodb").Table(name))
    (check,) = [c for c in diagnose(clients, STACK, now=NOW) if c.name == "TTL of orders"]
    return check


def ttl_deleted(count: float) -> None:
    boto3.client("cloudwatch").put_metric_data(
        Namespace="AWS/DynamoDB",
        MetricData=[
            {
                "MetricName": "TimeToLiveDeletedItemCount",
                "Dimensions": [{"Name": "TableName", "Value": "orders"}],
                "Timestamp": datetime.fromtimestamp(NOW - 3600, tz=UTC),
                "Value": count,
            }
        ],
    )


def test_ttl_values_dynamodb_ignores_are_named_with_the_fix(aws: None) -> None:
    # Given TTL on expireAt, and a window whose items carry it in milliseconds (two of three)
    deployment = deploy()
    seconds = {"N": str(int(NOW) + 86_400)}
    count_items_with_ttl(deployment, int(NOW) - 600, [{"N": str((int(NOW) + 86_400) * 1000)}] * 2 + [seconds])
    ttl_deleted(5)
    # Then the doctor names them, how many, and the fix
    check = ttl_verdict(deployment)
    assert check.verdict == WARN
    assert check.detail == (
        "on expireAt; of 3 items written in the latest window, 2 hold expireAt in milliseconds: TTL never deletes them"
    )
    assert check.fix == "divide by 1,000: TTL reads epoch seconds"


def test_ttl_on_with_items_that_carry_it_and_no_deletion_in_a_day_is_a_warning(aws: None) -> None:
    deployment = deploy()
    count_items_with_ttl(deployment, int(NOW) - 600, [{"N": str(int(NOW) + 86_400)}] * 3)
    check = ttl_verdict(deployment)
    assert check.verdict == WARN and "DynamoDB's TTL deleted none in 24 h" in check.detail


def test_ttl_on_with_deletions_and_valid_items_passes(aws: None) -> None:
    deployment = deploy()
    count_items_with_ttl(deployment, int(NOW) - 600, [{"N": str(int(NOW) + 86_400)}] * 3)
    ttl_deleted(12)
    check = ttl_verdict(deployment)
    assert (check.verdict, check.detail) == (OK, "ENABLED on expireAt; 12 items deleted by TTL in 24 h")


def test_ttl_on_but_no_item_carries_it_is_said(aws: None) -> None:
    deployment = deploy()
    count_items_with_ttl(deployment, int(NOW) - 600, [None, None])
    check = ttl_verdict(deployment)
    assert check.verdict == WARN
    assert check.detail == "on expireAt, but none of the 2 items written in the latest window carries it"


def test_ttl_off_is_said_and_passes(aws: None) -> None:
    deployment = deploy()
    count_items_with_ttl(deployment, int(NOW) - 600, [None])
    check = ttl_verdict(deployment, ttl_on=False)
    assert check.verdict == OK and check.detail.startswith("DISABLED: no item expires")
