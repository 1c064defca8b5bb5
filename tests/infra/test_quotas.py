"""Limits only the service enforces, on stacks watching several existing tables: every function's
resource-based policy within Lambda's 20 KB (it cannot be raised), and the stack within CloudFormation's
500 resources (the synth refuses more, naming the quota)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.app_factory import STACK_NAME
from infra.quotas import MAX_RESOURCES
from tests.infra.conftest import synth_template, written_out

# Lambda: "The final policy size is bigger than the limit" past 20 KB (a fixed quota).
POLICY_LIMIT_BYTES = 20 * 1024
# What a deployed template's references resolve to, as long as they get: the longest partition, a long
# region, generated names of 64 characters.
RESOLVED = {"AWS::Partition": "aws-us-gov", "AWS::Region": "ap-southeast-2", "AWS::AccountId": "111122223333"}
GENERATED = "x" * 64


def _resolved(value: Any) -> Any:
    return written_out(
        value,
        lambda name: RESOLVED.get(name, f"{STACK_NAME}-{name}-{GENERATED}"),
        lambda logical_id, _attribute: (
            f"arn:aws-us-gov:lambda:ap-southeast-2:111122223333:function:{STACK_NAME}-{logical_id}-{GENERATED}"
        ),
    )


def _statement(logical_id: str, permission: dict[str, Any]) -> dict[str, Any]:
    """The statement Lambda adds for an ``AWS::Lambda::Permission`` (its documented policy shape)."""
    conditions: dict[str, Any] = {}
    if "SourceAccount" in permission:
        conditions["StringEquals"] = {"AWS:SourceAccount": permission["SourceAccount"]}
    if "SourceArn" in permission:
        conditions["ArnLike"] = {"AWS:SourceArn": permission["SourceArn"]}
    return {
        "Sid": f"{STACK_NAME}-{logical_id}-{GENERATED}",
        "Effect": "Allow",
        "Principal": {"Service": permission["Principal"]},
        "Action": permission["Action"],
        "Resource": permission["FunctionName"],
        **({"Condition": conditions} if conditions else {}),
    }


def _existing(count: int) -> dict[str, str]:
    names = [f"orders-{number:02d}-{'t' * 40}" for number in range(count)]
    streams = [f"arn:aws:dynamodb:eu-west-1:111122223333:table/{name}/stream/2026-01-01T00:00:00.000" for name in names]
    return {"tableNames": ",".join(names), "tableStreamArns": ",".join(streams)}


@pytest.mark.parametrize("tables", [1, 3, 10, 12])
def test_every_functions_resource_policy_stays_under_lambdas_20_kb(tables: int) -> None:
    template = synth_template(_existing(tables))
    policies: dict[str, list[dict[str, Any]]] = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == "AWS::Lambda::Permission":
            permission = _resolved(resource["Properties"])
            policies.setdefault(permission["FunctionName"], []).append(_statement(logical_id, permission))
    assert policies
    for function, statements in policies.items():
        size = len(json.dumps({"Version": "2012-10-17", "Id": "default", "Statement": statements}))
        assert size < POLICY_LIMIT_BYTES, (function, size)
    # The throttle explainer, behind 16 alarms a table, holds one statement whatever the table count
    alarms = [r for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    invoking = [a for a in alarms if any("Fn::GetAtt" in action for action in a["Properties"].get("AlarmActions", []))]
    assert len(invoking) == 16 * tables
    assert len(template["Resources"]) <= MAX_RESOURCES


def _enabled(count: int) -> dict[str, str]:
    return {"tableNames": ",".join(f"orders-{number:02d}" for number in range(count)), "enableStream": "true"}


COMPLIANCE = {
    "compliance": "controltower",
    "vpcSubnetIds": "subnet-0123456789abcdef0",
    "vpcSecurityGroupIds": "sg-0123456789abcdef0",
}


# Every alerting option on at once: e-mail, the Slack webhook and AWS Chatbot's channel, the what-if topic with
# its e-mail (each adds resources once, not per table).
ALERTING = {
    "alertEmails": "oncall@example.com",
    "slackWebhookSecretArn": "arn:aws:secretsmanager:eu-west-1:111122223333:secret:hotkeys/slack-AbCdEf",
    "slackWorkspaceId": "T0123",
    "slackChannelId": "C0456",
    "whatIfIndexes": "by-status=status:KEYS_ONLY",
    "whatIfKeys": "customer",
    "whatIfEmails": "capacity@example.com",
}
# docs/limits.md's figures ("How many tables one stack watches"): the most tables one stack holds, each way of
# watching them, without and with every alerting option.
MOST = [(_existing, {}, 22), (_existing, ALERTING, 21), (_enabled, {}, 20), (_enabled, ALERTING, 19)]
MOST_IDS = ["existing", "existing+alerting", "enableStream", "enableStream+alerting"]


@pytest.mark.parametrize(("context", "options", "most"), MOST, ids=MOST_IDS)
def test_a_stack_past_cloudformations_500_resources_is_refused_at_synth_naming_the_quota(
    context: Any, options: dict[str, str], most: int
) -> None:
    assert len(synth_template({**context(most), **options})["Resources"]) <= MAX_RESOURCES
    with pytest.raises(Exception, match=r"more than CloudFormation's 500 per stack: watch fewer tables"):
        synth_template({**context(most + 1), **options})


@pytest.mark.parametrize(("context", "options", "most"), MOST, ids=MOST_IDS)
def test_compliance_mode_holds_as_many_tables_as_the_readme_says(
    context: Any, options: dict[str, str], most: int
) -> None:
    # -c compliance=controltower adds the stack's key (and the waiter's log group), nothing per table
    assert len(synth_template({**context(most), **options, **COMPLIANCE})["Resources"]) <= MAX_RESOURCES
