"""Contributor Insights (throttled keys) on every watched table and GSI, and alarms on DynamoDB's throttle metrics."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest

from infra.demo_table import DemoTable
from tests.infra.conftest import CUSTOMER_KEY, EXISTING_STREAM, MODES, Synthesized

pytestmark = pytest.mark.infra
# AWS's names (DynamoDB developer guide, "CloudWatch throttling metrics"), written out: a typo in the
# stack's catalogue must fail here, not be copied.
DOCUMENTED_METRICS = {
    "ReadKeyRangeThroughputThrottleEvents",
    "WriteKeyRangeThroughputThrottleEvents",
    "ReadMaxOnDemandThroughputThrottleEvents",
    "WriteMaxOnDemandThroughputThrottleEvents",
    "ReadProvisionedThroughputThrottleEvents",
    "WriteProvisionedThroughputThrottleEvents",
    "ReadAccountLimitThrottleEvents",
    "WriteAccountLimitThrottleEvents",
}
EXISTING_MODES = ("existing", "enable", "multi", "kinesis", "enable-kinesis")


def _throttle_alarms(synth: Synthesized) -> list[dict[str, Any]]:
    found = []
    for alarm in synth.resources("AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        # (each table's StreamUnread alarm reads DynamoDB's writes too: tests/infra/test_stream_unread.py)
        unread = any(metric.get("Id") == "written" for metric in props.get("Metrics", []))
        if not unread and (
            props.get("Namespace") == "AWS/DynamoDB" or "AWS/DynamoDB" in json.dumps(props.get("Metrics", ""))
        ):
            found.append(props)
    return found


def _statements_of(synth: Synthesized, contains: str) -> list[dict[str, Any]]:
    return [
        statement
        for logical_id, policy in synth.resources("AWS::IAM::Policy").items()
        if contains in logical_id
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def test_the_demo_table_alarms_on_each_throttle_cause_of_the_table(demo: Synthesized) -> None:
    # Given the demo table (created by the stack, no GSI)
    table = demo.logical_id("AWS::DynamoDB::GlobalTable", "DemoTable")
    topic = {"Ref": demo.logical_id("AWS::SNS::Topic")}
    alarms = _throttle_alarms(demo)
    explainer = {"Fn::GetAtt": [demo.logical_id("AWS::Lambda::Function", "ThrottleExplainer"), "Arn"]}
    # Then one alarm per documented metric, on the table's own dimension, summed over a minute, firing on one event
    assert sorted(a["MetricName"] for a in alarms) == sorted(DOCUMENTED_METRICS)
    for alarm in alarms:
        assert alarm["Dimensions"] == [{"Name": "TableName", "Value": {"Ref": table}}]
        assert (alarm["Statistic"], alarm["Period"], alarm["Threshold"]) == ("Sum", 60, 1)
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert alarm["TreatMissingData"] == "notBreaching"
        # and it notifies the alert topic when it fires and when it clears, like the stack's other alarms,
        # and invokes the throttle explainer when it fires
        assert alarm["AlarmActions"] == [topic, explainer] and alarm["OKActions"] == [topic]
    # and each alarm says which limit was hit and what fixes it
    by_metric = {a["MetricName"]: a["AlarmDescription"] for a in alarms}
    assert "partition advice" in by_metric["WriteKeyRangeThroughputThrottleEvents"]
    assert "OnDemandThroughput" in by_metric["ReadMaxOnDemandThroughputThrottleEvents"]
    assert "not a key problem" in by_metric["WriteProvisionedThroughputThrottleEvents"]
    assert "quota" in by_metric["WriteAccountLimitThrottleEvents"]


@pytest.mark.parametrize("mode", EXISTING_MODES)
def test_an_existing_table_alarms_on_its_own_metrics_and_on_every_gsi_it_has(synthesized: dict, mode: str) -> None:
    synth = synthesized[mode]
    tables = MODES[mode].get("tableNames", MODES[mode].get("tableName", "")).split(",")
    alarms = _throttle_alarms(synth)
    for table in tables:
        own = [a for a in alarms if a.get("Dimensions") == [{"Name": "TableName", "Value": table}]]
        assert sorted(a["MetricName"] for a in own) == sorted(DOCUMENTED_METRICS)
        # The GSIs are not known at synth time: a Metrics Insights query per metric sums it over the table's
        # GSIs (the metric with both dimensions), so an index added later is watched without a redeploy
        queries = [a["Metrics"] for a in alarms if f"WHERE TableName = '{table}'" in json.dumps(a.get("Metrics", ""))]
        expressions = set()
        for (query,) in queries:
            assert (query["Period"], query["ReturnData"]) == (60, True)
            expressions.add(query["Expression"])
        assert expressions == {
            f'SELECT SUM({metric}) FROM SCHEMA("AWS/DynamoDB", GlobalSecondaryIndexName, TableName) '
            f"WHERE TableName = '{table}'"
            for metric in DOCUMENTED_METRICS
        }
    assert len(alarms) == len(tables) * 2 * len(DOCUMENTED_METRICS)


@pytest.mark.parametrize("mode", EXISTING_MODES)
def test_the_explainer_reads_each_every_gsi_query_and_may_list_those_tables_gsis(synthesized: dict, mode: str) -> None:
    from hotkeys.detector.throttling.throttle_explainer import parse_alarm_event
    from tests.infra.conftest import written_out

    synth = synthesized[mode]
    tables = MODES[mode].get("tableNames", MODES[mode].get("tableName", "")).split(",")
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "cloudwatch-alarm-lambda-action-metrics-insights.json"
    read = set()
    for alarm in _throttle_alarms(synth):
        if "Metrics" not in alarm:
            continue
        # The alarm's query as its Lambda action's event carries it (tests/fixtures/README.md)
        (query,) = alarm["Metrics"]
        event = json.loads(fixture.read_text())
        event["alarmData"]["configuration"]["metrics"] = [
            {"id": query["Id"], "expression": query["Expression"], "period": query["Period"], "returnData": True}
        ]
        change = parse_alarm_event(event)
        assert change.unread == []
        ((name, table, index, every_index, period),) = [
            (m.name, m.table, m.index, m.every_index, m.period) for m in change.metrics
        ]
        assert (index, every_index, period) == (None, True, 60)
        read.add((table, name))
    # the explainer tells each query's table and metric: every GSI of each watched table, each documented cause
    assert read == {(table, metric) for table in tables for metric in DOCUMENTED_METRICS}
    # and may list those tables' GSIs (DescribeTable), on those tables alone, in the stack's partition
    listing = [s for s in _statements_of(synth, "ThrottleExplainer") if "dynamodb:DescribeTable" in _actions(s)]
    assert [_actions(s) for s in listing] == [{"dynamodb:DescribeTable"}]
    resources = written_out(listing[0]["Resource"], lambda name: f"${{{name}}}", lambda i, a: f"${{{i}.{a}}}")
    assert sorted(resources if isinstance(resources, list) else [resources]) == sorted(
        f"arn:${{AWS::Partition}}:dynamodb:${{AWS::Region}}:${{AWS::AccountId}}:table/{table}" for table in tables
    )


def test_the_construct_names_each_alarms_table_index_and_cause() -> None:
    # What an alarm action added later (the explainer) reads: ThrottleAlarms.alarms and .targets share keys
    import os
    import tempfile

    from infra.app_factory import build_app
    from infra.throttle_alarms import ANY_INDEX

    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    _app, stack = build_app(
        {"tableName": "orders", "tableStreamArn": MODES["existing"]["tableStreamArn"]},
        outdir=tempfile.mkdtemp(prefix="cdk-alarms-"),
    )
    alarms = stack.throttle_alarms.alarms
    targets = stack.throttle_alarms.targets
    assert set(alarms) == set(targets) and len(alarms) == 16
    target = targets["orders/*/WriteKeyRangeThroughputThrottleEvents"]
    assert (target.table_name, target.index, target.operation, target.cause) == (
        "orders",
        ANY_INDEX,
        "Write",
        "KeyRange",
    )
    table_target = targets["orders/ReadMaxOnDemandThroughputThrottleEvents"]
    assert (table_target.index, table_target.operation, table_target.cause) == (None, "Read", "MaxOnDemand")


@pytest.mark.parametrize("mode", EXISTING_MODES)
def test_existing_tables_get_throttled_keys_insights_from_the_custom_resource(synthesized: dict, mode: str) -> None:
    synth = synthesized[mode]
    tables = MODES[mode].get("tableNames", MODES[mode].get("tableName", "")).split(",")
    resources = synth.resources("Custom::ThrottledKeyInsights")
    # One resource per watched table, handled by the project's own code
    assert sorted(r["Properties"]["TableName"] for r in resources.values()) == sorted(tables)
    handlers = {
        f["Properties"]["Handler"]
        for f in synth.resources("AWS::Lambda::Function").values()
        if "insights_enabler_app" in str(f["Properties"].get("Handler"))
    }
    assert handlers == {"hotkeys.detector.handlers.insights_enabler_app.on_event"}
    # Its role may describe each watched table and change Contributor Insights on it and its indexes, nothing else
    statements = _statements_of(synth, "ThrottleInsightsProviderOnEventRole")
    dynamodb = [s for s in statements if any(a.startswith("dynamodb:") for a in _actions(s))]
    granted = {a for s in dynamodb for a in _actions(s)}
    assert granted == {
        "dynamodb:DescribeTable",
        "dynamodb:DescribeContributorInsights",
        "dynamodb:UpdateContributorInsights",
        # the owners of what it turned on are recorded in the table's tags (docs/decisions.md §68)
        "dynamodb:ListTagsOfResource",
        "dynamodb:TagResource",
        "dynamodb:UntagResource",
    }
    # Tags are the tables' own: every statement granting a tag action names the watched tables alone (no index)
    tagging = [s for s in dynamodb if _actions(s) & {"dynamodb:TagResource", "dynamodb:UntagResource"}]
    tagged = {
        json.dumps(resource)
        for s in tagging
        for resource in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
    }
    assert len(tagged) == len(tables)
    assert all(any(f':table/{t}"' in r for t in tables) and "/index/" not in r for r in tagged)
    scoped = {
        json.dumps(resource)
        for s in dynamodb
        for resource in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
    }
    expected = {f':table/{t}"' for t in tables} | {f":table/{t}/index/*" for t in tables}
    assert {next(e for e in expected if e in r) for r in scoped} == expected
    assert all(any(e in r for e in expected) for r in scoped)
    # and create the service-linked role DynamoDB uses for the rules, that role only
    (slr,) = [s for s in statements if "iam:CreateServiceLinkedRole" in _actions(s)]
    assert "AWSServiceRoleForDynamoDBCloudWatchContributorInsights" in json.dumps(slr["Resource"])
    assert slr["Condition"] == {"StringLike": {"iam:AWSServiceName": "contributorinsights.dynamodb.amazonaws.com"}}


def test_each_tables_insights_resource_keeps_its_logical_id_when_the_table_list_changes(synthesized: dict) -> None:
    # Given the stack of -c tableNames=orders,users, and the same stack synthesized with users alone
    from infra.app_factory import STACK_NAME, build_app

    outdir = tempfile.mkdtemp(prefix="cdk-users-")
    app, _stack = build_app({**MODES["multi"], "tableNames": "users"}, outdir=outdir)
    app.synth()
    shorter = json.loads((Path(outdir) / f"{STACK_NAME}.template.json").read_text())

    def by_table(template: dict[str, Any]) -> dict[str, str]:
        return {
            resource["Properties"]["TableName"]: logical_id
            for logical_id, resource in template["Resources"].items()
            if resource["Type"] == "Custom::ThrottledKeyInsights"
        }

    both, users_only = by_table(synthesized["multi"].template), by_table(shorter)
    # Then users' resource has the same logical id in both (CloudFormation neither updates it to another
    # table nor deletes it): the id follows the name, not the position in the list
    assert set(both) == {"orders", "users"} and set(users_only) == {"users"}
    assert users_only["users"] == both["users"]
    assert both["users"].startswith("Insightsusers") and both["orders"].startswith("Insightsorders")


def test_insights_construct_ids_keep_names_apart_and_stay_within_cloudformations_limit() -> None:
    from infra.throttle_insights import construct_id

    # Table names: 3 to 255 characters of a-z, A-Z, 0-9, '_', '-', '.'
    names = ["my-table", "my.table", "my_table", "mytable", "t" * 255, "t" * 254 + "u"]
    ids = [construct_id(name) for name in names]
    assert len(set(ids)) == len(ids)
    # CDK adds the child's id and its own 8-character hash: far under the 255 characters of a logical id
    assert all(re.fullmatch(r"[A-Za-z0-9]{1,100}", i) for i in ids)
    assert construct_id("orders") == construct_id("orders")


def test_the_insights_resource_waits_for_the_stream_it_would_race(synthesized: dict) -> None:
    synth = synthesized["enable"]
    (insights,) = [k for k in synth.resources("Custom::ThrottledKeyInsights")]
    (stream,) = synth.resources("Custom::DynamoDBStream")
    assert stream in synth.template["Resources"][insights].get("DependsOn", [])


def test_an_encrypted_table_lets_the_insights_handler_decrypt_through_dynamodb_only(synthesized: dict) -> None:
    (statement,) = [
        s for s in _statements_of(synthesized["multi"], "ThrottleInsights") if s.get("Sid") == "InsightsEncryptedTables"
    ]
    assert _actions(statement) == {"kms:Decrypt"} and statement["Resource"] == MODES["multi"]["tableKmsKeyArns"]
    assert "kms:ViaService" in statement["Condition"]["StringEquals"]


def test_the_demo_table_sets_throttled_keys_mode_itself(demo: Synthesized) -> None:
    replica = demo.template["Resources"][demo.logical_id("AWS::DynamoDB::GlobalTable", "DemoTable")]["Properties"][
        "Replicas"
    ][0]
    assert replica["ContributorInsightsSpecification"] == {"Enabled": True, "Mode": "THROTTLED_KEYS"}
    assert not demo.resources("Custom::ThrottledKeyInsights")


def test_the_opt_out_leaves_contributor_insights_alone_and_keeps_the_alarms(synthesized: dict) -> None:
    synth = synthesized["no-insights"]
    assert not synth.resources("Custom::ThrottledKeyInsights")
    assert not [f for f in synth.resources("AWS::Lambda::Function").values() if "insights" in json.dumps(f).lower()]
    assert len(_throttle_alarms(synth)) == 2 * len(DOCUMENTED_METRICS)


def test_the_opt_out_of_the_demo_table_sets_no_insights() -> None:
    from aws_cdk import App, Stack
    from aws_cdk.assertions import Template

    stack = Stack(App(), "Demo")
    DemoTable(stack, "DemoTable", throttled_key_insights=False)
    (table,) = Template.from_stack(stack).find_resources("AWS::DynamoDB::GlobalTable").values()
    assert "ContributorInsights" not in json.dumps(table)


def _graphed(widgets: list[dict[str, Any]]) -> list[tuple[str, list[Any]]]:
    """(title, metric line) for every line of every graph on a dashboard."""
    return [
        (w["properties"]["title"], line)
        for w in widgets
        if w["type"] == "metric"
        for line in w["properties"].get("metrics", [])
    ]


def _written(value: Any) -> Any:
    """An alarm's dimension value as a dashboard body holds it (``Synthesized.dashboard_widgets``)."""
    return f"${{{value['Ref']}}}" if isinstance(value, dict) else value


def _assert_each_throttle_alarm_is_graphed(alarms: list[dict[str, Any]], widgets: list[dict[str, Any]]) -> None:
    """Each alarm's metric is a line of a graph named for its table (or GSI), as the alarm evaluates it; an
    alarm over every GSI of a table (a Metrics Insights sum) is a search for its metric on each of them."""
    lines = _graphed(widgets)
    for alarm in alarms:
        if "MetricName" in alarm:
            dimensions = [item for d in alarm["Dimensions"] for item in (d["Name"], _written(d["Value"]))]
            expected = ["AWS/DynamoDB", alarm["MetricName"], *dimensions]
            found = [(title, line) for title, line in lines if line[:-1] == expected]
            assert len(found) == 1, (expected, lines)
            ((title, line),) = found
            assert line[-1] == {"label": alarm["MetricName"], "period": alarm["Period"], "stat": alarm["Statistic"]}
            index = dict(zip(dimensions[::2], dimensions[1::2], strict=True)).get("GlobalSecondaryIndexName")
            assert title.endswith(f"{'table' if index is None else f'GSI {index}'} (alarm at 1 a minute)"), title
        else:
            ((query,),) = [alarm["Metrics"]]
            table = query["Expression"].split("WHERE TableName = ")[1].strip("'")
            metric = query["Expression"].split("SUM(")[1].split(")")[0]
            searches = [
                line[0]["expression"]
                for title, line in lines
                if isinstance(line[0], dict) and f'TableName="{table}"' in line[0].get("expression", "")
            ]
            assert len(searches) == 1, (table, lines)
            (search,) = searches
            assert search.startswith("SEARCH('{AWS/DynamoDB,GlobalSecondaryIndexName,TableName} ")
            assert search.endswith("', 'Sum', 60)") and f'MetricName="{metric}"' in search


@pytest.mark.parametrize("mode", ["demo", *EXISTING_MODES])
def test_the_dashboard_graphs_each_throttle_alarm_per_table_and_gsi(synthesized: dict, mode: str) -> None:
    synth = synthesized[mode]
    alarms = _throttle_alarms(synth)
    widgets = synth.dashboard_widgets()
    _assert_each_throttle_alarm_is_graphed(alarms, widgets)
    # one graph per table, and one per table over its GSIs where the stack does not know them
    throttle_graphs = [w for w in widgets if w["properties"].get("title", "").startswith("DynamoDB throttle events")]
    tables = len(MODES[mode].get("tableNames", MODES[mode].get("tableName", "demo")).split(","))
    assert len(throttle_graphs) == tables * (1 if mode == "demo" else 2)


def test_a_created_tables_gsi_has_its_own_throttle_graph() -> None:
    # Given a table whose GSI the stack declares (as a created table's WatchedTable.indexes)
    from aws_cdk import App, Stack
    from aws_cdk import aws_cloudwatch as cloudwatch
    from aws_cdk import aws_dynamodb as dynamodb
    from aws_cdk import aws_sns as sns
    from aws_cdk.assertions import Template

    from infra.detector import WatchedTable
    from infra.throttle_alarms import ThrottleAlarms
    from tests.infra.conftest import EXISTING_STREAM

    stack = Stack(App(), "Throttles")
    table = dynamodb.Table.from_table_attributes(stack, "Orders", table_name="orders", table_stream_arn=EXISTING_STREAM)
    alarms = ThrottleAlarms(
        stack,
        "ThrottleAlarms",
        tables=[WatchedTable(name="orders", table=table, indexes=("by-status",))],
        topic=sns.Topic(stack, "Alerts"),
    )
    cloudwatch.Dashboard(stack, "Dashboard").add_widgets(*alarms.widgets())
    template = Template.from_stack(stack).to_json()
    synth = Synthesized(template=template, report={}, template_path=Path("."))
    # Then the table and the GSI each have their graph, a line per alarmed metric
    throttle_alarms = _throttle_alarms(synth)
    assert len(throttle_alarms) == 2 * len(DOCUMENTED_METRICS)
    widgets = synth.dashboard_widgets()
    _assert_each_throttle_alarm_is_graphed(throttle_alarms, widgets)
    assert [w["properties"]["title"] for w in widgets] == [
        "DynamoDB throttle events: orders table (alarm at 1 a minute)",
        "DynamoDB throttle events: orders GSI by-status (alarm at 1 a minute)",
    ]


@pytest.mark.parametrize(
    ("context", "concern"),
    [
        ({"tableKmsKeyArns": CUSTOMER_KEY}, "customer-managed KMS keys"),
        ({"keyDisplay": "hash", "keyHashSalt": "s" * 32}, "alerts hash the keys"),
    ],
)
def test_contributor_insights_is_off_by_default_where_its_reports_would_show_protected_keys(
    context: dict[str, str], concern: str
) -> None:
    # AWS (UpdateContributorInsights): its graphs show keys in plaintext; with a KMS-encrypted table "you
    # should not enable" it. Off by default there; asked for, it is on with a synth warning naming why.
    from aws_cdk.assertions import Annotations, Match, Template

    from infra.app_factory import build_app

    existing = {"tableName": "orders", "tableStreamArn": EXISTING_STREAM}
    _app, quiet = build_app({**existing, **context})
    assert not Template.from_stack(quiet).find_resources("Custom::ThrottledKeyInsights")
    assert not Annotations.from_stack(quiet).find_warning("*", Match.string_like_regexp("plaintext"))
    _app, asked = build_app({**existing, **context, "throttledKeyInsights": "true"})
    assert Template.from_stack(asked).find_resources("Custom::ThrottledKeyInsights")
    (warning,) = Annotations.from_stack(asked).find_warning("*", Match.string_like_regexp("plaintext"))
    assert concern in str(warning.entry.data)
    # Without either, on by default and silent
    _app, plain = build_app(existing)
    assert Template.from_stack(plain).find_resources("Custom::ThrottledKeyInsights")
    assert not Annotations.from_stack(plain).find_warning("*", Match.string_like_regexp("plaintext"))
