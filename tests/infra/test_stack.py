"""Properties of the synthesized template: what `cdk deploy` would create, in every source-table mode."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from hotkeys.cli import cost
from hotkeys.deployment import (
    EVENT_SOURCE,
    ITERATOR_AGE_ALARM_MS,
    POWERTOOLS_VERSION,
    STREAM_MAPPING_TYPE,
    ReadingPlan,
)
from hotkeys.detector.adapters.stats_schema import HEADS_ATTRIBUTES, HEADS_INDEX, HEADS_PARTITION_KEY, HEADS_SORT_KEY
from tests.infra.conftest import CUSTOMER_KEY, EXISTING_STREAM, MODES, WEBHOOK_SECRET, Synthesized

pytestmark = pytest.mark.infra
SECURITY_DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"
ALLOWED_ON_STAR = {
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "dynamodb:ListStreams",
    # the stream mappings' handler: listing, and creating under a lambda:FunctionArn condition (pinned below)
    "lambda:ListEventSourceMappings",
    "lambda:CreateEventSourceMapping",
    # the Kinesis streaming handlers (-c enableKinesis): EnableKinesisStreamingDestination requires it
    "kinesis:ListStreams",
    "cloudwatch:GetMetricData",  # the judge's read of the consumer's IteratorAge (no resource-level permissions)
    # compliance mode: Lambda's VPC access, and the stream enabler's waiter (X-Ray, its logs' delivery)
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
}


def _statements(synth: Synthesized) -> list[dict[str, Any]]:
    statements = []
    for policy in synth.resources("AWS::IAM::Policy").values():
        statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return statements


def _actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def _function_id(synth: Synthesized, handler: str) -> str:
    (found,) = [
        logical_id
        for logical_id, function in synth.resources("AWS::Lambda::Function").items()
        if function["Properties"].get("Handler") == handler
    ]
    return found


def _consumer_statements(synth: Synthesized) -> list[dict[str, Any]]:
    policy_id = synth.logical_id("AWS::IAM::Policy", "DetectorConsumerRole")
    return synth.template["Resources"][policy_id]["Properties"]["PolicyDocument"]["Statement"]


@pytest.mark.parametrize("mode", list(MODES))
def test_cdk_nag_is_clean_and_every_acknowledgment_has_a_reason(synthesized: dict, mode: str) -> None:
    report = synthesized[mode].report
    for plugin in report["pluginReports"]:
        assert plugin["conclusion"] == "success", plugin["pluginName"]
        assert plugin["violations"] == []
        for suppressed in plugin.get("suppressedViolations", []):
            assert len(suppressed.get("reason", "")) > 20, suppressed["ruleName"]
    assert {p["pluginName"] for p in report["pluginReports"]} >= {"AwsSolutions", "Serverless"}


def _mappings(synth: Synthesized) -> list[dict[str, Any]]:
    """Each stream mapping's CreateEventSourceMapping parameters (Custom::StreamMapping's properties)."""
    found = []
    for resource in synth.resources(STREAM_MAPPING_TYPE).values():
        properties = resource["Properties"]
        found.append({**properties["Settings"], **{k: v for k, v in properties.items() if k != "Settings"}})
    return found


@pytest.mark.parametrize("mode", list(MODES))
def test_streams_are_mapped_by_the_projects_handler_only_after_the_consumers_grants(
    synthesized: dict, mode: str
) -> None:
    synth = synthesized[mode]
    # No CloudFormation mapping of a stream: it would be replaced (and roll back) on a starting position
    # change (the judge's queue is the one mapping there is: infra/test_judge.py)
    judge_queue = synth.logical_id("AWS::SQS::Queue", "DetectorJudgeLooks")
    (queue_mapping,) = synth.resources("AWS::Lambda::EventSourceMapping").values()
    assert queue_mapping["Properties"]["EventSourceArn"] == {"Fn::GetAtt": [judge_queue, "Arn"]}
    consumer = synth.logical_id("AWS::Lambda::Function", "DetectorConsumer")
    role_policy = synth.logical_id("AWS::IAM::Policy", "DetectorConsumerRole")
    for resource in synth.resources(STREAM_MAPPING_TYPE).values():
        assert resource["Properties"]["FunctionName"] == {"Fn::GetAtt": [consumer, "Arn"]}
        # Lambda checks the role's stream and destination grants when the mapping is created
        assert role_policy in resource["DependsOn"]
    handlers = [
        f["Properties"]["Handler"]
        for f in synth.resources("AWS::Lambda::Function").values()
        if "stream_mapping_app" in str(f["Properties"].get("Handler"))
    ]
    assert handlers == ["hotkeys.detector.handlers.stream_mapping_app.on_event"]
    # Its role changes the consumer's mappings only
    statements = [
        s
        for policy in synth.resources("AWS::IAM::Policy").values()
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if any(a.startswith("lambda:") and "EventSourceMapping" in a for a in _actions(s))
    ]
    changing = [
        s for s in statements if any(a.split(":")[1].startswith(("Create", "Update", "Delete")) for a in _actions(s))
    ]
    assert {a for s in changing for a in _actions(s)} == {
        "lambda:CreateEventSourceMapping",
        "lambda:UpdateEventSourceMapping",
        "lambda:DeleteEventSourceMapping",
    }
    for statement in changing:
        assert statement["Condition"] == {"StringEquals": {"lambda:FunctionArn": {"Fn::GetAtt": [consumer, "Arn"]}}}


@pytest.mark.parametrize("mode", list(MODES))
def test_event_source_mappings_follow_the_shared_settings(synthesized: dict, mode: str) -> None:
    synth = synthesized[mode]
    dlq = synth.logical_id("AWS::SQS::Queue", "DetectorDeadLetters")
    mappings = _mappings(synth)
    assert mappings
    for props in mappings:
        assert props["BisectBatchOnFunctionError"] is True
        assert props["MaximumRetryAttempts"] == EVENT_SOURCE.retry_attempts
        assert 0 < props["MaximumRetryAttempts"] <= 10
        assert props["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": [dlq, "Arn"]}
        assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        assert props["ParallelizationFactor"] == 1
        assert props["BatchSize"] == EVENT_SOURCE.batch_size
        assert props["MaximumBatchingWindowInSeconds"] == EVENT_SOURCE.max_batching_window_seconds
        assert props["TumblingWindowInSeconds"] == EVENT_SOURCE.tumbling_window_seconds


@pytest.mark.parametrize(
    ("mode", "position", "age_hours"),
    [
        # A table the stack creates has no backlog: read it all; records given up after 6 h, well inside
        # the stream's 24 h retention, so redrive can still re-read them
        ("demo", "TRIM_HORIZON", 6),
        # Existing tables start at LATEST: no day-one flood of 6 h-old records into the DLQ
        ("existing", "LATEST", 6),
        ("enable", "LATEST", 6),
        ("multi", "LATEST", 6),
    ],
)
def test_each_source_starts_reading_where_documented(
    synthesized: dict, mode: str, position: str, age_hours: int
) -> None:
    for mapping in _mappings(synthesized[mode]):
        assert mapping["StartingPosition"] == position
        assert mapping["MaximumRecordAgeInSeconds"] == age_hours * 3600


def test_a_backfill_of_an_existing_table_keeps_records_for_the_streams_retention() -> None:
    from hotkeys.deployment import STREAM_RETENTION_HOURS, reading_plan

    assert reading_plan(False, "TRIM_HORIZON", None) == ReadingPlan("TRIM_HORIZON", STREAM_RETENTION_HOURS)
    assert reading_plan(False, None, None) == ReadingPlan("LATEST", 6)
    assert reading_plan(True, None, None) == ReadingPlan("TRIM_HORIZON", 6)
    assert reading_plan(False, "LATEST", 12) == ReadingPlan("LATEST", 12)


def test_demo_table_streams_new_and_old_images_with_ttl_pitr_and_throttle_insights(demo: Synthesized) -> None:
    table_id = demo.logical_id("AWS::DynamoDB::GlobalTable", "DemoTable")
    props = demo.template["Resources"][table_id]["Properties"]
    assert props["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expireAt", "Enabled": True}
    replica = props["Replicas"][0]
    assert replica["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert replica["ContributorInsightsSpecification"] == {"Enabled": True, "Mode": "THROTTLED_KEYS"}
    (mapping,) = _mappings(demo)
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [table_id, "StreamArn"]}


def test_stats_table_is_on_demand_encrypted_with_ttl_and_pitr(demo: Synthesized) -> None:
    props = demo.template["Resources"][demo.logical_id("AWS::DynamoDB::GlobalTable", "Stats")]["Properties"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert props["SSESpecification"]["SSEEnabled"] is True
    assert props["Replicas"][0]["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    # and the window-heads index copies only the heads (never the summaries), keyed as the store queries it
    (heads,) = props["GlobalSecondaryIndexes"]
    assert heads["IndexName"] == HEADS_INDEX
    assert heads["KeySchema"] == [
        {"AttributeName": HEADS_PARTITION_KEY, "KeyType": "HASH"},
        {"AttributeName": HEADS_SORT_KEY, "KeyType": "RANGE"},
    ]
    assert heads["Projection"] == {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(HEADS_ATTRIBUTES)}
    assert "entries_z" not in HEADS_ATTRIBUTES and "ranges_z" not in HEADS_ATTRIBUTES


@pytest.mark.parametrize(("mode", "level"), [("demo", "WARN"), ("multi", "INFO")])
def test_the_consumer_sends_lambdas_start_and_report_records_only_when_asked(
    synthesized: dict[str, Synthesized], mode: str, level: str
) -> None:
    # WARN by default: Lambda's two records per invocation are nearly all of its log bytes (docs/cost.md);
    # -c consumerSystemLogLevel=info (the multi mode) brings them back. Other functions keep Lambda's INFO.
    functions = synthesized[mode].resources("AWS::Lambda::Function").values()
    levels = {
        f["Properties"].get("Handler"): f["Properties"].get("LoggingConfig", {}).get("SystemLogLevel")
        for f in functions
        if "LoggingConfig" in f["Properties"]
    }
    assert levels.pop("hotkeys.detector.handlers.app.handler") == level
    assert levels and set(levels.values()) <= {None, "INFO"}, levels


def test_function_runtime_layer_tracing_and_configuration(demo: Synthesized) -> None:
    (props,) = [
        f["Properties"]
        for f in demo.resources("AWS::Lambda::Function").values()
        if f["Properties"].get("Handler") == "hotkeys.detector.handlers.app.handler"
    ]
    assert props["Runtime"] == "python3.13"
    assert props["Architectures"] == ["arm64"]
    assert props["Handler"] == "hotkeys.detector.handlers.app.handler"
    assert props["TracingConfig"] == {"Mode": "Active"}
    assert props["LoggingConfig"]["LogFormat"] == "JSON"
    assert props["MemorySize"] == 512 and props["Timeout"] == 60
    env = props["Environment"]["Variables"]
    assert env["STATS_TABLE_NAME"] == {"Ref": demo.logical_id("AWS::DynamoDB::GlobalTable", "Stats")}
    assert env["ALERT_TOPIC_ARN"] == {"Ref": demo.logical_id("AWS::SNS::Topic")}
    assert env["WINDOW_SECONDS"] == str(EVENT_SOURCE.tumbling_window_seconds)
    assert env["TTL_ATTRIBUTE"] == "expireAt"
    # The Powertools layer comes from AWS's public parameter for the exact release tested here.
    (layer,) = props["Layers"]
    parameter = demo.template["Parameters"][layer["Ref"]]
    assert parameter["Type"] == "AWS::SSM::Parameter::Value<String>"
    assert parameter["Default"] == f"/aws/service/powertools/python/arm64/python3.13/{POWERTOOLS_VERSION}"
    assert version("aws-lambda-powertools") == POWERTOOLS_VERSION
    # Every function's log group (the consumer's, the judge's, the throttle explainer's, the stream mappings'
    # handler's and its provider framework's) keeps 30 days
    logs = [g["Properties"] for g in demo.resources("AWS::Logs::LogGroup").values()]
    assert len(logs) == 5 and all(g["RetentionInDays"] == 30 for g in logs)


@pytest.mark.parametrize("mode", list(MODES))
def test_every_function_logs_to_a_group_the_stack_keeps_for_its_retention_and_deletes(
    synthesized: dict[str, Synthesized], mode: str
) -> None:
    # The provider framework's functions too: a default group has no retention and outlives `cdk destroy`
    template = synthesized[mode]
    groups = template.resources("AWS::Logs::LogGroup")
    functions = template.resources("AWS::Lambda::Function")
    assert functions
    for logical_id, function in functions.items():
        reference = function["Properties"].get("LoggingConfig", {}).get("LogGroup")
        assert isinstance(reference, dict) and "Ref" in reference, (logical_id, reference)
        group = groups[reference["Ref"]]
        # a year in compliance mode (CT.CLOUDWATCH.PR.2), else logRetentionDays' default
        assert group["Properties"]["RetentionInDays"] == (365 if "compliance" in mode else 30), logical_id
        assert group["DeletionPolicy"] == "Delete" and group["UpdateReplacePolicy"] == "Delete", logical_id


@pytest.mark.parametrize("mode", list(MODES))
def test_every_iam_statement_is_scoped_to_arns(synthesized: dict, mode: str) -> None:
    for statement in _statements(synthesized[mode]):
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        if "*" in resources:
            assert _actions(statement) <= ALLOWED_ON_STAR, statement
        for action in _actions(statement):
            assert "*" not in action or action == "kms:GenerateDataKey*", statement


def test_consumer_permissions_target_the_stats_table_topic_bucket_and_stream(demo: Synthesized) -> None:
    by_sid = {s.get("Sid"): s for s in _consumer_statements(demo)}
    stats_id = demo.logical_id("AWS::DynamoDB::GlobalTable", "Stats")
    assert by_sid["StatsTable"]["Resource"] == {"Fn::GetAtt": [stats_id, "Arn"]}
    # the heads index is the judge's: the consumer reads its own shard's snapshots from the table
    assert not any("/index/" in json.dumps(s["Resource"]) for s in _consumer_statements(demo))
    assert "dynamodb:Scan" not in _actions(by_sid["StatsTable"])
    assert "dynamodb:DeleteItem" not in _actions(by_sid["StatsTable"])
    # deletes are for the archive spool's items only (drained into S3)
    spool = by_sid["ArchiveSpool"]
    assert _actions(spool) == {"dynamodb:DeleteItem"} and spool["Resource"] == {"Fn::GetAtt": [stats_id, "Arn"]}
    assert spool["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["SPOOL#*"]}}
    # and docs/security.md lists exactly these actions
    row = next(line for line in SECURITY_DOC.read_text().splitlines() if line.startswith("| stats table |"))
    documented = {f"dynamodb:{name}" for name in re.findall(r"`(\w+)`", row.split("|")[2])}
    assert documented == _actions(by_sid["StatsTable"]) | _actions(spool)
    assert by_sid["PublishAlerts"]["Resource"] == {"Ref": demo.logical_id("AWS::SNS::Topic")}
    bucket = demo.logical_id("AWS::S3::Bucket", "ArchiveBucket")
    assert by_sid["ArchiveTtlItems"]["Resource"] == {
        "Fn::Join": ["", [{"Fn::GetAtt": [bucket, "Arn"]}, "/ttl-archive/*"]]
    }
    demo_table = demo.logical_id("AWS::DynamoDB::GlobalTable", "DemoTable")
    stream_reads = [s for s in _consumer_statements(demo) if "dynamodb:GetRecords" in _actions(s)]
    assert stream_reads and all(s["Resource"] == {"Fn::GetAtt": [demo_table, "StreamArn"]} for s in stream_reads)


def test_existing_table_mode_reads_the_given_stream_only(synthesized: dict) -> None:
    synth = synthesized["existing"]
    assert not [k for k in synth.resources("AWS::DynamoDB::GlobalTable") if "DemoTable" in k]
    (mapping,) = _mappings(synth)
    assert mapping["EventSourceArn"] == EXISTING_STREAM
    stream_reads = [s for s in _consumer_statements(synth) if "dynamodb:GetRecords" in _actions(s)]
    assert all(s["Resource"] == EXISTING_STREAM for s in stream_reads)


def test_enable_stream_mode_waits_for_the_stream_before_mapping_it(synthesized: dict) -> None:
    # Given the mode that turns a table's stream on
    synth = synthesized["enable"]
    (stream_id, stream) = next(iter(synth.resources("Custom::DynamoDBStream").items()))
    # Then one custom resource per table, handled by the project's own code (enable, then poll until ENABLED)
    assert stream["Properties"]["TableName"] == "orders"
    handlers = {
        f["Properties"]["Handler"]
        for f in synth.resources("AWS::Lambda::Function").values()
        if "stream_enabler_app" in str(f["Properties"].get("Handler"))
    }
    assert handlers == {
        "hotkeys.detector.handlers.stream_enabler_app.on_event",
        "hotkeys.detector.handlers.stream_enabler_app.is_complete",
    }
    waiters = synth.resources("AWS::StepFunctions::StateMachine")
    assert len(waiters) == 1  # the provider framework's is_complete poller
    # The mapping reads the ARN the resource returns once the stream is ENABLED (so it is created after)
    (mapping,) = _mappings(synth)
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [stream_id, "StreamArn"]}
    # The handlers may enable and describe this table's stream, and nothing disables one
    statements = [
        s
        for policy in synth.resources("AWS::IAM::Policy").values()
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if "dynamodb:UpdateTable" in _actions(s)
    ]
    assert statements and all(":table/orders" in json.dumps(s["Resource"]) for s in statements)


def test_several_tables_share_one_detector_with_slack_and_email(synthesized: dict) -> None:
    synth = synthesized["multi"]
    arns = [m["EventSourceArn"] for m in _mappings(synth)]
    assert len(arns) == 2 and len(set(map(json.dumps, arns))) == 2
    chatbot = synth.only("AWS::Chatbot::SlackChannelConfiguration")
    assert chatbot["SlackWorkspaceId"] == "T0123" and chatbot["SlackChannelId"] == "C0456"
    assert chatbot["SnsTopicArns"] == [{"Ref": synth.logical_id("AWS::SNS::Topic")}]
    assert json.dumps(chatbot["GuardrailPolicies"]).count("ReadOnlyAccess") == 1
    assert "AdministratorAccess" not in json.dumps(chatbot)
    email = next(
        s["Properties"]
        for s in synth.resources("AWS::SNS::Subscription").values()
        if s["Properties"]["Protocol"] == "email"
    )
    assert email["Endpoint"] == "oncall@example.com" and "RedrivePolicy" in email


def test_alarms_watch_lag_dead_letters_errors_and_throttles_and_notify_the_topic(demo: Synthesized) -> None:
    topic = {"Ref": demo.logical_id("AWS::SNS::Topic")}
    consumer = {"Ref": _function_id(demo, "hotkeys.detector.handlers.app.handler")}
    alarms = {
        a["Properties"]["MetricName"]: a["Properties"]
        for logical_id, a in demo.resources("AWS::CloudWatch::Alarm").items()
        if a["Properties"].get("Namespace") != "AWS/DynamoDB"  # DynamoDB's throttles: tests/infra/test_throttling.py
        and not logical_id.startswith("DetectorJudge")  # the judge's: test_the_judge_runs_every_minute_...
        and "Metrics" not in a["Properties"]  # each table's StreamUnread: tests/infra/test_stream_unread.py
    }
    assert set(alarms) == {
        "IteratorAge",
        "ApproximateNumberOfMessagesVisible",
        "Errors",
        "Throttles",
        "RecordsWithoutImages",
        "ArchiveObjectsSpooled",
        "RecordsOutOfOrder",
        "StatesDiscarded",
        "TtlIgnoredItems",
    }
    assert alarms["TtlIgnoredItems"]["Threshold"] == 1
    assert alarms["Errors"]["Dimensions"] == [{"Name": "FunctionName", "Value": consumer}]
    assert alarms["RecordsWithoutImages"]["Threshold"] == 1
    assert alarms["ArchiveObjectsSpooled"]["Threshold"] == alarms["RecordsOutOfOrder"]["Threshold"] == 1
    assert alarms["IteratorAge"]["Threshold"] == ITERATOR_AGE_ALARM_MS < 24 * 3600 * 1000
    assert alarms["IteratorAge"]["Statistic"] == "Maximum"
    assert alarms["ApproximateNumberOfMessagesVisible"]["Threshold"] == 1
    assert alarms["ApproximateNumberOfMessagesVisible"]["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarms["Throttles"]["Threshold"] == 1
    for alarm in alarms.values():
        assert topic in alarm["AlarmActions"]
    dashboard = json.dumps(demo.only("AWS::CloudWatch::Dashboard"))
    for metric in ("RecordsCounted", "IteratorAge"):
        assert metric in dashboard
    # and the flush figures the EMF line carries as properties (not metrics), queried from the consumer's logs
    (query,) = [w for w in demo.dashboard_widgets() if w["type"] == "log"]
    consumer_logs = demo.logical_id("AWS::Logs::LogGroup", "DetectorConsumerLogs")
    assert f"SOURCE '${{{consumer_logs}}}'" in query["properties"]["query"]
    for figure in ("StatsWrites", "SummarySize", "KeysOverOnePercent"):
        assert figure in query["properties"]["query"]
    # and every counted index's write units, found by name as the function emits them
    assert "SEARCH('{HotKeyDetector,service} IndexWriteUnits', 'Sum', 60)" in dashboard.replace("\\", "")


def test_the_detector_metric_alarms_watch_what_the_function_emits(demo: Synthesized) -> None:
    """Each alarm on the function's own metrics (StatesDiscarded among them) names the namespace and the
    dimension set of the EMF line the handler writes, and the deployed function is configured with them."""
    from hotkeys.detector.consumer.pipeline import BatchOutcome
    from hotkeys.detector.handlers.app import _record_metrics
    from hotkeys.detector.observability import metrics

    # Given the line an invocation writes when each rare event happened once
    _record_metrics(BatchOutcome(states_discarded=1, out_of_order=1, spooled=1, without_images=1, ttl_ignored=1))
    line = metrics.serialize_metric_set()
    metrics.clear_metrics()
    (directive,) = line["_aws"]["CloudWatchMetrics"]
    (dimension_set,) = directive["Dimensions"]
    emitted = {metric["Name"] for metric in directive["Metrics"]}
    dimensions = [{"Name": name, "Value": line[name]} for name in dimension_set]
    # Then every alarm on the detector's namespace watches a metric of that line, with its dimensions
    ours = [
        alarm["Properties"]
        for alarm in demo.resources("AWS::CloudWatch::Alarm").values()
        if alarm["Properties"].get("Namespace") not in ("AWS/DynamoDB", "AWS/Lambda", "AWS/SQS")
        and "Metrics" not in alarm["Properties"]  # (metric math: each table's StreamUnread, test_stream_unread.py)
    ]
    # (the judge's: test_the_judge_looks_every_flush_through_its_queue_and_a_watchdog_rule)
    ours = [alarm for alarm in ours if alarm["MetricName"] not in ("JudgeLooksFailed", "JudgeChainRestarts")]
    assert {alarm["MetricName"] for alarm in ours} == {
        "RecordsWithoutImages",
        "ArchiveObjectsSpooled",
        "RecordsOutOfOrder",
        "StatesDiscarded",
        "TtlIgnoredItems",
    }
    for alarm in ours:
        assert alarm["Namespace"] == directive["Namespace"] and alarm["MetricName"] in emitted, alarm
        assert alarm["Dimensions"] == dimensions, alarm
        assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")
        # each such count is published only when it is not zero (a metric is billed per hour it is
        # published in): a minute without one is missing data, which must not breach
        assert alarm["MetricName"] not in _record_metrics_of(BatchOutcome(counted=1)), alarm
        assert alarm["TreatMissingData"] == "notBreaching", alarm
    # and the consumer runs with that namespace and service (Powertools reads them from its environment)
    consumer = next(
        f["Properties"]
        for f in demo.resources("AWS::Lambda::Function").values()
        if f["Properties"].get("Handler") == "hotkeys.detector.handlers.app.handler"
    )
    variables = consumer["Environment"]["Variables"]
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == directive["Namespace"]
    assert [{"Name": "service", "Value": variables["POWERTOOLS_SERVICE_NAME"]}] == dimensions
    # The discarded-state alarm says what was lost and what to do
    (discarded,) = [alarm for alarm in ours if alarm["MetricName"] == "StatesDiscarded"]
    assert "figures it had counted in that window are lost" in discarded["AlarmDescription"]
    assert "nothing to do" in discarded["AlarmDescription"] and "warnings" in discarded["AlarmDescription"]


def _record_metrics_of(outcome: Any) -> set[str]:
    """The metric names of the EMF line ``outcome`` makes."""
    from hotkeys.detector.handlers.app import _record_metrics
    from hotkeys.detector.observability import metrics

    _record_metrics(outcome)
    names = set(metrics.metric_set)
    metrics.clear_metrics()
    return names


def _alarms_shown(widget: dict[str, Any]) -> list[str]:
    """The alarms an alarm widget shows (CloudWatch dashboard body: ``properties.annotations.alarms``)."""
    alarms: list[str] = widget["properties"].get("annotations", {}).get("alarms", [])
    return alarms


@pytest.mark.parametrize("mode", [mode for mode in MODES if mode != "lean"])  # (lean: no throttle alarms)
def test_the_throttle_explainers_failed_invocations_are_alarmed_like_the_detectors_queues(
    synthesized: dict, mode: str
) -> None:
    synth = synthesized[mode]
    topic = {"Ref": synth.logical_id("AWS::SNS::Topic")}
    # Given the explainer's on-failure destination (its asynchronous invocations that failed every retry)
    (explainer,) = [
        logical_id
        for logical_id, function in synth.resources("AWS::Lambda::Function").items()
        if function["Properties"].get("Handler") == "hotkeys.detector.handlers.throttle_app.handler"
    ]
    (invoke_config,) = [
        config
        for config in synth.resources("AWS::Lambda::EventInvokeConfig").values()
        if config["Properties"]["FunctionName"] == {"Ref": explainer}
    ]
    queue = invoke_config["Properties"]["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0]
    # Then one alarm watches that queue, says what a user has always read, and notifies the topic
    watching = {
        logical_id: alarm["Properties"]
        for logical_id, alarm in synth.resources("AWS::CloudWatch::Alarm").items()
        if alarm["Properties"].get("Dimensions")
        == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue, "QueueName"]}}]
    }
    assert len(watching) == 1, watching
    ((logical_id, alarm),) = watching.items()
    assert alarm["AlarmDescription"] == (
        "Throttle alarm explanations failed after their retries: the invocations wait in "
        "HotKeyDetector/ThrottleExplainer/Undelivered/Queue"
    )
    assert (alarm["MetricName"], alarm["Statistic"], alarm["Period"]) == (
        "ApproximateNumberOfMessagesVisible",
        "Maximum",
        60,
    )
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")
    assert alarm["AlarmActions"] == alarm["OKActions"] == [topic]
    # and it is on the dashboard beside the detector's alarms
    shown = [w for w in synth.dashboard_widgets() if _alarms_shown(w) == [f"${{{logical_id}.Arn}}"]]
    assert [w["properties"]["title"] for w in shown] == ["UndeliveredThrottleExplanations"]


@pytest.mark.parametrize("mode", [mode for mode in MODES if mode != "lean"])  # (lean: no dashboard)
def test_every_health_alarm_is_on_the_dashboard_once_and_no_widget_overlaps_another(
    synthesized: dict, mode: str
) -> None:
    synth = synthesized[mode]
    widgets = synth.dashboard_widgets()
    # Every alarm but DynamoDB's throttle alarms (graphed per table and GSI: tests/infra/test_throttling.py);
    # each table's StreamUnread alarm among them (it reads DynamoDB's writes)
    health = {
        logical_id
        for logical_id, alarm in synth.resources("AWS::CloudWatch::Alarm").items()
        if "AWS/DynamoDB" not in json.dumps(alarm["Properties"]) or _stream_unread(alarm)
    }
    shown = [arn for widget in widgets for arn in _alarms_shown(widget)]
    assert sorted(shown) == sorted(f"${{{logical_id}.Arn}}" for logical_id in health)
    # The alarm widgets come first, four to a line, left to right (those added after the detector's own
    # included), and the grid (24 units wide) holds every widget without overlap
    kinds = ["alarm" if _alarms_shown(widget) else "graph" for widget in widgets]
    assert kinds == sorted(kinds)
    places = [(w["x"], w["y"], w["width"]) for w in widgets if _alarms_shown(w)]
    assert places == [(6 * (k % 4), 6 * (k // 4), 6) for k in range(len(places))]
    taken: set[tuple[int, int]] = set()
    for widget in widgets:
        assert widget["x"] + widget["width"] <= 24, widget
        cells = {
            (x, y)
            for x in range(widget["x"], widget["x"] + widget["width"])
            for y in range(widget["y"], widget["y"] + widget["height"])
        }
        assert not cells & taken, widget["properties"].get("title")
        taken |= cells


def test_topic_and_queues_are_encrypted_and_tls_only(demo: Synthesized) -> None:
    topic = demo.only("AWS::SNS::Topic")
    assert topic["KmsMasterKeyId"] == {"Fn::GetAtt": [demo.logical_id("AWS::KMS::Key"), "Arn"]}
    key = demo.only("AWS::KMS::Key")
    assert key["EnableKeyRotation"] is True
    assert "cloudwatch.amazonaws.com" in json.dumps(key["KeyPolicy"])
    for queue in demo.resources("AWS::SQS::Queue").values():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
    for kind in ("AWS::SNS::TopicPolicy", "AWS::SQS::QueuePolicy", "AWS::S3::BucketPolicy"):
        for policy in demo.resources(kind).values():
            text = json.dumps(policy["Properties"])
            assert '"aws:SecureTransport": "false"' in text and '"Effect": "Deny"' in text, kind


def test_archive_bucket_is_private_logged_tiered_and_queryable(demo: Synthesized) -> None:
    bucket = demo.template["Resources"][demo.logical_id("AWS::S3::Bucket", "ArchiveBucket")]["Properties"]
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]
    assert bucket["LoggingConfiguration"]["DestinationBucketName"] == {
        "Ref": demo.logical_id("AWS::S3::Bucket", "AccessLogs")
    }
    (rule,) = bucket["LifecycleConfiguration"]["Rules"]
    assert rule["Prefix"] == "ttl-archive/"
    assert rule["Transitions"][0]["TransitionInDays"] == 30
    table = demo.only("AWS::Glue::Table")["TableInput"]
    assert table["Parameters"]["projection.enabled"] == "true"
    assert [k["Name"] for k in table["PartitionKeys"]] == ["table", "dt", "hour"]
    assert "table=${table}/dt=${dt}/hour=${hour}/" in json.dumps(table["Parameters"]["storage.location.template"])


def test_outputs(demo: Synthesized) -> None:
    assert set(demo.template["Outputs"]) >= {
        "StatsTableName",
        "AlertTopicArn",
        "ArchiveBucketName",
        "DeadLetterQueueUrl",
        "DashboardUrl",
    }


@pytest.mark.parametrize("mode", list(MODES))
def test_cfn_lint_finds_no_errors(synthesized: dict, mode: str) -> None:
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "cfn-lint"),
            "--format",
            "parseable",
            "--ignore-checks",
            "W",
            "--",
            str(synthesized[mode].template_path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_webhook_subscriber_reads_only_its_secret_and_keeps_failures(synthesized: dict) -> None:
    synth = synthesized["multi"]
    functions = {
        f["Properties"]["Handler"]: f["Properties"]
        for f in synth.resources("AWS::Lambda::Function").values()
        if "Handler" in f["Properties"]
    }
    sender = functions["hotkeys.detector.handlers.webhook_app.handler"]
    assert sender["Environment"]["Variables"]["WEBHOOK_SECRET_ARN"] == WEBHOOK_SECRET
    secret_reads = [s for s in _statements(synth) if "secretsmanager:GetSecretValue" in _actions(s)]
    # a partial ARN names the secret without Secrets Manager's 6-character suffix: the grant adds it
    assert [s["Resource"] for s in secret_reads] == [f"{WEBHOOK_SECRET}-??????"]
    lambda_subscription = next(
        s["Properties"]
        for s in synth.resources("AWS::SNS::Subscription").values()
        if s["Properties"]["Protocol"] == "lambda"
    )
    assert "RedrivePolicy" in lambda_subscription
    sender_id = next(
        k
        for k, f in synth.resources("AWS::Lambda::Function").items()
        if f["Properties"].get("Handler") == "hotkeys.detector.handlers.webhook_app.handler"
    )
    (invoke,) = [
        c["Properties"]
        for c in synth.resources("AWS::Lambda::EventInvokeConfig").values()
        if c["Properties"]["FunctionName"] == {"Ref": sender_id}
    ]
    assert invoke["MaximumRetryAttempts"] == 2
    assert "Fn::GetAtt" in invoke["DestinationConfig"]["OnFailure"]["Destination"]


def test_a_parallelization_factor_other_than_1_is_refused_at_synth(synthesized: dict) -> None:
    # Per-shard tumbling-window state needs the shard's records in order: the app refuses to build
    from infra.app_factory import build_app
    from infra.option_schema import ContextError

    with pytest.raises(ContextError, match="parallelizationFactor must be 1"):
        build_app({"parallelizationFactor": "4"}, outdir=tempfile.mkdtemp(prefix="cdk-refused-"))


def _cloudwatch_may_publish(statement: dict[str, Any], action: str) -> bool:
    """An Allow for CloudWatch alarms of this account only (confused-deputy conditions)."""
    conditions = statement.get("Condition", {})
    return (
        statement["Effect"] == "Allow"
        and statement["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
        and action in _actions(statement)
        and conditions.get("StringEquals", {}).get("aws:SourceAccount") == {"Ref": "AWS::AccountId"}
        and ":alarm:*" in json.dumps(conditions.get("ArnLike", {}).get("aws:SourceArn"))
    )


@pytest.mark.parametrize("mode", list(MODES))
def test_cloudwatch_alarms_may_publish_to_the_encrypted_topic(synthesized: dict, mode: str) -> None:
    # A topic policy replaces SNS's default one: without an explicit Allow, alarm actions fail
    synth = synthesized[mode]
    (policy,) = synth.resources("AWS::SNS::TopicPolicy").values()
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert any(_cloudwatch_may_publish(s, "sns:Publish") for s in statements), statements
    alert_key = synth.logical_id("AWS::KMS::Key", "DetectorAlerts")
    key_statements = synth.template["Resources"][alert_key]["Properties"]["KeyPolicy"]["Statement"]
    assert any(_cloudwatch_may_publish(s, "kms:GenerateDataKey*") for s in key_statements), key_statements


def test_every_dead_letter_and_undelivered_alert_queue_has_an_alarm(synthesized: dict) -> None:
    # Given the mode with e-mail and webhook subscribers (four queues: stream batches, e-mails, webhook,
    # the throttle explainer's undelivered invocations; besides them the judge's looks, which holds nothing
    # to lose: alarmed by its chain's restarts, infra/test_judge.py)
    synth = synthesized["multi"]
    queues = set(synth.resources("AWS::SQS::Queue")) - {synth.logical_id("AWS::SQS::Queue", "DetectorJudgeLooks")}
    assert len(queues) == 4
    topic = {"Ref": synth.logical_id("AWS::SNS::Topic")}
    watched = set()
    for alarm in synth.resources("AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        if props.get("MetricName") == "ApproximateNumberOfMessagesVisible":
            assert props["Threshold"] == 1 and topic in props["AlarmActions"]
            (dimension,) = props["Dimensions"]
            watched.add(dimension["Value"]["Fn::GetAtt"][0])
    # Then each queue is watched by an alarm that notifies the topic
    assert watched == queues


def test_the_app_synthesizes_with_cdk_json_context_like_the_cdk_cli(synthesized: dict) -> None:
    # `python app.py` (make synth, these tests) gets cdk.json's feature flags, as `cdk synth` passes them
    from infra.app_factory import CDK_JSON, build_app

    flags = {k: v for k, v in json.loads(CDK_JSON.read_text())["context"].items() if k.startswith("@aws-cdk/")}
    assert flags["@aws-cdk/aws-iam:minimizePolicies"] is True
    assert flags["@aws-cdk/core:target-partitions"] == ["aws"]  # Chatbot and the Powertools layer: aws only
    app, _stack = build_app({}, outdir=tempfile.mkdtemp(prefix="cdk-context-"))
    for name, value in flags.items():
        assert app.node.try_get_context(name) == value, name


@pytest.mark.parametrize("mode", list(MODES))
def test_acknowledged_wildcards_name_only_what_the_mode_grants(synthesized: dict, mode: str) -> None:
    synth = synthesized[mode]
    on_star = {
        action
        for statement in _statements(synth)
        if "*" in (statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]])
        for action in _actions(statement)
    }
    reasons = " ".join(
        suppressed["reason"]
        for plugin in synth.report["pluginReports"]
        for suppressed in plugin.get("suppressedViolations", [])
        if "Resource::*" in suppressed["ruleName"] + json.dumps(suppressed)
    )
    assert ("dynamodb:ListStreams" in on_star) == ("dynamodb:ListStreams" in reasons), (mode, on_star)


def test_the_function_asset_is_the_detector_alone_and_imports_on_its_own(demo: Synthesized) -> None:
    """Given the synthesized demo stack, when its functions' staged asset is loaded the way Lambda
    loads it (that folder first on the path, no project install), then every handler imports and the
    CLI is not in the upload."""
    functions = demo.resources("AWS::Lambda::Function")
    ours = {k: v for k, v in functions.items() if str(v["Properties"].get("Handler", "")).startswith("hotkeys.")}
    assert ours, "no function of the project's asset found"
    folders = {demo.asset_directory(function) for function in ours.values()}
    assert len(folders) == 1, folders
    (asset,) = folders
    assert (asset / "hotkeys" / "__init__.py").is_file()
    assert (asset / "hotkeys" / "detector" / "handlers" / "app.py").is_file()
    assert not (asset / "hotkeys" / "cli").exists() and not (asset / "hotkeys" / "emulator").exists()
    assert not list(asset.rglob("__pycache__")) and not list(asset.glob("*.egg-info"))
    handlers = sorted({function["Properties"]["Handler"] for function in ours.values()})
    # -S: no site processing, so the editable install's path entry (functions/) is not added; the
    # third-party packages (Powertools, boto3: the layer and the runtime in Lambda) come from site-packages.
    third_party = [path for path in sysconfig.get_paths().values() if path.endswith("site-packages")]
    program = (
        "import importlib, sys\n"
        f"sys.path[:0] = [{str(asset)!r}]\n"
        f"sys.path += {sorted(set(third_party))!r}\n"
        f"for name in {handlers!r}:\n"
        "    module, _, attribute = name.rpartition('.')\n"
        "    loaded = importlib.import_module(module)\n"
        "    assert callable(getattr(loaded, attribute)), name\n"
        "    assert loaded.__file__.startswith(sys.path[0]), loaded.__file__\n"
        "print('ok')\n"
    )
    environment = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "true"}
    result = subprocess.run(
        [sys.executable, "-S", "-c", program], capture_output=True, text=True, env=environment, cwd=asset, check=False
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def _stream_unread(alarm: dict[str, Any]) -> bool:
    """Each table's StreamUnread alarm (infra/stream_unread.py; tests/infra/test_stream_unread.py)."""
    return any(metric.get("Id") == "written" for metric in alarm["Properties"].get("Metrics", []))


def test_hotkeys_cost_prices_the_alarms_and_dashboard_the_stack_creates(synthesized: dict) -> None:
    # Given the stack without alert subscribers (demo) and with Slack, e-mail and a webhook (multi)
    demo, multi = synthesized["demo"], synthesized["multi"]
    # Then `hotkeys cost` prices the base alarms, the throttle alarms (one table, no GSI), the table's
    # StreamUnread alarm (by its metrics) and the one dashboard
    unread = [a for a in demo.resources("AWS::CloudWatch::Alarm").values() if _stream_unread(a)]
    assert [len(a["Properties"]["Metrics"]) - 1 for a in unread] == [cost.UNREAD_ALARM_METRICS_PER_TABLE]
    assert len(demo.resources("AWS::CloudWatch::Alarm")) == cost.ALARMS + cost.THROTTLE_ALARMS_PER_SCOPE + 1
    assert len(demo.resources("AWS::CloudWatch::Dashboard")) == cost.DASHBOARDS
    # and each subscriber's undelivered-message alarm is the only addition (left out of the model)
    undelivered = [
        alarm
        for alarm in multi.resources("AWS::CloudWatch::Alarm").values()
        if "could not be delivered" in alarm["Properties"].get("AlarmDescription", "")
    ]
    # two existing tables: each table's throttle alarms and those over its GSIs (GSIs unknown at synth time)
    throttles = 2 * 2 * cost.THROTTLE_ALARMS_PER_SCOPE
    assert len(multi.resources("AWS::CloudWatch::Alarm")) == cost.ALARMS + throttles + len(undelivered) + 2
    # and the lean deployment's (one existing table): its alarms, no throttle alarm, no dashboard
    lean = synthesized["lean"]
    assert len(lean.resources("AWS::CloudWatch::Alarm")) == cost.LEAN_ALARMS + 1
    assert not lean.resources("AWS::CloudWatch::Dashboard")


def test_the_lean_deployment_keeps_the_alarms_that_say_the_detector_stopped_and_nothing_else(
    synthesized: dict,
) -> None:
    from infra.monitoring import LEAN_ALARMS

    lean, full = synthesized["lean"], synthesized["existing"]
    alarms = lean.resources("AWS::CloudWatch::Alarm")
    # Given the lean deployment of an existing table: no DynamoDB throttle alarm, none on the data's health
    assert not [a for a in alarms.values() if a["Properties"].get("Namespace") == "AWS/DynamoDB"]
    # (the GSIs' Metrics Insights alarms; the table's StreamUnread alarm stays: it says the detector stopped)
    assert not [a for a in alarms.values() if "Metrics" in a["Properties"] and not _stream_unread(a)]
    assert len([a for a in alarms.values() if _stream_unread(a)]) == 1
    consumer = {"Ref": _function_id(lean, "hotkeys.detector.handlers.app.handler")}
    consumers = {
        a["Properties"]["MetricName"]
        for a in alarms.values()
        if {"Name": "FunctionName", "Value": consumer} in a["Properties"].get("Dimensions", [])
        or a["Properties"].get("Namespace") == "AWS/SQS"
        or a["Properties"].get("MetricName") in ("RecordsWithoutImages", "RecordsOutOfOrder", "TtlIgnoredItems")
    }
    # Then the consumer keeps its lag, dead-letter and error alarms (LEAN_ALARMS), and the judge its own
    assert consumers == {"IteratorAge", "ApproximateNumberOfMessagesVisible", "Errors"}
    assert set(LEAN_ALARMS) == {"IteratorAge", "DeadLetters", "Errors"}
    judges = [logical_id for logical_id in alarms if logical_id.startswith("DetectorJudge")]
    assert judges and sorted(judges) == sorted(
        i for i in full.resources("AWS::CloudWatch::Alarm") if i.startswith("DetectorJudge")
    )
    # and every alarm still notifies the topic
    topic = {"Ref": lean.logical_id("AWS::SNS::Topic", "Alerts")}
    assert all(topic in a["Properties"]["AlarmActions"] for a in alarms.values())
    # No dashboard, no throttle explainer, no Contributor Insights turned on
    assert not lean.resources("AWS::CloudWatch::Dashboard") and "DashboardUrl" not in lean.template["Outputs"]
    handlers = {f["Properties"].get("Handler") for f in lean.resources("AWS::Lambda::Function").values()}
    assert not [h for h in handlers if h and "throttle" in h]
    assert any(
        h and "throttle" in h
        for h in {f["Properties"].get("Handler") for f in full.resources("AWS::Lambda::Function").values()}
    )
    assert not [r for r in lean.template["Resources"].values() if "Insights" in r["Type"]]
    assert [r for r in full.template["Resources"].values() if "Insights" in r["Type"]]
    # and the rest of the deployment is the full one's: the consumer, its mapping, the judge, the stats table
    for kind in ("Custom::StreamMapping", "AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::Events::Rule"):
        assert len(lean.resources(kind)) == len(full.resources(kind)) - (kind == "AWS::SQS::Queue"), kind


def _via(service: str) -> dict[str, Any]:
    return {
        "StringEquals": {
            "kms:ViaService": {"Fn::Join": ["", [f"{service}.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]}
        }
    }


def test_customer_managed_keys_are_usable_through_their_service_only(synthesized: dict) -> None:
    # Given a table and a webhook secret under a customer-managed key (-c tableKmsKeyArns, slackWebhookKeyArn)
    statements = {s.get("Sid"): s for s in _statements(synthesized["multi"])}
    # Then the consumer may decrypt with the table's key through DynamoDB only
    streams = statements["DecryptSourceStreams"]
    assert _actions(streams) == {"kms:Decrypt"} and streams["Resource"] == CUSTOMER_KEY
    assert streams["Condition"] == _via("dynamodb")
    # and the webhook subscriber with the secret's key through Secrets Manager only
    webhook = statements["DecryptWebhookUrl"]
    assert _actions(webhook) == {"kms:Decrypt"} and webhook["Resource"] == CUSTOMER_KEY
    assert webhook["Condition"] == _via("secretsmanager")
    # and without keys named, nobody gets kms:Decrypt beyond the alert topic's own key
    demo_decrypts = [s for s in _statements(synthesized["demo"]) if "kms:Decrypt" in _actions(s)]
    # (the consumer, the judge and the throttle explainer, each publishing to the topic)
    assert [s.get("Sid") for s in demo_decrypts] == ["EncryptAlerts"] * 3
    assert all(s["Resource"] == demo_decrypts[0]["Resource"] for s in demo_decrypts)


def test_each_stream_enabler_role_holds_only_the_calls_its_handler_makes(synthesized: dict) -> None:
    synth = synthesized["enable"]
    granted = {}
    for logical_id, policy in synth.resources("AWS::IAM::Policy").items():
        for handler in ("OnEvent", "IsComplete"):
            if f"StreamEnablerProvider{handler}Role" in logical_id:
                statements = policy["Properties"]["PolicyDocument"]["Statement"]
                granted[handler] = {a for s in statements for a in _actions(s) if a.startswith("dynamodb:")}
    # on_event reads the table and turns its stream on; is_complete reads the table, then the stream's status
    assert granted == {
        "OnEvent": {"dynamodb:DescribeTable", "dynamodb:UpdateTable"},
        "IsComplete": {"dynamodb:DescribeTable", "dynamodb:DescribeStream"},
    }


def test_the_archive_lifecycle_says_small_objects_stay_in_standard(demo: Synthesized) -> None:
    bucket = demo.template["Resources"][demo.logical_id("AWS::S3::Bucket", "ArchiveBucket")]["Properties"]
    lifecycle = bucket["LifecycleConfiguration"]
    # Stated in the template, not left to the account's default: objects under 128 KB never transition
    assert lifecycle["TransitionDefaultMinimumObjectSize"] == "all_storage_classes_128K"
    (rule,) = lifecycle["Rules"]
    assert rule["Transitions"] == [{"StorageClass": "GLACIER_IR", "TransitionInDays": 30}]
    assert "ObjectSizeGreaterThan" not in rule  # the expiration (when set) must reach every object


def test_the_glue_database_has_an_athena_friendly_name_per_stack(demo: Synthesized) -> None:
    database = demo.only("AWS::Glue::Database")["DatabaseInput"]
    assert database["Name"] == "hotkeydetector"
    assert demo.template["Outputs"]["ArchiveDatabaseName"]["Value"] == "hotkeydetector"
    from infra.archive_bucket import glue_database_name

    assert glue_database_name("Orders-HotKeys-prod") == "orders_hotkeys_prod"


def test_the_chatbot_configuration_name_is_unique_per_stack(synthesized: dict) -> None:
    chatbot = synthesized["multi"].only("AWS::Chatbot::SlackChannelConfiguration")
    assert chatbot["ConfigurationName"] == "HotKeyDetector-C0456"


def test_destroy_keeps_the_archive_and_deletes_the_rest_as_the_readme_says(demo: Synthesized) -> None:
    policies = {
        logical_id: (resource["Type"], resource.get("DeletionPolicy", "Delete"))
        for logical_id, resource in demo.template["Resources"].items()
    }
    retained = {logical_id for logical_id, (_kind, policy) in policies.items() if policy == "Retain"}
    buckets = set(demo.resources("AWS::S3::Bucket"))
    assert retained == buckets and len(buckets) == 2  # the archive and its access logs
    for kind in (
        "AWS::DynamoDB::GlobalTable",
        "AWS::KMS::Key",
        "AWS::SQS::Queue",
        "AWS::Logs::LogGroup",
        "AWS::Glue::Database",
        "AWS::Glue::Table",
    ):
        kinds = [policy for logical_id, (k, policy) in policies.items() if k == kind]
        assert kinds and set(kinds) == {"Delete"}, kind


@pytest.mark.parametrize("mode", ["demo", "lean"])
def test_every_alarm_on_a_metric_published_only_when_not_zero_treats_missing_data_as_not_breaching(
    synthesized: dict, mode: str
) -> None:
    from hotkeys.cli import cost as model
    from hotkeys.detector.names import NAMESPACE

    # The metrics in every line (the consumer's RecordsCounted, the judge's JudgeLooks and JudgeLookSeconds:
    # hotkeys cost prices them every hour); every other metric of ours is published only when it is not zero
    always = {"RecordsCounted", "JudgeLooks", "JudgeLookSeconds"}
    assert len(always) == model.CONSUMER_METRICS_ALWAYS + model.JUDGE_METRICS_ALWAYS
    ours = [
        alarm["Properties"]
        for alarm in synthesized[mode].resources("AWS::CloudWatch::Alarm").values()
        if alarm["Properties"].get("Namespace") == NAMESPACE
    ]
    assert ours
    for alarm in ours:
        if alarm["MetricName"] not in always:
            assert alarm["TreatMissingData"] == "notBreaching", alarm
