"""`hotkeys doctor` and the Kinesis modes (#49): a deployment that reads its tables from Kinesis Data Streams is
checked without false failures (no DynamoDB stream to judge, its tables from the stack), and a table whose
DynamoDB stream already has two readers besides the stack's is pointed to the Kinesis modes."""

from __future__ import annotations

import json

import pytest

from hotkeys.cli.doctor import FAIL, OK, REPAIR, WARN, diagnose, failed
from hotkeys.cli.doctor_streams import check_mapping
from hotkeys.deployment import EVENT_SOURCE, KINESIS_STREAMING_TYPE
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
from tests.integration.test_stream_mapping import properties, request, run
from tests.integration.test_stream_mapping_kinesis import (
    CONSUMER,
    UUID,
    KinesisWorld,
    _described,
    _stubbed,
    stack_settings,
)

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


# -- the mapping check on a Kinesis mapping ------------------------------------------------------------------


def _kinesis_break_disabled(world: KinesisWorld, uuid: str) -> None:
    world.lambda_.update_event_source_mapping(UUID=uuid, Enabled=False)


def _kinesis_break_settings(world: KinesisWorld, uuid: str) -> None:
    world.lambda_.update_event_source_mapping(UUID=uuid, BatchSize=7, TumblingWindowInSeconds=0)


def _kinesis_break_filtered(world: KinesisWorld, uuid: str) -> None:
    pattern = json.dumps({"data": {"eventName": ["INSERT"]}})
    world.lambda_.update_event_source_mapping(UUID=uuid, FilterCriteria={"Filters": [{"Pattern": pattern}]})


def _kinesis_break_partial_failures(world: KinesisWorld, uuid: str) -> None:
    # (without ReportBatchItemFailures Lambda ignores the consumer's batchItemFailures: the records it names are
    # taken as processed and never counted)
    world.lambda_.update_event_source_mapping(UUID=uuid, FunctionResponseTypes=[])


KINESIS_BREAKS = {
    "disabled": (_kinesis_break_disabled, "state Disabled"),
    "settings changed": (_kinesis_break_settings, "BatchSize is 7, the stack sets"),
    "filtered": (_kinesis_break_filtered, "1 filter(s) added outside the stack"),
    "partial failures off": (_kinesis_break_partial_failures, "FunctionResponseTypes is"),
}


@pytest.mark.parametrize("how", KINESIS_BREAKS)
def test_the_mapping_check_reads_a_kinesis_streams_mapping_as_lambda_describes_it(aws: None, how: str) -> None:
    # Given the stack's mapping of a Kinesis stream, made by its handler on moto with the stack's settings
    world = KinesisWorld()
    uuid = run(request("Create", properties(world.detector, world.stream, stack_settings())), world.client)
    window = EVENT_SOURCE.tumbling_window_seconds
    healthy = check_mapping(dict(world.lambda_.get_event_source_mapping(UUID=uuid)), window)
    assert (healthy.verdict, healthy.detail) == (OK, "Enabled, settings as deployed, last result: none yet")
    assert healthy.name == f"event source mapping {uuid} (Kinesis stream table-changes)"
    # When it is broken outside the stack, then the check fails it, saying how, and the fix is the redeploy
    breaks, says = KINESIS_BREAKS[how]
    breaks(world, uuid)
    broken = check_mapping(dict(world.lambda_.get_event_source_mapping(UUID=uuid)), window)
    assert broken.verdict == FAIL and says in broken.detail and broken.fix.startswith(REPAIR), broken


@pytest.mark.parametrize(
    ("state", "result", "verdict", "says"),
    [
        ("Enabled", "OK", OK, "Enabled, settings as deployed, last result: OK"),
        ("Enabled", "PROBLEM: Function call failed", FAIL, "last processing result: PROBLEM: Function call failed"),
        ("Disabled", "OK", FAIL, "state Disabled: its stream is not read"),
    ],
)
def test_the_mapping_check_reads_an_enhanced_fan_out_consumers_mapping(
    state: str, result: str, verdict: str, says: str
) -> None:
    # (GetEventSourceMapping's answer for the consumer's mapping from botocore's Stubber: moto has no consumers)
    client, stubs = _stubbed()
    answer = _described(CONSUMER, stack_settings(), state, LastProcessingResult=result)
    stubs.add_response("get_event_source_mapping", answer, {"UUID": UUID})
    stubs.activate()
    check = check_mapping(dict(client.get_event_source_mapping(UUID=UUID)), EVENT_SOURCE.tumbling_window_seconds)
    assert (check.verdict, check.detail) == (verdict, says)
    label = "Kinesis stream HotKeyDetector-KinesisStream-1A2B3C, consumer HotKeyDetector-hotkeys"
    assert check.name == f"event source mapping {UUID} ({label})"
