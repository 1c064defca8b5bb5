"""The Kinesis modes (#49): the tables' changes read from a Kinesis data stream (Kinesis Data Streams for DynamoDB)
instead of their DynamoDB streams: one the tables already send to (-c kinesisStreamArn), or one the stack creates
and turns on (-c enableKinesis), directly or through an enhanced fan-out consumer (-c kinesisEnhancedFanOut)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from hotkeys.deployment import EVENT_SOURCE, KINESIS_STREAMING_TYPE, STREAM_MAPPING_TYPE
from infra.kinesis_source import FAN_OUT_ACTIONS, STREAM_READ_ACTIONS
from infra.kinesis_streaming import STREAM_ACTIONS, TABLE_ACTIONS
from tests.infra.conftest import KINESIS_STREAM, Synthesized

pytestmark = pytest.mark.infra
KINESIS_MODES = ("kinesis", "enable-kinesis", "kinesis-compliance")


def _consumer_statements(synth: Synthesized) -> list[dict[str, Any]]:
    policy_id = synth.logical_id("AWS::IAM::Policy", "DetectorConsumerRole")
    statements: list[dict[str, Any]] = synth.template["Resources"][policy_id]["Properties"]["PolicyDocument"][
        "Statement"
    ]
    return statements


def _actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def _mapping(synth: Synthesized) -> dict[str, Any]:
    (mapping,) = synth.resources(STREAM_MAPPING_TYPE).values()
    properties: dict[str, Any] = mapping["Properties"]
    return properties


@pytest.mark.parametrize("mode", KINESIS_MODES)
def test_one_mapping_reads_every_tables_changes_with_the_dynamodb_modes_settings(synthesized: dict, mode: str) -> None:
    # Given a Kinesis mode (two tables on one stream in the first two)
    synth = synthesized[mode]
    # Then one mapping, with every setting the DynamoDB-stream modes give theirs
    settings = _mapping(synth)["Settings"]
    dlq = synth.logical_id("AWS::SQS::Queue", "DetectorDeadLetters")
    assert settings == {
        "StartingPosition": "LATEST",
        "BatchSize": EVENT_SOURCE.batch_size,
        "MaximumBatchingWindowInSeconds": EVENT_SOURCE.max_batching_window_seconds,
        "BisectBatchOnFunctionError": True,
        "MaximumRetryAttempts": EVENT_SOURCE.retry_attempts,
        "MaximumRecordAgeInSeconds": EVENT_SOURCE.max_record_age_hours * 3600,
        "ParallelizationFactor": 1,
        "TumblingWindowInSeconds": EVENT_SOURCE.tumbling_window_seconds,
        "DestinationConfig": {"OnFailure": {"Destination": {"Fn::GetAtt": [dlq, "Arn"]}}},
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
        "Enabled": True,
    }
    # and no DynamoDB stream is read, turned on, or granted
    assert not synth.resources("Custom::DynamoDBStream")
    for statement in _consumer_statements(synth):
        assert not any(a.startswith("dynamodb:") and "Stream" in a for a in _actions(statement)), statement
        assert "dynamodb:GetRecords" not in _actions(statement)


def test_a_stream_the_tables_already_send_to_is_read_directly_and_nothing_is_created(synthesized: dict) -> None:
    synth = synthesized["kinesis"]
    assert _mapping(synth)["EventSourceArn"] == KINESIS_STREAM
    assert not synth.resources("AWS::Kinesis::Stream") and not synth.resources("AWS::Kinesis::StreamConsumer")
    assert not synth.resources(KINESIS_STREAMING_TYPE)
    # The consumer reads that stream, and only what Lambda needs to (no fan-out, no key of ours)
    reads = [s for s in _consumer_statements(synth) if any(a.startswith("kinesis:") for a in _actions(s))]
    assert [(_actions(s), s["Resource"]) for s in reads] == [(set(STREAM_READ_ACTIONS), KINESIS_STREAM)]
    assert "kinesis:ListStreams" not in STREAM_READ_ACTIONS


def test_the_stacks_own_stream_is_on_demand_encrypted_and_kept_a_day(synthesized: dict) -> None:
    synth = synthesized["enable-kinesis"]
    stream = synth.only("AWS::Kinesis::Stream")
    assert stream["StreamModeDetails"] == {"StreamMode": "ON_DEMAND"}
    assert stream["RetentionPeriodHours"] == 24
    # AWS's key for Kinesis by default (nothing to grant); compliance mode's own key there
    assert stream["StreamEncryption"] == {"EncryptionType": "KMS", "KeyId": "alias/aws/kinesis"}
    controlled = synthesized["kinesis-compliance"]
    key = controlled.logical_id("AWS::KMS::Key", "ControlTower")
    assert controlled.only("AWS::Kinesis::Stream")["StreamEncryption"] == {
        "EncryptionType": "KMS",
        "KeyId": {"Fn::GetAtt": [key, "Arn"]},
    }
    # whose consumer may decrypt with that key through Kinesis only
    (decrypt,) = [s for s in _consumer_statements(controlled) if s.get("Sid") == "DecryptKinesisStream"]
    assert _actions(decrypt) == {"kms:Decrypt"} and decrypt["Resource"] == {"Fn::GetAtt": [key, "Arn"]}
    assert "kinesis." in json.dumps(decrypt["Condition"]["StringEquals"]["kms:ViaService"])
    assert not [s for s in _consumer_statements(synth) if s.get("Sid") == "DecryptKinesisStream"]
    # The stream goes with the stack (it holds a day of copies only this stack reads)
    (resource,) = synth.resources("AWS::Kinesis::Stream").values()
    assert resource["DeletionPolicy"] == "Delete"


def test_enhanced_fan_out_reads_through_the_stacks_consumer_with_its_grants_on_it_only(synthesized: dict) -> None:
    synth = synthesized["enable-kinesis"]
    stream_id = synth.logical_id("AWS::Kinesis::Stream")
    consumer_id = synth.logical_id("AWS::Kinesis::StreamConsumer")
    consumer = synth.only("AWS::Kinesis::StreamConsumer")
    assert consumer["StreamARN"] == {"Fn::GetAtt": [stream_id, "Arn"]}
    assert consumer["ConsumerName"] == "HotKeyDetector-hotkeys"  # unique per stack on a shared stream
    assert _mapping(synth)["EventSourceArn"] == {"Fn::GetAtt": [consumer_id, "ConsumerARN"]}
    granted = {
        frozenset(_actions(s)): s["Resource"]
        for s in _consumer_statements(synth)
        if any(a.startswith("kinesis:") for a in _actions(s))
    }
    assert granted == {
        frozenset(STREAM_READ_ACTIONS): {"Fn::GetAtt": [stream_id, "Arn"]},
        frozenset(FAN_OUT_ACTIONS): {"Fn::GetAtt": [consumer_id, "ConsumerARN"]},
    }
    # Off by default: the other Kinesis modes read the stream without a consumer
    assert not synthesized["kinesis-compliance"].resources("AWS::Kinesis::StreamConsumer")
    assert not any(
        "kinesis:SubscribeToShard" in _actions(s) for s in _consumer_statements(synthesized["kinesis-compliance"])
    )


def test_each_table_streams_to_the_stacks_stream_through_the_projects_handler(synthesized: dict) -> None:
    synth = synthesized["enable-kinesis"]
    stream = {"Fn::GetAtt": [synth.logical_id("AWS::Kinesis::Stream"), "Arn"]}
    destinations = sorted(synth.resources(KINESIS_STREAMING_TYPE).values(), key=lambda r: r["Properties"]["TableName"])
    assert [(d["Properties"]["TableName"], d["Properties"]["StreamArn"]) for d in destinations] == [
        ("orders", stream),
        ("users", stream),
    ]
    # (every synth stamps them, so a redeploy turns a destination turned off outside the stack on again)
    assert all("SynthesizedAt" in d["Properties"] for d in destinations)
    handlers = {
        f["Properties"]["Handler"]
        for f in synth.resources("AWS::Lambda::Function").values()
        if "kinesis_streaming_app" in str(f["Properties"].get("Handler"))
    }
    assert handlers == {
        "hotkeys.detector.handlers.kinesis_streaming_app.on_event",
        "hotkeys.detector.handlers.kinesis_streaming_app.is_complete",
    }
    # Both handlers may change these tables' Kinesis destinations and write to the stack's stream, nothing more
    checked = 0
    for logical_id, policy in synth.resources("AWS::IAM::Policy").items():
        if not re.match(r"KinesisStreamingProvider(OnEvent|IsComplete)Role", logical_id):
            continue
        checked += 1
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        on_tables = [s for s in statements if _actions(s) & set(TABLE_ACTIONS)]
        assert {_actions(s) == set(TABLE_ACTIONS) for s in on_tables} == {True}
        # (minimizePolicies merges the tables' statements: one statement, one resource per table)
        tables = sorted(re.findall(r":table/(\w+)", json.dumps([s["Resource"] for s in on_tables])))
        assert tables == ["orders", "users"]
        (writes,) = [s for s in statements if s.get("Sid") == "WriteToTheStacksStream"]
        assert _actions(writes) == set(STREAM_ACTIONS) and writes["Resource"] == stream
        assert not any("dynamodb:UpdateTable" in _actions(s) for s in statements)
    assert checked == 2


@pytest.mark.parametrize("mode", ["kinesis", "enable-kinesis"])
def test_the_per_table_pieces_stay_per_table(synthesized: dict, mode: str) -> None:
    synth = synthesized[mode]
    (describe,) = [s for s in _consumer_statements(synth) if s.get("Sid") == "DescribeSourceTables"]
    assert len(describe["Resource"]) == 2  # orders and users, by name
    assert all(":table/" in json.dumps(resource) for resource in describe["Resource"])
    # Contributor Insights on each table, after its destination is on where the stack turns it on
    insights = synth.resources("Custom::ThrottledKeyInsights")
    assert sorted(r["Properties"]["TableName"] for r in insights.values()) == ["orders", "users"]
    if mode == "enable-kinesis":
        destinations = {r["Properties"]["TableName"]: k for k, r in synth.resources(KINESIS_STREAMING_TYPE).items()}
        for resource in insights.values():
            assert destinations[resource["Properties"]["TableName"]] in resource["DependsOn"]
