"""`hotkeys doctor` counts who reads each watched stream (issue #46 item 5): more than 2 readers of a shard
"may result in request throttling" (DynamoDB Streams API reference), and a second detector stack on the same
table is one more. The functions and their mappings are moto's; the stack's view and its own mapping's
details are stubbed as in test_doctor.py.
"""

from __future__ import annotations

import io
import json
import zipfile

import boto3
from botocore.stub import Stubber

from hotkeys.cli.doctor import OK, WARN, Check, diagnose, stream_mappings
from tests.integration.test_doctor import FUNCTION_ARN, NOW, STACK, deploy, mapping, stubbed_clients


def _role() -> str:
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    return str(
        boto3.client("iam").create_role(RoleName="reader", AssumeRolePolicyDocument=json.dumps(policy))["Role"]["Arn"]
    )


def _reader(name: str, stream: str, role: str, enabled: bool = True) -> str:
    """A function ``name`` on moto with a mapping of ``stream``; its mapping's UUID."""
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return None\n")
    lambda_ = boto3.client("lambda")
    lambda_.create_function(
        FunctionName=name, Runtime="python3.13", Role=role, Handler="index.handler", Code={"ZipFile": code.getvalue()}
    )
    answer = lambda_.create_event_source_mapping(
        FunctionName=name, EventSourceArn=stream, StartingPosition="LATEST", Enabled=enabled
    )
    return str(answer["UUID"])


def _readers_check(others: dict[str, bool]) -> Check:
    """The doctor's readers check of orders, read by the stack's consumer and by ``others`` (name → enabled)."""
    deployment = deploy()
    role = _role()
    ours = _reader("HotKeyDetector-Consumer", deployment.stream_arn, role)
    for name, enabled in others.items():
        _reader(name, deployment.stream_arn, role, enabled)
    clients, _stubs = stubbed_clients(deployment, mapping(deployment, UUID=ours, FunctionArn=FUNCTION_ARN))
    (check,) = [c for c in diagnose(clients, STACK, now=NOW) if c.name.startswith("readers of")]
    return check


def test_a_third_reader_of_a_watched_stream_is_a_warning_naming_the_table_and_the_functions(aws: None) -> None:
    # Given the stack's consumer, another stack's on the same table, and someone's export function
    check = _readers_check({"Orders-Staging-Consumer": True, "Audit-Export": True})
    # Then the doctor warns, naming the table, the count, each function (its own marked) and what it cannot see
    assert (check.name, check.verdict) == ("readers of the stream of orders", WARN)
    assert check.detail.startswith(
        "3 Lambda event source mappings read it (Audit-Export, HotKeyDetector-Consumer (this stack's consumer), "
        "Orders-Staging-Consumer): DynamoDB Streams allows 2 readers of a shard"
    )
    assert "may result in request throttling" in check.detail
    assert "Kinesis Client Library" in check.detail and "not counted" in check.detail
    assert "stream of orders" in check.fix and "two detector stacks on one table are two readers" in check.fix


def test_two_readers_pass(aws: None) -> None:
    # Given the stack's consumer and one other stack's on the same table: the most a shard allows
    check = _readers_check({"Orders-Staging-Consumer": True})
    assert check.verdict == OK
    assert check.detail == (
        "2 Lambda event source mappings read it: HotKeyDetector-Consumer (this stack's consumer), "
        "Orders-Staging-Consumer"
    )


def test_the_stacks_own_mapping_is_a_reader_even_where_the_listing_lacks_it(aws: None) -> None:
    # Given two other readers in Lambda's listing, which does not (yet) show the stack's own mapping
    deployment = deploy()
    role = _role()
    for name in ("Orders-Staging-Consumer", "Audit-Export"):
        _reader(name, deployment.stream_arn, role)
    clients, _stubs = stubbed_clients(deployment, mapping(deployment))
    # Then the stack's mapping, which the doctor has just read, is the third
    (check,) = [c for c in diagnose(clients, STACK, now=NOW) if c.name.startswith("readers of")]
    assert check.verdict == WARN and "HotKeyDetector-Consumer (this stack's consumer)" in check.detail


def test_every_page_of_a_streams_mappings_is_read() -> None:
    # Given Lambda's answer in two pages (ListEventSourceMappings returns at most 100 a call)
    stream = "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-01-01T00:00:00.000"
    one, two = "11111111-2222-3333-4444-555555555555", "66666666-7777-8888-9999-000000000000"
    lambda_ = boto3.client("lambda", region_name="us-east-1")
    stub = Stubber(lambda_)
    first = [{"UUID": one, "EventSourceArn": stream, "State": "Enabled"}]
    second = [{"UUID": two, "EventSourceArn": stream, "State": "Enabled"}]
    stub.add_response(
        "list_event_source_mappings", {"EventSourceMappings": first, "NextMarker": "m"}, {"EventSourceArn": stream}
    )
    stub.add_response(
        "list_event_source_mappings", {"EventSourceMappings": second}, {"EventSourceArn": stream, "Marker": "m"}
    )
    # When they are listed, then both pages are
    with stub:
        assert [m["UUID"] for m in stream_mappings(lambda_, stream)] == [one, two]
    stub.assert_no_pending_responses()


def test_a_disabled_mapping_reads_nothing(aws: None) -> None:
    # Given a third mapping that is disabled: it does not poll the stream
    check = _readers_check({"Orders-Staging-Consumer": True, "Audit-Export": False})
    assert check.verdict == OK and "Audit-Export" not in check.detail
