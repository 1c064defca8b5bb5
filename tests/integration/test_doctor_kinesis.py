"""`hotkeys doctor` and the Kinesis modes (#49): a deployment that reads its tables from Kinesis Data Streams is
checked without false failures (no DynamoDB stream to judge, its tables from the stack), and a table whose
DynamoDB stream already has two readers besides the stack's is pointed to the Kinesis modes."""

from __future__ import annotations

from hotkeys.cli.doctor import OK, WARN, diagnose, failed
from hotkeys.deployment import KINESIS_STREAMING_TYPE
from tests.integration.test_doctor import (
    NOW,
    STACK,
    count_a_window,
    deploy,
    lambda_metric,
    mapping,
    stubbed_clients,
    verdicts,
)
from tests.integration.test_doctor_readers import _readers_check

KINESIS = "arn:aws:kinesis:us-east-1:123456789012:stream/HotKeyDetector-KinesisStream-1A2B3C"


def test_a_kinesis_deployment_passes_every_check_it_can_make(aws: None) -> None:
    # Given a -c enableKinesis deployment of orders, read through an enhanced fan-out consumer, that counted a
    # window ten minutes ago
    deployment = deploy()
    count_a_window(deployment, int(NOW) - 600)
    lambda_metric("IteratorAge", 1200)
    consumer = f"{KINESIS}/consumer/HotKeyDetector-hotkeys:1796083200"
    clients, stubs = stubbed_clients(
        deployment,
        mapping(deployment, EventSourceArn=consumer),
        more_resources=(("Kinesisorders", KINESIS_STREAMING_TYPE, f"kinesis-streaming:orders:{KINESIS}"),),
    )
    # When the doctor looks
    checks = diagnose(clients, STACK, now=NOW)
    # Then nothing fails: no DynamoDB stream is judged or counted, and the tables' own checks still run
    assert not failed(checks), [c for c in checks if c.verdict != OK]
    names = verdicts(checks)
    assert not [name for name in names if name.startswith(("stream of", "readers of"))]
    mapping_check = next(c for c in checks if c.name.startswith("event source mapping"))
    assert mapping_check.name.endswith(
        "(Kinesis stream HotKeyDetector-KinesisStream-1A2B3C, consumer HotKeyDetector-hotkeys)"
    )
    assert mapping_check.verdict == OK
    assert names["recent figures for orders"] == OK
    assert any(name.startswith("throttles of orders") for name in names)
    for stub in stubs:
        stub.assert_no_pending_responses()


def test_two_readers_besides_ours_suggest_reading_the_table_from_kinesis(aws: None) -> None:
    check = _readers_check({"Orders-Staging-Consumer": True, "Audit-Export": True})
    assert check.verdict == WARN
    assert "-c tableName=orders -c kinesisStreamArn=arn:aws:kinesis:" in check.fix
    assert "-c enableKinesis=true" in check.fix


def test_one_reader_besides_ours_suggests_nothing(aws: None) -> None:
    assert "kinesis" not in _readers_check({"Orders-Staging-Consumer": True}).fix.lower()
