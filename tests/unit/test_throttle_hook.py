"""The application-side throttle hook: one EMF line per throttled DynamoDB request, naming table, index,
reason and partition key. Throttle errors come through botocore's Stubber, which validates their modeled
fields (``ThrottlingReasons``) against the DynamoDB service model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from hotkeys.throttle_hook import register

TABLE_ARN = "arn:aws:dynamodb:us-east-1:111122223333:table/orders"


def client() -> Any:
    session = boto3.session.Session(aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1")
    return session.client("dynamodb")


def throttle(stubber: Stubber, operation: str, code: str, reason: str, resource: str = TABLE_ARN) -> None:
    field = "throttlingReasons" if code == "ThrottlingException" else "ThrottlingReasons"
    stubber.add_client_error(
        operation,
        service_error_code=code,
        http_status_code=400,
        modeled_fields={"message": "throttled", field: [{"reason": reason, "resource": resource}]},
    )


def test_a_throttled_put_names_table_reason_and_partition_key() -> None:
    dynamodb, lines = client(), []
    hook = register(dynamodb, partition_keys={"orders": "pk"}, emit=lines.append)
    with Stubber(dynamodb) as stubber:
        throttle(stubber, "put_item", "ProvisionedThroughputExceededException", "TableWriteKeyRangeThroughputExceeded")
        stubber.add_response("put_item", {})
        with pytest.raises(ClientError):
            dynamodb.put_item(TableName="orders", Item={"pk": {"S": "event#42"}, "sk": {"S": "a"}})
        dynamodb.put_item(TableName="orders", Item={"pk": {"S": "event#42"}, "sk": {"S": "b"}})  # not throttled
    (line,) = lines
    record = json.loads(line)
    assert (record["TableName"], record["Reason"], record["PartitionKey"], record["Operation"]) == (
        "orders",
        "TableWriteKeyRangeThroughputExceeded",
        "event#42",
        "PutItem",
    )
    metric = record["_aws"]["CloudWatchMetrics"][0]
    assert metric["Metrics"] == [{"Name": "ThrottledRequests", "Unit": "Count"}] and record["ThrottledRequests"] == 1
    assert metric["Dimensions"] == [["TableName", "Reason"]]  # the key is a property, never a dimension
    assert hook.emitted == 1


def test_a_throttled_index_query_names_the_index_and_the_key_from_the_condition() -> None:
    dynamodb, lines = client(), []
    register(dynamodb, partition_keys={"orders/by-status": "status"}, emit=lines.append)
    with Stubber(dynamodb) as stubber:
        throttle(
            stubber,
            "query",
            "ThrottlingException",
            "IndexReadKeyRangeThroughputExceeded",
            f"{TABLE_ARN}/index/by-status",
        )
        with pytest.raises(ClientError):
            dynamodb.query(
                TableName="orders",
                IndexName="by-status",
                KeyConditionExpression="#s = :s AND created > :t",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":s": {"S": "PENDING"}, ":t": {"N": "1"}},
            )
    record = json.loads(lines[0])
    assert (record["IndexName"], record["Reason"], record["PartitionKey"]) == (
        "by-status",
        "IndexReadKeyRangeThroughputExceeded",
        "PENDING",
    )
    assert ["TableName", "IndexName", "Reason"] in record["_aws"]["CloudWatchMetrics"][0]["Dimensions"]


def test_other_errors_and_unregistered_clients_write_nothing() -> None:
    dynamodb, lines = client(), []
    hook = register(dynamodb, emit=lines.append)
    with Stubber(dynamodb) as stubber:
        stubber.add_client_error("get_item", service_error_code="ResourceNotFoundException", http_status_code=400)
        with pytest.raises(ClientError):
            dynamodb.get_item(TableName="orders", Key={"pk": {"S": "a"}})
        hook.unregister()
        throttle(stubber, "get_item", "RequestLimitExceeded", "TableReadAccountLimitExceeded")
        with pytest.raises(ClientError):
            dynamodb.get_item(TableName="orders", Key={"pk": {"S": "a"}})
    assert lines == []


def test_without_a_partition_key_mapping_every_key_attribute_is_named() -> None:
    dynamodb, lines = client(), []
    register(dynamodb, emit=lines.append)
    with Stubber(dynamodb) as stubber:
        throttle(
            stubber, "get_item", "ProvisionedThroughputExceededException", "TableReadProvisionedThroughputExceeded"
        )
        with pytest.raises(ClientError):
            dynamodb.get_item(TableName="orders", Key={"pk": {"S": "a"}, "sk": {"N": "7"}})
    assert json.loads(lines[0])["PartitionKey"] == {"pk": "a", "sk": "7"}


def test_the_overhead_benchmark_runs_and_logs_its_figures(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench.throttle_hook import main

    log = tmp_path / "measurements.md"
    monkeypatch.setenv("HOTKEYS_MEASUREMENTS_LOG", str(log))
    assert main(["--calls", "50", "--repeats", "1"]) == 0
    printed = capsys.readouterr()
    assert "per throttled request" in printed.out
    # and it says where its figures went: a tracked log is never rewritten unannounced
    assert f"figures appended to {log}" in printed.err
    entry = log.read_text()
    assert "`python -m bench.throttle_hook --calls 50 --repeats 1`" in entry and "per throttled request" in entry


def test_the_overhead_benchmark_with_no_write_prints_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench.throttle_hook import main

    log = tmp_path / "measurements.md"
    monkeypatch.setenv("HOTKEYS_MEASUREMENTS_LOG", str(log))
    assert main(["--calls", "50", "--repeats", "1", "--no-write"]) == 0
    printed = capsys.readouterr()
    assert "per throttled request" in printed.out and "appended" not in printed.err
    assert not log.exists()
