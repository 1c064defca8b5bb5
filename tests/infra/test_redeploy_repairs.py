"""A redeploy with no change repairs each way a mapping is broken outside the stack, and doctor's advice for
each says so truly: doctor reads the broken mapping from moto, then the handler gets what `cdk deploy` sends
(the synthesized properties, as CloudFormation delivers them, with a later ``SynthesizedAt``), then doctor
reads the mapping again.

CloudFormation sends a custom resource an Update only when its properties change (NOTES: "Deploy, update and
delete paths"): the template test below pins that every synth changes ``SynthesizedAt``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from hotkeys.cli.doctor import OK, REPAIR, read_mapping
from hotkeys.cli.doctor_streams import check_mapping, check_stream
from hotkeys.deployment import REDEPLOY_CONTEXT, REDEPLOY_PROPERTY, STREAM_ENABLER_TYPE, STREAM_MAPPING_TYPE
from tests.infra.conftest import Synthesized, synth_template
from tests.integration.test_stream_mapping import AsDocumented, World, request, run
from tests.support import create_source_table

WINDOW_SECONDS = 60


def _as_cloudformation_delivers(value: Any) -> Any:
    """Scalars as strings ("true", "100"), as CloudFormation hands a custom resource its properties."""
    if isinstance(value, dict):
        return {name: _as_cloudformation_delivers(item) for name, item in value.items()}
    if isinstance(value, list):
        return [_as_cloudformation_delivers(item) for item in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@pytest.fixture
def deployed(synthesized: dict[str, Synthesized]) -> Callable[[World, str, str], dict[str, Any]]:
    """The stack's mapping properties for ``source`` at synth ``stamp`` (the template's, its references
    written out: the world's consumer, ``source``, and a queue for the on-failure destination)."""
    (resource,) = synthesized["enable"].resources(STREAM_MAPPING_TYPE).values()
    queue = boto3.client("sqs").create_queue(QueueName="dead-letters")["QueueUrl"]
    queue_arn = boto3.client("sqs").get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])

    def properties(world: World, source: str, stamp: str) -> dict[str, Any]:
        props = json.loads(json.dumps(resource["Properties"]))
        props.update(FunctionName=world.detector, EventSourceArn=source, **{REDEPLOY_PROPERTY: stamp})
        props["Settings"]["DestinationConfig"]["OnFailure"]["Destination"] = queue_arn["Attributes"]["QueueArn"]
        props["Settings"]["TumblingWindowInSeconds"] = WINDOW_SECONDS
        return dict(_as_cloudformation_delivers(props))

    return properties


def _doctor(world: World, uuid: str) -> Any:
    mapping = read_mapping(world.lambda_, uuid)
    return None if mapping is None else check_mapping(mapping, WINDOW_SECONDS)


def _break_by_deleting(world: World, uuid: str) -> None:
    world.lambda_.delete_event_source_mapping(UUID=uuid)


def _break_by_disabling(world: World, uuid: str) -> None:
    world.lambda_.update_event_source_mapping(UUID=uuid, Enabled=False)


def _break_by_changing_settings(world: World, uuid: str) -> None:
    world.lambda_.update_event_source_mapping(UUID=uuid, BatchSize=7, MaximumRetryAttempts=-1)


def _break_by_filtering(world: World, uuid: str) -> None:
    pattern = json.dumps({"eventName": ["INSERT"]})
    world.lambda_.update_event_source_mapping(UUID=uuid, FilterCriteria={"Filters": [{"Pattern": pattern}]})


BREAKS = {
    "deleted": _break_by_deleting,
    "disabled": _break_by_disabling,
    "settings changed": _break_by_changing_settings,
    "filtered": _break_by_filtering,
}


@pytest.mark.parametrize("how", BREAKS)
def test_a_redeploy_with_no_change_repairs_a_mapping_broken_outside_the_stack(
    aws: None, deployed: Callable[[World, str, str], dict[str, Any]], how: str
) -> None:
    world = World()
    # Given the stack's mapping as the first deploy made it, healthy by doctor's reading
    first = deployed(world, world.orders, "2026-12-07T09:00:00+00:00")
    uuid = run(request("Create", first), world.client)
    assert _doctor(world, uuid).verdict == OK
    # When it is broken outside the stack
    BREAKS[how](world, uuid)
    # Then doctor fails it, and its advice is the redeploy
    before = _doctor(world, uuid)
    if before is None:  # (deleted: diagnose says "not in Lambda: its stream is not read", with REPAIR)
        assert how == "deleted"
    else:
        assert before.verdict != OK and before.fix.startswith(REPAIR), before
    # When `cdk deploy` runs with nothing changed but the synth: CloudFormation sends an Update
    again = deployed(world, world.orders, "2026-12-07T10:00:00+00:00")
    assert again != first
    physical = run(request("Update", again, first, uuid), world.client)
    # Then the stream has exactly one mapping of the consumer, the one the stack names, and doctor passes it
    (mapping,) = [m for m in world.mappings(world.orders) if m["FunctionArn"] == world.detector]
    assert mapping["UUID"] == physical and mapping["State"] == "Enabled"
    assert not (mapping.get("FilterCriteria") or {}).get("Filters")
    assert _doctor(world, physical).verdict == OK, _doctor(world, physical)


def test_a_redeploy_follows_a_tables_new_stream_and_the_cleanup_unmaps_the_old(
    aws: None, deployed: Callable[[World, str, str], dict[str, Any]]
) -> None:
    world = World()
    first = deployed(world, world.orders, "2026-12-07T09:00:00+00:00")
    uuid = run(request("Create", first), world.client)
    # Given the table made again (its stream's ARN is new; so is one turned off and on)
    boto3.client("dynamodb").delete_table(TableName="orders")
    new_stream = str(create_source_table("orders"))
    assert new_stream != world.orders
    # Then doctor says the mapping reads an old stream; for a stack that turns the stream on, the fix is the redeploy
    mapping = read_mapping(world.lambda_, uuid)
    assert mapping is not None
    (check,) = [c for c in check_stream(_StreamClients(), mapping, enabled_by_stack=True) if c.verdict != OK]
    assert "old stream" in check.detail and check.fix == REPAIR
    # and for a stack given the ARN, it names the ARN to give
    (given,) = [c for c in check_stream(_StreamClients(), mapping, enabled_by_stack=False) if c.verdict != OK]
    assert new_stream in given.fix and "tableStreamArns" in given.fix
    # When the redeploy brings the enabler's new StreamArn: an Update that moves the mapping, then the
    # cleanup's Delete of the old physical id
    again = deployed(world, new_stream, "2026-12-07T10:00:00+00:00")
    moved = run(request("Update", again, first, uuid), world.client)
    run(request("Delete", first, physical=uuid), world.client)
    # Then the consumer reads the new stream through the stack's mapping, and nothing maps the old one
    assert moved != uuid and world.gone(uuid)
    assert [m["UUID"] for m in world.mappings(new_stream)] == [moved]
    assert world.mappings(world.orders) == []


class _Updates(AsDocumented):
    """Lambda as documented, keeping each UpdateEventSourceMapping request."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.requests: list[dict[str, Any]] = []

    def update_event_source_mapping(self, **request: Any) -> Any:
        self.requests.append(request)
        return super().update_event_source_mapping(**request)


@pytest.mark.parametrize("how", [None, "disabled", "settings changed"])
def test_a_redeploy_sends_lambda_only_what_differs_and_nothing_for_a_mapping_as_deployed(
    aws: None, deployed: Callable[[World, str, str], dict[str, Any]], how: str | None
) -> None:
    # (Lambda stops and restarts polling for an update, and a mapping at LATEST may miss records meanwhile)
    world = World()
    first = deployed(world, world.orders, "2026-12-07T09:00:00+00:00")
    uuid = run(request("Create", first), world.client)
    if how is not None:
        BREAKS[how](world, uuid)
    updates = _Updates(world.lambda_)
    again = deployed(world, world.orders, "2026-12-07T10:00:00+00:00")
    assert run(request("Update", again, first, uuid), updates) == uuid
    sent = [sorted(name for name in r if name != "UUID") for r in updates.requests]
    expected = {None: [], "disabled": [["Enabled"]], "settings changed": [["BatchSize", "MaximumRetryAttempts"]]}
    assert sent == expected[how]


class _StreamClients:
    """doctor's clients for its stream check: moto's DynamoDB and DynamoDB Streams."""

    def __init__(self) -> None:
        self.dynamodb = boto3.client("dynamodb")
        self.streams = boto3.client("dynamodbstreams")


def test_every_synth_changes_what_each_deploy_time_resource_is_sent(synthesized: dict[str, Synthesized]) -> None:
    # Given the stack's mappings and stream enablers as two deploys synthesize them
    template = synthesized["enable"]
    stamped = {**template.resources(STREAM_MAPPING_TYPE), **template.resources(STREAM_ENABLER_TYPE)}
    assert len(stamped) == 2
    fixed_first = synth_template({**_ENABLE, REDEPLOY_CONTEXT: "first"})
    fixed_second = synth_template({**_ENABLE, REDEPLOY_CONTEXT: "second"})
    # Then each carries the synth's stamp, so CloudFormation sends each an Update at every deploy
    for logical_id, resource in stamped.items():
        assert resource["Properties"][REDEPLOY_PROPERTY], logical_id
        assert fixed_first["Resources"][logical_id]["Properties"][REDEPLOY_PROPERTY] == "first"
        assert fixed_second["Resources"][logical_id]["Properties"][REDEPLOY_PROPERTY] == "second"
    # and the mapping's settings enable it (a mapping disabled outside the stack is enabled by the Update)
    (mapping,) = template.resources(STREAM_MAPPING_TYPE).values()
    assert mapping["Properties"]["Settings"]["Enabled"] is True


_ENABLE = {"tableName": "orders", "enableStream": "true"}
