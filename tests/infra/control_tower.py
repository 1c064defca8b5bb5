"""AWS Control Tower's proactive controls, checked on a template by the suite itself.

The same properties as the CloudFormation Guard rules that ``cdklabs.cdk-validator-cfnguard`` bundles (its
``rules/control-tower/cfn-guard/**``), for every rule that fires on a resource type this stack creates, with the
rules' own reading of a value: a literal string, or a ``Ref``/``Fn::GetAtt`` of a resource of the right type in the
template (a ``Fn::Join`` is neither). test_compliance.py runs the real rules where their binary runs, and checks
that both agree; where it does not, these keep the compliance mode and docs/security.md honest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Template = dict[str, Any]
Properties = dict[str, Any]

MINIMUM_RETENTION_DAYS = 365


def _local(template: Template, value: Any, kind: str | None) -> bool:
    """``value`` is a Ref or GetAtt of a resource in the template (of type ``kind``, if given)."""
    if isinstance(value, dict) and len(value) == 1:
        ((function, argument),) = value.items()
        target = argument if function == "Ref" else argument[0] if function == "Fn::GetAtt" else None
        resource = template["Resources"].get(target) if isinstance(target, str) else None
        return resource is not None and (kind is None or resource["Type"] == kind)
    return False


def _string(value: Any) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _given(template: Template, value: Any, kind: str | None = None) -> bool:
    """As the rules accept a value: a non-empty literal string, or a reference within the template."""
    return _string(value) or _local(template, value, kind)


def log_retention(_t: Template, p: Properties) -> bool:
    days = p.get("RetentionInDays")
    return days is None or (isinstance(days, int) and days >= MINIMUM_RETENTION_DAYS)


def log_encryption(t: Template, p: Properties) -> bool:
    return _given(t, p.get("KmsKeyId"), "AWS::KMS::Key")


def create_grant_for_aws_services_only(_t: Template, p: Properties) -> bool:
    statements = p.get("KeyPolicy", {}).get("Statement", [])
    return any(
        s.get("Effect") == "Deny"
        and s.get("Action") in ("kms:CreateGrant", ["kms:CreateGrant"])
        and s.get("Principal") in ("*", {"AWS": "*"})
        and s.get("Resource") in ("*", ["*"])
        and list(s.get("Condition", {})) == ["BoolIfExists"]
        and s["Condition"]["BoolIfExists"]
        == {"kms:GrantIsForAWSResource": "false", "aws:PrincipalIsAWSService": "false"}
        for s in statements
    )


def permission_not_public(t: Template, p: Properties) -> bool:
    if p.get("FunctionUrlAuthType") == "NONE":
        return False
    principal = p.get("Principal")
    if principal == "*":
        return any(_given(t, p.get(k)) for k in ("SourceAccount", "SourceArn", "PrincipalOrgID"))
    if isinstance(principal, str) and (principal.isdigit() or principal.startswith("arn:aws")):
        return True
    return _string(p.get("SourceAccount")) or _given(t, p.get("SourceArn"))


def function_in_vpc(t: Template, p: Properties) -> bool:
    vpc = p.get("VpcConfig") or {}
    subnets, groups = vpc.get("SubnetIds") or [], vpc.get("SecurityGroupIds") or []
    return (
        bool(subnets)
        and bool(groups)
        and all(_given(t, s, "AWS::EC2::Subnet") for s in subnets)
        and all(_given(t, g, "AWS::EC2::SecurityGroup") for g in groups)
    )


def bucket_logging(t: Template, p: Properties) -> bool:
    logging = p.get("LoggingConfiguration")
    if not isinstance(logging, dict):
        return False
    return "DestinationBucketName" not in logging or _given(t, logging["DestinationBucketName"], "AWS::S3::Bucket")


def bucket_notifications(_t: Template, p: Properties) -> bool:
    notifications = p.get("NotificationConfiguration") or {}
    return notifications.get("EventBridgeConfiguration", {}).get("EventBridgeEnabled") is True or any(
        notifications.get(k) for k in ("LambdaConfigurations", "QueueConfigurations", "TopicConfigurations")
    )


def bucket_without_acl(_t: Template, p: Properties) -> bool:
    return "AccessControl" not in p


def bucket_object_lock(_t: Template, p: Properties) -> bool:
    return p.get("ObjectLockEnabled") is True


def bucket_kms(_t: Template, p: Properties) -> bool:
    configurations = p.get("BucketEncryption", {}).get("ServerSideEncryptionConfiguration") or []
    return bool(configurations) and all(
        c.get("ServerSideEncryptionByDefault", {}).get("SSEAlgorithm") in ("aws:kms", "aws:kms:dsse")
        for c in configurations
    )


def bucket_versioning(_t: Template, p: Properties) -> bool:
    return p.get("VersioningConfiguration", {}).get("Status") == "Enabled"


def queue_dead_letters(t: Template, p: Properties) -> bool:
    if p.get("RedriveAllowPolicy", {}).get("redrivePermission") in ("allowAll", "byQueue"):
        return True  # a dead-letter queue that says so
    target = (p.get("RedrivePolicy") or {}).get("deadLetterTargetArn")
    return _given(t, target, "AWS::SQS::Queue")


def state_machine_logging(t: Template, p: Properties) -> bool:
    logging = p.get("LoggingConfiguration") or {}
    destinations = logging.get("Destinations") or []
    return (
        logging.get("Level") in ("ERROR", "ALL")
        and bool(destinations)
        and all(
            _given(t, d.get("CloudWatchLogsLogGroup", {}).get("LogGroupArn"), "AWS::Logs::LogGroup")
            for d in destinations
        )
    )


def state_machine_tracing(_t: Template, p: Properties) -> bool:
    return (p.get("TracingConfiguration") or {}).get("Enabled") is True


Check = Callable[[Template, Properties], bool]
# rule id: (the guard rule's name, the resource type it reports on, the check)
RULES: dict[str, tuple[str, str, Check]] = {
    "CT.CLOUDWATCH.PR.2": ("cloudwatch_log_group_retention_period_check", "AWS::Logs::LogGroup", log_retention),
    "CT.CLOUDWATCH.PR.3": ("cloudwatch_log_group_encrypted_check", "AWS::Logs::LogGroup", log_encryption),
    "CT.KMS.PR.3": ("kms_create_grant_aws_service_check", "AWS::KMS::Key", create_grant_for_aws_services_only),
    "CT.LAMBDA.PR.2": (
        "lambda_function_public_access_prohibited_check",
        "AWS::Lambda::Permission",
        permission_not_public,
    ),
    "CT.LAMBDA.PR.3": ("lambda_inside_vpc_check", "AWS::Lambda::Function", function_in_vpc),
    "CT.S3.PR.2": ("s3_bucket_logging_enabled_check", "AWS::S3::Bucket", bucket_logging),
    "CT.S3.PR.4": ("s3_event_notifications_enabled_check", "AWS::S3::Bucket", bucket_notifications),
    "CT.S3.PR.5": ("s3_bucket_acl_prohibited_check", "AWS::S3::Bucket", bucket_without_acl),
    "CT.S3.PR.9": ("s3_bucket_object_lock_enabled_check", "AWS::S3::Bucket", bucket_object_lock),
    "CT.S3.PR.10": ("s3_bucket_default_encryption_kms_check", "AWS::S3::Bucket", bucket_kms),
    "CT.S3.PR.11": ("s3_bucket_versioning_enabled_check", "AWS::S3::Bucket", bucket_versioning),
    "CT.SQS.PR.1": ("sqs_dlq_check", "AWS::SQS::Queue", queue_dead_letters),
    "CT.STEPFUNCTIONS.PR.1": (
        "step_functions_state_machine_logging_enabled_check",
        "AWS::StepFunctions::StateMachine",
        state_machine_logging,
    ),
    "CT.STEPFUNCTIONS.PR.2": (
        "step_functions_state_machine_tracing_enabled_check",
        "AWS::StepFunctions::StateMachine",
        state_machine_tracing,
    ),
}


def findings(template: Template) -> dict[str, set[str]]:
    """Rule id -> the logical ids of the resources that fail it (rules nothing fails are left out)."""
    found: dict[str, set[str]] = {}
    for rule, (_name, kind, check) in RULES.items():
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] == kind and not check(template, resource.get("Properties", {})):
                found.setdefault(rule, set()).add(logical_id)
    return found
