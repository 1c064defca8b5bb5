"""The deploy-time Contributor Insights enabler: throttled-keys mode where it is off, never a mode switched down,
on delete only what it enabled.

moto 5.2 does not model Contributor Insights (no DescribeContributorInsights or UpdateContributorInsights):
those calls go to a client under botocore's Stubber, which validates every request and response against
DynamoDB's service model, and the exact sequence of them is the assertion (an unexpected
UpdateContributorInsights fails the test). DescribeTable goes to moto (the tables and their GSIs are moto's).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from hotkeys.detector.insights_enabler_app import (
    InsightsError,
    Target,
    index_token,
    on_event,
    owned,
    physical_id,
)
from tests.support import Routed, create_source_table

MODE = "THROTTLED_KEYS"
FULL = "ACCESSED_AND_THROTTLED_KEYS"


def moto_table(name: str, *, status_index: bool) -> None:
    """A moto table keyed by pk, optionally with the by-status GSI."""
    create_source_table(name, status_index=status_index)


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
        self.client = Routed(boto3.client("dynamodb"), stubbed)

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
            result = on_event(event, dynamodb=self.client)
            self.stub.assert_no_pending_responses()
        return result


def request(kind: str, table: str, physical: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"RequestType": kind, "ResourceProperties": {"TableName": table}}
    if physical is not None:
        event["PhysicalResourceId"] = physical
    return event


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
    # Then only the table was enabled, and the physical id records that (and not the index)
    assert owned(result["PhysicalResourceId"]) == ("orders", {"T"})
    assert result["Data"] == {"Enabled": "orders"}


@pytest.mark.parametrize(
    ("status", "mode"),
    [("ENABLED", MODE), ("ENABLED", FULL), ("ENABLING", MODE), ("DISABLING", None), ("FAILED", None)],
)
def test_anything_but_disabled_is_left_as_it_is(aws: None, status: str, mode: str | None) -> None:
    moto_table("orders", status_index=False)
    calls = Calls().status("orders", None, status, mode)
    result = calls.run(request("Create", "orders"))
    assert owned(result["PhysicalResourceId"]) == ("orders", set())


def test_an_insights_answer_without_a_mode_is_the_full_mode_and_is_kept(aws: None) -> None:
    # Before modes existed an enabled table was in the full mode: on delete it is not ours to turn off
    moto_table("orders", status_index=False)
    calls = Calls().status("orders", None, "ENABLED")
    calls.run(request("Delete", "orders", physical_id("orders", [Target("orders")])))


def test_delete_disables_only_what_it_enabled_and_only_if_still_in_throttled_mode(aws: None) -> None:
    # Given the stack enabled the table and its GSI; since then someone switched the GSI to the full mode
    moto_table("orders", status_index=True)
    mine = physical_id("orders", [Target("orders"), Target("orders", "by-status")])
    calls = (
        Calls()
        .status("orders", None, "ENABLED", MODE)
        .disable("orders", None)
        .status("orders", "by-status", "ENABLED", FULL)
    )
    # When the stack is deleted, then the table is turned off and the GSI is left in the full mode
    assert calls.run(request("Delete", "orders", mine))["PhysicalResourceId"] == mine


def test_delete_of_a_resource_that_enabled_nothing_touches_nothing(aws: None) -> None:
    moto_table("orders", status_index=True)
    calls = Calls()
    calls.run(request("Delete", "orders", physical_id("orders", [])))


def test_delete_after_the_table_is_gone_succeeds(aws: None) -> None:
    calls = Calls()  # moto has no such table
    calls.run(request("Delete", "orders", physical_id("orders", [Target("orders")])))


def test_a_failed_disable_is_logged_with_the_command_and_does_not_block_the_teardown(
    aws: None, caplog: pytest.LogCaptureFixture
) -> None:
    moto_table("orders", status_index=False)
    calls = Calls().status("orders", None, "ENABLED", MODE)
    calls.stub.add_client_error("update_contributor_insights", "LimitExceededException", "Too many updates")
    calls.run(request("Delete", "orders", physical_id("orders", [Target("orders")])))
    assert "aws dynamodb update-contributor-insights --table-name orders --contributor-insights-action DISABLE" in (
        caplog.text
    )


def test_an_update_for_the_same_table_keeps_what_it_owns(aws: None) -> None:
    mine = physical_id("orders", [Target("orders")])
    assert Calls().run(request("Update", "orders", mine)) == {"PhysicalResourceId": mine}


def test_an_update_to_another_table_enables_it_under_a_new_id(aws: None) -> None:
    # CloudFormation then deletes the old id, which turns off what was enabled on the old table
    moto_table("users", status_index=False)
    old = physical_id("orders", [Target("orders")])
    calls = Calls().status("users", None, "DISABLED").enable("users", None)
    result = calls.run(request("Update", "users", old))
    assert owned(result["PhysicalResourceId"]) == ("users", {"T"})


def test_a_refused_enable_fails_the_deploy_naming_the_target_and_the_opt_out(aws: None) -> None:
    moto_table("orders", status_index=True)
    calls = Calls().status("orders", None, "ENABLED", FULL).status("orders", "by-status", "DISABLED")
    calls.stub.add_client_error("update_contributor_insights", "LimitExceededException", "Too many rules")
    with pytest.raises(InsightsError, match=r"orders index by-status: LimitExceededException.*throttledKeyInsights"):
        calls.run(request("Create", "orders"))


def test_a_missing_table_is_named(aws: None) -> None:
    calls = Calls()  # moto has no such table
    with pytest.raises(InsightsError, match="'nope' does not exist"):
        calls.run(request("Create", "nope"))


def test_the_physical_id_stays_small_for_the_longest_names() -> None:
    # 20 GSIs (the default quota) of 255-character names on a 255-character table: under CloudFormation's 1 KB
    table = "t" * 255
    indexes = [Target(table, f"{i:02d}" + "i" * 253) for i in range(20)]
    text = physical_id(table, [Target(table), *indexes])
    assert len(text) < 1024
    assert owned(text) == (table, {"T"} | {index_token(str(t.index)) for t in indexes})
    assert owned("stream-orders") is None
