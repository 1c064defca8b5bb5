"""The deploy-time Contributor Insights enabler: throttled-keys mode where it is off, never a mode switched down,
and turned off only by the last owner of what the detector turned on (docs/decisions.md §53, §68).

moto 5.2 does not model Contributor Insights (no DescribeContributorInsights or UpdateContributorInsights):
those calls go to a client under botocore's Stubber, which validates every request and response against
DynamoDB's service model, and the exact sequence of them is the assertion (an unexpected
UpdateContributorInsights fails the test). Everything else goes to moto: DescribeTable (the tables and their
GSIs) and the tables' tags (ListTagsOfResource, TagResource, UntagResource), where ownership is recorded.
Each scenario runs the handler once per CloudFormation request, in the order CloudFormation sends them.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from botocore.stub import Stubber

from hotkeys.detector.handlers.insights_enabler_app import on_event
from hotkeys.detector.provisioning.insights_owners import (
    OWNER_TAG,
    TABLE_FLAG,
    InsightsError,
    index_token,
    owners_in,
    recorded,
)
from tests.conftest import log_lines
from tests.support import Routed, create_source_table

MODE = "THROTTLED_KEYS"
FULL = "ACCESSED_AND_THROTTLED_KEYS"
STACK = "arn:aws:cloudformation:us-east-1:123456789012:stack/HotKeyDetector/5b8f3a10-0000-4000-8000-000000000001"
OTHER_STACK = "arn:aws:cloudformation:us-east-1:123456789012:stack/OtherDetector/7c9d4b20-0000-4000-8000-000000000002"


def moto_table(name: str, *, status_index: bool) -> None:
    """A moto table keyed by pk, optionally with the by-status GSI."""
    create_source_table(name, status_index=status_index)


def table_tags(table: str) -> dict[str, str]:
    dynamodb = boto3.client("dynamodb")
    arn = dynamodb.describe_table(TableName=table)["Table"]["TableArn"]
    return {tag["Key"]: tag["Value"] for tag in dynamodb.list_tags_of_resource(ResourceArn=arn)["Tags"]}


def given_tags(table: str, tags: dict[str, str]) -> None:
    dynamodb = boto3.client("dynamodb")
    arn = dynamodb.describe_table(TableName=table)["Table"]["TableArn"]
    dynamodb.tag_resource(ResourceArn=arn, Tags=[{"Key": k, "Value": v} for k, v in tags.items()])


def insights(table: str, index: str | None, status: str, mode: str | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {"TableName": table, "ContributorInsightsStatus": status}
    if index is not None:
        answer["IndexName"] = index
    if mode is not None:
        answer["ContributorInsightsMode"] = mode
        answer["ContributorInsightsRuleList"] = [f"DynamoDBContributorInsights-PKT-{table}-1700000000000"]
        answer["LastUpdateDateTime"] = datetime(2026, 11, 1, tzinfo=UTC)
    return answer


def target(table: str, index: str | None) -> dict[str, str]:
    return {"TableName": table} | ({"IndexName": index} if index else {})


class Calls:
    """The exact Contributor Insights calls the handler must make, in order."""

    def __init__(self) -> None:
        stubbed = boto3.client("dynamodb", region_name="us-east-1")
        self.stub = Stubber(stubbed)
        self.client: Any = Routed(boto3.client("dynamodb"), stubbed)
        self.pauses: list[float] = []

    def status(self, table: str, index: str | None, status: str, mode: str | None = None) -> Calls:
        self.stub.add_response(
            "describe_contributor_insights", insights(table, index, status, mode), target(table, index)
        )
        return self

    def enable(self, table: str, index: str | None) -> Calls:
        self.stub.add_response(
            "update_contributor_insights",
            {"TableName": table, "ContributorInsightsStatus": "ENABLING", "ContributorInsightsMode": MODE}
            | ({"IndexName": index} if index else {}),
            target(table, index) | {"ContributorInsightsAction": "ENABLE", "ContributorInsightsMode": MODE},
        )
        return self

    def disable(self, table: str, index: str | None) -> Calls:
        self.stub.add_response(
            "update_contributor_insights",
            {"TableName": table, "ContributorInsightsStatus": "DISABLING"} | ({"IndexName": index} if index else {}),
            target(table, index) | {"ContributorInsightsAction": "DISABLE"},
        )
        return self

    def run(self, event: dict[str, Any]) -> dict[str, Any]:
        with self.stub:
            result = on_event(event, dynamodb=self.client, pause=self.pauses.append)
            self.stub.assert_no_pending_responses()
        return result

    def fail(self, event: dict[str, Any], match: str) -> None:
        """The request fails with ``match``, and still made every call expected of it (its undoing)."""
        with self.stub, pytest.raises(InsightsError, match=match):
            on_event(event, dynamodb=self.client, pause=self.pauses.append)
        self.stub.assert_no_pending_responses()


_requests = iter(range(1, 1_000_000))


def request(
    kind: str, table: str, physical: str | None = None, *, stack: str = STACK, logical: str | None = None
) -> dict[str, Any]:
    """A CloudFormation request as the provider framework passes it on (each with its own RequestId)."""
    event: dict[str, Any] = {
        "RequestType": kind,
        "ResourceProperties": {"ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:x", "TableName": table},
        "StackId": stack,
        "LogicalResourceId": logical or f"Insights{table}",
        "RequestId": f"00000000-0000-4000-8000-{next(_requests):012d}",
        "ResourceType": "Custom::ThrottledKeyInsights",
    }
    if physical is not None:
        event["PhysicalResourceId"] = physical
    return event


# -- create ----------------------------------------------------------------------------------------------


def test_create_enables_throttled_keys_where_off_and_never_switches_the_full_mode_down(aws: None) -> None:
    # Given a table with Contributor Insights off and a GSI already in the full mode
    moto_table("orders", status_index=True)
    calls = (
        Calls()
        .status("orders", None, "DISABLED")
        .enable("orders", None)
        .status("orders", "by-status", "ENABLED", FULL)  # no update call follows: the stub would fail
    )
    # When the stack is created
    result = calls.run(request("Create", "orders"))
    # Then only the table was enabled; the table records its owner, and that the detector turned the table on
    tags = table_tags("orders")
    (owner,) = owners_in(tags)
    assert result["PhysicalResourceId"] == f"hotkeys-insights:orders:{owner}"
    assert tags[OWNER_TAG + owner] == "HotKeyDetector/Insightsorders"
    assert recorded(tags) == {TABLE_FLAG}
    assert result["Data"] == {"Targets": "2", "Enabled": "1"}
    assert calls.pauses == []  # its tag was listed at once


@pytest.mark.parametrize(
    ("status", "mode"),
    [("ENABLED", MODE), ("ENABLED", FULL), ("ENABLING", MODE), ("DISABLING", None), ("FAILED", None)],
)
def test_anything_but_disabled_is_left_as_it_is(aws: None, status: str, mode: str | None) -> None:
    moto_table("orders", status_index=False)
    calls = Calls().status("orders", None, status, mode)
    result = calls.run(request("Create", "orders"))
    # An owner all the same (it wants it on), which enabled nothing
    tags = table_tags("orders")
    assert len(owners_in(tags)) == 1 and recorded(tags) == set()
    assert result["Data"] == {"Targets": "1", "Enabled": "0"}


def test_a_create_waits_until_its_owner_tag_is_listed(aws: None) -> None:
    # DynamoDB's tags are eventually consistent: the delete of a resource this one replaces comes next
    moto_table("orders", status_index=False)
    calls = Calls().status("orders", None, "ENABLED", MODE)
    real = calls.client._rest
    listed = {"count": 0}

    class Lagging:
        """ListTagsOfResource answering the tags as they were before, the first three times after a TagResource."""

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def list_tags_of_resource(self, **arguments: Any) -> dict[str, Any]:
            listed["count"] += 1
            return {"Tags": []} if 2 <= listed["count"] <= 4 else dict(real.list_tags_of_resource(**arguments))

    calls.client = Routed(Lagging(), calls.client._insights)
    calls.run(request("Create", "orders"))
    assert len(calls.pauses) == 3


def test_a_refused_enable_fails_the_deploy_naming_the_target_and_the_opt_out(aws: None) -> None:
    moto_table("orders", status_index=True)
    calls = Calls().status("orders", None, "ENABLED", FULL).status("orders", "by-status", "DISABLED")
    calls.stub.add_client_error("update_contributor_insights", "LimitExceededException", "Too many rules")
    calls.fail(
        request("Create", "orders"), r"orders index by-status: LimitExceededException.*throttledKeyInsights=false"
    )


def test_a_create_that_fails_part_way_undoes_what_it_enabled(aws: None) -> None:
    # Given a table and its GSI both off; the table is enabled, then the GSI is refused
    moto_table("orders", status_index=True)
    given_tags("orders", {"team": "payments"})
    calls = Calls().status("orders", None, "DISABLED").enable("orders", None).status("orders", "by-status", "DISABLED")
    calls.stub.add_client_error("update_contributor_insights", "LimitExceededException", "Too many rules")
    # When the create fails, then before failing it turns the table off again (the provider framework
    # ignores the rollback's delete of a resource whose create failed: nothing else would)
    calls.disable("orders", None)
    calls.fail(request("Create", "orders"), "by-status: LimitExceededException")
    # and leaves no owner and no record behind, and the table's own tags as they were
    assert table_tags("orders") == {"team": "payments"}


def test_a_missing_table_is_named(aws: None) -> None:
    calls = Calls()  # moto has no such table
    calls.fail(request("Create", "nope"), "'nope' does not exist")


def test_the_response_stays_far_under_4_kb_whatever_the_index_names(aws: None) -> None:
    # 20 GSIs (the default quota) with 255-character names, all off: each is enabled
    table = "t" * 255
    indexes = [f"{i:02d}" + "i" * 253 for i in range(20)]
    boto3.client("dynamodb").create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}]
        + [{"AttributeName": f"a{i}", "AttributeType": "S"} for i in range(20)],
        BillingMode="PAY_PER_REQUEST",
        GlobalSecondaryIndexes=[
            {
                "IndexName": name,
                "KeySchema": [{"AttributeName": f"a{i}", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
            for i, name in enumerate(indexes)
        ],
    )
    calls = Calls().status(table, None, "DISABLED").enable(table, None)
    for name in indexes:
        calls.status(table, name, "DISABLED").enable(table, name)
    result = calls.run(request("Create", table, logical="Insights" + "t" * 64 + "0123abcd"))
    # The provider framework adds the stack id, request id and logical id to what the handler answers;
    # CloudFormation refuses a response of 4,096 bytes or more
    assert len(json.dumps(result)) < 1024
    assert result["Data"] == {"Targets": "21", "Enabled": "21"}
    # and what it enabled is recorded on the table all the same, in tag values within DynamoDB's limits
    tags = table_tags(table)
    assert recorded(tags) == {TABLE_FLAG} | {index_token(name) for name in indexes}
    assert all(len(key) <= 128 and len(value) <= 256 for key, value in tags.items())


# -- update ----------------------------------------------------------------------------------------------


def test_an_update_for_the_same_table_keeps_what_it_owns(aws: None) -> None:
    moto_table("orders", status_index=False)
    mine = Calls().status("orders", None, "DISABLED").enable("orders", None).run(request("Create", "orders"))
    physical = mine["PhysicalResourceId"]
    assert Calls().run(request("Update", "orders", physical)) == {"PhysicalResourceId": physical}


def test_an_update_to_another_table_enables_it_under_a_new_id_and_the_old_ids_delete_releases_the_old_one(
    aws: None,
) -> None:
    moto_table("orders", status_index=False)
    moto_table("users", status_index=False)
    old = Calls().status("orders", None, "DISABLED").enable("orders", None).run(request("Create", "orders"))
    new = (
        Calls()
        .status("users", None, "DISABLED")
        .enable("users", None)
        .run(request("Update", "users", old["PhysicalResourceId"], logical="Insightsorders"))
    )
    assert new["PhysicalResourceId"].startswith("hotkeys-insights:users:")
    # CloudFormation then deletes the old id: the old table is turned off, the new one is not touched
    Calls().status("orders", None, "ENABLED", MODE).disable("orders", None).run(
        request("Delete", "orders", old["PhysicalResourceId"])
    )
    assert owners_in(table_tags("orders")) == set() and len(owners_in(table_tags("users"))) == 1


def test_an_update_rolled_back_to_its_table_takes_its_old_tag_again_and_a_delete_leaves_no_owner(
    aws: None,
) -> None:
    # Given a resource on orders moved to users by an update that then rolled back: CloudFormation sends an
    # Update back to orders (naming the users id), then deletes the users id
    moto_table("orders", status_index=False)
    moto_table("users", status_index=False)
    logical = "Insightsorders"
    old = (
        Calls()
        .status("orders", None, "DISABLED")
        .enable("orders", None)
        .run(request("Create", "orders", logical=logical))
    )
    moved = (
        Calls()
        .status("users", None, "DISABLED")
        .enable("users", None)
        .run(request("Update", "users", old["PhysicalResourceId"], logical=logical))
    )
    back = (
        Calls()
        .status("orders", None, "ENABLED", MODE)
        .run(request("Update", "orders", moved["PhysicalResourceId"], logical=logical))
    )
    Calls().status("users", None, "ENABLED", MODE).disable("users", None).run(
        request("Delete", "users", moved["PhysicalResourceId"])
    )
    # Then the resource is orders' old owner again, the only one
    assert back["PhysicalResourceId"] == old["PhysicalResourceId"]
    assert len(owners_in(table_tags("orders"))) == 1
    # and the stack's delete leaves orders as it found it: off, no owner left
    Calls().status("orders", None, "ENABLED", MODE).disable("orders", None).run(
        request("Delete", "orders", back["PhysicalResourceId"])
    )
    assert owners_in(table_tags("orders")) == set()


# -- delete: only the last owner turns off, only what the detector turned on -----------------------------


def test_two_stacks_on_one_table_the_last_one_deleted_turns_it_off(aws: None) -> None:
    # Given one stack turned the table on, and a second stack then watched it too (nothing left to enable)
    moto_table("orders", status_index=False)
    first = Calls().status("orders", None, "DISABLED").enable("orders", None).run(request("Create", "orders"))
    second = Calls().status("orders", None, "ENABLED", MODE).run(request("Create", "orders", stack=OTHER_STACK))
    # When the first stack is deleted, then it stays on: the second still wants it (no update call)
    Calls().run(request("Delete", "orders", first["PhysicalResourceId"]))
    assert len(owners_in(table_tags("orders"))) == 1
    # and when the second is deleted, what the detector turned on is turned off, and its tags are gone
    Calls().status("orders", None, "ENABLED", MODE).disable("orders", None).run(
        request("Delete", "orders", second["PhysicalResourceId"], stack=OTHER_STACK)
    )
    assert table_tags("orders") == {}


def test_upgrading_from_positional_resources_with_a_shorter_table_list_keeps_the_watched_table_on(
    aws: None,
) -> None:
    # Given a stack deployed before §68 with -c tableNames=orders,users: Insights0 and Insights1 turned each on,
    # and recorded that in their physical ids only
    moto_table("orders", status_index=False)
    moto_table("users", status_index=False)
    insights0, insights1 = "throttled-insights:orders:T", "throttled-insights:users:T"
    # When it is deployed with this version and -c tableNames=users: CloudFormation creates the name-based
    # resource of users (on already: nothing to enable), then deletes both positional ones
    users = Calls().status("users", None, "ENABLED", MODE).run(request("Create", "users"))
    Calls().status("orders", None, "ENABLED", MODE).disable("orders", None).run(
        request("Delete", "orders", insights0, logical="Insights0")
    )
    Calls().run(request("Delete", "users", insights1, logical="Insights1"))  # no update call: users stays on
    # Then users keeps an owner, and the record of what the old resource turned on passed to it
    tags = table_tags("users")
    assert len(owners_in(tags)) == 1 and recorded(tags) == {TABLE_FLAG}
    # so deleting the stack later turns users off
    Calls().status("users", None, "ENABLED", MODE).disable("users", None).run(
        request("Delete", "users", users["PhysicalResourceId"])
    )
    assert table_tags("users") == {}


def test_a_replacement_on_the_same_table_is_not_turned_off_by_the_delete_of_what_it_replaces(aws: None) -> None:
    # Given a resource written before §68 that turned the table and its GSI on; an update gives it a new id
    moto_table("orders", status_index=True)
    legacy = f"throttled-insights:orders:T.{index_token('by-status')}"
    replacement = (
        Calls()
        .status("orders", None, "ENABLED", MODE)
        .status("orders", "by-status", "ENABLED", MODE)
        .run(request("Update", "orders", legacy, logical="Insights0"))
    )
    assert replacement["PhysicalResourceId"].startswith("hotkeys-insights:orders:")
    # When CloudFormation deletes the old id after the update, then nothing is turned off
    Calls().run(request("Delete", "orders", legacy, logical="Insights0"))
    assert recorded(table_tags("orders")) == {TABLE_FLAG, index_token("by-status")}


def test_the_last_owner_turns_off_only_what_it_enabled_and_only_if_still_in_throttled_mode(aws: None) -> None:
    # Given the detector enabled the table and its GSI; since then someone switched the GSI to the full mode
    moto_table("orders", status_index=True)
    mine = (
        Calls()
        .status("orders", None, "DISABLED")
        .enable("orders", None)
        .status("orders", "by-status", "DISABLED")
        .enable("orders", "by-status")
        .run(request("Create", "orders"))
    )
    calls = (
        Calls()
        .status("orders", None, "ENABLED", MODE)
        .disable("orders", None)
        .status("orders", "by-status", "ENABLED", FULL)
    )
    # When the stack is deleted, then the table is turned off and the GSI is left in the full mode
    assert calls.run(request("Delete", "orders", mine["PhysicalResourceId"])) == {
        "PhysicalResourceId": mine["PhysicalResourceId"]
    }
    assert table_tags("orders") == {}


def test_an_insights_answer_without_a_mode_is_the_full_mode_and_is_kept(aws: None) -> None:
    # Before modes existed an enabled table was in the full mode: not ours to turn off
    moto_table("orders", status_index=False)
    Calls().status("orders", None, "ENABLED").run(request("Delete", "orders", "throttled-insights:orders:T"))


def test_a_delete_of_an_owner_that_enabled_nothing_touches_nothing(aws: None) -> None:
    # Someone else turned it on before the stack came: the stack never turns it off
    moto_table("orders", status_index=True)
    mine = (
        Calls()
        .status("orders", None, "ENABLED", MODE)
        .status("orders", "by-status", "ENABLED", MODE)
        .run(request("Create", "orders"))
    )
    Calls().run(request("Delete", "orders", mine["PhysicalResourceId"]))
    assert table_tags("orders") == {}


def test_a_failed_disable_is_logged_with_the_command_and_stays_recorded(aws: None, log: io.StringIO) -> None:
    moto_table("orders", status_index=False)
    mine = Calls().status("orders", None, "DISABLED").enable("orders", None).run(request("Create", "orders"))
    calls = Calls().status("orders", None, "ENABLED", MODE)
    calls.stub.add_client_error("update_contributor_insights", "LimitExceededException", "Too many updates")
    calls.run(request("Delete", "orders", mine["PhysicalResourceId"]))
    (line,) = [line for line in log_lines(log) if line["message"] == "could not turn Contributor Insights off"]
    assert line["command"] == (
        "aws dynamodb update-contributor-insights --table-name orders --contributor-insights-action DISABLE"
    )
    # The owner is gone; the record stays, so a later owner's delete turns it off
    tags = table_tags("orders")
    assert owners_in(tags) == set() and recorded(tags) == {TABLE_FLAG}


class Failing:
    """A DynamoDB client whose ``operation`` raises ``error``; every other call goes to ``rest``."""

    def __init__(self, rest: Any, operation: str, error: Exception) -> None:
        self._rest, self._operation, self._error = rest, operation, error

    def __getattr__(self, name: str) -> Any:
        if name != self._operation:
            return getattr(self._rest, name)

        def fail(**_arguments: Any) -> Any:
            raise self._error

        return fail


def client_error(operation: str, code: str) -> ClientError:
    """What botocore raises for a service error ``code`` answered to ``operation``."""
    name = "".join(part.title() for part in operation.split("_"))
    return ClientError({"Error": {"Code": code, "Message": f"{code} from the test"}}, name)


@pytest.mark.parametrize(
    ("operation", "code"),
    [
        ("describe_table", "AccessDeniedException"),
        ("describe_table", "ThrottlingException"),
        ("describe_table", "ResourceNotFoundException"),
        ("describe_table", None),  # no connection: botocore's own error, not the service's
        ("list_tags_of_resource", "AccessDeniedException"),
        ("list_tags_of_resource", "LimitExceededException"),
    ],
)
def test_a_delete_never_fails_the_stack_and_says_why_in_one_structured_line(
    aws: None, log: io.StringIO, operation: str, code: str | None
) -> None:
    # Given the stack had turned the table on
    moto_table("orders", status_index=False)
    mine = Calls().status("orders", None, "DISABLED").enable("orders", None).run(request("Create", "orders"))
    error = (
        client_error(operation, code)
        if code
        else EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com/")
    )
    calls = Calls()
    calls.client = Routed(Failing(calls.client._rest, operation, error), calls.client._insights)
    # When its delete cannot read the table, then the delete succeeds (and turns nothing off)
    assert calls.run(request("Delete", "orders", mine["PhysicalResourceId"])) == {
        "PhysicalResourceId": mine["PhysicalResourceId"]
    }
    # and one structured line says which resource, which table and why
    (line,) = [line for line in log_lines(log) if line.get("physical_resource_id") == mine["PhysicalResourceId"]]
    assert line["table"] == "orders"
    assert (code or "EndpointConnectionError") in line["reason"]
    if code == "ResourceNotFoundException":
        assert (line["level"], line["message"]) == ("INFO", "table gone: nothing to turn off")
    else:
        assert (line["level"], line["message"]) == ("WARNING", "Contributor Insights left as it was on delete")
        assert "update-contributor-insights --table-name orders" in line["command"]


def test_a_delete_of_an_id_this_module_did_not_write_touches_nothing(aws: None) -> None:
    # The provider framework's id for a failed create, among others
    Calls().run(request("Delete", "orders", "AWSCDK::CustomResourceProviderFramework::CREATE_FAILED"))
