"""Synthesizes the CDK app once per test session per source-table mode (jsii start-up is slow)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")

# A partial ARN (no 6-character suffix): the grant must match the secret's complete ARN.
WEBHOOK_SECRET = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:hotkeys/webhook"
CUSTOMER_KEY = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
EXISTING_STREAM = "arn:aws:dynamodb:eu-west-1:111122223333:table/orders/stream/2026-01-01T00:00:00.000"
# A Kinesis data stream two tables already send their changes to (Kinesis Data Streams for DynamoDB)
KINESIS_STREAM = "arn:aws:kinesis:eu-west-1:111122223333:stream/table-changes"

# -c compliance=controltower needs the subnets and security groups the functions run in
SUBNETS = "subnet-0123456789abcdef0,subnet-0fedcba9876543210"
SECURITY_GROUP = "sg-0123456789abcdef0"
COMPLIANCE = {"compliance": "controltower", "vpcSubnetIds": SUBNETS, "vpcSecurityGroupIds": SECURITY_GROUP}

MODES: dict[str, dict[str, Any]] = {
    "demo": {},
    "existing": {"tableName": "orders", "tableStreamArn": EXISTING_STREAM},
    "enable": {"tableName": "orders", "enableStream": "true"},
    # The opt-out: the stack leaves Contributor Insights alone (the throttle alarms stay)
    "no-insights": {"tableName": "orders", "tableStreamArn": EXISTING_STREAM, "throttledKeyInsights": "false"},
    # The lean deployment (docs/cost.md): no dashboard, no throttle alarms nor explainer, no Contributor Insights
    "lean": {"tableName": "orders", "tableStreamArn": EXISTING_STREAM, "lean": "true"},
    "multi": {
        "tableNames": "orders,users",
        "enableStream": "true",
        "slackWorkspaceId": "T0123",
        "slackChannelId": "C0456",
        "alertEmails": "oncall@example.com",
        "slackWebhookSecretArn": WEBHOOK_SECRET,
        "slackWebhookKeyArn": CUSTOMER_KEY,
        "tableKmsKeyArns": CUSTOMER_KEY,
        "judgeMemoryMb": "1024",
        "consumerSystemLogLevel": "info",
        # asked for despite the customer-managed key (a synth warning; off by default with one)
        "throttledKeyInsights": "true",
    },
    # Kinesis Data Streams for DynamoDB: a stream the tables already send to, read directly
    "kinesis": {"tableNames": "orders,users", "kinesisStreamArn": KINESIS_STREAM},
    # a stream the stack creates and turns on, read through an enhanced fan-out consumer
    "enable-kinesis": {"tableNames": "orders,users", "enableKinesis": "true", "kinesisEnhancedFanOut": "true"},
    # the stack's stream under compliance mode's key
    "kinesis-compliance": {"tableName": "orders", "enableKinesis": "true", **COMPLIANCE},
    # AWS Control Tower's proactive controls (infra/compliance.py), with every kind of function and queue
    "compliance": {
        "tableNames": "orders,users",
        "enableStream": "true",
        "alertEmails": "oncall@example.com",
        "slackWebhookSecretArn": WEBHOOK_SECRET,
        **COMPLIANCE,
    },
}


@dataclass
class Synthesized:
    template: dict[str, Any]
    report: dict[str, Any]
    template_path: Path

    def asset_directory(self, function: dict[str, Any]) -> Path:
        """The staged folder a function's code is uploaded from (cdk.out/asset.<hash>)."""
        key = function["Properties"]["Code"]["S3Key"]  # <content hash>.zip
        return self.template_path.parent / f"asset.{key.removesuffix('.zip')}"

    def resources(self, kind: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.template["Resources"].items() if v["Type"] == kind}

    def only(self, kind: str) -> dict[str, Any]:
        found = list(self.resources(kind).values())
        assert len(found) == 1, f"expected one {kind}, found {len(found)}"
        return found[0]["Properties"]

    def dashboard_widgets(self) -> list[dict[str, Any]]:
        """The one dashboard's widgets, its body's references written ``${Id}`` (Ref) and ``${Id.Attribute}``
        (Fn::GetAtt), as the deployed body would hold their values."""
        body = self.only("AWS::CloudWatch::Dashboard")["DashboardBody"]
        parts = body["Fn::Join"][1] if isinstance(body, dict) else [body]
        text = "".join(part if isinstance(part, str) else _reference(part) for part in parts)
        widgets: list[dict[str, Any]] = json.loads(text)["widgets"]
        return widgets

    def logical_id(self, kind: str, contains: str = "") -> str:
        ids = [k for k in self.resources(kind) if contains in k]
        assert len(ids) == 1, (kind, contains, ids)
        return ids[0]


def written_out(value: Any, ref: Callable[[str], str], attribute: Callable[[str, str], str]) -> Any:
    """A template value with each ``Fn::Join`` joined and each ``Ref`` and ``Fn::GetAtt`` written as ``ref``
    (of the name) and ``attribute`` (of the logical id and attribute) say, in lists and maps too."""
    if isinstance(value, dict) and len(value) == 1:
        ((name, argument),) = value.items()
        if name == "Fn::Join":
            return argument[0].join(str(written_out(part, ref, attribute)) for part in argument[1])
        if name == "Ref":
            return ref(argument)
        if name == "Fn::GetAtt":
            return attribute(*argument)
    if isinstance(value, dict):
        return {k: written_out(v, ref, attribute) for k, v in value.items()}
    if isinstance(value, list):
        return [written_out(v, ref, attribute) for v in value]
    return value


def _reference(token: dict[str, Any]) -> str:
    if "Ref" in token:
        return f"${{{token['Ref']}}}"
    logical_id, attribute = token["Fn::GetAtt"]
    return f"${{{logical_id}.{attribute}}}"


def synth_template(context: dict[str, str]) -> dict[str, Any]:
    """The stack's template for ``context`` (``-c`` keys), synthesized in-process into a fresh folder."""
    from infra.app_factory import build_app

    outdir = tempfile.mkdtemp(prefix="cdk-")
    app, stack = build_app(context, outdir=outdir)
    app.synth()
    # (the stack's own file: -c stackName names another)
    template: dict[str, Any] = json.loads((Path(outdir) / stack.template_file).read_text())
    return template


@pytest.fixture(scope="session")
def synthesized() -> dict[str, Synthesized]:
    from infra.app_factory import STACK_NAME, build_app

    results = {}
    for mode, context in MODES.items():
        outdir = tempfile.mkdtemp(prefix=f"cdk-{mode}-")
        app, _stack = build_app(context, outdir=outdir)
        app.synth()  # raises ValidationFailed on any unacknowledged cdk-nag finding
        path = Path(outdir) / f"{STACK_NAME}.template.json"
        results[mode] = Synthesized(
            template=json.loads(path.read_text()),
            report=json.loads((Path(outdir) / "validation-report.json").read_text()),
            template_path=path,
        )
    return results


@pytest.fixture(scope="session")
def demo(synthesized: dict[str, Synthesized]) -> Synthesized:
    return synthesized["demo"]
