"""The judge as deployed: a function woken by its own queue after every flush (the chain of looks) and by a
one-minute EventBridge rule (the watchdog), configured like the consumer, with alarms of its own, and a role
that allows exactly the calls its wake-ups make (recorded on moto)."""

from __future__ import annotations

import fnmatch
import io
import json
from contextlib import redirect_stdout
from typing import Any

import boto3
import pytest

from hotkeys.deployment import (
    JUDGE_HANDLER,
    JUDGE_MESSAGE_RETENTION_SECONDS,
    JUDGE_QUEUE_VISIBILITY_SECONDS,
    JUDGE_SCHEDULE_SECONDS,
    JUDGE_TIMEOUT_SECONDS,
)
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.adapters.look_chain_store import DynamoLookClaims, SqsNextLook
from hotkeys.detector.adapters.stats_schema import HEADS_INDEX
from hotkeys.detector.alerts import look_chain
from hotkeys.detector.alerts.judge import LookOutcome
from hotkeys.detector.config import OPTIONS, Settings
from hotkeys.detector.handlers import judge_app
from hotkeys.detector.handlers.wiring import build_judge
from hotkeys.emulator.emulation import Deployment, MemoryLookClaims, emulate
from hotkeys.emulator.events import ItemChange, sequence_number, stream_record
from hotkeys.emulator.local import create_stats_table
from tests.infra.conftest import Synthesized, written_out

T0 = 1_796_083_200
ACCOUNT, REGION = "123456789012", "us-east-1"


def _function(synth: Synthesized, handler: str) -> tuple[str, dict[str, Any]]:
    (found,) = [
        (logical_id, function["Properties"])
        for logical_id, function in synth.resources("AWS::Lambda::Function").items()
        if function["Properties"].get("Handler") == handler
    ]
    return found


def _role_statements(synth: Synthesized, function: dict[str, Any]) -> list[dict[str, Any]]:
    role = function["Role"]["Fn::GetAtt"][0]
    return [
        statement
        for policy in synth.resources("AWS::IAM::Policy").values()
        if {"Ref": role} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict[str, Any]) -> set[str]:
    actions = statement["Action"]
    return set(actions) if isinstance(actions, list) else {actions}


def test_the_judge_looks_every_flush_through_its_queue_and_a_watchdog_rule(demo: Synthesized) -> None:
    judge_id, judge = _function(demo, JUDGE_HANDLER)
    # Given its queue: SQS-managed encryption, TLS only, a message hidden while an invocation has it for
    # longer than the function may run, kept past SQS's longest delay (a flush of up to 900 s)
    queues = {logical_id: q for logical_id, q in demo.resources("AWS::SQS::Queue").items() if "Judge" in logical_id}
    ((queue_id, queue),) = queues.items()
    assert queue["Properties"]["SqsManagedSseEnabled"] is True
    assert queue["Properties"]["VisibilityTimeout"] == JUDGE_QUEUE_VISIBILITY_SECONDS >= JUDGE_TIMEOUT_SECONDS
    assert queue["Properties"]["MessageRetentionPeriod"] == JUDGE_MESSAGE_RETENTION_SECONDS == 900 + 60
    assert "RedrivePolicy" not in queue["Properties"]
    (policy,) = [
        p["Properties"]
        for p in demo.resources("AWS::SQS::QueuePolicy").values()
        if {"Ref": queue_id} in p["Properties"]["Queues"]
    ]
    (deny,) = policy["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    # delivered to the judge one message at a time; each look sends the next to it
    (mapping,) = [
        m["Properties"]
        for m in demo.resources("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == {"Ref": judge_id}
    ]
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]} and mapping["BatchSize"] == 1
    assert judge["Environment"]["Variables"]["JUDGE_QUEUE_URL"] == {"Ref": queue_id}
    # and the rule: every minute, to the judge, not retried (the next run reads everything again)
    (rule,) = demo.resources("AWS::Events::Rule").values()
    assert (
        rule["Properties"]["ScheduleExpression"] == "rate(1 minute)" == f"rate({JUDGE_SCHEDULE_SECONDS // 60} minute)"
    )
    (target,) = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [judge_id, "Arn"]}
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": JUDGE_SCHEDULE_SECONDS}
    (invoke,) = [
        p["Properties"]
        for p in demo.resources("AWS::Lambda::Permission").values()
        if p["Properties"]["FunctionName"] == {"Fn::GetAtt": [judge_id, "Arn"]}
    ]
    assert invoke["Principal"] == "events.amazonaws.com" and "SourceArn" in invoke
    (config,) = [
        c["Properties"]
        for c in demo.resources("AWS::Lambda::EventInvokeConfig").values()
        if c["Properties"]["FunctionName"] == {"Ref": judge_id}
    ]
    assert config["MaximumRetryAttempts"] == 0
    # and a wake-up has time for the watchdog's wait and a look
    assert judge["Timeout"] == JUDGE_TIMEOUT_SECONDS > 12 + look_chain.CLAIM_GRACE_SECONDS
    assert judge["MemorySize"] == 256
    # Then four alarms watch it, each notifying the alert topic and shown on the dashboard
    topic = {"Ref": demo.logical_id("AWS::SNS::Topic")}
    alarms = {
        logical_id: alarm["Properties"]
        for logical_id, alarm in demo.resources("AWS::CloudWatch::Alarm").items()
        if logical_id.startswith("DetectorJudge")
    }
    by_metric = {alarm["MetricName"]: alarm for alarm in alarms.values()}
    assert set(by_metric) == {"Errors", "Invocations", "JudgeLooksFailed", "JudgeChainRestarts"}
    assert all(topic in alarm["AlarmActions"] and topic in alarm["OKActions"] for alarm in alarms.values())
    # wake-ups that stop coming: fewer than 3 of the 30 due in 5 minutes, and no data at all is a breach
    runs = by_metric["Invocations"]
    assert runs["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": judge_id}}]
    assert (runs["Period"], runs["Threshold"], runs["ComparisonOperator"]) == (300, 3, "LessThanThreshold")
    assert runs["TreatMissingData"] == "breaching"
    assert by_metric["Errors"]["Dimensions"] == runs["Dimensions"]
    # a chain the watchdog keeps restarting (looks once a minute, not every flush); written only when it
    # happens, so no data is not a breach
    restarts = by_metric["JudgeChainRestarts"]
    assert (restarts["Period"], restarts["Threshold"], restarts["TreatMissingData"]) == (900, 3, "notBreaching")
    assert by_metric["JudgeLooksFailed"]["TreatMissingData"] == "notBreaching"
    shown = json.dumps(demo.dashboard_widgets())
    assert all(f"${{{logical_id}.Arn}}" in shown for logical_id in alarms)
    assert "JudgeLookSeconds" in shown and "JudgeAlertsPublished" in shown


def test_the_judges_failed_looks_alarm_watches_the_line_the_handler_writes(
    demo: Synthesized, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a run in which every look failed
    class Failing:
        def look(self) -> LookOutcome:
            return LookOutcome(tables=1, failed=1)

    container = judge_app.Container(Settings(stats_table_name="s"), Failing(), MemoryLookClaims(), lambda *_m: None)  # type: ignore[arg-type]
    monkeypatch.setattr(judge_app, "_container", lambda: container)
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")

    class Context:
        function_name, memory_limit_in_mb, aws_request_id = "judge", 256, "r"
        invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:judge"

        def get_remaining_time_in_millis(self) -> int:
            return 60_000

    printed = io.StringIO()
    with redirect_stdout(printed):
        judge_app.handler({"source": "aws.events"}, Context())  # type: ignore[arg-type]
    (line,) = [json.loads(text) for text in printed.getvalue().splitlines() if "_aws" in text]
    (directive,) = line["_aws"]["CloudWatchMetrics"]
    # Then the alarm names the namespace, metric and dimensions of that line
    (alarm,) = [
        a["Properties"]
        for a in demo.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "JudgeLooksFailed"
    ]
    failed = line["JudgeLooksFailed"]
    assert (failed if isinstance(failed, list) else [failed]) == [1] and alarm["Namespace"] == directive["Namespace"]
    assert alarm["Dimensions"] == [{"Name": name, "Value": line[name]} for name in directive["Dimensions"][0]]


def test_the_judge_is_configured_like_the_consumer(synthesized: dict[str, Synthesized]) -> None:
    multi = synthesized["multi"]
    _consumer_id, consumer = _function(multi, "hotkeys.detector.handlers.app.handler")
    _judge_id, judge = _function(multi, JUDGE_HANDLER)
    ours, theirs = judge["Environment"]["Variables"], consumer["Environment"]["Variables"]
    # Every function setting the consumer runs with, the judge runs with too (one set of thresholds)
    for option in OPTIONS:
        assert ours.get(option.variable) == theirs.get(option.variable) or option.variable in (
            "ARCHIVE_BUCKET_NAME",
            "WATCHED_TABLES",
            "JUDGE_QUEUE_URL",
        ), option.variable
    assert ours["WATCHED_TABLES"] == "orders,users"
    assert ours["STATS_TABLE_NAME"] == theirs["STATS_TABLE_NAME"]
    assert ours["ALERT_TOPIC_ARN"] == theirs["ALERT_TOPIC_ARN"]
    assert judge["MemorySize"] == 1024  # -c judgeMemoryMb=1024


class RecordingClients(AwsClients):
    """Clients of a session that records every call before it is sent."""

    def __init__(self) -> None:
        session = boto3.session.Session(region_name=REGION)
        session.events.register("before-parameter-build.*.*", self._record)
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        super().__init__(session=session)

    def _record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.calls.append((model.service_model.service_name, model.name, dict(params)))


def _iam_of(service: str, operation: str, params: dict[str, Any]) -> tuple[str, str]:
    """The IAM action and resource a call is authorized against (Service Authorization Reference)."""
    if service == "dynamodb":
        table = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{params['TableName']}"
        return f"dynamodb:{operation}", f"{table}/index/{params['IndexName']}" if params.get("IndexName") else table
    if service == "sns":
        return f"sns:{operation}", params["TopicArn"]
    if service == "sqs":
        name = params["QueueUrl"].rsplit("/", 1)[-1]
        return f"sqs:{operation}", f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"
    raise AssertionError(f"{service} {operation}: teach _iam_of its resource")


def _resolved(value: Any, names: dict[str, str]) -> Any:
    """A template value with the references to the stats table and the topic as moto's ARNs."""
    return written_out(
        value, lambda name: names.get(name, "<elsewhere>"), lambda logical_id, _: names.get(logical_id, "<elsewhere>")
    )


def test_the_judges_role_allows_exactly_the_calls_its_looks_make(demo: Synthesized, aws: None) -> None:
    # Given a stats table and a topic, and two shards' heads of a key over the limit (450 WCU/s on each for
    # 10 s: under it on either shard) that then cools
    stats = "hotkeys-stats-judge"
    create_stats_table(boto3.client("dynamodb"), stats)
    topic_arn = boto3.client("sns").create_topic(Name="hot-keys")["TopicArn"]
    counting = Settings(stats_table_name=stats, share_min_wcu=10**9)  # consumers without a topic: no first alarm
    lineages = []
    for shard in range(2):
        records = []
        for position in range(4800):
            second = position // 450 if position < 4500 else 10 + (position - 4500) // 5
            key = "event#42" if position < 4500 else f"user#{position % 7}"
            image = {"pk": key, "v": position}
            records.append(
                stream_record(
                    ItemChange(event_name="MODIFY", keys={"pk": key}, new_image=image, old_image=image),
                    table="tickets",
                    sequence=sequence_number(shard, position),
                    event_time=T0 + second,
                )
            )
        lineages.append([(f"shardId-{shard}", records)])
    emulate(Deployment(counting, AwsClients()), lineages, judge=None)
    # When a judge with the deployed wiring (each table's lag reports and claims in the stats table, the
    # next look's message on its queue) is woken after every flush
    clients = RecordingClients()
    queue_url = boto3.client("sqs").create_queue(QueueName="judge-looks")["QueueUrl"]
    settings = Settings(stats_table_name=stats, alert_topic_arn=topic_arn)
    now = [float(T0 + 6)]
    judge = build_judge(settings, clients, clock=lambda: now[0], tables=("tickets",))
    claims = DynamoLookClaims(clients.resource("dynamodb").Table(stats))
    send = SqsNextLook(clients.client("sqs"), queue_url)
    # (and another judge at once, woken first every other time for the same look: a duplicate message)
    other = build_judge(settings, AwsClients(), clock=lambda: now[0], tables=("tickets",))
    other_claims = DynamoLookClaims(AwsClients().resource("dynamodb").Table(stats))
    outcomes = []

    def wake(found: Any, claimed: Any) -> None:
        message = (int(now[0]), now[0] - settings.flush_seconds)
        chain = look_chain.LookChain(claimed, send, lambda: now[0], lambda _s: None, settings.flush_seconds, 300)
        woke = chain.wake(found.look, message)
        outcomes.extend([woke.outcome] if woke.outcome is not None else [])

    while now[0] < T0 + 600:
        if int(now[0]) // settings.flush_seconds % 2:
            wake(other, other_claims)
        wake(judge, claims)
        now[0] += settings.flush_seconds
    assert len(outcomes) == (600 - 6) // settings.flush_seconds + 1  # each look made once
    # (and its watchdog, which reads the latest claim and its end: the chain alive a second after its last
    # look, stopped a minute later)
    for later, restarts in ((1.0, False), (60.0, True)):
        chain = look_chain.LookChain(
            claims, send, lambda at=now[0] + later: at, lambda _s: None, settings.flush_seconds, 300
        )
        woke = chain.wake(judge.look, None)
        assert woke.looked is restarts and woke.restarted is restarts
    # (the limit's incident and the share's: each started once and resolved once between them)
    assert sum(o.started for o in outcomes) == 2 and sum(o.resolved for o in outcomes) == 2
    # Then every call it made is allowed by its role as deployed
    _judge_id, function = _function(demo, JUDGE_HANDLER)
    statements = _role_statements(demo, function)
    stats_arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{stats}"
    names = {
        demo.logical_id("AWS::DynamoDB::GlobalTable", "Stats"): stats_arn,
        demo.logical_id("AWS::SNS::Topic"): topic_arn,
        **{
            logical_id: f"arn:aws:sqs:{REGION}:{ACCOUNT}:judge-looks"
            for logical_id in demo.resources("AWS::SQS::Queue")
            if "Judge" in logical_id
        },
    }
    used = {_iam_of(service, operation, params) for service, operation, params in clients.calls}
    for action, resource in used:
        assert any(
            action in _actions(statement)
            and any(
                fnmatch.fnmatchcase(resource, pattern) for pattern in _listed(_resolved(statement["Resource"], names))
            )
            for statement in statements
        ), (action, resource)
    # and it is granted nothing it does not use (besides tracing, the topic key SNS uses on its behalf, and
    # what Lambda's poller does with the role to deliver the queue's messages)
    granted = {action for statement in statements for action in _actions(statement)}
    assert ("sqs:SendMessage", f"arn:aws:sqs:{REGION}:{ACCOUNT}:judge-looks") in used
    assert granted - {action for action, _resource in used} == {
        "sqs:ReceiveMessage",
        "sqs:ChangeMessageVisibility",
        "sqs:GetQueueUrl",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        "kms:GenerateDataKey",
        "kms:Decrypt",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
    }
    assert ("dynamodb:Query", f"{stats_arn}/index/{HEADS_INDEX}") in used


def _listed(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]
