"""The throttle explainer's construct on its own stack (alarms made here, as ``ThrottleAlarms`` makes them):
invoked by every throttle alarm, and every permission scoped to what it reads and where it publishes."""

from __future__ import annotations

import fnmatch
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Duration, Stack, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sns as sns
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

from infra.detector_function import FunctionBase
from infra.throttle_alarms import insights_query
from infra.throttle_explainer import ThrottleExplainer, ThrottleExplainerProps
from tests.infra.conftest import written_out

LAYER = "arn:aws:lambda:eu-west-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python313-arm64:7"


def _flat(value: Any) -> Any:
    """A template value with its intrinsic functions written out (``${AWS::Region}``, ``${Logical.Arn}``)."""
    return written_out(value, lambda name: f"${{{name}}}", lambda logical_id, name: f"${{{logical_id}.{name}}}")


@pytest.fixture(scope="module")
def synthesized() -> tuple[dict[str, Any], dict[str, Any]]:
    """The stack synthesized with the project's cdk-nag packs (as ``infra.app_factory`` adds them): the
    template, and the validation report. The resources made here for the test are nag-clean themselves."""
    outdir = tempfile.mkdtemp(prefix="cdk-explainer-")
    app = App(outdir=outdir)
    Validations.of(app).add_plugins(AwsSolutionsChecks(), ServerlessChecks())
    stack = Stack(app, "Explainer")
    topic = sns.Topic(stack, "Alerts", enforce_ssl=True)
    stats = dynamodb.Table(
        stack,
        "Stats",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
    )

    def alarm(name: str, metric: str, **dimensions: str) -> cloudwatch.Alarm:
        watched = cloudwatch.Metric(namespace="AWS/DynamoDB", metric_name=metric, dimensions_map=dimensions)
        return cloudwatch.Alarm(
            stack, name, metric=watched, threshold=1, evaluation_periods=1, alarm_name=f"Explainer-throttle-{name}"
        )

    alarms = {
        "orders": alarm("OrdersWrite", "WriteKeyRangeThroughputThrottleEvents", TableName="orders"),
        "orders/by-status": alarm(
            "OrdersByStatusWrite",
            "WriteKeyRangeThroughputThrottleEvents",
            TableName="orders",
            GlobalSecondaryIndexName="by-status",
        ),
        # a table the stack does not own: its GSIs unknown at synth, one query sums them (as ThrottleAlarms)
        "users/*": cloudwatch.Alarm(
            stack,
            "UsersAnyIndexWrite",
            metric=cloudwatch.MathExpression(
                expression=insights_query("WriteKeyRangeThroughputThrottleEvents", "users"),
                using_metrics={},
                period=Duration.minutes(1),
            ),
            threshold=1,
            evaluation_periods=1,
            alarm_name="Explainer-throttle-UsersAnyIndexWrite",
        ),
    }
    ThrottleExplainer(
        stack,
        "ThrottleExplainer",
        ThrottleExplainerProps(
            alarms=alarms,
            alarm_name_prefix="Explainer-throttle-",
            topic=topic,
            stats_table=stats,
            tables={"orders": ["by-status"], "users": None},
            functions=FunctionBase(log_retention_days=30, powertools_layer_arn=LAYER),
        ),
    )
    app.synth()  # raises ValidationFailed on any unacknowledged cdk-nag finding
    template = json.loads((Path(outdir) / "Explainer.template.json").read_text())
    report = json.loads((Path(outdir) / "validation-report.json").read_text())
    return dict(_flat(template)), report


@pytest.fixture(scope="module")
def template(synthesized: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    return synthesized[0]


def test_cdk_nag_passes_and_every_wildcard_is_acknowledged_for_its_rule_arn(
    synthesized: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    report = synthesized[1]
    suppressed = [v for plugin in report["pluginReports"] for v in plugin.get("suppressedViolations", [])]
    rules = sorted(v["acknowledgedId"] for v in suppressed if "insight-rule" in v["acknowledgedId"])
    assert len(rules) == 4 and all(r.endswith("-*]") for r in rules)
    assert all(plugin["conclusion"] == "success" for plugin in report["pluginReports"])


def _of(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def _explainer(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    (found,) = [
        (k, v)
        for k, v in _of(template, "AWS::Lambda::Function").items()
        if v["Properties"]["Handler"] == "hotkeys.detector.handlers.throttle_app.handler"
    ]
    return found


def _statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        s for p in _of(template, "AWS::IAM::Policy").values() for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_every_throttle_alarm_invokes_the_explainer_and_only_cloudwatch_alarms_may(template: dict[str, Any]) -> None:
    name, function = _explainer(template)
    # (the throttle alarms made in this test, and no other: the stack has Monitoring alarm on the explainer's
    # failed invocations, tests/infra/test_stack.py)
    alarms = _of(template, "AWS::CloudWatch::Alarm")
    assert len(alarms) == 3
    for alarm in alarms.values():
        assert alarm["Properties"]["AlarmActions"] == [f"${{{name}.Arn}}"]
    # One statement for them all (a function's resource policy is capped at 20 KB): the account's alarms
    # whose names start with the prefix every throttle alarm's name has
    (permission,) = [p["Properties"] for p in _of(template, "AWS::Lambda::Permission").values()]
    assert permission == {
        "Action": "lambda:InvokeFunction",
        "FunctionName": f"${{{name}.Arn}}",
        "Principal": "lambda.alarms.cloudwatch.amazonaws.com",
        "SourceAccount": "${AWS::AccountId}",
        "SourceArn": "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:Explainer-throttle-*",
    }
    assert all(a["Properties"]["AlarmName"].startswith("Explainer-throttle-") for a in alarms.values())
    environment = function["Properties"]["Environment"]["Variables"]
    assert set(environment) >= {"ALERT_TOPIC_ARN", "STATS_TABLE_NAME"}


def test_every_statement_is_scoped(template: dict[str, Any]) -> None:
    by_action: dict[str, list[Any]] = {}
    for statement in _statements(template):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        for action in actions:
            by_action.setdefault(action, []).extend(resources)
            if resources == ["*"]:
                assert action.startswith("xray:"), statement
    rule = "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:insight-rule/"
    rule += "DynamoDBContributorInsights-PKT-"
    assert sorted(by_action["cloudwatch:GetInsightRuleReport"]) == sorted(
        [f"{rule}orders-*", f"{rule}orders-by-status-*", f"{rule}by-status-*", f"{rule}users-*"]
    )
    table = "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/"
    assert sorted(by_action["dynamodb:DescribeContributorInsights"]) == [
        f"{table}orders",
        f"{table}orders/index/by-status",
        f"{table}users",
        f"{table}users/index/*",
    ]
    topic = next(k for k in _of(template, "AWS::SNS::Topic"))
    assert by_action["sns:Publish"] == [f"${{{topic}}}"]
    (query,) = [s for s in _statements(template) if s["Action"] == "dynamodb:Query"]
    stats = next(k for k in _of(template, "AWS::DynamoDB::Table"))
    assert query["Resource"] == f"${{{stats}.Arn}}"
    assert query["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["INC#*"]}}
    assert set(by_action) == {
        "cloudwatch:GetInsightRuleReport",
        "dynamodb:DescribeContributorInsights",
        "dynamodb:DescribeTable",
        "dynamodb:Query",
        "sns:Publish",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        "sqs:SendMessage",
        "sqs:GetQueueAttributes",
        "sqs:GetQueueUrl",
    }


def test_gsis_unknown_at_synth_are_listed_on_their_tables_only_and_their_rules_are_the_tables_own(
    template: dict[str, Any],
) -> None:
    # users' GSIs are unknown at synth: its every-GSI alarm makes the explainer list them (DescribeTable), on
    # users alone (orders' GSIs are known), in the stack's partition, region and account
    (listing,) = [s for s in _statements(template) if "dynamodb:DescribeTable" in json.dumps(s["Action"])]
    assert (listing["Action"], listing["Effect"], listing.get("Condition")) == ("dynamodb:DescribeTable", "Allow", None)
    assert listing["Resource"] == "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/users"
    # and a GSI's throttled-keys rule (AWS's examples: DynamoDBContributorInsights-PKT-<table>-<index>-<created>)
    # is within the grant for users' rules, whatever its index is called; another table's is not
    (reports,) = [s for s in _statements(template) if s["Action"] == "cloudwatch:GetInsightRuleReport"]
    arn = "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:insight-rule/"
    arn += "DynamoDBContributorInsights-PKT-"
    granted = reports["Resource"] if isinstance(reports["Resource"], list) else [reports["Resource"]]
    assert any(fnmatch.fnmatchcase(f"{arn}users-by-email-1796000000000", g) for g in granted)
    assert not any(fnmatch.fnmatchcase(f"{arn}payments-by-email-1796000000000", g) for g in granted)
