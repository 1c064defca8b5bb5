"""Every documented deploy command (README, docs/), synthesized by the pinned CDK CLI with an account and region
as a profile gives them.

The template tests (test_stack.py) build the app in-process without an environment, so every ARN
there is a `${AWS::…}` token. A user's `npx aws-cdk deploy` knows the account and region, and the
same app then produces literal ARNs: cdk-nag acknowledgements, ARN checks and option validation
must hold there too. Each distinct command is synthesized once per session (cdk_cli.synth_all).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.infra.cdk_cli import (
    ACCOUNT,
    PACKAGE_LOCK,
    README,
    REGION,
    ROOT,
    CliSynth,
    deploy_commands,
    documented_cli_commands,
    pinned_version,
    synth_all,
)

pytestmark = pytest.mark.infra
COMMANDS = deploy_commands()


@pytest.fixture(scope="module")
def cli_synths() -> dict[str, CliSynth]:
    return synth_all(COMMANDS)


def _statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        statement
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::IAM::Policy"
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def test_the_docs_deploy_a_demo_table_existing_streams_enabled_streams_and_alerts() -> None:
    # The commands under test are the documentation's own: at least the documented modes are there
    joined = " | ".join(COMMANDS)
    assert "" in COMMANDS  # the demo table
    for option in ("tableStreamArn=", "enableStream=true", "tableNames=", "alertEmails=", "slackWebhookSecretArn="):
        assert option in joined, option
    # and the README's own deploy section shows the demo table's and an existing table's, both among them
    readme = [args for _version, verb, args in documented_cli_commands(README.read_text()) if verb == "deploy"]
    assert "" in readme and any("enableStream=true" in args for args in readme), readme
    assert set(readme) <= set(COMMANDS)


@pytest.mark.parametrize("args", COMMANDS, ids=lambda args: args[:60] or "demo")
def test_every_documented_deploy_command_synthesizes_with_the_pinned_cli(cli_synths: dict, args: str) -> None:
    synth = cli_synths[args]
    # Then the CLI exits 0 (cdk-nag runs on every synth: an unacknowledged finding fails it)
    assert synth.returncode == 0, synth.output[-4000:]
    # in the environment the CLI found: the region configured, the account STS answered
    assert synth.environment == f"aws://{ACCOUNT}/{REGION}"
    plugins = {plugin["pluginName"]: plugin for plugin in synth.report["pluginReports"]}
    assert set(plugins) >= {"AwsSolutions", "Serverless"}
    for plugin in plugins.values():
        assert plugin["conclusion"] == "success" and plugin["violations"] == [], plugin["pluginName"]


def test_the_cli_version_is_written_once_and_the_docs_and_makefile_use_it() -> None:
    version = pinned_version()
    lock = json.loads(PACKAGE_LOCK.read_text())
    assert lock["packages"]["node_modules/aws-cdk"]["version"] == version
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), "pin an exact version"
    assert {command_version for command_version, _verb, _args in documented_cli_commands()} == {version}
    # `make synth` is the pinned CLI's synth (with cdk.json's app and context, cdk-nag on)
    dry_run = subprocess.run(["make", "-n", "synth"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    synth_lines = [line for line in dry_run.splitlines() if " synth" in line]
    assert synth_lines and all("node_modules/.bin/cdk synth" in line for line in synth_lines), dry_run
    assert "npm ci" in dry_run or Path(ROOT / "node_modules/.bin/cdk").exists()


def test_the_command_parser_joins_continuations_and_drops_comments() -> None:
    text = "```sh\nnpx aws-cdk@1.2.3 deploy -c a=b \\\n    -c c=d   # note\nnpx aws-cdk@1.2.3 destroy\n```\n"
    assert documented_cli_commands(text) == [("1.2.3", "deploy", "-c a=b -c c=d"), ("1.2.3", "destroy", "")]


def test_the_stream_enabler_grants_describe_stream_on_the_literal_stream_pattern(cli_synths: dict) -> None:
    # Given the documented enableStream command, synthesized in a concrete environment
    (args,) = [a for a in COMMANDS if a.startswith("-c tableName=orders -c enableStream=true")][:1]
    statements = _statements(cli_synths[args].template)
    stream_reads = [s for s in statements if "dynamodb:DescribeStream" in _actions(s) and "Sid" not in s]
    # Then the waiter may describe the table's own streams, by their literal ARN pattern
    assert any(s["Resource"] == f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/orders/stream/*" for s in stream_reads), (
        stream_reads
    )
