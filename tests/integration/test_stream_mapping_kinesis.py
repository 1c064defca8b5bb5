"""The deploy-time stream mapping in the Kinesis modes (#49): Create, Update and Delete of the one mapping on a
Kinesis data stream or an enhanced fan-out consumer of one, with the settings the DynamoDB modes give theirs.

A stream's mapping runs against moto's Lambda and Kinesis (boto3 parsing moto's answers, through
``AsDocumented``). moto 5.2.5 refuses a consumer's ARN ("Invalid EventSourceArn": it knows streams only), so a
consumer's mapping runs against botocore's Stubber, each request and answer validated against Lambda's service
model. moto accepts AT_TIMESTAMP but does not echo StartingPositionTimestamp: only what it does echo is read.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from hotkeys.deployment import EARLIER_MAPPING_TYPE, EVENT_SOURCE, STARTING_POSITIONS
from hotkeys.detector.handlers.stream_mapping_app import on_event
from hotkeys.detector.provisioning.mapping_settings import coerce_settings
from tests.integration.test_stream_mapping import (
    FailsToCreateOnce,
    Sleeps,
    World,
    properties,
    request,
    run,
)
from tests.integration.test_stream_mapping_rollback import CLEANUP, STACK_ID, _cloudformation

DLQ = "arn:aws:sqs:us-east-1:123456789012:HotKeyDetector-DeadLetters"
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:HotKeyDetector-Consumer"
STREAM = "arn:aws:kinesis:us-east-1:123456789012:stream/HotKeyDetector-KinesisStream-1A2B3C"
CONSUMER = f"{STREAM}/consumer/HotKeyDetector-hotkeys:1796083200"


def stack_settings(position: str = "LATEST") -> dict[str, Any]:
    """The Settings of the Kinesis modes' mapping as CloudFormation delivers them (strings): infra/stream_mapping.py
    with EVENT_SOURCE, a ParallelizationFactor of 1 and a table the stack does not create (tests/infra/test_kinesis.py
    holds the template to these)."""
    return {
        "StartingPosition": position,
        "BatchSize": str(EVENT_SOURCE.batch_size),
        "MaximumBatchingWindowInSeconds": str(EVENT_SOURCE.max_batching_window_seconds),
        "BisectBatchOnFunctionError": str(EVENT_SOURCE.bisect_batch_on_error).lower(),
        "MaximumRetryAttempts": str(EVENT_SOURCE.retry_attempts),
        "MaximumRecordAgeInSeconds": str(EVENT_SOURCE.max_record_age_hours * 3600),
        "ParallelizationFactor": "1",
        "TumblingWindowInSeconds": str(EVENT_SOURCE.tumbling_window_seconds),
        "DestinationConfig": {"OnFailure": {"Destination": DLQ}},
        "FunctionResponseTypes": ["ReportBatchItemFailures"] if EVENT_SOURCE.report_batch_item_failures else [],
        "Enabled": "true",
    }


def _model() -> Any:
    return boto3.client("lambda", region_name="us-east-1").meta.service_model


def typed(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` as the handler sends them to Lambda."""
    return coerce_settings(_model(), settings)


class KinesisWorld(World):
    """World's functions and tables, and a Kinesis data stream in moto."""

    def __init__(self) -> None:
        super().__init__()
        kinesis = boto3.client("kinesis")
        kinesis.create_stream(StreamName="table-changes", StreamModeDetails={"StreamMode": "ON_DEMAND"})
        summary = kinesis.describe_stream_summary(StreamName="table-changes")["StreamDescriptionSummary"]
        self.stream = str(summary["StreamARN"])


@pytest.fixture
def kworld(aws: None) -> KinesisWorld:
    return KinesisWorld()


READ = tuple(name for name in stack_settings() if name != "Enabled")


# -- what the mapping carries -----------------------------------------------------------------------------


def test_every_setting_is_one_lambdas_model_takes_for_a_kinesis_source_within_its_kinesis_range() -> None:
    # (botocore's model documents each stream setting per source: every one the mapping carries names Kinesis)
    create = _model().operation_model("CreateEventSourceMapping").input_shape
    update = _model().operation_model("UpdateEventSourceMapping").input_shape
    settings = typed(stack_settings())
    for name in settings:
        member = create.members[name]
        assert "Kinesis" in member.documentation or name == "Enabled", name
        # every one but the starting position is updated in place (the mapping's first position stays)
        assert (name in update.members) == (name != "StartingPosition"), name
    for name, value in settings.items():
        limits = create.members[name].metadata
        if isinstance(value, int) and not isinstance(value, bool):
            assert limits["min"] <= value <= limits["max"], name
    assert set(STARTING_POSITIONS) <= set(create.members["StartingPosition"].enum)
    assert settings["FunctionResponseTypes"] == create.members["FunctionResponseTypes"].member.enum
    # Kinesis: batch size at most 10,000, record age at least 60 s (or -1), window at most 900 s
    # (Lambda developer guide, services-kinesis-parameters)
    assert settings["BatchSize"] <= 10_000 and settings["MaximumRecordAgeInSeconds"] >= 60
    assert settings["TumblingWindowInSeconds"] <= 900 and settings["ParallelizationFactor"] == 1


@pytest.mark.parametrize("position", STARTING_POSITIONS)
def test_create_on_a_kinesis_stream_maps_it_with_the_settings_of_a_dynamodb_streams_mapping(
    kworld: KinesisWorld, position: str
) -> None:
    sleeps = Sleeps()
    settings = stack_settings(position)
    uuid = run(request("Create", properties(kworld.detector, kworld.stream, settings)), kworld.client, sleeps)
    kinesis = kworld.mapping(uuid)
    assert (kinesis["FunctionArn"], kinesis["EventSourceArn"], kinesis["State"]) == (
        kworld.detector,
        kworld.stream,
        "Enabled",
    )
    assert {name: kinesis[name] for name in READ} == {name: typed(settings)[name] for name in READ}
    # and a DynamoDB stream's mapping made from the same settings carries the same
    ddb = kworld.mapping(run(request("Create", properties(kworld.detector, kworld.orders, settings)), kworld.client))
    assert {name: ddb[name] for name in READ} == {name: kinesis[name] for name in READ}
    assert sleeps.calls == []


def test_create_displaces_the_functions_mapping_on_the_kinesis_stream(kworld: KinesisWorld) -> None:
    # Given a mapping of the detector on the stream made outside the stack (AT_TIMESTAMP: Kinesis only)
    earlier = kworld.by_hand(
        kworld.detector,
        kworld.stream,
        StartingPosition="AT_TIMESTAMP",
        StartingPositionTimestamp=datetime(2026, 12, 1, tzinfo=UTC),
    )
    others = kworld.by_hand(kworld.other, kworld.stream, StartingPosition="LATEST")
    uuid = run(request("Create", properties(kworld.detector, kworld.stream, stack_settings())), kworld.client)
    assert kworld.gone(earlier)
    assert sorted(m["UUID"] for m in kworld.mappings(kworld.stream)) == sorted([uuid, others])


def test_a_failed_create_restores_a_displaced_kinesis_mapping_at_latest(kworld: KinesisWorld) -> None:
    # Given a mapping of the detector reading the stream from a moment (AT_TIMESTAMP, with its timestamp)
    earlier = kworld.by_hand(
        kworld.detector,
        kworld.stream,
        StartingPosition="AT_TIMESTAMP",
        StartingPositionTimestamp=datetime(2026, 12, 1, tzinfo=UTC),
        BatchSize=250,
    )
    # When the create after its displacement fails
    with pytest.raises(Exception, match="ServiceException"):
        run(
            request("Create", properties(kworld.detector, kworld.stream, stack_settings())),
            FailsToCreateOnce(kworld.lambda_),
        )
    # Then it is back, at LATEST (no timestamp: a new mapping cannot resume the old one's position)
    [restored] = kworld.mappings(kworld.stream)
    assert kworld.gone(earlier) and restored["UUID"] != earlier
    assert (restored["StartingPosition"], restored["BatchSize"], restored["FunctionArn"]) == (
        "LATEST",
        250,
        kworld.detector,
    )
    assert "StartingPositionTimestamp" not in restored


def test_an_update_of_a_kinesis_mapping_changes_what_differs_in_place_and_nothing_else(kworld: KinesisWorld) -> None:
    first = properties(kworld.detector, kworld.stream, stack_settings())
    uuid = run(request("Create", first), kworld.client)
    before = kworld.mapping(uuid)
    # An update that changes nothing sends nothing (an update restarts the mapping's polling)
    assert run(request("Update", first, first, uuid), kworld.client) == uuid
    assert kworld.mapping(uuid)["LastModified"] == before["LastModified"]
    # One that changes settings (and the starting position, which stays) updates the same mapping
    second = properties(
        kworld.detector,
        kworld.stream,
        stack_settings("TRIM_HORIZON") | {"BatchSize": "500", "TumblingWindowInSeconds": "120"},
    )
    assert run(request("Update", second, first, uuid), kworld.client) == uuid
    after = kworld.mapping(uuid)
    assert (after["BatchSize"], after["TumblingWindowInSeconds"], after["StartingPosition"]) == (500, 120, "LATEST")
    assert [m["UUID"] for m in kworld.mappings(kworld.stream)] == [uuid]


def test_delete_of_a_kinesis_mapping_deletes_it_and_only_it(kworld: KinesisWorld) -> None:
    props = properties(kworld.detector, kworld.stream, stack_settings())
    uuid = run(request("Create", props), kworld.client)
    others = kworld.by_hand(kworld.other, kworld.stream, StartingPosition="LATEST")
    assert run(request("Delete", props, physical=uuid), kworld.client) == uuid
    assert kworld.gone(uuid) and [m["UUID"] for m in kworld.mappings(kworld.stream)] == [others]


# -- an enhanced fan-out consumer (Stubber) -----------------------------------------------------------------

UUID = "6f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"


def _described(source: str, settings: dict[str, Any], state: str = "Enabled", **changes: Any) -> dict[str, Any]:
    """GetEventSourceMapping's answer for the stack's mapping of ``source``."""
    sent = {name: value for name, value in typed(settings).items() if name != "Enabled"}
    return {"UUID": UUID, "FunctionArn": FUNCTION, "EventSourceArn": source, "State": state, **sent, **changes}


def _stubbed() -> tuple[Any, Stubber]:
    client = boto3.client("lambda", region_name="us-east-1")
    return client, Stubber(client)


def test_create_update_and_delete_on_an_enhanced_fan_out_consumer() -> None:
    client, stubs = _stubbed()
    settings = stack_settings()
    pair = {"FunctionName": FUNCTION, "EventSourceArn": CONSUMER}
    # Create: nothing of the pair to displace; the create carries every setting; it waits until Enabled
    stubs.add_response("list_event_source_mappings", {"EventSourceMappings": []}, pair)
    stubs.add_response(
        "create_event_source_mapping", _described(CONSUMER, settings, "Creating"), pair | typed(settings)
    )
    stubs.add_response("get_event_source_mapping", _described(CONSUMER, settings), {"UUID": UUID})
    # Update: only the batch size differs from what Lambda describes, and only it is sent
    bigger = settings | {"BatchSize": "2000"}
    stubs.add_response("get_event_source_mapping", _described(CONSUMER, settings), {"UUID": UUID})
    stubs.add_response(
        "update_event_source_mapping", _described(CONSUMER, bigger, "Updating"), {"UUID": UUID, "BatchSize": 2000}
    )
    stubs.add_response("get_event_source_mapping", _described(CONSUMER, bigger), {"UUID": UUID})
    # Delete: its own UUID, answered once Lambda no longer knows it
    stubs.add_response("delete_event_source_mapping", _described(CONSUMER, bigger, "Deleting"), {"UUID": UUID})
    stubs.add_client_error("get_event_source_mapping", "ResourceNotFoundException", http_status_code=404)
    stubs.activate()
    created = run(request("Create", properties(FUNCTION, CONSUMER, settings)), client)
    old, new = properties(FUNCTION, CONSUMER, settings), properties(FUNCTION, CONSUMER, bigger)
    assert created == UUID and run(request("Update", new, old, UUID), client) == UUID
    assert run(request("Delete", new, physical=UUID), client) == UUID
    stubs.assert_no_pending_responses()


# -- rollbacks --------------------------------------------------------------------------------------------


def test_a_rollback_from_a_consumer_back_to_the_stream_keeps_the_streams_mapping(kworld: KinesisWorld) -> None:
    # Given -c kinesisEnhancedFanOut added by an update that failed (its consumer mapping made, moto has no
    # consumers: only the move back is run) while the stream's own mapping, not yet cleaned up, still reads
    on_stream = properties(kworld.detector, kworld.stream, stack_settings())
    original = run(request("Create", on_stream), kworld.client)
    on_consumer = properties(kworld.detector, f"{kworld.stream}/consumer/HotKeyDetector-hotkeys:1796083200")
    # When CloudFormation updates the resource back to the stream
    back = run(request("Update", on_stream, on_consumer, UUID), kworld.client)
    # Then the stream's mapping is the resource's again, not recreated (it keeps its position)
    assert back == original and [m["UUID"] for m in kworld.mappings(kworld.stream)] == [original]


def _earlier_gone_and_undescribed(world: World) -> Any:
    """A stack rolling back onto an earlier release's AWS::Lambda::EventSourceMapping whose mapping is gone and
    whose table its template does not say: the one case in which a DynamoDB stream's mapping is kept
    (test_stream_mapping_rollback.test_an_earlier_resource_the_template_does_not_describe_keeps_the_mapping)."""
    earlier = world.by_hand(world.detector, world.orders, StartingPosition="LATEST")
    world.lambda_.delete_event_source_mapping(UUID=earlier)
    cloudformation, _ = _cloudformation(CLEANUP, [("Gone", EARLIER_MAPPING_TYPE, earlier)], earlier={})
    return cloudformation


def test_a_rollbacks_delete_of_a_kinesis_mapping_deletes_it_where_a_dynamodb_streams_is_kept(
    kworld: KinesisWorld, log: io.StringIO
) -> None:
    # Given the Kinesis mapping a failed update created, on a stack going back to a release that mapped no
    # Kinesis stream (every earlier release's AWS::Lambda::EventSourceMapping read a DynamoDB stream)
    props = properties(kworld.detector, kworld.stream, stack_settings())
    created = run(request("Create", props), kworld.client)
    # When CloudFormation's cleanup deletes it
    event = request("Delete", props, physical=created) | {"StackId": STACK_ID}
    cloudformation = _earlier_gone_and_undescribed(kworld)
    on_event(event, lambda_client=kworld.client, sleep=Sleeps(), cloudformation=cloudformation)
    # Then it is gone: kept, it would read a stream the stack no longer maps
    assert kworld.gone(created) and kworld.mappings(kworld.stream) == []
    assert "the event source mapping is kept" not in log.getvalue()


@pytest.mark.parametrize(
    "source",
    [
        CONSUMER,
        "arn:aws-cn:kinesis:cn-north-1:123456789012:stream/table-changes",
        "arn:aws-us-gov:kinesis:us-gov-west-1:123456789012:stream/table-changes/consumer/c:1796083200",
        "arn:aws-iso-b:kinesis:us-isob-east-1:123456789012:stream/table-changes",
        "arn:aws-eusc:kinesis:eusc-de-east-1:123456789012:stream/table-changes/consumer/c:1796083200",
    ],
    ids=["consumer", "aws-cn", "aws-us-gov consumer", "aws-iso-b", "aws-eusc consumer"],
)
def test_a_rollbacks_delete_of_a_kinesis_mapping_deletes_it_in_every_partition(source: str) -> None:
    # (Lambda stubbed: the delete of its UUID, then its absence; the stack, which the rule need not read, is
    # a stack rolling back onto an earlier mapping gone and undescribed, which would keep a DynamoDB stream's)
    client, stubs = _stubbed()
    stubs.add_response("delete_event_source_mapping", _described(source, stack_settings(), "Deleting"), {"UUID": UUID})
    stubs.add_client_error("get_event_source_mapping", "ResourceNotFoundException", http_status_code=404)
    stubs.activate()
    cloudformation, _ = _cloudformation(
        CLEANUP, [("Gone", EARLIER_MAPPING_TYPE, "0" * 8 + "-0000-0000-0000-" + "0" * 12)], earlier={}
    )
    event = request("Delete", properties(FUNCTION, source, stack_settings()), physical=UUID) | {"StackId": STACK_ID}
    on_event(event, lambda_client=client, sleep=Sleeps(), cloudformation=cloudformation)
    stubs.assert_no_pending_responses()
