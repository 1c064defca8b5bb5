"""The deploy-time stream mapping against moto: displaces what is in the way, updates in place, restores after a
failed create, deletes only what it owns, and takes CloudFormation's strings as the Lambda model's types.

Each scenario runs ``on_event`` once per CloudFormation request, in the order CloudFormation sends them, against
moto's Lambda (a real function from a zip) and moto's DynamoDB streams; what the handler reads back is boto3's
parse of moto's answers. moto 5.2.5 departs from Lambda where this module depends on it, so every client goes
through ``AsDocumented``, which brings those answers back to Lambda's documented ones from moto's own state.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from hotkeys.deployment import NOT_CREATED_PREFIX
from hotkeys.detector.handlers.stream_mapping_app import on_event
from hotkeys.detector.provisioning import stream_mapping
from tests.conftest import log_lines
from tests.support import create_source_table

SETTINGS = {
    "StartingPosition": "LATEST",
    "BatchSize": "100",
    "MaximumBatchingWindowInSeconds": "5",
    "BisectBatchOnFunctionError": "true",
    "MaximumRetryAttempts": "3",
    "MaximumRecordAgeInSeconds": "3600",
    "ParallelizationFactor": "2",
    "FunctionResponseTypes": ["ReportBatchItemFailures"],
    "TumblingWindowInSeconds": "60",
}


class AsDocumented:
    """moto's Lambda with Lambda's documented answers where moto 5.2.5 has others, decided from moto's state.

    * Update and Delete of a UUID moto does not know answer an empty 200 (moto returns 404 without an error
      type, which its response layer turns into 200): Lambda answers ResourceNotFoundException. Here they
      first ask moto's GetEventSourceMapping, whose ResourceNotFoundException is modelled, and let it raise.
    * Create of a second mapping of the same function and DynamoDB stream succeeds in moto (it checks SQS
      queues only): Lambda refuses it with ResourceConflictException, the reason this resource exists.
    """

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def update_event_source_mapping(self, **request: Any) -> Any:
        self._client.get_event_source_mapping(UUID=request["UUID"])
        return self._client.update_event_source_mapping(**request)

    def delete_event_source_mapping(self, **request: Any) -> Any:
        self._client.get_event_source_mapping(UUID=request["UUID"])
        return self._client.delete_event_source_mapping(**request)

    def create_event_source_mapping(self, **request: Any) -> Any:
        pair = {"FunctionName": request["FunctionName"], "EventSourceArn": request["EventSourceArn"]}
        existing = self._client.list_event_source_mappings(**pair)["EventSourceMappings"]
        if existing:
            raise client_error(
                "ResourceConflictException",
                f"An event source mapping with {request['EventSourceArn']} and function "
                f"{request['FunctionName']} already exists. Please update or delete the existing mapping "
                f"with UUID {existing[0]['UUID']}",
                "CreateEventSourceMapping",
            )
        return self._client.create_event_source_mapping(**request)


class FailsToCreateOnce(AsDocumented):
    """Lambda failing the first CreateEventSourceMapping (throttled, a service error): what a displacement
    must survive, since the displaced mapping is already gone by then."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.failed = False

    def create_event_source_mapping(self, **request: Any) -> Any:
        if not self.failed:
            self.failed = True
            raise client_error(
                "ServiceException", "Lambda was unable to process the request", "CreateEventSourceMapping"
            )
        return super().create_event_source_mapping(**request)


class SlowToDelete(AsDocumented):
    """A deleted mapping that Lambda still describes (State Deleting) for its first ``answers`` Gets, as Lambda
    documents ("might not be completely deleted for several seconds"); moto forgets it at once."""

    def __init__(self, client: Any, answers: int) -> None:
        super().__init__(client)
        self.answers, self.gets, self.created = answers, 0, 0
        self._deleted: dict[str, dict[str, Any]] = {}

    def create_event_source_mapping(self, **request: Any) -> Any:
        self.created += 1
        return super().create_event_source_mapping(**request)

    def delete_event_source_mapping(self, **request: Any) -> Any:
        answer = super().delete_event_source_mapping(**request)
        self._deleted[request["UUID"]] = answer
        return answer

    def get_event_source_mapping(self, **request: Any) -> Any:
        if request["UUID"] in self._deleted:
            self.gets += 1
            if self.gets <= self.answers:
                return self._deleted[request["UUID"]] | {"State": "Deleting"}
        return self._client.get_event_source_mapping(**request)


class Busy(AsDocumented):
    """Lambda's answers while a mapping settles: the first ``refusals`` Updates and Deletes are refused with
    ResourceInUseException ("you tried to update an event source mapping in the CREATING state, or you tried
    to delete an event source mapping currently UPDATING"), the first ``creating`` Gets of a new mapping say
    Creating, and the first ``unseen`` Creates say the function's role cannot read the stream yet (a role
    just granted: InvalidParameterValueException)."""

    def __init__(self, client: Any, refusals: int = 0, creating: int = 0, unseen: int = 0) -> None:
        super().__init__(client)
        self.refusals, self.creating, self.unseen = refusals, creating, unseen

    def _refuse(self, operation: str) -> None:
        if self.refusals:
            self.refusals -= 1
            raise client_error("ResourceInUseException", "Cannot update the event source mapping", operation)

    def update_event_source_mapping(self, **request: Any) -> Any:
        self._refuse("UpdateEventSourceMapping")
        return super().update_event_source_mapping(**request)

    def delete_event_source_mapping(self, **request: Any) -> Any:
        self._refuse("DeleteEventSourceMapping")
        return super().delete_event_source_mapping(**request)

    def create_event_source_mapping(self, **request: Any) -> Any:
        if self.unseen:
            self.unseen -= 1
            raise client_error(
                "InvalidParameterValueException",
                "Cannot access stream. Please ensure the role can perform the GetRecords, GetShardIterator, "
                "DescribeStream, and ListStreams Actions on your stream in IAM.",
                "CreateEventSourceMapping",
            )
        return super().create_event_source_mapping(**request)

    def get_event_source_mapping(self, **request: Any) -> Any:
        answer = self._client.get_event_source_mapping(**request)
        if self.creating:
            self.creating -= 1
            return answer | {"State": "Creating"}
        return answer


def client_error(code: str, message: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


class Sleeps:
    """The handler's sleep, which sleeps for nothing, and its clock, which only these sleeps advance."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)

    def clock(self) -> float:
        return sum(self.calls)


class World:
    """Two functions (the detector and another consumer) and two tables with NEW_AND_OLD_IMAGES streams."""

    def __init__(self) -> None:
        self.lambda_ = boto3.client("lambda")
        self.client = AsDocumented(self.lambda_)
        role = boto3.client("iam").create_role(
            RoleName="consumer",
            AssumeRolePolicyDocument=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "lambda.amazonaws.com"},
                            "Action": "sts:AssumeRole",
                        }
                    ],
                }
            ),
        )["Role"]["Arn"]
        self.detector = self._function("HotKeyDetector-Consumer", role)
        self.other = self._function("SomeoneElses-Consumer", role)
        self.orders = str(create_source_table("orders"))
        self.payments = str(create_source_table("payments"))

    def _function(self, name: str, role: str) -> str:
        code = io.BytesIO()
        with zipfile.ZipFile(code, "w") as archive:
            archive.writestr("index.py", "def handler(event, context):\n    return None\n")
        answer = self.lambda_.create_function(
            FunctionName=name,
            Runtime="python3.12",
            Role=role,
            Handler="index.handler",
            Code={"ZipFile": code.getvalue()},
        )
        return str(answer["FunctionArn"])

    def mappings(self, source: str) -> list[dict[str, Any]]:
        return list(self.lambda_.list_event_source_mappings(EventSourceArn=source)["EventSourceMappings"])

    def mapping(self, uuid: str) -> dict[str, Any]:
        return dict(self.lambda_.get_event_source_mapping(UUID=uuid))

    def gone(self, uuid: str) -> bool:
        try:
            self.lambda_.get_event_source_mapping(UUID=uuid)
        except ClientError as error:
            return error.response["Error"]["Code"] == "ResourceNotFoundException"
        return False

    def by_hand(self, function: str, source: str, **settings: Any) -> str:
        """A mapping made outside this resource (an earlier release's AWS::Lambda::EventSourceMapping, a user).

        By the function's ARN: moto's ListEventSourceMappings compares FunctionName as it was written at
        creation, where Lambda resolves names and ARNs to the function."""
        answer = self.lambda_.create_event_source_mapping(FunctionName=function, EventSourceArn=source, **settings)
        return str(answer["UUID"])


@pytest.fixture
def world(aws: None) -> World:
    return World()


def properties(function: str, source: str, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:Provider-framework-onEvent",
        "FunctionName": function,
        "EventSourceArn": source,
        "Settings": SETTINGS if settings is None else settings,
    }


def request(
    kind: str, props: dict[str, Any], old: dict[str, Any] | None = None, physical: str | None = None
) -> dict[str, Any]:
    event: dict[str, Any] = {"RequestType": kind, "ResourceType": "Custom::StreamMapping", "ResourceProperties": props}
    if old is not None:
        event["OldResourceProperties"] = old
    if physical is not None:
        event["PhysicalResourceId"] = physical
    return event


def run(event: dict[str, Any], client: Any, sleep: Sleeps | None = None) -> str:
    sleep = sleep or Sleeps()
    return str(on_event(event, lambda_client=client, sleep=sleep, clock=sleep.clock)["PhysicalResourceId"])


# -- create ----------------------------------------------------------------------------------------------


def test_create_on_a_fresh_stream_maps_the_function_with_every_setting(world: World) -> None:
    sleeps = Sleeps()
    uuid = run(request("Create", properties(world.detector, world.orders)), world.client, sleeps)
    mapping = world.mapping(uuid)
    assert (mapping["FunctionArn"], mapping["EventSourceArn"]) == (world.detector, world.orders)
    assert {name: mapping[name] for name in SETTINGS} == {
        "StartingPosition": "LATEST",
        "BatchSize": 100,
        "MaximumBatchingWindowInSeconds": 5,
        "BisectBatchOnFunctionError": True,
        "MaximumRetryAttempts": 3,
        "MaximumRecordAgeInSeconds": 3600,
        "ParallelizationFactor": 2,
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
        "TumblingWindowInSeconds": 60,
    }
    assert sleeps.calls == []  # nothing was displaced, so nothing was waited for


def test_create_displaces_the_functions_mapping_on_the_stream_and_leaves_another_functions(
    world: World, log: io.StringIO
) -> None:
    # Given an earlier release's mapping of the detector on the stream, and another consumer's
    earlier = world.by_hand(world.detector, world.orders, StartingPosition="TRIM_HORIZON", BatchSize=500)
    others = world.by_hand(world.other, world.orders, StartingPosition="LATEST", BatchSize=10)
    # When the custom resource is created for the same function and stream
    uuid = run(request("Create", properties(world.detector, world.orders)), world.client)
    # Then the earlier mapping is gone, the new one is the detector's only one, with the new settings...
    assert world.gone(earlier) and uuid != earlier
    detectors = [m for m in world.mappings(world.orders) if m["FunctionArn"] == world.detector]
    assert [(m["UUID"], m["BatchSize"], m["StartingPosition"]) for m in detectors] == [(uuid, 100, "LATEST")]
    # ...the other consumer's mapping is as it was...
    assert (world.mapping(others)["FunctionArn"], world.mapping(others)["BatchSize"]) == (world.other, 10)
    # ...and the displacement is one structured line naming the UUID it removed
    displaced = [line for line in log_lines(log) if line["message"].startswith("displaced")]
    assert [(line["uuid"], line["function"], line["level"]) for line in displaced] == [
        (earlier, world.detector, "INFO")
    ]


def test_displacement_waits_until_lambda_has_finished_deleting(world: World) -> None:
    # Given a mapping Lambda still describes as Deleting for three Gets after its delete
    earlier = world.by_hand(world.detector, world.orders, StartingPosition="LATEST")
    slow, sleeps = SlowToDelete(world.lambda_, answers=3), Sleeps()
    uuid = run(request("Create", properties(world.detector, world.orders)), slow, sleeps)
    # Then the create waited (three pauses, none slept for real) and came after the delete was done
    assert sleeps.calls == [stream_mapping.POLL_SECONDS] * 3
    assert slow.gets == 4 and world.gone(earlier)
    assert [m["UUID"] for m in world.mappings(world.orders)] == [uuid]


def test_a_delete_that_never_finishes_answers_without_a_mapping_and_the_next_deploy_creates_it(
    world: World, log: io.StringIO
) -> None:
    # Given an earlier release's mapping that Lambda goes on describing as Deleting past the create's wait
    earlier = world.by_hand(world.detector, world.orders, StartingPosition="LATEST")
    sleeps = Sleeps()
    slow = SlowToDelete(world.lambda_, 10**6)
    # When the upgrade's create runs (without a Lambda context the budget is BUDGET_SECONDS, less the create's
    # reserve for undoing itself)
    physical = run(request("Create", properties(world.detector, world.orders)), slow, sleeps)
    waited = stream_mapping.BUDGET_SECONDS - stream_mapping.UNDO_SECONDS
    assert sum(sleeps.calls) == waited
    # Then it answers, so that the stack keeps this release (and its StreamUnread alarm) rather than roll back to
    # the one whose mapping it displaced: with an id that names no mapping and the stream, and nothing created or
    # restored (while the old mapping exists Lambda would refuse both)...
    assert physical == NOT_CREATED_PREFIX + world.orders
    assert slow.created == 0
    # ...saying so in one error line that names the mapping still there and the stream
    (line,) = [line for line in log_lines(log) if line["level"] == "ERROR"]
    assert (line["uuids"], line["event_source"], line["waited_seconds"]) == ([earlier], world.orders, round(waited))
    # And the next deploy's Update (every deploy sends one), once Lambda has deleted the old mapping, creates it
    props = properties(world.detector, world.orders)
    uuid = run(request("Update", props, old=props, physical=physical), world.client)
    assert [m["UUID"] for m in world.mappings(world.orders)] == [uuid] and uuid != earlier
    # ...and CloudFormation's delete of the id it replaces (or the stack's delete before that) removes nothing
    assert run(request("Delete", props, physical=physical), world.client) == physical
    assert [m["UUID"] for m in world.mappings(world.orders)] == [uuid]


def test_a_failed_create_after_a_displacement_restores_the_displaced_mapping(world: World, log: io.StringIO) -> None:
    # Given an earlier mapping, disabled, with settings of its own
    earlier = world.by_hand(
        world.detector,
        world.orders,
        StartingPosition="TRIM_HORIZON",
        BatchSize=250,
        MaximumRetryAttempts=7,
        BisectBatchOnFunctionError=True,
        DestinationConfig={"OnFailure": {"Destination": "arn:aws:sqs:us-east-1:123456789012:dead-letters"}},
        Enabled=False,
    )
    before = world.mapping(earlier)
    # When Lambda fails the create that follows its displacement
    with pytest.raises(ClientError, match="ServiceException"):
        run(request("Create", properties(world.detector, world.orders)), FailsToCreateOnce(world.lambda_))
    # Then the stream has the detector's mapping again, configured as it was (under a new UUID), reading from
    # LATEST: a new mapping cannot resume the old one's position, and TRIM_HORIZON would count 24 h twice
    [restored] = world.mappings(world.orders)
    assert world.gone(earlier) and restored["UUID"] != earlier
    assert restored["StartingPosition"] == "LATEST"
    same = (
        "FunctionArn",
        "EventSourceArn",
        "BatchSize",
        "MaximumRetryAttempts",
        "BisectBatchOnFunctionError",
        "DestinationConfig",
        "State",
    )
    assert {name: restored[name] for name in same} == {name: before[name] for name in same}
    assert before["State"] == "Disabled"
    assert [line["displaced_uuid"] for line in log_lines(log) if line["message"].startswith("restored")] == [earlier]


def test_an_unknown_setting_is_refused_before_anything_changes(world: World) -> None:
    earlier = world.by_hand(world.detector, world.orders, StartingPosition="LATEST")
    for settings, name in (
        (SETTINGS | {"BatchSizes": "100"}, "'BatchSizes'"),
        (
            SETTINGS | {"DestinationConfig": {"OnFailure": {"Destinaton": "arn"}}},
            "DestinationConfig.OnFailure.Destinaton",
        ),
        (SETTINGS | {"EventSourceArn": world.payments}, "'EventSourceArn'"),
    ):
        with pytest.raises(ValueError, match=rf"unknown event source mapping setting {name}"):
            run(request("Create", properties(world.detector, world.orders, settings)), world.client)
    assert [m["UUID"] for m in world.mappings(world.orders)] == [earlier]  # not displaced


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("BatchSize", "lots", "BatchSize must be a whole number"),
        ("BisectBatchOnFunctionError", "yes", "BisectBatchOnFunctionError must be true or false"),
        ("FunctionResponseTypes", "ReportBatchItemFailures", "FunctionResponseTypes must be a list"),
        ("BatchSize", "0", "valid min value: 1"),  # botocore's own validation, before anything is displaced
    ],
)
def test_a_setting_of_the_wrong_type_is_refused(world: World, setting: str, value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        run(request("Create", properties(world.detector, world.orders, SETTINGS | {setting: value})), world.client)
    assert world.mappings(world.orders) == []


def test_cloudformation_strings_arrive_as_the_lambda_models_types(world: World) -> None:
    settings = {
        "StartingPosition": "TRIM_HORIZON",
        "BatchSize": "100",
        "BisectBatchOnFunctionError": "true",
        "MaximumRetryAttempts": "-1",
        "Enabled": "False",
        "DestinationConfig": {"OnFailure": {"Destination": "arn:aws:sqs:us-east-1:123456789012:dead-letters"}},
    }
    uuid = run(request("Create", properties(world.detector, world.orders, settings)), world.client)
    mapping = world.mapping(uuid)
    assert (mapping["BatchSize"], mapping["BisectBatchOnFunctionError"], mapping["MaximumRetryAttempts"]) == (
        100,
        True,
        -1,
    )
    assert mapping["State"] == "Disabled"
    assert mapping["DestinationConfig"] == settings["DestinationConfig"]


def test_another_error_from_lambda_fails_the_deploy_with_it(world: World) -> None:
    missing = world.orders.replace("orders", "nope")
    with pytest.raises(ClientError, match="ResourceNotFoundException"):
        run(request("Create", properties(world.detector, missing)), world.client)


# -- update ----------------------------------------------------------------------------------------------


def test_an_update_of_the_batch_size_changes_it_in_place(world: World) -> None:
    first = properties(world.detector, world.orders)
    uuid = run(request("Create", first), world.client)
    second = properties(world.detector, world.orders, SETTINGS | {"BatchSize": "400", "ParallelizationFactor": "4"})
    assert run(request("Update", second, first, uuid), world.client) == uuid
    mapping = world.mapping(uuid)
    assert (mapping["BatchSize"], mapping["ParallelizationFactor"]) == (400, 4)
    assert [m["UUID"] for m in world.mappings(world.orders)] == [uuid]


def test_an_update_of_only_the_starting_position_keeps_the_mapping(world: World, log: io.StringIO) -> None:
    first = properties(world.detector, world.orders)
    uuid = run(request("Create", first), world.client)
    second = properties(world.detector, world.orders, SETTINGS | {"StartingPosition": "TRIM_HORIZON"})
    assert run(request("Update", second, first, uuid), world.client) == uuid
    # The mapping goes on from where it is: its starting position is the one it was created with
    assert [(m["UUID"], m["StartingPosition"]) for m in world.mappings(world.orders)] == [(uuid, "LATEST")]
    [warning] = [line for line in log_lines(log) if line["level"] == "WARNING"]
    assert warning["settings"] == ["StartingPosition"]


def test_a_setting_removed_from_the_properties_keeps_its_value_and_an_empty_one_clears_it(
    world: World, log: io.StringIO
) -> None:
    # UpdateEventSourceMapping changes only what it is given: Lambda's default is not known to the handler
    first = properties(world.detector, world.orders)
    uuid = run(request("Create", first), world.client)
    removed = properties(
        world.detector, world.orders, {k: v for k, v in SETTINGS.items() if k != "FunctionResponseTypes"}
    )
    run(request("Update", removed, first, uuid), world.client)
    assert world.mapping(uuid)["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert [line["settings"] for line in log_lines(log) if line["level"] == "WARNING"] == [["FunctionResponseTypes"]]
    emptied = properties(world.detector, world.orders, SETTINGS | {"FunctionResponseTypes": []})
    run(request("Update", emptied, removed, uuid), world.client)
    assert world.mapping(uuid).get("FunctionResponseTypes", []) == []


def test_an_update_to_another_stream_maps_it_under_a_new_id_and_leaves_the_old_one_to_the_delete(
    world: World,
) -> None:
    first = properties(world.detector, world.orders)
    old = run(request("Create", first), world.client)
    second = properties(world.detector, world.payments)
    new = run(request("Update", second, first, old), world.client)
    assert new != old
    assert [m["UUID"] for m in world.mappings(world.payments)] == [new]
    assert [m["UUID"] for m in world.mappings(world.orders)] == [old]
    # CloudFormation's cleanup then deletes the old id
    run(request("Delete", first, physical=old), world.client)
    assert world.mappings(world.orders) == [] and [m["UUID"] for m in world.mappings(world.payments)] == [new]


def test_a_rollback_of_a_move_keeps_the_original_mapping_where_it_reads(world: World) -> None:
    # Given a mapping moved to another stream by an update whose cleanup has not run (the original is alive)
    first, second = properties(world.detector, world.orders), properties(world.detector, world.payments)
    original = run(request("Create", first), world.client)
    moved = run(request("Update", second, first, original), world.client)
    # When the stack rolls back: CloudFormation updates the resource from the new properties to the old
    back = run(request("Update", first, second, moved), world.client)
    # Then the original mapping is the resource's again, untouched (not recreated at its starting position),
    assert back == original and [m["UUID"] for m in world.mappings(world.orders)] == [original]
    # and the rollback's cleanup deletes the one the update created
    run(request("Delete", second, physical=moved), world.client)
    assert world.mappings(world.payments) == [] and not world.gone(original)


def test_a_mapping_that_is_settling_is_waited_for_and_its_refusals_retried(world: World) -> None:
    # Given Lambda refusing while the mapping is Creating, and a role it does not see yet
    sleeps = Sleeps()
    busy = Busy(world.lambda_, refusals=2, creating=3, unseen=2)
    # When the resource is created, updated and deleted
    uuid = run(request("Create", properties(world.detector, world.orders)), busy, sleeps)
    new = properties(world.detector, world.orders, SETTINGS | {"BatchSize": "300"})
    assert run(request("Update", new, properties(world.detector, world.orders), uuid), busy, sleeps) == uuid
    run(request("Delete", new, physical=uuid), busy, sleeps)
    # Then each refusal was retried and each Creating answer waited for, every wait a poll
    assert busy.unseen == busy.refusals == busy.creating == 0
    assert sleeps.calls == [stream_mapping.POLL_SECONDS] * 7 and world.gone(uuid)


def test_an_update_of_a_mapping_deleted_behind_the_stacks_back_creates_it_again(world: World) -> None:
    first = properties(world.detector, world.orders)
    uuid = run(request("Create", first), world.client)
    world.lambda_.delete_event_source_mapping(UUID=uuid)
    second = properties(world.detector, world.orders, SETTINGS | {"BatchSize": "300"})
    again = run(request("Update", second, first, uuid), world.client)
    assert again != uuid and world.mapping(again)["BatchSize"] == 300


# -- delete ----------------------------------------------------------------------------------------------


def test_delete_answers_once_lambda_has_deleted_the_mapping(world: World) -> None:
    # (the stack deletes the consumer's role and queue next, which a Deleting mapping still uses)
    uuid = run(request("Create", properties(world.detector, world.orders)), world.client)
    sleeps = Sleeps()
    run(
        request("Delete", properties(world.detector, world.orders), physical=uuid),
        SlowToDelete(world.lambda_, 3),
        sleeps,
    )
    assert sleeps.calls == [stream_mapping.POLL_SECONDS] * 3


def test_delete_removes_only_the_mapping_it_owns(world: World) -> None:
    props = properties(world.detector, world.orders)
    uuid = run(request("Create", props), world.client)
    others = world.by_hand(world.other, world.orders, StartingPosition="LATEST")
    assert run(request("Delete", props, physical=uuid), world.client) == uuid
    assert world.gone(uuid) and [m["UUID"] for m in world.mappings(world.orders)] == [others]


def test_delete_of_a_mapping_already_displaced_succeeds_and_leaves_its_successor(world: World) -> None:
    # Given a resource whose mapping a newer resource of the same function and stream displaced
    props = properties(world.detector, world.orders)
    older = run(request("Create", props), world.client)
    newer = run(request("Create", props), world.client)
    # When CloudFormation deletes the older resource, it succeeds and the newer mapping stays
    assert run(request("Delete", props, physical=older), world.client) == older
    assert [m["UUID"] for m in world.mappings(world.orders)] == [newer]


def test_delete_after_a_failed_create_does_nothing(world: World) -> None:
    # The provider framework's physical id of a create that failed: not a mapping's UUID
    others = world.by_hand(world.detector, world.orders, StartingPosition="LATEST")
    marker = "AWSCDK::CustomResourceProviderFramework::CREATE_FAILED"
    assert run(request("Delete", properties(world.detector, world.orders), physical=marker), world.client) == marker
    assert [m["UUID"] for m in world.mappings(world.orders)] == [others]
