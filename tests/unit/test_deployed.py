"""Reading a deployed stack's detector (``cli.deployed``) with AWS's answers checked against botocore's model."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
from botocore.stub import Stubber

from hotkeys.cli.deployed import read_deployment
from hotkeys.deployment import NOT_CREATED_PREFIX, STREAM_MAPPING_TYPE

STACK = "HotKeyDetector"
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:HotKeyDetector-Consumer"
STREAMS = [f"arn:aws:dynamodb:us-east-1:123456789012:table/{name}/stream/2026-12-01T00:00:00.000" for name in "ab"]
UUID = "6f0c2b1e-1d7a-4c55-9a9e-0f3f2c1d4e5a"


def test_a_mapping_the_stack_could_not_create_is_not_asked_of_lambda() -> None:
    # Given a stack with one table's mapping and another's that an upgrade could not create (not-created:<stream>)
    region = {"region_name": "us-east-1", "aws_access_key_id": "x", "aws_secret_access_key": "x"}
    cloudformation, lambda_ = boto3.client("cloudformation", **region), boto3.client("lambda", **region)
    stack = {"StackName": STACK, "CreationTime": datetime.now(tz=UTC), "StackStatus": "UPDATE_COMPLETE"}
    resources = [(f"Mapping{n}", physical) for n, physical in enumerate((UUID, NOT_CREATED_PREFIX + STREAMS[1]))]
    summaries = [
        {
            "LogicalResourceId": logical,
            "PhysicalResourceId": physical,
            "ResourceType": STREAM_MAPPING_TYPE,
            "LastUpdatedTimestamp": datetime.now(tz=UTC),
            "ResourceStatus": "UPDATE_COMPLETE",
        }
        for logical, physical in resources
    ]
    with Stubber(cloudformation) as formation, Stubber(lambda_) as functions:
        formation.add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": STACK})
        formation.add_response("list_stack_resources", {"StackResourceSummaries": summaries}, {"StackName": STACK})
        # (Lambda is asked for the one UUID only: a not-created id would reach it as a UUID it refuses)
        mapping = {"UUID": UUID, "FunctionArn": FUNCTION, "EventSourceArn": STREAMS[0], "State": "Enabled"}
        functions.add_response("get_event_source_mapping", mapping, {"UUID": UUID})
        variables = {"STATS_TABLE_NAME": "stats"}
        functions.add_response(
            "get_function_configuration",
            {"FunctionName": "HotKeyDetector-Consumer", "Environment": {"Variables": variables}},
            {"FunctionName": "HotKeyDetector-Consumer"},
        )
        # When a command reads the deployment, then it finds the detector from the mapping that exists
        deployment = read_deployment(cloudformation, lambda_, STACK)
        functions.assert_no_pending_responses()
    assert (deployment.function, deployment.settings.stats_table_name) == ("HotKeyDetector-Consumer", "stats")
