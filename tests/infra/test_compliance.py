"""``-c compliance=controltower``: AWS Control Tower's proactive controls pass; the default's findings are the ones
docs/security.md lists and accepts.

The controls are run twice: by cfn-guard, as ``cdklabs.cdk-validator-cfnguard`` bundles it (a CDK validation
plugin), where its binary runs; and by the suite's own checks of the same properties (control_tower.py), which run
everywhere and must agree with cfn-guard where both run. The templates are synthesized in the environment the CDK
CLI gives the app from a profile (a concrete account and region: literal ARNs), as a deploy does.
"""

from __future__ import annotations

import json
import platform
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from infra.compliance import LOG_GROUP_PREFIX, VENDED_LOG_GROUP_PREFIX
from tests.infra import control_tower
from tests.infra.cdk_cli import ACCOUNT, REGION
from tests.infra.conftest import COMPLIANCE, MODES, SECURITY_GROUP, SUBNETS, Synthesized

pytestmark = pytest.mark.infra
SECURITY_DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"
GUARD = "cdk-validator-cfnguard"
# The default stack with the demo table, and with the stream enabler (its waiter state machine); the same in
# compliance mode, and compliance mode with every optional function and queue.
CASES: dict[str, dict[str, Any]] = {
    "demo": MODES["demo"],
    "enable": MODES["enable"],
    "compliance-demo": COMPLIANCE,
    "compliance": MODES["compliance"],
    # the stack's own Kinesis data stream under the stack's key, and its streaming handlers' waiter
    "compliance-kinesis": MODES["kinesis-compliance"],
}
DEFAULTS = ("demo", "enable")
COMPLIANT = ("compliance-demo", "compliance", "compliance-kinesis")


def guard_unavailable() -> str | None:
    """Why cfn-guard cannot run here (None: it can)."""
    try:
        import cdklabs.cdk_validator_cfnguard  # noqa: F401
    except ImportError:
        return "cdklabs.cdk-validator-cfnguard is not installed (make install installs the dev extra)"
    system, machine = platform.system(), platform.machine().lower()
    if system not in ("Linux", "Darwin") or machine not in ("x86_64", "amd64", "aarch64", "arm64"):
        return (
            f"the cfn-guard binary that cdk-validator-cfnguard bundles runs on Linux and macOS, x86_64 or arm64, not "
            f"{system} {machine}: the suite's own checks of the same properties stand in for it"
        )
    return None


needs_guard = pytest.mark.skipif(guard_unavailable() is not None, reason=str(guard_unavailable()))


@dataclass
class Case:
    template: dict[str, Any]
    report: dict[str, Any]

    def plugin(self, name: str) -> dict[str, Any] | None:
        found = [p for p in self.report["pluginReports"] if p["pluginName"] == name]
        return found[0] if found else None

    def guard_findings(self) -> dict[str, set[str]]:
        """Rule id -> logical ids, from the cfn-guard plugin's violations (none reported: it passed)."""
        found: dict[str, set[str]] = {}
        for violation in (self.plugin(GUARD) or {}).get("violations", []):
            rule = re.match(r"\[(CT\.[A-Z0-9]+\.PR\.\d+)\]", violation["description"])
            assert rule, violation["description"]
            ids = found.setdefault(rule[1], set())
            for construct in violation["violatingConstructs"]:
                if "cloudFormationResource" in construct:  # a few are reported without their resource
                    ids.add(construct["cloudFormationResource"]["logicalId"])
        return found


@pytest.fixture(scope="module")
def cases() -> dict[str, Case]:
    import aws_cdk as cdk

    from infra.app_factory import STACK_NAME, build_app

    synthesized = {}
    with pytest.MonkeyPatch.context() as environment:
        # What the CDK CLI sets from a profile (tests/infra/cdk_cli.py runs the CLI itself)
        environment.setenv("CDK_DEFAULT_ACCOUNT", ACCOUNT)
        environment.setenv("CDK_DEFAULT_REGION", REGION)
        for name, context in CASES.items():
            outdir = tempfile.mkdtemp(prefix=f"cdk-{name}-")
            app, _stack = build_app(context, outdir=outdir)
            if guard_unavailable() is None:
                from cdklabs.cdk_validator_cfnguard import CfnGuardValidator

                cdk.Validations.of(app).add_plugins(CfnGuardValidator())
            try:
                app.synth()
            except RuntimeError as error:  # any plugin's violation; which ones, the report says
                if "ValidationFailed" not in str(error):
                    raise
            synthesized[name] = Case(
                template=json.loads((Path(outdir) / f"{STACK_NAME}.template.json").read_text()),
                report=json.loads((Path(outdir) / "validation-report.json").read_text()),
            )
    return synthesized


def documented_findings(case: str) -> dict[str, str]:
    """docs/security.md's accepted findings of the default stack that apply to ``case``: rule id -> where."""
    text = SECURITY_DOC.read_text()
    section = text.split("## AWS Control Tower's proactive controls", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (CT\.[A-Z0-9]+\.PR\.\d+) \| ([^|]+) \|", section, flags=re.MULTILINE)
    assert rows, "docs/security.md has no table of Control Tower findings"
    with_waiter = CASES[case].get("enableStream") == "true"
    return {rule: where.strip() for rule, where in rows if where.strip() == "every stack" or with_waiter}


@needs_guard
def test_compliance_mode_passes_every_control_tower_rule_of_cfn_guard(cases: dict[str, Case]) -> None:
    # Given cfn-guard ran (the default stack's findings prove it)
    assert cases["demo"].guard_findings()
    # Then the compliance mode has none, with or without the stream enabler, the webhook and the e-mail queue
    for name in COMPLIANT:
        assert cases[name].guard_findings() == {}, name
        assert (cases[name].plugin(GUARD) or {"conclusion": "success"})["conclusion"] == "success", name


@needs_guard
def test_the_default_findings_of_cfn_guard_are_those_docs_security_lists(cases: dict[str, Case]) -> None:
    # 11 rules on the demo stack, 13 with the stream enabler's waiter state machine
    for name in DEFAULTS:
        assert set(cases[name].guard_findings()) == set(documented_findings(name)), name
    assert (len(cases["demo"].guard_findings()), len(cases["enable"].guard_findings())) == (11, 13)


@needs_guard
def test_the_suites_checks_find_what_cfn_guard_finds(cases: dict[str, Case]) -> None:
    for name, case in cases.items():
        guard, ours = case.guard_findings(), control_tower.findings(case.template)
        assert set(guard) == set(ours), name
        for rule, ids in guard.items():
            assert ids <= ours[rule], (name, rule)


def test_compliance_mode_passes_the_same_properties_checked_by_the_suite(cases: dict[str, Case]) -> None:
    for name in COMPLIANT:
        assert control_tower.findings(cases[name].template) == {}, name


def test_the_defaults_findings_are_those_docs_security_lists(cases: dict[str, Case]) -> None:
    for name in DEFAULTS:
        assert set(control_tower.findings(cases[name].template)) == set(documented_findings(name)), name


def test_without_a_concrete_environment_only_the_alarm_permissions_references_escape_the_rules(
    synthesized: dict[str, Synthesized],
) -> None:
    # `python app.py` alone has no account: the permission's SourceAccount is {"Ref": "AWS::AccountId"}, which the
    # rule cannot read as an account, though the permission names the account and its alarms (docs/security.md)
    template = synthesized["compliance"].template
    ((rule, ids),) = control_tower.findings(template).items()
    assert rule == "CT.LAMBDA.PR.2"
    for logical_id in ids:
        permission = template["Resources"][logical_id]["Properties"]
        assert permission["SourceAccount"] == {"Ref": "AWS::AccountId"} and ":alarm:" in json.dumps(
            permission["SourceArn"]
        )


def test_cdk_nag_stays_clean_in_both_modes_with_literal_arns(cases: dict[str, Case]) -> None:
    for name, case in cases.items():
        for pack in ("AwsSolutions", "Serverless"):
            plugin = case.plugin(pack)
            assert plugin and plugin["conclusion"] == "success" and plugin["violations"] == [], (name, pack)


def _resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def test_the_stacks_key_serves_its_own_log_groups_only_and_outlives_the_archive(
    synthesized: dict[str, Synthesized],
) -> None:
    template = synthesized["compliance"].template
    keys = _resources(template, "AWS::KMS::Key")
    (key_id,) = [k for k in keys if k.startswith("ControlTower")]
    key = keys[key_id]
    # Retained: the retained archive's objects are readable with it only; rotation on
    assert key["DeletionPolicy"] == "Retain" and key["Properties"]["EnableKeyRotation"] is True
    statements = {s.get("Sid"): s for s in key["Properties"]["KeyPolicy"]["Statement"]}
    logs = statements["CloudWatchLogsOfThisStack"]
    assert "logs." in json.dumps(logs["Principal"]["Service"])
    patterns = [
        "".join(p if isinstance(p, str) else "" for p in pattern["Fn::Join"][1])
        for pattern in logs["Condition"]["ArnLike"]["kms:EncryptionContext:aws:logs:arn"]
    ]
    prefixes = [f"{LOG_GROUP_PREFIX}/HotKeyDetector/", f"{VENDED_LOG_GROUP_PREFIX}/HotKeyDetector/"]
    assert [p.split(":log-group:")[1] for p in patterns] == [f"{prefix}*" for prefix in prefixes]
    # and every log group of the stack is encrypted with it, named under those prefixes
    groups = _resources(template, "AWS::Logs::LogGroup")
    assert groups
    for logical_id, group in groups.items():
        assert group["Properties"]["KmsKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}, logical_id
        assert group["Properties"]["LogGroupName"].startswith(tuple(prefixes)), logical_id
    # S3's logging service may write this account's access logs with it, nothing more
    s3_logs = statements["S3ServerAccessLogsOfThisAccount"]
    assert s3_logs["Action"] == "kms:GenerateDataKey"
    assert s3_logs["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    # and no key of the stack lets anyone but AWS services create grants
    for logical_id, resource in keys.items():
        assert control_tower.create_grant_for_aws_services_only(template, resource["Properties"]), logical_id


def test_every_function_runs_in_the_given_subnets_and_may_manage_only_its_interfaces(
    synthesized: dict[str, Synthesized],
) -> None:
    template = synthesized["compliance"].template
    functions = _resources(template, "AWS::Lambda::Function")
    policies = _resources(template, "AWS::IAM::Policy")
    assert len(functions) == 13  # ours, and the CDK provider framework's
    for logical_id, function in functions.items():
        assert function["Properties"]["VpcConfig"] == {
            "SubnetIds": SUBNETS.split(","),
            "SecurityGroupIds": [SECURITY_GROUP],
        }, logical_id
        role = function["Properties"]["Role"]["Fn::GetAtt"][0]
        (policy_id,) = [k for k, p in policies.items() if {"Ref": role} in p["Properties"]["Roles"]]
        # Lambda checks the role's network-interface permissions when it creates the function
        assert policy_id in function["DependsOn"], logical_id
        statements = {s.get("Sid"): s for s in policies[policy_id]["Properties"]["PolicyDocument"]["Statement"]}
        created_in = json.dumps(statements["VpcCreateNetworkInterface"]["Resource"])
        for network in [*SUBNETS.split(","), SECURITY_GROUP]:
            assert f"/{network}" in created_in, logical_id
        assert json.dumps(statements["VpcManageNetworkInterfaces"]["Resource"]).endswith(':network-interface/*"]]}')


def test_the_consumer_encrypts_the_archive_through_s3_only(synthesized: dict[str, Synthesized]) -> None:
    template = synthesized["compliance"].template
    statements = [
        s
        for p in _resources(template, "AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Sid") == "EncryptArchive"
    ]
    (statement,) = statements
    assert statement["Action"] == "kms:GenerateDataKey"
    assert "s3." in json.dumps(statement["Condition"]["StringEquals"]["kms:ViaService"])


def test_the_default_template_holds_nothing_of_compliance_mode(synthesized: dict[str, Synthesized]) -> None:
    for mode in ("demo", "multi"):
        template = synthesized[mode].template
        kinds = {v["Type"] for v in template["Resources"].values()}
        assert not [k for k in template["Resources"] if k.startswith("ControlTower")], mode
        assert len(_resources(template, "AWS::KMS::Key")) == 1, mode  # the alert topic's
        text = json.dumps(template)
        for compliance_only in ("VpcConfig", "ObjectLockEnabled", "RedriveAllowPolicy", "EventBridgeConfiguration"):
            assert compliance_only not in text, (mode, compliance_only)
        assert all("KmsKeyId" not in g["Properties"] for g in _resources(template, "AWS::Logs::LogGroup").values())
        assert "AWS::EC2::SecurityGroup" not in kinds
