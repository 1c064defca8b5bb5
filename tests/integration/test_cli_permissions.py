"""The IAM policy docs/cli.md gives for `hotkeys top` allows every call `top` makes.

The calls are not listed by hand: `hotkeys top` runs against moto (its stats table filled by a replay of the
GSI sample, whose source table has global secondary indexes), with a botocore event hook on the CLI's session
recording each operation and its parameters before it is sent. moto does not model Contributor Insights, so
the two calls it lacks are answered by a hook that validates each answer against the service model (as
botocore's Stubber does), so that `top` goes on to read the throttled-key rules as it would on AWS. Each
recorded call becomes the IAM action and the resource ARN it is authorized against, and the documented policy
(placeholders filled in) must allow it.
"""

from __future__ import annotations

import contextlib
import fnmatch
import io
import json
import re
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.validate import validate_parameters

from hotkeys.cli import common
from hotkeys.cli.main import main
from hotkeys.detector.adapters.aws import AwsClients, AwsTarget

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"
# The page that documents `hotkeys top`, its policy included.
CLI_DOC = (ROOT / "docs" / "cli.md").read_text()
MARKER = "Your credentials for `hotkeys top` need this policy"
ACCOUNT = "123456789012"  # moto's default account
REGION = "us-east-1"
SOURCE = "payments"  # events/tables/payments.json: the GSI sample's table, with its indexes
# IAM's service prefix where it differs from boto3's client name.
IAM_PREFIX = {"dynamodbstreams": "dynamodb"}


def documented_policy() -> dict[str, Any]:
    """docs/cli.md's policy: the JSON block after ``MARKER``."""
    rest = CLI_DOC[CLI_DOC.index(MARKER) :]
    start = rest.index("```json\n") + len("```json\n")
    policy: dict[str, Any] = json.loads(rest[start : rest.index("\n```", start)])
    return policy


def resource_of(service: str, operation: str, params: dict[str, Any]) -> str:
    """The ARN IAM authorizes ``operation`` against (Service Authorization Reference: DynamoDB's table and
    index resources, CloudWatch's insight-rule resource)."""
    if service == "dynamodb" and "TableName" in params:
        table = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{params['TableName']}"
        return f"{table}/index/{params['IndexName']}" if params.get("IndexName") else table
    if service == "dynamodb" and operation == "BatchGetItem":
        (name,) = params["RequestItems"]  # the CLI reads one table per request
        return f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}"
    if service == "cloudwatch" and operation == "GetInsightRuleReport":
        return f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:insight-rule/{params['RuleName']}"
    raise AssertionError(f"{service} {operation}: no resource known for this call; teach resource_of and docs/cli.md")


def allows(policy: dict[str, Any], action: str, resource: str) -> bool:
    """An Allow statement matches the action and the resource (IAM's ``*``/``?`` wildcards; actions are
    case-insensitive)."""
    for statement in policy["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        if statement["Effect"] != "Allow" or "Condition" in statement:
            continue
        if any(fnmatch.fnmatch(action.lower(), pattern.lower()) for pattern in actions) and any(
            fnmatch.fnmatchcase(resource, pattern) for pattern in resources
        ):
            return True
    return False


def _answer(operation_model: Any, response: dict[str, Any]) -> tuple[AWSResponse, dict[str, Any]]:
    """A response moto cannot give, checked against the operation's output shape as Stubber checks it."""
    validate_parameters(response, operation_model.output_shape)
    return AWSResponse(None, 200, {}, None), response


class RecordingClients(AwsClients):
    """The CLI's ``AwsClients``, on a session whose every call is recorded before it is sent."""

    calls: list[tuple[str, str, dict[str, Any]]] = []

    def __init__(self, target: AwsTarget | None = None, session: boto3.session.Session | None = None) -> None:
        session = session or boto3.session.Session(region_name=(target or AwsTarget()).region)
        session.events.register("before-parameter-build.*.*", self._record)
        session.events.register("before-call.dynamodb.DescribeContributorInsights", self._insights_status)
        session.events.register("before-call.cloudwatch.GetInsightRuleReport", self._insights_report)
        super().__init__(target, session)

    @classmethod
    def _record(cls, params: dict[str, Any], model: Any, **_: Any) -> None:
        cls.calls.append((model.service_model.service_name, model.name, dict(params)))

    @staticmethod
    def _insights_status(model: Any, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        body = json.loads(params["body"])
        name = "-".join(filter(None, (body["TableName"], body.get("IndexName"))))
        return _answer(
            model,
            {
                "TableName": body["TableName"],
                **({"IndexName": body["IndexName"]} if body.get("IndexName") else {}),
                "ContributorInsightsStatus": "ENABLED",
                "ContributorInsightsMode": "THROTTLED_KEYS",
                "ContributorInsightsRuleList": [f"DynamoDBContributorInsights-PKT-{name}-1796000000000"],
            },
        )

    @staticmethod
    def _insights_report(model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        return _answer(model, {"Contributors": [], "KeyLabels": ["pk"], "AggregationStatistic": "Sum"})


@pytest.fixture
def top_calls(stats_table_name: str, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, dict[str, Any]]]:
    """Every call of `hotkeys top` (default, every index, and JSON) on figures of a table with GSIs."""
    from hotkeys.cli.replay import run_replay
    from hotkeys.emulator.local import LocalResources

    run_replay([str(EVENTS / "gsi-back-pressure.json.gz")], LocalResources(stats_table_name))
    RecordingClients.calls = []
    monkeypatch.setattr(common, "AwsClients", RecordingClients)
    since = ["--since", "2000-01-01T00:00:00Z"]
    for extra in (since, [*since, "--index", "all"], [*since, "--json"], ["--last", "1", "--table", SOURCE]):
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["top", "--stats-table", stats_table_name, *extra]) == 0
    return RecordingClients.calls


def filled_policy(stats_table: str) -> dict[str, Any]:
    """The documented policy with its placeholders filled in for this run."""
    policy = json.dumps(documented_policy())
    for placeholder, value in (
        ("REGION", REGION),
        ("ACCOUNT", ACCOUNT),
        ("STATS_TABLE", stats_table),
        ("TABLE", SOURCE),
    ):
        policy = re.sub(rf"\b{placeholder}\b", value, policy)
    filled: dict[str, Any] = json.loads(policy)
    return filled


def _denied(policy: dict[str, Any], calls: list[tuple[str, str, dict[str, Any]]]) -> list[tuple[str, str]]:
    needed = {
        (f"{IAM_PREFIX.get(service, service)}:{operation}", resource_of(service, operation, params))
        for service, operation, params in calls
    }
    return sorted(need for need in needed if not allows(policy, *need))


def test_the_documented_policy_allows_every_call_top_makes(
    top_calls: list[tuple[str, str, dict[str, Any]]], stats_table_name: str
) -> None:
    # Given the calls of `hotkeys top`, the throttle picture's included (the table, each of its GSIs, each rule)
    operations = {(service, operation) for service, operation, _ in top_calls}
    assert operations >= {
        ("dynamodb", "DescribeTable"),
        ("dynamodb", "Query"),
        ("dynamodb", "DescribeContributorInsights"),
        ("cloudwatch", "GetInsightRuleReport"),
    }
    indexes = {p.get("IndexName") for _, op, p in top_calls if op == "DescribeContributorInsights"}
    assert indexes == {None, "by-status", "by-merchant"}
    # Then the documented policy allows each of them on the resource it acts on
    assert _denied(filled_policy(stats_table_name), top_calls) == []


def test_the_documented_policy_is_scoped_and_each_statement_is_needed(
    top_calls: list[tuple[str, str, dict[str, Any]]], stats_table_name: str
) -> None:
    policy = filled_policy(stats_table_name)
    for statement in policy["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        # no action wildcard, no resource '*'
        assert all("*" not in action for action in actions) and "*" not in resources, statement
        # and without any one of its actions, some call of `top` is denied
        for action in actions:
            narrowed = [
                {**s, "Action": [a for a in actions if a != action]} if s is statement else s
                for s in policy["Statement"]
            ]
            assert _denied({**policy, "Statement": narrowed}, top_calls), (statement.get("Sid"), action)
