"""``-c compliance=controltower``: the stack passes AWS Control Tower's proactive controls (docs/decisions.md §70).

The controls are the CloudFormation Guard rules that ``cdklabs.cdk-validator-cfnguard`` bundles; the infra tests
run them (tests/infra/test_compliance.py) and check the same properties on the template themselves
(tests/infra/control_tower.py). What this mode changes, each for the control named:

* one customer-managed KMS key of the stack's (``ControlTower.key``: rotation on, retained with the archive it
  encrypts), whose policy lets CloudWatch Logs use it for this stack's log groups only (the
  ``kms:EncryptionContext:aws:logs:arn`` condition AWS documents) and S3 server access logging write the access
  logs of this account's buckets (CT.CLOUDWATCH.PR.3, CT.S3.PR.10);
* every log group encrypted with it and named under ``/hotkeys/<stack>/`` (what the key policy names), kept a year
  at least (``DetectorOptions.log_retention_days``; CT.CLOUDWATCH.PR.2);
* every KMS key of the stack denies ``kms:CreateGrant`` except to AWS services (CT.KMS.PR.3);
* every Lambda function in the subnets and security groups given (CT.LAMBDA.PR.3), its role allowed to manage its
  network interfaces there;
* every SQS queue (all of them dead-letter queues) says so with a redrive-allow policy (CT.SQS.PR.1);
* the buckets (infra/archive_bucket.py) and the stream enabler's waiter state machine (infra/stream_enabler.py)
  are configured where they are built.

``ControlTower.apply`` walks the finished stack, so a resource added later is covered (or the tests fail).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Aws, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from infra.nag import acknowledge, finding_text

# Log groups of the stack are named under this prefix (plus the stack's name): the key policy lets CloudWatch Logs
# use the key for those only.
LOG_GROUP_PREFIX = "/hotkeys"
# Step Functions' vended logs go to a group under /aws/vendedlogs/ (CloudWatch Logs then needs no resource policy
# entry per group: Step Functions developer guide, "Logging using CloudWatch Logs").
VENDED_LOG_GROUP_PREFIX = "/aws/vendedlogs/states/hotkeys"


def log_group_name(scope: IConstruct, prefix: str = LOG_GROUP_PREFIX) -> str:
    """``<prefix>/<stack name>/<construct path in the stack>``: unique per stack, stable across deploys."""
    stack = Stack.of(scope)
    path = scope.node.path.removeprefix(stack.node.path + "/")
    return f"{prefix}/{stack.stack_name}/{path}"


def create_grant_for_aws_services_only() -> iam.PolicyStatement:
    """CT.KMS.PR.3: nobody creates a grant on the key unless an AWS service does it for an AWS resource."""
    return iam.PolicyStatement(
        sid="DenyCreateGrantExceptForAwsServices",
        effect=iam.Effect.DENY,
        principals=[iam.AnyPrincipal()],
        actions=["kms:CreateGrant"],
        resources=["*"],
        conditions={"BoolIfExists": {"kms:GrantIsForAWSResource": "false", "aws:PrincipalIsAWSService": "false"}},
    )


class ControlTower(Construct):
    """The compliance mode's key, and the changes it makes to the finished stack (``apply``)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        subnet_ids: Sequence[str],
        security_group_ids: Sequence[str],
    ) -> None:
        super().__init__(scope, construct_id)
        self.subnet_ids = tuple(subnet_ids)
        self.security_group_ids = tuple(security_group_ids)
        stack = Stack.of(self)
        self.key = kms.Key(
            self,
            "Key",
            description=f"Encrypts the hot-key detector's logs and TTL archive ({stack.stack_name})",
            enable_key_rotation=True,
            # The archive bucket outlives the stack, and its objects are readable only with this key.
            removal_policy=RemovalPolicy.RETAIN,
        )
        log_groups = [
            f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:log-group:{prefix}/{stack.stack_name}/*"
            for prefix in (LOG_GROUP_PREFIX, VENDED_LOG_GROUP_PREFIX)
        ]
        # CloudWatch Logs user guide, "Encrypt log data in CloudWatch Logs using AWS KMS": the regional service
        # principal, the actions it needs, and the encryption context naming the log group.
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchLogsOfThisStack",
                principals=[iam.ServicePrincipal(f"logs.{Aws.REGION}.amazonaws.com")],
                actions=["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
                resources=["*"],  # in a key policy, "*" means this key
                conditions={"ArnLike": {"kms:EncryptionContext:aws:logs:arn": log_groups}},
            )
        )
        # S3 server access logs are written by the logging service into the SSE-KMS access-log bucket. The bucket's
        # ARN cannot be named here (the bucket refers to the key: a cycle), so: this account's buckets.
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="S3ServerAccessLogsOfThisAccount",
                principals=[iam.ServicePrincipal("logging.s3.amazonaws.com")],
                actions=["kms:GenerateDataKey"],
                resources=["*"],
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnLike": {"aws:SourceArn": f"arn:{Aws.PARTITION}:s3:::*"},
                },
            )
        )

    def apply(self, stack: Stack) -> None:
        """Every log group, key, function and queue of ``stack`` as the controls want them."""
        roles: dict[str, tuple[iam.IRole, list[lambda_.Function]]] = {}
        for construct in stack.node.find_all():
            if isinstance(construct, logs.CfnLogGroup):
                self._encrypt(construct)
            elif isinstance(construct, kms.Key):
                construct.add_to_resource_policy(create_grant_for_aws_services_only())
            elif isinstance(construct, sqs.CfnQueue) and construct.redrive_policy is None:
                # Every queue of the stack but the judge's is a dead-letter queue (of a stream mapping, a
                # subscription or a function's asynchronous invocations); "allowAll" is SQS's default for a
                # queue without the policy (the judge ignores bodies it did not write).
                construct.redrive_allow_policy = {"redrivePermission": "allowAll"}
            elif isinstance(construct, lambda_.Function) and construct.role is not None:
                roles.setdefault(construct.role.node.path, (construct.role, []))[1].append(construct)
        for role, functions in roles.values():
            self._place(role, functions)

    def _encrypt(self, group: logs.CfnLogGroup) -> None:
        if group.kms_key_id is None:
            group.kms_key_id = self.key.key_arn
        # The L2 LogGroup leaves a token that resolves to nothing when no name was given.
        if Stack.of(group).resolve(group.log_group_name) is None:
            group.log_group_name = log_group_name(group.node.scope or group)

    def _place(self, role: iam.IRole, functions: Sequence[lambda_.Function]) -> None:
        """The functions in the subnets and security groups given; their role may manage their network interfaces
        (Lambda developer guide, "Giving Lambda functions access to resources in an Amazon VPC": the actions of
        AWSLambdaVPCAccessExecutionRole, scoped here to the subnets, groups and network interfaces)."""
        stack = Stack.of(self)
        interfaces = stack.format_arn(service="ec2", resource="network-interface", resource_name="*")
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="VpcCreateNetworkInterface",
                actions=["ec2:CreateNetworkInterface"],
                resources=[
                    interfaces,
                    *(stack.format_arn(service="ec2", resource="subnet", resource_name=s) for s in self.subnet_ids),
                    *(
                        stack.format_arn(service="ec2", resource="security-group", resource_name=g)
                        for g in self.security_group_ids
                    ),
                ],
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="VpcManageNetworkInterfaces",
                actions=[
                    "ec2:DeleteNetworkInterface",
                    "ec2:AssignPrivateIpAddresses",
                    "ec2:UnassignPrivateIpAddresses",
                ],
                resources=[interfaces],
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="VpcDescribeNetwork",
                actions=["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"],
                resources=["*"],  # AWS defines these on "*" only
            )
        )
        acknowledge(
            role,
            f"AwsSolutions::AwsSolutions-IAM5[Resource::{finding_text(role, interfaces)}]",
            "Lambda creates and deletes the function's network interfaces, whose ids it chooses: any network "
            "interface, created only in the given subnets and security groups.",
        )
        # One acknowledgment per id and scope: this one replaces any the role had, so it names every action the
        # role holds on "*" (its own and those added before, e.g. X-Ray's for active tracing).
        acknowledge(
            role,
            "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            "Only actions AWS defines on '*' alone: " + ", ".join(_actions_on_star(role)) + " (ec2: Lambda's VPC "
            "access; the others: what the role had without compliance mode).",
        )
        # Lambda checks the role's network-interface permissions when it creates the function: CDK makes each
        # function depend on its role's policy (tests/infra/test_compliance.py checks it).
        for function in functions:
            resource = function.node.default_child
            assert isinstance(resource, lambda_.CfnFunction)
            resource.vpc_config = lambda_.CfnFunction.VpcConfigProperty(
                subnet_ids=list(self.subnet_ids), security_group_ids=list(self.security_group_ids)
            )


def _actions_on_star(role: iam.IRole) -> list[str]:
    """The actions of the role's default policy granted on "*"."""
    policy = role.node.try_find_child("DefaultPolicy")
    if not isinstance(policy, iam.Policy):
        return []
    document = Stack.of(role).resolve(policy.document.to_json())
    actions: set[str] = set()
    for statement in document.get("Statement", []):
        resources = statement.get("Resource")
        if resources == "*" or (isinstance(resources, list) and "*" in resources):
            action = statement["Action"]
            actions.update([action] if isinstance(action, str) else action)
    return sorted(actions)
